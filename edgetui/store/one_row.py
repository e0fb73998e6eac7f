"""The one row of a query that always gives one (an aggregate without GROUP BY, a SELECT of
expressions): DuckDB's ``fetchone`` says ``None`` for "no row", which such a query never gives."""

from __future__ import annotations

from typing import Any

import duckdb


def one_row(cur: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    """``cur.fetchone()`` of a query that always gives a row; ``LookupError`` if it gave none."""
    row = cur.fetchone()
    if row is None:
        raise LookupError("the query gave no row")
    return row
