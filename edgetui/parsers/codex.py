"""OpenAI Codex transcripts: human-readable ``codex exec`` output, ``codex exec --json``
streams and rollout (session) files.

Three :class:`~edgetui.parsers.base.LineParser` classes:

* :class:`CodexTextParser` (``codex_text``) — what SForge stores in
  ``agent_output.txt`` (sforge-format.md §6.3): an optional
  ``Reading additional input from stdin...`` line, a header
  ``OpenAI Codex v<ver> (research preview)`` / ``--------`` / ``key: value`` lines /
  ``--------``, then blocks that start with bare marker lines ``user``, ``codex``,
  ``thinking``, ``exec``, ``tokens used`` (and ``file update``). Blocks span several
  lines, so the parser holds the open block and emits it when the next block
  starts (or in :meth:`~CodexTextParser.finish`); :meth:`~CodexTextParser.resume_offset`
  is then the open block's first line. The format has no timestamps.
* :class:`CodexJsonParser` (``codex_json``) — ``codex exec --json``:
  ``thread.started``, ``turn.started``, ``item.started/updated/completed``,
  ``turn.completed`` (usage), ``turn.failed``, ``error``. No timestamps. Turn usage
  may be cumulative over the thread (transcript-corpus README): each
  ``token_usage`` event says so in ``data.cumulative`` and carries ``data.delta``.
* :class:`CodexRolloutParser` (``codex_rollout``) — ``~/.codex/sessions/**/rollout-*.jsonl``:
  ``session_meta``, ``turn_context``, ``response_item``, ``event_msg``,
  ``compacted``; every line has an ISO ``timestamp`` (``t_source`` = recorded).
  ``event_msg`` records that only mirror a ``response_item`` (``agent_message``,
  ``user_message``, ``agent_reasoning``, exec/patch begin...) add no event of
  their own; an ``exec_command_end`` / ``patch_apply_end`` that comes before its
  output lends exit code and duration to that ``function_call_output``.

Conventions shared with the Claude parsers (edgetui/parsers/claude.py):

* ``segment`` is 0 for the first agent process; ``__SFORGE_EXIT__<n>`` (the
  Kubernetes wrapper's marker, also when glued to the end of a line) →
  ``segment_end`` (``data.reason = "exit_marker"``, ``data.exit_code``); the next
  record after it, or a second init record (text header, ``thread.started``,
  ``session_meta``, new OpenCode session) in a segment that already had one,
  starts segment n+1 with a ``segment_start`` event.
* sforge-submit: a shell tool call whose command invokes ``sforge-submit`` gets
  ``data.sforge_submit = True`` and ``data.submit_mode``; its result (or any
  result containing ``Round: agent-N``) gets ``data.submit_result`` =
  :func:`~edgetui.parsers.claude.parse_sforge_submit_output` and ``round``.
* Bad input (non-JSON noise, invalid UTF-8, non-object JSON) → ``parse_error``
  events with the raw bytes; ``feed`` and ``finish`` never raise.

:func:`iso_to_epoch`, :func:`submit_mode`, :func:`submit_fields` are shared with
the OpenCode parser.
"""

from __future__ import annotations

import re
import shlex
from datetime import datetime, timezone
from typing import Any, Optional

import orjson

from ..events import Event, Kind, TimeSource, Usage, one_line
from .base import finite_or_none, loads_lenient, parse_error
from .claude import parse_sforge_submit_output, sforge_submit_mode

try:  # private helper of the Claude parser: one summary style for submit results
    from .claude import _submit_summary  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - only if claude.py renames it
    _submit_summary = None

__all__ = [
    "CodexTextParser",
    "CodexJsonParser",
    "CodexRolloutParser",
    "iso_to_epoch",
    "submit_mode",
    "submit_fields",
]

T_RECORDED = TimeSource.RECORDED.value

# ----------------------------------------------------------------------------------------
# shared helpers

_SFORGE_EXIT = b"__SFORGE_EXIT__"
_SFORGE_EXIT_RE = re.compile(rb"__SFORGE_EXIT__(-?\d+)[ \t\r]*$")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def iso_to_epoch(value: Any) -> Optional[float]:
    """ISO-8601 string (``2026-07-11T17:18:23.720Z``) → epoch seconds UTC; ``None`` if unparsable.

    A time without zone is taken as UTC (Codex writes ``Z``).
    """
    if not isinstance(value, str) or len(value) < 10:
        return None
    s = value.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    # Python 3.10's fromisoformat wants 3 or 6 fraction digits: normalise to 6.
    dot = s.find(".", 10)
    if dot >= 0:
        end = dot + 1
        while end < len(s) and s[end].isdigit():
            end += 1
        s = s[: dot + 1] + (s[dot + 1 : end] + "000000")[:6] + s[end:]
    try:
        dt = datetime.fromisoformat(s)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def submit_mode(command: Any) -> Optional[str]:
    """``submit`` / ``details`` / ``list`` when the shell ``command`` invokes sforge-submit, else None."""
    if command is None:
        return None
    try:
        return sforge_submit_mode(command)
    except Exception:  # noqa: BLE001 - a foreign helper must not break parsing
        return None


def submit_fields(content: Any, mode: Optional[str], data: dict[str, Any]) -> tuple[Optional[str], Optional[str]]:
    """Fill ``data`` of a tool result that may be sforge-submit output; return (round, summary or None).

    Applies when the call invoked sforge-submit (``mode``) or the text contains
    ``Round: agent-`` (as the Claude parser does).
    """
    text = content if isinstance(content, str) else ""
    if mode is None and "Round: agent-" not in text:
        return None, None
    try:
        res = parse_sforge_submit_output(text)
    except Exception:  # noqa: BLE001
        res = {}
    if not res and mode is None:
        return None, None
    data["sforge_submit"] = True
    if mode is not None:
        data["submit_mode"] = mode
    data["submit_result"] = res
    summ = None
    if res and _submit_summary is not None:
        try:
            summ = _submit_summary(res)
        except Exception:  # noqa: BLE001
            summ = None
    return res.get("round") if isinstance(res.get("round"), str) else None, summ


def _command_text(cmd: Any) -> Optional[str]:
    """A shell command as one string (argv lists are shell-joined)."""
    if cmd is None:
        return None
    if isinstance(cmd, list):
        try:
            return shlex.join(str(c) for c in cmd)
        except Exception:  # noqa: BLE001
            return " ".join(str(c) for c in cmd)
    return cmd if isinstance(cmd, str) else str(cmd)


def _first_line(text: Any) -> str:
    if not isinstance(text, str):
        return "" if text is None else str(text)
    for ln in text[:4000].splitlines():
        if ln.strip():
            return ln
    return ""


