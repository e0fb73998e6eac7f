"""Transcript format detection and parser factory.

:func:`detect_format` looks at the first bytes of a transcript (about 64 KiB is
plenty) and names its format; :func:`parser_for` builds the matching
:class:`~edgetui.parsers.base.LineParser`.

Rules (docs/transcript-formats.md §1; SForge's own detection is narrower):

* Lines are scanned in order; non-JSON noise lines (shell warnings, Node
  warnings, blank lines) are skipped.
* A line ``OpenAI Codex v...`` or ``Reading additional input from stdin...``
  before any JSON object → ``codex_text``.
* The first JSON objects decide: ``thread.*`` / ``session.created`` / ``turn.*`` /
  ``item.*`` types, ``{"id", "msg": {"type"}}`` protocol events and their config summary
  line → ``codex_json``; ``session_meta`` / ``response_item`` / ``event_msg`` /
  ``turn_context`` / ``compacted`` with a ``payload`` → ``codex_rollout``;
  ``sessionID`` + ``part`` → ``opencode``; Claude session files (top-level
  ``sessionId`` / ``parentUuid``, types ``summary``, ``file-history-snapshot``,
  ``queue-operation``, ``progress``...) → ``claude_session``; Claude stream-json
  (``type`` system/assistant/user/result... with ``session_id``) → ``claude_stream``.
* A first line cut by the 64 KiB window is sniffed by its leading keys.
* Nothing recognisable → ``unknown`` (the file name is a last hint:
  ``rollout-*.jsonl`` → ``codex_rollout``).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from edgetui.error_log import note_swallowed
from edgetui.control_chars import strip_sequences
from edgetui.parsers.base import BOM, loads_lenient

from edgetui.parsers.codex import CodexTextParser
from edgetui.parsers.codex import CodexJsonParser
from edgetui.parsers.codex import CodexRolloutParser
from edgetui.parsers.opencode import OpenCodeParser
from edgetui.parsers.claude import ClaudeStreamParser
from edgetui.parsers.claude_session import ClaudeSessionParser

from edgetui.parsers.claude_session import detect_claude_format

__all__ = ["FORMATS", "detect_format", "parser_for"]

FORMATS = ("claude_stream", "claude_session", "codex_text", "codex_json", "codex_rollout", "opencode")

HEAD_BYTES = 64 * 1024
_MAX_JSON_OBJECTS = 50

_CODEX_HEADER_RE = re.compile(r"^(?:\[[^\]]*\]\s*)?OpenAI Codex v\S+")
_STDIN_NOTICE = "Reading additional input from stdin"
#: ``codex exec --json`` record types; ``session.created`` led the item_type dialect (it carries a
#: ``session_id`` key, so it must be named before the Claude stream rule sees that key)
_CODEX_JSON_TYPES = {
    "thread.started",
    "session.created",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.started",
    "item.updated",
    "item.completed",
}
_CODEX_CONFIG_KEYS = frozenset({"workdir", "model", "approval", "sandbox"})
_ROLLOUT_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_OPENCODE_TYPES = {"step_start", "step_finish", "text", "tool_use", "reasoning", "error"}
_CLAUDE_SESSION_TYPES = {
    "summary",
    "file-history-snapshot",
    "queue-operation",
    "progress",
    "custom-title",
    "last-prompt",
    "attachment",
    "agent-name",
    "tag",
}
_CLAUDE_STREAM_TYPES = {
    "system",
    "assistant",
    "user",
    "result",
    "stream_event",
    "rate_limit_event",
    "tool_progress",
    "auth_status",
    "control_request",
    "control_response",
}
_TYPE_SNIFF_RE = re.compile(rb'"type"\s*:\s*"([^"]{1,40})"')


def _classify(obj: dict[str, Any]) -> Optional[str]:
    """Format named by one JSON object, or ``None`` when it says nothing decisive."""
    typ = obj.get("type")
    if typ in _CODEX_JSON_TYPES:
        return "codex_json"
    if typ in _ROLLOUT_TYPES and "payload" in obj:
        return "codex_rollout"
    if typ is None and "id" in obj and "timestamp" in obj and ("instructions" in obj or "git" in obj):
        return "codex_rollout"  # first line of an early (2025) rollout
    if "record_type" in obj and typ is None:
        return "codex_rollout"
    if "sessionID" in obj and ("part" in obj or typ in _OPENCODE_TYPES):
        return "opencode"
    if isinstance(obj.get("msg"), dict) and "id" in obj and "type" in obj["msg"]:
        return "codex_json"  # early `codex exec --json` ({"id", "msg": {...}})
    if typ is None and _CODEX_CONFIG_KEYS <= obj.keys():
        return "codex_json"  # its first line: the config summary
    if "sessionId" in obj or "parentUuid" in obj or typ in _CLAUDE_SESSION_TYPES:
        return "claude_session"
    if "session_id" in obj and isinstance(typ, str):  # system/assistant/user/result/hook/rate-limit events
        return "claude_stream"
    if typ in ("assistant", "user") and isinstance(obj.get("message"), dict):
        return "claude_stream" if "uuid" not in obj else "claude_session"
    if typ == "error" and "sessionID" in obj:
        return "opencode"
    return None


def _sniff_truncated(line: bytes) -> Optional[str]:
    """Guess the format of a JSON line cut by the head window from its first keys."""
    head = line[:4096]
    if b'"sessionID"' in head and b'"part"' in head:
        return "opencode"
    m = _TYPE_SNIFF_RE.search(head)
    typ = m.group(1).decode("utf-8", "replace") if m else None
    if typ in _CODEX_JSON_TYPES:
        return "codex_json"
    if typ in _ROLLOUT_TYPES and b'"payload"' in head:
        return "codex_rollout"
    if b'"sessionID"' in head:
        return "opencode"
    if b'"sessionId"' in head or b'"parentUuid"' in head or typ in _CLAUDE_SESSION_TYPES:
        return "claude_session"
    if b'"session_id"' in head and typ in _CLAUDE_STREAM_TYPES:
        return "claude_stream"
    return None


def _claude_refine(head: bytes, guess: str) -> str:
    """Let the Claude parser's own detector decide between its two formats."""
    try:
        res = detect_claude_format(head)
    except Exception:  # noqa: BLE001 - detection must not raise
        note_swallowed("detection must not raise")
        return guess
    return res if res in ("claude_stream", "claude_session") else guess


