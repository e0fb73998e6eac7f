"""Events -> Arrow batches, with secrets scrubbed (no DuckDB import: also used by the ingest's
parsing process, which stays small)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence, Union

import orjson
import pyarrow as pa

from edgetui.events import Event, event_id as _event_id
from edgetui.redact import (  # noqa: F401 - REDACTED re-exported
    PREFILTER_B,
    PREFILTER_DATA_B,
    REDACTED,
    has_keyword,
    items_that_may_hold,
    redact_bytes,
    redact_obj,
    redact_text,
)

from edgetui.redact import RE2_OPTIONS

import re2


EVENT_COLUMNS = [
    ("event_id", pa.string()),
    ("run_key", pa.string()),
    ("kind", pa.string()),
    ("t", pa.float64()),
    ("t_source", pa.string()),
    ("source", pa.string()),
    ("generation", pa.string()),
    ("offset", pa.int64()),
    ("sub", pa.int32()),
    ("summary", pa.string()),
    ("level", pa.string()),
    ("segment", pa.int32()),
    ("agent_format", pa.string()),
    ("message_id", pa.string()),
    ("tool_use_id", pa.string()),
    ("parent_tool_use_id", pa.string()),
    ("tool_name", pa.string()),
    ("is_error", pa.bool_()),
    ("round", pa.string()),
    ("model", pa.string()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("cache_read_tokens", pa.int64()),
    ("cache_write_tokens", pa.int64()),
    ("stated_cost_usd", pa.float64()),
    ("data", pa.string()),
    ("raw", pa.binary()),
]
EVENT_SCHEMA = pa.schema(EVENT_COLUMNS)
EVENT_COLS_SQL = ", ".join(f'"{c}"' for c, _ in EVENT_COLUMNS)


_GET = __import__("operator").attrgetter(
    "run_key",
    "kind",
    "t",
    "t_source",
    "source",
    "generation",
    "offset",
    "sub",
    "summary",
    "level",
    "segment",
    "agent_format",
    "message_id",
    "tool_use_id",
    "parent_tool_use_id",
    "tool_name",
    "is_error",
    "round",
    "model",
    "usage",
    "stated_cost_usd",
    "data",
    "raw",
)


def _dumps_b(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS, default=str)


def data_json(obj: Any) -> str:
    return _dumps_b(obj).decode()


class Scrubber:
    """Replaces known secret values and every secret :mod:`edgetui.redact` recognises by
    ``<redacted>`` (one pattern set for every text, ``data`` object and raw line)."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets: set[str] = set(secrets)
        self._bsecrets: list[bytes] = []
        self._known_rx: tuple[frozenset, Any] = (frozenset(), None)

    def scrub(self, text: Optional[str]) -> Optional[str]:
        return redact_text(text, self.secrets)

    def _known_bytes(self) -> list[bytes]:
        if len(self._bsecrets) != len(self.secrets):  # secrets are added while a live run is watched
            self._bsecrets = [s.encode() for s in self.secrets if s]
        return self._bsecrets

    def _known_regex(self):
        """One RE2 alternation of the known secret values (UTF-8), or None without any."""
        key = frozenset(self.secrets)
        if self._known_rx[0] != key:
            vals = sorted({s.encode() for s in key if s}, key=len, reverse=True)
            self._known_rx = (key, re2.compile(b"|".join(re2.escape(v) for v in vals), RE2_OPTIONS) if vals else None)
        return self._known_rx[1]

    def scrub_bytes(self, raw: Optional[bytes]) -> Optional[bytes]:
        if not raw:
            return raw
        if not has_keyword(raw) and not any(b in raw for b in self._known_bytes()):
            return raw
        return redact_bytes(raw, self.secrets)

    def column_hits(self, items: list) -> set[int]:
        """Indices of the texts ``items`` that may hold a secret (see
        :func:`edgetui.redact.items_that_may_hold`), known secret values included."""
        hits = items_that_may_hold(items, "text")
        if self.secrets:
            hits.update(i for i, x in enumerate(items) if x and any(k in x for k in self.secrets))
        return hits

    def array_hits(self, arr: pa.Array, kind: str) -> list[int]:
        """Rows of a string or binary Arrow array (one chunk) that may hold a secret: the prefilter
        of ``kind`` (``"text"``, ``"bytes"``, ``"data"``: see :func:`edgetui.redact.items_that_may_hold`)
        and the known secret values, each one RE2 scan of the array's value buffer as it is (no
        join, no Python strings). A match across two rows marks both (the rows are adjacent in the
        buffer); every row a per-row scan would mark is marked. Sorted row indices."""
        return _buffer_hits(arr, PREFILTER_DATA_B if kind == "data" else PREFILTER_B, self._known_regex())

    def scrub_column(self, items: list) -> list:
        hits = self.column_hits(items)
        if not hits:
            return items
        return [self.scrub(x) if i in hits else x for i, x in enumerate(items)]

    def scrub_obj(self, obj: Any) -> Any:
        return redact_obj(obj, self.secrets)


