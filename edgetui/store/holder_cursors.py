"""Cursors on the holder socket: a query's rows fetched a page at a time from the process that holds
the database (:mod:`edgetui.store.holder_socket`), for the SQL screen of an app that could not open
the file itself.

A connection that sends a cursor request stays open (a *session*); its requests, one JSON line
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
import secrets
import socket
import threading
import time
from typing import Any, Callable, Optional

import duckdb

from edgetui.error_log import note_swallowed
from edgetui.store.query_cells import from_wire, to_wire
from edgetui.store.read_only_sql import check_read_only

__all__ = [
    "MAX_CURSORS",
    "MAX_SESSIONS",
    "MAX_FETCH_ROWS",
    "CURSOR_IDLE_S",
    "HeldCursor",
    "HolderCursor",
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


# ---------------------------------------------------------------------------- the client


class HolderCursor:
    """A query's rows from the process holding ``db_path``, a page at a time over one connection
    to its socket (:meth:`open`, :meth:`fetch` until ``done``, :meth:`close`); :meth:`cancel` (from
    another thread) stops the query while it runs. Raises ``ConnectionError`` when no holder answers
    and ``RuntimeError`` with the holder's one-line error."""

    def __init__(self, db_path: Any, timeout: float = 60.0) -> None:
        from edgetui.store.holder_socket import connect_holder

        self.db_path = db_path
        self.timeout = timeout
        self.sock: Optional[socket.socket] = connect_holder(db_path, timeout)
        self._buf = b""
        self.token = secrets.token_hex(16)
        self.id: Optional[int] = None
        self.columns: list[str] = []
        self.types: list[str] = []
        self.done = True

    def _ask(self, req: dict) -> dict:
        from edgetui.store.holder_socket import HolderEnded, NotAnswering

        if self.sock is None:
            raise HolderEnded("the cursor's connection to the holder is closed")
        try:
            self.sock.sendall(json.dumps(req).encode() + b"\n")
            while b"\n" not in self._buf:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    raise HolderEnded("the edgetui process holding the database closed the cursor's connection")
                self._buf += chunk
        except socket.timeout:
            raise NotAnswering(f"no reply within {self.timeout:.0f} s") from None
        except OSError as e:
            if isinstance(e, ConnectionError):
                raise
            raise HolderEnded(f"the connection to the holder failed: {e.strerror or e}") from None
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            raise HolderEnded("the holder's reply is not JSON") from None
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def open(self, sql: str, params: Optional[list] = None, query_timeout: Optional[float] = None) -> list[str]:
        """Run ``sql`` in the holder; its columns (no row fetched yet)."""
        req: dict[str, Any] = {"cursor": "open", "sql": sql, "params": params or [], "token": self.token}
        if query_timeout is not None:
            req["timeout"] = query_timeout
        reply = self._ask(req)
        self.id = int(reply["id"])
        self.columns = list(reply["columns"])
        self.types = list(reply.get("types") or [])
        self.done = not self.columns
        return self.columns

    def fetch(self, n: int) -> list[tuple]:
        """The next ``n`` rows at most (``done`` when the end came)."""
        if self.done or self.id is None:
            return []
        reply = self._ask({"cursor": "fetch", "id": self.id, "n": n})
        self.done = bool(reply["done"])
        return [tuple(from_wire(v) for v in r) for r in reply["rows"]]

    def cancel(self) -> None:
        """Interrupt the query this cursor opened while it runs (a connection of its own)."""
        from edgetui.store.holder_socket import ask_holder_raw

        try:
            ask_holder_raw(self.db_path, {"cursor": "cancel", "token": self.token}, 10.0)
        except ConnectionError:  # the holder is gone: nothing runs any more
            note_swallowed("cancelling a query of a holder that is gone")

    def close(self) -> None:
        """Close the cursor and the connection (the holder closes the cursor when the connection drops)."""
        self.done = True
        s, self.sock = self.sock, None
        if s is not None:
            s.close()
