#!/usr/bin/env python3
"""The team record (``edgetui sync``) moving the 750-run root, against PostgreSQL's own tools.

Builds once (timed apart, excluded from every figure) the runs root of ``bench/bench_scale.py``
(``--runs`` task dirs, transcripts included) and records it into a DuckDB file ("machine A").
Starts a real PostgreSQL (Debian's, on a Unix socket: tests/pg_fixture.py). Then, ``--repeat``
rounds, interleaved in this one process:

1. **push**: machine A's first ``edgetui sync`` into a fresh team database (``sync --init``
   then the push: every run's rows of every table, redacted, keyed, upserted, push numbers
   assigned), against the baseline: ``pg_dump --data-only`` of the same rows (the team schema
   the push made) restored with ``psql`` into a fresh database with the same tables and keys
   (``COPY ... FROM stdin``, the same rows, the same constraints checked);
2. **pull**: machine B (an empty DuckDB file) pulling all of it (``edgetui sync --rebuild``),
   against the baseline: ``pg_dump --data-only`` of the same schema (``COPY ... TO stdout``:
   PostgreSQL reading the same rows out).

Target (issue 41): each within 2x its baseline. The machine's load moves every figure: the
ratios are what to compare; the load averages are printed beside them.

Usage: ``.venv/bin/python bench/bench_team_sync.py [--runs 750] [--repeat 3] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

import bench_scale  # noqa: E402  (the 750-run root, built as bench_scale builds it)
from pg_fixture import PgServer  # noqa: E402  (a real PostgreSQL on a Unix socket)
import prereqs  # noqa: E402


def load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def push(db: Path, cfg, n_runs: int) -> None:
    """Machine A's first sync: the team schema made, every run pushed."""
    from edgetui.record import team_record
    from edgetui.store.database import open_db

    conn = open_db(db)
    try:
        team_record.init_team(conn, cfg)
        rep = team_record.sync(conn, cfg)
        assert rep.pushed_runs == n_runs, rep.line()
    finally:
        conn.close()


def pull(db: Path, cfg, n_runs: int) -> None:
    """Machine B (an empty database) made from the team record."""
    from edgetui.record import team_record
    from edgetui.store.database import open_db

    conn = open_db(db)
    try:
        rep = team_record.rebuild(conn, cfg)
        assert rep.pulled_runs == n_runs, rep.line()
    finally:
        conn.close()


def run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


PULLED = ("runs", "events", "submissions", "test_results", "source_cursors", "record_keys", "moments")


