"""Claude Code transcripts: ``--output-format stream-json --verbose`` and session files.

Two :class:`~edgetui.parsers.base.LineParser` implementations share one record
handler (same message / content-block mapping):

* :class:`ClaudeStreamParser` (``agent_format = "claude_stream"``) — what SForge
  stores in ``agent_output.txt`` (docs/transcript-formats.md §3): ``system``/``assistant``
  /``user``/``result`` records, ``__SFORGE_EXIT__<n>`` exit markers, non-JSON
  noise.
* :class:`ClaudeSessionParser` (``agent_format = "claude_session"``) — Claude
  Code's own ``~/.claude/projects/<project>/<session>.jsonl``: ``user``/
  ``assistant``/``system``/``summary``/``progress``/``file-history-snapshot``/...
  records with ``timestamp``, ``uuid``, ``parentUuid``, ``isSidechain``,
  ``sessionId``.

Mapping (one line -> events with ``sub`` = 0, 1, ...):

* ``system/init`` -> ``session_init`` (data: session_id, model, cwd, tools
  (count), claude_code_version, permissionMode, mcp_servers). Segments: the
  first segment is 0; a later *header* record (``init`` or a ``SessionStart``
  startup/resume hook) after the current segment saw its ``init`` or ended, or
  any record after an ``__SFORGE_EXIT__`` marker, starts segment n+1 and emits a
  ``segment_start`` first. Exception: an ``init`` that follows a
  ``compact_boundary`` with the same session_id in a segment that has not ended
  stays in the segment (a re-announcement, not a new process).
* ``__SFORGE_EXIT__<n>`` (also glued to the end of an unterminated line) ->
  ``segment_end`` with ``data.exit_code``.
* ``result`` -> ``agent_result`` (``stated_cost_usd`` = total_cost_usd; the
  segment totals stay in ``data.usage``, *not* in ``Event.usage``, so summing
  ``Event.usage`` never double counts) + ``segment_end`` (``data.reason = "result"``).
* ``system/compact_boundary`` -> ``compaction`` (``data.phase = "boundary"``);
  the compaction summary user message (``isCompactSummary`` or text starting
  ``This session is being continued from a previous conversation``) ->
  ``compaction`` (``data.phase = "summary"``). Other system subtypes and any
  other valid JSON object -> ``system`` with the whole record as ``data``.
* ``assistant`` content blocks -> ``agent_message`` / ``thinking`` /
  ``tool_call`` (also ``server_tool_use`` / ``mcp_tool_use``). Usage is attached
  to the first event of a ``message.id`` only; a later line of the same message
  whose usage differs (session files grow ``output_tokens`` line by line) puts
  the newer numbers in ``data.usage_update`` of its first event. An assistant
  record with no content block but usage becomes one ``token_usage`` event.
* Assistant records carrying ``error`` (or ``isApiErrorMessage`` /
  ``is_api_error_message``) are synthetic API-error messages: their text blocks
  become ``agent_error`` **instead of** ``agent_message`` (``is_error`` true,
  ``data.error`` = the error code, ``data.text`` = the message).
* ``user``: ``tool_result`` blocks -> ``tool_result`` (``data.content`` text
  joined from str or list blocks, non-text blocks as ``[image]`` etc., a
  ``tool_reference`` block as ``[tool_reference NAME]`` with the names also in
  ``data.tool_references``; a lone ``tool_reference`` user block keeps its name
  as ``tool_name`` too); text
  blocks (or a plain-string content) -> ``user_message``, ``stop_hook_block``
  when the text starts with ``Stop hook feedback``, ``compaction`` for summaries.
* sforge-submit: a ``tool_call`` whose ``input.command`` invokes
  ``sforge-submit`` gets ``data.sforge_submit = True`` and ``data.submit_mode``
  (``submit`` / ``details`` / ``list``); its ``tool_result`` (paired through the
  parser state) or any ``tool_result`` containing ``Round: agent-N`` gets
  ``round`` and ``data.submit_result`` = :func:`parse_sforge_submit_output`.
* Subagents: ``parent_tool_use_id`` from the record (stream-json), from
  ``progress``/``agent_progress`` records (nested subagent messages are expanded
  with the progress record's ``parentToolUseID``), and for session-file
  ``isSidechain`` records from the most recent open main-thread ``Task``/``Agent``
  call; when none is known a placeholder ``agent:<agentId>`` or ``sidechain`` is
  used (never a real tool-use id) and ``data.sidechain`` is true.
* ``timestamp`` (ISO 8601 or epoch s/ms) -> ``t`` + ``t_source = "recorded"``.
* Blank lines are skipped; non-JSON, invalid UTF-8, non-object JSON ->
  ``parse_error`` (raw bytes kept). ``feed`` never raises.

Split by idea: the session-file dialect and telling the formats apart are in
:mod:`edgetui.parsers.claude_session`, the reading of content blocks, timestamps and usage in
:mod:`edgetui.parsers.claude_content`, and what ``sforge-submit`` printed in
:mod:`edgetui.parsers.sforge_submit` (shared with the Codex and OpenCode parsers).

Events are built without pydantic validation (see :func:`_fast_event`); every
field is given its declared type here and the tests check the round trip through
``Event.model_validate``.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from edgetui.events import EVENT_DEFAULTS, Event, Kind, TimeSource, Usage, fast_event, make_event, validated_event
from edgetui.parsers.base import END_OF_FILE_SUB, finite_or_none, loads_lenient, parse_error
from edgetui.parsers.claude_content import (
    SUMMARY_SCAN,
    api_error_fields,
    api_error_summary,
    SUMMARY_WIDTH,  # noqa: F401 - SUMMARY_WIDTH re-exported
    block_text,
    as_text,
    summ,
    tool_brief,
    usage_of,
    usage_tuple,
    content_text,
    parse_timestamp,
    tool_reference_names,
)
from edgetui.parsers.sforge_submit import (
    submit_summary,
    parse_sforge_submit_output,
    sforge_submit_mode,
)  # (also imported from here)

__all__ = [
    "ClaudeStreamParser",
    "parse_sforge_submit_output",
]  # (the session-file parser, FORMATS and detect_claude_format: edgetui.parsers.claude_session)

# ----------------------------------------------------------------------------- constants

K_SESSION_INIT = Kind.SESSION_INIT.value
K_SEGMENT_START = Kind.SEGMENT_START.value
K_SEGMENT_END = Kind.SEGMENT_END.value
K_AGENT_MESSAGE = Kind.AGENT_MESSAGE.value
K_USER_MESSAGE = Kind.USER_MESSAGE.value
K_THINKING = Kind.THINKING.value
K_TOOL_CALL = Kind.TOOL_CALL.value
K_TOOL_RESULT = Kind.TOOL_RESULT.value
K_STOP_HOOK = Kind.STOP_HOOK_BLOCK.value
K_COMPACTION = Kind.COMPACTION.value
K_SYSTEM = Kind.SYSTEM.value
K_TOKEN_USAGE = Kind.TOKEN_USAGE.value
K_AGENT_RESULT = Kind.AGENT_RESULT.value
K_AGENT_ERROR = Kind.AGENT_ERROR.value
T_RECORDED = TimeSource.RECORDED.value

STATE_VERSION = 1
#: message ids remembered for usage dedupe (lines of one message are adjacent,
#: parallel subagents interleave a few)
RECENT_MESSAGES = 64
#: sforge-submit tool_use ids remembered until their result arrives
RECENT_SUBMITS = 64
RECENT_AGENT_CALLS = 32

EXIT_PREFIX = b"__SFORGE_EXIT__"
_EXIT_RE = re.compile(rb"__SFORGE_EXIT__(-?\d+)[ \t\r]*$")
COMPACT_SUMMARY_PREFIX = "This session is being continued from a previous conversation"
STOP_HOOK_PREFIX = "Stop hook feedback"
AGENT_TOOLS = frozenset(("Task", "Agent"))
TOOL_CALL_BLOCKS = frozenset(("tool_use", "server_tool_use", "mcp_tool_use"))

# ----------------------------------------------------------------------------- fast events

# (edgetui.events: shared with the log parsers)
_EVENT_DEFAULTS, _fast_event, _validated_event, _make_event = EVENT_DEFAULTS, fast_event, validated_event, make_event

# ----------------------------------------------------------------------------- parsers


class ClaudeParser:
    """Shared record handling of the stream-json and session-file parsers."""

    agent_format = "claude_stream"
    #: SessionStart startup/resume hooks open a new segment (stream-json only)
    _hook_segments = True

    def __init__(self, source: str, generation: str, state: Optional[dict[str, Any]] = None) -> None:
        self.source = source
        self.generation = generation
        st = state or {}
        self._segment: int = int(st.get("segment", 0))
        self._seg_init: bool = bool(st.get("seg_init", False))
        self._seg_ended: bool = bool(st.get("seg_ended", False))
        self._after_exit: bool = bool(st.get("after_exit", False))
        self._after_compact: bool = bool(st.get("after_compact", False))
        self._seg_session: Optional[str] = st.get("seg_session")
        self._msgs: dict[str, list[int]] = {m[0]: list(m[1:]) for m in st.get("msgs", []) if m}
        self._submits: dict[str, str] = {k: v for k, v in st.get("submits", [])}
        self._agent_calls: list[str] = list(st.get("agent_calls", []))
        self._session_id: Optional[str] = st.get("session_id")
        #: main-thread tool calls of the open segment still waiting for their result (newest last)
        self._open_calls: list[str] = list(st.get("open_calls", []))
        self._seg_records: int = int(st.get("seg_records", 0))  # records of the open segment
        #: ``system`` ``api_error`` records and synthetic API-error messages seen, and whether the
        #: model answered anything else (text, thinking, a tool call): a session whose only answer is
        #: API errors is flagged ``api-errors-only`` (:meth:`ClaudeSessionParser.finish`)
        self._api_errors: int = int(st.get("api_errors", 0))
        self._last_api_error: Optional[str] = st.get("last_api_error")
        self._answered: bool = bool(st.get("answered", False))
        # per-line scratch (the last line's offset is kept in the state: a parser restored from a
        # cursor puts what finish() says at the same place as the one that read the whole file)
        self._out: list[Event] = []
        self._offset = int(st.get("last_off", 0))
        self._t: Optional[float] = None

    # -- protocol ------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return {
            "v": STATE_VERSION,
            "segment": self._segment,
            "seg_init": self._seg_init,
            "seg_ended": self._seg_ended,
            "after_exit": self._after_exit,
            "after_compact": self._after_compact,
            "seg_session": self._seg_session,
            "msgs": [[k, *v] for k, v in self._msgs.items()],
            "submits": [[k, v] for k, v in self._submits.items()],
            "agent_calls": list(self._agent_calls),
            "session_id": self._session_id,
            "open_calls": list(self._open_calls),
            "seg_records": self._seg_records,
            "last_off": self._offset,
            "api_errors": self._api_errors,
            "last_api_error": self._last_api_error,
            "answered": self._answered,
        }

    def resume_offset(self) -> Optional[int]:
        return None

    def finish(self) -> list[Event]:
        """At the end of a finished file: a segment that never got its ``result`` record (a cut-off
        stream, claude-code#1920) ends here, with the reason (``ended_after_tool_call`` when a tool
        call is still unanswered, else ``no_result``); the run is then flagged ``incomplete``. A live
        stream still growing never gets this (finish runs only offline)."""
        if self._seg_ended or not (self._seg_init or self._seg_records):
            return []
        out: list[Event] = []
        self._out = out
        self._t = None
        reason = "ended_after_tool_call" if self._open_calls else "no_result"
        self._emit(
            K_SEGMENT_END,
            f"segment {self._segment} ended without a result record ({reason.replace('_', ' ')})",
            is_error=True,
            level="warning",
            data={"reason": reason, "incomplete": True, "unanswered_tool_calls": list(self._open_calls)},
        )
        # the state is left as it was: the cursor saved after this keeps it, and a file that grows on
        # without its result is said to be cut off again at its new end
        for e in out:  # after the file's last line, never one of its own event ids
            e.sub = END_OF_FILE_SUB
        return list(out)

    def feed(self, line: bytes, offset: int) -> list[Event]:
        out: list[Event] = []
        self._out = out
        self._offset = offset
        self._t = None
        try:
            self._feed(line)
        except Exception as exc:  # noqa: BLE001 - never raise on bad input
            del out[:]
            out.append(self._perr(line, f"unhandled record: {type(exc).__name__}: {exc}"))
        return out

    # -- line level ------------------------------------------------------------------

    def _perr(self, raw: bytes, reason: str) -> Event:
        ev = parse_error(self.source, self.generation, self._offset, raw, reason, sub=len(self._out))
        ev.agent_format = self.agent_format
        ev.segment = self._segment
        return ev

    def _feed(self, line: bytes) -> None:
        if line[:15] == EXIT_PREFIX:
            m = _EXIT_RE.match(line)
            if m and m.start() == 0:
                self._exit_marker(int(m.group(1)))
                return
        try:
            obj = loads_lenient(line)
        except ValueError as exc:
            if not line.strip():
                return  # blank line: nothing to record
            m = _EXIT_RE.search(line) if EXIT_PREFIX in line else None
            if m:
                # marker glued to an unterminated last record of the segment
                head = line[: m.start()]
                if head.strip():
                    try:
                        hobj = loads_lenient(head)
                    except ValueError as exc2:
                        self._out.append(self._perr(head, f"not JSON: {exc2}"))
                    else:
                        if isinstance(hobj, dict):
                            self._record(hobj)
                        else:
                            self._out.append(self._perr(head, "JSON value is not an object"))
                self._exit_marker(int(m.group(1)))
                return
            if isinstance(exc, UnicodeDecodeError):
                reason = "invalid UTF-8"
            elif line.lstrip()[:1] in (b"{", b"["):
                reason = f"not JSON: {exc}"
            else:  # a plain text line (the CLI's own error, e.g. "API Error: 529 … Overloaded"): its words
                reason = "not JSON, the agent CLI wrote: " + " ".join(line.decode("utf-8", "replace").split())[:200]
            self._out.append(self._perr(line, reason))
            return
        if not isinstance(obj, dict):
            self._out.append(self._perr(line, f"JSON value is not an object ({type(obj).__name__})"))
            return
        self._record(obj)

    def _exit_marker(self, code: int) -> None:
        self._seg_ended = True
        self._after_exit = True
        self._emit(
            K_SEGMENT_END,
            f"agent process exited with code {code}",
            is_error=code != 0,
            level="error" if code != 0 else None,
            data={"reason": "exit_marker", "exit_code": code},
        )

    # -- emit --------------------------------------------------------------------------

    def _emit(self, kind: str, summary: str, **fields: Any) -> dict[str, Any]:
        d = {
            "kind": kind,
            "source": self.source,
            "generation": self.generation,
            "offset": self._offset,
            "sub": len(self._out),
            "agent_format": self.agent_format,
            "segment": self._segment,
            "summary": summary,
        }
        if self._t is not None:
            d["t"] = self._t
            d["t_source"] = T_RECORDED
        d.update(fields)
        self._out.append(_make_event(d))
        return d

    def _close_cut_segment(self) -> None:
        """A new session starts in the same file (a concatenated file, a resume without its
        process's exit) while the current segment never got its ``result``: that segment was cut
        off here, as :meth:`finish` says of one cut at the end of the file (claude-code#8126)."""
        if self._seg_ended or not self._seg_init:
            return
        reason = "ended_after_tool_call" if self._open_calls else "no_result"
        t, self._t = self._t, None  # the next session's time is not this one's end: aligned by offset
        self._emit(
            K_SEGMENT_END,
            f"segment {self._segment} ended without a result record "
            f"({reason.replace('_', ' ')}; the next session starts here)",
            is_error=True,
            level="warning",
            data={
                "reason": reason,
                "incomplete": True,
                "unanswered_tool_calls": list(self._open_calls),
                "next_session_at": self._offset,
            },
        )
        self._t = t

    def _new_segment(self) -> None:
        self._close_cut_segment()
        self._segment += 1
        self._open_calls = []
        self._seg_records = 0
        self._seg_init = False
        self._seg_ended = False
        self._after_exit = False
        self._after_compact = False
        self._seg_session = None
        self._emit(K_SEGMENT_START, f"segment {self._segment} starts", data={"segment": self._segment})

    # -- records -----------------------------------------------------------------------

    def _record(self, o: dict[str, Any]) -> None:
        self._seg_records += 1
        ts = o.get("timestamp")
        if ts is not None:
            self._t = parse_timestamp(ts)
        typ = o.get("type")
        if self._after_exit:
            self._new_segment()
        self._pre_record(o, typ)
        if typ == "assistant":
            self._after_compact = False
            self._assistant(o, self._parent(o))
        elif typ == "user":
            self._user(o, self._parent(o))
        elif typ == "system":
            self._system(o)
        elif typ == "result":
            self._after_compact = False
            self._result(o)
        else:
            self._other(o, typ)

    def _pre_record(self, o: dict[str, Any], typ: Any) -> None:
        """Hook for the session parser (session changes)."""

    def _parent(self, o: dict[str, Any]) -> Optional[str]:
        return as_text(o.get("parent_tool_use_id"))

    def _common(self, o: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        u = o.get("uuid")
        if u is not None:
            data["uuid"] = u
        return data

    # system ------------------------------------------------------------------------------

    def _system(self, o: dict[str, Any]) -> None:
        sub = o.get("subtype")
        if sub == "init":
            self._init(o)
            return
        if (sub == "hook_started" or sub == "hook_response") and self._hook_segments:
            if o.get("hook_event") == "SessionStart":
                name = o.get("hook_name")
                if not (isinstance(name, str) and (name.endswith(":compact") or name.endswith(":clear"))):
                    if self._seg_init or self._seg_ended:
                        self._new_segment()
        if sub == "compact_boundary":
            meta = o.get("compact_metadata")
            if meta is None:
                meta = o.get("compactMetadata")
            data = {"phase": "boundary", "subtype": sub}
            if isinstance(meta, dict):
                data["trigger"] = meta.get("trigger")
                data["pre_tokens"] = meta.get("pre_tokens", meta.get("preTokens"))
                data["metadata"] = meta
            if o.get("content") is not None:
                data["content"] = o.get("content")
            self._after_compact = True
            trig = data.get("trigger")
            pre = data.get("pre_tokens")
            s = (
                "context compacted"
                + (f" ({trig})" if trig else "")
                + (f", {pre} tokens before" if pre is not None else "")
            )
            self._emit(K_COMPACTION, s, data=self._common(o, data))
            return
        level = None
        is_error = None
        if sub == "api_error":  # session files (2.1.x): one failed API request, retried or given up
            level, is_error = "error", True
            s = api_error_summary(o)
            self._api_errors += 1
            self._last_api_error = s
        elif sub == "api_retry":
            level = "warning"
            s = f"API retry {o.get('attempt', '?')}/{o.get('max_retries', '?')}: {o.get('error', '')} (status {o.get('error_status', '?')})"
        elif sub in ("hook_started", "hook_response"):
            s = f"{sub} {o.get('hook_name', '')}"
            if sub == "hook_response":
                s += f" exit {o.get('exit_code')} {o.get('outcome', '')}"
        elif sub in ("task_started", "task_notification", "task_updated"):
            s = f"{sub} {o.get('task_id', '')} {o.get('status', '') or ''} {o.get('description', '') or o.get('summary', '') or ''}"
        elif sub == "turn_duration":
            s = f"turn duration {o.get('durationMs')} ms"
        else:
            detail = o.get("content") or o.get("message") or o.get("text") or ""
            s = f"system/{sub}" + (f": {summ(detail, 120)}" if isinstance(detail, str) and detail else "")
        data = o if "subtype" in o else {"subtype": None, **o}
        if sub == "api_error":
            data = {**data, **api_error_fields(o)}
        self._emit(
            K_SYSTEM,
            summ(s),
            level=level,
            is_error=is_error,
            tool_use_id=as_text(o.get("tool_use_id")),
            data=data,
        )

    def _init(self, o: dict[str, Any]) -> None:
        sid = as_text(o.get("session_id"))
        if self._seg_ended or self._seg_init:
            same_process = self._after_compact and not self._seg_ended and sid is not None and sid == self._seg_session
            if not same_process:
                self._new_segment()
        self._seg_init = True
        self._seg_session = sid
        self._after_compact = False
        tools = o.get("tools")
        model = as_text(o.get("model"))
        mcp = o.get("mcp_servers")
        data = {
            "session_id": sid,
            "model": model,
            "cwd": o.get("cwd"),
            "tools": len(tools) if isinstance(tools, list) else None,
            "claude_code_version": o.get("claude_code_version"),
            "permissionMode": o.get("permissionMode"),
        }
        if isinstance(mcp, list) and mcp:
            data["mcp_servers"] = mcp
        ver = f" {data['claude_code_version']}" if data["claude_code_version"] else ""
        s = f"init {model or '?'} (Claude Code{ver}, {data['tools'] if data['tools'] is not None else '?'} tools) cwd={data['cwd'] or '?'}"
        self._emit(K_SESSION_INIT, summ(s), model=model, data=self._common(o, data))

    # result -------------------------------------------------------------------------------

    def _result(self, o: dict[str, Any]) -> None:
        cost, _flag = finite_or_none(o.get("total_cost_usd"))
        is_error = bool(o.get("is_error"))
        sub = o.get("subtype")
        data: dict[str, Any] = {"subtype": sub, "is_error": is_error}
        for k in (
            "duration_ms",
            "duration_api_ms",
            "num_turns",
            "result",
            "usage",
            "modelUsage",
            "total_cost_usd",
            "stop_reason",
            "terminal_reason",
            "api_error_status",
            "permission_denials",
            "session_id",
            "errors",
        ):
            if k in o:
                data[k] = o[k]
        model = None
        mu = o.get("modelUsage")
        if isinstance(mu, dict) and len(mu) == 1:
            model = as_text(next(iter(mu)))
        res = o.get("result")
        # "success" after an interrupted turn (claude-code#40432): no result text or stop_reason
        # tool_use, and a tool call never answered
        interrupted = (
            sub == "success"
            and bool(self._open_calls)
            and (not (isinstance(res, str) and res) or o.get("stop_reason") == "tool_use")
        )
        if interrupted:
            data["interrupted"] = True
            data["unanswered_tool_calls"] = list(self._open_calls)
        self._open_calls = []
        s = (
            f"result {sub}{' (error)' if is_error else ''}"
            + (f" (interrupted: {len(data['unanswered_tool_calls'])} tool call(s) unanswered)" if interrupted else "")
            + f": {o.get('num_turns', '?')} turns"
        )
        if cost is not None:
            s += f", ${cost:.4f}"
        if o.get("duration_ms") is not None:
            s += f", {o.get('duration_ms')} ms"
        if isinstance(res, str) and res:
            s += " — " + res[:SUMMARY_SCAN]
        self._emit(
            K_AGENT_RESULT,
            summ(s),
            is_error=is_error,
            level="error" if is_error else None,
            stated_cost_usd=cost,
            model=model,
            data=self._common(o, data),
        )
        self._seg_ended = True
        self._emit(
            K_SEGMENT_END,
            f"segment {self._segment} ended: result {sub}{' (error)' if is_error else ''}",
            is_error=is_error,
            data={
                "reason": "result",
                "subtype": sub,
                "is_error": is_error,
                **({"interrupted": True} if interrupted else {}),
            },
        )

    # assistant ----------------------------------------------------------------------------

    def _assistant(self, o: dict[str, Any], parent: Optional[str]) -> None:
        msg = o.get("message")
        if not isinstance(msg, dict):
            msg = {}
        mid = as_text(msg.get("id"))
        model = as_text(msg.get("model"))
        content = msg.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        elif not isinstance(content, list):
            content = []
        error = o.get("error")
        api_error = error is not None or bool(o.get("isApiErrorMessage")) or bool(o.get("is_api_error_message"))

        usage = usage_of(msg.get("usage"))
        attach: Optional[Usage] = None
        update: Optional[dict[str, int]] = None
        if usage is not None:
            if mid is None:
                attach = usage
            else:
                tup = usage_tuple(usage)
                prev = self._msgs.get(mid)
                if prev is None:
                    attach = usage
                    self._msgs[mid] = tup
                    if len(self._msgs) > RECENT_MESSAGES:
                        del self._msgs[next(iter(self._msgs))]
                elif prev != tup:
                    self._msgs[mid] = tup
                    update = usage.model_dump()

        sidechain = o.get("isSidechain") is True
        uuid = o.get("uuid")
        # fields of the first event of this record only
        first_fields: Optional[dict[str, Any]] = {} if attach is None else {"usage": attach}
        first_data: dict[str, Any] = {}
        if update is not None:
            first_data["usage_update"] = update
        if api_error and error is not None:
            first_data["error"] = as_text(error)

        blank = 0  # text blocks of whitespace only (no event)
        for block in content:
            odd = not isinstance(block, dict)  # a block that is not an object: shown as text, never dropped
            if odd:
                block = {"type": "text", "text": as_text(block) or ""}
            bt = block.get("type")
            data: dict[str, Any]
            fields: dict[str, Any]
            if bt == "text":
                text = block.get("text")
                text = text if isinstance(text, str) else (as_text(text) or "")
                if not api_error and not odd and not text.strip():
                    blank += 1
                    continue  # a text block of whitespace only says nothing: no row
                if api_error:
                    data = {"text": text, "error": as_text(error) or "api_error"}
                    kind, s = K_AGENT_ERROR, f"API error ({data['error']}): {summ(text, 130)}"
                    fields = {"is_error": True, "level": "error"}
                else:
                    data = {"text": text}
                    kind, s, fields = K_AGENT_MESSAGE, summ(text), {}
            elif bt == "thinking" or bt == "redacted_thinking":
                text = block.get("thinking")
                text = text if isinstance(text, str) else ""
                data = {"text": text, "redacted": bt == "redacted_thinking"}
                if block.get("signature") or block.get("data"):
                    data["signed"] = True
                if text:
                    s = summ(text)
                else:
                    s = "[redacted thinking]" if bt == "redacted_thinking" else "[thinking: signature only]"
                kind, fields = K_THINKING, {}
            elif bt in TOOL_CALL_BLOCKS:
                name = as_text(block.get("name")) or ""
                inp = block.get("input")
                tid = as_text(block.get("id"))
                data = {"input": inp}
                if bt != "tool_use":
                    data["block_type"] = bt
                if block.get("server_name") is not None:
                    data["server_name"] = block.get("server_name")
                s = f"{name}: {tool_brief(inp)}"
                cmd = inp.get("command") if isinstance(inp, dict) else None
                if cmd is not None:
                    mode = sforge_submit_mode(cmd)
                    if mode is not None:
                        data["sforge_submit"] = True
                        data["submit_mode"] = mode
                        flag = {"list": " --list", "result": " --result"}.get(mode, "")
                        s = f"sforge-submit{flag} ({name}): {tool_brief(inp)}"
                        if tid is not None:
                            self._submits[tid] = mode
                            if len(self._submits) > RECENT_SUBMITS:
                                del self._submits[next(iter(self._submits))]
                if tid is not None and name in AGENT_TOOLS and parent is None and not sidechain:
                    self._agent_calls.append(tid)
                    if len(self._agent_calls) > RECENT_AGENT_CALLS:
                        del self._agent_calls[0]
                kind, fields = K_TOOL_CALL, {"tool_use_id": tid, "tool_name": name}
                if tid is not None and parent is None and not sidechain:
                    self._open_calls.append(tid)
                    if len(self._open_calls) > 64:
                        del self._open_calls[0]
                s = summ(s)
            elif isinstance(bt, str) and bt.endswith("_tool_result"):
                # server-side tool results inside an assistant message (web search...)
                c = block.get("content")
                data = {
                    "block_type": bt,
                    "content": content_text(c) if isinstance(c, (str, list, dict)) else "",
                    "block": block,
                }
                refs = tool_reference_names(c)
                if refs:
                    data["tool_references"] = refs
                kind = K_TOOL_RESULT
                fields = {"tool_use_id": as_text(block.get("tool_use_id")), "is_error": False}
                s = summ(f"{bt}: {data['content']}")
            else:
                data = {"block_type": bt, "block": block}
                kind, fields, s = K_SYSTEM, {}, summ(f"assistant block {bt}")
            if uuid is not None:
                data["uuid"] = uuid
            if sidechain:
                data["sidechain"] = True
            if first_fields is not None:
                fields.update(first_fields)
                data.update(first_data)
                first_fields = None
            if kind == K_AGENT_ERROR:
                self._api_errors += 1
                self._last_api_error = s
            elif kind in (K_AGENT_MESSAGE, K_THINKING, K_TOOL_CALL):
                self._answered = True
            self._emit(kind, s, message_id=mid, model=model, parent_tool_use_id=parent, data=data, **fields)

        if first_fields is not None:
            if blank and not api_error and not first_fields and not first_data:
                return  # only whitespace text, and no usage left to count: nothing to show
            # no content block at all
            data = self._common(o, first_data)
            if sidechain:
                data["sidechain"] = True
            if api_error:
                data.setdefault("error", as_text(error) or "api_error")
                data["text"] = ""
                self._api_errors += 1
                self._last_api_error = f"API error ({data['error']})"
                self._emit(
                    K_AGENT_ERROR,
                    f"API error ({data['error']})",
                    is_error=True,
                    level="error",
                    message_id=mid,
                    model=model,
                    parent_tool_use_id=parent,
                    data=data,
                    **first_fields,
                )
            elif usage is not None:
                self._emit(
                    K_TOKEN_USAGE,
                    "usage of an assistant message without content",
                    message_id=mid,
                    model=model,
                    parent_tool_use_id=parent,
                    data=data,
                    **first_fields,
                )
            else:
                # neither content nor usage: keep the record visible
                self._emit(
                    K_SYSTEM,
                    "assistant record without content",
                    message_id=mid,
                    model=model,
                    parent_tool_use_id=parent,
                    data={"type": "assistant", "record": o},
                )

    # user ----------------------------------------------------------------------------------

    def _user(self, o: dict[str, Any], parent: Optional[str]) -> None:
        msg = o.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if content is None and isinstance(o.get("content"), (str, list)):
            content = o.get("content")
        sidechain = o.get("isSidechain") is True
        compact_summary = o.get("isCompactSummary") is True
        extra: dict[str, Any] = {}
        if o.get("uuid") is not None:
            extra["uuid"] = o.get("uuid")
        if sidechain:
            extra["sidechain"] = True
        if o.get("isMeta") is True:
            extra["is_meta"] = True
        if o.get("isSynthetic") is True:
            extra["synthetic"] = True

        if isinstance(content, str):
            self._user_text(content, parent, compact_summary, extra)
            return
        start = len(self._out)
        if isinstance(content, list):
            self._user_blocks(content, parent, compact_summary, extra)
        if len(self._out) == start:
            self._emit(
                K_SYSTEM, "user record without content", parent_tool_use_id=parent, data={"type": "user", "record": o}
            )

    def _user_blocks(self, content: list, parent: Optional[str], compact_summary: bool, extra: dict[str, Any]) -> None:
        for block in content:
            if isinstance(block, str):
                self._user_text(block, parent, compact_summary, extra)
                continue
            if not isinstance(block, dict):
                self._user_text(as_text(block) or "", parent, compact_summary, extra)
                continue
            bt = block.get("type")
            if bt == "tool_result":
                self._tool_result(block, parent, extra)
            elif bt == "text":
                t = block.get("text")
                self._user_text(t if isinstance(t, str) else (as_text(t) or ""), parent, compact_summary, extra)
            else:
                data = dict(extra)
                data["block_type"] = bt
                data["text"] = block_text(block)
                if bt != "image":
                    data["block"] = block
                refs = tool_reference_names(block)
                if refs:
                    data["tool_references"] = refs
                self._emit(
                    K_USER_MESSAGE,
                    summ(data["text"]),
                    parent_tool_use_id=parent,
                    data=data,
                    tool_name=refs[0] if len(refs) == 1 else None,
                )

    def _user_text(self, text: str, parent: Optional[str], compact_summary: bool, extra: dict[str, Any]) -> None:
        data = dict(extra)
        data["text"] = text
        if compact_summary or text.startswith(COMPACT_SUMMARY_PREFIX):
            data["phase"] = "summary"
            self._after_compact = True
            self._emit(
                K_COMPACTION, summ("compaction summary: " + text[:SUMMARY_SCAN]), parent_tool_use_id=parent, data=data
            )
        elif text.startswith(STOP_HOOK_PREFIX):
            self._emit(K_STOP_HOOK, summ(text), parent_tool_use_id=parent, data=data)
        else:
            self._emit(K_USER_MESSAGE, summ(text), parent_tool_use_id=parent, data=data)

    def _tool_result(self, block: dict[str, Any], parent: Optional[str], extra: dict[str, Any]) -> None:
        tid = as_text(block.get("tool_use_id"))
        text = content_text(block.get("content"))
        is_error = bool(block.get("is_error"))
        data = dict(extra)
        data["content"] = text
        if isinstance(block.get("content"), list):
            data["content_blocks"] = len(block["content"])  # tool result given as a list of blocks
        refs = tool_reference_names(block.get("content"))
        if refs:
            data["tool_references"] = refs  # the tools a tool search loaded (names also in the content text)
        rnd = None
        sub_mode = self._submits.pop(tid, None) if tid is not None else None
        if sub_mode is not None or "Round: agent-" in text:
            r = parse_sforge_submit_output(text)
            if r:
                data["sforge_submit"] = True
                if sub_mode is not None:
                    data["submit_mode"] = sub_mode
                data["submit_result"] = r
                # a --result read names the round it read again: not a new submission's result
                rnd = None if (sub_mode == "result" or r.get("mode") == "result") else r.get("round")
                s = submit_summary(r)
            else:
                s = text
        else:
            s = text
        if tid is not None and tid in self._agent_calls:
            self._agent_calls.remove(tid)
        if tid is not None and tid in self._open_calls:
            self._open_calls.remove(tid)
        if is_error:
            s = "error: " + (s[:SUMMARY_SCAN] if isinstance(s, str) else "")
        self._emit(
            K_TOOL_RESULT,
            summ(s),
            tool_use_id=tid,
            is_error=is_error,
            level="error" if is_error else None,
            round=rnd,
            parent_tool_use_id=parent,
            data=data,
        )

    # other -----------------------------------------------------------------------------------

    def _other(self, o: dict[str, Any], typ: Any) -> None:
        data = o if "type" in o else {"type": None, **o}
        detail = ""
        if typ == "rate_limit_event":
            info = o.get("rate_limit_info")
            if isinstance(info, dict):
                detail = f"{info.get('status', '')} {info.get('rateLimitType', '')}"
        elif typ == "summary":
            detail = o.get("summary") or ""
        s = f"{typ}" + (f": {detail}" if detail else "")
        self._emit(K_SYSTEM, summ(s), data=data)


class ClaudeStreamParser(ClaudeParser):
    """Claude Code ``-p --output-format stream-json --verbose`` (SForge ``agent_output.txt``)."""

    agent_format = "claude_stream"