def _buffer_hits(arr: pa.Array, rx, known_rx) -> list[int]:
    """:meth:`Scrubber.array_hits` for the patterns ``rx`` and ``known_rx`` (None: no known values)."""
    # lazy: numpy loads with the first computation that needs it, not with the module
    import numpy as np

    n = len(arr)
    if n == 0 or arr.null_count == n:
        return []
    bufs = arr.buffers()
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    offs = np.frombuffer(
        bufs[1], dtype=np.int64 if wide else np.int32, count=n + 1, offset=arr.offset * (8 if wide else 4)
    )
    lo, hi = int(offs[0]), int(offs[-1])
    if hi <= lo:
        return []
    view = memoryview(bufs[2])[lo:hi]
    spans = [m.span() for m in rx.finditer(view)]
    if known_rx is not None:
        spans += [m.span() for m in known_rx.finditer(view)]
    if not spans:
        return []
    se = np.array(spans, dtype=np.int64) + lo
    first = np.searchsorted(offs, se[:, 0], side="right") - 1
    last = np.searchsorted(offs, np.maximum(se[:, 0], se[:, 1] - 1), side="right") - 1
    rows: set[int] = set()
    for a, b in zip(first.tolist(), last.tolist()):
        rows.update(range(a, b + 1))
    return sorted(rows)


def events_to_table(run_key: str, events: Sequence[Event], scrubber: Scrubber) -> pa.Table:
    """Arrow table of ``events`` in :data:`EVENT_COLUMNS` order, secrets scrubbed:
    :func:`scrub_table` of :func:`build_table`. Pure function, also used in the ingest's parsing
    process."""
    return scrub_table(build_table(run_key, events), scrubber)


def build_table(run_key: str, events: Sequence[Event]) -> pa.Table:
    """Arrow table of ``events`` in :data:`EVENT_COLUMNS` order, **secrets not scrubbed yet**
    (:func:`scrub_table` before anything is written: the offline ingest's parsing process builds,
    the process that writes scrubs, on the other core).

    Column-wise construction (one attrgetter per event, then list comprehensions per column):
    this is on the ingest hot path. ``data`` goes from orjson's UTF-8 bytes to an Arrow binary
    array *viewed* as string: no Python str round trip, no validating cast (orjson writes valid
    UTF-8 only)."""
    if not events:
        return EVENT_SCHEMA.empty_table()
    rows = [_GET(e) for e in events]
    (
        rks,
        kinds,
        ts,
        tsrcs,
        srcs,
        gens,
        offs,
        subs,
        summs,
        levels,
        segs,
        fmts,
        mids,
        tids,
        ptids,
        tnames,
        errs,
        rounds,
        models,
        usages,
        costs,
        datas,
        raws,
    ) = map(list, zip(*rows))
    rks = [rk or run_key for rk in rks]
    ids = [_event_id(rk, s, g, o, sb) for rk, s, g, o, sb in zip(rks, srcs, gens, offs, subs)]
    kinds = [k if type(k) is str else k.value for k in kinds]
    tsrcs = [x if (x is None or type(x) is str) else x.value for x in tsrcs]
    blobs = pa.array([_dumps_b(d) if d else None for d in datas], pa.binary()).view(pa.string())
    cols = {
        "event_id": ids,
        "run_key": rks,
        "kind": kinds,
        "t": ts,
        "t_source": tsrcs,
        "source": srcs,
        "generation": gens,
        "offset": offs,
        "sub": subs,
        "summary": summs,
        "level": levels,
        "segment": segs,
        "agent_format": fmts,
        "message_id": mids,
        "tool_use_id": tids,
        "parent_tool_use_id": ptids,
        "tool_name": tnames,
        "is_error": errs,
        "round": rounds,
        "model": models,
        "input_tokens": [u.input_tokens if u else None for u in usages],
        "output_tokens": [u.output_tokens if u else None for u in usages],
        "cache_read_tokens": [u.cache_read_tokens if u else None for u in usages],
        "cache_write_tokens": [u.cache_write_tokens if u else None for u in usages],
        "stated_cost_usd": costs,
        "data": blobs,
        "raw": raws,
    }
    return pa.table(cols, schema=EVENT_SCHEMA)


#: the columns :func:`scrub_table` scrubs, and how each is scanned and redacted
_SCRUBBED = (
    ("summary", "text"),
    ("tool_name", "text"),
    ("round", "text"),
    ("model", "text"),
    ("data", "data"),
    ("raw", "bytes"),
)


def scrub_table(tbl: pa.Table, scrubber: Scrubber) -> pa.Table:
    """``tbl`` (an events table of :func:`build_table`, any number of chunks) with every secret
    replaced by ``<redacted>``: one RE2 prefilter scan of each scrubbed column's value buffer
    (:meth:`Scrubber.array_hits`), and only the rows where it matched redacted one by one (texts
    and raw lines as themselves, ``data`` decoded, redacted as an object and serialised again
    when it changed). The same table when nothing matched. Raw bytes: invalid UTF-8 kept byte
    for byte."""
    for name, kind in _SCRUBBED:
        col = tbl.column(name)
        if col.null_count == len(col):
            continue
        chunks, changed = [], False
        for arr in col.chunks:
            hits = scrubber.array_hits(arr, kind)
            if hits:
                vals, dirty = arr.to_pylist(), False
                for i in hits:  # (each redaction gives its input back when it changed nothing)
                    v = vals[i]
                    if not v:
                        continue
                    new: Union[str, bytes, None]
                    if kind == "text":
                        new = scrubber.scrub(v)
                    elif kind == "bytes":
                        new = scrubber.scrub_bytes(v)
                    else:
                        obj = orjson.loads(v)
                        clean = scrubber.scrub_obj(obj)
                        new = v if clean is obj else data_json(clean)
                    if new is not v:
                        vals[i], dirty = new, True
                if dirty:
                    arr = pa.array(vals, arr.type)
                    changed = True
            chunks.append(arr)
        if changed:
            tbl = tbl.set_column(tbl.schema.get_field_index(name), name, pa.chunked_array(chunks, col.type))
    return tbl
