"""Opening the database, and answering other edgetui processes while holding it.

DuckDB allows one read-write process *or* many read-only ones per file, never
both. The process that holds the file read-write (the app, ``watch``, a long
``ingest``) starts a :class:`~edgetui.holder.HolderServer`: a Unix socket in a
0700 directory (only the user can connect) answering read-only SQL from other
edgetui commands (``sql``, ``runs``); see :mod:`edgetui.holder` for its limits. A process that can open neither the file nor
the socket gets :class:`DatabaseBusy` naming the holder's PID; the CLI then
offers ``--snapshot`` (a read-only copy of the file).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Optional

import duckdb
import platformdirs

from .rescrub import rewrite_file
from .schema import SCHEMA_VERSION, current_version, migrate, rewrite_pending


class DatabaseBusy(Exception):
    """The file is locked by another process; ``pid`` is the holder's PID when known."""

    def __init__(self, path: Path, pid: Optional[int], detail: str = ""):
        self.path = path
        self.pid = pid
        who = f"process {pid}" if pid else "another process"
        if pid == os.getpid():  # this process itself (a second open of a file it has open)
            super().__init__(f"{path} is held by this process ({who}): {detail}")
            return
        super().__init__(
            f"{path} is held by {who}{(': ' + detail) if detail else ''}; "
            f"`edgetui sql` and `edgetui runs` read it through that process or, with --snapshot, "
            f"from a copy; other commands need {who} to stop first"
        )


