"""Which events are transcript metadata: the rows the event list folds by default.

Claude Code session files write bookkeeping records between the turns —
``permission-mode`` and ``mode`` each time the mode is re-announced, ``progress``
records (hook progress, bash progress), ``file-history-snapshot``,
``queue-operation``, ``last-prompt``, titles — dozens of them between two
messages (anthropics/claude-code#69013: 78 of 92 rows). Other viewers of agent
transcripts hide such event types by default; the replay and live run screens
fold each consecutive run of them into one "N folded" row (a key shows them).
Folding is a view: the events stay in the database as recorded.

An event is metadata when it comes from a Claude transcript (``agent_format``
``claude_stream`` / ``claude_session``; a timeline without that column: any),
its ``kind`` is ``system`` and its summary starts with one of
:data:`METADATA_HEADS` (followed by the end, a space or a colon): the
Claude parser (:mod:`edgetui.parsers.claude`) writes a record it has no mapping
for as ``system`` with the record's ``type`` as the summary's first word
(``progress`` records as ``progress <data.type> [hookName]``), and stream-json
hook records as ``hook_started NAME`` / ``hook_response NAME exit N OUTCOME``.
Never metadata: an event with ``is_error`` or a ``warning`` / ``error`` level, a
hook response whose exit code is not 0, or any other kind (a subagent's
``agent_progress`` holding a message is not a ``system`` event: the parser expands
it into the subagent's messages).
"""

from __future__ import annotations

from itertools import islice
from typing import Any, Optional, Sequence

__all__ = ["METADATA_HEADS", "fold_head", "is_metadata", "metadata_mask"]

#: First words of the summaries of metadata events (Claude session-file record types and
#: stream-json hook / bookkeeping records, as the Claude parser summarises them).
METADATA_HEADS: frozenset[str] = frozenset(
    (
        "permission-mode",
        "mode",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "last-prompt",
        "custom-title",
        "ai-title",
        "agent-name",
        "pr-link",
        "hook_started",
        "hook_response",
        "system/thinking_tokens",
    )
)

_QUIET_LEVELS = (None, "", "info", "debug")
#: the transcript formats whose bookkeeping records are folded (the Claude parser's)
CLAUDE_FORMATS = frozenset(("claude_stream", "claude_session"))


def fold_head(summary: str) -> str:
    """A summary's first word (up to a space or a colon): the record type of a metadata event."""
    end = len(summary)
    for sep in (" ", ":"):
        k = summary.find(sep)
        if 0 <= k < end:
            end = k
    return summary[:end]


def is_metadata(
    kind: Optional[str], summary: Optional[str], level: Optional[str] = None, is_error: Optional[bool] = None
) -> bool:
    """Is this event transcript metadata (module docstring)? Pure; never raises."""
    if kind != "system" or not summary or is_error or level not in _QUIET_LEVELS:
        return False
    head = fold_head(summary)
    if head not in METADATA_HEADS:
        return False
    if head == "hook_response":  # "hook_response NAME exit N OUTCOME": a failed hook is shown
        k = summary.rfind(" exit ")
        code = summary[k + 6 :].split(" ", 1)[0] if k >= 0 else ""
        return code in ("0", "None", "")
    return True


def metadata_mask(events: Any, start: int = 0) -> list[bool]:
    """One flag per event of a timeline (parallel columns ``kind``, ``summary``, optional ``level``,
    ``is_error`` and ``agent_format``, e.g. :class:`edgetui.store.queries.EventColumns`) from index
    ``start`` on: ``True`` for metadata."""
    kind: Sequence[Optional[str]] = events.kind
    n = len(kind)
    summary: Sequence[Optional[str]] = getattr(events, "summary", None) or [None] * n
    level: Sequence[Optional[str]] = getattr(events, "level", None) or [None] * n
    err: Sequence[Optional[bool]] = getattr(events, "is_error", None) or [None] * n
    fmts = getattr(events, "agent_format", None)
    # a timeline without formats (synthetic): every system event may be metadata
    fmt: Sequence[Optional[str]] = fmts if fmts else ["claude_stream"] * n
    cols = (
        zip(kind, summary, level, err, fmt)
        if not start
        else zip(*(islice(c, start, None) for c in (kind, summary, level, err, fmt)))
    )
    by_summary: dict[Optional[str], bool] = {}  # metadata summaries repeat: classify each text once

    def meta(s: Optional[str]) -> bool:
        m = by_summary.get(s)
        if m is None:
            m = by_summary[s] = is_metadata("system", s)
        return m

    return [
        k == "system" and f in CLAUDE_FORMATS and not e and lv in _QUIET_LEVELS and meta(s) for k, s, lv, e, f in cols
    ]