def detect_format(head: bytes, name: str = "") -> str:
    """Name the transcript format of ``head`` (the first ~64 KiB of a file).

    Returns one of :data:`FORMATS` or ``"unknown"``; ``name`` (file name or
    path) is only a last hint.
    """
    if not isinstance(head, (bytes, bytearray, memoryview)):
        return "unknown"
    head = bytes(head[:HEAD_BYTES])
    if head.startswith(BOM):
        head = head[len(BOM) :]
    lines = head.split(b"\n")
    complete = len(lines) - 1  # the last piece has no newline: maybe cut by the window
    seen_json = 0
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s:
            continue
        if s[:1] == b"{":
            try:
                obj = loads_lenient(s)
            except (ValueError, UnicodeDecodeError):
                if i >= complete or len(s) > 4096:
                    guess = _sniff_truncated(s)
                    if guess:
                        return _claude_refine(head, guess) if guess.startswith("claude") else guess
                continue
            if not isinstance(obj, dict):
                continue
            seen_json += 1
            fmt = _classify(obj)
            if fmt is not None:
                return _claude_refine(head, fmt) if fmt.startswith("claude") else fmt
            if seen_json >= _MAX_JSON_OBJECTS:
                break
            continue
        if seen_json:
            continue
        text = s.decode("utf-8", "replace")
        text = strip_sequences(text)
        if _CODEX_HEADER_RE.match(text) or text.startswith(_STDIN_NOTICE):
            return "codex_text"
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    if base.startswith("rollout-") and base.endswith(".jsonl"):
        return "codex_rollout"
    return "unknown"


def parser_for(fmt: str, source: str, generation: str, state: Optional[dict[str, Any]] = None):
    """A fresh (or resumed, with ``state``) LineParser for format ``fmt``.

    Raises ``ValueError`` for ``unknown`` or an unsupported name.
    """
    if fmt == "codex_text":
        return CodexTextParser(source, generation, state)
    if fmt == "codex_json":
        return CodexJsonParser(source, generation, state)
    if fmt == "codex_rollout":
        return CodexRolloutParser(source, generation, state)
    if fmt == "opencode":
        return OpenCodeParser(source, generation, state)
    if fmt == "claude_stream":
        return ClaudeStreamParser(source, generation, state)
    if fmt == "claude_session":
        return ClaudeSessionParser(source, generation, state)
    raise ValueError(f"no parser for transcript format {fmt!r}")
