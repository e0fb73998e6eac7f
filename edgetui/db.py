"""Opening the database, and answering other edgetui processes while holding it.

DuckDB allows one read-write process *or* many read-only ones per file, never
both. The process that holds the file read-write (the app, ``watch``, a long
``ingest``) starts a :class:`HolderServer`: a Unix socket in a 0700 directory
(only the user can connect) answering read-only SQL from other edgetui
commands (``sql``, ``runs``). A process that can open neither the file nor
the socket gets :class:`DatabaseBusy` naming the holder's PID; the CLI then
offers ``--snapshot`` (a read-only copy of the file).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import socketserver
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import duckdb
import platformdirs

from .schema import migrate


class DatabaseBusy(Exception):
    """The file is locked by another process; ``pid`` is the holder's PID when known."""

    def __init__(self, path: Path, pid: Optional[int], detail: str = ""):
        self.path = path
        self.pid = pid
        who = f"process {pid}" if pid else "another process"
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


def _is_lock_error(err: Exception) -> bool:
    s = str(err)
    return "lock" in s.lower() and ("Conflicting" in s or "Could not set lock" in s)


def open_db(path: Path | str, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and migrate, when writable) the database at ``path``.

    Raises :class:`DatabaseBusy` when another process holds the file.
    """
    path = Path(path).expanduser()
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as e:  # IOException / ConnectionException
        if _is_lock_error(e):
            raise DatabaseBusy(path, _holder_pid(e)) from None
        if "not a valid DuckDB database" in str(e) or "in-memory database in read-only" in str(e):
            raise ValueError(f"{path} is not an edgetui (DuckDB) database") from None
        raise
    if not read_only:
        migrate(conn)
    return conn


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

def socket_path(db_path: Path | str) -> Path:
    """Socket path for a database: ``<runtime dir>/edgetui/<sha1(db path)[:16]>.sock`` (dir mode 0700)."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"edgetui-{os.getuid()}"
    h = hashlib.sha1(str(Path(db_path).expanduser().resolve()).encode()).hexdigest()[:16]
    return base / f"{h}.sock"


_READ_ONLY_START = re.compile(r"^\s*(select|with|from|describe|show|summarize|explain|pragma|values|table)\b", re.I)


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else None
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    return str(v)


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]


def run_query(conn: duckdb.DuckDBPyConnection, sql: str, params: Optional[list] = None) -> QueryResult:
    cur = conn.cursor()
    try:
        rel = cur.execute(sql, params or [])
        if rel.description is None:
            return QueryResult([], [])
        cols = [d[0] for d in rel.description]
        return QueryResult(cols, [tuple(r) for r in rel.fetchall()])
    finally:
        cur.close()


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:  # one JSON request line -> one JSON reply line
        line = self.rfile.readline(10 * 1024 * 1024)
        try:
            req = json.loads(line)
            sql = req["sql"]
            if not _READ_ONLY_START.match(sql):
                raise ValueError(
                    f"the database is held by edgetui process {os.getpid()}; only read-only statements "
                    "(SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN, PRAGMA, VALUES, TABLE) are forwarded to it"
                )
            res = run_query(self.server.conn, sql, req.get("params"))  # type: ignore[attr-defined]
            reply = {"columns": res.columns, "rows": [[_jsonable(v) for v in r] for r in res.rows]}
        except Exception as e:  # reply with the error, never crash the holder
            reply = {"error": " ".join(str(e).split())}
        self.wfile.write(json.dumps(reply).encode() + b"\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class HolderServer:
    """Serve read-only SQL on :func:`socket_path` while this process holds ``db_path``."""

    def __init__(self, conn: duckdb.DuckDBPyConnection, db_path: Path | str):
        self.path = socket_path(db_path)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.path.parent, 0o700)
        if self.path.exists():
            self.path.unlink()
        old = os.umask(0o177)
        try:
            self.server = _Server(str(self.path), _Handler)
        finally:
            os.umask(old)
        self.server.conn = conn  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, name="edgetui-holder", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def ask_holder(db_path: Path | str, sql: str, params: Optional[list] = None, timeout: float = 30.0) -> QueryResult:
    """Run read-only ``sql`` in the process holding ``db_path``.

    Raises ``ConnectionError`` if no holder answers and ``RuntimeError`` with the
    holder's one-line error message if the query failed there.
    """
    p = socket_path(db_path)
    if not p.exists():
        raise ConnectionError("no edgetui process is serving this database")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(str(p))
        except OSError as e:
            raise ConnectionError(str(e)) from None
        s.sendall(json.dumps({"sql": sql, "params": params or []}).encode() + b"\n")
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            buf += chunk
    reply = json.loads(buf)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return QueryResult(reply["columns"], [tuple(r) for r in reply["rows"]])
