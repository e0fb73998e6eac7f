"""Codex rollout (session) files (agent_format ``codex_rollout``): ``~/.codex/sessions/**/rollout-*.jsonl``.

Every line is ``{"timestamp": ISO, "type": session_meta | turn_context | response_item |
event_msg | compacted, "payload": {...}}`` (early rollouts: bare response items). Two
vocabularies carry the conversation (openai/codex#43593): ``response_item`` records (the
model's own items) and ``event_msg`` records (the protocol's ``EventMsg``, read by
:mod:`edgetui.parsers.codex_protocol`). While a file has shown no ``response_item`` message,
its ``event_msg`` messages are the conversation's; while it has shown no ``response_item`` at
all, so are its reasoning and tool begin/end records. After that they are copies of what the
response items carry and add no event of their own.
"""

from __future__ import annotations

import re
from typing import Any, Optional

import orjson

from edgetui.events import Event, Kind, one_line
from edgetui.parsers.base import END_OF_FILE_SUB, finite_or_none, loads_lenient
from edgetui.parsers.codex_common import (
    T_RECORDED,
    command_text,
    first_line,
    int_or_none,
    remember,
    submit_fields,
    submit_mode,
    tool_result_summary,
)
from edgetui.times import iso8601_to_epoch
from edgetui.parsers.codex_protocol import (
    CONTEXT_PREFIXES,
    CONVERSATION_EVENTS,
    EventMsgParser,
    duration_ms,
    plan_summary,
)
from edgetui.parsers.json_fields import dict_at, str_at

__all__ = ["CodexRolloutParser"]

# ----------------------------------------------------------------------------------------
# rollout files

