"""The team's shared record (edgetui sync, edgetui/store/team_record.py) against a real PostgreSQL.

"Machines" are folders here: each has its own DuckDB file and its own machine name
(``EDGETUI_MACHINE``), and they meet only through the server (tests/pg_fixture.py).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import prereqs
from conftest import copy_samples_db
from pg_fixture import PgServer

from edgetui.cli.main import main

pytestmark = pytest.mark.postgres

#: local bookkeeping of the sync itself (not the record), left out of comparisons
LOCAL_ONLY = {"meta", "team_sync", "team_annotations"}


def _env(url: str, machine: str, person: str = "tester") -> dict[str, str]:
    return {**os.environ, "EDGETUI_TEAM_URL": url, "EDGETUI_MACHINE": machine, "EDGETUI_PERSON": person}


def run_cli(args: list[str], url: str, machine: str, person: str = "tester", check: bool = True):
    """``edgetui ARGS`` in its own process (as a member would run it); the completed process."""
    p = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", *args],
        env=_env(url, machine, person),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check:
        assert p.returncode == 0, p.stderr
    return p


def tables(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as c:
        return sorted(
            t
            for (t,) in c.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
            if t not in LOCAL_ONLY
        )


def differences(a: Path, b: Path, only: set[str] | None = None) -> dict[str, tuple[int, int]]:
    """Per table: rows of ``a`` not in ``b`` and of ``b`` not in ``a`` (EXCEPT ALL both ways); the tables that differ."""
    out = {}
    c = duckdb.connect()
    c.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    c.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    names = tables(a)
    assert names == tables(b)
    for t in names:
        if only is not None and t not in only:
            continue
        ab = c.execute(f"SELECT count(*) FROM (SELECT * FROM a.{t} EXCEPT ALL SELECT * FROM b.{t})").fetchone()[0]
        ba = c.execute(f"SELECT count(*) FROM (SELECT * FROM b.{t} EXCEPT ALL SELECT * FROM a.{t})").fetchone()[0]
        if ab or ba:
            out[t] = (ab, ba)
    c.close()
    return out


def count(db: Path, sql: str):
    with duckdb.connect(str(db), read_only=True) as c:
        return c.execute(sql).fetchall()


@pytest.fixture
def team_url(pg_server, team_db) -> str:
    return pg_server.url(team_db)


def test_push_then_rebuild_equals_the_original(samples_template, tmp_path, team_url, pg_server, team_db):
    a = copy_samples_db(samples_template, tmp_path / "a" / "edgetui.duckdb")
    run_cli(["--db", str(a), "sync", "--init"], team_url, "alpha")
    n_runs = count(a, "SELECT count(*) FROM runs")[0][0]
    assert n_runs > 0
    # in the team record, the local runs carry the machine that recorded them
    team_runs = pg_server.sql("SELECT run_key, recorded_by FROM edgetui_team.runs", team_db)
    assert len(team_runs) == n_runs
    local = {k for (k,) in count(a, "SELECT run_key FROM runs WHERE host = 'local'")}
    assert local and len(local) < n_runs  # the samples have runs of a named host (10.0.0.7) too
    assert {k for k, _ in team_runs} == {
        "local@alpha/" + k[len("local/") :] if k in local else k for (k,) in count(a, "SELECT run_key FROM runs")
    }
    assert {m for _, m in team_runs} == {"alpha"}
    # a second sync pushes nothing
    again = run_cli(["--db", str(a), "sync"], team_url, "alpha")
    assert f"pushed 0 run(s)" in again.stdout and f"{n_runs} unchanged" in again.stdout
    copy = tmp_path / "copy.duckdb"
    import shutil

    shutil.copyfile(a, copy)
    run_cli(["--db", str(a), "sync", "--rebuild"], team_url, "alpha")
    assert differences(copy, a) == {}
    assert count(a, "SELECT count(*) FROM events") == count(copy, "SELECT count(*) FROM events")
