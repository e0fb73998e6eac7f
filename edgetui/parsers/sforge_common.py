"""What the SForge run-directory readers share (:mod:`.sforge_dir`, :mod:`.sforge_submissions`):
JSON documents read with their bytes' generation and a one-line error naming the file and byte
(:func:`read_json`, :func:`json_parse_error`), number and flag coercion of scores and counts
(non-finite values dropped, docs/sforge-run-folders.md §11.3), file mtimes (seconds, epoch UTC),
line files parsed whole (:func:`parse_line_file`), and the round names and status words of
submission folders (§4.1 there). Pure readers: nothing here raises on bad input."""

from __future__ import annotations

import hashlib
import json
import math
import re

import orjson
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from edgetui.events import Event, TimeSource, one_line
from edgetui.parsers.base import (
    BOM,
    LineParser,
    finite_or_none,
    iter_lines,
    json_error_text,
    loads_lenient,
    open_regular,
    parse_error,
    read_regular,
)
from edgetui.parsers.run_folder_files import SkippedRunFile, read_run_file_stat


ROUND_RE = re.compile(r"^(agent|auto|game|manual)-(\d+)$")
KIND_ORDER = {"agent": 0, "legacy": 0, "auto": 1, "game": 2, "manual": 3}
PASS_STATUSES = {"PASSED", "PASS", "OK", "SUCCESS", "XFAIL"}
#: ``sub`` of the JUDGE_RESULT of a failed grading: its source is run_instance.log,
#: whose first line already owns (offset 0, sub 0).
FAILED_GRADING_SUB = 1_000_000


def subdirs(d: Path) -> list[Path]:
    try:
        return sorted((c for c in d.iterdir() if not c.name.startswith(".") and c.is_dir()), key=lambda c: c.name)
    except OSError:  # gone or unreadable: no subdirectories
        return []


@dataclass
class Json:
    path: Path
    rel: str
    exists: bool = False
    value: Any = None
    error: Optional[str] = None  # one-line, names the file (and byte offset)
    err_offset: int = 0
    raw: bytes = b""
    mtime: Optional[float] = None
    #: ``value`` was read by orjson's strict parser: no NaN / Infinity in it (sanitize has nothing to do)
    finite: bool = False

    @property
    def ok(self) -> bool:
        return self.exists and self.error is None

    @property
    def generation(self) -> str:
        return content_gen(self.raw)


def content_gen(raw: bytes) -> str:
    return hashlib.sha1(raw).hexdigest()[:16]


def read_json(path: Path, rel: str) -> Json:
    """Read a whole-file JSON document leniently (NaN/Infinity, BOM). Never raises."""
    j = Json(path, rel)
    try:
        raw, st = read_run_file_stat(path)
    except SkippedRunFile as e:  # (a FIFO, a link out of the run folder or a loop, too big: noted)
        j.exists = True
        j.error = one_line(f"{rel}: skipped, {e.reason}", 240)
        return j
    except (FileNotFoundError, NotADirectoryError):
        return j
    except OSError as e:
        j.exists = True
        j.error = one_line(f"{rel}: unreadable: {e.strerror or e}", 240)
        return j
    j.exists = True
    j.mtime = st.st_mtime
    j.raw = raw
    skip = len(BOM) if raw.startswith(BOM) else 0
    body = raw[skip:]
    if not body.strip():
        j.error = f"{rel}: empty file (0 bytes of JSON at byte {skip})"
        j.err_offset = skip
        return j
    try:
        try:
            j.value, j.finite = orjson.loads(body), True
        except orjson.JSONDecodeError:  # (NaN / Infinity tokens, integers past 64 bits, invalid JSON)
            j.value = loads_lenient(body)
        if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH and _deeper_than(j.value, MAX_JSON_DEPTH):
            raise RecursionError  # (parsed, but its readers walk it recursively)
    except UnicodeDecodeError as e:
        j.err_offset = skip + e.start
        j.error = one_line(f"{rel}: invalid UTF-8 at byte {j.err_offset}", 240)
    except json.JSONDecodeError as e:
        try:
            text = body.decode("utf-8")
            off = len(text[: e.pos].encode("utf-8"))
        except UnicodeDecodeError:
            off = e.pos
        j.err_offset = skip + off
        j.error = one_line(f"{rel}: {json_error_text(e.msg, j.err_offset, len(raw))}", 240)
    except RecursionError:
        j.value = None
        j.err_offset = skip + _too_deep_at(body)
        j.error = f"{rel}: invalid JSON at byte {j.err_offset}: nested more than {MAX_JSON_DEPTH} levels deep"
    except ValueError as e:
        j.error = one_line(f"{rel}: invalid JSON: {e}", 240)
    return j


