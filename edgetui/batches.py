"""Events -> Arrow batches, with secrets scrubbed (no DuckDB import: also used by the ingest's
parsing process, which stays small)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

import orjson
import pyarrow as pa

from .events import Event, event_id as _event_id
from .redact import REDACTED, has_keyword, items_that_may_hold, redact_bytes, redact_obj, redact_text  # noqa: F401 - REDACTED re-exported


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
    """Replaces known secret values and every secret :mod:`edgetui.redact` recognises by
    ``<redacted>`` (one pattern set for every text, ``data`` object and raw line)."""

    def __init__(self, secrets: Iterable[str] = ()):
        self.secrets: set[str] = set(secrets)
        self._bsecrets: list[bytes] = []

    def scrub(self, text: Optional[str]) -> Optional[str]:
        return redact_text(text, self.secrets)

    def _known_bytes(self) -> list[bytes]:
        if len(self._bsecrets) != len(self.secrets):  # secrets are added while a live run is watched
            self._bsecrets = [s.encode() for s in self.secrets if s]
        return self._bsecrets

    def scrub_bytes(self, raw: Optional[bytes]) -> Optional[bytes]:
        if not raw:
            return raw
        if not has_keyword(raw) and not any(b in raw for b in self._known_bytes()):
            return raw
        return redact_bytes(raw, self.secrets)

    def column_hits(self, items: list, kind: str) -> set[int]:
        """Indices of ``items`` that may hold a secret (see :func:`edgetui.redact.items_that_may_hold`),
        known secret values included."""
        hits = items_that_may_hold(items, kind)
        if self.secrets:
            known = self.secrets if kind == "text" else self._known_bytes()
            hits.update(i for i, x in enumerate(items) if x and any(k in x for k in known))
        return hits

    def scrub_column(self, items: list) -> list:
        hits = self.column_hits(items, "text")
        if not hits:
            return items
        return [self.scrub(x) if i in hits else x for i, x in enumerate(items)]

    def scrub_obj(self, obj: Any) -> Any:
        return redact_obj(obj, self.secrets)


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
    # secrets out: one prefilter pass (RE2, edgetui.redact) over each column of the batch, and
    # only the items where it matched are redacted one by one
    summs, tnames, models, rounds = (scrubber.scrub_column(col) for col in (summs, tnames, models, rounds))
    # data as UTF-8 JSON bytes -> an Arrow binary array viewed as string: no Python str round trip
    # (encoding ~150 MB of str per 200 MB transcript was a third of this function's time); its
    # decoded strings are redacted before serialising; orjson writes valid UTF-8 only, so the view
    # skips the validating cast (a third of the rest)
    blobs = [_dumps_b(d) if d else None for d in datas]
    for i in scrubber.column_hits(blobs, "data"):
        clean = scrubber.scrub_obj(datas[i])
        if clean is not datas[i]:
            blobs[i] = _dumps_b(clean)
    datas = pa.array(blobs, pa.binary()).view(pa.string())  # (orjson writes UTF-8 only: no validating cast)
    if any(raws):
        for i in scrubber.column_hits(raws, "bytes"):
            raws[i] = scrubber.scrub_bytes(raws[i])
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
