"""The SQL screen's read side: a query run under the socket's read-only rule, its rows fetched a page
at a time from a cursor held open (never the whole result), cancelled by DuckDB's ``interrupt()``,
exported as CSV or Parquet by Arrow batches (never SQL ``COPY``); the schema with each table's,
view's and column's meaning; the names the editor completes; the query history file.

Every query passes :func:`edgetui.store.read_only_sql.check_read_only` first, with the connection
(a qualified name must be in the catalog), whichever process holds the database: the app's own
connection is writable, and the SQL screen must still only read it.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import duckdb
import platformdirs
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from edgetui.store.column_meanings import meaning_of
from edgetui.store.holder_socket import HolderCursor
from edgetui.store.read_only_sql import check_read_only
from edgetui.store.ready_views import READY_VIEWS

__all__ = [
    "PAGE_ROWS",
    "PagedResult",
    "HolderPagedResult",
    "run_paged",
    "export_result",
    "schema_entries",
    "ready_the_rule",
    "completion_words",
    "event_time",
    "QueryHistory",
    "QueryBuffer",
    "TABLE_MEANINGS",
]

#: rows fetched per page (the results table asks for the next page as its cursor nears the end)
PAGE_ROWS = 200

#: the tables' meanings (the schema has no COMMENT on tables; the views carry their own)
TABLE_MEANINGS: dict[str, str] = {
    "runs": "one row per run (host + run id + task id): status, best, totals of tokens and dollars",
    "tasks": "task settings: selection policy, score direction, rescale",
    "events": "every event of every run (kind, time, summary, tool, tokens, data JSON, raw bytes)",
    "submissions": "graded rounds: score, pass rate, when sent and known, best so far",
    "test_results": "each test's result in each graded round",
    "annotations": "labels and notes on events and moments",
    "source_cursors": "how far each source file of each run is recorded",
    "prices": "the price table, USD per million tokens by model pattern",
    "tombstones": "runs forgotten with `edgetui forget`",
    "run_tags": "names given to runs with `edgetui tag`",
    "record_keys": "message ids and uuids of transcript events (records repeated across runs)",
    "fits": "fitted curves stored by `edgetui fit --store`",
    "moments": "detected moments (new bests, change points, reframing moments)",
    "meta": "the schema version and markers",
    "team_sync": "the team record: who recorded each run, what `edgetui sync` last pushed and pulled of it",
    "team_annotations": "the team record: each annotation's team version and what was last synced of it",
}


class PagedResult:
    """One query on its own cursor of ``conn``: :meth:`run`, then ``columns`` and :meth:`next_page`
    until ``done``. :meth:`interrupt` (from another thread) stops a :meth:`run` or a fetch; with
    ``timeout_s``, a run or a fetch is interrupted after that many seconds (``timed_out`` is then set)."""

    def __init__(
        self, conn: duckdb.DuckDBPyConnection, page_rows: int = PAGE_ROWS, timeout_s: Optional[float] = None
    ) -> None:
        self.cursor = conn.cursor()
        self.conn = conn
        self.page_rows = page_rows
        self.timeout_s = timeout_s
        self.timed_out = False
        self.columns: list[str] = []
        self.types: list[str] = []
        self.done = True
        self.fetched = 0

    def _timed(self, fn: Callable[[], Any]) -> Any:
        if not self.timeout_s:
            return fn()

        def stop() -> None:
            self.timed_out = True
            self.cursor.interrupt()

        timer = threading.Timer(self.timeout_s, stop)
        timer.daemon = True
        timer.start()
        try:
            return fn()
        finally:
            timer.cancel()

    def run(self, sql: str) -> "PagedResult":
        """Check ``sql`` (the read-only rule, with the catalog) and run it; no row is fetched yet.
        Raises ``ValueError`` (refused, or does not parse) or ``duckdb.Error`` (``InterruptException``
        when interrupted)."""
        check_read_only(sql, self.conn)
        self._timed(lambda: self.cursor.execute(sql))
        desc = self.cursor.description or []
        self.columns = [d[0] for d in desc]
        self.types = [str(d[1]) for d in desc]
        self.done = not desc
        return self

    def next_page(self) -> list[tuple]:
        """The next ``page_rows`` rows (fewer, and ``done``, at the end)."""
        if self.done:
            return []
        rows = self._timed(lambda: self.cursor.fetchmany(self.page_rows))
        self.fetched += len(rows)
        if len(rows) < self.page_rows:
            self.done = True
        return rows

    def interrupt(self) -> None:
        """Stop the query running on this cursor (DuckDB raises ``InterruptException`` in its thread)."""
        self.cursor.interrupt()

    def close(self) -> None:
        self.done = True
        try:
            self.cursor.close()
        except duckdb.Error:  # already closed with its connection: nothing to release
            pass


class HolderPagedResult:
    """:class:`PagedResult`'s reading when another process holds the file: the query runs in that
    process, its rows fetched a page at a time over its socket (:mod:`edgetui.store.holder_cursors`).
    Raises ``ConnectionError`` when no holder answers, ``RuntimeError`` with its one-line error."""

    def __init__(self, db_path: Path | str, page_rows: int = PAGE_ROWS, timeout_s: Optional[float] = None) -> None:
        self.db_path = db_path
        self.page_rows = page_rows
        self.timeout_s = timeout_s
        self.cursor: Optional[HolderCursor] = None
        self.columns: list[str] = []
        self.types: list[str] = []
        self.done = True
        self.fetched = 0

    def run(self, sql: str) -> "HolderPagedResult":
        check_read_only(sql)  # (the holder checks it again, with its catalog)
        self.cursor = HolderCursor(self.db_path)
        self.cursor.open(sql, query_timeout=self.timeout_s)
        self.columns, self.types = self.cursor.columns, self.cursor.types
        self.done = self.cursor.done
        return self

    def next_page(self) -> list[tuple]:
        if self.done or self.cursor is None:
            return []
        rows = self.cursor.fetch(self.page_rows)
        self.fetched += len(rows)
        self.done = self.cursor.done
        return rows

    def interrupt(self) -> None:
        """Ask the holder to stop the query, from a thread of its own (a connection to the holder may
        take a while; the caller is the screen's)."""
        if self.cursor is not None:
            threading.Thread(target=self.cursor.cancel, name="edgetui-sql-cancel", daemon=True).start()

    def close(self) -> None:
        self.done = True
        if self.cursor is not None:
            self.cursor.close()


def run_paged(
    conn: duckdb.DuckDBPyConnection, sql: str, page_rows: int = PAGE_ROWS, timeout_s: Optional[float] = None
) -> PagedResult:
    """``sql`` run (read-only rule) on a new cursor of ``conn``, unfetched."""
    res = PagedResult(conn, page_rows, timeout_s)
    try:
        return res.run(sql)
    except BaseException:
        res.close()
        raise


def export_result(conn: duckdb.DuckDBPyConnection, sql: str, path: Path | str, fmt: str) -> int:
    """Run ``sql`` again (read-only rule) and write its rows to ``path`` as ``csv`` or ``parquet``,
    Arrow batch by batch (memory bounded by a batch, never SQL ``COPY``); returns the rows written.
    The file appears whole or not at all (written beside it, then renamed)."""
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"export as csv or parquet, not {fmt!r}")
    check_read_only(sql, conn)
    path = Path(path).expanduser()
    tmp = path.with_name(path.name + ".part")
    cur = conn.cursor()
    n = 0
    try:
        reader = cur.sql(sql).to_arrow_reader(64 * 1024)  # a relation streamed as Arrow batches
        writer: Any = (
            pa_csv.CSVWriter(str(tmp), reader.schema) if fmt == "csv" else pq.ParquetWriter(str(tmp), reader.schema)
        )
        try:
            for batch in reader:
                writer.write_batch(batch)
                n += batch.num_rows
        finally:
            writer.close()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        cur.close()
    return n


