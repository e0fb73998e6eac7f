"""The EdgeBench leaderboard: per group (model, or run group) × hour, overall and per category.

Aggregation, as EdgeBench computes its published tables (checked against the open-51 rows of its
leaderboard and 12-hour category tables, ``tests/test_leaderboard.py``; ``scaling-notes.md``):

1. repeats of one task in one group are averaged first (the mean of the repeats with a value);
2. the group's value at an hour is the plain mean over the tasks with a value at that hour
   ("drop missing": equal weight per task, no category weighting, a denominator that can change
   from hour to hour); ``n_tasks`` says how many tasks it is over;
3. a category's value is the same mean over that category's tasks.

Values are 0–100 (the per-task value of :mod:`edgetui.replay.analysis.score_at`, or a per-task table's
``score``), unrounded. No running maximum is applied to a per-task table (EdgeBench's is not
always monotone: its values are kept as published).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from edgetui.replay.analysis.score_at import run_group_key
from edgetui.replay.analysis.task_variants import mixed_tasks

__all__ = [
    "TaskValue",
    "LeaderCell",
    "aggregate",
    "read_task_table",
    "recorded_values",
    "left_out",
    "left_out_note",
    "DEFAULT_HOURS",
    "OVERALL",
]

#: The hours of EdgeBench's leaderboard.
DEFAULT_HOURS: tuple[float, ...] = (2, 4, 6, 8, 10, 12)
#: The ``category`` of a cell over every task.
OVERALL = "overall"


@dataclass(frozen=True)
class TaskValue:
    """One task's value at one hour in one group: ``group`` (a tuple of the grouping values, e.g.
    ``("Claude Opus 4.8",)``), ``task``, ``category`` (``None`` when unknown), ``hours``, ``value``
    (0–100, ``None`` = missing), ``run`` (the run or table row it came from; repeats differ here)."""

    group: tuple
    task: str
    category: Optional[str]
    hours: float
    value: Optional[float]
    run: str = ""
    variant: Optional[str] = None  # the run's task variant (edgetui.replay.analysis.task_variants; None: unknown)


@dataclass(frozen=True)
class LeaderCell:
    """One aggregate: ``group``, ``category`` (:data:`OVERALL` or a category), ``hours``, ``score``
    (mean 0–100, unrounded; ``None`` when no task has a value), ``n_tasks`` (tasks with a value),
    ``n_runs`` (runs behind them, repeats counted), ``mixed_variants``: the tasks whose runs in
    the cell ran different task variants (:func:`edgetui.replay.analysis.task_variants.mixed_tasks`)."""

    group: tuple
    category: str
    hours: float
    score: Optional[float]
    n_tasks: int
    n_runs: int
    mixed_variants: tuple = ()


def aggregate(values: Iterable[TaskValue], categories: bool = True) -> list[LeaderCell]:
    """The leaderboard cells of ``values`` (see the module docstring), sorted by group, category
    (overall first) and hours. ``categories=False``: overall cells only."""
    reps: dict[tuple, list[float]] = defaultdict(list)
    cat_of: dict[tuple, Optional[str]] = {}
    keys: set[tuple] = set()
    variants: dict[tuple, list[tuple[str, Optional[str]]]] = defaultdict(list)  # (group, hours) -> (task, variant)
    for v in values:
        k = (v.group, v.task, v.hours)
        keys.add((v.group, v.hours))
        if v.value is not None and math.isfinite(v.value):
            variants[(v.group, v.hours)].append((v.task, v.variant))
        cat_of[(v.group, v.task)] = v.category if v.category is not None else cat_of.get((v.group, v.task))
        if v.value is not None and math.isfinite(v.value):
            reps[k].append(float(v.value))
    per_task: dict[tuple, list[tuple[str, float, int]]] = defaultdict(list)  # (group, hours) -> tasks
    for (g, task, h), xs in reps.items():
        per_task[(g, h)].append((task, sum(xs) / len(xs), len(xs)))
    out: list[LeaderCell] = []
    for g, h in keys:
        tasks = per_task.get((g, h), [])
        buckets: dict[str, list[tuple[float, int]]] = {OVERALL: [(v, n) for _, v, n in tasks]}
        if categories:
            for task, mean, n in tasks:
                c = cat_of.get((g, task))
                if c:
                    buckets.setdefault(c, []).append((mean, n))
        mixed = mixed_tasks(variants.get((g, h), []))
        for c, cells in buckets.items():
            score = sum(v for v, _ in cells) / len(cells) if cells else None
            mix = tuple(t for t in mixed if c == OVERALL or cat_of.get((g, t)) == c)
            out.append(LeaderCell(g, c, h, score, len(cells), sum(n for _, n in cells), mix))
    out.sort(key=lambda c: (tuple(str(x) for x in c.group), c.category != OVERALL, c.category, c.hours))
    return out


#: Columns of a per-task table that are not grouping columns.
_TABLE_FIXED = ("task", "category", "hours", "score", "run")


def read_task_table(path: Path, hours: Optional[Sequence[float]] = None) -> tuple[list[str], list[TaskValue]]:
    """Read a per-task table (CSV with ``task``, ``hours``, ``score`` and optional ``category``,
    ``run``; every other column is a grouping column, e.g. ``model``, ``suite``). An empty
    ``score`` is a missing value. Returns ``(grouping column names, values)``; ``hours`` keeps only
    those hours. Raises ``ValueError`` naming the file and line of a bad row or a missing column."""
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.DictReader(f)
        cols = rd.fieldnames or []
        missing = [c for c in ("task", "hours", "score") if c not in cols]
        if missing:
            raise ValueError(f"{path}: line 1: missing column(s) {', '.join(missing)} (have: {', '.join(cols)})")
        group_cols = [c for c in cols if c not in _TABLE_FIXED]
        out: list[TaskValue] = []
        keep = None if hours is None else {float(h) for h in hours}
        for i, r in enumerate(rd, start=2):
            try:
                h = float(r["hours"])
                s = r["score"].strip() if r["score"] is not None else ""
                val = float(s) if s else None
            except (TypeError, ValueError, AttributeError):
                raise ValueError(
                    f"{path}: line {i}: hours {r.get('hours')!r} / score {r.get('score')!r} are not numbers"
                ) from None
            if keep is not None and h not in keep:
                continue
            out.append(
                TaskValue(
                    tuple(r[c] for c in group_cols),
                    r["task"],
                    r.get("category") or None,
                    h,
                    val,
                    r.get("run") or f"line {i}",
                )
            )
    return group_cols, out


def recorded_values(
    curves,
    hours: Sequence[float],
    group_by: str = "model",
    *,
    include_retry: bool = False,
    include_infra: bool = False,
    include_samples: bool = False,
) -> list[TaskValue]:
    """Per-task values of recorded runs (:class:`edgetui.replay.analysis.score_at.RunCurve`) at ``hours``.

    ``group_by``: ``model`` (the run's model, from ``run_config.json`` / ``final_result.json``),
    ``run_group`` (SForge's ``run_group_key`` of the run id) or ``run_id``. ``-retry`` runs,
    infra-error runs and sample runs are left out unless asked. A run's cell without a value
    (:class:`~edgetui.replay.analysis.score_at.Cell` ``not_yet`` / ``no_valid``) is a missing value.
    """

    out: list[TaskValue] = []
    for c in curves:
        if (
            (c.retry and not include_retry)
            or (c.is_sample and not include_samples)
            or (c.infra_error and not include_infra)
        ):
            continue
        if group_by == "model":
            g = (c.model or "(unknown model)",)
        elif group_by == "run_group":
            g = (run_group_key(c.run_id),)
        elif group_by == "run_id":
            g = (c.run_id,)
        else:
            raise ValueError(f"group by {group_by!r}: use model, run_group or run_id")
        for h in hours:
            cell = c.cell(h, include_infra=include_infra)
            out.append(TaskValue(g, c.task_id, c.category, float(h), cell.value, c.run_key, c.variant))
    return out


#: why a recorded run is left out, in the order a run with several reasons is counted under, with
#: the option that counts it
LEFT_OUT_REASONS = (
    ("is_sample", "sample", "--include-samples"),
    ("infra_error", "infra-error", "--include-infra"),
    ("retry", "-retry", "--include-retry"),
)


def left_out(
    curves, *, include_retry: bool = False, include_infra: bool = False, include_samples: bool = False
) -> dict[str, int]:
    """How many of ``curves`` (recorded runs) the selection leaves out, by reason (``sample``,
    ``infra-error``, ``-retry``; a run counted once, under its first reason of
    :data:`LEFT_OUT_REASONS`); reasons with none are absent."""
    asked = {"is_sample": include_samples, "infra_error": include_infra, "retry": include_retry}
    out: dict[str, int] = {}
    for c in curves:
        for attr, word, _ in LEFT_OUT_REASONS:
            if getattr(c, attr, False) and not asked[attr]:
                out[word] = out.get(word, 0) + 1
                break
    return out


def left_out_note(counts: dict[str, int], options: bool = True) -> str:
    """One line saying how many runs were left out and why: ``left out: 3 infra-error runs
    (--include-infra), 8 sample runs (--include-samples)``; empty when none were (``options``:
    name the option that counts each)."""
    parts = []
    for _, word, option in LEFT_OUT_REASONS:
        n = counts.get(word, 0)
        if n:
            parts.append(f"{n} {word} run{'s' if n != 1 else ''}" + (f" ({option})" if options else ""))
    return ("left out: " + ", ".join(parts)) if parts else ""