#: The nesting of arrays and objects a JSON document of a run folder is read to (SForge writes a
#: few levels; the readers walk a document recursively, 2 frames a level, within the interpreter's
#: 1,000). A deeper document is a parse error naming the byte.
MAX_JSON_DEPTH = 200


def _deeper_than(value: Any, limit: int) -> bool:
    """Is ``value`` nested more than ``limit`` levels of arrays / objects (walked without recursion)?"""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return False


_JSON_NEST_RE = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _too_deep_at(body: bytes) -> int:
    """The byte of ``body`` where its nesting passes :data:`MAX_JSON_DEPTH` (0 if it does not)."""
    depth = 0
    for m in _JSON_NEST_RE.finditer(body):
        c = body[m.start()]
        if c in b"[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return m.start()
        elif c in b"]}":
            depth -= 1
    return 0


def read_bytes(path: Path) -> bytes:
    """The bytes :func:`read_json` keeps of ``path`` (``Json.raw``): b"" when it cannot be read."""
    try:
        return read_regular(path)
    except OSError:  # cannot be read: b"" (see the docstring)
        return b""


def json_parse_error(j: Json, reason: Optional[str] = None) -> Event:
    ev = parse_error(j.rel, j.generation, 0, j.raw, reason or j.error or "invalid JSON")
    ev.data["error_offset"] = j.err_offset
    ev.summary = one_line(reason or j.error or f"{j.rel}: invalid JSON", 240)
    if j.mtime is not None:
        ev.t, ev.t_source = j.mtime, TimeSource.INTERPOLATED
    return ev


def sanitize(obj: Any) -> Any:
    """Copy of a parsed JSON value with non-finite floats replaced by ``None``."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [sanitize(v) for v in obj]
    return obj


def as_finite(v: Any) -> Optional[float]:
    if type(v) is float:  # (the common case first: ~100,000 calls for 60 runs' report.json tests)
        return v if math.isfinite(v) else None
    if v is None:
        return None
    return finite_or_none(v)[0] if not isinstance(v, bool) else None


def as_int(v: Any) -> Optional[int]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    return None


def as_bool(v: Any) -> Optional[bool]:
    return v if isinstance(v, bool) else None


def file_mtime(p: Path) -> Optional[float]:
    try:
        return p.stat().st_mtime
    except OSError:  # gone: no mtime
        return None


def parse_line_file(path: Path, parser: LineParser, source: str, generation: str) -> list[Event]:
    """Run a finished line file through ``parser`` (offline). Missing file → ``[]``."""
    try:
        fp = open_regular(path)
    except OSError:  # missing file: no events (see the docstring)
        return []
    with fp:
        return parse_lines(fp, parser, source, generation)


def parse_lines(fp, parser: LineParser, source: str, generation: str) -> list[Event]:
    """:func:`parse_line_file` of an open file (read from byte 0)."""
    out: list[Event] = []
    for ln in iter_lines(fp, 0, final=True):
        if ln.too_long:
            out.append(parse_error(source, generation, ln.offset, ln.data, "line longer than 20 MB"))
            continue
        out.extend(parser.feed(ln.data, ln.offset))
    out.extend(parser.finish())
    return out


# =========================================================================== secrets