_ROLLOUT_TOP = {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
_RESPONSE_ITEM_TYPES = {
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "tool_search_call",
    "tool_search_output",
    "image_generation_call",
}
# event_msg types that only mirror a response_item (or stream deltas of one)
_MIRROR_EVENTS = {
    "agent_message",
    "user_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "agent_message_delta",
    "agent_reasoning_delta",
    "agent_reasoning_raw_content_delta",
    "exec_command_begin",
    "exec_command_output_delta",
    "patch_apply_begin",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
}
_SHELL_FUNCS = {"shell", "exec_command", "local_shell", "container.exec", "shell_command", "unified_exec"}
_EXIT_TEXT_RE = re.compile(r"^(?:Process exited with code|Exit code:)\s*(-?\d+)", re.M)
#: unified exec (0.12x): the command still runs when its output is returned; its end comes later
_RUNNING_RE = re.compile(r"^Process running with session ID\s*(\S+)", re.M)
#: code mode (0.14x): a cell's result starts with its state, its wall time and "Output:"
_CELL_HEAD_RE = re.compile(
    r"\A(Script completed|Script failed|Script running with cell ID (\S+))[ \t]*\n"
    r"(?:Wall time:? [0-9.]+ seconds[ \t]*\n)?(?:(?:Final )?Output:[ \t]*(?:\n|\Z))?"
)
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


def _call_info(v: Any) -> tuple[Optional[str], Optional[str], Optional[int]]:
    """(tool name, submit mode, call offset) of a remembered call (states saved before the
    offset was kept hold two items)."""
    v = list(v) if isinstance(v, list) else []
    v += [None] * (3 - len(v))
    return v[0], v[1], v[2]


def _list(v: Any) -> list:
    return v if isinstance(v, list) else []


class CodexRolloutParser(EventMsgParser):
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
    ``exec_command_end``; one result per command whatever the order of output and end (an end
    whose output never comes, a unified-exec output saying the command still runs and its later
    end: docs/transcript-formats.md §7.4); code-mode cells summarised by their output (§7.5);
    ``thread_rolled_back`` names the turns it undid (§7.3). ``event_msg/token_count`` → ``token_usage`` with
    ``info.last_token_usage`` (a repeated count whose ``total_token_usage`` did not
    change keeps ``usage`` empty and says ``data.repeat``); ``compacted`` →
    ``compaction``. ``event_msg`` ``item_completed`` / ``item_started`` (0.148 and later)
    → see :meth:`_turn_item`; other ``event_msg`` records → as the protocol reader says
    (``system`` at least): every record but a mirrored copy leaves an event.
    """

    agent_format = "codex_rollout"
    TASK_COMPLETE_RECORDED = True  # a rollout that records task_started records task_complete too

    def _initial_state(self) -> dict[str, Any]:
        # calls: call_id -> [tool_name, submit_mode]; ends: call_id -> {exit_code, duration_ms, status};
        # responses / resp_msgs: a response_item / a response_item message was seen (event_msg
        # copies of the conversation are then mirrors, see _copied)
        # held: call_id -> a unified-exec output whose command still ran (its end gives the result);
        # answered: call_id -> exit code of a result already recorded (a later end is then a copy)
        return {
            **super()._initial_state(),
            "calls": {},
            "ends": {},
            "held": {},
            "answered": {},
            "responses": False,
            "resp_msgs": False,
        }

    def _time_of(self, obj: dict[str, Any]) -> Optional[float]:
        return iso8601_to_epoch(obj.get("timestamp"))

    def finish(self) -> list[Event]:
        """At the end of a finished file, besides the cut (:meth:`EventMsgParser.finish`): the result
        of each call whose ``exec_command_end`` / ``patch_apply_end`` came and whose output never did
        (the end is the result), and of each unified-exec command still running (its held output,
        ``data.running``). These sit at their call's offset with ``sub`` =
        :data:`~edgetui.parsers.base.END_OF_FILE_SUB` and the time of the record they come from, so
        a file that grows says them again only if still true (docs/transcript-formats.md §7.4)."""
        out: list[Event] = []
        for cid, end in self._st["ends"].items():
            if "payload" in end:
                ev = self._end_result(cid, end["name"], end["mode"], end["payload"], end["call_offset"], {})
                ev.data["end_offset"] = end["offset"]
                ev.data["output_never_came"] = True
                out.append(self._at_end(ev, end.get("t")))
        for cid, h in self._st["held"].items():
            ev = self._held_result(cid, h)
            out.append(self._at_end(ev, h.get("t")))
        return out + super().finish()

    @staticmethod
    def _at_end(ev: Event, t: Optional[float]) -> Event:
        ev.sub = END_OF_FILE_SUB
        if t is not None:
            # use_enum_values: the field holds the enum's str value, as validation sets it
            ev.t, ev.t_source = t, T_RECORDED  # type: ignore[assignment]
        return ev

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:
        self._rec_t = self._time_of(obj)
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
            return [
                self._ev(
                    Kind.COMPACTION,
                    offset,
                    summary=one_line(f"context compacted: {msg or ''}"),
                    data={"message": msg, "replacement_history_items": len(hist) if isinstance(hist, list) else None},
                )
            ]
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
        out.append(
            self._ev(
                Kind.SESSION_INIT,
                offset,
                model=self._st["model"],
                data=data,
                summary=one_line(
                    f"Codex {p.get('cli_version') or ''} session {sid} "
                    f"({p.get('originator') or p.get('source') or ''}) cwd {p.get('cwd')}"
                ),
            )
        )
        return out

    def _turn_context(self, p: dict[str, Any], offset: int) -> list[Event]:
        if isinstance(p.get("model"), str):
            self._st["model"] = p["model"]
        data: dict[str, Any] = {
            k: p.get(k)
            for k in (
                "turn_id",
                "cwd",
                "model",
                "effort",
                "approval_policy",
                "sandbox_policy",
                "summary",
                "current_date",
                "timezone",
            )
            if k in p
        }
        cm = p.get("collaboration_mode")
        if isinstance(cm, dict) and isinstance(cm.get("settings"), dict):
            data.setdefault("effort", cm["settings"].get("reasoning_effort"))
            data["collaboration_mode"] = cm.get("mode")
        return [
            self._ev(
                Kind.SYSTEM,
                offset,
                model=self._st["model"],
                data={"event": "turn_context", **data},
                summary=one_line(
                    f"turn context: model {p.get('model')} · cwd {p.get('cwd')} · approval {p.get('approval_policy')}"
                ),
            )
        ]

    def _response_item(self, p: dict[str, Any], offset: int) -> list[Event]:
        self._st["responses"] = True
        it = p.get("type")
        if it == "message":
            self._st["resp_msgs"] = True
        model = self._st["model"]
        if it == "message":
            role = p.get("role")
            text = _content_text(p.get("content"))
            data: dict[str, Any] = {"role": role, "text": text}
            if p.get("phase"):
                data["phase"] = p["phase"]
            mid = str_at(p, "id")
            if role == "assistant":
                return [
                    self._ev(Kind.AGENT_MESSAGE, offset, model=model, message_id=mid, data=data, summary=one_line(text))
                ]
            if role == "user" and not text.lstrip().startswith(CONTEXT_PREFIXES):
                self._turn_started(False)
                self._user_turn(offset, text)
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
            return [
                self._ev(
                    Kind.THINKING,
                    offset,
                    model=model,
                    message_id=str_at(p, "id"),
                    data=data,
                    summary=one_line(text) if text else "(encrypted reasoning)",
                )
            ]
        if it in ("function_call", "custom_tool_call", "local_shell_call"):
            return [self._call(p, offset)]
        if it in ("function_call_output", "custom_tool_call_output"):
            return self._output(p, offset)
        if it == "web_search_call":
            action = p.get("action")
            q = action.get("query") if isinstance(action, dict) else None
            return [
                self._ev(
                    Kind.TOOL_CALL,
                    offset,
                    tool_name="web_search",
                    tool_use_id=p.get("id") or f"web_search@{offset}",
                    data={"action": action, "query": q, "status": p.get("status")},
                    summary=one_line(f"web search: {q}"),
                )
            ]
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
                    cmd = command_text(c)
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
                summary = f"{name}: {first_line(inp)}"
        else:  # local_shell_call
            name = "local_shell"
            action = dict_at(p, "action")
            cmd = command_text(action.get("command"))
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
        remember(self._st["calls"], cid, [name, mode, offset])
        self._call_open(cid)
        return self._ev(
            Kind.TOOL_CALL,
            offset,
            tool_use_id=cid,
            tool_name=name,
            model=self._st["model"],
            data=data,
            summary=one_line(summary),
        )

    def _output(self, p: dict[str, Any], offset: int) -> list[Event]:
        cid = p.get("call_id") or f"call@{offset}"
        name, mode, call_offset = _call_info(self._st["calls"].pop(cid, None))
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
                    meta = dict_at(j, "metadata")
                    exit_code = int_or_none(meta.get("exit_code"))
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
        preamble = ""
        if isinstance(content, str):
            # exec_command / apply_patch output: "Chunk ID: ..\nWall time: ..\nProcess exited with code N\n
            # Original token count: ..\nOutput:\n<text>" — all of it stays in content, the text also in data.output
            cut = content.find("Output:\n", 0, 600)
            if cut >= 0 and (cut == 0 or content[cut - 1] == "\n"):
                preamble = content[:cut]
                if all(": " in ln or ln.startswith("Process ") for ln in preamble.splitlines()):
                    data["output"] = shown = content[cut + len("Output:\n") :]
                    data["preamble"] = True
                    m = _WALL_RE.search(preamble)
                    if m:
                        data["wall_time_s"] = float(m.group(1))
            if exit_code is None:
                m = _EXIT_TEXT_RE.search(content[:600])
                if m:
                    exit_code = int(m.group(1))
            cell = _CELL_HEAD_RE.match(content)
            if cell:  # code mode (docs/transcript-formats.md §7.5): summarised by the cell's output
                data["output"] = shown = content[cell.end() :]
                data["cell_state"] = {"Script completed": "completed", "Script failed": "failed"}.get(
                    cell.group(1), "running"
                )
                if cell.group(2):
                    data["cell_id"] = cell.group(2)
                if data["cell_state"] == "failed" and is_error is None:
                    is_error = True
            running = _RUNNING_RE.search(content[:cut]) if data.pop("preamble", None) and exit_code is None else None
            if running and not end and name in _SHELL_FUNCS:
                # unified exec: the command runs on; its exec_command_end gives the result (one row)
                remember(
                    self._st["held"],
                    cid,
                    {
                        "offset": offset,
                        "t": self._rec_t,
                        "name": name,
                        "mode": mode,
                        "call_offset": offset if call_offset is None else call_offset,
                        "session_id": running.group(1),
                        "content": content,
                        "output": data.get("output", content),
                        "wall_time_s": data.get("wall_time_s"),
                    },
                )
                return []
        self._call_done(cid)
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
        remember(self._st["answered"], cid, exit_code)
        rnd, summ = submit_fields(data.get("output", content), mode, data)
        state = None
        if data.get("cell_state") == "running":
            state = f"running (cell {data.get('cell_id')})"
        elif data.get("cell_state") == "failed":
            state = "failed"
        return [
            self._ev(
                Kind.TOOL_RESULT,
                offset,
                tool_use_id=cid,
                tool_name=name,
                is_error=is_error,
                round=rnd,
                data=data,
                summary=one_line(summ) if summ else tool_result_summary(name, exit_code, shown, is_error, state),
            )
        ]

    def _end_result(
        self,
        cid: str,
        name: Optional[str],
        mode: Optional[str],
        p: dict[str, Any],
        offset: int,
        extra: dict[str, Any],
    ) -> Event:
        """The ``tool_result`` an ``exec_command_end`` / ``patch_apply_end`` ``p`` gives the call
        ``cid``: its exit code (a patch's ``success`` when it has none), its output
        (``aggregated_output``, else stdout and stderr), duration and status; ``extra`` joins
        ``data``."""
        et = p.get("type")
        code = int_or_none(p.get("exit_code"))
        ok = p.get("success") if isinstance(p.get("success"), bool) else None
        agg = p.get("aggregated_output")
        content = (
            agg
            if isinstance(agg, str) and agg
            else "".join(x for x in (p.get("stdout"), p.get("stderr")) if isinstance(x, str))
        )
        data: dict[str, Any] = {"call_id": cid, "event": et, **extra}
        if code is not None:
            data["exit_code"] = code
        if ok is not None:
            data["success"] = ok
        dms = duration_ms(p.get("duration"))
        if dms is not None:
            data["duration_ms"] = dms
        if p.get("status"):
            data["status"] = p["status"]
        data["content"] = content
        is_error = code != 0 if code is not None else (None if ok is None else not ok)
        state = None if code is not None or ok is None else ("ok" if ok else "failed")
        rnd, summ = submit_fields(content, mode, data)
        return self._ev(
            Kind.TOOL_RESULT,
            offset,
            tool_use_id=cid,
            tool_name=name,
            is_error=is_error,
            round=rnd,
            data=data,
            summary=one_line(summ) if summ else tool_result_summary(name, code, content, is_error, state),
        )

    def _held_result(self, cid: str, h: dict[str, Any]) -> Event:
        """The result of a unified-exec command whose end never came: its first output, running."""
        data: dict[str, Any] = {
            "call_id": cid,
            "running": True,
            "session_id": h.get("session_id"),
            "output": h.get("output"),
            "content": h.get("content"),
            "output_offset": h.get("offset"),
        }
        if h.get("wall_time_s") is not None:
            data["wall_time_s"] = h["wall_time_s"]
        return self._ev(
            Kind.TOOL_RESULT,
            h["call_offset"],
            tool_use_id=cid,
            tool_name=h.get("name"),
            data=data,
            summary=tool_result_summary(
                h.get("name"), None, h.get("output"), None, f"running (session {h.get('session_id')})"
            ),
        )

    def _event_msg(self, p: dict[str, Any], offset: int) -> list[Event]:
        et = p.get("type")
        if et in ("exec_command_end", "patch_apply_end"):
            ended = self._command_end(et, p, offset)
            if ended is not None:
                return ended
        if et in CONVERSATION_EVENTS and not self._copied(et):
            return self._protocol(p, offset)  # the only copy of the conversation so far
        if et in ("item_completed", "item_started"):
            return [self._turn_item(et, p, offset)]
        if et in _MIRROR_EVENTS:
            return []
        return self._protocol(p, offset)

    def _command_end(self, et: str, p: dict[str, Any], offset: int) -> Optional[list[Event]]:
        """An ``exec_command_end`` / ``patch_apply_end`` among response items (None: read it as the
        protocol does). Before its call's output: its exit code and duration go to that output, and
        it is the call's result if the output never comes (:meth:`finish`). After a unified-exec
        output saying the command still runs: the call's result, here, with the final exit code and
        output. After an output that gave the result: a copy, no event (docs/transcript-formats.md
        §7.4)."""
        cid = p.get("call_id")
        if not isinstance(cid, str):
            cid = None
        code = int_or_none(p.get("exit_code"))
        ok = p.get("success") if isinstance(p.get("success"), bool) else None
        if cid is not None and cid in self._st["held"]:
            h = self._st["held"].pop(cid)
            self._call_done(cid)
            remember(self._st["answered"], cid, code)
            extra = {
                "session_id": h.get("session_id"),
                "first_output": h.get("output"),
                "output_offset": h.get("offset"),
            }
            return [self._end_result(cid, h.get("name"), h.get("mode"), p, offset, extra)]
        if cid is not None and cid in self._st["calls"]:
            name, mode, call_offset = _call_info(self._st["calls"][cid])
            if code is None and ok is not None:
                code = 0 if ok else 1
            remember(
                self._st["ends"],
                cid,
                {
                    "exit_code": code,
                    "duration_ms": duration_ms(p.get("duration")),
                    "status": p.get("status"),
                    "payload": p,
                    "name": name,
                    "mode": mode,
                    "offset": offset,
                    "call_offset": offset if call_offset is None else call_offset,
                    "t": self._rec_t,
                },
            )
            self._call_done(cid)  # the command ended: it is not a call left without its result
            return []
        if cid is not None and cid in self._st["answered"]:
            known = self._st["answered"][cid]
            if code is None or known == code:
                return []  # the output already gave this result
        if not self._st["responses"]:
            return None
        state = f"exit {code}" if code is not None else ("ok" if ok else "failed" if ok is False else "ended")
        return [
            self._ev(
                Kind.SYSTEM,
                offset,
                tool_use_id=cid,
                level="warning" if code not in (None, 0) or ok is False else None,
                summary=one_line(f"{et}: {state}"),
                data={"event": et, "payload": p},
            )
        ]

    def _copied(self, et: str) -> bool:
        """Whether an ``event_msg`` of type ``et`` copies what response items carry in this file: a
        message once a response_item message was seen, anything else once any response_item was."""
        return self._st["resp_msgs"] if et in ("agent_message", "user_message") else self._st["responses"]

    def _turn_item(self, et: str, p: dict[str, Any], offset: int) -> Event:
        """``item_completed`` / ``item_started`` {thread_id, turn_id, item: TurnItem (``type`` =
        ``Plan``, ``AgentMessage``, ``UserMessage``, ``Reasoning``, ``WebSearch``...)}: a plan →
        ``system`` (``data.plan``: plans are in no response_item); a message or reasoning →
        its event while it copies no response item (see :meth:`_copied`), else ``system`` with
        ``data.mirror``."""
        item = dict_at(p, "item")
        it: Any = item.get("type")  # (a JSON value: any type)
        iid = str_at(item, "id")
        base = {
            "event": et,
            "item_type": it,
            "item_id": iid,
            "turn_id": p.get("turn_id"),
            "thread_id": p.get("thread_id"),
        }
        text = None
        if it == "Plan":
            return self._ev(
                Kind.SYSTEM,
                offset,
                message_id=iid,
                summary=plan_summary(item.get("text")),
                data={**base, "plan": item.get("text")},
            )
        if it in ("AgentMessage", "UserMessage"):
            text = "\n".join(
                str(c.get("text")) for c in _list(item.get("content")) if isinstance(c, dict) and "text" in c
            )
        elif it == "Reasoning":
            parts = [x for x in _list(item.get("summary_text")) + _list(item.get("raw_content")) if isinstance(x, str)]
            text = "\n\n".join(parts)
        if (
            text is not None
            and et == "item_completed"
            and not self._copied("agent_reasoning" if it == "Reasoning" else "agent_message")
        ):
            kind = {"AgentMessage": Kind.AGENT_MESSAGE, "UserMessage": Kind.USER_MESSAGE}.get(it, Kind.THINKING)
            model = self._st["model"] if kind != Kind.USER_MESSAGE else None
            return self._ev(
                kind,
                offset,
                model=model,
                message_id=iid,
                summary=one_line(text) or f"({it})",
                data={**base, "text": text},
            )
        data = {**base, "item": item}
        if text is not None:
            data["mirror"] = True  # the conversation is recorded from its response_item
        return self._ev(
            Kind.SYSTEM,
            offset,
            message_id=iid,
            data=data,
            summary=one_line(f"{et.replace('_', ' ')}: {it}" + (f" · {text}" if text else "")),
        )
