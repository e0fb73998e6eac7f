"""Line parsers for SForge host logs: ``run_agent.log``, ``run_instance.log``, ``auto_eval_ticks.log``.

Facts used (docs/sforge-run-folders.md §3.5, §3.6, §4.2, §9):

* ``run_agent.log`` / ``run_instance.log`` are Python logging output
  ``YYYY-MM-DD HH:MM:SS,mmm - LEVEL - message`` in **host local time** (naive).
  A message can span several lines; the continuation lines carry no prefix
  (tracebacks after ``ERROR`` records, exception texts in warnings).
* ``auto_eval_ticks.log`` lines are ``[YYYY-MM-DDTHH:MM:SS] submitted N bytes ->
  <sid> round=auto-K`` or ``[...] error: <text>``, host local time, seconds.

Local times become epoch UTC with the host's UTC offset (``local = UTC +
offset``), derived once per run from ``started_at`` (see
:func:`edgetui.parsers.sforge_dir.read_started_at`). Without an offset the
times are read as UTC and every event carries ``data.tz_assumed = True``.

Event mapping of :class:`RunAgentLogParser`:

==============================================  ======================================
line                                            events
==============================================  ======================================
``Running agent: <cmd>... (timeout=Ns)``        SEGMENT_START (segment 0)
``Resuming agent (attempt k/100, Ns left): ..`` RESUME + SEGMENT_START (segment k)
``Agent exited after X.Xs, will resume``        SEGMENT_END (``will_resume`` true)
``Agent exited after only X.Xs ... not resum``  SEGMENT_END (``will_resume`` false)
``Draining N pending judge evals...``          LOG with ``data.draining`` = N
``Drain timed out after 15 min; ...`` (WARNING) LOG with ``data.drain_timed_out`` (reports
                                                of rounds still grading may be missing)
``Agent finished: runtime=..., timed_out=...``  SEGMENT_END of the open segment with
                                                ``agent_finished`` true (the run's end
                                                itself is RUN_END from final_result.json);
                                                LOG when no segment is open
``ERROR``/``CRITICAL`` record + unprefixed      one INFRA_ERROR (``data.traceback``); the
lines that follow                               record is held open until the next record
                                                (``resume_offset()``) or ``finish()``
unprefixed line after a non-error record        LOG with ``data.continuation_of`` = offset
                                                of that record (multi-line message)
any other record                                LOG with its level
unprefixed line before any record               parse_error
==============================================  ======================================

Message texts pass through :func:`redact_text` (``KEY=value`` assignments,
``sk-...`` keys, bearer tokens, URL passwords), so a command line that carries
a credential never reaches the database.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from functools import lru_cache
from typing import Any, Optional

from edgetui.events import Event, Kind, TimeSource, make_event, one_line
from edgetui.parsers.base import BOM, parse_error
from edgetui.redact import KeyBlockLines, redact_text as _redact

#: Longest traceback text kept in one INFRA_ERROR event (the rest is cut, flagged).
MAX_TRACEBACK_CHARS = 64 * 1024

_LOG_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3}) - ([A-Z]+) - ?(.*)$", re.S)
_TICK_RE = re.compile(r"^\[(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\] ?(.*)$", re.S)
_RUNNING_RE = re.compile(r"^Running agent: (.*?)(?:\.\.\. \(timeout=(\d+)s\))?$", re.S)
_RESUMING_RE = re.compile(r"^Resuming agent \(attempt (\d+)/(\d+), (-?\d+)s left\)(?::\s?(.*?))?(?:\.\.\.)?$", re.S)
_EXITED_RE = re.compile(r"^Agent exited after ([\d.]+)s, will resume")
_EXITED_ONLY_RE = re.compile(r"^Agent exited after only ([\d.]+)s")
_FINISHED_RE = re.compile(r"^Agent finished: runtime=([\d.]+)s, timed_out=(\w+), resumes=(\d+)")
_SUBMITTED_RE = re.compile(r"^submitted (\d+) bytes -> (\S+) round=(\S+)\s*$")
_TICK_ERROR_RE = re.compile(r"^error: ?(.*)$", re.S)
#: an HTTP error status in a tick's error text (``requests``' ``raise_for_status``: "503 Server
#: Error: Service Unavailable for url: …"); 503 = the judge's queue was full (docs/sforge-judge.md)
_TICK_HTTP_RE = re.compile(r"^(\d{3}) (?:Client|Server) Error\b")
#: the summary of a tick refused by a full judge (read back by the live side after a restart)
JUDGE_FULL_TICK = "auto-eval refused: judge full"
_DRAIN_TIMEOUT_RE = re.compile(r"^Drain timed out after (\d+) min")
_DRAINING_RE = re.compile(r"^Draining (\d+) pending judge evals")

# --------------------------------------------------------------------------- secrets in text


def redact_text(text: str) -> str:
    """Replace secrets in free text with ``<redacted>`` (:func:`edgetui.redact.redact_text`)."""
    return _redact(text)


# --------------------------------------------------------------------------- time


def local_to_epoch(fields: tuple[str, ...], millis: int, utc_offset_s: Optional[float]) -> float:
    """Epoch UTC of a naive host-local time given as (Y, m, d, H, M, S) strings.

    Raises ``ValueError`` for an impossible date. ``utc_offset_s`` None = UTC.
    """
    naive_utc = _hour_epoch(*fields[:4]) + _minute_second(fields[4], fields[5]) + millis / 1000.0
    return naive_utc - (utc_offset_s or 0.0)


@lru_cache(maxsize=256)
def _hour_epoch(y: str, mo: str, d: str, h: str) -> float:
    """Epoch of the naive UTC hour (a log's lines share a few hours: one datetime each)."""
    return datetime(int(y), int(mo), int(d), int(h), tzinfo=timezone.utc).timestamp()


@lru_cache(maxsize=4096)
def _minute_second(mi: str, s: str) -> int:
    m, sec = int(mi), int(s)
    if not (0 <= m <= 59 and 0 <= sec <= 59):
        datetime(1970, 1, 1, 0, m, sec)  # raises datetime's own ValueError (its text is recorded)
    return 60 * m + sec


def _decode(line: bytes) -> str:
    if line.endswith(b"\r"):
        line = line[:-1]
    return line.decode("utf-8", errors="replace")


#: ``sub`` of the parse_error that flags a log line's NUL or invalid UTF-8 bytes (the line's own
#: events keep sub 0, 1, …; the tail's and end-of-file's subs are 1 << 20 and above)
BAD_BYTES_SUB = 1 << 19


def bad_byte_at(line: bytes) -> Optional[tuple[int, str]]:
    """(index in ``line``, what) of the first NUL byte or byte that is not UTF-8, else None."""
    nul = line.find(b"\x00")
    if nul < 0 and line.isascii():
        return None
    try:
        line.decode("utf-8")
        bad = None
    except UnicodeDecodeError as e:
        bad = e.start
    if nul < 0 and bad is None:
        return None
    if bad is None or 0 <= nul < bad:
        return nul, "a NUL byte"
    return bad, f"byte 0x{line[bad]:02X}, not UTF-8"


def flag_bad_bytes(events: list[Event], source: str, generation: str, line: bytes, offset: int) -> list[Event]:
    """A log line with NUL or invalid UTF-8 bytes is still read (as text with U+FFFD) and is also
    flagged: a parse_error at the line's offset (``sub`` :data:`BAD_BYTES_SUB`) naming the file
    byte of the first bad one (``data.bad_byte``), keeping the line's raw bytes. A parse_error the
    line gives anyway (no prefix) gets ``data.bad_byte`` instead of a second one."""
    got = bad_byte_at(line)
    if got is None:
        return events
    i, what = got
    at = offset + i
    for e in events:
        if e.kind == Kind.PARSE_ERROR and e.offset == offset:
            e.data["bad_byte"] = at
            return events
    ev = parse_error(
        source,
        generation,
        offset,
        line,
        f"{what} at byte {at}; the line is read with U+FFFD in its place",
        sub=BAD_BYTES_SUB,
    )
    ev.data["bad_byte"] = at
    events.append(ev)
    return events


_RECORDED, _LOG = TimeSource.RECORDED.value, Kind.LOG.value


def _float(t: Any) -> Optional[float]:
    """``t`` as the Event's ``t`` field holds it (a resumed state's time may be an int)."""
    return t if t is None or type(t) is float else float(t)


def _num(text: Optional[str]) -> Optional[float]:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


# --------------------------------------------------------------------------- run_agent.log


#: ``sub`` of a provisional ERROR record (see :meth:`RunAgentLogParser.peek_open`).
PROVISIONAL_SUB = 1 << 21


class RunAgentLogParser:
    """LineParser for ``run_agent.log`` (and, with ``error_kind=Kind.LOG``, ``run_instance.log``).

    ``state()`` = ``{"segment", "seg_open", "resumes", "last"}`` where ``last``
    describes the previous record (offset, level, t, segment) for continuation
    lines. While an ERROR record is open, ``state()`` is the state *before* it
    and ``resume_offset()`` its first byte.
    """

    def __init__(
        self,
        source: str,
        generation: str,
        utc_offset_s: Optional[float],
        state: Optional[dict[str, Any]] = None,
        *,
        error_kind: Kind = Kind.INFRA_ERROR,
    ) -> None:
        self.source = source
        self.generation = generation
        self.utc_offset_s = utc_offset_s
        self.error_kind = error_kind
        st = state or {}
        self.segment: Optional[int] = st.get("segment")
        self.seg_open: bool = bool(st.get("seg_open", False))
        self.resumes: int = int(st.get("resumes", 0) or 0)
        self.last: Optional[dict[str, Any]] = st.get("last")
        self._open: Optional[dict[str, Any]] = None
        self._snap: Optional[dict[str, Any]] = None
        self._keys = KeyBlockLines(bool(st.get("in_key")))  # a private key's body lines, one a record

    # -- protocol

    def state(self) -> dict[str, Any]:
        if self._snap is not None:
            return dict(self._snap)
        return self._state_now()

    def resume_offset(self) -> Optional[int]:
        return self._open["offset"] if self._open is not None else None

    def finish(self) -> list[Event]:
        return self._close()

    def peek_open(self) -> Optional[Event]:
        """The event the held ERROR record would give if it ended now (``None`` when none is held),
        with ``sub`` = :data:`PROVISIONAL_SUB` so that it never collides with the final one. The live
        tailer records it when the log stays quiet (an ERROR as the log's last line would otherwise
        wait for the next line); the final record replaces it (:meth:`Recorder.insert_table`)."""
        if self._open is None:
            return None
        held = (self._open, self._snap, self._keys.inside)  # _close only changes these (it never edits the record)
        try:
            ev = self._close()[0]
        finally:
            self._open, self._snap, self._keys.inside = held
        ev.sub = PROVISIONAL_SUB
        ev.data = {**(ev.data or {}), "provisional": True}
        return ev

    @staticmethod
    def final_of(provisional: Event) -> Event:
        """The event a :meth:`peek_open` event stands for, as :meth:`finish` gives it (the same
        ``event_id`` as an offline ingest's): for a log that gets no more lines (its run is over)."""
        data = {k: v for k, v in (provisional.data or {}).items() if k != "provisional"}
        return provisional.model_copy(update={"sub": 0, "data": data})

    def feed(self, line: bytes, offset: int) -> list[Event]:
        return flag_bad_bytes(self._feed(line, offset), self.source, self.generation, line, offset)

    def _feed(self, line: bytes, offset: int) -> list[Event]:
        if offset == 0 and line.startswith(BOM):
            line = line[len(BOM) :]
        text = _decode(line)
        m = _LOG_RE.match(text)
        if m is None:
            return self._continuation(text, line, offset)
        out = self._close()
        try:
            t = local_to_epoch(m.group(1, 2, 3, 4, 5, 6), int(m.group(7)), self.utc_offset_s)
        except ValueError as e:
            self.last = None
            out.append(parse_error(self.source, self.generation, offset, line, f"bad timestamp: {e}"))
            return out
        level = m.group(8)
        msg = m.group(9)
        if level in ("ERROR", "CRITICAL"):
            self._snap = self._state_now()
            self._open = {
                "offset": offset,
                "t": t,
                "level": level,
                "message": msg,
                "lines": [],
                "size": 0,
                "cut": False,
            }
            self.last = {"offset": offset, "level": level, "t": t, "segment": self._cur_segment(), "error": True}
            return out
        out.extend(self._record(t, level, msg, offset))
        return out

    # -- internals

    def _state_now(self) -> dict[str, Any]:
        return {
            "segment": self.segment,
            "seg_open": self.seg_open,
            "resumes": self.resumes,
            "last": self.last,
            "in_key": self._keys.inside,
        }

    def _cur_segment(self) -> Optional[int]:
        return self.segment if self.seg_open else None

    def _ev(self, kind: Kind, t: float, level: str, msg: str, offset: int, sub: int = 0, **kw: Any) -> Event:
        data = kw.pop("data", {})
        data.setdefault("message", msg)
        if self.utc_offset_s is None:
            data["tz_assumed"] = True
        d = {
            "kind": kind.value,
            "source": self.source,
            "generation": self.generation,
            "offset": offset,
            "sub": sub,
            "t": _float(t),
            "t_source": _RECORDED,
            "level": level,
            "summary": kw.pop("summary", None) or one_line(msg),
            "data": data,
        }
        d.update(kw)
        return make_event(d)

    def _record(self, t: float, level: str, msg: str, offset: int) -> list[Event]:
        msg = self._keys.line(msg)
        self.last = {"offset": offset, "level": level, "t": t, "segment": self._cur_segment(), "error": False}
        m = _RUNNING_RE.match(msg)
        if m:
            self.segment, self.seg_open = 0, True
            self.last["segment"] = 0
            data = {"cmd": m.group(1), "timeout_s": _num(m.group(2))}
            return [
                self._ev(Kind.SEGMENT_START, t, level, msg, offset, segment=0, data=data, summary="segment 0 started")
            ]
        m = _RESUMING_RE.match(msg)
        if m:
            k = int(m.group(1))
            self.segment, self.seg_open, self.resumes = k, True, max(self.resumes, k)
            self.last["segment"] = k
            data = {"attempt": k, "max_attempts": int(m.group(2)), "remaining_s": _num(m.group(3)), "cmd": m.group(4)}
            left = f", {m.group(3)}s left" if m.group(3) else ""
            return [
                self._ev(
                    Kind.RESUME,
                    t,
                    level,
                    msg,
                    offset,
                    0,
                    segment=k,
                    data=dict(data),
                    summary=f"auto-resume {k}/{m.group(2)}{left}",
                ),
                self._ev(
                    Kind.SEGMENT_START,
                    t,
                    level,
                    msg,
                    offset,
                    1,
                    segment=k,
                    data=dict(data),
                    summary=f"segment {k} started",
                ),
            ]
        m = _EXITED_RE.match(msg) or _EXITED_ONLY_RE.match(msg)
        if m and self.segment is not None:
            seg = self.segment
            self.seg_open = False
            will = m.re is _EXITED_RE
            data = {"elapsed_s": _num(m.group(1)), "will_resume": will}
            return [
                self._ev(
                    Kind.SEGMENT_END,
                    t,
                    level,
                    msg,
                    offset,
                    segment=seg,
                    data=data,
                    summary=f"segment {seg} ended after {m.group(1)}s",
                )
            ]
        m = _FINISHED_RE.match(msg)
        if m:
            data = {
                "agent_finished": True,
                "runtime_s": _num(m.group(1)),
                "timed_out": m.group(2) == "True",
                "resumes": int(m.group(3)),
            }
            if self.seg_open and self.segment is not None:
                seg = self.segment
                self.seg_open = False
                return [
                    self._ev(Kind.SEGMENT_END, t, level, msg, offset, segment=seg, data=data, summary=one_line(msg))
                ]
            return [self._ev(Kind.LOG, t, level, msg, offset, data=data)]
        m = _DRAIN_TIMEOUT_RE.match(msg)
        if m:  # the harness stopped waiting for the judge: rounds still grading may have no report
            data = {"drain_timed_out": True, "drain_min": int(m.group(1))}
            summary = f"judge drain timed out after {m.group(1)} min: some reports may be missing"
            return [self._ev(Kind.LOG, t, level, msg, offset, segment=self._cur_segment(), data=data, summary=summary)]
        m = _DRAINING_RE.match(msg)
        if m:
            data = {"draining": int(m.group(1))}
            summary = f"waiting for the judge: {m.group(1)} evaluations pending"
            return [self._ev(Kind.LOG, t, level, msg, offset, segment=self._cur_segment(), data=data, summary=summary)]
        return [self._ev(Kind.LOG, t, level, msg, offset, segment=self._cur_segment())]

    def _continuation(self, text: str, raw: bytes, offset: int) -> list[Event]:
        if self._open is not None:
            o = self._open
            if not o["cut"]:
                if o["size"] + len(text) + 1 > MAX_TRACEBACK_CHARS:
                    o["cut"] = True
                else:
                    o["lines"].append(text)
                    o["size"] += len(text) + 1
            return []
        if self.last is None:
            if not text.strip():
                return []
            return [
                parse_error(
                    self.source,
                    self.generation,
                    offset,
                    self._keys.line_bytes(raw),
                    "line without a 'YYYY-MM-DD HH:MM:SS,mmm - LEVEL - ' prefix",
                )
            ]
        if not text.strip():
            return []
        last = self.last
        msg = self._keys.line(text)
        return [
            make_event(
                {
                    "kind": _LOG,
                    "source": self.source,
                    "generation": self.generation,
                    "offset": offset,
                    "t": _float(last.get("t")),
                    "t_source": _RECORDED,
                    "level": last.get("level"),
                    "segment": last.get("segment"),
                    "summary": one_line(msg),
                    "data": {
                        "message": msg,
                        "continuation_of": last.get("offset"),
                        **({"tz_assumed": True} if self.utc_offset_s is None else {}),
                    },
                }
            )
        ]

    def _close(self) -> list[Event]:
        o = self._open
        if o is None:
            return []
        self._open = None
        self._snap = None
        msg = self._keys.line(o["message"])  # (the record's lines in their order: a key block across them)
        lines = [self._keys.line(ln) for ln in o["lines"]]
        while lines and not lines[-1].strip():
            lines.pop()
        tb = "\n".join(lines) if lines else None
        exc = next((ln.strip() for ln in reversed(lines) if ln.strip()), None) if lines else None
        head = msg.strip()
        if (not head or head.startswith("Traceback")) and exc:
            head = exc
        data: dict[str, Any] = {"message": msg, "traceback": tb, "exception": exc}
        if o["cut"]:
            data["traceback_truncated"] = True
        if self.error_kind != Kind.INFRA_ERROR:
            data["error"] = True
        ev = self._ev(
            self.error_kind,
            o["t"],
            o["level"],
            msg,
            o["offset"],
            segment=self._cur_segment(),
            data=data,
            summary=one_line(head),
        )
        return [ev]


#: what a submission folder records of its ``run_instance.log`` (see
#: :func:`edgetui.parsers.sforge_dir.submission_events`): records and continuation lines of these
#: levels, and lines whose message starts with one of these prefixes (parse errors always)
JUDGE_KEPT_LEVELS = ("ERROR", "CRITICAL", "WARNING")
JUDGE_KEPT_PREFIXES = ("Result:", "Test runtime:", "Judge container started:")
#: messages that may change the parser's segment state (``_RUNNING_RE`` and the others): read in full
_SEGMENT_PREFIXES = ("Running agent", "Resuming agent", "Agent ")


class JudgeLogParser(RunAgentLogParser):
    """:class:`RunAgentLogParser` of a ``run_instance.log`` (``error_kind=Kind.LOG``) that builds no
    event for a line its submission folder drops anyway: a plain record or continuation line whose
    level is not in :data:`JUDGE_KEPT_LEVELS` and whose message does not start with
    :data:`JUDGE_KEPT_PREFIXES` (most of a judge log: ~6 of its ~9 lines). Every other line gives
    the events :class:`RunAgentLogParser` gives, and the state moves as there.

    ``end_t`` (epoch s UTC, or None) is the time of the last timed non-parse-error event the full
    parser would have given so far, dropped ones included (the judge container's end, which
    :func:`edgetui.parsers.sforge_dir.result_known_time` falls back on)."""

    def __init__(
        self, source: str, generation: str, utc_offset_s: Optional[float], state: Optional[dict[str, Any]] = None
    ) -> None:
        super().__init__(source, generation, utc_offset_s, state, error_kind=Kind.LOG)
        self.end_t: Optional[float] = None
        self._dropped_t: Optional[float] = None

    def feed(self, line: bytes, offset: int) -> list[Event]:
        self._dropped_t = None
        out = super().feed(line, offset)
        self._note_end(out)
        return out

    def finish(self) -> list[Event]:
        self._dropped_t = None
        out = super().finish()
        self._note_end(out)
        return out

    def _note_end(self, out: list[Event]) -> None:
        # a dropped line's event would come after the others of its call (a closed ERROR record
        # first, a bad-byte parse_error, untimed, after it)
        if self._dropped_t is not None:
            self.end_t = self._dropped_t
            return
        for e in reversed(out):
            if e.t is not None and e.kind != Kind.PARSE_ERROR:
                self.end_t = e.t
                return

    def _record(self, t: float, level: str, msg: str, offset: int) -> list[Event]:
        if level in JUDGE_KEPT_LEVELS or msg.startswith(JUDGE_KEPT_PREFIXES) or msg.startswith(_SEGMENT_PREFIXES):
            return super()._record(t, level, msg, offset)
        # (redaction never makes a message start with a kept prefix: checking the raw text is enough)
        self._keys.observe(msg)
        self.last = {"offset": offset, "level": level, "t": t, "segment": self._cur_segment(), "error": False}
        self._dropped_t = t
        return []

    def _continuation(self, text: str, raw: bytes, offset: int) -> list[Event]:
        last = self.last
        if (
            self._open is None
            and last is not None
            and last.get("level") not in JUDGE_KEPT_LEVELS
            and not text.startswith(JUDGE_KEPT_PREFIXES)
        ):
            if text.strip() and last.get("t") is not None:
                self._dropped_t = last.get("t")
            self._keys.observe(text)
            return []
        return super()._continuation(text, raw, offset)


# --------------------------------------------------------------------------- auto_eval_ticks.log


class AutoEvalTicksParser:
    """LineParser for ``auto_eval_ticks.log`` (one line per auto-eval tick, no multi-line records).

    ``submitted N bytes -> <sid> round=auto-K`` → SUBMISSION_SENT (``round``,
    ``data.submission_id``, ``data.bytes``, ``data.kind = "auto"``);
    ``error: <text>`` → AUTO_EVAL_ERROR (``data.http_status`` when the text starts with
    ``NNN Client/Server Error``; ``data.judge_full`` for a 503: the judge's queue was full);
    any other ``[ts] text`` → LOG;
    an unprefixed line after a record → LOG with ``data.continuation_of``
    (exception texts with newlines); before any record → parse_error.
    """

    def __init__(
        self, source: str, generation: str, utc_offset_s: Optional[float], state: Optional[dict[str, Any]] = None
    ) -> None:
        self.source = source
        self.generation = generation
        self.utc_offset_s = utc_offset_s
        self.last: Optional[dict[str, Any]] = (state or {}).get("last")
        self._keys = KeyBlockLines(bool((state or {}).get("in_key")))

    def state(self) -> dict[str, Any]:
        return {"last": self.last, "in_key": self._keys.inside}

    def resume_offset(self) -> Optional[int]:
        return None

    def finish(self) -> list[Event]:
        return []

    def feed(self, line: bytes, offset: int) -> list[Event]:
        return flag_bad_bytes(self._feed(line, offset), self.source, self.generation, line, offset)

    def _feed(self, line: bytes, offset: int) -> list[Event]:
        if offset == 0 and line.startswith(BOM):
            line = line[len(BOM) :]
        text = _decode(line)
        tz = {"tz_assumed": True} if self.utc_offset_s is None else {}
        m = _TICK_RE.match(text)
        if m is None:
            if not text.strip():
                return []
            if self.last is None:
                return [
                    parse_error(
                        self.source, self.generation, offset, line, "line without a '[YYYY-MM-DDTHH:MM:SS]' prefix"
                    )
                ]
            msg = self._keys.line(text)
            return [
                Event(
                    kind=Kind.LOG,
                    source=self.source,
                    generation=self.generation,
                    offset=offset,
                    t=self.last.get("t"),
                    t_source=TimeSource.RECORDED,
                    level=self.last.get("level"),
                    summary=one_line(msg),
                    data={"message": msg, "continuation_of": self.last.get("offset"), **tz},
                )
            ]
        try:
            t = local_to_epoch(m.group(1, 2, 3, 4, 5, 6), 0, self.utc_offset_s)
        except ValueError as e:
            self.last = None
            return [parse_error(self.source, self.generation, offset, line, f"bad timestamp: {e}")]
        msg = self._keys.line(m.group(7))
        common: dict[str, Any] = dict(
            source=self.source, generation=self.generation, offset=offset, t=t, t_source=TimeSource.RECORDED
        )
        sm = _SUBMITTED_RE.match(msg)
        if sm:
            self.last = {"offset": offset, "t": t, "level": "INFO"}
            sid = sm.group(2)
            rnd = sm.group(3)
            data = {
                "message": msg,
                "submission_id": None if sid == "?" else sid,
                "bytes": int(sm.group(1)),
                "kind": "auto",
                **tz,
            }
            return [
                Event(
                    kind=Kind.SUBMISSION_SENT,
                    round=None if rnd == "?" else rnd,
                    level="INFO",
                    summary=one_line(f"auto-eval submitted {rnd} ({sm.group(1)} bytes)"),
                    data=data,
                    **common,
                )
            ]
        em = _TICK_ERROR_RE.match(msg)
        if em:
            self.last = {"offset": offset, "t": t, "level": "ERROR"}
            data = {"message": em.group(1), **tz}
            summary = f"auto-eval error: {em.group(1)}"
            hm = _TICK_HTTP_RE.match(em.group(1))
            if hm:
                data["http_status"] = int(hm.group(1))
                if data["http_status"] == 503:
                    data["judge_full"] = True
                    summary = f"{JUDGE_FULL_TICK} (HTTP 503), no round spent"
            return [Event(kind=Kind.AUTO_EVAL_ERROR, level="ERROR", summary=one_line(summary), data=data, **common)]
        self.last = {"offset": offset, "t": t, "level": None}
        return [Event(kind=Kind.LOG, summary=one_line(msg), data={"message": msg, **tz}, **common)]