def copy_out_and_load(psql: list[str], team: str, work: Path, db: Path) -> None:
    """The same rows moved from PostgreSQL into a fresh DuckDB file with each one's own bulk tools:
    ``psql \\copy ... TO`` CSV per table, then DuckDB's CSV reader inserting them (bytea's hex
    text decoded, every other column cast by the insert)."""
    import duckdb

    from edgetui.store.database import open_db

    conn = open_db(db)
    try:
        for t in PULLED:
            cols = [
                (str(n), str(ty))
                for n, ty in conn.execute(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
                    "AND table_schema = 'main' ORDER BY ordinal_position",
                    [t],
                ).fetchall()
            ]
            names = ", ".join(f'"{n}"' for n, _ in cols)
            f = work / f"{t}.csv"
            subprocess.run(
                [
                    *psql,
                    "-c",
                    f"\\copy (SELECT {names} FROM edgetui_team.{t}) TO '{f}' WITH (FORMAT csv, HEADER)",
                    team,
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            sel = ", ".join(
                f'CASE WHEN "{n}" IS NULL THEN NULL ELSE unhex(substr("{n}", 3)) END' if ty == "BLOB" else f'"{n}"'
                for n, ty in cols
            )
            conn.execute(
                f"INSERT INTO {t} ({names}) SELECT {sel} FROM read_csv('{f}', header = true, all_varchar = true, "
                "max_line_size = 100000000)"
            )
            f.unlink()
    except duckdb.Error:
        raise
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=750)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    args = ap.parse_args()

    from edgetui.record import team_record
    from edgetui.store.database import open_db
    from edgetui.record.ingest import ingest_paths

    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]  (figures as they come)
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-team-"))
    work.mkdir(parents=True, exist_ok=True)
    server = PgServer(prereqs.find_postgres().parent)  # type: ignore[union-attr]
    bindir = server.bindir
    try:
        server.start()
        # -- machine A: the root recorded (not timed into any figure)
        db_a = work / "a.duckdb"
        if not db_a.exists():
            t0 = time.perf_counter()
            root = work / "root"
            shutil.rmtree(root, ignore_errors=True)
            _, held = bench_scale.build(root, args.runs)
            for src, dst in held:
                os.link(src, dst)
            tasks = bench_scale.merged_tasks(work / "tasks")
            conn = open_db(db_a)
            try:
                ingest_paths(conn, [root], tasks_dir=tasks)
            finally:
                conn.close()
            print(f"built and recorded the root in {time.perf_counter() - t0:.1f} s (not in the figures)")
        conn = open_db(db_a, read_only=True)
        n_runs, n_events = conn.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM events)").fetchone()  # type: ignore[misc]
        conn.close()
        print(f"machine A: {n_runs} runs, {n_events} events; PostgreSQL {bindir.parent.name}; {load()}")

        push_t, restore_t, pull_t, dump_t, load_t = [], [], [], [], []
        for r in range(args.repeat):
            team = server.new_database()
            cfg = team_record.TeamConfig(url=server.url(team), machine="alpha", person="bench")
            a = work / f"a-{r}.duckdb"
            for p in (a, Path(str(a) + ".wal"), work / f"b-{r}.duckdb", work / f"b-{r}.duckdb.wal"):
                p.unlink(missing_ok=True)  # (a stale log of an interrupted bench would be replayed into the copy)
            shutil.copyfile(db_a, a)

            push_t.append(timed(push, a, cfg, n_runs))
            dump = work / f"team-{r}.sql"
            schema_sql = work / f"schema-{r}.sql"
            sock = ["-h", str(server.sock), "-p", "5432", "-U", "edgetui"]
            subprocess.run(
                [str(bindir / "pg_dump"), *sock, "--schema-only", "-n", "edgetui_team", "-f", str(schema_sql), team],
                check=True,
            )
            # the baseline's reading: COPY ... TO stdout of every row of the team schema
            dump_t.append(
                timed(run, [str(bindir / "pg_dump"), *sock, "--data-only", "-n", "edgetui_team", "-f", str(dump), team])
            )
            base = server.new_database()
            subprocess.run(
                [str(bindir / "psql"), *sock, "-q", "-v", "ON_ERROR_STOP=1", "-f", str(schema_sql), base],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            # the baseline's writing: the same rows COPY'd into the same tables (keys, indexes)
            restore_t.append(
                timed(run, [str(bindir / "psql"), *sock, "-q", "-v", "ON_ERROR_STOP=1", "-f", str(dump), base])
            )
            b = work / f"b-{r}.duckdb"
            cfg_b = team_record.TeamConfig(url=server.url(team), machine="beta", person="bench")

            pull_t.append(timed(pull, b, cfg_b, n_runs))
            c = work / f"c-{r}.duckdb"
            load_t.append(timed(copy_out_and_load, [str(bindir / "psql"), *sock, "-q"], team, work, c))
            c.unlink(missing_ok=True)
            print(
                f"round {r + 1}: push {push_t[-1]:.2f} s / COPY in {restore_t[-1]:.2f} s; "
                f"pull {pull_t[-1]:.2f} s / COPY out {dump_t[-1]:.2f} s / COPY out + DuckDB load {load_t[-1]:.2f} s; "
                f"{load()}"
            )
            for p in (a, b, Path(str(a) + ".wal"), Path(str(b) + ".wal"), dump, schema_sql):
                p.unlink(missing_ok=True)
            server.sql(f"DROP DATABASE {team}")
            server.sql(f"DROP DATABASE {base}")

        med = statistics.median
        rp = med(push_t) / med(restore_t)
        rl = med(pull_t) / med(dump_t)
        print(
            f"push: {med(push_t):.2f} s, pg_dump restore (COPY in): {med(restore_t):.2f} s, ratio {rp:.2f} "
            f"(target <= 2: {'met' if rp <= 2 else 'NOT met'})"
        )
        rc = med(pull_t) / med(load_t)
        print(
            f"pull: {med(pull_t):.2f} s, pg_dump (COPY out): {med(dump_t):.2f} s, ratio {rl:.2f} "
            f"(target <= 2: {'met' if rl <= 2 else 'NOT met'})"
        )
        print(
            f"pull: {med(pull_t):.2f} s, COPY out to CSV + DuckDB loading it: {med(load_t):.2f} s, ratio {rc:.2f} "
            f"(target <= 2: {'met' if rc <= 2 else 'NOT met'}); {load()}"
        )
    finally:
        server.close()
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
