"""The live supervisor's start-up in batches (runs registered together: tasks, runs rows and their
read-back in one statement each; a poll's due runs refreshed together: one read of their logs' ends,
one write of their file events, then one finalize_runs) records what registering and refreshing the
same runs one at a time records: every table of two real DuckDB files, compared with EXCEPT ALL both
ways. The runs: copies of the bundled sample runs and the genuine SForge runs (submissions, game
sessions, finished and aborted runs, harness errors), more than FIRST_SHOW_RUNS of them. A run whose
refresh fails in a batch is retried alone and said alone; the others are recorded (and likewise a
run failing to register in a group)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import duckdb
import pytest

from edgetui.store.database import open_db
from edgetui.live.alarms import AlarmSettings
from edgetui.live.register import RunRegistry
from edgetui.live.supervisor import FIRST_SHOW_RUNS, Supervisor

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs" / "runs"
GENUINE = ROOT / "sample_runs" / "genuine" / "runs"
TASKS = (ROOT / "sample_runs" / "tasks", ROOT / "sample_runs" / "genuine" / "tasks")
#: columns holding the time of the write, not of the run
VOLATILE = {"ingested_at", "updated_at"}


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> tuple[Path, Path]:
    """A runs root of three copies of the sample runs and one of the genuine runs (distinct run
    ids, files and mtimes as they are), and a tasks dir for all of them."""
    tmp = tmp_path_factory.mktemp("startup-batch")
    runs = tmp / "runs"
    runs.mkdir()
    for n in range(3):
        for d in SAMPLES.iterdir():
            if d.name[0].isdigit() and d.name.count(".") == 3:  # the machine-grouped layout: <ip>/<run_id>/...
                shutil.copytree(d, runs / f"10.0.{n}.{d.name.rsplit('.', 1)[1]}", symlinks=True)
            elif d.is_dir():
                shutil.copytree(d, runs / f"{d.name}-c{n}", symlinks=True)
    for d in GENUINE.iterdir():
        if d.is_dir():
            shutil.copytree(d, runs / d.name, symlinks=True)
    tasks = tmp / "tasks"
    tasks.mkdir()
    for t in TASKS:
        for f in t.glob("*.json"):
            shutil.copy2(f, tasks / f.name)
    return runs, tasks


def start_up(runs: Path, tasks: Path, db: Path, one_by_one: bool, monkeypatch) -> tuple[int, int, list]:
    """A supervisor's start-up on ``runs`` into ``db`` until every run is caught up and refreshed
    (its clock stands still: no held record turns provisional, nothing is due twice). Returns
    (runs shown, polls, notes)."""
    with monkeypatch.context() as mp:
        if one_by_one:
            real = RunRegistry.register_all
            mp.setattr(RunRegistry, "register_all", lambda self, locs, now: [real(self, [loc], now) for loc in locs])
        conn = open_db(db)
        t0 = time.time()
        settings = AlarmSettings(
            stats_interval_s=0,
            max_first_refresh_per_poll=1 if one_by_one else 150,
            max_finalize_per_poll=1 if one_by_one else 8,
        )
        sup = Supervisor(
            conn, [runs], docker_client=None, settings=settings, tasks_dir=tasks, clock=lambda: t0, sleep=False
        )
        try:
            shown = len(sup.poll_once())
            polls = 1
            while sup.behind or any(rs.dirty_files or rs.dirty_finalize for rs in sup.runs.values()):
                sup.poll_once()
                polls += 1
                assert polls < 500
            return shown, polls, list(sup.notes)
        finally:
            sup.close()
            conn.close()


def table_differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """By table: rows of ``a`` not in ``b`` and of ``b`` not in ``a`` (EXCEPT ALL), the write
    times left out and DOUBLE columns rounded to 1e-9 (a sum of floats in DuckDB is not
    reproducible to the last bit: its order follows the parallel scan)."""
    c = duckdb.connect()
    c.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    c.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    out = {}
    try:
        for (t,) in c.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'a'").fetchall():
            cols = c.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = 'a' "
                "AND table_name = ? ORDER BY column_index",
                [t],
            ).fetchall()
            sel = ", ".join(f'round("{n}", 9)' if ty == "DOUBLE" else f'"{n}"' for n, ty in cols if n not in VOLATILE)
            ab = c.execute(
                f"SELECT count(*) FROM (SELECT {sel} FROM a.{t} EXCEPT ALL SELECT {sel} FROM b.{t})"
            ).fetchone()[0]
            ba = c.execute(
                f"SELECT count(*) FROM (SELECT {sel} FROM b.{t} EXCEPT ALL SELECT {sel} FROM a.{t})"
            ).fetchone()[0]
            out[t] = (ab, ba)
    finally:
        c.close()
    return out


def test_batched_start_up_records_what_one_run_at_a_time_records(root, tmp_path, monkeypatch):
    runs, tasks = root
    n_runs = sum(1 for _ in runs.glob("*/*/run_agent.log")) + sum(1 for _ in runs.glob("*/*/*/run_agent.log"))
    assert n_runs > FIRST_SHOW_RUNS  # (the start-up path: every run shown before any line is read)
    shown_a, polls_a, notes_a = start_up(runs, tasks, tmp_path / "batch.duckdb", False, monkeypatch)
    shown_b, polls_b, notes_b = start_up(runs, tasks, tmp_path / "single.duckdb", True, monkeypatch)
    assert shown_a == shown_b == n_runs
    assert polls_a < polls_b  # (one at a time: a poll per run's refresh)
    for notes in (notes_a, notes_b):
        assert not [m for _, m in notes if m.startswith(("could not", "refresh failed", "tail failed"))]
    con = duckdb.connect(str(tmp_path / "batch.duckdb"), read_only=True)
    try:  # what is compared is there: submissions, test results, file and line events of every run
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == n_runs
        assert con.execute("SELECT count(*) FROM submissions").fetchone()[0] > 100
        assert con.execute("SELECT count(*) FROM test_results").fetchone()[0] > 1000
        no_config = sum(1 for p in runs.glob("**/run_agent.log") if not (p.parent / "run_config.json").exists())
        assert (
            con.execute("SELECT count(DISTINCT run_key) FROM events WHERE source = 'run_config.json'").fetchone()[0]
            == n_runs - no_config
        )
        assert (
            con.execute("SELECT count(DISTINCT run_key) FROM events WHERE source = 'agent_output.txt'").fetchone()[0]
            >= n_runs - no_config
        )
        assert (
            con.execute(
                "SELECT count(*) FROM runs WHERE n_events IS NULL OR best_round IS NULL AND agent_submissions > 0"
            ).fetchone()[0]
            == 0
        )
    finally:
        con.close()
    diff = table_differences(tmp_path / "batch.duckdb", tmp_path / "single.duckdb")
    assert {t: d for t, d in diff.items() if d != (0, 0)} == {}
    assert {"events", "runs", "submissions", "tasks", "source_cursors"} <= set(diff)


def test_a_run_failing_in_a_batch_is_refreshed_alone_and_the_others_are_recorded(root, tmp_path, monkeypatch):
    import edgetui.live.run_files as run_files

    runs, tasks = root
    bad = next(p.parent for p in sorted(runs.glob("*/*/run_agent.log")))
    real = run_files.whole_file_events

    def boom(td, *a, **kw):
        if Path(td) == bad:
            raise OSError("disk on fire")
        return real(td, *a, **kw)

    monkeypatch.setattr(run_files, "whole_file_events", boom)
    conn = open_db(tmp_path / "fail.duckdb")
    t0 = time.time()
    sup = Supervisor(
        conn,
        [runs],
        docker_client=None,
        settings=AlarmSettings(stats_interval_s=0),
        tasks_dir=tasks,
        clock=lambda: t0,
        sleep=False,
    )
    try:
        live = sup.poll_once()
        for _ in range(20):
            if not sup.behind:
                break
            live = sup.poll_once()
        said = {r.run_key: r.message for r in live if r.message}
        bad_key = next(rs.key for rs in sup.runs.values() if rs.task_dir == bad)
        assert said == {bad_key: "could not refresh: OSError: disk on fire"}
        # every other run got its file events and its finalize; the failed one has none of its files
        files = dict(
            conn.execute(
                "SELECT run_key, count(*) FROM events WHERE source = 'run_config.json' GROUP BY run_key"
            ).fetchall()
        )
        no_config = sum(1 for p in runs.glob("**/run_agent.log") if not (p.parent / "run_config.json").exists())
        assert bad_key not in files and len(files) == len(live) - 1 - no_config
        assert (
            conn.execute("SELECT count(*) FROM runs WHERE n_events IS NULL AND run_key <> ?", [bad_key]).fetchone()[0]
            == 0
        )
    finally:
        sup.close()
        conn.close()


def test_a_run_failing_to_register_in_a_group_leaves_the_others_registered(root, tmp_path, monkeypatch):
    from edgetui.parsers import sforge_dir as sd

    runs, tasks = root
    bad = next(p.parent for p in sorted(runs.glob("*/*/run_agent.log")))
    real = sd.read_run_info

    def boom(loc, *a, **kw):
        if Path(loc.task_dir) == bad:
            raise ValueError("unreadable config")
        return real(loc, *a, **kw)

    monkeypatch.setattr(sd, "read_run_info", boom)
    conn = open_db(tmp_path / "reg.duckdb")
    t0 = time.time()
    sup = Supervisor(
        conn,
        [runs],
        docker_client=None,
        settings=AlarmSettings(stats_interval_s=0),
        tasks_dir=tasks,
        clock=lambda: t0,
        sleep=False,
    )
    try:
        live = sup.poll_once()
        n_runs = sum(1 for _ in runs.glob("**/run_agent.log"))
        assert len(live) == n_runs - 1 and bad not in {rs.task_dir for rs in sup.runs.values()}
        notes = [m for _, m in sup.notes if m.startswith(f"{bad}: could not watch")]
        assert notes == [f"{bad}: could not watch: ValueError: unreadable config"]
        # the group's rows were rolled back and written again one by one: each run once, with its task
        assert conn.execute("SELECT count(*), count(DISTINCT run_key) FROM runs").fetchone() == (n_runs - 1, n_runs - 1)
        assert (
            conn.execute(
                "SELECT count(*) FROM runs r LEFT JOIN tasks t USING (task_id) WHERE t.task_id IS NULL"
            ).fetchone()[0]
            == 0
        )
    finally:
        sup.close()
        conn.close()
