"""Cursors on the holder socket: a query's rows fetched a page at a time from the process that holds
the database (:mod:`edgetui.store.holder_socket`), for the SQL screen of an app that could not open
the file itself.

The client is :class:`edgetui.store.holder_socket.HolderCursor`. A connection that sends a cursor request stays open (a *session*); its requests, one JSON line
each, answered one line each, in order::

    {"cursor": "open", "sql": "...", "params": [], "timeout": 30, "token": "<hex>"}
        -> {"id": 1, "columns": [...], "types": [...]}
    {"cursor": "fetch", "id": 1, "n": 200}   -> {"rows": [[...], ...], "done": false}
    {"cursor": "close", "id": 1}             -> {"ok": true}

and, on a connection of its own, ``{"cursor": "cancel", "token": "<hex>"}`` interrupts the query
that ``token`` opened while it runs (DuckDB's ``interrupt``; the token is the client's secret).

The query is checked by the socket's read-only rule (only the database) when opened and runs in a
transaction rolled back when the cursor is closed. Bounds (:mod:`edgetui.store.holder_socket`):
:data:`MAX_CURSORS` per connection, :data:`MAX_SESSIONS` sessions at once, :data:`MAX_FETCH_ROWS`
rows and ``MAX_REPLY_BYTES`` per reply, ``QUERY_TIMEOUT_S`` (or the request's smaller ``timeout``)
for the query and for each fetch; a cursor not used for :data:`CURSOR_IDLE_S` seconds is closed,
and every cursor of a connection is closed when the connection drops.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Optional

import duckdb

from edgetui.error_log import note_swallowed
from edgetui.store.query_cells import to_wire
from edgetui.store.read_only_sql import check_read_only

__all__ = [
    "MAX_CURSORS",
    "MAX_SESSIONS",
    "MAX_FETCH_ROWS",
    "CURSOR_IDLE_S",
    "HeldCursor",
]

#: cursors open at once on one connection
MAX_CURSORS = 4
#: connections holding cursors at once (each holds a transaction of the holder's)
MAX_SESSIONS = 16
#: rows asked for in one fetch at most
MAX_FETCH_ROWS = 10_000
#: seconds a cursor may go unused before the holder closes it (a connection with no cursor left is dropped)
CURSOR_IDLE_S = 300.0


class HeldCursor:
    """One query's cursor in the holder: opened (checked, run in a transaction), fetched, closed."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, token: str) -> None:
        self.cur = conn.cursor()
        self.token = token
        self.columns: list[str] = []
        self.types: list[str] = []
        self.done = False
        self.timeout_s = 0.0
        #: interrupted by a cancel request (not by its time limit)
        self.cancelled = False
        self.last_used = time.monotonic()
        self._in_transaction = False

    def _timed(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` interrupted after ``timeout_s`` seconds (``InterruptException``)."""
        timer = threading.Timer(self.timeout_s, self.cur.interrupt)
        timer.daemon = True
        timer.start()
        try:
            return fn()
        finally:
            timer.cancel()
            self.last_used = time.monotonic()

    def open(self, sql: str, params: Optional[list], timeout_s: float) -> None:
        """Check ``sql`` (raises ``ValueError`` when refused) and run it; no row is fetched yet."""
        check_read_only(sql, self.cur)
        self.timeout_s = timeout_s
        self.cur.execute("SET python_enable_replacements = false")  # this cursor only: no Python variable is a table
        self.cur.execute("BEGIN TRANSACTION")
        self._in_transaction = True

        def run() -> Any:
            stmts = duckdb.extract_statements(sql)
            rel = None
            for i, st in enumerate(stmts):
                rel = self.cur.execute(st, params or []) if i == len(stmts) - 1 else self.cur.execute(st)
            return rel

        rel = self._timed(run)
        desc = (rel.description if rel is not None else None) or []
        self.columns = [d[0] for d in desc]
        self.types = [str(d[1]) for d in desc]
        self.done = not desc

    def fetch(self, n: int, max_bytes: int) -> tuple[list[list], bool]:
        """Up to ``n`` rows on the wire and whether the end came. Raises ``ValueError`` when they pass
        ``max_bytes`` (the cursor is then done: its rows cannot be fetched again)."""
        if self.done:
            return [], True
        raw = self._timed(lambda: self.cur.fetchmany(n))
        rows = [[to_wire(v) for v in r] for r in raw]
        self.done = len(raw) < n
        if len(json.dumps(rows, default=str)) > max_bytes:
            self.done = True
            raise ValueError(f"a page over {max_bytes >> 20} MiB: fetch fewer rows at a time")
        return rows, self.done

    def close(self) -> None:
        self.done = True
        if self._in_transaction:
            self._in_transaction = False
            try:
                self.cur.execute("ROLLBACK")
            except duckdb.Error:
                note_swallowed("ending a cursor's transaction that may have ended already")
        try:
            self.cur.close()
        except duckdb.Error:
            note_swallowed("closing a cursor whose connection closed already")
