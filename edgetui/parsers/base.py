"""Shared parser plumbing: line reading by byte offset, file generations, parse errors.

Facts used: agent_output.txt is appended chunk by chunk, so the last line can be
half-written (docs/transcript-formats.md §2); files may carry a UTF-8 BOM, CRLF line
ends, invalid UTF-8 or single lines far over 20 MB.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator, Optional, Protocol

import orjson

from edgetui.events import Event, Kind, one_line
from edgetui.parsers.run_folder_files import (
    WHOLE_FILE_LIMIT,
    SkippedRunFile,
    non_regular_kind,  # noqa: F401 - re-exported
    open_run_file,
    read_run_file,
)

import json

# --- the long-line rule: one rule for offline ingest and live tailing (line_events) -------------
#: Lines up to this size are recorded whole.
LINE_WHOLE_MAX = 4 * 1024 * 1024
#: Lines up to this size are still parsed into their events; any string of such a line longer
#: than PAYLOAD_HEAD + PAYLOAD_TAIL characters (a 15 MB tool result) keeps its head and tail,
#: and the event's ``data["long_line"]`` gives the line's full size and byte range.
MAX_LINE_BYTES = 64 * 1024 * 1024
PAYLOAD_HEAD = 128 * 1024
PAYLOAD_TAIL = 128 * 1024
#: Lines longer than MAX_LINE_BYTES become a parse_error keeping their first and last RAW_KEEP
#: bytes, the full size and byte range; the rest of the file still loads.
#: How many raw bytes of a bad record are kept in the database (head; a too-long line also its tail).
RAW_KEEP = 64 * 1024
GENERATION_PREFIX_BYTES = 4096
#: ``sub`` of the events a parser's ``finish()`` adds after a finished file's last line (a cut-off
#: stream's ``segment_end``): beyond any line's own event ids, and deleted again (then said anew if
#: still true) when the file grows, so a stream still growing is never left ``incomplete``
END_OF_FILE_SUB = (1 << 20) + 1
BOM = b"\xef\xbb\xbf"


class LineParser(Protocol):
    """A stateful line parser that can resume from a saved state.

    ``feed(line, offset)`` gets one complete line (terminator stripped, a
    trailing ``\\r`` may remain) and the byte offset where it starts; it returns
    the events of that line with ``sub`` = 0, 1, ... ``state()`` returns a small
    JSON-serialisable dict; a parser built with that dict continues exactly as
    the original would have after the same line.

    Parsers whose records span several lines (Codex text blocks, a traceback
    after an ERROR line) hold the open record until the next record starts;
    ``resume_offset()`` then returns the offset of that open record's first
    line (a resumed ingest restarts there and ``state()`` describes the parser
    *before* that record), else ``None``. ``finish()`` flushes the open record
    at the end of a finished file.
    """

    def feed(self, line: bytes, offset: int) -> list[Event]: ...

    def state(self) -> dict[str, Any]: ...

    def resume_offset(self) -> Optional[int]: ...

    def finish(self) -> list[Event]: ...


@dataclass
class Line:
    offset: int  # byte offset of the first byte of the line in the file
    data: bytes  # without the trailing "\n" (and without "\r")
    end: int  # offset just after the line terminator
    too_long: bool = False
    tail: bytes = b""  # a too-long line's last RAW_KEEP bytes


def _cut_strings(obj: Any, path: str, cuts: list[dict]) -> Any:
    if isinstance(obj, str):
        if len(obj) > PAYLOAD_HEAD + PAYLOAD_TAIL:
            n = len(obj) - PAYLOAD_HEAD - PAYLOAD_TAIL
            cuts.append({"path": path or "$", "chars": len(obj)})
            return (
                f"{obj[:PAYLOAD_HEAD]}\n[… {n} characters cut (long line): head and tail kept …]\n{obj[-PAYLOAD_TAIL:]}"
            )
        return obj
    if isinstance(obj, dict):
        return {k: _cut_strings(v, f"{path}.{k}" if path else str(k), cuts) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_cut_strings(v, f"{path}[{i}]", cuts) for i, v in enumerate(obj)]
    return obj


def line_events(parser: "LineParser", line: Line, source: str, gen: str) -> list[Event]:
    """Events of one complete line under the long-line rule (offline ingest and live tail alike).

    Up to :data:`LINE_WHOLE_MAX` bytes: the parser's events as they are. Up to
    :data:`MAX_LINE_BYTES`: parsed, then every string of each event's ``data`` longer
    than :data:`PAYLOAD_HEAD` + :data:`PAYLOAD_TAIL` characters keeps its head and tail,
    ``data["long_line"] = {"bytes": N, "range": [offset, end], "cut": [{"path", "chars"}]}``
    (byte offsets in the file: the full line can be read back from there). Longer: one
    ``parse_error`` keeping the first and last :data:`RAW_KEEP` bytes, with the same
    ``long_line`` facts. Never raises for bad input (parsers never do).
    """
    size = line.end - line.offset
    if line.too_long:
        ev = parse_error(
            source,
            gen,
            line.offset,
            line.data + (b"\n[...]\n" + line.tail if line.tail else b""),
            f"line of {size} bytes, over the {MAX_LINE_BYTES >> 20} MiB parsed; first and last "
            f"{RAW_KEEP >> 10} KiB kept",
        )
        ev.raw = line.data[:RAW_KEEP] + (b"\n[...]\n" + line.tail[-RAW_KEEP:] if line.tail else b"")
        ev.data = {
            **(ev.data or {}),
            "long_line": {"bytes": size, "range": [line.offset, line.end]},
        }  # with its newline
        return [ev]
    evs = parser.feed(line.data, line.offset)
    if len(line.data) > LINE_WHOLE_MAX:
        for e in evs:
            cuts: list[dict] = []
            if e.data:
                e.data = _cut_strings(e.data, "", cuts)
            if e.raw and len(e.raw) > 2 * RAW_KEEP:
                e.raw = e.raw[:RAW_KEEP] + b"\n[...]\n" + e.raw[-RAW_KEEP:]
            e.data = {**(e.data or {}), "long_line": {"bytes": size, "range": [line.offset, line.end], "cut": cuts}}
    return evs


#: A run file not read (a FIFO, socket or device, a link out of the run folder, a link loop, over
#: its size bound): :class:`edgetui.parsers.run_folder_files.SkippedRunFile`.
NotRegularFile = SkippedRunFile


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """Open ``path`` for binary reading only if it is a regular file (and, inside
    :func:`~edgetui.parsers.run_folder_files.reading_run_folder`, inside the run folder):
    :func:`edgetui.parsers.run_folder_files.open_run_file`. Never blocks on a FIFO. Raises
    :class:`NotRegularFile` (an ``OSError`` whose message says what the file is) or any other
    ``OSError``.
    """
    return open_run_file(path)


def read_regular(path: str | os.PathLike, limit: int = WHOLE_FILE_LIMIT) -> bytes:
    """The bytes of a regular file (:func:`open_regular`'s rules), at most ``limit``
    (:func:`edgetui.parsers.run_folder_files.read_run_file`: a longer file is skipped, noted)."""
    return read_run_file(path, limit=limit)


def file_generation(path: str | os.PathLike) -> Optional[str]:
    """Generation id of a file: 16 hex of sha1 over its first line (at most 4 KiB).

    Returns ``None`` while the file holds no complete line yet (a live file that
    has just been created). The id does not depend on the inode so a copied run
    directory ingests into the same rows; a truncated or rewritten file has a
    different first line (SForge writes a timestamp, session id or init record
    there) and so becomes a new generation. The live tailer additionally treats
    ``size < offset`` and an inode change as a new generation.
    """
    try:
        with open_regular(path) as fp:
            head = fp.read(GENERATION_PREFIX_BYTES)
    except OSError:
        return None
    return generation_of_head(head)


def generation_of_head(head: bytes) -> Optional[str]:
    nl = head.find(b"\n")
    if nl < 0:
        if len(head) < GENERATION_PREFIX_BYTES:
            return None
        prefix = head
    else:
        prefix = head[: nl + 1]
    return hashlib.sha1(prefix).hexdigest()[:16]


class Readable(Protocol):
    """What :func:`iter_lines` reads through: a binary file, or a view of one that stops early."""

    def seek(self, pos: int, /) -> int: ...
    def read(self, n: int = -1, /) -> bytes: ...


def iter_lines(fp: Readable, start: int = 0, *, final: bool = True, chunk: int = 1 << 20) -> Iterator[Line]:
    """Yield complete lines of ``fp`` from byte ``start``.

    A last line without ``\\n`` is yielded only when ``final`` is true (offline
    ingest of a finished file: a truncated last line is still data); a live
    tailer passes ``final=False`` so a half-written line waits for its newline.
    Lines over :data:`MAX_LINE_BYTES` are yielded with ``too_long=True`` and
    ``data`` holding only their first :data:`RAW_KEEP` bytes; memory stays
    bounded by ``chunk`` + :data:`MAX_LINE_BYTES`.
    A UTF-8 BOM at offset 0 is skipped.
    """
    fp.seek(start)
    pos = start
    buf = b""
    if start == 0:
        head = fp.read(3)
        if head == BOM:
            pos = 3
        else:
            buf = head
    buf_start = pos
    skipping: Optional[Line] = None  # a too-long line being skipped
    while True:
        block = fp.read(chunk)
        if not block:
            break
        if skipping is not None:
            nl = block.find(b"\n")
            if nl < 0:
                buf_start += len(block)
                skipping.tail = (skipping.tail + block)[-RAW_KEEP:]
                continue
            skipping.end = buf_start + nl + 1
            skipping.tail = (skipping.tail + block[:nl])[-RAW_KEEP:]
            yield skipping
            skipping = None
            buf = block[nl + 1 :]
            buf_start = buf_start + nl + 1
        else:
            buf += block
        start_i = 0
        while True:
            nl = buf.find(b"\n", start_i)
            if nl < 0:
                break
            data = buf[start_i:nl]
            if data.endswith(b"\r"):
                data = data[:-1]
            off = buf_start + start_i
            if len(data) > MAX_LINE_BYTES:
                yield Line(off, data[:RAW_KEEP], buf_start + nl + 1, too_long=True, tail=data[-RAW_KEEP:])
            else:
                yield Line(off, data, buf_start + nl + 1)
            start_i = nl + 1
        if start_i:
            buf = buf[start_i:]
            buf_start += start_i
        if len(buf) > MAX_LINE_BYTES:
            skipping = Line(buf_start, buf[:RAW_KEEP], -1, too_long=True, tail=buf[-RAW_KEEP:])
            buf_start += len(buf)
            buf = b""
    if skipping is not None:
        if final:
            skipping.end = buf_start
            yield skipping
        return
    if buf and final:
        data = buf[:-1] if buf.endswith(b"\r") else buf
        yield Line(buf_start, data, buf_start + len(buf))


def parse_error(source: str, generation: str, offset: int, raw: bytes, reason: str, sub: int = 0) -> Event:
    """A ``parse_error`` event keeping ``raw`` (up to RAW_KEEP bytes) and a one-line reason."""
    return Event(
        kind=Kind.PARSE_ERROR,
        source=source,
        generation=generation,
        offset=offset,
        sub=sub,
        summary=one_line(f"{source} @ byte {offset}: {reason}", 240),
        data={"reason": reason, "raw_len": len(raw)},
        raw=raw[:RAW_KEEP],
    )


def json_error_text(msg: str, offset: int, size: int) -> str:
    """One clause for a ``json.JSONDecodeError``: ``invalid JSON at byte <offset>: <what>``, its
    message completed (the stdlib's "Unterminated string starting at" ends in "at": it gets the
    byte) and, for an error in the last 16 bytes, the file's size (a file cut short)."""
    what = msg[0].lower() + msg[1:] if msg else "invalid JSON"
    if what.endswith(" at"):
        what = f"{what} byte {offset}"
    end = f" (the file ends at byte {size}: cut short?)" if size - offset <= 16 else ""
    return f"invalid JSON at byte {offset}: {what}{end}"


def loads_lenient(data: bytes | str) -> Any:
    """Parse JSON allowing Python's NaN / Infinity / -Infinity tokens
    (docs/sforge-run-folders.md §11.3).

    Fast path with orjson; on failure falls back to the stdlib parser which
    accepts the non-standard numbers; integers beyond 64 bits (which orjson can
    neither read nor write) become floats. Raises ``ValueError`` on invalid JSON.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if isinstance(data, bytes):
            data = data.decode("utf-8", errors="strict")
        return json.loads(data, parse_int=_int_64)


def _int_64(text: str) -> int | float:
    v = int(text)
    return v if -(2**63) <= v < 2**64 else float(v)


def finite_or_none(value: Any) -> tuple[Optional[float], Optional[str]]:
    """(value, flag): non-finite or non-numeric scores become ``(None, 'nan'|'inf'|'-inf'|'non_numeric')``."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        return float(value), None
    if isinstance(value, (int, float)):
        f = float(value)
        if math.isnan(f):
            return None, "nan"
        if math.isinf(f):
            return None, "inf" if f > 0 else "-inf"
        return f, None
    try:
        return finite_or_none(float(value))
    except (TypeError, ValueError):
        return None, "non_numeric"
