"""Reading a database through its holder's socket, with the calls of a DuckDB connection.

A browser tab of ``edgetui serve`` is its own app process, and the serving process holds the
database file (DuckDB: one read-write process per file). The tab never opens the file: its app
reads through :class:`HolderConnection`, which the read side (:mod:`edgetui.store.queries`, the
timeline pages, the reports) takes where it takes a ``duckdb.DuckDBPyConnection``: ``cursor()``,
``execute(sql, params)`` then ``fetchall`` / ``fetchone`` / ``fetchmany`` / ``fetchnumpy`` /
``description`` / ``to_arrow_table``, and ``sql(sql, params=…)`` giving a relation.

Each statement is one request to the holder (:mod:`edgetui.store.holder_socket`),
checked there as every request is (reads of the database only) and answered as an Arrow stream
(:mod:`edgetui.store.arrow_wire`).
The rows are then read from a private in-memory DuckDB of this process, so the values are the
Python values DuckDB gives (DECIMALs, timestamps, lists, structs), exactly as a read of the file
would. Writes go as typed requests (:meth:`HolderConnection.request`: annotations, tags), which
the holder carries out itself; any other write is refused by the holder in one line.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Optional

import duckdb

from edgetui.store.arrow_wire import decode_rows
from edgetui.store.holder_socket import BUSY, ask_holder_request

__all__ = ["HolderConnection", "HolderCursor"]


class HolderConnection:
    """The database of ``db_path`` as its holder serves it (see the module docstring)."""

    def __init__(self, db_path: Path | str, timeout: float = 60.0) -> None:
        self.db_path = Path(db_path)
        self.timeout = timeout
        #: where the holder's Arrow results are read back as DuckDB's Python values (no file)
        self._local = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self.closed = False

    def fetch(self, sql: str, params: Optional[list | dict] = None):
        """One statement's result from the holder, as a ``pyarrow.Table``."""
        if self.closed:
            raise RuntimeError("no database open")
        req = {"sql": sql, "params": _plain(params), "format": "arrow"}
        wait = 0.02
        deadline = time.monotonic() + self.timeout
        while True:
            reply = ask_holder_request(self.db_path, req, self.timeout)
            # the holder's queue is full (other tabs and commands reading at once): asked again shortly
            if str(reply.get("error", "")).startswith(BUSY) and time.monotonic() + wait < deadline:
                time.sleep(wait)
                wait = min(wait * 2, 0.5)
                continue
            if "error" in reply:
                raise RuntimeError(reply["error"])
            return decode_rows(reply)

    def local_cursor(self) -> duckdb.DuckDBPyConnection:
        with self._lock:
            return self._local.cursor()

    def cursor(self) -> "HolderCursor":
        return HolderCursor(self)

    def execute(self, sql: str, params: Optional[list | dict] = None) -> "HolderCursor":
        return self.cursor().execute(sql, params)

    def sql(self, sql: str, params: Optional[list | dict] = None) -> duckdb.DuckDBPyRelation:
        return self.cursor().sql(sql, params=params)

    def request(self, req: dict) -> dict:
        """A typed request (:data:`edgetui.record.forget_and_tag.OPS`) carried out by the holder; its
        reply (``{"ok": …}`` or ``{"error": one line}``). Never raises."""
        try:
            return ask_holder_request(self.db_path, req, self.timeout)
        except ConnectionError as e:
            return {"error": f"the serving process did not answer: {' '.join(str(e).split())}"}

    def interrupt(self) -> None:
        """(A statement runs in the holder, which stops it after its own limit per query.)"""

    def close(self) -> None:
        self.closed = True
        self._local.close()


def _plain(params: Optional[list | dict]) -> list | dict:
    """Parameters as JSON values (a tuple as a list)."""
    if params is None:
        return []
    if isinstance(params, dict):
        return dict(params)
    return list(params)


class HolderCursor:
    """A cursor of :class:`HolderConnection`: the last statement's rows, read on a cursor of the
    private in-memory DuckDB."""

    def __init__(self, conn: HolderConnection) -> None:
        self._conn = conn
        self._cur = conn.local_cursor()

    def execute(self, sql: str, params: Optional[list | dict] = None) -> "HolderCursor":
        tbl = self._conn.fetch(sql, params)
        # a fresh local cursor per statement: the last one's result may be left half read, as a
        # DuckDB cursor allows (a new execute drops it)
        self._cur.close()
        self._cur = self._conn.local_cursor()
        self._cur.register("holder_result", tbl)
        self._cur.execute("SELECT * FROM holder_result")
        return self

    def sql(self, sql: str, params: Optional[list | dict] = None) -> duckdb.DuckDBPyRelation:
        return self._cur.from_arrow(self._conn.fetch(sql, params))

    def cursor(self) -> HolderCursor:
        return self._conn.cursor()

    def interrupt(self) -> None:
        """(See :meth:`HolderConnection.interrupt`.)"""

    def close(self) -> None:
        self._cur.close()

    def __enter__(self) -> "HolderCursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def description(self) -> Any:
        return self._cur.description

    def fetchall(self) -> list[tuple]:
        return self._cur.fetchall()

    def fetchone(self) -> Optional[tuple]:
        return self._cur.fetchone()

    def fetchmany(self, size: int = 1) -> list[tuple]:
        return self._cur.fetchmany(size)

    def fetchnumpy(self) -> Any:
        return self._cur.fetchnumpy()

    def to_arrow_table(self) -> Any:
        return self._cur.to_arrow_table()

    def to_arrow_reader(self, batch_size: int = 1_000_000) -> Any:
        return self._cur.to_arrow_reader(batch_size)
