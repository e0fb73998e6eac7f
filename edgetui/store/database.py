"""Opening the database, and answering other edgetui processes while holding it.

DuckDB allows one read-write process *or* many read-only ones per file, never
both. The process that holds the file read-write (the app, ``watch``, a long
``ingest``) starts a :class:`~edgetui.store.holder_socket.HolderServer`: a Unix socket in a
0700 directory (only the user can connect) answering read-only SQL from other
edgetui commands (``sql``, ``runs``); see :mod:`edgetui.store.holder_socket` for its limits. A process that can open neither the file nor
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
from typing import Callable, Optional

import duckdb
import platformdirs

from edgetui.errors import (
    DatabaseBusy,
    DatabaseDamaged,
    DatabaseReadOnly,
    DatabaseTooNew,
    DatabaseUnreadable,
    DiskFull,
    ForeignDatabase,
    HolderNotAnswering,
    HolderNotServing,
    NoSocketDirectory,
    UserError,
)
from edgetui.store.migrate_rescrub import rewrite_file
from edgetui.store.schema import SCHEMA_VERSION, current_version, migrate, rewrite_pending

from edgetui.store.holder_socket import NoSocketDir, NotAnswering, NotServing
import struct
import sys
import errno as _errno

import atexit


def default_db_path() -> Path:
    """``<user data dir>/edgetui/edgetui.duckdb`` (platformdirs), or ``$EDGETUI_DB``."""
    env = os.environ.get("EDGETUI_DB")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir("edgetui")) / "edgetui.duckdb"


def _holder_pid(err: Exception) -> Optional[int]:
    m = re.search(r"PID (\d+)", str(err))
    return int(m.group(1)) if m else None


def _busy(path: Path, err: Exception) -> Optional[DatabaseBusy]:  # (DatabaseBusy: edgetui.errors)
    """The :class:`DatabaseBusy` that a failed connect to ``path`` means, or None: a lock held by
    another process, or DuckDB's refusal of a second open of a file this process has open already
    (DuckDB 1.x: "Unique file handle conflict ... already attached": not damage, not another process)."""
    if _is_lock_error(err):
        pid = _holder_pid(err)
        what = process_name(pid)
        try:
            serving = socket_path(path).exists()
        except SocketDirError:
            serving = True  # (unknown here: a reader that asks says why it could not)
        if not serving:
            return HolderNotServing(path, pid, what)
        return DatabaseBusy(path, pid, what)
    s = str(err)
    if "Unique file handle conflict" in s or "already attached by database" in s:
        return DatabaseBusy(
            path,
            os.getpid(),
            "it is open in this same process already (one writable "
            "connection per file and process: share it, or its .cursor())",
        )
    return None


#: edgetui's top-level options that take no value (``edgetui --help``): every other one takes one
_TOP_FLAGS = frozenset({"-h", "--help", "--version", "--poll", "--no-docker"})


def process_name(pid: Optional[int]) -> str:
    """What process ``pid`` runs, for messages: ``edgetui ingest``, ``edgetui`` (the app), or its
    program's name; empty when unknown (no ``/proc``, the process ended)."""
    if not pid:
        return ""
    try:
        argv = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return ""
    if not argv:
        return ""
    for i, a in enumerate(argv):
        if a == "edgetui.cli.main" or os.path.basename(a) == "edgetui":
            rest = argv[i + 1 :]
            j = 0
            while j < len(rest) and rest[j].startswith("-"):
                # edgetui's top-level options take a value (--db, --tasks-dir…) but these flags
                j += 1 if rest[j] in _TOP_FLAGS or "=" in rest[j] else 2
            return "edgetui" + (f" {rest[j]}" if j < len(rest) else "")
    return os.path.basename(argv[0])


