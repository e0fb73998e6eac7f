"""Time bases of a run's curve: wall clock, or *active* time that leaves out the agent's waits.

``active`` elapsed = wall elapsed minus the time inside any of these intervals (merged), computed
from named records:

* **grading**: each agent submission from its grading start (``t``, ``report.json``
  ``submitted_at``) for its grading runtime (``runtime_s``, ``runtime_seconds``): ``sforge-submit``
  waits for the result ("Waiting for test results..."). Auto-eval rounds run beside the agent and
  are not waits.
* **cooldown waits**: each ``tool_result`` event of a ``sforge-submit`` rejected for its cooldown
  (summary ``rejected (cooldown)``, with ``wait Ns``), from the rejection for N seconds.

All values in seconds since the run's start.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Iterable, Mapping, Optional, Sequence

__all__ = ["BASES", "COOLDOWN_SQL", "wait_intervals", "ActiveClock"]

BASES = ("wall_clock", "active")

#: the events that name a cooldown rejection (``edgetui.parsers.claude`` summarises sforge-submit results)
COOLDOWN_SQL = (
    "SELECT run_key, t, summary FROM events WHERE kind = 'tool_result' AND summary LIKE '%rejected (cooldown)%'"
)
_WAIT_RE = re.compile(r"wait (\d+(?:\.\d+)?)\s*s", re.I)


def wait_intervals(
    subs: Iterable[Mapping[str, Any]], cooldowns: Iterable[Mapping[str, Any]], started_at: Optional[float]
) -> list[tuple[float, float]]:
    """Merged ``(from, to)`` intervals (seconds since start) of grading waits and cooldown waits."""
    if started_at is None:
        return []
    iv = []
    for s in subs:
        if s.get("kind") not in ("agent", "legacy"):
            continue
        # the grading starts when the round was sent (submissions.t is when its result was known)
        t, rt = (s.get("submitted_at") if s.get("submitted_at") is not None else s.get("t")), s.get("runtime_s")
        if t is None or rt is None or rt <= 0:
            continue
        iv.append((t - started_at, t - started_at + float(rt)))
    for e in cooldowns:
        m = _WAIT_RE.search(e.get("summary") or "")
        if e.get("t") is None or not m:
            continue
        a = e["t"] - started_at
        iv.append((a, a + float(m.group(1))))
    iv.sort()
    merged: list[tuple[float, float]] = []
    for a, b in iv:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


class ActiveClock:
    """Wall elapsed → active elapsed for one run's merged wait intervals (seconds)."""

    def __init__(self, intervals: Sequence[tuple[float, float]]):
        self.starts = [a for a, _ in intervals]
        self.iv = list(intervals)
        self.cum = [0.0]
        for a, b in intervals:
            self.cum.append(self.cum[-1] + (b - a))

    @property
    def excluded_s(self) -> float:
        return self.cum[-1]

    def __call__(self, e: Optional[float]) -> Optional[float]:
        if e is None:
            return None
        i = bisect.bisect_right(self.starts, e)  # intervals starting at or before e
        if i == 0:
            return e
        a, b = self.iv[i - 1]
        return e - self.cum[i - 1] - (min(e, b) - a)
