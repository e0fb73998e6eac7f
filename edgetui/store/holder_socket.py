"""The holder socket: read-only SQL for other edgetui processes while one holds the file.

DuckDB allows one read-write process per file. The holder (the app, ``watch``)
serves a Unix socket only the user can open; ``edgetui sql`` / ``edgetui runs`` in
other terminals send one JSON request line and get one JSON reply line.

Guarantees (each tested with real processes and sockets):

* **Read-only, the database only.** A request runs only if *every* statement (DuckDB's
  own ``extract_statements``) is a SELECT (which includes DESCRIBE, SHOW, SUMMARIZE,
  FROM, VALUES, TABLE, WITH … SELECT) or an EXPLAIN without ANALYZE of one, and its
  parse tree reads nothing but the database's tables (no file, device, directory
  listing, network or extension; no function that changes the holder):
  :mod:`edgetui.store.read_only_sql`. PRAGMA, SET, RESET, CALL, COPY, ATTACH, INSTALL,
  LOAD, EXPORT and every write are refused in one line. Accepted requests run in a
  transaction that is rolled back.
* **Bounded.** At most :data:`MAX_PENDING` connections waiting for their request
  (the oldest is dropped for a new one), :data:`REQUEST_TIMEOUT_S` seconds to send
  it, :data:`MAX_REQUEST_BYTES` per request, :data:`WORKERS` queries at once (more
  wait in a queue of :data:`MAX_QUEUED`, then "busy"), :data:`QUERY_TIMEOUT_S`
  seconds per query (interrupted), :data:`MAX_REPLY_BYTES` per reply. Requests are
  read and replies written by one selector thread, without blocking, so stalled
  clients cost a descriptor and their reply's bytes each, never a thread: a client
  that takes none of its reply for :data:`SEND_STALL_S` seconds is dropped, and at
  most :data:`MAX_SENDING` replies (:data:`MAX_SENDING_BYTES` bytes) wait for their
  readers (beyond, the one stalled longest is dropped).
* **Private.** The socket lives in a directory of the user's (mode 0700, owned by
  them, not a symlink: checked with ``lstat``): ``$XDG_RUNTIME_DIR/edgetui-<uid>``,
  else ``$TMPDIR/edgetui-<uid>``; when that one belongs to someone else or is
  open to others, a ``.edgetui-<uid>`` directory beside the database is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import secrets
import selectors
import socket
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, cast

import duckdb

from edgetui.error_log import note_swallowed
from edgetui.store.holder_cursors import CURSOR_IDLE_S, MAX_CURSORS, MAX_FETCH_ROWS, MAX_SESSIONS, HeldCursor
from edgetui.store.query_cells import from_wire, to_wire

MAX_PENDING = 16
REQUEST_TIMEOUT_S = 5.0
MAX_REQUEST_BYTES = 1 << 20
WORKERS = 2
MAX_QUEUED = 16
QUERY_TIMEOUT_S = 30.0
MAX_REPLY_BYTES = 64 << 20
#: a client that takes no byte of its reply for this long is dropped
SEND_STALL_S = 10.0
#: replies waiting for their readers at once, and their bytes (as much as the 2 workers could hold
#: before, each blocked on one reply); beyond, the reply whose reader took nothing for longest is dropped
MAX_SENDING = 64
MAX_SENDING_BYTES = 128 << 20
#: the start of the reply to a request refused because :data:`MAX_QUEUED` wait already
BUSY = "the holder is busy with other queries"
#: sun_path holds 108 bytes with the terminating NUL
MAX_SOCKET_PATH = 107


@dataclass
class Session:
    """A connection that asked for a cursor: it stays open between its requests
    (:mod:`edgetui.store.holder_cursors`)."""

    cursors: dict[int, HeldCursor] = field(default_factory=dict)
    buf: bytearray = field(default_factory=bytearray)
    #: a request of it is with a worker (its cursors are not touched by the selector thread)
    busy: bool = False
    #: the connection dropped while busy: the worker closes the cursors
    dropped: bool = False
    last: float = field(default_factory=time.monotonic)
    #: cursors closed for being idle: their ids, to say so when asked for
    expired: set[int] = field(default_factory=set)


class HolderEnded(ConnectionError):
    """The holder accepted the request, then ended before answering it."""


class SocketDirError(Exception):
    """No private directory for the holder socket could be found or made."""


class HolderUnreachable(ConnectionError):
    """No answer from the process holding a file (see the subclasses for why)."""


class NoSocketDir(HolderUnreachable):
    """No private socket directory exists, so no holder's socket can be reached."""


