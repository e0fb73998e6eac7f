"""The Codex protocol's ``EventMsg`` vocabulary → events.

Two Codex files speak it: the first ``codex exec --json`` dialect (one ``{"id": <submission
id>, "msg": {"type": ..., ...}}`` per line, until openai/codex PR #4525) and the
``event_msg`` records of rollout files (``{"type": "event_msg", "payload": {"type": ...}}``).
Shapes (source: openai/codex ``codex-rs/protocol/src/protocol.rs`` at commit
``7fc3edf8a723e9e395876e3db4a2648e5e106ae2``'s parent, ``EventMsg`` serialised with
``tag = "type"``, snake_case; ``tests/fixtures/codex_dialects/README.md`` cites each fixture):

* ``agent_message`` {message} → ``agent_message``; ``user_message`` {message, kind?} →
  ``user_message`` (``kind`` ``user_instructions`` / ``environment_context``, or a context
  prefix, → ``system`` with ``data.context``); ``agent_reasoning`` /
  ``agent_reasoning_raw_content`` {text} → ``thinking``;
* ``exec_command_begin`` {call_id, command: argv, cwd} → ``tool_call`` (tool ``exec``) and
  ``exec_command_end`` {call_id, stdout, stderr, aggregated_output, exit_code, duration
  {secs, nanos}} → ``tool_result``; ``patch_apply_begin`` {call_id, changes: {path: {add |
  delete | update: …}}} / ``patch_apply_end`` {call_id, stdout, stderr, success} → tool
  ``apply_patch``; ``mcp_tool_call_begin`` / ``_end`` {call_id, invocation {server, tool,
  arguments}, result {Ok: CallToolResult} | {Err: text}} → tool ``<server>.<tool>``;
  ``web_search_begin`` {call_id} / ``web_search_end`` {call_id, query} → tool
  ``web_search``. ``tool_use_id`` = ``call_id``; an end without its begin gives both events;
* ``token_count`` → ``token_usage``: ``info.last_token_usage`` (one model response; a
  repeated count whose ``info.total_token_usage.total_tokens`` did not change keeps
  ``usage`` empty and says ``data.repeat``), or the early flat form (the usage fields on the
  message itself, one per model response: ``EventMsg::TokenCount(TokenUsage)`` at commit
  ``e16657ca4``). Input includes cached input, as OpenAI reports it (see ``usage_from``);
* ``session_configured`` → ``session_init``; ``error`` → ``agent_error``; the rest
  (task start/complete, aborts, stream errors, deltas, approvals, diffs…) → ``system``
  with the whole message in ``data.payload``: no record is left without an event.

A cut-off stream (see :meth:`EventMsgParser.finish`) ends with a ``segment_end`` whose
``data.reason`` is ``ended_after_tool_call`` (a tool call without its result is the last
word of the segment, as in a rollout killed mid-command) or ``no_turn_complete`` (a turn
began and its completion record never came, where the stream records completions: rollouts
written since openai/codex commit ``641d5268fa581bbdff401e5e8e8cc346976b92fd``, PR #11246,
``codex-rs/core/src/rollout/policy.rs`` persisting ``TurnStarted`` / ``TurnComplete`` as
``task_started`` / ``task_complete``; the item dialects of ``codex exec --json`` with
``turn.started`` / ``turn.completed``). The protocol dialect of ``exec --json`` printed
``task_complete`` in its first builds only (``codex-rs/exec/src/event_processor_with_json_output.rs``
prints every event but deltas at commit ``e16657ca``, and swallows ``task_complete`` at
``01e65036``), and older rollouts never persisted it, so there only an unanswered tool call
tells a cut. An exit marker, a turn abort or an
``error`` record is an ending, not a cut.
"""

from __future__ import annotations

from typing import Any, Optional

import orjson

