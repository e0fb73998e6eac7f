"""Where a tailed file stopped being the file that was read: the end offset and CRC-32 of every
line a live tail read, compared with the file after a truncation or a rewrite (core, no Textual).

A file cut mid-file and written again before the next refresh holds the lines kept before the
cut, then new ones; its size alone does not say where the cut was. The lines read are compared
with the file's lines from the start of what was read: the first line that differs (in end offset
or content) starts the new generation, so the kept lines stay recorded once and the new ones are
all read. 12 bytes a line read, at most :data:`MAX_LINES` lines a file (beyond that the cut is
not known and the new generation starts at the file's start: read again, nothing lost).
"""

from __future__ import annotations

import zlib
from array import array
from typing import BinaryIO, Optional

from edgetui.parsers.base import Line, iter_lines

#: lines remembered per file (12 bytes each)
MAX_LINES = 4_000_000

#: bytes before the first line read kept to tell whether the file still holds them
ANCHOR_BYTES = 4096


def line_crc(line: Line) -> int:
    """CRC-32 of a line as :func:`~edgetui.parsers.base.iter_lines` yields it (a too-long line: its
    kept head and tail)."""
    c = zlib.crc32(line.data)
    return zlib.crc32(line.tail, c) if line.too_long else c


class LineDigests:
    """The lines of one file read from ``start`` on (each its end offset and CRC-32), and
    ``anchor``: the file's bytes just before ``start`` when they were read (``start`` > 0)."""

    __slots__ = ("start", "anchor", "ends", "crcs", "full")

    def __init__(self, start: int = 0, anchor: Optional[bytes] = None):
        self.reset(start, anchor)

    def reset(self, start: int, anchor: Optional[bytes]) -> None:
        self.start = start
        self.anchor = anchor if start > 0 else b""
        self.ends = array("q")
        self.crcs = array("I")
        self.full = False

    @property
    def end(self) -> int:
        """Offset just after the last line remembered (``start`` when none)."""
        return self.ends[-1] if self.ends else self.start

    def add(self, line: Line) -> None:
        """Remember a line read (lines at or before :attr:`end` are known already: not again)."""
        if self.full or line.end <= self.end or line.offset != self.end:
            if not self.full and line.offset > self.end:
                self.full = True  # a gap: what lies in it is not known
            return
        if len(self.ends) >= MAX_LINES:
            self.full = True
            return
        self.ends.append(line.end)
        self.crcs.append(line_crc(line))

    def keep_until(self, cut: int) -> None:
        """Forget the lines ending after ``cut`` (the file was cut there; a new generation follows)."""
        n = len(self.ends)
        while n and self.ends[n - 1] > cut:
            n -= 1
        del self.ends[n:]
        del self.crcs[n:]
        self.full = False

    def cut_in(self, fp: BinaryIO, size: int) -> Optional[int]:
        """Where ``fp`` (``size`` bytes now) stops holding the lines read: the start of its first line
        that differs from the one read at that place, or the end of its last complete line that is
        the same (a cut through a line: that line's start). None when it cannot be told (the bytes
        before :attr:`start` changed, or lines were not all remembered)."""
        if self.full:
            return None
        if self.start > 0:
            n = len(self.anchor or b"")
            if not n or size < self.start:
                return None
            fp.seek(self.start - n)
            if fp.read(n) != self.anchor:
                return None
        same = self.start
        i = 0
        ends, crcs = self.ends, self.crcs
        for line in iter_lines(_Upto(fp, size), self.start, final=False):
            if i >= len(ends) or line.end != ends[i] or line_crc(line) != crcs[i]:
                return line.offset
            same = line.end
            i += 1
        return same


class _Upto:
    """``fp`` read no further than ``size`` bytes (what its stat gave)."""

    def __init__(self, fp: BinaryIO, size: int):
        self.fp, self.size, self.pos = fp, size, 0

    def seek(self, pos: int) -> int:
        self.pos = pos
        return self.fp.seek(pos)

    def read(self, n: int = -1) -> bytes:
        left = self.size - self.pos
        if left <= 0:
            return b""
        b = self.fp.read(left if n is None or n < 0 else min(n, left))
        self.pos += len(b)
        return b