class NotServing(HolderUnreachable):
    """No socket for the file: its holder serves none (only the app and ``watch`` do)."""


class NotAnswering(HolderUnreachable):
    """The holder's socket refused the connection or no reply came in time."""


def _private_dir(d: Path, create: bool) -> bool:
    """Is ``d`` a directory of this user, mode 0700, not a symlink? (made so when ``create``)."""
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:  # made meanwhile by another process: checked below
            pass
        except OSError:  # cannot be made: no socket here
            return False
        try:
            st = os.lstat(d)
        except OSError:  # removed meanwhile: not ours
            return False
    except OSError:  # cannot be asked: not known to be ours
        return False
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        return False
    if st.st_mode & 0o077:
        try:  # ours but open to others: close it
            os.chmod(d, 0o700)
            return stat.S_IMODE(os.lstat(d).st_mode) & 0o077 == 0
        except OSError:  # cannot be closed to others: not used
            return False
    return True


def socket_dirs(db_path: Path | str) -> list[Path]:
    """Candidate socket directories, in order (see the module docstring)."""
    uid = os.getuid()
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or tempfile.gettempdir()
    db = Path(db_path).expanduser().resolve()
    return [Path(base) / f"edgetui-{uid}", db.parent / f".edgetui-{uid}"]


def socket_path(db_path: Path | str, create: bool = False) -> Path:
    """The holder socket of a database: ``<private dir>/<sha1(db path)[:16]>.sock``.

    Raises :class:`SocketDirError` (one line) when no candidate directory is private
    or the path would exceed the 107-byte limit of a Unix socket path.
    """
    h = hashlib.sha1(str(Path(db_path).expanduser().resolve()).encode()).hexdigest()[:16]
    refused = []
    for d in socket_dirs(db_path):
        p = d / f"{h}.sock"
        if len(os.fsencode(p)) > MAX_SOCKET_PATH:
            refused.append(f"{d} (path over {MAX_SOCKET_PATH} bytes)")
            continue
        if _private_dir(d, create):
            return p
        refused.append(f"{d} (not a private directory of this user)")
    raise SocketDirError("no private directory for the holder socket: " + "; ".join(refused))


# ---------------------------------------------------------------------------- queries

#: the check of a request (edgetui.store.read_only_sql), here where callers have always found it
from edgetui.store.read_only_sql import check_read_only  # noqa: E402 - in the section that uses it, where callers have always found it


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[tuple]


def run_query(
    conn: duckdb.DuckDBPyConnection, sql: str, params: Optional[list] = None, timeout_s: Optional[float] = None
) -> QueryResult:
    """Run ``sql`` on a fresh cursor of ``conn`` (this process's own queries); with ``timeout_s``,
    interrupted after that many seconds (``RuntimeError``, one line)."""
    cur = conn.cursor()
    fired: list[bool] = []

    def stop() -> None:
        fired.append(True)
        cur.interrupt()

    timer = threading.Timer(timeout_s, stop) if timeout_s else None
    try:
        if timer is not None:
            timer.daemon = True
            timer.start()
        rel = cur.execute(sql, params or [])
        if rel.description is None:
            return QueryResult([], [])
        cols = [d[0] for d in rel.description]
        return QueryResult(cols, [tuple(r) for r in rel.fetchall()])
    except duckdb.InterruptException:
        if not fired:  # a ctrl+c: the caller says so
            raise
    finally:
        if timer is not None:
            timer.cancel()
        cur.close()
    # (raised here, outside the handler: not an interrupt by its context, which the CLI would take for a ctrl+c)
    raise RuntimeError(f"query stopped after {timeout_s:g} s (--timeout)")


