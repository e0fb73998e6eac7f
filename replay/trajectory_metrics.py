"""A run's trajectory metrics, as SForge defines them (EdgeBench pull request #9, open:
``sforge/harness/trajectory_metrics.py`` ``compute_trajectory_metrics``, served as
``trajectory_metrics`` in the judge's ``/history``). Same names, same rules, so the numbers agree
with SForge's if it merges; reimplemented here (no runtime dependency on sforge). Reference:
docs/sforge-formats.md, "Trajectory metrics".

Input: judge-history-shaped entries (:func:`entries_of_rounds` builds them from a run's
submission rows). Counted: entries with ``type == "submission"`` and ``status == "completed"`` and
``valid`` not false (games, auto/agent alike, errors and invalid reports left out). The value is
the raw ``score`` when any counted entry has a finite one (then ``direction`` is the task's),
else the ``pass_rate`` (``maximize``); entries without a finite value are dropped. Points are
ordered by ``submitted_at`` when every point has one, else kept in their given order. A point
*improves* when strictly better than the best before it (the first point never does);
``non_improving_submissions`` = count − improving − 1. Times are seconds from the earliest
``submitted_at`` among the points to the first improvement / to the (first) best; None without
times. Differences that are not finite become None (the result stays strict JSON).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Iterable, Optional, Sequence, cast

__all__ = ["FIELDS", "trajectory_metrics", "entries_of_rounds"]

#: the keys of the result, in SForge's order
FIELDS = (
    "value_field",
    "direction",
    "submission_count",
    "initial_value",
    "final_value",
    "best_value",
    "total_improvement",
    "improving_submissions",
    "non_improving_submissions",
    "first_improvement_seconds",
    "time_to_best_seconds",
)


def _finite(v: Any) -> Optional[float]:
    if isinstance(v, bool):
        v = float(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _difference(a: float, b: float) -> Optional[float]:
    d = a - b
    return round(d, 12) if math.isfinite(d) else None


def trajectory_metrics(entries: Sequence[Mapping[str, Any]], score_direction: str = "maximize") -> dict[str, Any]:
    """The trajectory metrics of ``entries`` (history entries in creation order); keys :data:`FIELDS`."""
    counted = [
        e for e in entries if e.get("type") == "submission" and e.get("status") == "completed" and e.get("valid", True)
    ]
    by_score = any(_finite(e.get("score")) is not None for e in counted)
    field = "score" if by_score else "pass_rate"
    direction = score_direction if by_score else "maximize"
    points = [(v, _finite(e.get("submitted_at"))) for e in counted if (v := _finite(e.get(field))) is not None]
    if points and all(t is not None for _, t in points):
        # (stable: equal times keep their order; every time is a float, checked just above)
        points.sort(key=lambda p: cast(float, p[1]))
    if not points:
        return dict(
            zip(FIELDS, (field, direction, 0, None, None, None, 0.0, 0, 0, None, None)),
        )

    def better(v: float, best: float) -> bool:
        return v < best if direction == "minimize" else v > best

    initial = best = points[0][0]
    best_i, first_i, improving = 0, None, 0
    for i, (v, _) in enumerate(points[1:], start=1):
        if better(v, best):
            best, best_i, improving = v, i, improving + 1
            first_i = i if first_i is None else first_i
    times = [t for _, t in points if t is not None]
    t0 = min(times) if times else None

    def since_start(i: Optional[int]) -> Optional[float]:
        t = None if i is None else points[i][1]
        if t is None or t0 is None:
            return None
        d = t - t0
        return max(d, 0.0) if math.isfinite(d) else None

    return dict(
        zip(
            FIELDS,
            (
                field,
                direction,
                len(points),
                initial,
                points[-1][0],
                best,
                _difference(initial, best) if direction == "minimize" else _difference(best, initial),
                improving,
                len(points) - improving - 1,
                since_start(first_i),
                since_start(best_i),
            ),
        )
    )


def entries_of_rounds(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """History entries of a run's rounds (``submissions`` rows or
    :class:`edgetui.records.SubmissionRecord` objects), in the order given, as SForge's judge after
    1.1.0 holds them: a graded report ``completed`` with its ``valid``, ``pass_rate``, ``score``,
    ``submitted_at``; a round without a readable report ``error`` (the newer judge's failed
    evaluation); a game ``type: "game"``; manual rounds and rounds in flight left out."""
    out = []
    for r in rows:
        g = r.get if isinstance(r, Mapping) else (lambda k, r=r: getattr(r, k, None))
        kind, status = g("kind"), g("status")
        if kind == "manual" or status == "in_flight":
            continue
        e: dict[str, Any] = {
            "type": "game" if kind == "game" else "submission",
            "status": "completed" if status == "graded" else "error",
            "round": g("round"),
            "pass_rate": g("pass_rate"),
            "score": g("score"),
            "submitted_at": g("submitted_at"),
        }
        if g("valid") is not None:
            e["valid"] = bool(g("valid"))
        out.append(e)
    return out
