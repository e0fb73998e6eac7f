"""Claude Code's session files (``~/.claude/projects/<dir>/<session>.jsonl``: the records the
CLI keeps for ``--resume``, a dialect of the stream-json records), and telling the two formats
apart from a file's first lines (:func:`detect_claude_format`). The record handling shared with
stream-json is :class:`edgetui.parsers.claude.ClaudeParser`."""

from __future__ import annotations

import re
from typing import Any, Optional

import orjson

from edgetui.events import Event
from edgetui.parsers.claude import K_SESSION_INIT, K_SYSTEM, ClaudeStreamParser, ClaudeParser
from edgetui.parsers.claude_content import as_text, summ, parse_timestamp
from edgetui.parsers.base import END_OF_FILE_SUB
from edgetui.parsers.json_fields import dict_at
from edgetui.parsers.claude import K_SEGMENT_END


class ClaudeSessionParser(ClaudeParser):
    """Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

    Besides the shared mapping: the first record carrying a ``sessionId`` and
    the envelope (``version`` / ``cwd``; not ``queue-operation``) emits a
    ``session_init`` (data: session_id, cwd, claude_code_version (= ``version``),
    gitBranch, entrypoint; model unknown at that point); a later change of
    ``sessionId`` starts a new segment (``segment_start`` + ``session_init``).
    ``progress`` records become ``system`` events (``tool_use_id`` =
    ``toolUseID``); an ``agent_progress`` record holding a subagent message is
    expanded like a top-level message with ``parent_tool_use_id`` =
    ``parentToolUseID``.
    """

    def _close_cut_segment(self) -> None:  # no result records in a session file: a new session cuts nothing
        return

    def finish(self) -> list[Event]:
        """A session file never has result records, so nothing is cut off; but a session whose only
        answer is API errors (``system`` / ``api_error`` records, synthetic API-error messages, and no
        text, thinking or tool call from the model) ends with a ``segment_end`` saying so
        (``data.reason`` ``api_errors_only``, ``sub`` = ``END_OF_FILE_SUB``): the run is flagged
        ``api-errors-only`` (docs/transcript-formats.md §4)."""
        if not self._api_errors or self._answered:
            return []
        out: list[Event] = []
        self._out = out
        self._t = None
        n = self._api_errors
        self._emit(
            K_SEGMENT_END,
            summ(f"session answered only with API errors ({n}); last: {self._last_api_error}"),
            is_error=True,
            level="error",
            data={"reason": "api_errors_only", "api_errors": n, "last_api_error": self._last_api_error},
        )
        for e in out:  # after the file's last line, never one of its own event ids
            e.sub = END_OF_FILE_SUB
        return list(out)

    agent_format = "claude_session"
    _hook_segments = False

    def _pre_record(self, o: dict[str, Any], typ: Any) -> None:
        sid = o.get("sessionId")
        if not isinstance(sid, str) or not sid or sid == self._session_id:
            return
        if "version" not in o and "cwd" not in o:
            return  # queue-operation & co.: wait for a record with the full envelope
        if self._session_id is not None:
            self._new_segment()
        self._session_id = sid
        self._seg_init = True
        self._seg_session = sid
        data = {
            "session_id": sid,
            "model": None,
            "cwd": o.get("cwd"),
            "tools": None,
            "claude_code_version": o.get("version"),
            "permissionMode": o.get("permissionMode"),
            "gitBranch": o.get("gitBranch"),
            "entrypoint": o.get("entrypoint"),
        }
        ver = f" {data['claude_code_version']}" if data["claude_code_version"] else ""
        s = f"session {sid} (Claude Code{ver}) cwd={data['cwd'] or '?'}"
        self._emit(K_SESSION_INIT, summ(s), data=data)

    def _parent(self, o: dict[str, Any]) -> Optional[str]:
        p = o.get("parent_tool_use_id")
        if p is not None:
            return as_text(p)
        if o.get("isSidechain") is True:
            if self._agent_calls:
                return self._agent_calls[-1]
            aid = o.get("agentId")
            return f"agent:{aid}" if aid else "sidechain"
        return None

    def _other(self, o: dict[str, Any], typ: Any) -> None:
        if typ == "progress":
            pdata = dict_at(o, "data")
            ptype = pdata.get("type")
            if ptype == "agent_progress":
                inner = pdata.get("message")
                if (
                    isinstance(inner, dict)
                    and inner.get("type") in ("assistant", "user")
                    and isinstance(inner.get("message"), dict)
                ):
                    parent = as_text(o.get("parentToolUseID")) or as_text(pdata.get("parentToolUseID")) or "sidechain"
                    rec = inner
                    if "timestamp" in inner:
                        t = parse_timestamp(inner.get("timestamp"))
                        if t is not None:
                            self._t = t
                    if inner.get("type") == "assistant":
                        self._assistant(rec, parent)
                    else:
                        self._user(rec, parent)
                    return
            s = f"progress {ptype or ''}"
            if isinstance(pdata, dict):
                hn = pdata.get("hookName")
                if hn:
                    s += f" {hn}"
            self._emit(K_SYSTEM, summ(s), tool_use_id=as_text(o.get("toolUseID")), data=o)
            return
        super()._other(o, typ)


FORMATS: dict[str, type[ClaudeParser]] = {
    "claude_stream": ClaudeStreamParser,
    "claude_session": ClaudeSessionParser,
}

# ----------------------------------------------------------------------------- detection

_SESSION_ONLY_TYPES = frozenset(
    ("summary", "file-history-snapshot", "progress", "queue-operation", "attachment", "last-prompt", "custom-title")
)
_STREAM_TYPES = frozenset(("system", "assistant", "user", "result", "rate_limit_event", "stream_event"))


def _classify(o: dict[str, Any]) -> Optional[str]:
    typ = o.get("type")
    if not isinstance(typ, str):
        return None
    if "sessionId" in o or "parentUuid" in o:
        return "claude_session"
    if typ == "summary" and "leafUuid" in o:
        return "claude_session"
    if "session_id" in o and typ in _STREAM_TYPES:
        return "claude_stream"
    if typ in _SESSION_ONLY_TYPES and ("messageId" in o or "snapshot" in o or "uuid" in o):
        return "claude_session"
    return None


def detect_claude_format(head: bytes) -> Optional[str]:
    """``"claude_stream"`` / ``"claude_session"`` / None from the first bytes (~64 KiB) of a file.

    Looks at the first complete JSON-object lines (non-JSON noise lines are
    skipped); the first record that is decisive wins. When no line is complete
    (a huge first record) falls back to key patterns in the raw bytes.
    """
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    lines = head.split(b"\n")
    complete = lines[:-1] if len(lines) > 1 else []
    for ln in complete[:200]:
        s = ln.strip()
        if not s.startswith(b"{"):
            continue
        try:
            o = orjson.loads(s)
        except orjson.JSONDecodeError:
            continue
        if isinstance(o, dict):
            fmt = _classify(o)
            if fmt:
                return fmt
    # partial first record: key patterns
    probe = head[:65536]
    if not probe.lstrip().startswith(b"{") and b"\n{" not in probe:
        return None
    if b'"type":"session_meta"' in probe or b'"sessionID"' in probe:
        return None  # Codex rollout / OpenCode
    if b'"parentUuid":' in probe or b'"sessionId":"' in probe:
        return "claude_session"
    if b'"session_id":"' in probe and re.search(rb'"type":\s*"(system|assistant|user|result)"', probe):
        return "claude_stream"
    return None