def busy_because(busy: DatabaseBusy, why: ConnectionError) -> DatabaseBusy:
    """The :class:`DatabaseBusy` that says why the holder of ``busy.path`` could not be asked
    (``why`` from :func:`edgetui.store.holder_socket.ask_holder`): it serves no socket, it does not answer, or no
    socket directory exists here."""

    what = process_name(busy.pid)
    if isinstance(why, NoSocketDir):
        return NoSocketDirectory(busy.path, busy.pid, str(why))
    if isinstance(why, NotAnswering):
        return HolderNotAnswering(busy.path, busy.pid, str(why), what)
    if isinstance(why, NotServing):
        return HolderNotServing(busy.path, busy.pid, what)
    return busy


def _is_lock_error(err: Exception) -> bool:
    s = str(err)
    return "lock" in s.lower() and ("Conflicting" in s or "Could not set lock" in s)


def check_header(path: Path) -> Optional[str]:
    """The cheap check of a DuckDB file's header: its magic, and its size against where its newest
    database header says the catalog and the free list are (DuckDB's storage format: a 4 KiB main
    header, then two 4 KiB database headers of checksum, iteration, meta block, free list, block
    count, block size…).
    Returns a one-line reason when the file is damaged (e.g. truncated), else None; formats it
    does not recognise pass (DuckDB itself then decides)."""

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
    # the two headers: the one of the higher iteration counts (the first on a tie)
    headers = [struct.unpack_from("<QQQQQ", head, off + 8) for off in (4096, 8192)]
    _, meta, free, _blocks, block_size = max(headers, key=lambda h: h[0])
    if not (4096 <= block_size <= (1 << 24) and block_size & (block_size - 1) == 0):
        return None  # a layout this check does not know
    # the catalog's first block and the free list's (block pointers: the id in the low 56 bits) must
    # lie inside the file. (The header's block count cannot be used: DuckDB truncates free blocks at
    # the end of the file without lowering it.)
    if (size - 12288) % block_size:  # DuckDB writes whole blocks: a size between them was cut
        return (
            f"damaged: the file is {size} bytes, not a whole number of its {block_size}-byte blocks; it was "
            "cut short (copied while written, or a full disk)"
        )
    ids = [p & ((1 << 56) - 1) for p in (meta, free) if p != (1 << 64) - 1]
    if not ids:
        return None
    need = 12288 + (max(ids) + 1) * block_size
    if size < need:
        return (
            f"damaged: the file is {size} bytes but its catalog is at block {max(ids)} of {block_size} bytes "
            f"(needs {need} bytes); it was cut short (copied while written, or a full disk)"
        )
    return None


def _print_note(text: str) -> None:

    print(f"edgetui: note: {text}", file=sys.stderr)


def _wal(path: Path) -> Path:
    return Path(str(path) + ".wal")


def _oneline(e: BaseException, n: int = 200) -> str:
    return " ".join(str(e).split("\nLINE ", 1)[0].split())[:n]


def _io_error(path: Path, e: BaseException) -> Optional[UserError]:
    """The :class:`UserError` that an I/O failure on ``path`` means (a full disk, a file system or
    file that cannot be written), else None."""
    s = str(e)
    low = s.lower()
    if isinstance(e, OSError) and e.errno is not None:
        if e.errno in (_errno.ENOSPC, _errno.EDQUOT, _errno.EFBIG):
            low += " no space left on device"
        elif e.errno in (_errno.EROFS, _errno.EACCES, _errno.EPERM):
            low += " read-only file system" if e.errno == _errno.EROFS else " permission denied"
    if "no space left" in low or "file too large" in low or "disk quota" in low:
        where = path.parent
        try:
            st = os.statvfs(where)
            free = f"{st.f_bavail * st.f_frsize / 1e6:.1f} MB free on its file system"
        except OSError:
            free = "its file system is full"
        kind = (
            "the file size limit of this process was reached"
            if "file too large" in low
            else f"no space left on device ({free})"
        )
        return DiskFull(
            path,
            f"{path}: {kind}; what was recorded before stays: free space under {where} and run "
            "the command again (DuckDB recovers the file from its WAL), or choose another --db",
        )
    if "read-only file system" in low or "permission denied" in low:
        return read_only_error(path)
    return None