def _stopped(timeout_s: float) -> str:
    """Why a query of the holder was interrupted, in one line."""
    if timeout_s < QUERY_TIMEOUT_S:
        return f"query stopped after {timeout_s:g} s (--timeout)"
    return f"query stopped after {timeout_s:.0f} s (the holder's limit per query); narrow it or use --snapshot"


def answer(
    conn: duckdb.DuckDBPyConnection,
    sql: str,
    params: Optional[list | dict] = None,
    timeout_s: float = QUERY_TIMEOUT_S,
    encode: Optional[Callable[[Optional[duckdb.DuckDBPyRelation], int], dict[str, Any]]] = None,
) -> dict[str, Any]:
    """The reply to one request: read-only check (:func:`check_read_only`, with this database's
    catalog for qualified table names), then the statements in a transaction that is rolled back,
    interrupted after ``timeout_s``. Python objects are not scanned as tables. Never raises.

    ``params``: a list (``?``) or a dict (``$name``) for the last statement. ``encode``: the reply
    made of the last statement's relation (and :data:`MAX_REPLY_BYTES`) instead of JSON rows: Arrow
    for a reader through the holder (:func:`edgetui.store.arrow_wire.encode_rows`)."""
    cur = conn.cursor()
    try:
        check_read_only(sql, cur)
    except ValueError as e:
        cur.close()
        return {"error": str(e)}
    except Exception as e:  # noqa: BLE001 - the catalog could not be read: say so, never crash the holder
        cur.close()
        return {"error": " ".join(str(e).split()) or type(e).__name__}
    timer = threading.Timer(timeout_s, cur.interrupt)
    timer.daemon = True
    started = time.monotonic()
    try:
        cur.execute("SET python_enable_replacements = false")  # this cursor only: no Python variable is a table
        cur.execute("BEGIN TRANSACTION")
        timer.start()
        stmts = duckdb.extract_statements(sql)
        rel = None
        for i, st in enumerate(stmts):
            if i < len(stmts) - 1:
                cur.execute(st)
            elif encode is not None:  # a relation streams its batches without a copy of the rows
                return encode(cur.sql(st.query, params=params or None), MAX_REPLY_BYTES)
            else:
                rel = cur.execute(st, params or [])
        if rel is None or rel.description is None:
            return {"columns": [], "rows": []}
        cols = [d[0] for d in rel.description]
        rows = []
        size = 0
        while True:
            chunk = rel.fetchmany(2048)
            if not chunk:
                break
            for r in chunk:
                row = [to_wire(v) for v in r]  # (BLOBs, DECIMALs: edgetui.store.query_cells)
                size += len(json.dumps(row, default=str))
                if size > MAX_REPLY_BYTES:
                    return {
                        "error": f"reply over {MAX_REPLY_BYTES >> 20} MiB: narrow the query (LIMIT, fewer "
                        "columns) or use --snapshot"
                    }
                rows.append(row)
        return {"columns": cols, "rows": rows}
    except duckdb.InterruptException:
        return {"error": _stopped(timeout_s)}
    except Exception as e:  # noqa: BLE001 - reply with the error, never crash the holder
        if time.monotonic() - started >= timeout_s:
            return {"error": _stopped(timeout_s)}
        return {"error": " ".join(str(e).split()) or type(e).__name__}
    finally:
        timer.cancel()
        try:
            cur.execute("ROLLBACK")
        except duckdb.Error:
            note_swallowed("ending a query's transaction that may have ended already")
        cur.close()


# ---------------------------------------------------------------------------- server