def _int_or_none(v: Any) -> Optional[int]:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v == v and abs(v) != float("inf"):
        return int(v)
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def _usage_from(d: Any) -> Optional[Usage]:
    """OpenAI-style usage dict → :class:`Usage` in edgetui's convention.

    OpenAI reports ``input_tokens`` *including* cached input; edgetui's
    ``Usage.input_tokens`` is uncached input (Claude's convention), so the cached
    part is moved to ``cache_read_tokens`` only (input = reported input − cached,
    never below 0). ``data.raw_usage`` keeps the numbers as reported.
    """
    if not isinstance(d, dict):
        return None
    cached = _int_or_none(d.get("cached_input_tokens")) or 0
    return Usage(
        input_tokens=max(0, (_int_or_none(d.get("input_tokens")) or 0) - cached),
        output_tokens=_int_or_none(d.get("output_tokens")) or 0,
        cache_read_tokens=_int_or_none(d.get("cached_input_tokens")) or 0,
        cache_write_tokens=_int_or_none(d.get("cache_write_input_tokens")) or 0,
    )


def _copy_state(st: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(st))


def _remember(d: dict[str, Any], key: str, value: Any, cap: int = 500) -> None:
    """Insert into a bounded insertion-ordered dict kept in parser state."""
    d[key] = value
    while len(d) > cap:
        del d[next(iter(d))]


def _tool_result_summary(tool: Optional[str], exit_code: Optional[int], text: Any, is_error: Optional[bool]) -> str:
    head = tool or "tool"
    if exit_code is not None:
        head += f" → exit {exit_code}"
    elif is_error:
        head += " → error"
    else:
        head += " →"
    return one_line(f"{head}: {_first_line(text)}")


# ----------------------------------------------------------------------------------------
# JSON-lines base


class _JsonLinesParser:
    """One JSON object per line; subclasses implement :meth:`_handle`.

    State keys shared by all subclasses: ``segment``, ``seg_init`` (the segment
    already had its init record), ``after_exit`` (an exit marker was the last
    record).
    """

    agent_format = ""

    def __init__(self, source: str, generation: str, state: Optional[dict[str, Any]] = None):
        self.source = source
        self.generation = generation
        self._st: dict[str, Any] = {"segment": 0, "seg_init": False, "after_exit": False}
        self._st.update(self._initial_state())
        if state:
            self._st.update(_copy_state(state))

    # -- protocol -------------------------------------------------------------------------

    def feed(self, line: bytes, offset: int) -> list[Event]:
        try:
            events = self._feed(line, offset)
        except Exception as exc:  # noqa: BLE001 - never raise from feed()
            events = [self._perr(offset, line, f"{self.agent_format} parser failure: {type(exc).__name__}: {exc}")]
        for i, ev in enumerate(events):
            ev.sub = i
        return events

    def state(self) -> dict[str, Any]:
        return _copy_state(self._st)

    def resume_offset(self) -> Optional[int]:
        return None

    def finish(self) -> list[Event]:
        return []

    # -- plumbing ---------------------------------------------------------------------------

    def _initial_state(self) -> dict[str, Any]:
        return {}

    def _time_of(self, obj: dict[str, Any]) -> Optional[float]:
        """Recorded time of a record (epoch s), applied to its events that have none."""
        return None

    def _ev(self, kind: Kind, offset: int, **kw: Any) -> Event:
        kw.setdefault("segment", self._st["segment"])
        if kw.get("is_error") and "level" not in kw:
            kw["level"] = "error"
        return Event(kind=kind, source=self.source, generation=self.generation, offset=offset,
                     agent_format=self.agent_format, **kw)

    def _perr(self, offset: int, raw: bytes, reason: str) -> Event:
        ev = parse_error(self.source, self.generation, offset, bytes(raw), reason)
        ev.agent_format = self.agent_format
        ev.segment = self._st["segment"]
        return ev

    def _new_segment(self, offset: int, **data: Any) -> Event:
        st = self._st
        st["segment"] += 1
        st["seg_init"] = False
        st["after_exit"] = False
        return self._ev(Kind.SEGMENT_START, offset, summary=f"segment {st['segment']} starts",
                        data={"segment": st["segment"], **data})

    def _init_record(self, offset: int, **data: Any) -> list[Event]:
        """Called for a record that opens an agent process (init); a second one starts a new segment."""
        out = [self._new_segment(offset, **data)] if self._st["seg_init"] else []
        self._st["seg_init"] = True
        return out

    def _feed(self, line: bytes, offset: int) -> list[Event]:
        s = line.strip()
        if not s:
            return []
        exit_code: Optional[int] = None
        if not s.endswith(b"}") and _SFORGE_EXIT in s:
            m = _SFORGE_EXIT_RE.search(s)
            if m:
                exit_code = int(m.group(1))
                s = s[: m.start()].strip()
        events: list[Event] = []
        if s:
            if s[:1] not in (b"{", b"["):
                events.append(self._perr(offset, line if exit_code is None else s, "not JSON"))
            else:
                try:
                    obj = loads_lenient(s)
                except ValueError as exc:  # UnicodeDecodeError is a ValueError
                    reason = "invalid UTF-8" if isinstance(exc, UnicodeDecodeError) else f"not JSON: {exc}"
                    events.append(self._perr(offset, line if exit_code is None else s, reason))
                else:
                    if isinstance(obj, dict):
                        if self._st["after_exit"]:
                            events.append(self._new_segment(offset))
                        events.extend(self._handle(obj, offset))
                        t = self._time_of(obj)
                        if t is not None:
                            for ev in events:
                                if ev.t is None:
                                    ev.t, ev.t_source = t, T_RECORDED
                    else:
                        events.append(self._perr(offset, line, f"JSON value is not an object ({type(obj).__name__})"))
        if exit_code is not None:
            self._st["after_exit"] = True
            events.append(self._ev(Kind.SEGMENT_END, offset, summary=f"agent process exited with code {exit_code}",
                                   is_error=exit_code != 0,
                                   data={"reason": "exit_marker", "exit_code": exit_code}))
        return events

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:  # pragma: no cover - abstract
        raise NotImplementedError


# ----------------------------------------------------------------------------------------
# codex exec --json


_EXEC_TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}
_USAGE_KEYS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens",
               "reasoning_output_tokens")


