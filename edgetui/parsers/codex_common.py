"""Helpers shared by the Codex and OpenCode JSON-lines parsers.

* :func:`submit_mode` /
  :func:`submit_fields` (sforge-submit calls and their results, as the Claude
  parser marks them), OpenAI usage → :class:`~edgetui.events.Usage`;
* :class:`JsonLinesParser`: one JSON object per line, segments
  (``__SFORGE_EXIT__<n>`` → ``segment_end``, a second init record → ``segment_start``),
  bad input → ``parse_error`` with the raw bytes; ``feed`` and ``finish`` never raise.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Optional

import orjson

from edgetui.error_log import note_swallowed
from edgetui.events import Event, Kind, TimeSource, Usage, one_line
from edgetui.parsers.base import loads_lenient, parse_error
from edgetui.parsers.sforge_submit import parse_sforge_submit_output, sforge_submit_mode
from edgetui.parsers.json_fields import str_at
from edgetui.parsers.sforge_submit import submit_summary  # one summary style for submit results

T_RECORDED = TimeSource.RECORDED.value

__all__ = [
    "T_RECORDED",
    "JsonLinesParser",
    "submit_mode",
    "submit_fields",
    "command_text",
    "first_line",
    "int_or_none",
    "usage_from",
    "copy_state",
    "remember",
    "tool_result_summary",
]

# ----------------------------------------------------------------------------------------
# shared helpers

_SFORGE_EXIT = b"__SFORGE_EXIT__"
SFORGE_EXIT_RE = re.compile(rb"__SFORGE_EXIT__(-?\d+)[ \t\r]*$")


def submit_mode(command: Any) -> Optional[str]:
    """``submit`` / ``details`` / ``list`` / ``result`` when the shell ``command`` invokes sforge-submit, else None."""
    if command is None:
        return None
    try:
        return sforge_submit_mode(command)
    except Exception:  # noqa: BLE001 - a foreign helper must not break parsing
        note_swallowed("a foreign helper must not break parsing")
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
    except Exception:  # noqa: BLE001 - a transcript's odd text must not stop its parse
        res = {}
    if not res and mode is None:
        return None, None
    data["sforge_submit"] = True
    if mode is not None:
        data["submit_mode"] = mode
    data["submit_result"] = res
    summ = None
    if res:
        try:
            summ = submit_summary(res)
        except Exception:  # noqa: BLE001 - a transcript's odd text must not stop its parse
            summ = None
    if mode == "result" or res.get("mode") == "result":
        return None, summ  # a --result read names the round it read again: not a new submission's result
    return str_at(res, "round"), summ


def command_text(cmd: Any) -> Optional[str]:
    """A shell command as one string (argv lists are shell-joined)."""
    if cmd is None:
        return None
    if isinstance(cmd, list):
        try:
            return shlex.join(str(c) for c in cmd)
        except Exception:  # noqa: BLE001 - a transcript's odd text must not stop its parse
            note_swallowed("a transcript's odd text must not stop its parse")
            return " ".join(str(c) for c in cmd)
    return cmd if isinstance(cmd, str) else str(cmd)


def first_line(text: Any) -> str:
    if not isinstance(text, str):
        return "" if text is None else str(text)
    for ln in text[:4000].splitlines():
        if ln.strip():
            return ln
    return ""


def int_or_none(v: Any) -> Optional[int]:
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


def usage_from(d: Any) -> Optional[Usage]:
    """OpenAI-style usage dict → :class:`Usage` in edgetui's convention.

    OpenAI reports ``input_tokens`` *including* cached input; edgetui's
    ``Usage.input_tokens`` is uncached input (Claude's convention), so the cached
    part is moved to ``cache_read_tokens`` only (input = reported input − cached,
    never below 0). ``data.raw_usage`` keeps the numbers as reported.
    """
    if not isinstance(d, dict):
        return None
    cached = int_or_none(d.get("cached_input_tokens")) or 0
    return Usage(
        input_tokens=max(0, (int_or_none(d.get("input_tokens")) or 0) - cached),
        output_tokens=int_or_none(d.get("output_tokens")) or 0,
        cache_read_tokens=int_or_none(d.get("cached_input_tokens")) or 0,
        cache_write_tokens=int_or_none(d.get("cache_write_input_tokens")) or 0,
    )


def copy_state(st: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(orjson.dumps(st))


def remember(d: dict[str, Any], key: str, value: Any, cap: int = 500) -> None:
    """Insert into a bounded insertion-ordered dict kept in parser state."""
    d[key] = value
    while len(d) > cap:
        del d[next(iter(d))]


def tool_result_summary(
    tool: Optional[str], exit_code: Optional[int], text: Any, is_error: Optional[bool], state: Optional[str] = None
) -> str:
    """``<tool> → exit N: <first line of the output>``; ``state`` (``running (session 7)``, ``ok``,
    ``failed``...) stands where no exit code is known; an empty output leaves the head alone."""
    head = tool or "tool"
    if exit_code is not None:
        head += f" → exit {exit_code}"
    elif state:
        head += f" → {state}"
    elif is_error:
        head += " → error"
    else:
        head += " →"
    line = first_line(text)
    return one_line(f"{head}: {line}" if line.strip() else head)


# ----------------------------------------------------------------------------------------
# JSON-lines base


class JsonLinesParser:
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
            self._st.update(copy_state(state))

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
        return copy_state(self._st)

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
        return Event(
            kind=kind,
            source=self.source,
            generation=self.generation,
            offset=offset,
            agent_format=self.agent_format,
            **kw,
        )

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
        return self._ev(
            Kind.SEGMENT_START,
            offset,
            summary=f"segment {st['segment']} starts",
            data={"segment": st["segment"], **data},
        )

    def _init_record(self, offset: int, **data: Any) -> list[Event]:
        """Called for a record that opens an agent process (init); a second one starts a new segment
        (after what :meth:`_segment_cut` says of the segment it closes)."""
        out = [*self._segment_cut(offset), self._new_segment(offset, **data)] if self._st["seg_init"] else []
        self._st["seg_init"] = True
        return out

    def _segment_cut(self, offset: int) -> list[Event]:
        """Events closing an open segment that another agent process's init record follows at
        ``offset`` (a cut-off segment's ``segment_end``); none here."""
        return []

    def _after_record(self, offset: int, t: Optional[float], events: list[Event]) -> None:
        """Called after each JSON-object record with its offset, recorded time and events."""

    def _feed(self, line: bytes, offset: int) -> list[Event]:
        s = line.strip()
        if not s:
            return []
        exit_code: Optional[int] = None
        if not s.endswith(b"}") and _SFORGE_EXIT in s:
            m = SFORGE_EXIT_RE.search(s)
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
                                    # use_enum_values: the field holds the enum's str value, as validation sets it
                                    ev.t, ev.t_source = t, T_RECORDED  # type: ignore[assignment]
                        self._after_record(offset, t, events)
                    else:
                        events.append(self._perr(offset, line, f"JSON value is not an object ({type(obj).__name__})"))
        if exit_code is not None:
            self._st["after_exit"] = True
            events.append(
                self._ev(
                    Kind.SEGMENT_END,
                    offset,
                    summary=f"agent process exited with code {exit_code}",
                    is_error=exit_code != 0,
                    data={"reason": "exit_marker", "exit_code": exit_code},
                )
            )
        return events

    def _handle(self, obj: dict[str, Any], offset: int) -> list[Event]:  # pragma: no cover - abstract
        raise NotImplementedError