class HolderServer:
    """Serve read-only SQL on :func:`socket_path` while this process holds ``db_path``.

    Besides read-only SQL it carries out typed requests (``{"op": "forget" | "unforget" | "tag" |
    "untag", …}``: :mod:`edgetui.record.forget_and_tag`) for processes that cannot open the file themselves.
    Raises :class:`SocketDirError` when no private socket directory exists.
    """

    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection,
        db_path: Path | str,
        on_request: Callable[[dict], dict],
        encode_arrow: Optional[Callable[[Optional[duckdb.DuckDBPyRelation], int], dict[str, Any]]] = None,
    ):
        self.conn = conn
        #: answers the requests for Arrow rows (``"format": "arrow"``: a browser tab reading through this
        #: holder): :func:`edgetui.store.arrow_wire.encode_rows`, passed by the holders that load pyarrow
        self.encode_arrow = encode_arrow
        #: carries out a typed request (:func:`edgetui.record.forget_and_tag.holder_server` gives one that applies it on ``conn``);
        #: the app passes one that also tells its supervisor (a forgotten run stops being watched)
        self.on_request = on_request
        self.path = socket_path(db_path, create=True)
        try:
            os.lstat(self.path)
            os.unlink(self.path)  # a socket left by a holder that was killed
        except FileNotFoundError:  # no socket left by an earlier holder
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(str(self.path))
        finally:
            os.umask(old)
        self.sock.listen(128)
        self.sock.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.sock, selectors.EVENT_READ, None)
        self._pending: dict[socket.socket, tuple[float, bytearray]] = {}
        #: replies being written: socket -> [bytes left, time of the last progress]
        self._sending: dict[socket.socket, list] = {}
        #: replies the workers could not write at once, for the selector thread
        self._outbox: "queue.SimpleQueue[tuple[socket.socket, memoryview]]" = queue.SimpleQueue()
        self._jobs: "queue.Queue[Optional[tuple[socket.socket, bytes]]]" = queue.Queue(MAX_QUEUED)
        self._stop = threading.Event()
        #: connections holding cursors, the running cursor queries by their cancel token, and the
        #: last cursor id given; under _lock (the workers and the selector thread both touch them)
        self._sessions: dict[socket.socket, Session] = {}
        self._running: dict[str, HeldCursor] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self.thread = threading.Thread(target=self._serve, name="edgetui-holder", daemon=True)
        self.workers = [
            threading.Thread(target=self._work, name=f"edgetui-holder-{i}", daemon=True) for i in range(WORKERS)
        ]
        self.thread.start()
        for w in self.workers:
            w.start()

    # -- the selector thread: accepts, reads request lines, writes replies
    def _drop(self, s: socket.socket) -> None:
        self._pending.pop(s, None)
        self._sending.pop(s, None)
        try:
            self._sel.unregister(s)
        except (KeyError, ValueError):  # not registered (yet, or any more)
            pass
        self._close(s)

    def _close(self, s: socket.socket) -> None:
        """Close a client's socket and its cursors (those of a busy session: by its worker)."""
        with self._lock:
            sess = self._sessions.get(s)
            if sess is not None and sess.busy:  # its worker ends it when its reply is ready
                sess.dropped = True
                sess = None
            elif sess is not None:
                del self._sessions[s]
        if sess is not None:
            for c in sess.cursors.values():
                c.close()
        s.close()

    def _reply_done(self, s: socket.socket) -> None:
        """A reply is written whole: a session waits for its next request, any other connection ends.
        (The selector thread's.)"""
        self._sending.pop(s, None)
        with self._lock:
            sess = self._sessions.get(s)
            if sess is not None:
                sess.last = time.monotonic()
                dropped = sess.dropped
        if sess is None or dropped:
            self._drop(s)
            return
        try:
            self._sel.unregister(s)
        except (KeyError, ValueError):  # not registered for writing: the worker wrote it whole
            pass
        self._sel.register(s, selectors.EVENT_READ, "conn")
        if b"\n" in sess.buf:  # a request that came with the last one
            self._read(s, b"")

    def _reply_now(self, s: socket.socket, reply: dict[str, Any]) -> None:
        self._pending.pop(s, None)
        try:
            self._sel.unregister(s)
        except (KeyError, ValueError):  # not registered (yet, or any more)
            pass
        self._start_sending(s, memoryview(json.dumps(reply).encode() + b"\n"))

    def _start_sending(self, s: socket.socket, data: memoryview) -> None:
        """Write what the socket takes now; the rest when it is writable (never blocks)."""
        try:
            n = s.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:  # the client went away
            s.close()
            return
        if n == len(data):
            self._close(s)
            return
        self._sending[s] = [data[n:], time.monotonic()]
        self._sel.register(s, selectors.EVENT_WRITE, "send")
        self._bound_sending()

    def _bound_sending(self) -> None:
        """At most MAX_SENDING replies / MAX_SENDING_BYTES bytes wait: drop the most stalled."""
        while len(self._sending) > MAX_SENDING or sum(len(v[0]) for v in self._sending.values()) > MAX_SENDING_BYTES:
            self._drop(min(self._sending, key=lambda k: self._sending[k][1]))

    def _write(self, s: socket.socket) -> None:
        entry = self._sending.get(s)
        if entry is None:
            return
        try:
            n = s.send(entry[0])
        except (BlockingIOError, InterruptedError):  # the socket is full: the selector calls again
            return
        except OSError:
            self._drop(s)
            return
        entry[0] = entry[0][n:]
        entry[1] = time.monotonic()
        if not entry[0]:
            self._reply_done(s)

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._sel.select(timeout=0.5):
                if key.data == "wake":
                    try:
                        self._wake_r.recv(4096)
                    except OSError:  # drained already: the wake-up is done
                        pass
                    continue
                if key.fileobj is self.sock:
                    self._accept()
                    continue
                client = cast(socket.socket, key.fileobj)  # (every other key is a client's socket)
                if key.data == "send":
                    self._write(client)
                    continue
                self._read(client)
            while True:  # replies the workers handed over
                try:
                    s, data = self._outbox.get_nowait()
                except queue.Empty:  # no reply waiting
                    break
                if not data:  # a session's reply, written whole by its worker
                    self._reply_done(s)
                    continue
                self._sending[s] = [data, time.monotonic()]
                self._sel.register(s, selectors.EVENT_WRITE, "send")
                self._bound_sending()
            now = time.monotonic()
            self._expire_cursors(now)
            for s, (t0, _) in list(self._pending.items()):
                if now - t0 > REQUEST_TIMEOUT_S:
                    self._reply_now(s, {"error": f"no request within {REQUEST_TIMEOUT_S:.0f} s"})
            for s, (_, t_last) in list(self._sending.items()):
                if now - t_last > SEND_STALL_S:  # it reads nothing: its reply is given up
                    self._drop(s)

    def _accept(self) -> None:
        while True:
            try:
                s, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):  # no connection waiting: the selector calls again
                return
            except OSError:  # out of descriptors: drop the oldest waiting connection
                if self._pending:
                    self._drop(next(iter(self._pending)))
                return
            s.setblocking(False)
            if len(self._pending) >= MAX_PENDING:
                self._drop(next(iter(self._pending)))  # the oldest: a stalled one, most likely
            self._pending[s] = (time.monotonic(), bytearray())
            self._sel.register(s, selectors.EVENT_READ, "conn")

    def _expire_cursors(self, now: float) -> None:
        """Close the cursors unused for CURSOR_IDLE_S; drop a waiting session left with none."""
        idle: list[socket.socket] = []
        with self._lock:
            for s, sess in self._sessions.items():
                if sess.busy:
                    continue
                for cid, c in list(sess.cursors.items()):
                    if now - c.last_used > CURSOR_IDLE_S:
                        del sess.cursors[cid]
                        sess.expired.add(cid)
                        c.close()
                if not sess.cursors and now - sess.last > CURSOR_IDLE_S:
                    idle.append(s)
        for s in idle:
            self._drop(s)

    def _read(self, s: socket.socket, chunk: Optional[bytes] = None) -> None:
        if chunk is None:
            try:
                chunk = s.recv(65536)
            except (BlockingIOError, InterruptedError):  # nothing to read yet: the selector calls again
                return
            except OSError:
                chunk = b""
            if not chunk:
                self._drop(s)
                return
        sess = self._sessions.get(s)
        buf = sess.buf if sess is not None else self._pending[s][1]
        buf += chunk
        if b"\n" not in buf:
            if len(buf) > MAX_REQUEST_BYTES:
                self._reply_now(s, {"error": f"request over {MAX_REQUEST_BYTES >> 20} MiB"})
            return
        cut = buf.index(b"\n")
        line = bytes(buf[:cut])
        del buf[: cut + 1]
        self._pending.pop(s, None)
        self._sel.unregister(s)
        if len(line) > MAX_REQUEST_BYTES:
            self._reply_now(s, {"error": f"request over {MAX_REQUEST_BYTES >> 20} MiB"})
            return
        if sess is None and b'"cancel"' in line:  # answered here: it must not wait behind the query it stops
            cancelled = self._cancel(line)
            if cancelled is not None:
                self._reply_now(s, cancelled)
                return
        if sess is not None:
            with self._lock:
                sess.busy = True
                sess.last = time.monotonic()
        try:
            self._jobs.put_nowait((s, line))
        except queue.Full:
            if sess is not None:
                with self._lock:
                    sess.busy = False
            self._reply_now(s, {"error": BUSY + "; try again"})

    def _cancel(self, line: bytes) -> Optional[dict]:
        """``{"cursor": "cancel", "token": T}``: interrupt the cursor query opened with ``T``
        (``None`` when the line is no such request)."""
        try:
            req = json.loads(line)
        except ValueError:  # not JSON: the worker says so
            return None
        if not isinstance(req, dict) or req.get("cursor") != "cancel":
            return None
        with self._lock:
            c = self._running.get(str(req.get("token")))
        if c is None:
            return {"ok": False}
        c.cancelled = True
        c.cur.interrupt()
        return {"ok": True}

    # -- the workers: run queries; a reply the socket does not take at once goes to the selector thread
    def _work(self) -> None:
        try:  # the read-only rule's parser made before the first request (~0.1 s once per process)
            check_read_only("SELECT 1")
        except Exception:  # noqa: BLE001 - made again, and its error said, at the first request
            note_swallowed("setting up the read-only rule ahead of the first request")
        while True:
            job = self._jobs.get()
            if job is None:
                return
            s, line = job
            try:
                req = json.loads(line)
                if "cursor" in req:  # a cursor's request: the connection stays open (holder_cursors)
                    reply = self._cursor_request(s, req)
                elif s in self._sessions:
                    reply = {"error": "a connection with cursors sends only cursor requests"}
                elif "op" in req:  # a typed write (forget, tag…): carried out by the holder itself
                    reply = self.on_request(req)
                else:
                    limit = QUERY_TIMEOUT_S
                    if req.get("timeout") is not None:
                        limit = min(limit, float(req["timeout"]))
                    arrow = req.get("format") == "arrow"
                    if arrow and self.encode_arrow is None:
                        reply = {"error": "this edgetui process answers no Arrow rows"}
                    else:
                        reply = answer(
                            self.conn,
                            req["sql"],
                            req.get("params"),
                            limit,
                            encode=self.encode_arrow if arrow else None,
                        )
            except (ValueError, KeyError, TypeError) as e:
                reply = {"error": f"bad request: {' '.join(str(e).split())}"}
            except Exception as e:  # noqa: BLE001 - never lose a worker
                reply = {"error": " ".join(str(e).split()) or type(e).__name__}
            self._hand_over(s, memoryview(json.dumps(reply).encode() + b"\n"))

    def _cursor_request(self, s: socket.socket, req: dict) -> dict[str, Any]:
        """Open, fetch from or close a cursor of this connection (:mod:`edgetui.store.holder_cursors`)."""
        what = req["cursor"]
        with self._lock:
            sess = self._sessions.get(s)
            if sess is None:
                if what != "open":
                    return {"error": "no cursor is open on this connection"}
                if len(self._sessions) >= MAX_SESSIONS:
                    return {"error": f"{MAX_SESSIONS} connections hold cursors already; try again later"}
                sess = self._sessions[s] = Session(busy=True)
        if what == "open":
            if len(sess.cursors) >= MAX_CURSORS:
                return {"error": f"at most {MAX_CURSORS} cursors per connection: close one first"}
            limit = QUERY_TIMEOUT_S
            if req.get("timeout") is not None:
                limit = min(limit, float(req["timeout"]))
            token = str(req.get("token") or "")
            c = HeldCursor(self.conn, token)
            if token:
                with self._lock:
                    self._running[token] = c
            try:
                c.open(req["sql"], req.get("params"), limit)
            except ValueError as e:
                c.close()
                return {"error": str(e)}
            except duckdb.InterruptException:
                c.close()
                return {"error": "cancelled" if c.cancelled else _stopped(limit)}
            except Exception as e:  # noqa: BLE001 - reply with the error, never crash the holder
                c.close()
                return {"error": " ".join(str(e).split()) or type(e).__name__}
            finally:
                with self._lock:
                    self._running.pop(token, None)
            with self._lock:
                self._next_id += 1
                cid = self._next_id
                sess.cursors[cid] = c
            return {"id": cid, "columns": c.columns, "types": c.types}
        cid = int(req["id"])
        held = sess.cursors.get(cid)
        if held is None:
            if cid in sess.expired:
                return {"error": f"cursor {cid} was closed after {CURSOR_IDLE_S:.0f} s unused; run the query again"}
            return {"error": f"no cursor {cid} on this connection"}
        c = held
        if what == "fetch":
            n = max(1, min(int(req.get("n") or 1), MAX_FETCH_ROWS))
            try:
                rows, done = c.fetch(n, MAX_REPLY_BYTES)
            except ValueError as e:
                return {"error": str(e)}
            except duckdb.InterruptException:
                return {"error": f"fetch stopped after {c.timeout_s:g} s"}
            except Exception as e:  # noqa: BLE001 - reply with the error, never crash the holder
                return {"error": " ".join(str(e).split()) or type(e).__name__}
            return {"rows": rows, "done": done}
        if what == "close":
            with self._lock:
                sess.cursors.pop(cid, None)
            c.close()
            return {"ok": True}
        return {"error": f"unknown cursor request {what!r}: open, fetch, close or cancel"}

    def _close_from_worker(self, s: socket.socket) -> None:
        """A worker's connection failed: the socket and its session's cursors end."""
        with self._lock:
            sess = self._sessions.pop(s, None)
        if sess is not None:
            for c in sess.cursors.values():
                c.close()
        s.close()

    def _hand_over(self, s: socket.socket, data: memoryview) -> None:
        with self._lock:
            sess = self._sessions.get(s)
            if sess is not None and sess.dropped:  # gone while its request ran: its cursors end here
                self._sessions.pop(s, None)
                for c in sess.cursors.values():
                    c.close()
                s.close()
                return
            if sess is not None:  # its request is answered: the selector thread may end it now
                sess.busy = False
                sess.last = time.monotonic()
        try:
            n = s.send(data)  # non-blocking (set at accept)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self._close_from_worker(s)
            return
        if self._stop.is_set():
            self._close_from_worker(s)
            return
        if n == len(data) and sess is None:
            s.close()
            return
        self._outbox.put((s, data[n:]))  # (empty for a session written whole: the selector thread re-arms it)
        try:
            self._wake_w.send(b"x")
        except OSError:  # (full: a wake-up is already pending)
            pass

    def close(self) -> None:
        self._stop.set()
        try:
            self._wake_w.send(b"x")
        except OSError:  # full: a wake-up is pending already
            pass
        self.thread.join(2.0)
        for _ in self.workers:
            try:
                self._jobs.put(None, timeout=1.0)
            except queue.Full:
                note_swallowed("a worker busy past the wait is not told to end (a daemon: it ends with the process)")
        with self._lock:
            running = list(self._running.values())
        for c in running:  # a cursor's query under way: stopped, so its worker takes its end now
            c.cur.interrupt()
        for w in self.workers:
            # each worker out of DuckDB before the connection is closed and the process may end: a
            # daemon thread still inside a query when the interpreter finalizes is unwound through
            # DuckDB's C++ frames and aborts the process ("FATAL: exception not rethrown", status -6,
            # seen on ctrl+c of `edgetui serve` while a tab's read ran)
            w.join(5.0)
        for s in list(self._pending) + list(self._sending) + list(self._sessions):
            self._drop(s)
        while True:
            try:
                self._outbox.get_nowait()[0].close()
            except queue.Empty:  # no reply left to close
                break
        for x in (self.sock, self._wake_r, self._wake_w):
            x.close()
        self._sel.close()
        try:
            self.path.unlink()
        except FileNotFoundError:  # removed already
            pass