def default_db_path() -> Path:
    """``<user data dir>/edgetui/edgetui.duckdb`` (platformdirs), or ``$EDGETUI_DB``."""
    env = os.environ.get("EDGETUI_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("edgetui")) / "edgetui.duckdb"


def _holder_pid(err: Exception) -> Optional[int]:
    m = re.search(r"PID (\d+)", str(err))
    return int(m.group(1)) if m else None


def _busy(path: Path, err: Exception) -> Optional[DatabaseBusy]:
    """The :class:`DatabaseBusy` that a failed connect to ``path`` means, or None: a lock held by
    another process, or DuckDB's refusal of a second open of a file this process has open already
    (DuckDB 1.x: "Unique file handle conflict ... already attached": not damage, not another process)."""
    if _is_lock_error(err):
        return DatabaseBusy(path, _holder_pid(err))
    s = str(err)
    if "Unique file handle conflict" in s or "already attached by database" in s:
        return DatabaseBusy(path, os.getpid(), "it is open in this same process already (one writable "
                            "connection per file and process: share it, or its .cursor())")
    return None


def _is_lock_error(err: Exception) -> bool:
    s = str(err)
    return "lock" in s.lower() and ("Conflicting" in s or "Could not set lock" in s)


class DatabaseDamaged(ValueError):
    """The file fails the cheap checks made before opening it (never written into)."""


def check_header(path: Path) -> Optional[str]:
    """The cheap check of a DuckDB file's header: its magic, and its size against where its newest
    database header says the catalog and the free list are (DuckDB's storage format: a 4 KiB main
    header, then two 4 KiB database headers of checksum, iteration, meta block, free list, block
    count, block size…).
    Returns a one-line reason when the file is damaged (e.g. truncated), else None; formats it
    does not recognise pass (DuckDB itself then decides)."""
    import struct

    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(12288)
    except OSError as e:
        return f"cannot read it ({e.strerror or e})"
    if size == 0:
        return None
    if len(head) < 12288 or head[8:12] != b"DUCK":
        return "not a DuckDB database file (no DuckDB header)"
    best = None
    for off in (4096, 8192):
        iteration, meta, free, blocks, block_size = struct.unpack_from("<QQQQQ", head, off + 8)
        if best is None or iteration > best[0]:
            best = (iteration, meta, free, block_size)
    _, meta, free, block_size = best  # type: ignore[misc]
    if not (4096 <= block_size <= (1 << 24) and block_size & (block_size - 1) == 0):
        return None  # a layout this check does not know
    # the catalog's first block and the free list's (block pointers: the id in the low 56 bits) must
    # lie inside the file. (The header's block count cannot be used: DuckDB truncates free blocks at
    # the end of the file without lowering it.)
    if (size - 12288) % block_size:  # DuckDB writes whole blocks: a size between them was cut
        return (f"damaged: the file is {size} bytes, not a whole number of its {block_size}-byte blocks; it was "
                "cut short (copied while written, or a full disk). It is left untouched; `edgetui check` tells more")
    ids = [p & ((1 << 56) - 1) for p in (meta, free) if p != (1 << 64) - 1]
    if not ids:
        return None
    need = 12288 + (max(ids) + 1) * block_size
    if size < need:
        return (f"damaged: the file is {size} bytes but its catalog is at block {max(ids)} of {block_size} bytes "
                f"(needs {need} bytes); it was cut short (copied while written, or a full disk). "
                "It is left untouched; `edgetui check` tells more")
    return None


def open_db(path: Path | str, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and migrate, when writable) the database at ``path``.

    Before anything is written the file passes cheap checks: its header against its size
    (:func:`check_header`), then a readable catalog with edgetui's schema marker (the ``meta``
    table), read on the connection itself before it migrates (a writable DuckDB connection writes
    nothing until a statement does), or, when a WAL file lies beside it (which a writable open
    would replay into the file), on a read-only open first. Raises :class:`DatabaseBusy` when another process holds the
    file, :class:`DatabaseDamaged` for a damaged file and ``ValueError`` for another
    application's DuckDB database (both left byte for byte as they were).
    """
    path = Path(path).expanduser()
    checked_on_open = False  # the catalog checked on the writable connection itself (no second open)
    if path.exists() and path.stat().st_size > 0:
        why = check_header(path)
        if why:
            raise DatabaseDamaged(f"{path}: {why}")
        if not read_only:
            if Path(str(path) + ".wal").exists():  # opened writable, DuckDB would replay it into the file
                _check_catalog(path)
            else:  # a writable open writes nothing until a statement does: one open, checked before migrate
                checked_on_open = True
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = duckdb.connect(str(path), read_only=True) if read_only else connect_writable(path)
    except duckdb.Error as e:  # IOException / ConnectionException
        busy = _busy(path, e)
        if busy is not None:
            raise busy from None
        if "not a valid DuckDB database" in str(e) or "in-memory database in read-only" in str(e):
            raise ValueError(f"{path} is not an edgetui (DuckDB) database") from None
        if checked_on_open or (read_only and "corrupt" in str(e).lower()):
            raise DatabaseDamaged(f"{path}: damaged, cannot be opened ({' '.join(str(e).split())[:200]}); "
                                  "it is left untouched") from None
        raise
    if checked_on_open:
        try:
            _check_tables(path, conn)
        except BaseException:
            conn.close()
            raise
    if read_only:
        if 0 < current_version(conn) < SCHEMA_VERSION or rewrite_pending(conn):
            # written by an earlier version: migrate (secrets re-scrubbed) before anything is read
            conn.close()
            open_db(path).close()
            return open_db(path, read_only=True)
        return conn
    migrate(conn)
    if rewrite_pending(conn):  # the file still holds blocks of the values the migration replaced
        conn.close()
        try:
            rewrite_file(path)
        except (duckdb.Error, OSError) as e:
            raise RuntimeError(f"{path}: could not rewrite the database after re-scrubbing its secrets: {e}") from None
        conn = connect_writable(path)
    return conn


#: rows per row group of a database opened for writing (DuckDB's default: 122,880). An ingest
#: commits a transcript every few MB; each commit's checkpoint rewrote the table's growing last
#: row group whole (at ~2 kB an event, up to ~250 MB a checkpoint): 4,096 rows bounds that rewrite
#: to ~8 MB. On a 200 MB transcript: DuckDB's CPU in the inserting process 3.4-4.7 -> 1.8-2.2 s,
#: its resident growth ~410 -> ~100 MB, the file 321 -> 185 MB (2,048 doubled the file; 8,192-16,384
#: grew the memory). DuckDB keeps the size per attach, not in the file: every writable open sets it,
#: so the row groups written stay small (an open with the default merges them back).
ROW_GROUP_SIZE = 4096


def connect_writable(path: Path | str) -> duckdb.DuckDBPyConnection:
    """A read-write DuckDB connection to ``path`` whose new row groups hold :data:`ROW_GROUP_SIZE`
    rows: an in-memory instance that attaches the file under its stem (``(ROW_GROUP_SIZE n)`` is an
    ``ATTACH`` option only), makes it the default and detaches the in-memory database, so the
    connection and its cursors see the file's catalog as ``duckdb.connect(path)`` would. Raises
    ``duckdb.Error`` as ``duckdb.connect`` does (a lock held by another process, not a DuckDB file)."""
    stem = Path(path).stem or "edgetui"
    alias = stem if stem.lower() not in ("memory", "system", "temp", "main") else stem + "_db"
    q = '"' + alias.replace('"', '""') + '"'
    conn = duckdb.connect()
    try:
        conn.execute(f"ATTACH ? AS {q} (ROW_GROUP_SIZE {ROW_GROUP_SIZE})", [str(path)])
        conn.execute(f"USE {q}")
        conn.execute("DETACH memory")
    except BaseException:
        conn.close()
        raise
    return conn


#: DuckDB's memory limit (its buffer pool's bound) while the app only replays (no live supervision
#: in the process): DuckDB keeps every table block a read pulled in until the limit presses, and the
#: database's small row groups (:data:`ROW_GROUP_SIZE`) pack every column's segments into shared
#: 256 kB blocks, so a replay's reads of a 1,000,000-event run left ~110 MB of blocks in the pool
#: (6 MB at 50,000: bench/bench_replay.py, DESIGN.md). The reads' own working set is smaller
#: (1M events: the cursor's index ~24 MB, the header's aggregates ~32 MB); a read that needs more
#: lifts the limit (:func:`pool_retry`). ``EDGETUI_REPLAY_MEMORY_LIMIT`` sets another.
REPLAY_MEMORY_LIMIT = os.environ.get("EDGETUI_REPLAY_MEMORY_LIMIT", "48MB")


def cap_pool(conn: duckdb.DuckDBPyConnection, limit: str = "") -> None:
    """Bound DuckDB's buffer pool of ``conn``'s database to ``limit`` (default
    :data:`REPLAY_MEMORY_LIMIT`; a DuckDB size string such as ``"48MB"``). The limit is the
    database instance's: every connection and cursor of it shares it (an offline ingest sets its own
    for its duration and restores this one)."""
    conn.execute(f"SET memory_limit = '{limit or REPLAY_MEMORY_LIMIT}'")


def lift_pool_on(conn: Optional[duckdb.DuckDBPyConnection], err: BaseException) -> bool:
    """For a worker that catches its errors: True when ``err`` is DuckDB's out-of-memory under a
    :func:`cap_pool` limit, which is then lifted (DuckDB's default) so the caller reads again; False
    for any other error, or when the limit is DuckDB's default already (nothing left to lift)."""
    if conn is None or not isinstance(err, duckdb.OutOfMemoryException):
        return False
    try:
        now = conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
        conn.execute("RESET memory_limit")
        return conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] != now
    except duckdb.Error:
        return False


