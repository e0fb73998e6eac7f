"""Recording a line-oriented source (a transcript, run_agent.log, the auto-eval ticks) by byte offset:
its lines parsed (here, or in the parsing process for a large remainder) and committed in batches
with the source's cursor; and which transcript format a file holds (no Textual)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional

from edgetui.error_log import note_swallowed
from edgetui.events import Event
from edgetui.parsers.base import file_generation, iter_lines, open_regular
from edgetui.garbage_collector import fewer_collections
from edgetui.parsers.parsing_process import (
    TAIL_SUB,
    err_line,
    tail_events,
    line_events,
    serve_parse,
)
from edgetui.parsers.helper_process import start_process
from edgetui.record.changed_runs import changed_runs, signature_salt  # noqa: F401  (signature_salt: live/dormant.py)
from edgetui.record.ingest_report import IngestReport, note_read
from edgetui.record.recorder import Recorder

import hashlib
import time
from edgetui.parsers.cursor_check import moved_below
from edgetui.parsers.base import END_OF_FILE_SUB, LineParser
from edgetui.parsers import spare_parsing_process as prewarm
from edgetui.parsers.arrow_batches import scrub_table
from edgetui.parsers.detect import parser_for
from edgetui.parsers.detect import detect_format

from concurrent.futures import ThreadPoolExecutor
import multiprocessing as mp


BATCH_EVENTS = int(os.environ.get("EDGETUI_BATCH_EVENTS", 20000))  # events per committed batch (at most)
BATCH_BYTES = 6 * 1024 * 1024  # source bytes per committed batch (at most): bounds memory per batch
CHILD_BATCH_BYTES = 1024 * 1024  # source bytes per batch sent by the parsing process
ProgressFn = Callable[[int], None]  # called with bytes consumed since the last call


# ---------------------------------------------------------------------------- line sources


def derived_generation(gen: str, st: os.stat_result) -> str:
    """A generation ``<gen>.<6 hex>`` for a file rewritten under the same first line (its events'
    ids apart from the recorded ones of ``gen``)."""

    return f"{gen}.{hashlib.sha1(f'{st.st_ino}:{st.st_size}:{time.time_ns()}'.encode()).hexdigest()[:6]}"


def ingest_lines(
    rec: Recorder,
    run_key: str,
    path: Path,
    source: str,
    make_parser: Callable[[str, str, Optional[dict]], LineParser],
    report: IngestReport,
    progress: Optional[ProgressFn] = None,
    *,
    final: bool = True,
    observed_t: Optional[float] = None,
    mp_fmt: Optional[str] = None,
) -> int:
    """Stream ``path`` from its saved cursor through a LineParser; returns events offered.

    A new file generation (truncated / rewritten file) restarts at byte 0 with
    fresh ids. Parse errors are recorded as events and noted once per file in
    ``report.messages``.

    Live tailing passes ``final=False`` (a half-written last line waits for its
    newline; the cursor stays before it) and ``observed_t`` (epoch UTC of
    arrival): events without a recorded time get ``t = observed_t`` and
    ``t_source = 'observed'``.

    With ``mp_fmt`` (a transcript format name) and more than
    :data:`MP_MIN_BYTES` to read in a finished file, parsing and Arrow
    conversion run in a second process while this one inserts (2 cores);
    the rows are the same either way.
    """
    try:
        st = path.stat()
    except OSError as e:
        report.messages.append(f"{path}: cannot read ({e.strerror})")
        return 0
    gen = file_generation(path)
    if gen is None:
        if st.st_size:
            report.messages.append(f"{path}: no complete line yet; skipped")
        return 0
    cur = rec.get_cursor(run_key, source)
    # never read before: no event of this source is recorded (events commit with their cursor)
    fresh = cur is None and rec.plain_new_sources
    start, state = 0, None

    if (
        cur
        and cur["generation"]
        and cur["generation"].split(".", 1)[0] == gen
        and moved_below(rec.conn, run_key, source, cur, path, st)
    ):
        # the same first line, but the file is not the one the cursor was saved on: read again as a
        # new generation (ids apart from the recorded ones), from its start
        gen = derived_generation(gen, st)
        report.messages.append(
            f"{path}: truncated or replaced since it was recorded; read again from its start as a new generation"
        )
    elif cur and cur["generation"] and cur["generation"].startswith(gen + "."):
        gen = cur["generation"]  # a generation derived by the live tailer (file rewritten with the same first line)
    if cur and cur["generation"] == gen and cur["offset"] is not None and cur["offset"] <= st.st_size:
        if cur["done"] and cur["size"] == st.st_size:
            if progress:
                progress(st.st_size)
            return 0
        start, state = cur["offset"], cur["state"]
    if start:  # the file grew: what was said of its old end (an unterminated line, "ended without a
        # result" after its last line) is said again of the new end if still true

        rec.conn.execute(
            'DELETE FROM events WHERE run_key = ? AND source = ? AND (("offset" >= ? AND sub >= ?) OR sub = ?)',
            [run_key, source, start, TAIL_SUB, END_OF_FILE_SUB],
        )
    if (
        mp_fmt
        and final
        and observed_t is None
        and st.st_size - start >= MP_MIN_BYTES
        and not os.environ.get("EDGETUI_NO_MP")
    ):
        return _ingest_lines_mp(rec, run_key, path, source, gen, start, state, st, mp_fmt, report, progress, fresh)
    parser = make_parser(source, gen, state)
    batch: list[Event] = []
    offered = 0
    n_errors = 0
    first_error: Optional[str] = None
    last_end = start
    batch_start = start
    consumed = start
    if progress and start:
        progress(start)

    def cursor(done: bool) -> dict:
        ro = parser.resume_offset()
        return dict(
            source=source,
            path=str(path),
            generation=gen,
            offset=ro if ro is not None else last_end,
            state=parser.state(),
            size=st.st_size,
            mtime=st.st_mtime,
            inode=st.st_ino,
            done=done,
        )

    # Batches are committed by one writer thread while this thread parses the next batch
    # (DuckDB releases the GIL while inserting); at most one batch waits, in file order, so
    # memory stays bounded and each committed cursor follows exactly the events before it.

    # A file with at most one batch left is committed in this thread (a thread per small file cost
    # more than it overlapped: most files of a run directory are a few kB).
    writer = (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="edgetui-writer")
        if st.st_size - start > BATCH_BYTES
        else None
    )
    pending = None

    def submit(events: list, cur: dict) -> None:
        nonlocal pending
        if pending is not None:
            pending.result()
        if writer is None:
            rec.commit_batch(run_key, events, cur, ignore=not fresh)
            return
        pending = writer.submit(rec.commit_batch, run_key, events, cur, ignore=not fresh)

    try:
        with open_regular(path) as fp, fewer_collections():
            for line in iter_lines(fp, start, final=False):
                evs = line_events(parser, line, source, gen)
                if observed_t is not None:
                    for ev in evs:
                        if ev.t is None:
                            ev.t = observed_t
                            # use_enum_values: the field holds the enum's str value, as validation sets it
                            ev.t_source = "observed"  # type: ignore[assignment]
                for ev in evs:
                    if ev.kind == "parse_error":
                        n_errors += 1
                        if first_error is None:
                            first_error = err_line(path, ev)
                batch.extend(evs)
                last_end = line.end
                if len(batch) >= BATCH_EVENTS or last_end - batch_start >= BATCH_BYTES:
                    submit(batch, cursor(False))
                    offered += len(batch)
                    batch = []
                    batch_start = last_end
                    if progress:
                        progress(last_end - consumed)
                        consumed = last_end
            has_tail = False
            if final:
                tail, has_tail = tail_events(fp, last_end, make_parser, source, gen, parser.state())
                if not has_tail:
                    tail = parser.finish()
            else:
                tail = []
            for ev in tail:
                if ev.kind == "parse_error":
                    n_errors += 1
                    first_error = first_error or err_line(path, ev)
            cur_final = cursor(final and not has_tail)  # the cursor stays before an unterminated line
            batch.extend(tail)
            submit(batch, cur_final)
            if pending is not None:
                pending.result()
            offered += len(batch)
    finally:
        if writer is not None:
            writer.shutdown(wait=True)
    if progress:
        progress(st.st_size - consumed)
    note_read(report, st.st_size - start, n_errors, first_error)
    return offered


@contextmanager
def one_duckdb_thread(conn):
    """DuckDB on one thread inside the block, its setting before restored after (a failed restore is
    ignored: the block's own error, being raised, stands). For the times a second process of this
    ingest has the other core (the transcript's parsing process, the shard): DuckDB's second thread
    only took that process's core."""
    threads = conn.execute("SELECT current_setting('threads')").fetchall()[0][0]
    conn.execute("SET threads = 1")
    try:
        yield
    finally:
        try:
            conn.execute(f"SET threads = {int(threads)}")
        except Exception:  # noqa: BLE001 - restoring a setting on a connection that may have failed
            note_swallowed("restoring a setting on a connection that may have failed")


#: Files with more than this left to read are parsed in a second process (see ingest_lines).
from edgetui.parsers.spare_parsing_process import MP_MIN_BYTES  # noqa: E402 - in the section that uses it


def _ingest_lines_mp(
    rec: Recorder,
    run_key: str,
    path: Path,
    source: str,
    gen: str,
    start: int,
    state,
    st: os.stat_result,
    fmt: str,
    report: IngestReport,
    progress: Optional[ProgressFn],
    fresh: bool = False,
) -> int:

    # lazy: pyarrow is not loaded by listing commands; it loads on first use
    import pyarrow as pa

    # the parsing process sends small batches (1 MB of source: its memory stays ~100 MB and its
    # caches warm); this process commits several at once (BATCH_BYTES), fewer transactions
    job = (str(path), start, fmt, source, gen, state, run_key, BATCH_EVENTS, CHILD_BATCH_BYTES, os.getpid())
    ready = prewarm.take()  # (started by the CLI before its imports: edgetui/parsers/spare_parsing_process.py)
    if ready is not None:
        child, q = ready
        q.send(job)
    else:  # (a pipe, no mp.Queue: edgetui/parsers/helper_process.py)
        q, child_end = mp.Pipe()
        try:
            child = start_process(serve_parse, (child_end, *job), "edgetui-parse")
        except BaseException:
            q.close()
            raise
        finally:
            child_end.close()
    offered, consumed = 0, start
    n_err, first_err = 0, None
    if progress and start:
        progress(start)
    tables: list = []  # received, not committed yet (in file order)
    held_from = prev_end = start
    last_cur: dict = {}

    def commit() -> None:
        nonlocal tables
        if not tables:
            return
        tbl = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
        rec.commit_batch(
            run_key,
            tbl,
            dict(
                source=source,
                path=str(path),
                generation=gen,
                size=st.st_size,
                mtime=st.st_mtime,
                inode=st.st_ino,
                **last_cur,
            ),
            ignore=not fresh,
        )
        tables = []

    # DuckDB on one thread while the parsing process runs: its inserts' second thread only took
    # the parsing process's core (the critical path; bench_ingest: 0.2-0.5 s less for 200 MB, less
    # CPU); its setting again for the finalize after
    ended = False
    try:
        with one_duckdb_thread(rec.conn):
            while True:
                try:
                    msg = q.recv()
                except EOFError:
                    raise RuntimeError(
                        f"{path}: the parsing process ended without a word (exit status {child.exitcode})"
                    ) from None
                if msg[0] == "done":
                    commit()
                    break
                if msg[0] == "error":
                    raise RuntimeError(f"{path}: parsing failed: {msg[1]}")
                _, ipc, n, cur, end, n_err, first_err = msg
                if not tables:
                    held_from = prev_end
                tables.append(scrub_table(pa.ipc.open_stream(ipc).read_all(), rec.scrubber))  # (parsed unscrubbed)
                last_cur, prev_end = cur, end
                if end - held_from >= BATCH_BYTES:
                    commit()  # the events and the cursor after them, in one transaction
                offered += n
                if progress:
                    progress(end - consumed)
                    consumed = end
        ended = True
    finally:
        if not ended:  # (a ctrl+c, a failure: what it parses now is not wanted)
            child.kill()
        child.join(timeout=5)
        if child.is_alive():
            child.kill()
            child.join(timeout=5)
        q.close()
    if progress:
        progress(st.st_size - consumed)
    note_read(report, st.st_size - start, n_err, first_err)
    return offered


def transcript_parser_factory(fmt: str):

    def make(source: str, gen: str, state: Optional[dict]):
        return parser_for(fmt, source, gen, state)

    return make


def detect_file_format(path: Path) -> str:

    try:
        with open_regular(path) as fp:
            head = fp.read(65536)
    except OSError:
        return "unknown"
    return detect_format(head, path.name)