class CodexJsonParser(_JsonLinesParser):
    """``codex exec --json`` event stream → events (agent_format ``codex_json``).

    ``thread.started`` → ``session_init`` (a second one in the same segment also
    starts a new segment). Tool items (``command_execution`` → tool ``exec``,
    ``file_change``, ``mcp_tool_call`` → ``<server>.<tool>``, ``web_search``)
    become a ``tool_call`` on ``item.started`` and a ``tool_result`` on
    ``item.completed`` (both from ``item.completed`` when no start was seen);
    ``tool_use_id`` = ``<item id>@s<segment>`` because item ids restart with each
    ``codex exec`` process while a resumed thread keeps its id. ``agent_message``
    / ``reasoning`` / ``error`` items → ``agent_message`` / ``thinking`` /
    ``agent_error``; ``todo_list`` → ``system`` (``data.todo``).
    ``turn.completed`` → ``token_usage``: ``usage`` as reported, plus
    ``data.cumulative`` (True when no counter is smaller than the previous
    turn's, False otherwise, None for the first turn) and ``data.delta``.
    """

    agent_format = "codex_json"

    def _initial_state(self) -> dict[str, Any]:
        return {"thread_id": None, "open": {}, "prev_usage": None}

    def _tid(self, item_id: Any) -> str:
        return f"{item_id}@s{self._st['segment']}"

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:
        typ = obj.get("type")
        if typ == "thread.started":
            tid = obj.get("thread_id")
            out = self._init_record(offset, thread_id=tid, resumed=tid == self._st["thread_id"])
            self._st["thread_id"] = tid
            out.append(self._ev(Kind.SESSION_INIT, offset, summary=one_line(f"codex exec --json thread {tid}"),
                                data={"session_id": tid, "thread_id": tid}))
            return out
        if typ == "turn.started":
            return [self._ev(Kind.SYSTEM, offset, summary="turn started", data={"event": typ})]
        if typ == "turn.completed":
            return [self._turn_usage(obj, offset)]
        if typ == "turn.failed":
            err = obj.get("error")
            msg = err.get("message") if isinstance(err, dict) else err
            return [self._ev(Kind.AGENT_ERROR, offset, is_error=True, summary=one_line(f"turn failed: {msg}"),
                             data={"event": typ, "error": err, "message": msg})]
        if typ == "error":
            msg = obj.get("message")
            return [self._ev(Kind.AGENT_ERROR, offset, is_error=True, summary=one_line(f"error: {msg}"),
                             data={"event": typ, "message": msg})]
        if typ in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if not isinstance(item, dict):
                return [self._ev(Kind.SYSTEM, offset, summary=f"{typ} without item", data={"event": typ, "record": obj})]
            return self._item(typ, item, offset)
        return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"codex event {typ}"), data={"event": typ, "record": obj})]

    def _turn_usage(self, obj: dict[str, Any], offset: int) -> Event:
        raw = obj.get("usage") if isinstance(obj.get("usage"), dict) else {}
        cur = {k: _int_or_none(raw.get(k)) or 0 for k in _USAGE_KEYS}
        prev = self._st.get("prev_usage")
        data: dict[str, Any] = {
            "event": "turn.completed",
            "raw_usage": raw,
            "reasoning_output_tokens": cur["reasoning_output_tokens"],
            "input_includes_cached": True,
            "note": "codex exec --json turn usage may be cumulative over the thread",
        }
        if prev is None:
            data["cumulative"] = None
        else:
            cumulative = all(cur[k] >= (prev.get(k) or 0) for k in _USAGE_KEYS)
            data["cumulative"] = cumulative
            if cumulative:
                data["delta"] = {k: cur[k] - (prev.get(k) or 0) for k in _USAGE_KEYS}
        self._st["prev_usage"] = cur
        # cumulative turn usage: count only this turn's increase
        usage = _usage_from(data["delta"]) if data.get("cumulative") else _usage_from(raw)
        return self._ev(Kind.TOKEN_USAGE, offset, usage=usage, data=data,
                        summary=one_line(f"turn usage: in {cur['input_tokens']} (cached {cur['cached_input_tokens']})"
                                         f" out {cur['output_tokens']}"
                                         + (" (cumulative)" if data.get("cumulative") else "")))

    def _item(self, typ: str, item: dict[str, Any], offset: int) -> list[Event]:
        itype = item.get("type")
        iid = item.get("id")
        mid = iid if isinstance(iid, str) else None
        if itype in _EXEC_TOOL_ITEMS:
            tid = self._tid(iid)
            opened = self._st["open"]
            out: list[Event] = []
            if typ in ("item.started", "item.updated"):
                if tid not in opened:
                    _remember(opened, tid, itype)
                    out.append(self._tool_call(item, tid, offset))
                else:
                    out.append(self._ev(Kind.SYSTEM, offset, tool_use_id=tid, tool_name=itype,
                                        summary=one_line(f"{itype} {typ}"), data={"event": typ, "item": item}))
                return out
            if tid in opened:  # item.completed
                del opened[tid]
            else:
                out.append(self._tool_call(item, tid, offset))
            out.append(self._tool_result(item, tid, offset))
            return out
        if typ == "item.completed" and itype == "agent_message":
            text = item.get("text")
            return [self._ev(Kind.AGENT_MESSAGE, offset, message_id=mid, summary=one_line(text),
                             data={"text": text, "item_id": iid})]
        if typ == "item.completed" and itype == "reasoning":
            text = item.get("text")
            return [self._ev(Kind.THINKING, offset, message_id=mid, summary=one_line(text) or "(reasoning)",
                             data={"text": text, "item_id": iid})]
        if typ == "item.completed" and itype == "error":
            msg = item.get("message")
            return [self._ev(Kind.AGENT_ERROR, offset, is_error=True, summary=one_line(f"error: {msg}"),
                             data={"message": msg, "item_id": iid})]
        if itype == "todo_list":
            items = item.get("items") if isinstance(item.get("items"), list) else []
            done = sum(1 for x in items if isinstance(x, dict) and x.get("completed"))
            nxt = next((x.get("text") for x in items if isinstance(x, dict) and not x.get("completed")), None)
            return [self._ev(Kind.SYSTEM, offset, message_id=mid,
                             summary=one_line(f"todo {done}/{len(items)} done" + (f" · next: {nxt}" if nxt else "")),
                             data={"event": typ, "todo": items, "item_id": iid})]
        # started/updated of message items, unknown item types
        return [self._ev(Kind.SYSTEM, offset, message_id=mid, summary=one_line(f"{typ} {itype}"),
                         data={"event": typ, "item": item})]

    def _tool_call(self, item: dict[str, Any], tid: str, offset: int) -> Event:
        itype = item.get("type")
        data: dict[str, Any] = {"item_id": item.get("id")}
        name = itype or "tool"
        summary = name
        if itype == "command_execution":
            cmd = _command_text(item.get("command"))
            name = "exec"
            data["command"] = cmd
            mode = submit_mode(cmd)
            if mode is not None:
                data["sforge_submit"] = True
                data["submit_mode"] = mode
            summary = f"$ {cmd}"
        elif itype == "file_change":
            changes = item.get("changes") if isinstance(item.get("changes"), list) else []
            data["changes"] = changes
            summary = "file change: " + ", ".join(
                f"{c.get('kind', '?')} {c.get('path', '?')}" for c in changes if isinstance(c, dict))
        elif itype == "mcp_tool_call":
            name = f"{item.get('server')}.{item.get('tool')}"
            data.update(server=item.get("server"), tool=item.get("tool"), arguments=item.get("arguments"))
            summary = f"{name}({one_line(orjson.dumps(item.get('arguments'), default=str).decode(), 100)})"
        elif itype == "web_search":
            data["query"] = item.get("query")
            if "action" in item:
                data["action"] = item.get("action")
            summary = f"web search: {item.get('query')}"
        return self._ev(Kind.TOOL_CALL, offset, tool_use_id=tid, tool_name=name, summary=one_line(summary), data=data)

    def _tool_result(self, item: dict[str, Any], tid: str, offset: int) -> Event:
        itype = item.get("type")
        status = item.get("status")
        data: dict[str, Any] = {"item_id": item.get("id"), "status": status}
        name = itype or "tool"
        exit_code = None
        rnd = summ = None
        content: Any = None
        if itype == "command_execution":
            name = "exec"
            content = item.get("aggregated_output")
            exit_code = _int_or_none(item.get("exit_code"))
            cmd = _command_text(item.get("command"))
            data["command"] = cmd
            data["exit_code"] = exit_code
            is_error = (exit_code is not None and exit_code != 0) or status in ("failed", "declined")
            rnd, summ = submit_fields(content, submit_mode(cmd), data)
        elif itype == "file_change":
            changes = item.get("changes") if isinstance(item.get("changes"), list) else []
            data["changes"] = changes
            content = "\n".join(f"{c.get('kind', '?')} {c.get('path', '?')}" for c in changes if isinstance(c, dict))
            is_error = status == "failed"
        elif itype == "mcp_tool_call":
            name = f"{item.get('server')}.{item.get('tool')}"
            res, err = item.get("result"), item.get("error")
            data.update(result=res, error=err)
            if isinstance(res, dict) and isinstance(res.get("content"), list):
                content = "\n".join(str(c.get("text", "")) for c in res["content"] if isinstance(c, dict))
            elif err is not None:
                content = err.get("message") if isinstance(err, dict) else str(err)
            is_error = err is not None or status == "failed"
        else:  # web_search
            data["query"] = item.get("query")
            content = item.get("query")
            is_error = status == "failed"
        data["content"] = content
        return self._ev(Kind.TOOL_RESULT, offset, tool_use_id=tid, tool_name=name, is_error=bool(is_error), round=rnd,
                        data=data, summary=one_line(summ) if summ else _tool_result_summary(name, exit_code, content, is_error))


