"""Shared parser plumbing: line reading by byte offset, file generations, parse errors.

Facts used: agent_output.txt is appended chunk by chunk, so the last line can be
half-written (sforge-format.md §6.1); files may carry a UTF-8 BOM, CRLF line
ends, invalid UTF-8 or single lines far over 20 MB.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator, Optional, Protocol

import orjson

from ..events import Event, Kind, one_line

#: Lines longer than this are kept as a parse_error (their first RAW_KEEP bytes
#: are stored) instead of being decoded; the rest of the file still loads.
MAX_LINE_BYTES = 20 * 1024 * 1024
#: How many raw bytes of a bad record are kept in the database.
RAW_KEEP = 64 * 1024
GENERATION_PREFIX_BYTES = 4096
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
        with open(path, "rb") as fp:
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


def iter_lines(fp: BinaryIO, start: int = 0, *, final: bool = True, chunk: int = 1 << 20) -> Iterator[Line]:
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
                continue
            skipping.end = buf_start + nl + 1
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
                yield Line(off, data[:RAW_KEEP], buf_start + nl + 1, too_long=True)
            else:
                yield Line(off, data, buf_start + nl + 1)
            start_i = nl + 1
        if start_i:
            buf = buf[start_i:]
            buf_start += start_i
        if len(buf) > MAX_LINE_BYTES:
            skipping = Line(buf_start, buf[:RAW_KEEP], -1, too_long=True)
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


def loads_lenient(data: bytes | str) -> Any:
    """Parse JSON allowing Python's NaN / Infinity / -Infinity tokens (sforge-format.md §12.3).

    Fast path with orjson; on failure falls back to the stdlib parser which
    accepts the non-standard numbers; integers beyond 64 bits (which orjson can
    neither read nor write) become floats. Raises ``ValueError`` on invalid JSON.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        import json

        if isinstance(data, bytes):
            data = data.decode("utf-8", errors="strict")
        return json.loads(data, parse_int=_int_64)


def _int_64(text: str) -> int | float:
    v = int(text)
    return v if -(2 ** 63) <= v < 2 ** 64 else float(v)


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
