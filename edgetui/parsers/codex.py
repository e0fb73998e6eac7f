"""OpenAI Codex transcripts: human-readable ``codex exec`` output, ``codex exec --json``
streams and rollout (session) files.

Three :class:`~edgetui.parsers.base.LineParser` classes, one module each:

* :class:`CodexTextParser` (``codex_text``, this module) — what SForge stores in
  ``agent_output.txt`` (docs/transcript-formats.md §5): an optional
  ``Reading additional input from stdin...`` line, a header
  ``OpenAI Codex v<ver> (research preview)`` / ``--------`` / ``key: value`` lines /
  ``--------``, then blocks that start with bare marker lines ``user``, ``codex``,
  ``thinking``, ``exec``, ``tokens used`` (and ``file update``). Blocks span several
  lines, so the parser holds the open block and emits it when the next block
  starts (or in :meth:`~CodexTextParser.finish`); :meth:`~CodexTextParser.resume_offset`
  is then the open block's first line. The format has no timestamps.
* :class:`~edgetui.parsers.codex_exec.CodexJsonParser` (``codex_json``,
  ``codex_exec.py``) — ``codex exec --json`` in its three dialects.
* :class:`~edgetui.parsers.codex_rollout.CodexRolloutParser` (``codex_rollout``,
  ``codex_rollout.py``) — ``~/.codex/sessions/**/rollout-*.jsonl``.

The protocol's ``EventMsg`` vocabulary, which both the first ``--json`` dialect and
rollouts' ``event_msg`` records speak, is translated in ``codex_protocol.py``; the
helpers all of them share (and the OpenCode parser) are in ``codex_common.py``.

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
  :func:`~edgetui.parsers.sforge_submit.parse_sforge_submit_output` and ``round``.
* Bad input (non-JSON noise, invalid UTF-8, non-object JSON) → ``parse_error``
  events with the raw bytes; ``feed`` and ``finish`` never raise.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from edgetui.events import Event, Kind, one_line
from edgetui.parsers.base import parse_error
from edgetui.parsers.codex_common import (
    copy_state,
    first_line,
    submit_fields,
    submit_mode,
    tool_result_summary,
)
from edgetui.control_chars import strip_sequences
from edgetui.parsers.codex_common import SFORGE_EXIT_RE
from edgetui.parsers.codex_exec import CodexJsonParser
from edgetui.parsers.codex_rollout import CodexRolloutParser

__all__ = [
    "CodexTextParser",
    "CodexJsonParser",
    "CodexRolloutParser",
    "submit_mode",
    "submit_fields",
]

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
    """Human-readable ``codex exec`` output → events (agent_format ``codex_text``, docs/transcript-formats.md §5).

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
            self._st.update(copy_state(state))
        self._open: Optional[_Block] = None

    # -- protocol -------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        return copy_state(self._st)

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
        text = strip_sequences(text)  # colour codes and OSC strings: the terminal's, not the text's
        out: list[Event] = []

        # __SFORGE_EXIT__<n> (possibly glued to the last output line)
        if "__SFORGE_EXIT__" in text:
            m = SFORGE_EXIT_RE.search(raw)
            if m:
                prefix = text[: text.find("__SFORGE_EXIT__")]
                if prefix.strip():
                    if self._open is not None:
                        self._add_line(prefix, offset, raw, bad)
                    else:
                        out.extend(self._single(Kind.LOG, offset, prefix, raw if bad else None))
                out.extend(self._flush())
                code = int(m.group(1))
                ev = self._mk(
                    Kind.SEGMENT_END,
                    offset,
                    summary=f"agent process exited with code {code}",
                    is_error=code != 0,
                    level="error" if code != 0 else None,
                    data={"reason": "exit_marker", "exit_code": code},
                )
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
            tm = _TOKENS_INLINE_RE.match(stripped)
            if tm:  # one-line "tokens used: 1234"
                out.extend(self._flush())
                nb = _Block("tokens", offset)
                nb.lines.append(tm.group(1))
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
        return Event(
            kind=kind,
            source=self.source,
            generation=self.generation,
            offset=offset,
            agent_format=self.agent_format,
            **kw,
        )

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
        return self._mk(
            Kind.SEGMENT_START,
            offset,
            summary=f"segment {st['segment']} starts",
            data={"segment": st["segment"], **data},
        )

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
            out.append(
                self._mk(
                    Kind.SYSTEM,
                    blk.offset,
                    summary=one_line(blk.lines[0] if blk.lines else ""),
                    data={"text": "\n".join(blk.lines)},
                )
            )
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
        out.append(
            self._mk(
                Kind.SESSION_INIT,
                blk.offset,
                model=kv.get("model"),
                data=data,
                summary=one_line(
                    f"Codex v{version} · model {kv.get('model')} · session {kv.get('session_id')} · {kv.get('workdir')}"
                ),
            )
        )
        return out

    def _emit_user(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [self._mk(Kind.USER_MESSAGE, blk.offset, summary=one_line(text), data={"text": text})]

    def _emit_codex(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [
            self._mk(
                Kind.AGENT_MESSAGE, blk.offset, model=self._st["model"], summary=one_line(text), data={"text": text}
            )
        ]

    def _emit_thinking(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [
            self._mk(Kind.THINKING, blk.offset, model=self._st["model"], summary=one_line(text), data={"text": text})
        ]

    def _emit_file_update(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        return [
            self._mk(
                Kind.SYSTEM,
                blk.offset,
                summary=one_line(f"file update: {first_line(text)}"),
                data={"block": "file update", "text": text},
            )
        ]

    def _emit_tokens(self, blk: _Block) -> list[Event]:
        text = self._body(blk)
        digits = re.sub(r"[,._\s]", "", first_line(text))
        total = int(digits) if digits.isdigit() else None
        return [
            self._mk(
                Kind.TOKEN_USAGE,
                blk.offset,
                model=self._st["model"],
                summary=f"tokens used: {total if total is not None else one_line(text)}",
                data={
                    "total_tokens": total,
                    "text": text,
                    "note": "codex text prints only a total; no input/output split",
                },
            )
        ]

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
        out = [
            self._mk(
                Kind.TOOL_CALL,
                blk.offset,
                tool_use_id=tid,
                tool_name="exec",
                data=call_data,
                summary=one_line(f"$ {command}"),
            )
        ]
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
        out.append(
            self._mk(
                Kind.TOOL_RESULT,
                blk.offset,
                tool_use_id=tid,
                tool_name="exec",
                is_error=is_error,
                level="error" if is_error else None,
                round=rnd,
                data=res_data,
                summary=one_line(summ) if summ else tool_result_summary("exec", exit_code, content, is_error),
            )
        )
        return out
