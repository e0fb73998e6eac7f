"""OpenCode ``opencode run --format json`` output (docs/transcript-formats.md §8).

One JSON object per line with top-level ``type``, ``timestamp`` (epoch ms,
container clock), ``sessionID`` and ``part``:

* ``step_start`` → ``system``;
* ``text`` → ``agent_message`` (``part.text``, ``message_id`` = ``part.messageID``);
* ``reasoning`` → ``thinking``;
* ``tool_use`` → ``tool_call`` + ``tool_result`` from the one record (results are
  inline in ``part.state``; a ``pending``/``running`` state gives the call only).
  ``tool_use_id`` = ``part.callID``; the call is stamped at ``state.time.start``
  and the result at ``state.time.end`` when present;
* ``step_finish`` → ``token_usage`` (``part.tokens`` → ``usage``, ``part.cost`` →
  ``stated_cost_usd``, reason in ``data.reason``);
* ``error`` → ``agent_error``.

At the end of a finished file (:meth:`OpenCodeParser.finish`), a segment whose stream was
cut off gets a ``segment_end`` (``data.incomplete``, the run is then flagged
``incomplete``, as the Claude parser does for a stream without ``result``): reason
``no_step_finish`` when its last ``step_start`` has no ``step_finish`` (anomalyco/opencode#31404:
a file with only ``step_start``), ``ended_after_tool_call`` when a tool call is still
``pending``/``running`` or the last step finished with reason ``tool-calls`` (the model asked
for tools and never went on). A segment ended by an exit marker or an ``error`` record is
not cut off. A stream still growing live never gets this (finish runs once a file is done).

The first record of a new ``sessionID`` is preceded by a ``session_init`` event
(a different session id later also starts a new segment). ``__SFORGE_EXIT__<n>``
→ ``segment_end``, the next record starts segment n+1 (``segment_start``);
``sessionID`` is copied to ``data.session_id`` of every event; bad lines →
``parse_error``. sforge-submit calls of the ``bash`` tool are marked as in the
Codex parsers (``data.sforge_submit``, ``data.submit_mode``,
``data.submit_result``, ``round``).
"""

from __future__ import annotations

from typing import Any, Optional

import orjson

from edgetui.events import Event, Kind, TimeSource, Usage, one_line
from edgetui.parsers.base import END_OF_FILE_SUB, finite_or_none
from edgetui.parsers.codex_common import JsonLinesParser, int_or_none, submit_fields, submit_mode, tool_result_summary
from edgetui.parsers.json_fields import dict_at

__all__ = ["OpenCodeParser"]


