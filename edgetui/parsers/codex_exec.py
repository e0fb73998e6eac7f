"""``codex exec --json`` streams (agent_format ``codex_json``), in the three dialects Codex wrote
with no version marker (openai/codex PR #4525; fixtures and the commits they follow:
``tests/fixtures/codex_dialects/README.md``):

* **protocol events** (``--json`` until PR #4525, e.g. 0.41): a config summary line
  (``{"workdir", "model", "provider", "approval", "sandbox", ...}``), ``{"prompt": ...}``, then
  one ``{"id": <submission id>, "msg": {"type": ..., ...}}`` per protocol event (the
  ``EventMsg`` vocabulary, read by :mod:`edgetui.parsers.codex_protocol`);
* **item_type items** (``--experimental-json`` from PR #4177, ``--json`` after PR #4525 until
  PR #4610): ``session.created`` {session_id} (later ``thread.started``), ``turn.*``,
  ``item.*`` whose item names its kind in ``item_type`` (``assistant_message``,
  ``reasoning``, ``command_execution``...);
* **type items** (since PR #4610): ``thread.started``, ``turn.*``, ``item.*`` with
  ``item.type`` (``agent_message``...).

A session init names the dialect in ``data.dialect`` as far as its line tells: ``protocol``,
``item_type`` (``session.created``), ``items`` (``thread.started``: either item dialect); events
read from an item that names its kind in ``item_type`` say ``data.item_type_key``.
"""

from __future__ import annotations

from typing import Any

import orjson

from edgetui.events import Event, Kind, one_line
from edgetui.parsers.codex_common import (
    command_text,
    int_or_none,
    remember,
    submit_fields,
    submit_mode,
    tool_result_summary,
    usage_from,
)
from edgetui.parsers.codex_protocol import EventMsgParser
from edgetui.parsers.json_fields import dict_at, list_at

__all__ = ["CodexJsonParser"]

_EXEC_TOOL_ITEMS = {"command_execution", "file_change", "mcp_tool_call", "web_search"}
_USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)


_CONFIG_KEYS = frozenset({"workdir", "model", "approval", "sandbox"})  # the protocol dialect's first line
_ITEM_TYPE_NAMES = {"assistant_message": "agent_message"}  # item_type dialect → type dialect


def is_config_summary(obj: dict[str, Any]) -> bool:
    """The first line of a protocol-dialect ``codex exec --json`` stream (its config summary)."""
    return "type" not in obj and "msg" not in obj and _CONFIG_KEYS <= obj.keys()