def connect_holder(db_path: Path | str, timeout: float) -> socket.socket:
    """A connection to the socket of the process holding ``db_path`` (``timeout`` set on it).
    Raises :class:`HolderUnreachable` (one line) when none answers."""
    try:
        p = socket_path(db_path)
    except SocketDirError as e:
        raise NoSocketDir(str(e)) from None
    if not p.exists():
        raise NotServing("no edgetui process is serving this database")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    deadline = time.monotonic() + min(timeout, 10.0)
    try:
        while True:
            try:
                s.connect(str(p))
                return s
            except (BlockingIOError, InterruptedError):  # the holder's backlog is full: it is draining it
                if time.monotonic() > deadline:
                    raise NotAnswering("the edgetui process holding the database accepts no connection") from None
                time.sleep(0.01)
            except FileNotFoundError:
                raise NotServing("no edgetui process is serving this database") from None
            except socket.timeout:
                raise NotAnswering(f"{p} accepted no connection within {timeout:.0f} s") from None
            except ConnectionRefusedError:
                raise NotAnswering(f"{p} refuses connections") from None
            except OSError as e:
                raise NotAnswering(f"{p}: {e.strerror or e}") from None
    except BaseException:
        s.close()
        raise


def ask_holder_raw(db_path: Path | str, req: dict, timeout: float) -> dict:
    """One request line to the holder of ``db_path`` and its reply (a dict with ``error`` when the
    holder refused or failed). Raises ``ConnectionError`` when no holder answers, :class:`HolderEnded`
    when it ended before answering."""
    buf = b""
    with connect_holder(db_path, timeout) as s:
        try:
            s.sendall(json.dumps(req).encode() + b"\n")
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
        except socket.timeout:
            raise NotAnswering(f"no reply within {timeout:.0f} s") from None
        except OSError:  # the holder went mid-reply: buf is cut, said below as HolderEnded
            pass
    try:
        return json.loads(buf)
    except ValueError:
        raise HolderEnded(
            "the edgetui process holding the database ended before answering; run the command "
            "again (with the file free it is opened directly; --snapshot reads a copy)"
        ) from None