def _ms_to_s(v: Any) -> Optional[float]:
    f, _flag = finite_or_none(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else (None, None)
    return None if f is None else f / 1000.0


class OpenCodeParser(JsonLinesParser):
    """``opencode run --format json`` stream → events (agent_format ``opencode``)."""

    agent_format = "opencode"

    def _initial_state(self) -> dict[str, Any]:
        # the open segment's stream: records seen, a step started and not finished, the last
        # step_finish reason, tool calls still pending; the last record's offset and time
        return {
            "session": None,
            "seg_records": 0,
            "step_open": False,
            "step_reason": None,
            "pending": [],
            "last_off": None,
            "last_t": None,
        }

    def _new_segment(self, offset: int, **data: Any) -> Event:
        self._st.update(seg_records=0, step_open=False, step_reason=None, pending=[])
        return super()._new_segment(offset, **data)

    def finish(self) -> list[Event]:
        """The ``segment_end`` of a cut-off stream (see the module docstring), or nothing."""
        st = self._st
        if st["after_exit"] or not st["seg_records"] or st["last_off"] is None:
            return []
        if st["pending"] or (not st["step_open"] and st["step_reason"] == "tool-calls"):
            reason = "ended_after_tool_call"
        elif st["step_open"]:
            reason = "no_step_finish"
        else:
            return []
        t = st["last_t"]
        ev = self._ev(
            Kind.SEGMENT_END,
            st["last_off"],
            is_error=True,
            level="warning",
            summary=f"segment {st['segment']} ended without finishing its step ({reason.replace('_', ' ')})",
            data={
                "reason": reason,
                "incomplete": True,
                "unanswered_tool_calls": list(st["pending"]),
                "last_step_reason": st["step_reason"],
                "session_id": st["session"],
            },
            t=t,
            t_source=TimeSource.RECORDED.value if t is not None else None,
        )
        ev.sub = END_OF_FILE_SUB  # after the file's last line, never one of its own event ids
        return [ev]

    def _track(self, typ: Any, part: dict[str, Any], offset: int, t: Optional[float]) -> None:
        """Follow the open segment's steps and pending tool calls (for :meth:`finish`)."""
        st = self._st
        st["seg_records"] += 1
        st["last_off"] = offset
        if t is not None:
            st["last_t"] = t
        if typ == "step_start":
            st["step_open"] = True
        elif typ == "step_finish":
            st["step_open"] = False
            st["step_reason"] = part.get("reason")
        elif typ == "error":  # the stream says why it ends: not cut off
            st["step_open"] = False
            st["step_reason"] = "error"
            st["pending"] = []
        elif typ == "tool_use":
            cid = part.get("callID") or part.get("id")
            state = dict_at(part, "state")
            if isinstance(cid, str):
                if state.get("status") in ("completed", "error"):
                    st["pending"] = [c for c in st["pending"] if c != cid]
                elif cid not in st["pending"]:
                    st["pending"] = (st["pending"] + [cid])[-64:]

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:
        typ = obj.get("type")
        t = self._time_of(obj)
        sid = obj.get("sessionID")
        part = dict_at(obj, "part")
        if sid is None:
            sid = part.get("sessionID")
        events: list[Event] = []
        if isinstance(sid, str) and sid != self._st["session"]:
            events.extend(self._init_record(offset, session_id=sid))
            self._st["session"] = sid
            events.append(
                self._ev(Kind.SESSION_INIT, offset, summary=f"OpenCode session {sid}", data={"session_id": sid})
            )
        if typ == "tool_use":
            events.extend(self._tool(part, offset, t))
        elif typ == "text":
            text = part.get("text")
            events.append(
                self._ev(
                    Kind.AGENT_MESSAGE,
                    offset,
                    message_id=part.get("messageID"),
                    summary=one_line(text),
                    data={"text": text, "part_id": part.get("id"), "time": part.get("time")},
                )
            )
        elif typ == "reasoning":
            text = part.get("text")
            events.append(
                self._ev(
                    Kind.THINKING,
                    offset,
                    message_id=part.get("messageID"),
                    summary=one_line(text) or "(reasoning)",
                    data={"text": text, "part_id": part.get("id"), "time": part.get("time")},
                )
            )
        elif typ == "step_start":
            events.append(
                self._ev(
                    Kind.SYSTEM,
                    offset,
                    message_id=part.get("messageID"),
                    summary="step start",
                    data={"event": typ, "part_id": part.get("id"), "snapshot": part.get("snapshot")},
                )
            )
        elif typ == "step_finish":
            events.append(self._step_finish(part, offset))
        elif typ == "error":
            raw_err = obj.get("error")
            err: dict[str, Any] = raw_err if isinstance(raw_err, dict) else {"value": raw_err}
            edata = dict_at(err, "data")
            msg = edata.get("message") or err.get("message") or err.get("value")
            events.append(
                self._ev(
                    Kind.AGENT_ERROR,
                    offset,
                    is_error=True,
                    summary=one_line(f"{err.get('name') or 'error'}: {msg}"),
                    data={"name": err.get("name"), "message": msg, "error": err},
                )
            )
        else:
            events.append(
                self._ev(
                    Kind.SYSTEM, offset, summary=one_line(f"opencode event {typ}"), data={"event": typ, "record": obj}
                )
            )
        if isinstance(sid, str):
            for ev in events:
                ev.data.setdefault("session_id", sid)
        self._track(typ, part, offset, t)
        return events

    def _time_of(self, obj: dict[str, Any]) -> Optional[float]:
        return _ms_to_s(obj.get("timestamp"))

    def _tool(self, part: dict[str, Any], offset: int, t: Optional[float]) -> list[Event]:
        tool = part.get("tool") or "tool"
        cid = part.get("callID") or part.get("id") or f"tool@{offset}"
        state = dict_at(part, "state")
        status = state.get("status")
        inp = state.get("input")
        times = dict_at(state, "time")
        t_start, t_end = _ms_to_s(times.get("start")), _ms_to_s(times.get("end"))
        cmd = inp.get("command") if isinstance(inp, dict) and isinstance(inp.get("command"), str) else None
        call_data: dict[str, Any] = {
            "input": inp,
            "title": state.get("title"),
            "status": status,
            "part_id": part.get("id"),
        }
        if cmd is not None:
            call_data["command"] = cmd
            if isinstance(inp, dict) and inp.get("description"):
                call_data["description"] = inp.get("description")
        mode = submit_mode(cmd)
        if mode is not None:
            call_data["sforge_submit"] = True
            call_data["submit_mode"] = mode
        # OpenCode repairs a call to a tool it does not have into a call to its ``invalid`` tool
        # ({tool, error: "Model tried to call unavailable tool 'X'. ..."}), which "completes": an error
        invalid = tool == "invalid" and isinstance(inp, dict)
        invalid_input: dict[str, Any] = inp if tool == "invalid" and isinstance(inp, dict) else {}
        if invalid:
            call_data["invalid_tool"] = invalid_input.get("tool")
        if cmd is not None:
            summary = f"{tool}: $ {cmd}"
        elif invalid:
            summary = f"invalid: model called unavailable tool {invalid_input.get('tool')}"
        elif inp is not None:
            summary = f"{tool}({one_line(orjson.dumps(inp, default=str).decode(), 120)})"
        else:
            summary = tool
        events = [
            self._ev(
                Kind.TOOL_CALL,
                offset,
                tool_use_id=cid,
                tool_name=tool,
                message_id=part.get("messageID"),
                summary=one_line(summary),
                data=call_data,
                t=t_start,
                t_source=TimeSource.RECORDED.value if t_start is not None else None,
            )
        ]
        if status not in ("completed", "error"):
            return events
        meta = dict_at(state, "metadata")
        exit_code = int_or_none(meta.get("exit"))
        content = state.get("output") if status == "completed" else state.get("error")
        is_error = status == "error" or (exit_code is not None and exit_code != 0) or invalid
        if invalid and not content:
            content = invalid_input.get("error")
        res_data: dict[str, Any] = {
            "content": content,
            "status": status,
            "exit_code": exit_code,
            "metadata": {k: v for k, v in meta.items() if k != "output"},
        }
        if status == "error":
            res_data["error"] = state.get("error")
        if invalid:
            res_data["invalid_tool"] = invalid_input.get("tool")
        if t_start is not None and t_end is not None:
            res_data["duration_ms"] = round((t_end - t_start) * 1000, 3)
        if cmd is not None:
            res_data["command"] = cmd
        rnd, summ = submit_fields(content, mode, res_data)
        t_res = t_end if t_end is not None else t
        events.append(
            self._ev(
                Kind.TOOL_RESULT,
                offset,
                tool_use_id=cid,
                tool_name=tool,
                is_error=is_error,
                message_id=part.get("messageID"),
                round=rnd,
                data=res_data,
                summary=one_line(summ)
                if summ
                else one_line(f"invalid → error: unavailable tool {invalid_input.get('tool')}: {content}")
                if invalid
                else tool_result_summary(tool, exit_code, content, is_error),
                t=t_res,
                t_source=TimeSource.RECORDED.value if t_res is not None else None,
            )
        )
        return events

    def _step_finish(self, part: dict[str, Any], offset: int) -> Event:
        tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else None
        usage = None
        data: dict[str, Any] = {
            "event": "step_finish",
            "reason": part.get("reason"),
            "tokens": tokens,
            "part_id": part.get("id"),
        }
        if tokens is not None:
            cache = dict_at(tokens, "cache")
            usage = Usage(
                input_tokens=int_or_none(tokens.get("input")) or 0,
                output_tokens=int_or_none(tokens.get("output")) or 0,
                cache_read_tokens=int_or_none(cache.get("read")) or 0,
                cache_write_tokens=int_or_none(cache.get("write")) or 0,
            )
            data["reasoning_tokens"] = int_or_none(tokens.get("reasoning"))
        cost, flag = finite_or_none(part.get("cost"))
        if flag:
            data["cost_flag"] = flag
        summ = f"step finish ({part.get('reason')})"
        if usage is not None:
            summ += (
                f": in {usage.input_tokens} out {usage.output_tokens}"
                f" cache r/w {usage.cache_read_tokens}/{usage.cache_write_tokens}"
            )
        if cost is not None:
            summ += f" · ${cost:.4f}"
        return self._ev(
            Kind.TOKEN_USAGE,
            offset,
            message_id=part.get("messageID"),
            usage=usage,
            stated_cost_usd=cost,
            data=data,
            summary=summ,
        )