class CodexJsonParser(EventMsgParser):
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
    turn's *of the same thread id*, False otherwise, None for a thread's first turn) and
    ``data.delta``: several runs appended to one file each start their own thread, and a
    thread's usage never continues another's (docs/transcript-formats.md §6).

    ``session.created`` is read as ``thread.started``; an item's ``item_type`` as its
    ``type`` (``assistant_message`` as ``agent_message``). Protocol events: the config
    summary → ``session_init`` (``data.config``, model, ``data.cwd``), ``{"prompt"}`` →
    ``user_message`` (a ``user_message`` event repeating it → ``system``, ``data.mirror``),
    each ``msg`` as :class:`~edgetui.parsers.codex_protocol.EventMsgParser` reads it
    (``data.submission_id`` = the line's ``id``).
    """

    agent_format = "codex_json"
    TURN_END_RECORD = "turn.completed"  # the item dialects' turn end (the protocol dialect prints none)

    def _initial_state(self) -> dict[str, Any]:
        # prompt: the protocol dialect's {"prompt"} text until a user_message repeats it
        return {**super()._initial_state(), "thread_id": None, "open": {}, "prev_usage": None, "prompt": None}

    def _tid(self, item_id: Any) -> str:
        return f"{item_id}@s{self._st['segment']}"

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:
        typ = obj.get("type")
        msg = obj.get("msg")
        if typ is None and isinstance(msg, dict):  # protocol dialect: {"id", "msg": EventMsg}
            if (
                msg.get("type") == "user_message"
                and self._st.get("prompt") is not None
                and msg.get("message") == self._st["prompt"]
            ):
                self._st["prompt"] = None  # the prompt line already recorded this message
                return [
                    self._ev(
                        Kind.SYSTEM,
                        offset,
                        summary="user message (the prompt, recorded above)",
                        data={"event": "user_message", "mirror": True, "submission_id": obj.get("id"), "payload": msg},
                    )
                ]
            events = self._protocol(msg, offset)
            for ev in events:
                ev.data.setdefault("submission_id", obj.get("id"))
                if ev.kind == Kind.SESSION_INIT.value:
                    ev.data["dialect"] = "protocol"
            return events
        if typ is None and is_config_summary(obj):
            out = self._init_record(offset)
            if isinstance(obj.get("model"), str):
                self._st["model"] = obj["model"]
            out.append(
                self._ev(
                    Kind.SESSION_INIT,
                    offset,
                    model=self._st["model"],
                    data={"config": obj, "cwd": obj.get("workdir"), "dialect": "protocol"},
                    summary=one_line(f"codex exec --json · model {obj.get('model')} · {obj.get('workdir')}"),
                )
            )
            return out
        if typ is None and set(obj) == {"prompt"}:
            text = obj.get("prompt")
            self._st["prompt"] = text if isinstance(text, str) else None
            return [self._ev(Kind.USER_MESSAGE, offset, summary=one_line(text), data={"text": text, "event": "prompt"})]
        if typ in ("thread.started", "session.created"):
            tid = obj.get("thread_id") if typ == "thread.started" else obj.get("session_id")
            out = self._init_record(offset, thread_id=tid, resumed=tid == self._st["thread_id"])
            if tid != self._st["thread_id"]:
                self._st["prev_usage"] = None  # usage is cumulative within one thread only
            self._st["thread_id"] = tid
            word = "thread" if typ == "thread.started" else "session"
            out.append(
                self._ev(
                    Kind.SESSION_INIT,
                    offset,
                    summary=one_line(f"codex exec --json {word} {tid}"),
                    data={
                        "session_id": tid,
                        "thread_id": tid,
                        "event": typ,
                        "dialect": "items" if typ == "thread.started" else "item_type",
                    },
                )
            )
            return out
        if typ == "turn.started":
            self._turn_started(True)
            return [self._ev(Kind.SYSTEM, offset, summary="turn started", data={"event": typ})]
        if typ in ("turn.completed", "turn.failed", "error"):
            self._turn_ended()
        if typ == "turn.completed":
            return [self._turn_usage(obj, offset)]
        if typ == "turn.failed":
            err = obj.get("error")
            msg = err.get("message") if isinstance(err, dict) else err
            return [
                self._ev(
                    Kind.AGENT_ERROR,
                    offset,
                    is_error=True,
                    summary=one_line(f"turn failed: {msg}"),
                    data={"event": typ, "error": err, "message": msg},
                )
            ]
        if typ == "error":
            msg = obj.get("message")
            return [
                self._ev(
                    Kind.AGENT_ERROR,
                    offset,
                    is_error=True,
                    summary=one_line(f"error: {msg}"),
                    data={"event": typ, "message": msg},
                )
            ]
        if typ in ("item.started", "item.updated", "item.completed"):
            item = obj.get("item")
            if not isinstance(item, dict):
                return [
                    self._ev(Kind.SYSTEM, offset, summary=f"{typ} without item", data={"event": typ, "record": obj})
                ]
            return self._item(typ, item, offset)
        return [
            self._ev(Kind.SYSTEM, offset, summary=one_line(f"codex event {typ}"), data={"event": typ, "record": obj})
        ]

    def _turn_usage(self, obj: dict[str, Any], offset: int) -> Event:
        raw = dict_at(obj, "usage")
        cur = {k: int_or_none(raw.get(k)) or 0 for k in _USAGE_KEYS}
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
        usage = usage_from(data["delta"]) if data.get("cumulative") else usage_from(raw)
        return self._ev(
            Kind.TOKEN_USAGE,
            offset,
            usage=usage,
            data=data,
            summary=one_line(
                f"turn usage: in {cur['input_tokens']} (cached {cur['cached_input_tokens']})"
                f" out {cur['output_tokens']}" + (" (cumulative)" if data.get("cumulative") else "")
            ),
        )

    def _item(self, typ: str, item: dict[str, Any], offset: int) -> list[Event]:
        if "type" in item or not isinstance(item.get("item_type"), str):
            return self._item_events(typ, item, offset)
        name = item["item_type"]  # the item_type dialect
        events = self._item_events(typ, {**item, "type": _ITEM_TYPE_NAMES.get(name, name)}, offset)
        for ev in events:
            ev.data["item_type_key"] = True
        return events

    def _item_events(self, typ: str, item: dict[str, Any], offset: int) -> list[Event]:
        itype = item.get("type")
        iid = item.get("id")
        mid = iid if isinstance(iid, str) else None
        if itype in _EXEC_TOOL_ITEMS:
            tid = self._tid(iid)
            opened = self._st["open"]
            out: list[Event] = []
            if typ in ("item.started", "item.updated"):
                if tid not in opened:
                    remember(opened, tid, itype)
                    self._call_open(tid)
                    out.append(self._tool_call(item, tid, offset))
                else:
                    out.append(
                        self._ev(
                            Kind.SYSTEM,
                            offset,
                            tool_use_id=tid,
                            tool_name=itype,
                            summary=one_line(f"{itype} {typ}"),
                            data={"event": typ, "item": item},
                        )
                    )
                return out
            self._call_done(tid)
            if tid in opened:  # item.completed
                del opened[tid]
            else:
                out.append(self._tool_call(item, tid, offset))
            out.append(self._tool_result(item, tid, offset))
            return out
        if typ == "item.completed" and itype == "agent_message":
            text = item.get("text")
            return [
                self._ev(
                    Kind.AGENT_MESSAGE,
                    offset,
                    message_id=mid,
                    summary=one_line(text),
                    data={"text": text, "item_id": iid},
                )
            ]
        if typ == "item.completed" and itype == "reasoning":
            text = item.get("text")
            return [
                self._ev(
                    Kind.THINKING,
                    offset,
                    message_id=mid,
                    summary=one_line(text) or "(reasoning)",
                    data={"text": text, "item_id": iid},
                )
            ]
        if typ == "item.completed" and itype == "error":
            msg = item.get("message")
            return [
                self._ev(
                    Kind.AGENT_ERROR,
                    offset,
                    is_error=True,
                    summary=one_line(f"error: {msg}"),
                    data={"message": msg, "item_id": iid},
                )
            ]
        if itype == "todo_list":
            items = list_at(item, "items")
            done = sum(1 for x in items if isinstance(x, dict) and x.get("completed"))
            nxt = next((x.get("text") for x in items if isinstance(x, dict) and not x.get("completed")), None)
            return [
                self._ev(
                    Kind.SYSTEM,
                    offset,
                    message_id=mid,
                    summary=one_line(f"todo {done}/{len(items)} done" + (f" · next: {nxt}" if nxt else "")),
                    data={"event": typ, "todo": items, "item_id": iid},
                )
            ]
        # started/updated of message items, unknown item types
        return [
            self._ev(
                Kind.SYSTEM,
                offset,
                message_id=mid,
                summary=one_line(f"{typ} {itype}"),
                data={"event": typ, "item": item},
            )
        ]

    def _tool_call(self, item: dict[str, Any], tid: str, offset: int) -> Event:
        itype = item.get("type")
        data: dict[str, Any] = {"item_id": item.get("id")}
        name = itype or "tool"
        summary = name
        if itype == "command_execution":
            cmd = command_text(item.get("command"))
            name = "exec"
            data["command"] = cmd
            mode = submit_mode(cmd)
            if mode is not None:
                data["sforge_submit"] = True
                data["submit_mode"] = mode
            summary = f"$ {cmd}"
        elif itype == "file_change":
            changes = list_at(item, "changes")
            data["changes"] = changes
            summary = "file change: " + ", ".join(
                f"{c.get('kind', '?')} {c.get('path', '?')}" for c in changes if isinstance(c, dict)
            )
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
            exit_code = int_or_none(item.get("exit_code"))
            cmd = command_text(item.get("command"))
            data["command"] = cmd
            data["exit_code"] = exit_code
            is_error = (exit_code is not None and exit_code != 0) or status in ("failed", "declined")
            rnd, summ = submit_fields(content, submit_mode(cmd), data)
        elif itype == "file_change":
            changes = list_at(item, "changes")
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
        return self._ev(
            Kind.TOOL_RESULT,
            offset,
            tool_use_id=tid,
            tool_name=name,
            is_error=bool(is_error),
            round=rnd,
            data=data,
            summary=one_line(summ) if summ else tool_result_summary(name, exit_code, content, is_error),
        )
