"""Tasks folded under their SForge run id: a user runs one id over many tasks (a suite), and the
picker, the live runs screen and ``edgetui runs --by-run-id`` show one row per (host, run id) with
its number of tasks, how many finished and their mean score. Pure functions over the read side's
rows (:func:`edgetui.store.queries.list_runs`' dicts) or the supervisor's
:class:`~edgetui.live.model.LiveRun` snapshots alike; later views of a suite read this grouping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

__all__ = ["RunIdGroup", "ENDED_STATUSES", "group_by_run_id"]

#: statuses of a task that ended (SForge's ``finished`` and ``aborted``; a bare transcript's ``transcript``)
ENDED_STATUSES = ("finished", "aborted", "transcript")


@dataclass
class RunIdGroup:
    """One SForge run id on one host: its tasks and what they add up to."""

    host: str
    run_id: str
    run_keys: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    n_finished: int = 0  # tasks ended (finished or aborted)
    n_running: int = 0  # tasks running or grading
    #: mean of the tasks' best on the 0–100 scale (scores normalised, pass rates × 100), over the
    #: tasks with one; ``None`` when none has
    mean_score: Optional[float] = None
    n_scored: int = 0
    started_at: Optional[float] = None  # the first task's start
    models: list[str] = field(default_factory=list)

    @property
    def n_tasks(self) -> int:
        return len(self.run_keys)

    @property
    def key(self) -> str:
        """``host/run_id``: the group's identity."""
        return f"{self.host}/{self.run_id}"


def _get(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)


def group_by_run_id(items: Iterable[Any]) -> list[RunIdGroup]:
    """``items`` (run rows or live runs: ``run_key``, ``host``, ``run_id``, ``task_id``, ``status``,
    ``best_score_0_100`` or ``best_pass_rate``, ``started_at``, ``model``) folded by (host, run id), in the order each
    group's first item comes."""
    groups: dict[tuple[str, str], RunIdGroup] = {}
    sums: dict[tuple[str, str], float] = {}
    for it in items:
        host = str(_get(it, "host") or "local")
        run_id = str(_get(it, "run_id") or "")
        k = (host, run_id)
        g = groups.get(k)
        if g is None:
            g = groups[k] = RunIdGroup(host, run_id)
            sums[k] = 0.0
        g.run_keys.append(str(_get(it, "run_key")))
        g.tasks.append(str(_get(it, "task_id") or ""))
        status = _get(it, "status")
        if status in ENDED_STATUSES:
            g.n_finished += 1
        elif status in ("running", "grading"):
            g.n_running += 1
        s = _get(it, "best_score_0_100")
        if s is None and _get(it, "best_pass_rate") is not None:  # a pass-rate task: its pass rate × 100
            s = 100.0 * float(_get(it, "best_pass_rate"))
        if isinstance(s, (int, float)) and not isinstance(s, bool) and s == s:
            sums[k] += float(s)
            g.n_scored += 1
        t = _get(it, "started_at")
        if isinstance(t, (int, float)) and (g.started_at is None or t < g.started_at):
            g.started_at = float(t)
        m = _get(it, "model") or _get(it, "agent")
        if m and m not in g.models:
            g.models.append(str(m))
    for k, g in groups.items():
        if g.n_scored:
            g.mean_score = sums[k] / g.n_scored
    return list(groups.values())