# ----------------------------------------------------------------------------------------
# rollout files

_ROLLOUT_TOP = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_RESPONSE_ITEM_TYPES = {
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "tool_search_call",
    "tool_search_output", "image_generation_call",
}
# event_msg types that only mirror a response_item (or stream deltas of one)
_MIRROR_EVENTS = {
    "agent_message", "user_message", "agent_reasoning", "agent_reasoning_raw_content",
    "agent_reasoning_section_break", "agent_message_delta", "agent_reasoning_delta",
    "agent_reasoning_raw_content_delta", "exec_command_begin", "exec_command_output_delta",
    "patch_apply_begin", "mcp_tool_call_begin", "mcp_tool_call_end", "web_search_begin",
    "web_search_end", "raw_response_item", "item_started", "item_completed",
}
_CONTEXT_PREFIXES = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
                     "<permissions instructions>", "<user_shell_command>", "<turn_aborted>")
_SHELL_FUNCS = {"shell", "exec_command", "local_shell", "container.exec", "shell_command", "unified_exec"}
_EXIT_TEXT_RE = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)", re.M)
_WALL_RE = re.compile(r"^Wall time:\s*([0-9.]+)\s*seconds", re.M)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for c in content:
            if isinstance(c, dict):
                t = c.get("text")
                if isinstance(t, str):
                    parts.append(t)
                elif c.get("type") in ("input_image", "image"):
                    parts.append("[image]")
            elif isinstance(c, str):
                parts.append(c)
        return "\n".join(parts)
    return "" if content is None else str(content)