def pool_retry(conn: duckdb.DuckDBPyConnection, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; when it fails with ``duckdb.OutOfMemoryException`` (a read needing more
    than a :func:`cap_pool` limit), the limit goes back to DuckDB's default (80 % of the machine's
    memory) for the rest of the connection's life and ``fn`` runs once more: a bounded pool must never
    cost a user a replay. Other errors propagate, as does a second out-of-memory."""
    try:
        return fn(*args, **kwargs)
    except duckdb.OutOfMemoryException as e:
        if not lift_pool_on(conn, e):
            raise
        return fn(*args, **kwargs)


def _check_catalog(path: Path) -> None:
    """Open ``path`` read-only: the catalog must be readable and, when the file holds tables, one
    of them must be edgetui's ``meta`` (another application's database is never written into)."""
    try:
        ro = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        busy = _busy(path, e)
        if busy is not None:
            raise busy from None
        if "not a valid DuckDB database" in str(e):
            raise ValueError(f"{path} is not an edgetui (DuckDB) database") from None
        raise DatabaseDamaged(f"{path}: damaged, cannot be opened ({' '.join(str(e).split())[:200]}); "
                              "it is left untouched") from None
    try:
        _check_tables(path, ro)
    finally:
        ro.close()


def _check_tables(path: Path, conn: duckdb.DuckDBPyConnection) -> None:
    """On an open connection to ``path`` (nothing written yet): its catalog readable and, when it
    holds tables, edgetui's ``meta`` among them. Raises :class:`DatabaseDamaged` or ``ValueError``."""
    try:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    except duckdb.Error as e:
        raise DatabaseDamaged(f"{path}: damaged, its catalog cannot be read ({' '.join(str(e).split())[:200]}); "
                              "it is left untouched") from None
    if tables and "meta" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
        raise ValueError(f"{path} is a DuckDB database of another application (tables {shown}; no edgetui "
                         "schema marker): edgetui does not write into it; choose another --db path")


