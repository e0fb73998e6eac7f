"""Invalid rounds: a graded round whose report says it is not a measurement.

SForge's repository after 1.1.0 makes the rule explicit (docs/sforge-formats.md, "Invalid
rounds"): a ``report.json`` with ``valid: false``, or one that is missing or cannot be read, is an
*invalid round*, "not a zero score". Its visualizer scanner leaves such a report out when it builds
a run's curve. edgetui applies the rule to every run, 1.1.0 ones included: an invalid round is
shown (a grey tick and its reason) but is never a point of the drawn best-so-far curve nor an input
to fits, forecasts, moments, the leaderboard or score-at-h. A run's *best* stays what SForge's own
selection reports (:mod:`edgetui.replay.selection`); when that round is invalid the run says so.

Rows are ``submissions`` rows or :class:`edgetui.records.SubmissionRecord` objects (mappings or
attribute holders): ``status`` (``graded`` / ``failed_grading`` / ``bad_report`` / ``in_flight``),
``valid`` (None = not stated = valid), ``error``.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["INVALID_STATUSES", "invalid_reason", "is_invalid"]

#: submission statuses that are invalid rounds whatever the report says: no ``report.json``
#: (grading raised) and a ``report.json`` that cannot be read
INVALID_STATUSES = ("failed_grading", "bad_report")


def _get(row: Any, key: str) -> Any:
    get = getattr(row, "get", None)  # (a mapping; duck-typed: cheaper than an isinstance check)
    return get(key) if get is not None else getattr(row, key, None)


def invalid_reason(row: Any) -> Optional[str]:
    """Why ``row`` is an invalid round, in a few words, or None when it is not one (a valid or
    unstated report, a game, a round still in flight)."""
    status = _get(row, "status")
    if status == "failed_grading":
        err = _get(row, "error")
        return f"no report.json ({err})" if err and err != "no report.json" else "no report.json"
    if status == "bad_report":
        err = _get(row, "error")
        return f"report.json unreadable ({err})" if err else "report.json unreadable"
    if status == "graded" and _get(row, "valid") is False and _get(row, "kind") != "game":
        return "report valid: false"
    return None


def is_invalid(row: Any) -> bool:
    """Is ``row`` an invalid round (:func:`invalid_reason` gives a reason)?"""
    return invalid_reason(row) is not None
