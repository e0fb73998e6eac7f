"""A first ingest of many new run directories on two cores: a second process records the last
part of them into a database file of its own (a *shard*), which is then copied into the main
database in one transaction (:func:`start_shard`, :meth:`Shard.finish`). Core: no Textual imports.

Why a shard and not parse-ahead: a run's ingest reads as much as it writes (its cursors, whether it
is recorded, its held rows), so the whole per-run code path runs unchanged in the second process,
on a database holding nothing else, and the rows are those of the one-process ingest by
construction (checked by the tests, every table compared). What makes this exact:

* only **SForge run directories never recorded** in the main database go to the shard (no row of
  them to read or replace), each once, all of them after every job this process keeps (the
  report's lines stay in job order: this process's, then the shard's);
* SForge run directories share nothing across runs (the record keys of :mod:`edgetui.store.repeated_records` are
  for bare transcripts only, which stay here), except the **secrets** a run's files name: every
  secret of a run is used to scrub the runs after it, so the shard first learns those of every job
  before its own (:func:`edgetui.record.ingest.raw_secrets`), and this process learns the shard's after;
* the task rows and the price table are the same in both (one tasks dict, one price table);
  a task row the shard wrote replaces the main one (the last written wins) unless it is only
  assumed and the main database has one (:meth:`edgetui.record.recorder.Recorder.task_for`'s rule).

Anything going wrong in the shard (it fails, it dies, the copy cannot be made) leaves the main
database as if it never ran: its runs are then recorded here, one process, as before.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from edgetui.parsers.helper_process import FileLock, start_process

from edgetui.parsers.helper_process import ignore_ctrl_c
from edgetui.parsers.parsing_process import die_with_parent

import multiprocessing as mp

from edgetui.record.changed_runs import fresh_signatures
from edgetui.store.database import open_db
from edgetui.parsers.run_secrets import raw_secrets
from edgetui.record.ingest_report import INGEST_MEMORY_LIMIT, IngestReport
from edgetui.record.run_recording import record_serial
from edgetui.garbage_collector import fewer_collections
from edgetui.record.recorder import Recorder

if TYPE_CHECKING:
    from edgetui.record.ingest_report import IngestReport
    from edgetui.record.recorder import Recorder

#: the fewest new runs worth a second process (its start costs ~0.3-0.7 s of imports)
SHARD_MIN_RUNS = 48
#: runs claimed at a time by either process (their runs' costs differ 50-fold: a 12-hour run's 248
#: submissions against a run that never submitted, so the work is shared by claiming, not split)
CHUNK_RUNS = 32
_ATTACH = "edgetui_shard"


def shard_split(rec: "Recorder", jobs: list, only_transcript: set, *, small: Callable[[Any], bool]) -> int:
    """Index into ``jobs`` where the part the two processes share starts (``len(jobs)``: no
    shard): the longest tail of jobs that are SForge run directories, not recorded, distinct, with
    a transcript small enough to be recorded in one transaction (``small(loc)``), if it holds at
    least :data:`SHARD_MIN_RUNS` runs."""
    if os.environ.get("EDGETUI_NO_MP") or (os.cpu_count() or 1) < 2:
        return len(jobs)
    known = {r[0] for r in rec.conn.execute("SELECT run_key FROM runs").fetchall()}
    start = len(jobs)
    tail: set[str] = set()
    while start > 0:
        kind, obj = jobs[start - 1]
        key = getattr(obj, "run_key", None)
        if kind != "run" or key is None or key in known or key in only_transcript or key in tail or not small(obj):
            break
        tail.add(key)
        start -= 1
    # a run key the kept part records too (the same run given twice) would meet itself in the copy
    if len(jobs) - start < SHARD_MIN_RUNS or any(getattr(o, "run_key", None) in tail for _, o in jobs[:start]):
        return len(jobs)
    return start


class Claims:
    """The shared part ``[front, back)`` of the jobs not claimed yet: this process claims chunks
    from the front, the shard from the back, so each part stays in job order and the two meet
    wherever the work falls."""

    def __init__(self, ctx, start: int, end: int, lock_path: str) -> None:
        self.lock = FileLock(lock_path)  # (no ctx.Lock: a named semaphore, edgetui/parsers/helper_process.py)
        self.front = ctx.Value("q", start, lock=False)
        self.back = ctx.Value("q", end, lock=False)

    def take_front(self, n: int = CHUNK_RUNS) -> Optional[tuple[int, int]]:
        with self.lock:
            i = self.front.value
            j = min(i + self.file_size(n), self.back.value)
            if i >= j:
                return None
            self.front.value = j
            return i, j

    def take_back(self, n: int = CHUNK_RUNS) -> Optional[tuple[int, int]]:
        with self.lock:
            j = self.back.value
            i = max(j - self.file_size(n), self.front.value)
            if i >= j:
                return None
            self.back.value = i
            return i, j

    def file_size(self, n: int) -> int:
        """Smaller chunks as the part left shrinks (the two processes end closer together)."""
        return max(1, min(n, (self.back.value - self.front.value) // 6))

    def shard_from(self) -> int:
        """Where the shard's claims start (they run to the end)."""
        with self.lock:
            return self.back.value


