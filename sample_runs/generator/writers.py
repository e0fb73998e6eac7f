"""Clock, id source, JSON and text/log writers every generated run uses.

FROZEN with the moment detector's tuning: tests/test_moments_acceptance.py checks this file's
SHA-256 against docs/moments.md (any edit fails it; see there before changing it).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import random
import tarfile
from datetime import datetime, timedelta, timezone

#: the seed of the bundled samples (the moment runs take theirs from the command line)
SEED = 20260312
RULE = "=" * 40
UTC = timezone.utc
EPOCH0 = datetime(1970, 1, 1, tzinfo=UTC)


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def jdump(obj) -> str:
    """JSON as SForge writes its files: indent=2, ensure_ascii=False, no newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False)


def jline(obj) -> str:
    """Compact JSON as Claude Code prints stream-json lines."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def q6(t: float) -> float:
    """Quantise an epoch to microseconds (what we store in truth files)."""
    return round(t, 6)


def epoch_of(y, mo, d, h=0, mi=0, s=0, offset_min=0) -> float:
    tz = timezone(timedelta(minutes=offset_min))
    return datetime(y, mo, d, h, mi, s, tzinfo=tz).timestamp()


class Clock:
    """Formats epochs in a host's local time (fixed UTC offset, no DST)."""

    def __init__(self, offset_min: int):
        self.offset_min = offset_min
        self.tz = timezone(timedelta(minutes=offset_min))

    @property
    def offset_str(self) -> str:
        sign = "+" if self.offset_min >= 0 else "-"
        m = abs(self.offset_min)
        return f"{sign}{m // 60:02d}:{m % 60:02d}"

    def dt(self, t: float) -> datetime:
        return (EPOCH0 + timedelta(microseconds=round(t * 1e6))).astimezone(self.tz)

    def log_ts(self, t: float) -> str:
        d = self.dt(t)
        return d.strftime("%Y-%m-%d %H:%M:%S") + ",%03d" % (d.microsecond // 1000)

    def iso_s(self, t: float) -> str:
        return self.dt(t).strftime("%Y-%m-%dT%H:%M:%S")


def utc_iso_ms(t: float) -> str:
    d = EPOCH0 + timedelta(microseconds=round(t * 1e6))
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class Ids:
    """Deterministic identifier factory (one per run)."""

    def __init__(self, seed: int):
        self.R = random.Random(seed)

    def uuid(self) -> str:
        h = "%032x" % self.R.getrandbits(128)
        h = h[:12] + "4" + h[13:16] + "89ab"[int(h[16], 16) % 4] + h[17:]
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"

    def b62(self, n: int) -> str:
        return "".join(self.R.choice(B62) for _ in range(n))

    def toolu(self) -> str:
        return "toolu_01" + self.b62(22)

    def msg(self) -> str:
        return "msg_01" + self.b62(22)

    def hexn(self, n: int) -> str:
        return "".join(self.R.choice("0123456789abcdef") for _ in range(n))

    def signature(self) -> str:
        raw = bytes(self.R.getrandbits(8) for _ in range(self.R.randint(150, 260)))
        return base64.b64encode(b"\x12\x08" + raw).decode()


def jq_num(v) -> str:
    """Number text as jq prints it (shortest repr, integral floats without .0)."""
    if v is None:
        return "null"
    if isinstance(v, float):
        if math.isnan(v):
            return "null"
        if v == int(v) and abs(v) < 1e17:
            return str(int(v))
        return repr(v)
    return str(v)


def jq_pct(rate: float) -> str:
    """`$r * 100 | . * 10 | floor / 10` as printed by jq."""
    return jq_num(math.floor(rate * 100 * 10) / 10)


def tokens_of(text: str) -> int:
    return max(1, len(text) // 4)


def tiny_targz(files: list[tuple[str, str]]) -> bytes:
    """Deterministic tar.gz (fixed mtimes, gzip mtime 0)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name, text in files:
            data = text.encode()
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = 1767225600
            ti.mode = 0o644
            ti.uname = ti.gname = "agent"
            ti.uid = ti.gid = 1000
            tf.addfile(ti, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


class TextFile:
    """Collects lines with the true epoch at which each line was written."""

    def __init__(self):
        self.items: list[tuple[str, float]] = []

    def add(self, line: str, t: float):
        self.items.append((line, t))

    def render(self) -> tuple[bytes, list[list]]:
        buf = io.BytesIO()
        index = []
        for line, t in self.items:
            index.append([buf.tell(), q6(t)])
            buf.write(line.encode("utf-8") + b"\n")
        return buf.getvalue(), index


class RunLog:
    """run_agent.log / run_instance.log writer (Python logging format)."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.lines: list[tuple[float, str]] = []

    def log(self, t: float, level: str, msg: str):
        self.lines.append((t, f"{self.clock.log_ts(t)} - {level} - {msg}"))

    def info(self, t, msg):
        self.log(t, "INFO", msg)

    def warning(self, t, msg):
        self.log(t, "WARNING", msg)

    def error(self, t, msg):
        self.log(t, "ERROR", msg)

    def text(self) -> str:
        return "".join(line + "\n" for _, line in self.lines)
