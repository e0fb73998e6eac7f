"""A run that crashed before its agent started (the genuine SForge 1.1.0 crash runs of
sample_runs/genuine: run_agent.log ends on an ERROR record and its traceback, no started_at, no
transcript) recorded live as offline (issue 36, item 8): the same events, the ERROR record's
``infra_error`` with the offline ingest's event id (no line ever closes it: live, it was held and
recorded provisionally for good), the same runs row, NULL tokens, and the elapsed time of its log."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main
from edgetui.live.alarms import AlarmSettings
from edgetui.live.supervisor import Supervisor
from edgetui.store.database import open_db

GENUINE = Path(__file__).resolve().parents[1] / "sample_runs" / "genuine"
COLS = (
    "status, infra_error, status_reason, started_at, ended_at, last_event_at, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens, cost_usd, agent_submissions, auto_submissions"
)
EVENTS = "SELECT event_id, kind, t, summary, data FROM events WHERE run_key = ? AND source NOT LIKE 'live/%' ORDER BY 1"


def _q(db: Path, sql: str, params=()):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, list(params)).fetchall()
    finally:
        c.close()


@pytest.mark.parametrize("run_id", ["rs1-stats-20261201", "real-installfail-20261201181800"])
def test_a_crash_before_the_agent_is_recorded_live_as_offline(tmp_path, run_id):
    root = tmp_path / "runs"
    shutil.copytree(GENUINE / "runs" / run_id, root / run_id)
    key = f"local/{run_id}/tiny_stats"
    # the files' mtimes as the harness left them (a checkout's are its own time: placing such times is
    # the time alignment's business, not this test's): its log's first record
    first = tmp_path / "first.duckdb"
    assert main(["--db", str(first), "ingest", "-q", "--tasks-dir", str(GENUINE / "tasks"), str(root)]) == 0
    (started,) = _q(first, "SELECT started_at FROM runs WHERE run_key = ?", [key])[0]
    for p in root.rglob("*"):
        os.utime(p, (started, started))
    now = [started + 600.0]
    live_db = tmp_path / "live.duckdb"
    conn = open_db(live_db)
    sup = Supervisor(
        conn,
        [root],
        docker_client=None,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
        clock=lambda: now[0],
        tasks_dir=GENUINE / "tasks",
        sleep=False,
    )
    try:
        elapsed = None
        for _ in range(8):  # quiet refreshes: the held ERROR record is past its flush delay
            run = {r.run_key: r for r in sup.poll_once()}[key]
            elapsed = run.elapsed_s
            assert run.tokens == 0
            now[0] += 3.0
    finally:
        sup.close()
        conn.close()
    off_db = tmp_path / "offline.duckdb"
    assert main(["--db", str(off_db), "ingest", "-q", "--tasks-dir", str(GENUINE / "tasks"), str(root)]) == 0
    live, off = (
        _q(live_db, f"SELECT {COLS} FROM runs WHERE run_key = ?", [key]),
        _q(off_db, f"SELECT {COLS} FROM runs WHERE run_key = ?", [key]),
    )
    assert live == off and live[0][0] == "aborted" and live[0][6] is None, (live, off)
    live_ev, off_ev = _q(live_db, EVENTS, [key]), _q(off_db, EVENTS, [key])
    assert live_ev == off_ev, (live_ev, off_ev)
    assert [e for e in live_ev if e[1] == "infra_error"], live_ev
    start, last = off[0][3], off[0][5]
    assert elapsed == pytest.approx(last - start, abs=1e-6)
