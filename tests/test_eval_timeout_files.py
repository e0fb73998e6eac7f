"""Items 4 and 5 of issue 36 without the harness (the genuine runs of sample_runs/genuine; the live
checks on a real harness are tests/test_real_harness_status.py): a timed-out evaluation is said from
the round's files for agent and auto rounds alike, and the judge's history no longer keeps a round
grading once its report.json is on disk."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from edgetui.live.alarms import AlarmSettings
from edgetui.live.judge import classify_history
from edgetui.live.supervisor import Supervisor
from edgetui.store.database import open_db

GENUINE = Path(__file__).resolve().parents[1] / "sample_runs" / "genuine"
PACK = "real-pack-20261201181500"


def test_timed_out_rounds_are_said_from_their_reports_and_the_history_does_not_keep_them_grading(tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(GENUINE / "runs" / PACK, root / PACK)
    td = root / PACK / "tiny_pack"
    # the run as it was before its end: no final result, no end-of-run files; its last report just written
    for name in ("final_result.json", "run_history.json", "evolve_state.json", "final_archive.tar.gz"):
        (td / name).unlink()
    reports = sorted(td.glob("submissions/*/report.json"), key=lambda p: p.stat().st_mtime)
    t0 = float((td / "started_at").read_text().split()[-1]) + 400.0
    for p in td.rglob("*"):
        os.utime(p, (t0, t0))
    now = [t0 + 5.0]
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        [root],
        docker_client=None,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
        clock=lambda: now[0],
        tasks_dir=GENUINE / "tasks",
        sleep=False,
    )
    key = f"local/{PACK}/tiny_pack"
    try:
        sup.poll_once()
        rs = sup.runs[key]
        # the judge's last /history (SForge 1.1.0, polled before these reports landed): every round
        # still running, and the timed-out ones "completed, 0 tests, no summary" on a later poll
        rounds = sorted(p.parent.name for p in reports)
        rs.history = classify_history(
            {"entries": [{"round": r, "status": "running", "type": "submission"} for r in rounds]}, now[0]
        )
        now[0] += 1.0
        run = {r.run_key: r for r in sup.poll_once()}[key]
        assert run.status == "running", run.status  # every round has its report.json: none is grading
        assert run.queued_rounds == [] and run.grading_rounds == []
        rs.history = classify_history(
            {
                "entries": [
                    {"round": r, "status": "completed", "type": "submission", "total_tests": 0, "summary": None}
                    for r in ("agent-4", "auto-3")
                ]
            },
            now[0],
        )
        now[0] += 1.0
        run = {r.run_key: r for r in sup.poll_once()}[key]
        said = {a.data.get("round"): a.message for a in run.alarms if a.rule == "eval_timeout"}
        assert said == {
            "agent-4": "agent-4: evaluation timed out after 25 s (eval_timeout 25 s; report.json)",
            "auto-3": "auto-3: evaluation timed out after 25 s (eval_timeout 25 s; report.json)",
        }, [(a.rule, a.message) for a in run.alarms]
        assert not [a for a in run.alarms if a.rule == "grading_failed"], [a.message for a in run.alarms]
    finally:
        sup.close()
        conn.close()


def test_a_timeout_is_said_from_run_instance_log_before_the_report(tmp_path):
    """The judge writes "Test runtime: 25.07s, timed_out: True" to run_instance.log before it
    writes report.json (SForge 1.1.0, ``judge_submission`` in sforge/harness/run_evaluation.py)."""
    root = tmp_path / "runs"
    shutil.copytree(GENUINE / "runs" / PACK, root / PACK)
    td = root / PACK / "tiny_pack"
    for name in ("final_result.json", "run_history.json", "evolve_state.json", "final_archive.tar.gz"):
        (td / name).unlink()
    (td / "submissions" / "agent-4" / "report.json").unlink()  # the report not written yet
    t0 = float((td / "started_at").read_text().split()[-1]) + 400.0
    for p in td.rglob("*"):
        os.utime(p, (t0, t0))
    now = [t0 + 5.0]
    conn = open_db(tmp_path / "live.duckdb")
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
        run = {r.run_key: r for r in sup.poll_once()}[f"local/{PACK}/tiny_pack"]
        said = {a.data.get("round"): a.message for a in run.alarms if a.rule == "eval_timeout"}
        assert said["agent-4"] == "agent-4: evaluation timed out after 25 s (eval_timeout 25 s; run_instance.log)"
    finally:
        sup.close()
        conn.close()
