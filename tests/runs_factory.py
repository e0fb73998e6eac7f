"""Write small SForge run directories (the files the harness writes) for tests of the analysis.

Each run is ``<root>/<run_id>/<task_id>/`` with ``started_at`` (local ISO line + epoch line, as
SForge writes it), ``run_config.json`` (model, timeout), ``run_agent.log``, one
``submissions/agent-N/report.json`` per graded submission (``submitted_at`` and
``runtime_seconds`` as the judge writes them) and, for a finished run, ``final_result.json``.
They are then recorded with the real ingest into a real DuckDB file.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Sequence


def write_task(
    tasks_dir: Path,
    task_id: str,
    *,
    category: str = "Optimization",
    selection: str = "score_first",
    rescale: Optional[dict] = None,
    parser: str = "score_sum",
) -> Path:
    tasks_dir.mkdir(parents=True, exist_ok=True)
    judge = {"parser": parser, "score_direction": "maximize", "selection": selection}
    if rescale is not None:
        judge["rescale"] = rescale
    p = tasks_dir / f"{task_id}.json"
    p.write_text(json.dumps({"task_id": task_id, "name": task_id, "category": category, "judge": judge}))
    return p


def _stamp(epoch: float) -> str:
    d = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M:%S,") + f"{int((epoch % 1) * 1000):03d}"


def write_run(
    root: Path,
    run_id: str,
    task_id: str,
    *,
    model: str,
    start: float,
    subs: Sequence[tuple],
    duration_s: Optional[float],
    infra_error: bool = False,
    timeout_s: float = 43200,
) -> Path:
    """``subs``: ``(elapsed_s, pass_rate, score[, runtime_s[, score_0_100]])`` per graded submission,
    agent rounds in this order. ``duration_s`` ``None``: a run going on (no final_result.json)."""
    td = root / run_id / task_id
    (td / "submissions").mkdir(parents=True, exist_ok=True)
    iso = datetime.fromtimestamp(start, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    (td / "started_at").write_text(f"{iso}\n{start}\n")
    (td / "run_config.json").write_text(
        json.dumps({"task_id": task_id, "agent": "claude-code", "model": model, "timeout": timeout_s})
    )
    log = [f"{_stamp(start)} - INFO - Images ready"]
    if infra_error:
        log.append(f"{_stamp(start + 5)} - ERROR - judge container failed to start")
    best = None
    for i, s in enumerate(subs, start=1):
        el, pr, score = s[0], s[1], s[2]
        rt = s[3] if len(s) > 3 else 60.0
        rep = {
            "task_id": task_id,
            "submission_id": f"{i:012x}",
            "pass_rate": pr,
            "score": score,
            "timed_out": False,
            "runtime_seconds": rt,
            "submitted_at": start + el,
            "total_tests": 10,
            "passed": int(round(pr * 10)),
            "failed": 10 - int(round(pr * 10)),
            "errors": 0,
        }
        if len(s) > 4:
            rep["score_0_100"] = s[4]
        d = td / "submissions" / f"agent-{i}"
        d.mkdir()
        (d / "report.json").write_text(json.dumps(rep))
        if score is not None and (best is None or score > best[1]):
            best = (f"agent-{i}", score, pr)
        log.append(f"{_stamp(start + el)} - INFO - Submission agent-{i} graded")
    if duration_s is not None:
        log.append(f"{_stamp(start + duration_s)} - INFO - Agent finished")
        fin = {
            "agent": "claude-code",
            "task": task_id,
            "run_id": run_id,
            "model": model,
            "runtime_seconds": duration_s,
            "timed_out": False,
        }
        if best:
            fin.update(best_round=best[0], best_score=best[1], best_pass_rate=best[2])
        (td / "final_result.json").write_text(json.dumps(fin))
    (td / "run_agent.log").write_text("\n".join(log) + "\n")
    return td


def ingest(db: Path, paths, tasks_dir: Path, sample: bool = False) -> None:
    from edgetui.store.database import open_db
    from edgetui.record.ingest import ingest_paths

    conn = open_db(db)
    try:
        ingest_paths(conn, [Path(p) for p in paths], tasks_dir=tasks_dir, is_sample=sample)
    finally:
        conn.close()


def curves(db: Path, now: Optional[float] = None):
    from edgetui.analysis.recorded_curves import fetch_from, load_curves
    from edgetui.store.database import open_db

    conn = open_db(db, read_only=True)
    try:
        return {c.run_key: c for c in load_curves(fetch_from(conn), now=now)}
    finally:
        conn.close()


HOUR = 3600.0
NOW = time.time()
