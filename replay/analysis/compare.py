"""Two or more runs (or run groups) side by side, aligned by elapsed time on one score axis.

* :func:`group_curve`: runs merged as one curve (SForge's run group: ``-<machine>-<timestamp>``
  siblings share one :func:`~edgetui.replay.analysis.score_at.run_group_key`): at each elapsed time the
  mean over tasks of the runs' values (repeats first), as the leaderboard does;
* :func:`values_at`: every curve's best-so-far at one elapsed time (stepping them together);
* :func:`parting_point`: the first elapsed time at which their best-so-far values differ (a curve
  without a value yet counts as "no value", which differs from any value).

Times are seconds since each run's own start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

__all__ = ["Series", "series_of_run", "group_series", "values_at", "parting_point"]


@dataclass
class Series:
    """A named step curve: ``steps`` ``(elapsed_s, value or None)`` in time order (the value holds
    from that time on); ``end_s``: where it stops (``None``: open)."""

    name: str
    steps: list[tuple[float, Optional[float]]] = field(default_factory=list)
    end_s: Optional[float] = None
    runs: list[str] = field(default_factory=list)

    def at(self, e: float) -> Optional[float]:
        v = None
        for t, x in self.steps:
            if t > e:
                break
            v = x
        return v


def series_of_run(curve) -> Series:
    """The :class:`Series` of one :class:`~edgetui.replay.analysis.score_at.RunCurve` (its new bests)."""
    end = curve.end_elapsed_s if curve.end_elapsed_s is not None else curve.now_elapsed_s
    return Series(curve.run_key, [(t, v) for t, v, _ in curve.steps], end, [curve.run_key])


def group_series(name: str, curves: Sequence[Any]) -> Series:
    """Runs merged as one :class:`Series`: at each step time of any of them, the mean over tasks
    (repeats first) of their values (a run's last best carries after its end); times without any
    value are ``None``."""
    runs = [series_of_run(c) for c in curves]
    times = sorted({t for s in runs for t, _ in s.steps})
    tasks: dict[str, list[int]] = {}
    for i, c in enumerate(curves):
        tasks.setdefault(c.task_id, []).append(i)
    out: list[tuple[float, Optional[float]]] = []
    for t in times:
        per_task = []
        for idx in tasks.values():
            xs = [x for x in (runs[i].at(t) for i in idx) if x is not None]
            if xs:
                per_task.append(sum(xs) / len(xs))
        v = sum(per_task) / len(per_task) if per_task else None
        if not out or out[-1][1] != v:
            out.append((t, v))
    ends = [s.end_s for s in runs if s.end_s is not None]
    return Series(name, out, max(ends) if ends else None, [c.run_key for c in curves])


def values_at(series: Sequence[Series], e: float) -> list[Optional[float]]:
    """Each series' best-so-far at elapsed ``e`` seconds."""
    return [s.at(e) for s in series]


def _same(a: Optional[float], b: Optional[float]) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def parting_point(series: Sequence[Series]) -> Optional[tuple[float, list[Optional[float]]]]:
    """``(elapsed_s, values there)`` of the first time the series' best-so-far values differ, or
    ``None`` when they never do (up to the shortest series' end)."""
    if len(series) < 2:
        return None
    times = sorted({t for s in series for t, _ in s.steps})
    ends = [s.end_s for s in series if s.end_s is not None]
    limit = min(ends) if len(ends) == len(series) else math.inf
    for t in times:
        if t > limit:
            break
        vals = values_at(series, t)
        if not all(_same(vals[0], v) for v in vals[1:]):
            return t, vals
    return None