def _not_writable(path: Path) -> Optional[str]:
    """Why ``path`` (its file, its directory for the WAL, its file system) cannot be written, else None."""
    d = path.parent
    try:
        if os.statvfs(d).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except OSError:
        pass
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable by this user"
    if not os.access(d, os.W_OK | os.X_OK):
        return f"its directory {d} is not writable by this user (DuckDB writes a WAL file beside it)"
    return None


def read_only_error(path: Path, why: str = "") -> DatabaseReadOnly:
    why = why or _not_writable(path) or "it cannot be written"
    return DatabaseReadOnly(
        path,
        f"{path}: {why}; the app, replay, `runs` and `sql` open it read-only, recording "
        "and changing runs need it writable (or copy it elsewhere and use --db)",
    )


def open_db(
    path: Path | str, read_only: bool = False, note: Optional[Callable[[str], None]] = None
) -> duckdb.DuckDBPyConnection:
    """Open (and migrate, when writable) the database at ``path``.

    Before anything is written the file passes cheap checks: its header against its size
    (:func:`check_header`), then a readable catalog with edgetui's schema marker (the ``meta``
    table), read on the connection itself before it migrates (a writable DuckDB connection writes
    nothing until a statement does), or, when a WAL file lies beside it (which a writable open
    would replay into the file), on a read-only open first.

    A file that fails the header check while a WAL lies beside it was being written when its
    process ended (a kill, a crash, a full disk: the last blocks of a checkpoint torn, the WAL
    holding what was committed). It is read whole on a read-only open (DuckDB replays the WAL in
    memory; the catalog and every column of every table, as :func:`check_database`); when all of it
    reads, a writable open replays the WAL into the file and checkpoints (``note`` gets one line
    saying so; default: printed on stderr), else the file is damaged and stays untouched.

    Raises (all :class:`~edgetui.errors.UserError`, left byte for byte as they were):
    :class:`DatabaseBusy` when another process holds the file, :class:`DatabaseDamaged`,
    :class:`ForeignDatabase` for another application's database, :class:`DatabaseUnreadable`,
    :class:`DatabaseReadOnly` when a
    writable open is asked of a file that cannot be written (a read-only file system, file or
    directory: ``read_only=True`` opens it), :class:`DiskFull`, :class:`DatabaseTooNew`.
    """
    path = Path(path).expanduser()
    note = note or _print_note
    checked_on_open = False  # the catalog checked on the writable connection itself (no second open)
    if path.exists() and not os.access(path, os.R_OK):
        raise DatabaseUnreadable(
            path,
            f"{path}: this user may not read it (permission denied); its owner can "
            "allow it (chmod), or choose another --db",
        )
    if path.exists() and path.stat().st_size > 0:
        why = check_header(path)
        if why and _wal(path).exists():  # torn while written: DuckDB itself decides, read-only
            problems = _read_in_full(path)
            if problems:
                raise DatabaseDamaged(path, f"{path}: {why}; {problems[0]}; {DatabaseDamaged.ADVICE}")
            _recover(path, read_only, note)
        elif why:
            raise DatabaseDamaged(path, f"{path}: {why}; {DatabaseDamaged.ADVICE}")
        elif not read_only:
            if _wal(path).exists():  # opened writable, DuckDB would replay it into the file
                _check_catalog(path)
            else:  # a writable open writes nothing until a statement does: one open, checked before migrate
                checked_on_open = True
    if not read_only:
        unwritable = _not_writable(path) if path.parent.is_dir() else None
        if unwritable:
            raise read_only_error(path, unwritable)
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = duckdb.connect(str(path), read_only=True) if read_only else connect_writable(path)
    except duckdb.Error as e:  # IOException / ConnectionException
        busy = _busy(path, e)
        if busy is not None:
            raise busy from None
        if "not a valid DuckDB database" in str(e) or "in-memory database in read-only" in str(e):
            raise ForeignDatabase(
                path, f"{path} is not an edgetui (DuckDB) database; choose another --db path"
            ) from None
        io = _io_error(path, e)
        if io is not None:
            raise io from None
        if checked_on_open or (read_only and "corrupt" in str(e).lower()):
            raise DatabaseDamaged(
                path, f"{path}: damaged, cannot be opened ({_oneline(e)}); {DatabaseDamaged.ADVICE}"
            ) from None
        raise
    try:
        if checked_on_open or read_only:
            _check_tables(path, conn, empty_ok=not read_only)
        if read_only:
            if 0 < current_version(conn) < SCHEMA_VERSION or rewrite_pending(conn):
                # written by an earlier version: migrate (secrets re-scrubbed) before anything is read
                conn.close()
                unwritable = _not_writable(path)
                if unwritable:
                    raise DatabaseReadOnly(
                        path,
                        f"{path} was written by an earlier edgetui and needs an upgrade "
                        f"of its tables, but {unwritable}; copy it to a writable "
                        "place and open the copy (--db)",
                    )
                open_db(path, note=note).close()
                return open_db(path, read_only=True, note=note)
            return conn
        migrate(conn)
    except BaseException as e:
        try:
            conn.close()
        except duckdb.Error:
            pass
        err = _schema_error(path, e)
        if err is e:
            raise
        raise err from None
    if rewrite_pending(conn):  # the file still holds blocks of the values the migration replaced
        conn.close()
        try:
            rewrite_file(path)
        except (duckdb.Error, OSError) as e:
            io = _io_error(path, e)
            if io is not None:
                raise io from None
            raise RuntimeError(f"{path}: could not rewrite the database after re-scrubbing its secrets: {e}") from None
        conn = connect_writable(path)
    return conn


