"""Structured records besides events: runs, tasks, submissions, per-test results.

These mirror the database tables of the same names (see :mod:`edgetui.store.schema`).
Scores are raw task scores (any unit, direction per task); ``pass_rate`` is
0–1; ``score_0_100`` is SForge's rescaled score (0–100, higher is better).
Times are epoch seconds UTC.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from pydantic import BaseModel, Field


def sforge_runtime_s(final: Any) -> Optional[float]:
    """SForge's own duration of a finished run: ``final_result.json``'s ``runtime_seconds``, the sum
    of the agent's segments (no install, drain or cleanup); None without it or on SForge's error
    paths, which write 0.0 (docs/sforge-run-folders.md §3.4.7)."""
    rt = final.get("runtime_seconds") if isinstance(final, dict) else None
    if isinstance(rt, bool) or not isinstance(rt, (int, float)) or not math.isfinite(rt) or rt <= 0:
        return None
    return float(rt)


def make_run_key(host: str, run_id: str, task_id: str) -> str:
    """``host/run_id/task_id`` — the identity of a run (architecture.md vocabulary)."""
    return f"{host}/{run_id}/{task_id}"


class TaskInfo(BaseModel):
    """Task settings from ``<tasks_dir>/<task_id>.json`` (SForge task_spec.py).

    Without a task JSON the SForge defaults apply (``pass_rate_first``,
    ``maximize``, no rescale) and ``assumed`` is true ("policy assumed" in the UI).
    """

    task_id: str
    name: Optional[str] = None
    category: Optional[str] = None
    selection: str = "pass_rate_first"
    score_direction: str = "maximize"
    rescale: Optional[dict[str, Any]] = None
    parser: Optional[str] = None
    game_mode: bool = False
    eval_timeout: Optional[int] = None
    source_path: Optional[str] = None
    assumed: bool = True


class RunInfo(BaseModel):
    """One run (host + run id + task id) and what its top-level files say."""

    host: str = "local"
    run_id: str
    task_id: str
    run_dir: Optional[str] = None  # absolute path of the task directory
    layout: Optional[str] = None  # "flat" | "grouped" (3-level <ip>/<run>/<task>) | "transcript"
    agent: Optional[str] = None
    model: Optional[str] = None
    agent_format: Optional[str] = (
        None  # claude_stream | claude_session | codex_text | codex_json | codex_rollout | opencode
    )
    timeout_s: Optional[float] = None  # time budget (run_config.json `timeout`, else agent default 3600)
    eval_interval_s: Optional[float] = None
    started_at: Optional[float] = None  # epoch UTC (started_at last line)
    ended_at: Optional[float] = None
    utc_offset_s: Optional[float] = None  # host local time = UTC + offset (derived from started_at)
    final: Optional[dict[str, Any]] = None  # final_result.json as parsed (None = absent / unparsable)
    config: Optional[dict[str, Any]] = None  # run_config.json with secrets redacted
    is_sample: bool = False
    infra_error: bool = False
    resume_count: Optional[int] = None
    #: the harness's own last words when it ended before the agent started: the ERROR message of
    #: run_agent.log's last record (a crash in run_agent, e.g. SForge 1.1.0's early errors), else None
    harness_error: Optional[str] = None
    log_mtime: Optional[float] = None  # run_agent.log's mtime (epoch UTC)
    #: why a final_result.json that exists gives no final result, one line naming the file and the
    #: byte ("final_result.json could not be read (invalid JSON at byte 186: ...)"), else None
    unreadable: Optional[str] = None
    #: the SForge format the run used (:func:`edgetui.parsers.run_format.run_format`: "1.1.0", "next";
    #: None for a bare transcript)
    format: Optional[str] = None
    #: the container backend when the files say it (``"e2b"``: newer SForge's managed sandboxes, no
    #: containers or pods to watch, docs/sforge-judge.md): run_config.json ``backend``, an E2B judge
    #: URL or the harness's sandbox lines in run_agent.log; None = not said (docker or k8s)
    backend: Optional[str] = None


@dataclass(slots=True)
class TestResult:
    """One per-test / per-check result of a graded submission (report.json details/test_details).

    A plain slotted dataclass, not a pydantic model: a 750-run root has ~600,000 of them and
    pydantic's validation was ~1.4 µs of each one's 1.6 µs. The one producer
    (:func:`edgetui.parsers.sforge_submissions.test`) hands it values already checked (``str``, ``str``,
    ``str | None``, finite ``float | None`` twice, ``"details" | "test_details"``); inside a
    :class:`SubmissionRecord` pydantic still validates it (``SubmissionRecord(tests=[...])``,
    dicts included) and dumps it as a dict, so ``model_dump()`` / ``model_dump_json()`` are as before.
    """

    name: str
    status: str
    message: Optional[str] = None
    score: Optional[float] = None
    weight: Optional[float] = None
    origin: str = "details"  # "details" | "test_details"


class SubmissionRecord(BaseModel):
    """One submission folder ``submissions/<round>/`` (or a judge-history entry).

    ``status``: ``graded`` (report.json parsed), ``failed_grading`` (folder
    without report.json: grading raised, see run_instance.log), ``bad_report``
    (report.json present but not JSON), ``in_flight`` (game session with only
    steps.jsonl). ``score_flag`` records a non-finite raw score stored as NULL.
    """

    round: str
    kind: str  # agent | auto | game | manual | legacy
    n: Optional[int] = None
    submission_id: Optional[str] = None
    status: str = "graded"
    submitted_at: Optional[float] = None  # report.json submitted_at (judge epoch, grading start)
    graded_at: Optional[float] = None  # report.json mtime ≈ grading end
    seen_at: Optional[float] = None  # evolve_state.json `at` (container clock; agent saw result)
    pass_rate: Optional[float] = None  # 0–1
    score: Optional[float] = None  # raw score
    score_flag: Optional[str] = None  # nan | inf | -inf | non_numeric
    score_0_100: Optional[float] = None
    max_score: Optional[float] = None  # game
    valid: Optional[bool] = None
    total_tests: Optional[int] = None
    passed: Optional[int] = None
    failed: Optional[int] = None
    errors: Optional[int] = None
    timed_out: Optional[bool] = None
    runtime_s: Optional[float] = None
    summary: Optional[str] = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    error: Optional[str] = None  # one-line reason for failed_grading / bad_report
    tests: list[TestResult] = Field(default_factory=list)
