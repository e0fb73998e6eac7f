"""The one way edgetui talks to a team record's server: PostgreSQL through ADBC (Arrow in, Arrow out).

Kept small on purpose: :mod:`edgetui.record.team_record` says *what* moves (which rows, keyed how);
this module only says *how* they move (a connection, SQL, a table of Arrow rows staged on the
server, Arrow read back). A DuckLake catalog on the same server could replace it later without the
sync logic changing. No DuckDB extension is involved: DuckDB hands Arrow tables to the ADBC driver
(``adbc-driver-postgresql``, libpq underneath: ``~/.pgpass``, ``sslmode`` and the other libpq
settings of the connection string are honoured as libpq documents them).

The connection string is never printed: every error leaving this module is a :class:`TeamError`
whose text has the string (and any ``password=…``) replaced by ``<team url>``.
"""

from __future__ import annotations

import re
from typing import Any, Optional, Sequence

import pyarrow as pa
import adbc_driver_postgresql.dbapi as pg_dbapi
from adbc_driver_manager import Error as DriverError  # the DB-API errors of every ADBC driver

from edgetui.errors import UserError

__all__ = ["TeamError", "TeamUnreachable", "TeamTransport", "redact_url"]


class TeamError(UserError):
    """A failure of the team record's server, in one line, the connection string left out."""


class TeamUnreachable(TeamError):
    """The server could not be reached or went away (a restart, a network cut): worth trying again."""


_PASSWORD = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@\s]*:)([^@\s]*)(@)")


def redact_url(text: str, url: str = "") -> str:
    """``text`` without the connection string ``url`` nor any password written in it."""
    if url:
        text = text.replace(url, "<team url>")
    text = _PASSWORD.sub(r"\1<redacted>", text)
    return _URL_PASSWORD.sub(r"\1<redacted>\3", text)


#: SQLSTATE classes of a lost or refused connection (08: connection exception, 57P: operator
#: intervention, e.g. a server shut down under a session), and libpq's own words for the same
_GONE = re.compile(
    r"\b(08\d\d\d|57P0\d)\b|server closed the connection|connection refused|no such file or directory|"
    r"could not connect|terminating connection|connection to server|the database system is (starting|shutting)",
    re.IGNORECASE,
)


def _one_line(e: BaseException, url: str) -> str:
    text = " ".join(str(e).split())
    return redact_url(text, url)[:300]


class TeamTransport:
    """One connection to the team record's server, in explicit transactions (``commit`` / ``rollback``)."""

    def __init__(self, url: str):
        self._url = url
        self._conn: Any = None
        self._stage_n = 0
        self.connect()

    def connect(self) -> None:
        try:
            self._conn = pg_dbapi.connect(self._url, autocommit=False)
        except DriverError as e:  # any driver error: one line, the url left out (raised as TeamError)
            raise self._error("cannot connect to the team record", e) from None

    def _error(self, what: str, e: BaseException) -> TeamError:
        line = _one_line(e, self._url)
        cls = TeamUnreachable if _GONE.search(line) else TeamError
        return cls(f"{what}: {line}")

    def execute(self, sql: str, params: Optional[Sequence[Any]] = None) -> list[tuple]:
        """Run one statement; its rows (empty for a statement without a result)."""
        try:
            cur = self._conn.cursor()
            try:
                cur.execute(sql, params)
                if cur.description is None:
                    return []
                return [tuple(r) for r in cur.fetchall()]
            finally:
                cur.close()
        except TeamError:
            raise
        except DriverError as e:  # any driver error: one line, the url left out (raised as TeamError)
            raise self._error("team record", e) from None

    def fetch_arrow(self, sql: str, params: Optional[Sequence[Any]] = None) -> pa.Table:
        try:
            cur = self._conn.cursor()
            try:
                cur.execute(sql, params)
                return cur.fetch_arrow_table()
            finally:
                cur.close()
        except DriverError as e:  # any driver error: one line, the url left out (raised as TeamError)
            raise self._error("team record", e) from None

    def stage(self, rows: pa.Table) -> str:
        """Copy ``rows`` into a new temporary table of this session (PostgreSQL's COPY, binary); its name.
        It lives until the session ends; :meth:`drop` takes it away sooner."""
        self._stage_n += 1
        name = f"edgetui_stage_{self._stage_n}"
        try:
            cur = self._conn.cursor()
            try:
                cur.adbc_ingest(name, rows, mode="create", temporary=True)
            finally:
                cur.close()
        except DriverError as e:  # any driver error: one line, the url left out (raised as TeamError)
            raise self._error("team record (staging rows)", e) from None
        return name

    def append(self, schema: str, table: str, rows: pa.Table) -> None:
        """Copy ``rows`` straight into the existing table ``schema.table`` (PostgreSQL's binary COPY, the
        columns by name): the fast path for rows the table cannot hold yet (a key already there fails
        the transaction with a unique violation, 23505)."""
        try:
            cur = self._conn.cursor()
            try:
                cur.adbc_ingest(table, rows, mode="append", db_schema_name=schema)
            finally:
                cur.close()
        except DriverError as e:
            raise self._error(f"team record (copying rows into {table})", e) from None

    def commit(self) -> None:
        try:
            self._conn.commit()
        except DriverError as e:  # any driver error: one line, the url left out (raised as TeamError)
            raise self._error("team record (commit)", e) from None

    def rollback(self) -> None:
        try:
            self._conn.rollback()
        except DriverError:  # the connection is gone already: nothing of the transaction was kept
            pass

    def close(self) -> None:
        try:
            if self._conn is not None:
                self._conn.close()
        except DriverError:  # closing a broken connection: nothing left to release
            pass
        self._conn = None