def _schema_error(path: Path, e: BaseException) -> BaseException:
    """The user error that a failure while reading or migrating the schema means, else ``e``."""
    if isinstance(e, UserError):
        return e
    if isinstance(e, (duckdb.Error, OSError)):
        io = _io_error(path, e)
        if io is not None:
            return io
    if isinstance(e, ValueError) and "schema version" in str(e):
        return ForeignDatabase(path, f"{path}: {e}; choose another --db path")
    if isinstance(e, RuntimeError) and "newer than this edgetui" in str(e):
        return DatabaseTooNew(path, f"{path}: {e}")
    return e


def _read_in_full(path: Path) -> list[str]:
    """:func:`check_database` without the header check: DuckDB opens ``path`` read-only (its WAL
    replayed in memory) and reads the catalog and every column of every table. Raises
    :class:`DatabaseBusy`; returns the problems, one line each."""
    try:
        conn = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        busy = _busy(path, e)
        if busy is not None:
            raise busy from None
        return [f"DuckDB cannot open it ({_oneline(e)})"]
    try:
        return _read_tables(conn)
    finally:
        conn.close()


def _read_tables(conn: duckdb.DuckDBPyConnection) -> list[str]:
    try:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    except duckdb.Error as e:
        return [f"its catalog cannot be read ({_oneline(e)})"]
    problems = []
    for t in tables:
        q = '"' + t.replace('"', '""') + '"'
        try:
            conn.execute(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {q}").fetchall()
        except duckdb.Error as e:
            problems.append(f"table {t}: {_oneline(e)}")
    return problems


def _recover(path: Path, read_only: bool, note: Callable[[str], None]) -> None:
    """Replay the WAL of ``path`` (read whole by :func:`_read_in_full`) into the file and
    checkpoint, so the file is whole again; said in one line through ``note``. When the file cannot
    be written, a read-only open goes on (DuckDB replays the WAL in memory at every open)."""
    wal_bytes = _wal(path).stat().st_size
    unwritable = _not_writable(path)
    if unwritable:
        if not read_only:
            raise read_only_error(
                path, unwritable + " and it needs recovering from its WAL (its last write was interrupted)"
            )
        note(
            f"{path} was not closed cleanly (its last write interrupted); it reads whole with its WAL "
            f"({wal_bytes} bytes), but {unwritable}, so it is read as is and not repaired"
        )
        return
    try:
        conn = connect_writable(path)
    except duckdb.Error as e:
        busy = _busy(path, e)
        if busy is not None:
            raise busy from None
        io = _io_error(path, e)
        if io is not None:
            raise io from None
        raise DatabaseDamaged(
            path, f"{path}: its WAL cannot be replayed ({_oneline(e)}); {DatabaseDamaged.ADVICE}"
        ) from None
    try:
        conn.execute("CHECKPOINT")
    except duckdb.Error as e:
        io = _io_error(path, e)
        if io is not None:
            raise io from None
        raise
    finally:
        conn.close()
    note(
        f"{path} was not closed cleanly (a kill, a crash or a full disk interrupted its last write); "
        f"DuckDB recovered it from its WAL ({wal_bytes} bytes): every committed write is kept"
    )


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
            raise ForeignDatabase(
                path, f"{path} is not an edgetui (DuckDB) database; choose another --db path"
            ) from None
        raise DatabaseDamaged(
            path, f"{path}: damaged, cannot be opened ({_oneline(e)}); {DatabaseDamaged.ADVICE}"
        ) from None
    try:
        _check_tables(path, ro)
    finally:
        ro.close()


def _check_tables(path: Path, conn: duckdb.DuckDBPyConnection, empty_ok: bool = True) -> None:
    """On an open connection to ``path`` (nothing written yet): its catalog readable and, when it
    holds tables, edgetui's ``meta`` among them (also when it holds none, unless ``empty_ok``: a
    read-only open cannot create them). Raises :class:`DatabaseDamaged` or :class:`ForeignDatabase`."""
    try:
        tables = [r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    except duckdb.Error as e:
        raise DatabaseDamaged(
            path, f"{path}: damaged, its catalog cannot be read ({_oneline(e)}); {DatabaseDamaged.ADVICE}"
        ) from None
    if tables and "meta" not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
        raise ForeignDatabase(
            path,
            f"{path} is a DuckDB database of another application (tables {shown}; no "
            "edgetui schema marker): edgetui does not write into it; choose another --db path",
        )
    if not tables and not empty_ok:
        raise ForeignDatabase(
            path,
            f"{path} is an empty DuckDB database (no edgetui tables yet): record runs into "
            "it with `edgetui ingest PATH`, or choose another --db path",
        )


def check_database(path: Path | str) -> list[str]:
    """The full check (``edgetui check``): the header, the catalog, then every column of every
    table read (DuckDB verifies each block's checksum as it reads it). Returns the problems
    found, one line each (empty: the file is sound). Never writes.

    A header that fails while a WAL lies beside it (a write interrupted: see :func:`open_db`) is
    no problem when DuckDB reads the catalog and every table in full with the WAL."""
    path = Path(path).expanduser()
    if not path.exists():
        return [f"{path}: no such file"]
    why = check_header(path)
    if why and not _wal(path).exists():
        return [f"{path}: {why}"]
    try:
        conn = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as e:
        return [f"{path}: {why + '; ' if why else ''}cannot be opened: {_oneline(e)}"]
    try:
        problems = [f"{path}: {p}" for p in _read_tables(conn)]
        tables = (
            [r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
            if not problems
            else ["meta"]
        )
        if "meta" not in tables:
            problems.insert(0, f"{path}: no edgetui schema marker (the meta table)")
    finally:
        conn.close()
    if why and problems:
        problems.insert(0, f"{path}: {why}")
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
# (edgetui.store.holder_socket; re-exported here, where callers have always found them)
from edgetui.store.holder_socket import (  # noqa: E402,F401 - re-exported in this section, where callers have always found them
    HolderServer,
    QueryResult,
    SocketDirError,
    ask_holder,
    check_read_only,
    run_query,
    socket_path,
)