class CodexRolloutParser(_JsonLinesParser):
    """Codex rollout / session file → events (agent_format ``codex_rollout``).

    ``t`` comes from each line's ``timestamp`` (recorded). ``session_meta`` →
    ``session_init``; ``turn_context`` → ``system`` (model, cwd, policies; the
    model is then set on later agent events); ``response_item`` message →
    ``agent_message`` / ``user_message`` (environment-context and developer
    messages → ``system`` with ``data.context``); reasoning → ``thinking``
    (encrypted content is not kept); ``function_call`` (arguments parsed from
    their JSON string), ``custom_tool_call`` (patch text in ``data.patch``),
    ``local_shell_call``, ``web_search_call`` → ``tool_call``;
    ``function_call_output`` / ``custom_tool_call_output`` → ``tool_result``,
    paired by ``call_id`` (= ``tool_use_id``), exit code read from the output
    text (``Process exited with code N`` / ``Exit code: N``) or from a preceding
    ``exec_command_end``. ``event_msg/token_count`` → ``token_usage`` with
    ``info.last_token_usage`` (a repeated count whose ``total_token_usage`` did not
    change keeps ``usage`` empty and says ``data.repeat``); ``compacted`` →
    ``compaction``.
    """

    agent_format = "codex_rollout"

    def _initial_state(self) -> dict[str, Any]:
        # calls: call_id -> [tool_name, submit_mode]; ends: call_id -> {exit_code, duration_ms, status}
        return {"model": None, "calls": {}, "ends": {}, "last_total": None}

    def _time_of(self, obj: dict[str, Any]) -> Optional[float]:
        return iso_to_epoch(obj.get("timestamp"))

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:
        typ = obj.get("type")
        payload = obj.get("payload")
        if typ not in _ROLLOUT_TOP:
            if typ in _RESPONSE_ITEM_TYPES:  # early rollouts: bare response items
                typ, payload = "response_item", obj
            elif typ is None and "id" in obj and "instructions" in obj:  # early rollouts: first line
                typ, payload = "session_meta", obj
        if not isinstance(payload, dict):
            payload = {} if payload is None else {"value": payload}
        if typ == "response_item":
            return self._response_item(payload, offset)
        if typ == "event_msg":
            return self._event_msg(payload, offset)
        if typ == "session_meta":
            return self._session_meta(payload, offset)
        if typ == "turn_context":
            return self._turn_context(payload, offset)
        if typ == "compacted":
            msg = payload.get("message")
            hist = payload.get("replacement_history")
            return [self._ev(Kind.COMPACTION, offset, summary=one_line(f"context compacted: {msg or ''}"),
                             data={"message": msg,
                                   "replacement_history_items": len(hist) if isinstance(hist, list) else None})]
        return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"rollout record {typ}"), data={"record": obj})]

    # -- records ------------------------------------------------------------------------------

    def _session_meta(self, p: dict[str, Any], offset: int) -> list[Event]:
        sid = p.get("id") or p.get("session_id")
        out = self._init_record(offset, session_id=sid)
        if isinstance(p.get("model"), str):
            self._st["model"] = p["model"]
        data = {k: v for k, v in p.items() if k not in ("base_instructions", "instructions")}
        bi = p.get("base_instructions")
        data["session_id"] = sid
        data["base_instructions"] = bi.get("text") if isinstance(bi, dict) else bi
        if "instructions" in p:
            data["instructions"] = p.get("instructions")
        out.append(self._ev(Kind.SESSION_INIT, offset, model=self._st["model"], data=data,
                            summary=one_line(f"Codex {p.get('cli_version') or ''} session {sid} "
                                             f"({p.get('originator') or p.get('source') or ''}) cwd {p.get('cwd')}")))
        return out

    def _turn_context(self, p: dict[str, Any], offset: int) -> list[Event]:
        if isinstance(p.get("model"), str):
            self._st["model"] = p["model"]
        data = {k: p.get(k) for k in ("turn_id", "cwd", "model", "effort", "approval_policy", "sandbox_policy",
                                      "summary", "current_date", "timezone") if k in p}
        cm = p.get("collaboration_mode")
        if isinstance(cm, dict) and isinstance(cm.get("settings"), dict):
            data.setdefault("effort", cm["settings"].get("reasoning_effort"))
            data["collaboration_mode"] = cm.get("mode")
        return [self._ev(Kind.SYSTEM, offset, model=self._st["model"], data={"event": "turn_context", **data},
                         summary=one_line(f"turn context: model {p.get('model')} · cwd {p.get('cwd')}"
                                          f" · approval {p.get('approval_policy')}"))]

    def _response_item(self, p: dict[str, Any], offset: int) -> list[Event]:
        it = p.get("type")
        model = self._st["model"]
        if it == "message":
            role = p.get("role")
            text = _content_text(p.get("content"))
            data: dict[str, Any] = {"role": role, "text": text}
            if p.get("phase"):
                data["phase"] = p["phase"]
            mid = p.get("id") if isinstance(p.get("id"), str) else None
            if role == "assistant":
                return [self._ev(Kind.AGENT_MESSAGE, offset, model=model, message_id=mid, data=data,
                                 summary=one_line(text))]
            if role == "user" and not text.lstrip().startswith(_CONTEXT_PREFIXES):
                return [self._ev(Kind.USER_MESSAGE, offset, message_id=mid, data=data, summary=one_line(text))]
            data["context"] = True
            return [self._ev(Kind.SYSTEM, offset, message_id=mid, data=data, summary=one_line(f"[{role}] {text}"))]
        if it == "reasoning":
            summ = _content_text(p.get("summary"))
            body = _content_text(p.get("content")) if p.get("content") else ""
            text = "\n\n".join(x for x in (summ, body) if x)
            data = {"text": text, "summary_text": summ, "encrypted": bool(p.get("encrypted_content"))}
            if body:
                data["content_text"] = body
            return [self._ev(Kind.THINKING, offset, model=model,
                             message_id=p.get("id") if isinstance(p.get("id"), str) else None, data=data,
                             summary=one_line(text) if text else "(encrypted reasoning)")]
        if it in ("function_call", "custom_tool_call", "local_shell_call"):
            return [self._call(p, offset)]
        if it in ("function_call_output", "custom_tool_call_output"):
            return [self._output(p, offset)]
        if it == "web_search_call":
            action = p.get("action")
            q = action.get("query") if isinstance(action, dict) else None
            return [self._ev(Kind.TOOL_CALL, offset, tool_name="web_search",
                             tool_use_id=p.get("id") or f"web_search@{offset}",
                             data={"action": action, "query": q, "status": p.get("status")},
                             summary=one_line(f"web search: {q}"))]
        return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"response item {it}"), data={"item": p})]

    def _call(self, p: dict[str, Any], offset: int) -> Event:
        it = p.get("type")
        cid = p.get("call_id") or p.get("id") or f"call@{offset}"
        data: dict[str, Any] = {"call_id": cid}
        cmd: Optional[str] = None
        if it == "function_call":
            name = p.get("name") or "function"
            raw = p.get("arguments")
            args: Any = raw
            if isinstance(raw, str):
                try:
                    args = loads_lenient(raw)
                except ValueError:
                    args = raw
                    data["arguments_invalid_json"] = True
            data["arguments"] = args
            if isinstance(args, dict):
                c = args.get("cmd", args.get("command"))
                if c is not None and (name in _SHELL_FUNCS or "cmd" in args):
                    cmd = _command_text(c)
                if args.get("workdir") is not None:
                    data["cwd"] = args.get("workdir")
            if cmd is not None:
                summary = f"{name}: $ {cmd}"
            else:
                shown = raw if isinstance(raw, str) else orjson.dumps(raw, default=str).decode()
                summary = f"{name}({one_line(shown, 120)})"
        elif it == "custom_tool_call":
            name = p.get("name") or "custom_tool"
            inp = p.get("input")
            data["input"] = inp
            if name == "apply_patch" and isinstance(inp, str):
                files = re.findall(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", inp, re.M)
                data["patch"] = inp
                data["files"] = files
                summary = f"apply_patch: {', '.join(files)}"
            else:
                summary = f"{name}: {_first_line(inp)}"
        else:  # local_shell_call
            name = "local_shell"
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            cmd = _command_text(action.get("command"))
            data["action"] = action
            if action.get("working_directory"):
                data["cwd"] = action.get("working_directory")
            summary = f"local_shell: $ {cmd}"
        if p.get("status"):
            data["status"] = p.get("status")
        mode = None
        if cmd is not None:
            data["command"] = cmd
            mode = submit_mode(cmd)
            if mode is not None:
                data["sforge_submit"] = True
                data["submit_mode"] = mode
        _remember(self._st["calls"], cid, [name, mode])
        return self._ev(Kind.TOOL_CALL, offset, tool_use_id=cid, tool_name=name, model=self._st["model"],
                        data=data, summary=one_line(summary))

    def _output(self, p: dict[str, Any], offset: int) -> Event:
        cid = p.get("call_id") or f"call@{offset}"
        name, mode = self._st["calls"].pop(cid, None) or [None, None]
        end = self._st["ends"].pop(cid, None)
        out = p.get("output")
        data: dict[str, Any] = {"call_id": cid}
        exit_code: Optional[int] = None
        is_error: Optional[bool] = None
        content: Any
        if isinstance(out, str):
            content = out
            if out.startswith('{"output"'):  # old shell tool: JSON with output + metadata
                try:
                    j = loads_lenient(out)
                except ValueError:
                    j = None
                if isinstance(j, dict) and isinstance(j.get("output"), str):
                    content = j["output"]
                    meta = j.get("metadata") if isinstance(j.get("metadata"), dict) else {}
                    exit_code = _int_or_none(meta.get("exit_code"))
                    dur, _flag = finite_or_none(meta.get("duration_seconds"))
                    if dur is not None:
                        data["duration_ms"] = round(dur * 1000)
        elif isinstance(out, dict):
            c = out.get("content")
            content = c if isinstance(c, str) else _content_text(c)
            if out.get("success") is False:
                is_error = True
            data["output_payload"] = out
        else:
            content = _content_text(out)
        shown = content
        if isinstance(content, str):
            # exec_command / apply_patch output: "Chunk ID: ..\nWall time: ..\nProcess exited with code N\n
            # Original token count: ..\nOutput:\n<text>" — all of it stays in content, the text also in data.output
            cut = content.find("Output:\n", 0, 600)
            if cut >= 0 and (cut == 0 or content[cut - 1] == "\n"):
                preamble = content[:cut]
                if all(": " in ln or ln.startswith("Process ") for ln in preamble.splitlines()):
                    data["output"] = shown = content[cut + len("Output:\n"):]
                    m = _WALL_RE.search(preamble)
                    if m:
                        data["wall_time_s"] = float(m.group(1))
            if exit_code is None:
                m = _EXIT_TEXT_RE.search(content[:600])
                if m:
                    exit_code = int(m.group(1))
        if end:
            if exit_code is None:
                exit_code = end.get("exit_code")
            if end.get("duration_ms") is not None:
                data.setdefault("duration_ms", end.get("duration_ms"))
            if end.get("status"):
                data["status"] = end["status"]
        if exit_code is not None:
            data["exit_code"] = exit_code
            if is_error is None:
                is_error = exit_code != 0
        data["content"] = content
        rnd, summ = submit_fields(data.get("output", content), mode, data)
        return self._ev(Kind.TOOL_RESULT, offset, tool_use_id=cid, tool_name=name, is_error=is_error, round=rnd,
                        data=data,
                        summary=one_line(summ) if summ else _tool_result_summary(name, exit_code, shown, is_error))

    def _event_msg(self, p: dict[str, Any], offset: int) -> list[Event]:
        et = p.get("type")
        if et == "token_count":
            return [self._token_count(p, offset)]
        if et in ("exec_command_end", "patch_apply_end"):
            cid = p.get("call_id")
            if isinstance(cid, str) and cid in self._st["calls"]:
                # output not seen yet: lend exit code / duration to the coming function_call_output
                dur = p.get("duration")
                dms = None
                if isinstance(dur, dict):
                    dms = round((_int_or_none(dur.get("secs")) or 0) * 1000
                                + (_int_or_none(dur.get("nanos")) or 0) / 1e6, 3)
                code = _int_or_none(p.get("exit_code"))
                if code is None and et == "patch_apply_end" and isinstance(p.get("success"), bool):
                    code = 0 if p["success"] else 1
                _remember(self._st["ends"], cid, {"exit_code": code, "duration_ms": dms, "status": p.get("status")})
                return []
            return [self._ev(Kind.SYSTEM, offset, tool_use_id=cid if isinstance(cid, str) else None,
                             summary=one_line(f"{et} exit {p.get('exit_code')}"), data={"event": et, "payload": p})]
        if et in _MIRROR_EVENTS:
            return []
        if et == "error":
            msg = p.get("message")
            return [self._ev(Kind.AGENT_ERROR, offset, is_error=True, summary=one_line(f"error: {msg}"),
                             data={"event": et, "message": msg, "payload": p})]
        if et == "stream_error":
            msg = p.get("message")
            return [self._ev(Kind.SYSTEM, offset, level="warning", summary=one_line(f"stream error: {msg}"),
                             data={"event": et, "message": msg, "payload": p})]
        if et == "task_started":
            return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"task started (turn {p.get('turn_id')})"),
                             data={"event": et, **p})]
        if et == "task_complete":
            last = p.get("last_agent_message")
            return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"task complete: {last or ''}"),
                             data={"event": et, **p})]
        if et == "turn_aborted":
            return [self._ev(Kind.SYSTEM, offset, level="warning", summary=one_line(f"turn aborted: {p.get('reason')}"),
                             data={"event": et, **p})]
        if et == "context_compacted":
            return [self._ev(Kind.COMPACTION, offset, summary="context compacted", data={"event": et, **p})]
        return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"event {et}"), data={"event": et, "payload": p})]

    def _token_count(self, p: dict[str, Any], offset: int) -> Event:
        info = p.get("info")
        if not isinstance(info, dict):
            return self._ev(Kind.SYSTEM, offset, summary="rate limits",
                            data={"event": "token_count", "rate_limits": p.get("rate_limits")})
        last = info.get("last_token_usage")
        total = info.get("total_token_usage")
        tot = _int_or_none(total.get("total_tokens")) if isinstance(total, dict) else None
        data: dict[str, Any] = {
            "event": "token_count",
            "last_token_usage": last,
            "total_token_usage": total,
            "model_context_window": info.get("model_context_window"),
            "rate_limits": p.get("rate_limits"),
            "input_includes_cached": True,
        }
        usage = _usage_from(last)
        if tot is not None and tot == self._st.get("last_total"):
            data["repeat"] = True  # same running total: this count adds nothing
            usage = None
        if tot is not None:
            self._st["last_total"] = tot
        lu = last if isinstance(last, dict) else {}
        return self._ev(Kind.TOKEN_USAGE, offset, model=self._st["model"], usage=usage, data=data,
                        summary=one_line(f"tokens: in {lu.get('input_tokens')} (cached {lu.get('cached_input_tokens')})"
                                         f" out {lu.get('output_tokens')} · total {tot}"
                                         + (" (repeat)" if data.get("repeat") else "")))


