"""Events -> Arrow batches, with secrets scrubbed (no DuckDB import: also used by the ingest's
parsing process, which stays small)."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Sequence

import orjson
import pyarrow as pa

from .events import Event, event_id as _event_id

REDACTED = "<redacted>"
#: API-key-shaped strings scrubbed wherever they appear (Anthropic / OpenAI style keys).
_KEY_RE = re.compile(r"\b(sk-(?:ant-)?[A-Za-z0-9_\-]{16,})")
_KEY_RE_B = re.compile(rb"\bsk-(?:ant-)?[A-Za-z0-9_\-]{16,}")

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
_EVENT_SCHEMA = pa.schema(EVENT_COLUMNS)
_EVENT_COLS_SQL = ", ".join(f'"{c}"' for c, _ in EVENT_COLUMNS)


_GET = __import__("operator").attrgetter(
    "run_key", "kind", "t", "t_source", "source", "generation", "offset", "sub", "summary", "level", "segment",
    "agent_format", "message_id", "tool_use_id", "parent_tool_use_id", "tool_name", "is_error", "round", "model",
    "usage", "stated_cost_usd", "data", "raw")


def _dumps_b(obj: Any) -> bytes:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS, default=str)


def _dumps(obj: Any) -> str:
    return _dumps_b(obj).decode()


class Scrubber:
    """Replaces known secret values and API-key-shaped strings by ``<redacted>``."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets: set[str] = set(secrets)
        self._bsecrets: list[bytes] = []

    def scrub(self, text: Optional[str]) -> Optional[str]:
        if not text:
            return text
        for s in self.secrets:
            if s in text:
                text = text.replace(s, REDACTED)
        if "sk-" in text:
            text = _KEY_RE.sub(REDACTED, text)
        return text

    def scrub_bytes(self, raw: Optional[bytes]) -> Optional[bytes]:
        if not raw:
            return raw
        if len(self._bsecrets) != len(self.secrets):  # secrets are added while a live run is watched
            self._bsecrets = [s.encode() for s in self.secrets if s]
        for b in self._bsecrets:
            if b in raw:
                raw = raw.replace(b, REDACTED.encode())
        if b"sk-" in raw:
            raw = _KEY_RE_B.sub(REDACTED.encode(), raw)
        return raw


def events_to_table(run_key: str, events: Sequence[Event], scrubber: Scrubber) -> pa.Table:
    """Arrow table of ``events`` in :data:`EVENT_COLUMNS` order, secrets scrubbed.

    Column-wise construction (one attrgetter per event, then list
    comprehensions per column): this is on the ingest hot path. Pure function,
    also used in the ingest's parsing process.
    """
    if not events:
        return _EVENT_SCHEMA.empty_table()
    rows = [_GET(e) for e in events]
    (rks, kinds, ts, tsrcs, srcs, gens, offs, subs, summs, levels, segs, fmts, mids, tids, ptids, tnames,
     errs, rounds, models, usages, costs, datas, raws) = map(list, zip(*rows))
    rks = [rk or run_key for rk in rks]
    ids = [_event_id(rk, s, g, o, sb) for rk, s, g, o, sb in zip(rks, srcs, gens, offs, subs)]
    kinds = [k if type(k) is str else k.value for k in kinds]
    tsrcs = [x if (x is None or type(x) is str) else x.value for x in tsrcs]
    scrub = scrubber.scrub
    summs = [scrub(x) for x in summs]
    scrub_b = scrubber.scrub_bytes
    # data as UTF-8 JSON bytes -> an Arrow binary array cast to string: no Python str round trip
    # (encoding ~150 MB of str per 200 MB transcript was a third of this function's time)
    datas = pa.array([scrub_b(_dumps_b(d)) if d else None for d in datas], pa.binary()).cast(pa.string())
    raws = [scrub_b(r) if r else r for r in raws]
    cols = {
        "event_id": ids, "run_key": rks, "kind": kinds, "t": ts, "t_source": tsrcs, "source": srcs,
        "generation": gens, "offset": offs, "sub": subs, "summary": summs, "level": levels, "segment": segs,
        "agent_format": fmts, "message_id": mids, "tool_use_id": tids, "parent_tool_use_id": ptids,
        "tool_name": tnames, "is_error": errs, "round": rounds, "model": models,
        "input_tokens": [u.input_tokens if u else None for u in usages],
        "output_tokens": [u.output_tokens if u else None for u in usages],
        "cache_read_tokens": [u.cache_read_tokens if u else None for u in usages],
        "cache_write_tokens": [u.cache_write_tokens if u else None for u in usages],
        "stated_cost_usd": costs, "data": datas, "raw": raws,
    }
    return pa.table(cols, schema=_EVENT_SCHEMA)