from edgetui.events import Event, Kind, TimeSource, one_line
from edgetui.parsers.base import END_OF_FILE_SUB
from edgetui.parsers.codex_common import (
    JsonLinesParser,
    command_text,
    first_line,
    int_or_none,
    remember,
    submit_fields,
    submit_mode,
    tool_result_summary,
    usage_from,
)
from edgetui.parsers.json_fields import dict_at, list_at, str_at

__all__ = ["CONTEXT_PREFIXES", "CONVERSATION_EVENTS", "EventMsgParser", "duration_ms", "plan_summary"]

#: user texts that are context Codex adds, not what the user typed
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
)
#: EventMsg types that carry the conversation (messages, reasoning, tool calls and results)
CONVERSATION_EVENTS = frozenset(
    {
        "agent_message",
        "user_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "exec_command_begin",
        "exec_command_end",
        "patch_apply_begin",
        "patch_apply_end",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "web_search_begin",
        "web_search_end",
    }
)
_FLAT_USAGE_KEYS = ("input_tokens", "output_tokens", "total_tokens")


def duration_ms(dur: Any) -> Optional[float]:
    """A serde ``Duration`` (``{"secs": s, "nanos": n}``) → milliseconds; ``None`` otherwise."""
    if not isinstance(dur, dict):
        return None
    return round((int_or_none(dur.get("secs")) or 0) * 1000 + (int_or_none(dur.get("nanos")) or 0) / 1e6, 3)


