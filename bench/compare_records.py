"""Record the same runs with two versions of edgetui and compare every table row by row.

A refactoring that must not change behaviour (a re-layout, objects composed instead of mixed in)
is checked here: the bundled samples (generated and genuine) are ingested into a fresh database by
this checkout and by another one (a git worktree or clone of the commit before the change), then
every table of one is compared with the other's by SQL ``EXCEPT`` both ways. Columns that hold the
wall clock of the recording itself (when a row was written) are left out of the comparison and
named in the output.

    .venv/bin/python bench/compare_records.py --other /path/to/other/checkout

The other checkout needs its own ``.venv`` (``python3 -m venv .venv && .venv/bin/pip install -e .``).
Prints one line per table: rows, rows only here, rows only there; exits 1 when any table differs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]

#: columns whose value is the wall clock of the recording (or derived from it), not of the run
WALL_CLOCK_COLUMNS = {"ingested_at", "updated_at", "built_at"}  # runs, source_cursors, moments


def record(checkout: Path, db: Path) -> None:
    """Ingest this checkout's bundled samples (generated and genuine, as samples) with the edgetui of
    ``checkout`` into ``db``, then build every run's moments: both versions read the same files at
    the same paths."""
    py = checkout / ".venv" / "bin" / "python"
    # the names before and after the re-layout of issue 34 (spelled in parts: the re-layout's own
    # rewrite of module names must leave the old ones here as they are)
    old = {"ingest": "edgetui" + ".ingest", "db": "edgetui" + ".db", "moments": "edgetui" + ".moments"}
    code = (
        "import importlib, sys\nfrom pathlib import Path\n"
        "try:\n    ing = importlib.import_module('edgetui.record.ingest')\n"
        "    dbm = importlib.import_module('edgetui.store.database')\n"
        "    mom = importlib.import_module('edgetui.record.moments_table')\n"
        f"except ImportError:\n    ing = importlib.import_module({old['ingest']!r})\n"
        f"    dbm = importlib.import_module({old['db']!r})\n"
        f"    mom = importlib.import_module({old['moments']!r})\n"
        "conn = dbm.open_db(Path(sys.argv[1]))\n"
        "for runs, tasks in ((sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5])):\n"
        "    ing.ingest_paths(conn, [Path(runs)], tasks_dir=Path(tasks), is_sample=True)\n"
        "for (key,) in conn.execute('SELECT run_key FROM runs ORDER BY run_key').fetchall():\n"
        "    mom.rebuild_moments(conn, key)\n"
        "conn.close()\n"
    )
    s = ROOT / "sample_runs"
    args = [str(db), str(s / "runs"), str(s / "tasks"), str(s / "genuine" / "runs"), str(s / "genuine" / "tasks")]
    subprocess.run([str(py), "-c", code, *args], cwd=checkout, check=True)


def compare(a: Path, b: Path) -> int:
    conn = duckdb.connect()
    conn.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    conn.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    tables = sorted(
        r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'a'").fetchall()
    )
    other = {r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'b'").fetchall()}
    differ = 0
    for t in tables:
        if t not in other:
            print(f"{t:24s} only here")
            differ += 1
            continue
        cols_a = [r[0] for r in conn.execute(f"SELECT column_name FROM (DESCRIBE a.{t})").fetchall()]
        cols_b = {r[0] for r in conn.execute(f"SELECT column_name FROM (DESCRIBE b.{t})").fetchall()}
        left_out = [c for c in cols_a if c in WALL_CLOCK_COLUMNS]
        cols = [c for c in cols_a if c in cols_b and c not in left_out]
        sel = ", ".join(f'"{c}"' for c in cols)
        n = conn.execute(f"SELECT count(*) FROM a.{t}").fetchone()[0]
        only_a = conn.execute(
            f"SELECT count(*) FROM (SELECT {sel} FROM a.{t} EXCEPT ALL SELECT {sel} FROM b.{t})"
        ).fetchone()[0]
        only_b = conn.execute(
            f"SELECT count(*) FROM (SELECT {sel} FROM b.{t} EXCEPT ALL SELECT {sel} FROM a.{t})"
        ).fetchone()[0]
        extra = sorted(set(cols_a) ^ cols_b)
        note = (f"  (not compared: {', '.join(left_out)})" if left_out else "") + (
            f"  (columns in one only: {', '.join(extra)})" if extra else ""
        )
        print(f"{t:24s} rows {n:7d}  only here {only_a:6d}  only there {only_b:6d}{note}")
        differ += bool(only_a or only_b or extra)
    for t in sorted(other - set(tables)):
        print(f"{t:24s} only there")
        differ += 1
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", type=Path, required=True, help="the other checkout (with its own .venv)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        here, there = Path(d) / "here.duckdb", Path(d) / "there.duckdb"
        record(ROOT, here)
        record(args.other.resolve(), there)
        differ = compare(here, there)
    print("identical" if not differ else f"{differ} table(s) differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