def ready_the_rule() -> None:
    """Set up the read-only rule's parser now (a private in-memory DuckDB and the list of built-in
    functions: ~0.1 s once per process), so that the screen's first query does not wait for it."""
    check_read_only("SELECT 1")


def schema_entries(conn: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Tables, then views: ``{name, kind, meaning, columns: [(name, type, meaning)]}``. A meaning is
    DuckDB's own comment when the schema has one, else :data:`TABLE_MEANINGS`."""
    with conn.cursor() as cur:
        tables = cur.execute(
            "SELECT table_name, 'table', comment FROM duckdb_tables() WHERE database_name = current_database() "
            "UNION ALL SELECT view_name, 'view', comment FROM duckdb_views() "
            "WHERE NOT internal AND database_name = current_database() ORDER BY 2, 1"
        ).fetchall()
        cols = cur.execute(
            "SELECT table_name, column_name, data_type, comment FROM duckdb_columns() "
            "WHERE database_name = current_database() ORDER BY table_name, column_index"
        ).fetchall()
    by_table: dict[str, list[tuple[str, str, str]]] = {}
    for t, c, ty, comment in cols:  # (a snapshot of an older file may lack the comments: the store's own then)
        by_table.setdefault(t, []).append((c, ty, comment or meaning_of(t, c) or ""))
    out = []
    for name, kind, comment in tables:
        meaning = comment or TABLE_MEANINGS.get(name) or (READY_VIEWS[name][0] if name in READY_VIEWS else "")
        out.append({"name": name, "kind": kind, "meaning": meaning, "columns": by_table.get(name, [])})
    return out


def completion_words(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """What the editor completes: tables, views, their columns, then DuckDB's functions and keywords."""
    words: list[str] = []
    seen: set[str] = set()
    with conn.cursor() as cur:
        rows = cur.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal AND database_name = current_database() "
            "UNION ALL SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
            "UNION ALL SELECT function_name FROM duckdb_functions() WHERE NOT internal OR function_type <> 'macro' "
            "UNION ALL SELECT keyword_name FROM duckdb_keywords()"
        ).fetchall()
    for (w,) in rows:
        if w and w not in seen and w.replace("_", "").isalnum():
            seen.add(w)
            words.append(w)
    return words


def event_time(conn: duckdb.DuckDBPyConnection, run_key: str, event_id: str) -> Optional[float]:
    """The time of ``event_id`` of ``run_key`` (``None`` when there is no such event or it has no time)."""
    with conn.cursor() as cur:
        row = cur.execute("SELECT t FROM events WHERE run_key = ? AND event_id = ?", [run_key, event_id]).fetchone()
    return None if row is None or row[0] is None else float(row[0])


class QueryHistory:
    """The queries run from the SQL screen, newest last, kept across restarts in a JSON-lines file of
    the user's state directory (``<state dir>/edgetui/sql_history.jsonl``); at most ``limit`` kept."""

    def __init__(self, path: Optional[Path] = None, limit: int = 500) -> None:
        self.path = path or Path(platformdirs.user_state_dir("edgetui")) / "sql_history.jsonl"
        self.limit = limit

    def load(self) -> list[str]:
        """The queries, oldest first; a line that is not a record of ours is skipped."""
        try:
            lines = self.path.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:  # no query run yet: an empty history
            return []
        out: list[str] = []
        for line in lines:
            try:
                q = json.loads(line).get("sql")
            except (ValueError, AttributeError):  # a line not ours (hand-edited, cut short): skipped
                continue
            if isinstance(q, str) and q.strip():
                out.append(q)
        return out[-self.limit :]

    def add(self, sql: str) -> None:
        """Append ``sql`` (a repeat of the last one is not added again); the file is cut to ``limit``."""
        sql = sql.strip()
        if not sql:
            return
        past = self.load()
        if past and past[-1] == sql:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        past.append(sql)
        past = past[-self.limit :]
        tmp = self.path.with_name(self.path.name + ".part")
        tmp.write_text("".join(json.dumps({"sql": q, "at": time.time()}) + "\n" for q in past), encoding="utf-8")
        os.replace(tmp, self.path)

    def matching(self, text: str) -> list[str]:
        """The queries containing every word of ``text`` (case-insensitive), newest first."""
        words = text.lower().split()
        return [q for q in reversed(self.load()) if all(w in q.lower() for w in words)]


class QueryBuffer:
    """The editor's text, saved every minute and on each run (``<state dir>/edgetui/sql_buffer.sql``),
    so a crash or a closed terminal loses at most a minute of typing: the next SQL screen opens with it."""

    def __init__(self, path: Optional[Path] = None) -> None:
        self.path = path or Path(platformdirs.user_state_dir("edgetui")) / "sql_buffer.sql"

    def load(self) -> str:
        try:
            return self.path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:  # nothing saved yet
            return ""

    def save(self, text: str) -> None:
        """Write ``text`` whole (beside, then renamed: a crash mid-write keeps the last buffer)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".part")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, self.path)


def export_bytes(conn: Any, sql: str, name: str, fmt: str) -> tuple[int, bytes]:
    """:func:`export_result` into a private temporary directory, returned as (rows, the file's bytes)
    with nothing left on disk: the export of a browser tab (``edgetui serve``), which the browser
    downloads; no path typed in a tab is written on the serving machine."""
    with tempfile.TemporaryDirectory(prefix="edgetui-export-") as tmp:
        out = Path(tmp) / (Path(name).name or "edgetui-result.csv")
        n = export_result(conn, sql, str(out), fmt)
        return n, out.read_bytes()
