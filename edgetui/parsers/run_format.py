"""Which SForge format a run used: ``runs.format``, computed by :func:`run_format` alone.

Values (docs/sforge-formats.md, "Format versions"):

* ``"1.1.0"``: the layout of SForge 1.1.0 on PyPI, and of any run showing nothing of a later one
  (most files did not change after 1.1.0, so a run that never met a changed path reads as 1.1.0);
* ``"next"``: the repository after 1.1.0 (not released yet), recognised by a sign that 1.1.0
  never writes (:data:`SIGNS`);
* None: not an SForge run folder (a bare transcript).

The signs are (name, test) pairs over a :class:`FormatEvidence`; a reader that learns a new one
(another file, the judge's answers, a backend) adds a field to :class:`FormatEvidence` and a pair
to :data:`SIGNS`. Core: no Textual, no I/O (the caller reads the files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["FORMAT_1_1_0", "FORMAT_NEXT", "FormatEvidence", "SIGNS", "run_format", "format_signs"]

FORMAT_1_1_0 = "1.1.0"
FORMAT_NEXT = "next"


@dataclass
class FormatEvidence:
    """What a run's files say that tells the formats apart. ``sforge_run``: an SForge run folder
    (not a bare transcript); ``history``: ``run_history.json`` as parsed (None when absent or
    unreadable); ``backend``: the container backend when known (``docker``, ``k8s``, ``e2b``, …)."""

    sforge_run: bool = True
    history: Optional[dict[str, Any]] = None
    backend: Optional[str] = None
    extra: dict[str, Any] = field(default_factory=dict)


def _history_entries(ev: FormatEvidence) -> list:
    h = ev.history if isinstance(ev.history, dict) else {}
    es = h.get("entries")
    return [e for e in es if isinstance(e, dict)] if isinstance(es, list) else []


#: (sign, test): each sign that a run used the format after 1.1.0
SIGNS: list[tuple[str, Callable[[FormatEvidence], bool]]] = [
    # a failed evaluation ends as status "error" (1.1.0: "completed" with an error key; §14.3)
    ("history entry with status error", lambda ev: any(e.get("status") == "error" for e in _history_entries(ev))),
    # the judge's /history carries trajectory metrics (EdgeBench pull request #9)
    ("history with trajectory_metrics", lambda ev: isinstance((ev.history or {}).get("trajectory_metrics"), dict)),
]


def format_signs(ev: FormatEvidence) -> list[str]:
    """The names of the :data:`SIGNS` of a later format that ``ev`` shows."""
    return [name for name, test in SIGNS if test(ev)]


def run_format(ev: FormatEvidence) -> Optional[str]:
    """The SForge format of a run (module docstring): ``"next"``, ``"1.1.0"`` or None."""
    if not ev.sforge_run:
        return None
    return FORMAT_NEXT if format_signs(ev) else FORMAT_1_1_0