def ask_holder_request(db_path: Path | str, req: dict, timeout: float = 60.0) -> dict:
    """Send one typed request to the holder; its whole reply (``{"ok": …}`` or ``{"error": …}``).
    Raises ``ConnectionError`` when no holder answers."""
    return ask_holder_raw(db_path, req, timeout)


def ask_holder_op(db_path: Path | str, req: dict, timeout: float = 60.0) -> Any:
    """Send one typed request (:data:`edgetui.record.forget_and_tag.OPS`) to the holder; returns its ``ok`` value.
    Raises ``ConnectionError`` when no holder answers and ``RuntimeError`` with its one-line error."""
    reply = ask_holder_raw(db_path, req, timeout)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return reply.get("ok")


def ask_holder(
    db_path: Path | str,
    sql: str,
    params: Optional[list] = None,
    timeout: float = 60.0,
    query_timeout: Optional[float] = None,
) -> QueryResult:
    """Run read-only ``sql`` in the process holding ``db_path``.

    Raises ``ConnectionError`` if no holder answers (also when the holder ended
    before answering, said in one line) and ``RuntimeError`` with the holder's
    one-line error message if the query was refused or failed there.
    """
    req: dict[str, Any] = {"sql": sql, "params": params or []}
    if query_timeout is not None:
        req["timeout"] = query_timeout  # (the holder keeps its own limit when it is shorter)
    reply = ask_holder_raw(db_path, req, timeout)
    if "error" in reply:
        raise RuntimeError(reply["error"])
    return QueryResult(reply["columns"], [tuple(from_wire(v) for v in r) for r in reply["rows"]])


# ---------------------------------------------------------------------------- cursors: the client


class HolderCursor:
    """A query's rows from the process holding ``db_path``, a page at a time over one connection
    to its socket (:meth:`open`, :meth:`fetch` until ``done``, :meth:`close`); :meth:`cancel` (from
    another thread) stops the query while it runs. Raises ``ConnectionError`` when no holder answers
    and ``RuntimeError`` with the holder's one-line error."""

    def __init__(self, db_path: Any, timeout: float = 60.0) -> None:
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