class Shard:
    """A running shard: :meth:`finish` waits for it and copies its rows in, or returns False;
    :meth:`close` (the caller's, whatever happened) stops it and removes its file."""

    def __init__(self, proc, conn_end, path: Path, claims: Claims, progress_value) -> None:
        self.proc, self.conn_end, self.path, self.claims = proc, conn_end, path, claims
        self.progress_value = progress_value
        self._seen_progress = 0

    def poll_progress(self) -> int:
        """Bytes the shard has read since the last call."""
        now = self.progress_value.value
        delta, self._seen_progress = now - self._seen_progress, now
        return delta

    def finish(self, rec: "Recorder", report: "IngestReport", progress=None) -> bool:
        """Wait for the shard, copy its rows into ``rec``'s database (one transaction) and add its
        reports to ``report`` in job order. False when it failed (nothing copied: the caller
        records the jobs from :meth:`Claims.shard_from` on)."""

        def say_progress() -> None:
            d = self.poll_progress()
            if progress and d:
                progress(d)

        got = None
        while got is None:
            if self.conn_end.poll(0.2):
                try:
                    got = self.conn_end.recv()
                except EOFError:  # died without a word
                    break
            elif not self.proc.is_alive() and not self.conn_end.poll(0):
                break
            say_progress()
        say_progress()
        if not got or got[0] != "done":
            return False
        _, parts, secrets = got
        self.proc.join(timeout=10)
        if self.proc.exitcode not in (0, None):
            return False
        copy_shard(rec, self.path)
        for s in secrets:
            rec.add_secret(s)
        for _, part in sorted(parts, key=lambda p: p[0]):
            report.merge(part)
        return True

    def close(self) -> None:
        """Stop the shard if it still runs and remove its file."""
        try:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(timeout=5)
        finally:
            self.conn_end.close()
            for p in (self.path, Path(str(self.path) + ".wal"), Path(str(self.path) + ".claims")):
                try:
                    p.unlink()
                except OSError:  # gone already, or never written
                    pass


def _db_file(rec: "Recorder") -> Optional[Path]:
    rows = rec.conn.execute("SELECT file FROM pragma_database_list WHERE name = current_database()").fetchall()
    return Path(rows[0][0]) if rows and rows[0][0] else None


def _remove_stale(main: Path) -> None:
    """Remove the shard files an ingest killed before its end left beside ``main`` (their process,
    named in the file name, is gone)."""
    for p in main.parent.glob(f".{main.name}.shard-*"):
        try:
            pid = int(p.name[len(main.name) + 8 :].split("-", 1)[0])
            os.kill(pid, 0)
            continue  # (still running: an ingest of this database in another process)
        except ProcessLookupError:  # its process is gone: the shard is stale, removed below
            pass
        except (ValueError, PermissionError, OSError):  # not a shard's name, or another user's process: kept
            continue
        try:
            p.unlink()
        except OSError:  # gone meanwhile, or not ours to remove: kept
            pass


def start_shard(
    rec: "Recorder", jobs: list, start: int, tasks: dict, host: str, is_sample: bool, images: tuple = ()
) -> Optional[Shard]:
    """Start the shard, sharing ``jobs[start:]`` with this process (its own database file beside
    the main one), or None (an in-memory database, or the process cannot be started: the caller
    records them itself)."""

    main = _db_file(rec)
    if main is None:
        return None
    _remove_stale(main)
    fd, name = tempfile.mkstemp(prefix=f".{main.name}.shard-{os.getpid()}-", suffix=".duckdb", dir=main.parent)
    os.close(fd)
    path = Path(name)
    path.unlink()  # (DuckDB creates it)
    prices = rec.conn.execute("SELECT * FROM prices").fetchall()
    ctx = mp.get_context("spawn")
    claims = Claims(ctx, start, len(jobs), str(path) + ".claims")
    parent_end, child_end = ctx.Pipe(duplex=False)
    value = ctx.Value("q", 0, lock=False)
    try:
        proc = start_process(
            shard_main,
            (
                child_end,
                str(path),
                jobs,
                claims,
                tasks,
                host,
                is_sample,
                prices,
                sorted(rec.secrets),
                os.getpid(),
                value,
                images,
            ),
            "edgetui-shard",
        )
    except OSError:
        parent_end.close()
        os.unlink(claims.lock.path)
        return None
    finally:
        child_end.close()
    return Shard(proc, parent_end, path, claims, value)