def check_database(path: Path | str) -> list[str]:
    """The full check (``edgetui check``): the header, the catalog, then every column of every
    table read (DuckDB verifies each block's checksum as it reads it). Returns the problems
    found, one line each (empty: the file is sound). Never writes."""
    path = Path(path).expanduser()
    if not path.exists():
        return [f"{path}: no such file"]
    why = check_header(path)
    if why:
        return [f"{path}: {why}"]
    problems = []
    try:
        conn = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        return [f"{path}: cannot be opened: {' '.join(str(e).split())[:200]}"]
    try:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        if "meta" not in tables:
            problems.append(f"{path}: no edgetui schema marker (the meta table)")
        for t in tables:
            q = '"' + t.replace('"', '""') + '"'
            try:
                conn.execute(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {q}").fetchall()
            except duckdb.Error as e:
                problems.append(f"{path}: table {t}: {' '.join(str(e).split())[:200]}")
    finally:
        conn.close()
    return problems


def close_when_idle(conn: Optional[duckdb.DuckDBPyConnection], timeout: float = 10.0) -> bool:
    """Close ``conn`` once no cursor made from it is mid-query; wait up to ``timeout`` seconds.

    DuckDB (2.x) refuses to close a connection while a cursor taken from it runs a query
    (``ResourceInUseException``, "connection is busy") instead of waiting; a view's worker thread
    may still be reading when the app quits. Returns True when closed, False when still busy at
    the deadline (the process exit then closes it). Never raises for a busy or already closed
    connection.
    """
    if conn is None:
        return True
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.close()
            return True
        except duckdb.ConnectionException:  # already closed
            return True
        except duckdb.Error as e:
            if "busy" not in str(e) or time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def snapshot_copy(path: Path | str) -> duckdb.DuckDBPyConnection:
    """Copy the database file (and its WAL) to a temp dir and open the copy read-only.

    The copy reflects what the holder has checkpointed; rows still only in the
    holder's WAL are included when the WAL file is copied too.
    """
    path = Path(path).expanduser()
    tmp = Path(tempfile.mkdtemp(prefix="edgetui-snapshot-"))
    import atexit

    atexit.register(shutil.rmtree, tmp, True)  # the copy lives as long as this process
    dst = tmp / path.name
    shutil.copy2(path, dst)
    wal = Path(str(path) + ".wal")
    if wal.exists():
        shutil.copy2(wal, Path(str(dst) + ".wal"))
    conn = duckdb.connect(str(dst), read_only=False)  # replays the WAL copy
    conn.execute("CHECKPOINT")
    conn.close()
    return duckdb.connect(str(dst), read_only=True)


# ---------------------------------------------------------------------------- holder socket
# (edgetui.holder; re-exported here, where callers have always found them)
from .holder import (  # noqa: E402,F401
    HolderServer, QueryResult, SocketDirError, ask_holder, check_read_only, run_query, socket_path,
)