class EventMsgParser(JsonLinesParser):
    """A :class:`~edgetui.parsers.codex_common.JsonLinesParser` that reads ``EventMsg`` messages:
    :meth:`_protocol` turns one message into its events. State keys: ``model`` (set by
    ``session_configured``), ``last_total`` (the running token total) and ``pcalls``
    (``call_id`` → ``[tool name, submit mode]`` of begun calls); subclasses extend
    :meth:`_initial_state`."""

    #: whether ``task_started`` in this file promises a ``task_complete`` (rollouts since PR #11246)
    TASK_COMPLETE_RECORDED = False
    #: the record whose absence :meth:`finish` reports as ``no_turn_complete``
    TURN_END_RECORD = "task_complete"

    def _initial_state(self) -> dict[str, Any]:
        # the open segment, for finish(): records seen, the last one's offset and time; a turn begun
        # and not yet ended (only where the stream records turn ends); tool calls without a result
        return {
            "model": None,
            "last_total": None,
            "pcalls": {},
            "seg_records": 0,
            "last_off": None,
            "last_t": None,
            "turn_open": False,
            "pending": [],
            "turns": [],
        }

    # -- cut-off streams ------------------------------------------------------------------------

    def finish(self) -> list[Event]:
        """At the end of a finished file: the ``segment_end`` of a segment that was cut off, with
        ``data.reason`` ``ended_after_tool_call`` (``data.unanswered_tool_calls`` lists their
        ``tool_use_id``) or ``no_turn_complete`` (see the module docstring), ``data.incomplete``
        True, at the offset and recorded time (epoch s UTC) of the segment's last record and
        ``sub`` = :data:`~edgetui.parsers.base.END_OF_FILE_SUB`; the run is then flagged
        ``incomplete``. Nothing after an exit marker, or when the segment ended with its turn. A
        live stream still growing never gets this (finish runs only once a file or run is done);
        the parser's state is left as it was, so a file that grows on is read on unchanged."""
        ev = self._cut_event(None)
        if ev is None:
            return []
        ev.sub = END_OF_FILE_SUB  # after the file's last line, never one of its own event ids
        return [ev]

    def _segment_cut(self, offset: int) -> list[Event]:
        """A segment cut off before another ``codex exec`` process's init record (at ``offset``)
        ends there: the same ``segment_end`` as :meth:`finish` gives, at the init's offset."""
        ev = self._cut_event(offset)
        return [] if ev is None else [ev]

    def _cut_event(self, at: Optional[int]) -> Optional[Event]:
        st = self._st
        if st["after_exit"] or not st["seg_records"] or st["last_off"] is None:
            return None
        if st["pending"]:
            reason = "ended_after_tool_call"
        elif st["turn_open"]:
            reason = "no_turn_complete"
        else:
            return None
        t = st["last_t"]
        words = (
            "its last tool call has no result"
            if reason == "ended_after_tool_call"
            else f"its turn has no {self.TURN_END_RECORD}"
        )
        return self._ev(
            Kind.SEGMENT_END,
            st["last_off"] if at is None else at,
            is_error=True,
            level="warning",
            summary=f"segment {st['segment']} was cut off: {words}",
            data={
                "reason": reason,
                "incomplete": True,
                "unanswered_tool_calls": list(st["pending"]),
                "turn_open": st["turn_open"],
                "expected_record": self.TURN_END_RECORD,
                "last_record_offset": st["last_off"],
            },
            t=t,
            t_source=TimeSource.RECORDED.value if t is not None else None,
        )

    def _new_segment(self, offset: int, **data: Any) -> Event:
        self._st.update(seg_records=0, last_off=None, last_t=None, turn_open=False, pending=[])
        return super()._new_segment(offset, **data)

    def _after_record(self, offset: int, t: Optional[float], events: list[Event]) -> None:
        st = self._st
        st["seg_records"] += 1
        st["last_off"] = offset
        if t is not None:
            st["last_t"] = t
        else:
            for ev in events:
                if ev.t is not None:
                    st["last_t"] = ev.t

    def _call_open(self, cid: str) -> None:
        """A tool call began and waits for its result."""
        pending = self._st["pending"]
        if cid not in pending:
            pending.append(cid)
            del pending[:-64]

    def _call_done(self, cid: str) -> None:
        self._st["pending"] = [c for c in self._st["pending"] if c != cid]

    def _turn_started(self, marks_end: bool) -> None:
        """A turn (or a user message) begins: earlier unanswered calls belong to a turn that
        ended; ``marks_end``: this stream will record the turn's end."""
        self._st["pending"] = []
        if marks_end:
            self._st["turn_open"] = True

    def _user_turn(self, offset: int, text: Any) -> None:
        """A user message opens a user turn (what ``thread_rolled_back`` counts back over): its
        offset and first line, the newest 64 kept."""
        turns = self._st.setdefault("turns", [])
        turns.append([offset, one_line(first_line(text), 80)])
        del turns[:-64]

    def _rolled_back(self, m: dict[str, Any], offset: int) -> Event:
        """``thread_rolled_back`` {num_turns}: the newest ``num_turns`` user turns were taken back
        (they stay in the file; Codex no longer sends them to the model). The event names them:
        ``data.undone_turns`` = [{offset, text}] of their user messages, oldest first."""
        n = int_or_none(m.get("num_turns"))
        turns = self._st.setdefault("turns", [])
        undone = turns[len(turns) - n :] if n and n > 0 else []
        if undone:
            del turns[len(turns) - len(undone) :]
        words = ", ".join(f"“{t}”" for _, t in undone)
        return self._ev(
            Kind.SYSTEM,
            offset,
            level="warning",
            summary=one_line(
                f"thread rolled back {n if n is not None else '?'} turn{'s' if n != 1 else ''}"
                + (f": undid {words}" if words else "")
            ),
            data={
                "event": "thread_rolled_back",
                "num_turns": n,
                "undone_turns": [{"offset": o, "text": t} for o, t in undone],
                "payload": m,
            },
        )

    def _turn_ended(self) -> None:
        """The stream says the turn ended (completed, aborted, failed): nothing is cut."""
        self._st["pending"] = []
        self._st["turn_open"] = False

    def _protocol(self, m: dict[str, Any], offset: int, message_id: Optional[str] = None) -> list[Event]:
        et = m.get("type")
        model = self._st.get("model")
        if et == "agent_message":
            text = m.get("message")
            return [
                self._ev(
                    Kind.AGENT_MESSAGE,
                    offset,
                    model=model,
                    message_id=message_id,
                    summary=one_line(text),
                    data={"text": text, "event": et},
                )
            ]
        if et == "user_message":
            self._turn_started(False)
            text = m.get("message")
            data: dict[str, Any] = {"text": text, "event": et}
            if m.get("images"):
                data["images"] = m.get("images")
            kind = m.get("kind")
            if kind in ("user_instructions", "environment_context") or (
                isinstance(text, str) and text.lstrip().startswith(CONTEXT_PREFIXES)
            ):
                data["context"] = True
                data["kind"] = kind
                return [
                    self._ev(
                        Kind.SYSTEM,
                        offset,
                        message_id=message_id,
                        data=data,
                        summary=one_line(f"[user context] {text}"),
                    )
                ]
            self._user_turn(offset, text)
            return [self._ev(Kind.USER_MESSAGE, offset, message_id=message_id, data=data, summary=one_line(text))]
        if et == "thread_rolled_back":
            return [self._rolled_back(m, offset)]
        if et in ("agent_reasoning", "agent_reasoning_raw_content"):
            text = m.get("text")
            data = {"text": text, "event": et}
            if et == "agent_reasoning_raw_content":
                data["raw_content"] = True
            return [
                self._ev(
                    Kind.THINKING,
                    offset,
                    model=model,
                    message_id=message_id,
                    data=data,
                    summary=one_line(text) or "(reasoning)",
                )
            ]
        if et in ("exec_command_begin", "patch_apply_begin", "mcp_tool_call_begin", "web_search_begin"):
            return [self._begin(m, offset)]
        if et in ("exec_command_end", "patch_apply_end", "mcp_tool_call_end", "web_search_end"):
            return self._end(m, offset)
        if et == "token_count":
            return [self._token_count(m, offset)]
        if et == "session_configured":
            sid = m.get("session_id")
            out = self._init_record(offset, session_id=sid)
            if isinstance(m.get("model"), str):
                self._st["model"] = m["model"]
            data = {k: v for k, v in m.items() if k not in ("type", "initial_messages")}
            data["event"] = et
            out.append(
                self._ev(
                    Kind.SESSION_INIT,
                    offset,
                    model=self._st.get("model"),
                    data=data,
                    summary=one_line(f"Codex session {sid} · model {m.get('model')}"),
                )
            )
            return out
        if et in ("task_started", "turn_started"):
            self._turn_started(self.TASK_COMPLETE_RECORDED)
        elif et in ("task_complete", "turn_complete", "turn_aborted", "error"):
            self._turn_ended()
        if et == "error":
            msg = m.get("message")
            return [
                self._ev(
                    Kind.AGENT_ERROR,
                    offset,
                    is_error=True,
                    summary=one_line(f"error: {msg}"),
                    data={"event": et, "message": msg, "payload": m},
                )
            ]
        if et == "stream_error":
            msg = m.get("message")
            return [
                self._ev(
                    Kind.SYSTEM,
                    offset,
                    level="warning",
                    summary=one_line(f"stream error: {msg}"),
                    data={"event": et, "message": msg, "payload": m},
                )
            ]
        if et == "task_started":
            return [
                self._ev(
                    Kind.SYSTEM,
                    offset,
                    summary=one_line(f"task started (turn {m.get('turn_id')})" if m.get("turn_id") else "task started"),
                    data={"event": et, **m},
                )
            ]
        if et == "task_complete":
            last = m.get("last_agent_message")
            return [
                self._ev(Kind.SYSTEM, offset, summary=one_line(f"task complete: {last or ''}"), data={"event": et, **m})
            ]
        if et == "turn_aborted":
            return [
                self._ev(
                    Kind.SYSTEM,
                    offset,
                    level="warning",
                    summary=one_line(f"turn aborted: {m.get('reason')}"),
                    data={"event": et, **m},
                )
            ]
        if et == "context_compacted":
            return [self._ev(Kind.COMPACTION, offset, summary="context compacted", data={"event": et, **m})]
        if et == "background_event":
            return [
                self._ev(
                    Kind.SYSTEM,
                    offset,
                    summary=one_line(f"background: {m.get('message')}"),
                    data={"event": et, "message": m.get("message")},
                )
            ]
        return [self._ev(Kind.SYSTEM, offset, summary=one_line(f"event {et}"), data={"event": et, "payload": m})]

    # -- tool calls ---------------------------------------------------------------------------

    def _call_fields(self, m: dict[str, Any]) -> tuple[str, dict[str, Any], str, Optional[str]]:
        """(tool name, data, summary, submit mode) of a begin (or an end whose begin was not seen)."""
        et = m.get("type", "")
        data: dict[str, Any] = {"call_id": m.get("call_id"), "event": et}
        mode = None
        if et.startswith("exec_command"):
            cmd = command_text(m.get("command"))
            data["command"] = cmd
            if m.get("cwd") is not None:
                data["cwd"] = m.get("cwd")
            if m.get("parsed_cmd"):
                data["parsed_cmd"] = m.get("parsed_cmd")
            mode = submit_mode(cmd)
            if mode is not None:
                data["sforge_submit"] = True
                data["submit_mode"] = mode
            return "exec", data, f"$ {cmd}", mode
        if et.startswith("patch_apply"):
            changes = dict_at(m, "changes")
            files = [f"{next(iter(v), '?') if isinstance(v, dict) else '?'} {p}" for p, v in changes.items()]
            data.update(changes=changes, files=list(changes), auto_approved=m.get("auto_approved"))
            return "apply_patch", data, "apply_patch: " + ", ".join(files), None
        if et.startswith("mcp_tool_call"):
            inv = dict_at(m, "invocation")
            name = f"{inv.get('server')}.{inv.get('tool')}"
            data.update(server=inv.get("server"), tool=inv.get("tool"), arguments=inv.get("arguments"))
            return (
                name,
                data,
                f"{name}({one_line(orjson.dumps(inv.get('arguments'), default=str).decode(), 100)})",
                None,
            )
        data["query"] = m.get("query")
        return "web_search", data, f"web search: {m.get('query') or ''}".rstrip(), None

    def _begin(self, m: dict[str, Any], offset: int) -> Event:
        cid = str_at(m, "call_id")
        if cid is None:
            cid = f"call@{offset}"
        name, data, summary, mode = self._call_fields(m)
        remember(self._st["pcalls"], cid, [name, mode])
        self._call_open(cid)
        return self._ev(
            Kind.TOOL_CALL,
            offset,
            tool_use_id=cid,
            tool_name=name,
            model=self._st.get("model"),
            data=data,
            summary=one_line(summary),
        )

    def _end(self, m: dict[str, Any], offset: int) -> list[Event]:
        et = m.get("type", "")
        cid = str_at(m, "call_id")
        if cid is None:
            cid = f"call@{offset}"
        out: list[Event] = []
        self._call_done(cid)
        known = self._st["pcalls"].pop(cid, None)
        if known is None:  # an end without its begin: the call is known from the end alone
            name, cdata, summary, mode = self._call_fields(m)
            cdata["from_end"] = True
            out.append(
                self._ev(
                    Kind.TOOL_CALL,
                    offset,
                    tool_use_id=cid,
                    tool_name=name,
                    model=self._st.get("model"),
                    data=cdata,
                    summary=one_line(summary),
                )
            )
        else:
            name, mode = known
        data: dict[str, Any] = {"call_id": cid, "event": et}
        exit_code: Optional[int] = None
        is_error = False
        content: Any = None
        dms = duration_ms(m.get("duration"))
        if dms is not None:
            data["duration_ms"] = dms
        if et == "exec_command_end":
            exit_code = int_or_none(m.get("exit_code"))
            agg = m.get("aggregated_output")
            content = (
                agg
                if isinstance(agg, str) and agg
                else "".join(x for x in (m.get("stdout"), m.get("stderr")) if isinstance(x, str))
            )
            data.update(exit_code=exit_code, stdout=m.get("stdout"), stderr=m.get("stderr"))
            is_error = exit_code is not None and exit_code != 0
        elif et == "patch_apply_end":
            ok = m.get("success")
            exit_code = None if not isinstance(ok, bool) else (0 if ok else 1)
            content = "".join(x for x in (m.get("stdout"), m.get("stderr")) if isinstance(x, str))
            data.update(success=ok, exit_code=exit_code)
            is_error = ok is False
        elif et == "mcp_tool_call_end":
            res = m.get("result")
            data["result"] = res
            if isinstance(res, dict) and "Err" in res:
                content, is_error = str(res["Err"]), True
            else:
                ok = res.get("Ok") if isinstance(res, dict) and "Ok" in res else res
                if isinstance(ok, dict):
                    blocks = list_at(ok, "content")
                    content = "\n".join(str(c.get("text", "")) for c in blocks if isinstance(c, dict))
                    is_error = bool(ok.get("isError") or ok.get("is_error"))
        else:  # web_search_end
            content = m.get("query")
            data["query"] = m.get("query")
        data["content"] = content
        rnd, summ = submit_fields(content, mode, data)
        out.append(
            self._ev(
                Kind.TOOL_RESULT,
                offset,
                tool_use_id=cid,
                tool_name=name,
                is_error=is_error,
                round=rnd,
                data=data,
                summary=one_line(summ) if summ else tool_result_summary(name, exit_code, content, is_error),
            )
        )
        return out

    # -- usage --------------------------------------------------------------------------------

    def _token_count(self, m: dict[str, Any], offset: int) -> Event:
        model = self._st.get("model")
        info = m.get("info")
        if not isinstance(info, dict):
            if any(k in m for k in _FLAT_USAGE_KEYS):  # early form: one model response's usage, flat
                data: dict[str, Any] = {
                    "event": "token_count",
                    "raw_usage": {k: v for k, v in m.items() if k != "type"},
                    "input_includes_cached": True,
                    "flat": True,
                }
                usage = usage_from(m)
                return self._ev(
                    Kind.TOKEN_USAGE,
                    offset,
                    model=model,
                    usage=usage,
                    data=data,
                    summary=one_line(
                        f"tokens: in {m.get('input_tokens')} (cached "
                        f"{m.get('cached_input_tokens') or 0}) out {m.get('output_tokens')}"
                    ),
                )
            return self._ev(
                Kind.SYSTEM,
                offset,
                summary="rate limits",
                data={"event": "token_count", "rate_limits": m.get("rate_limits")},
            )
        last = info.get("last_token_usage")
        total = info.get("total_token_usage")
        tot = int_or_none(total.get("total_tokens")) if isinstance(total, dict) else None
        data = {
            "event": "token_count",
            "last_token_usage": last,
            "total_token_usage": total,
            "model_context_window": info.get("model_context_window"),
            "rate_limits": m.get("rate_limits"),
            "input_includes_cached": True,
        }
        usage = usage_from(last)
        if tot is not None and tot == self._st.get("last_total"):
            data["repeat"] = True  # same running total: this count adds nothing
            usage = None
        if tot is not None:
            self._st["last_total"] = tot
        lu = last if isinstance(last, dict) else {}
        return self._ev(
            Kind.TOKEN_USAGE,
            offset,
            model=model,
            usage=usage,
            data=data,
            summary=one_line(
                f"tokens: in {lu.get('input_tokens')} (cached {lu.get('cached_input_tokens')})"
                f" out {lu.get('output_tokens')} · total {tot}" + (" (repeat)" if data.get("repeat") else "")
            ),
        )


def plan_summary(text: Any) -> str:
    """One line for a plan item: ``plan: <its first line>``."""
    return one_line(f"plan: {first_line(text)}")