def shard_main(
    conn_end,
    path: str,
    jobs: list,
    claims: Claims,
    tasks: dict,
    host: str,
    is_sample: bool,
    prices: list,
    secrets: list,
    parent_pid: int,
    value,
    images: tuple = (),
) -> None:
    """The shard's process: record the chunks it claims from the back of ``jobs`` into the fresh
    database at ``path``, each with the secrets of every job before it (module docstring), then
    send ``("done", [(chunk start, report), …], secrets)`` (or ``("error", text)``)."""

    ignore_ctrl_c()
    die_with_parent(parent_pid)
    try:
        conn = open_db(path)
        conn.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
        conn.execute("SET threads = 1")  # (two processes on two cores: see ingest._record_jobs)
        rec = Recorder(conn)
        rec.batch_mode = True
        with rec.transaction():
            conn.execute("DELETE FROM prices")
            if prices:
                conn.executemany(f"INSERT INTO prices VALUES ({', '.join('?' for _ in prices[0])})", prices)
        base = set(rec.secrets) | set(secrets)
        found: set[str] = set()
        before: list[set[str]] = []  # secrets of jobs[k], for k < len(before)

        def progress(n: int) -> None:
            value.value += n

        parts = []
        with fewer_collections():  # (one scope for every run: see fewer_collections)
            while (got := claims.take_back()) is not None:
                i, j = got
                while len(before) < i:
                    kind, obj = jobs[len(before)]
                    before.append(raw_secrets(Path(obj.task_dir)) if kind == "run" else set())
                rec.set_secrets(base.union(*before[:i]))  # (what this process knows after jobs[:i])
                report = IngestReport()
                chunk = jobs[i:j]
                sigs = fresh_signatures(chunk, tasks, is_sample, images)  # (the parent's images)
                try:
                    record_serial(rec, chunk, sigs, set(), tasks, host, is_sample, progress, report)
                finally:
                    sigs.close()
                found |= rec.secrets
                parts.append((i, report))
        conn.close()
        conn_end.send(("done", parts, sorted(found - base)))
    except BaseException as e:  # noqa: BLE001 - said to the parent, which records these runs itself
        try:
            conn_end.send(("error", " ".join(str(e).split()) or type(e).__name__))
        except (OSError, ValueError):  # the parent is gone (the pipe closed): nobody to tell
            pass
    finally:
        conn_end.close()


def copy_shard(rec: "Recorder", path: Path) -> None:
    """Copy every row of the shard database at ``path`` into ``rec``'s (one transaction): the rows
    of each table with a ``run_key`` column (they are the shard's runs only), the task rows by
    :meth:`Recorder.task_for`'s rule (module docstring). The price and meta tables are the main database's already."""
    conn = rec.conn
    conn.execute(f"ATTACH ? AS {_ATTACH} (READ_ONLY)", [str(path)])
    try:
        cols: dict[str, list[str]] = {}
        for table, col in conn.execute(
            # (tables only: the ready-made views have run_key columns too, and are the database's own)
            "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = ? AND schema_name = 'main' "
            "AND table_name IN (SELECT table_name FROM duckdb_tables() WHERE database_name = ? AND schema_name = 'main') "
            "ORDER BY table_name, column_index",
            [_ATTACH, _ATTACH],
        ).fetchall():
            cols.setdefault(table, []).append(col)
        with rec.transaction():
            rec.write_held_runs()
            for table, names in cols.items():
                if "run_key" not in names:
                    continue
                lst = ", ".join(f'"{c}"' for c in names)
                conn.execute(f'INSERT INTO "{table}" ({lst}) SELECT {lst} FROM {_ATTACH}.main."{table}"')
            tl = ", ".join(f'"{c}"' for c in cols.get("tasks", []))
            if tl:
                # the shard's row is the last one written, unless it is only assumed and a row is here
                conn.execute(
                    f"DELETE FROM tasks WHERE task_id IN (SELECT task_id FROM {_ATTACH}.main.tasks WHERE NOT assumed)"
                )
                conn.execute(
                    f"INSERT INTO tasks ({tl}) SELECT {tl} FROM {_ATTACH}.main.tasks s "
                    "WHERE NOT EXISTS (SELECT 1 FROM tasks m WHERE m.task_id = s.task_id)"
                )
        rec._tasks.clear()
        rec._known_runs = None
    finally:
        conn.execute(f"DETACH {_ATTACH}")