# ----------------------------------------------------------------------------------------
# human-readable codex exec output


_TEXT_MARKERS = {
    "user": "user",
    "codex": "codex",
    "thinking": "thinking",
    "exec": "exec",
    "tokens used": "tokens",
    "file update": "file_update",
}
_HEADER_RE = re.compile(r"^OpenAI Codex v(\S+)")
_STDIN_NOTICE = "Reading additional input from stdin"
_DASHES = "--------"
_STATUS_RE = re.compile(
    r"^\s*(?:(succeeded)|exited (-?\d+)|(failed)) in "
    r"(\d+(?:\.\d+)?\s*(?:ms|s|m)(?:\s*\d+(?:\.\d+)?\s*(?:ms|s))?):?\s*$"
)
_CWD_RE = re.compile(r"^(.*) in (/[^\n]*?)\s*$", re.S)
_DUR_PART_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m)")
_TOKENS_INLINE_RE = re.compile(r"^tokens used:?\s*([\d,._]+)\s*$")
_MAX_BAD_LINES = 100


def _duration_ms(text: str) -> Optional[float]:
    total = 0.0
    found = False
    for num, unit in _DUR_PART_RE.findall(text):
        found = True
        v = float(num)
        total += v if unit == "ms" else v * 1000 if unit == "s" else v * 60000
    if not found:
        return None
    total = round(total, 3)
    return int(total) if total.is_integer() else total


