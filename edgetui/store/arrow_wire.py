"""A query's rows on the holder's wire as Arrow: what a reader through the holder (a browser tab of
``edgetui serve``, :mod:`edgetui.store.holder_connection`) asks for, so that the values it reads
back keep DuckDB's types (DECIMALs, timestamps, lists, structs, BLOBs), where the JSON rows of
``edgetui sql`` carry numbers and text. One Arrow IPC stream, base64, in the reply's ``arrow`` key."""

from __future__ import annotations

import base64
from typing import Any, Optional

import duckdb
import pyarrow as pa

__all__ = ["encode_rows", "decode_rows"]


def encode_rows(rel: Optional[duckdb.DuckDBPyRelation], max_bytes: int) -> dict[str, Any]:
    """A statement's rows as ``{"arrow": base64 of an Arrow IPC stream}``, or ``{"error": …}`` once
    the stream passes ``max_bytes`` (checked batch by batch)."""
    if rel is None:  # a statement without a result (none passes the holder's check today)
        return {"columns": [], "rows": []}
    reader = rel.to_arrow_reader(8192)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, reader.schema) as w:
        for batch in reader:
            w.write_batch(batch)
            if sink.tell() > max_bytes:
                return {"error": f"reply over {max_bytes >> 20} MiB: narrow the query (LIMIT, fewer columns)"}
    return {"arrow": base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")}


def decode_rows(reply: dict[str, Any]) -> pa.Table:
    """The table of a reply of :func:`encode_rows` (no columns when the statement had no result)."""
    if "arrow" not in reply:
        return pa.table({})
    return pa.ipc.open_stream(base64.b64decode(reply["arrow"])).read_all()
