"""Offline times against the times a live watcher saw, on a genuine SForge run (issue 36, items 1-2).

The real SForge 1.1.0 harness (``sample_runs/real_sforge/make_real_run.sh run7``: tiny_stats with
the scripted Claude Code stand-in, four agent rounds, an auto-resume, then 20 s of silence after
the last submission and light checks until the budget ends the agent) runs while two supervisors
watch it: one all along (the reference: each transcript line stamped when it arrived), one stopped
once agent-2 is graded and started again 35 s later (its catch-up). When the run is over it is
ingested offline. Then, for the transcript's events:

* offline, an event whose time is pinned to an anchor (``t_source`` ``anchored``, no bounds) is
  within :data:`TOLERANCE_S` of the time seen live for >= 95 % of them;
* an event in a gap between anchors carries the gap's bounds (``t_lo`` / ``t_hi``), and the time
  seen live lies within them (give or take the tolerance); those are counted apart;
* no event is out of causal order: a tool call never after its result, nothing after "Agent
  finished";
* the restarted watcher times the lines it caught up as the offline ingest does (never the
  restart's second): the same checks against the live reference.

Needs root and Docker as ``tests/test_real_harness_live.py`` (whose ``harness`` fixture it uses).
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid

import pytest

docker = pytest.importorskip("docker")

from edgetui.live.alarms import AlarmSettings  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.supervisor import Supervisor  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.record.ingest import ingest_paths  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.store.database import open_db  # noqa: E402 - after pytest.importorskip("docker") above

from test_real_harness_live import SCRIPT, harness  # noqa: E402,F401 - the session's harness fixture

from time_comparison import compare_times, causal_faults  # noqa: E402 - tests/ helper

#: how far an anchored offline time may be from the time the live watcher saw
TOLERANCE_S = 2.0


def _settings() -> AlarmSettings:
    return AlarmSettings(
        discovery_interval_s=0,
        docker_interval_s=0,
        finalize_min_interval_s=0,
        finalize_interval_s=0,
        stats_interval_s=0,
    )


@pytest.mark.timeout(2400)
def test_offline_and_caught_up_times_match_what_the_live_watcher_saw(harness, tmp_path):
    work, env, eng = harness
    run_id = f"real-tail-{uuid.uuid4().hex[:6]}"
    runs_root = work / "work" / "logs" / "runs"
    runs_root.mkdir(parents=True, exist_ok=True)
    task_dir = runs_root / run_id / "tiny_stats"
    key = f"local/{run_id}/tiny_stats"
    tasks = work / "work" / "tasks"
    live_db, restart_db, off_db = (tmp_path / f"{n}.duckdb" for n in ("live", "restart", "offline"))
    live = Supervisor(open_db(live_db), [runs_root], docker_client=eng, settings=_settings(), tasks_dir=tasks)
    second: Supervisor | None = Supervisor(
        open_db(restart_db), [runs_root], docker_client=eng, settings=_settings(), tasks_dir=tasks
    )
    log = open(tmp_path / "run7.log", "wb")
    proc = subprocess.Popen([str(SCRIPT), "run7"], env={**env, "RUN7": run_id}, stdout=log, stderr=subprocess.STDOUT)
    stopped_at = restarted_at = None
    try:
        deadline = time.time() + 900
        while time.time() < deadline:
            runs = {r.run_key: r for r in live.poll_once()}
            if second is not None:
                second.poll_once()
            now = time.time()
            if stopped_at is None and (task_dir / "submissions" / "agent-2" / "report.json").exists():
                second.close()
                second.conn.close()
                second, stopped_at = None, now
            elif second is None and stopped_at is not None and restarted_at is None and now - stopped_at >= 35:
                second = Supervisor(
                    open_db(restart_db), [runs_root], docker_client=eng, settings=_settings(), tasks_dir=tasks
                )
                restarted_at = now
            r = runs.get(key)
            if proc.poll() is not None and not task_dir.exists():
                raise AssertionError(f"run7 did not start: {(tmp_path / 'run7.log').read_text()[-2000:]}")
            if proc.poll() is not None and r is not None and r.status == "finished" and restarted_at is not None:
                break
            time.sleep(0.4)
        else:
            raise AssertionError(f"run7 did not end: {(tmp_path / 'run7.log').read_text()[-2000:]}")
        for _ in range(3):  # the last lines and the final alignment
            live.poll_once()
            second.poll_once()
            time.sleep(0.4)
    finally:
        live.close()
        live.conn.close()
        if second is not None:
            second.close()
            second.conn.close()
        if proc.poll() is None:
            proc.kill()
        log.close()
    off = open_db(off_db)
    ingest_paths(off, [runs_root / run_id], tasks_dir=tasks)
    off.close()

    ref = open_db(live_db, read_only=True)
    try:
        for name, db in (("offline", off_db), ("restarted", restart_db)):
            got = open_db(db, read_only=True)
            try:
                c = compare_times(ref, got, key, TOLERANCE_S)
                print(f"{name}: {c}")
                assert c.pinned_within >= 0.95 * c.pinned, c
                assert c.gap_outside == 0, c.worst_gap
                assert not causal_faults(got, key), causal_faults(got, key)
                if name == "offline":
                    # the run's anchors: segment lines, five submissions and their results, the last line
                    assert c.pinned >= 15, c
                    assert c.gap >= 4, c  # the idle tail after the last submission has no anchor inside
                else:  # the lines caught up after the restart: none timed by their arrival
                    assert c.observed_within >= 0.95 * c.observed, c
                    caught = got.execute(
                        "SELECT count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt' "
                        "AND t_source = 'observed' AND t BETWEEN ? AND ?",
                        [key, restarted_at - 1, restarted_at + 3],
                    ).fetchone()[0]
                    assert caught == 0
                    assert c.caught_up(stopped_at, restarted_at) >= 3, c
            finally:
                got.close()
    finally:
        ref.close()
        shutil.rmtree(runs_root / run_id, ignore_errors=True)  # (the next scenario's watchers skip it)