class _Block:
    __slots__ = ("kind", "offset", "lines", "bad", "dashes")

    def __init__(self, kind: str, offset: int):
        self.kind = kind
        self.offset = offset
        self.lines: list[str] = []
        self.bad: list[tuple[int, bytes]] = []
        self.dashes = 0


class CodexTextParser:
    """Human-readable ``codex exec`` output → events (agent_format ``codex_text``, §6.3).

    Header → ``session_init`` (``model`` from ``model:``; the key/value lines in
    ``data``, keys with ``_`` for spaces, ``data.cwd`` = workdir); a second header
    (resumed segment) first emits ``segment_start``. ``user`` →
    ``user_message``; ``codex`` → ``agent_message``; ``thinking`` → ``thinking``;
    ``exec`` → ``tool_call`` (tool ``exec``, ``data.command``, ``data.cwd``) +
    ``tool_result`` (``data.content``, ``data.exit_code``, ``data.duration_ms``,
    ``is_error`` = exit code ≠ 0) sharing ``tool_use_id = exec@<offset>``; an exec
    block cut before its status line gives the call only (``data.incomplete``).
    ``tokens used`` → ``token_usage`` with ``data.total_tokens`` only (no split);
    ``file update`` → ``system``. ``__SFORGE_EXIT__<n>`` → ``segment_end``.
    Lines outside any block are ``log`` events (an ``ERROR: ...`` one is
    ``agent_error``); lines inside a block fold into it, as in SForge's
    visualizer. An invalid UTF-8 line is decoded with replacement characters
    into its block and also kept as a ``parse_error`` (emitted with the block).

    ``state()`` = ``{"segment", "seg_header", "after_exit", "model"}`` describes
    the parser before the open block, whose first line is ``resume_offset()``.
    """

    agent_format = "codex_text"

    def __init__(self, source: str, generation: str, state: Optional[dict[str, Any]] = None):
        self.source = source
        self.generation = generation
        self._st: dict[str, Any] = {"segment": 0, "seg_header": False, "after_exit": False, "model": None}
        if state:
            self._st.update(_copy_state(state))
        self._open: Optional[_Block] = None

    # -- protocol -------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return _copy_state(self._st)

    def resume_offset(self) -> Optional[int]:
        return self._open.offset if self._open is not None else None

    def feed(self, line: bytes, offset: int) -> list[Event]:
        try:
            return self._feed(line, offset)
        except Exception as exc:  # noqa: BLE001 - never raise from feed()
            self._open = None
            return [self._perr(offset, bytes(line), f"codex_text parser failure: {type(exc).__name__}: {exc}")]

    def finish(self) -> list[Event]:
        try:
            return self._flush()
        except Exception as exc:  # noqa: BLE001 - never raise from finish()
            blk, self._open = self._open, None
            off = blk.offset if blk else 0
            return [self._perr(off, b"", f"codex_text parser failure at finish: {type(exc).__name__}: {exc}")]

    # -- line handling --------------------------------------------------------------------------

    def _feed(self, line: bytes, offset: int) -> list[Event]:
        raw = bytes(line)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        bad = False
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            bad = True
        if "\x1b" in text:
            text = _ANSI_RE.sub("", text)
        out: list[Event] = []

        # __SFORGE_EXIT__<n> (possibly glued to the last output line)
        if "__SFORGE_EXIT__" in text:
            m = _SFORGE_EXIT_RE.search(raw)
            if m:
                prefix = text[: text.find("__SFORGE_EXIT__")]
                if prefix.strip():
                    if self._open is not None:
                        self._add_line(prefix, offset, raw, bad)
                    else:
                        out.extend(self._single(Kind.LOG, offset, prefix, raw if bad else None))
                out.extend(self._flush())
                code = int(m.group(1))
                ev = self._mk(Kind.SEGMENT_END, offset, summary=f"agent process exited with code {code}",
                              is_error=code != 0, level="error" if code != 0 else None,
                              data={"reason": "exit_marker", "exit_code": code})
                ev.sub = sum(1 for e in out if e.offset == offset)
                out.append(ev)
                self._st["after_exit"] = True
                return out

        stripped = text.strip()
        blk = self._open
        marker = _TEXT_MARKERS.get(stripped) if text == stripped else None
        is_head = _HEADER_RE.match(stripped) is not None
        is_notice = stripped.startswith(_STDIN_NOTICE)

        # inside an unfinished header: dashes and key: value lines fold into it
        if blk is not None and blk.kind == "header" and marker is None:
            has_head = any(_HEADER_RE.match(x.strip()) for x in blk.lines)
            if not ((is_head or is_notice) and has_head):
                if stripped == _DASHES:
                    blk.dashes += 1
                    blk.lines.append(text)
                    return self._flush() if blk.dashes >= 2 else out
                self._add_line(text, offset, raw, bad)
                return out
        if is_head or is_notice:
            out.extend(self._flush())
            nb = _Block("header", offset)
            nb.lines.append(text)
            self._open = nb
            return out

        if marker is None and (blk is None or blk.kind != "exec"):
            m = _TOKENS_INLINE_RE.match(stripped)
            if m:  # one-line "tokens used: 1234"
                out.extend(self._flush())
                nb = _Block("tokens", offset)
                nb.lines.append(m.group(1))
                self._open = nb
                out.extend(self._flush())
                return out
        if marker is not None:
            out.extend(self._flush())
            self._open = _Block(marker, offset)
            return out

        if self._open is not None:
            self._add_line(text, offset, raw, bad)
            return out

        # a line outside any block
        if not stripped:
            return out
        if stripped.startswith(("ERROR:", "ERROR ")):
            return self._single(Kind.AGENT_ERROR, offset, text, raw if bad else None, is_error=True, level="error")
        return self._single(Kind.LOG, offset, text, raw if bad else None)

    def _add_line(self, text: str, offset: int, raw: bytes, bad: bool) -> None:
        blk = self._open
        assert blk is not None
        blk.lines.append(text)
        if bad:
            blk.bad.append((offset, raw))

    def _single(self, kind: Kind, offset: int, text: str, bad_raw: Optional[bytes], **kw: Any) -> list[Event]:
        out = self._segment_after_exit(offset)
        ev = self._mk(kind, offset, summary=one_line(text), data={"text": text}, **kw)
        out.append(ev)
        if bad_raw is not None:
            ev.data["invalid_utf8"] = True
            out.append(self._perr(offset, bad_raw, "invalid UTF-8"))
        for i, e in enumerate(out):
            e.sub = i
        return out

    def _mk(self, kind: Kind, offset: int, **kw: Any) -> Event:
        kw.setdefault("segment", self._st["segment"])
        return Event(kind=kind, source=self.source, generation=self.generation, offset=offset,
                     agent_format=self.agent_format, **kw)

    def _perr(self, offset: int, raw: bytes, reason: str) -> Event:
        ev = parse_error(self.source, self.generation, offset, raw, reason)
        ev.agent_format = self.agent_format
        ev.segment = self._st["segment"]
        return ev

    def _new_segment(self, offset: int, **data: Any) -> Event:
        st = self._st
        st["segment"] += 1
        st["seg_header"] = False
        st["after_exit"] = False
        return self._mk(Kind.SEGMENT_START, offset, summary=f"segment {st['segment']} starts",
                        data={"segment": st["segment"], **data})

    def _segment_after_exit(self, offset: int) -> list[Event]:
        return [self._new_segment(offset)] if self._st["after_exit"] else []

    # -- block emission -------------------------------------------------------------------------

    def _flush(self) -> list[Event]:
        blk = self._open
        if blk is None:
            return []
        self._open = None
        if blk.kind == "header":
            events = self._emit_header(blk)
        else:
            events = self._segment_after_exit(blk.offset)
            events.extend(getattr(self, f"_emit_{blk.kind}")(blk))
        for i, ev in enumerate(events):
            ev.sub = i
        if blk.bad:
            for ev in events:
                ev.data["invalid_utf8_lines"] = len(blk.bad)
            for off, raw in blk.bad[:_MAX_BAD_LINES]:
                events.append(self._perr(off, raw, "invalid UTF-8 in codex text block"))
        return events

    @staticmethod
    def _body(blk: _Block) -> str:
        lines = blk.lines
        end = len(lines)
        while end and not lines[end - 1].strip():
            end -= 1
        start = 0
        while start < end and not lines[start].strip():
            start += 1
        return "\n".join(lines[start:end])

    def _emit_header(self, blk: _Block) -> list[Event]:
        version = None
        kv: dict[str, str] = {}
        stdin_notice = False
        dashes = 0
        extra: list[str] = []
        for ln in blk.lines:
            s = ln.strip()
            m = _HEADER_RE.match(s)
            if m and version is None:
                version = m.group(1)
            elif s.startswith(_STDIN_NOTICE):
                stdin_notice = True
            elif s == _DASHES:
                dashes += 1
            elif dashes == 1 and ":" in s:
                k, _, v = s.partition(":")
                kv[k.strip().replace(" ", "_")] = v.strip()
            elif s:
                extra.append(ln)
        if version is None:  # a lone "Reading additional input from stdin..." (and noise)
            out = self._segment_after_exit(blk.offset)
            out.append(self._mk(Kind.SYSTEM, blk.offset, summary=one_line(blk.lines[0] if blk.lines else ""),
                                data={"text": "\n".join(blk.lines)}))
            return out
        st = self._st
        out = []
        if st["seg_header"] or st["after_exit"]:
            out.append(self._new_segment(blk.offset, session_id=kv.get("session_id"), resumed=True))
        st["seg_header"] = True
        if kv.get("model"):
            st["model"] = kv["model"]
        data: dict[str, Any] = {"codex_version": version, **kv}
        if "workdir" in kv:
            data["cwd"] = kv["workdir"]
        if "session_id" in kv:
            data["session_id"] = kv["session_id"]
        if stdin_notice:
            data["stdin_notice"] = True
        if dashes < 2:
            data["incomplete_header"] = True
        if extra:
            data["extra_lines"] = extra
        out.append(self._mk(Kind.SESSION_INIT, blk.offset, model=kv.get("model"), data=data,
                            summary=one_line(f"Codex v{version} · model {kv.get('model')} · session "
                                             f"{kv.get('session_id')} · {kv.get('workdir')}")))
        return out

    def _emit_user(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [self._mk(Kind.USER_MESSAGE, blk.offset, summary=one_line(text), data={"text": text})]

    def _emit_codex(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [self._mk(Kind.AGENT_MESSAGE, blk.offset, model=self._st["model"], summary=one_line(text),
                         data={"text": text})]

    def _emit_thinking(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [self._mk(Kind.THINKING, blk.offset, model=self._st["model"], summary=one_line(text),
                         data={"text": text})]

    def _emit_file_update(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [self._mk(Kind.SYSTEM, blk.offset, summary=one_line(f"file update: {_first_line(text)}"),
                         data={"block": "file update", "text": text})]

    def _emit_tokens(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        digits = re.sub(r"[,._\s]", "", _first_line(text))
        total = int(digits) if digits.isdigit() else None
        return [self._mk(Kind.TOKEN_USAGE, blk.offset, model=self._st["model"],
                         summary=f"tokens used: {total if total is not None else one_line(text)}",
                         data={"total_tokens": total, "text": text,
                               "note": "codex text prints only a total; no input/output split"})]

    def _emit_exec(self, blk: _Block) -> list[Event]:
        lines = blk.lines
        status_i = None
        for i, ln in enumerate(lines):
            if _STATUS_RE.match(ln):
                status_i = i
                break
        head_lines = lines if status_i is None else lines[:status_i]
        while head_lines and not head_lines[0].strip():
            head_lines = head_lines[1:]
        head = "\n".join(head_lines).rstrip()
        m = _CWD_RE.match(head)
        if m:
            command, cwd = m.group(1).strip(), m.group(2).strip()
        else:
            command, cwd = head.strip(), None
        tid = f"exec@{blk.offset}"
        call_data: dict[str, Any] = {"command": command, "cwd": cwd}
        mode = submit_mode(command)
        if mode is not None:
            call_data["sforge_submit"] = True
            call_data["submit_mode"] = mode
        if status_i is None:
            call_data["incomplete"] = True  # no status line: the process was cut off mid-command
        out = [self._mk(Kind.TOOL_CALL, blk.offset, tool_use_id=tid, tool_name="exec", data=call_data,
                        summary=one_line(f"$ {command}"))]
        if status_i is None:
            return out
        sm = _STATUS_RE.match(lines[status_i])
        assert sm is not None
        if sm.group(1):
            exit_code: Optional[int] = 0
        elif sm.group(2) is not None:
            exit_code = int(sm.group(2))
        else:
            exit_code = None
        body_lines = lines[status_i + 1 :]
        end = len(body_lines)
        while end and not body_lines[end - 1].strip():
            end -= 1
        content = "\n".join(body_lines[:end])
        is_error = exit_code != 0
        res_data: dict[str, Any] = {
            "content": content,
            "exit_code": exit_code,
            "duration_ms": _duration_ms(sm.group(4)),
            "status_line": lines[status_i].strip(),
            "command": command,
        }
        rnd, summ = submit_fields(content, mode, res_data)
        out.append(self._mk(Kind.TOOL_RESULT, blk.offset, tool_use_id=tid, tool_name="exec", is_error=is_error,
                            level="error" if is_error else None, round=rnd, data=res_data,
                            summary=one_line(summ) if summ else _tool_result_summary("exec", exit_code, content, is_error)))
        return out
