"""Cell values of query results: on the holder's wire and in ``--format json`` / ``csv``.

One mapping for both ways a query is answered (directly, or by the process holding the
database over its socket), so ``edgetui sql`` / ``edgetui runs`` print the same either way:

* numbers stay numbers: DuckDB ``DECIMAL`` (e.g. ``sum`` of an integer column, ``1.5::DECIMAL``)
  arrives as :class:`decimal.Decimal` and becomes an ``int`` when whole, else a ``float``;
  ``NaN`` / ``±inf`` become ``null`` (JSON has no such numbers);
* BLOBs (``events.raw``) are **base64** text in JSON and CSV (``base64 -d`` or DuckDB's
  ``from_base64`` gives the bytes back); the table for a terminal shows ``<N bytes>``;
* lists and structs stay JSON arrays / objects (in CSV: their JSON text);
* everything else (timestamps, intervals, UUIDs) is its ``str``.

On the wire a BLOB travels as ``{"$edgetui-blob-base64": "…"}`` and is bytes again on arrival
(:func:`from_wire`), so the client formats it like a value it read itself.
"""

from __future__ import annotations

import base64
import json
from decimal import Decimal
from typing import Any

__all__ = ["BLOB_KEY", "to_wire", "from_wire", "json_cell", "csv_cell"]

#: the one key of the JSON object a BLOB travels as on the holder's wire
BLOB_KEY = "$edgetui-blob-base64"


def _number(v: Any) -> Any:
    """A Decimal or float as a JSON number (``None`` for NaN / ±inf)."""
    if isinstance(v, Decimal):
        if not v.is_finite():
            return None
        return int(v) if v == v.to_integral_value() else float(v)
    return v if v == v and v not in (float("inf"), float("-inf")) else None


def _b64(v: Any) -> str:
    return base64.b64encode(bytes(v)).decode("ascii")


def _cell(v: Any, blob) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, (float, Decimal)):
        return _number(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return blob(v)
    if isinstance(v, (list, tuple)):
        return [_cell(x, blob) for x in v]
    if isinstance(v, dict):
        return {str(k): _cell(x, blob) for k, x in v.items()}
    return str(v)


def to_wire(v: Any) -> Any:
    """``v`` as JSON-able data for the holder's reply (BLOBs as ``{BLOB_KEY: base64}``)."""
    return _cell(v, lambda b: {BLOB_KEY: _b64(b)})


def from_wire(v: Any) -> Any:
    """A value of the holder's reply as the client's own query would have given it (BLOBs as bytes;
    numbers and text as they came)."""
    if isinstance(v, dict):
        if len(v) == 1 and BLOB_KEY in v and isinstance(v[BLOB_KEY], str):
            return base64.b64decode(v[BLOB_KEY])
        return {k: from_wire(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_wire(x) for x in v]
    return v


def json_cell(v: Any) -> Any:
    """``v`` for ``--format json``: numbers as numbers, BLOBs as base64 text, nested values as JSON."""
    return _cell(v, _b64)


def csv_cell(v: Any) -> Any:
    """``v`` for ``--format csv``: as :func:`json_cell`, with lists and structs as their JSON text
    and ``None`` as the empty field."""
    c = json_cell(v)
    if isinstance(c, (list, dict)):
        return json.dumps(c)
    return c
