"""Hand-made SForge run folders for the formats after 1.1.0 (docs/sforge-formats.md): rounds whose
report is invalid, missing or unreadable, a judge history of the later format, image records.
Each run is ``<root>/<run_id>/<task_id>/`` with the files the harness and the judge write
(``started_at``, ``run_config.json``, ``run_agent.log``, ``submissions/<round>/``, and
``final_result.json`` naming SForge's own best)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence


def write_pass_task(tasks_dir: Path, task_id: str, *, selection: str = "pass_rate_first", **judge: Any) -> Path:
    """A task JSON graded by pass rate (no ``score_direction``: not a score task)."""
    tasks_dir.mkdir(parents=True, exist_ok=True)
    p = tasks_dir / f"{task_id}.json"
    p.write_text(
        json.dumps(
            {"task_id": task_id, "name": task_id, "judge": {"parser": "pytest_v", "selection": selection, **judge}}
        )
    )
    return p


def _stamp(epoch: float) -> str:
    d = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{int((epoch % 1) * 1000):03d}"


def write_run(
    root: Path,
    run_id: str,
    task_id: str,
    *,
    start: float,
    rounds: Sequence[dict],
    final: Optional[dict] = None,
    history: Optional[dict] = None,
    config: Optional[dict] = None,
) -> Path:
    """``rounds``: dicts with ``round`` (``agent-1``), ``at`` (seconds after ``start``: the
    report's ``submitted_at``), and either ``report: "missing"`` (grading raised: only
    ``run_instance.log`` with its ERROR), ``report: "garbled"`` (a report.json cut mid-write), or
    the report's ``pass_rate``, ``score`` and optionally ``valid``. ``final``: final_result.json's
    best fields (None: a run going on); ``history``: run_history.json as written."""
    td = root / run_id / task_id
    (td / "submissions").mkdir(parents=True, exist_ok=True)
    iso = datetime.fromtimestamp(start, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    (td / "started_at").write_text(f"{iso}\n{start}\n")
    cfg = {"task_id": task_id, "agent": "claude-code", "model": "m-1", "timeout": 7200}
    (td / "run_config.json").write_text(json.dumps({**cfg, **(config or {})}))
    log = [f"{_stamp(start)} - INFO - Images ready"]
    for i, r in enumerate(rounds, start=1):
        d = td / "submissions" / r["round"]
        d.mkdir()
        at = start + r["at"]
        (d / "run_instance.log").write_text(
            f"{_stamp(at)} - INFO - Judge container started: {i:064x}\n"
            + (
                f"{_stamp(at + 5)} - ERROR - Evaluation failed: judge container exited\n"
                if r.get("report") == "missing"
                else f"{_stamp(at + 5)} - INFO - Result: 1/1 passed (pass_rate=100.00%)\n"
            )
        )
        if r.get("report") == "missing":
            continue
        rep = {
            "task_id": task_id,
            "submission_id": f"{i:012x}",
            "total_tests": 10,
            "passed": int(round((r.get("pass_rate") or 0) * 10)),
            "failed": 10 - int(round((r.get("pass_rate") or 0) * 10)),
            "errors": 0,
            "pass_rate": r.get("pass_rate"),
            "score": r.get("score"),
            "timed_out": False,
            "runtime_seconds": 5.0,
            "test_details": [],
            "valid": r.get("valid", True),
            "summary": r.get("summary"),
            "details": [],
            "metrics": {},
            "submitted_at": at,
        }
        text = json.dumps(rep)
        (d / "report.json").write_text(text[: len(text) // 2] if r.get("report") == "garbled" else text)
        log.append(f"{_stamp(at)} - INFO - Submission {r['round']} sent")
    if history is not None:
        (td / "run_history.json").write_text(json.dumps(history))
    if final is not None:
        last = max((r["at"] for r in rounds), default=0.0) + 60.0
        log.append(f"{_stamp(start + last)} - INFO - Agent finished")
        fin = {
            "agent": "claude-code",
            "task": task_id,
            "run_id": run_id,
            "model": "m-1",
            "total_rounds": len(rounds),
            "agent_submissions": sum(1 for r in rounds if r["round"].startswith("agent-")),
            "auto_submissions": sum(1 for r in rounds if r["round"].startswith("auto-")),
            "timed_out": True,
            "runtime_seconds": last,
            "archive_size_bytes": 100,
            "resume_count": 0,
            **final,
        }
        (td / "final_result.json").write_text(json.dumps(fin))
    (td / "run_agent.log").write_text("\n".join(log) + "\n")
    return td
