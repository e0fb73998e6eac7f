"""Recording runs into the database: run directories, runs roots and bare transcripts.

``ingest_paths`` is what ``edgetui ingest`` calls. Each line-oriented source
is streamed by byte offset through its parser and committed in batches
together with its cursor (see :mod:`edgetui.record.recorder`); after the files,
:func:`edgetui.record.derived_rows.finalize_run` replaces the run's submissions, aligns
times (:mod:`edgetui.record.time_alignment`), computes best-so-far under the task's selection
policy (:mod:`edgetui.replay.selection`) and refreshes the run's aggregates.
"""

from __future__ import annotations

import json
import os
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from edgetui.events import Event
from edgetui.parsers.base import file_generation, iter_lines, open_regular, read_regular
from edgetui.parsers.run_folder_files import RunFolderNotes, check_run_file, reading_run_folder, reads_run_folder
from edgetui.records import RunInfo, SubmissionRecord, TaskInfo, make_run_key
from edgetui.parsers.parsing_process import (
    TAIL_SUB,
    _err_line,
    _tail_events,
    fewer_collections,
    line_events,
    serve_parse,
)
from edgetui.parsers.helper_process import start_process
from edgetui.record.changed_runs import _changed_runs, _signature_salt  # noqa: F401  (_signature_salt: live/dormant.py)
from edgetui.record.recorder import Recorder
from edgetui.parsers.run_secrets import run_secrets
from edgetui.record.group_writes import (
    GroupWrites,
    _fill_model_agent,
    _say_no_turns,
)  # (_fill_model_agent: also live/run_files.py)

BATCH_EVENTS = int(os.environ.get("EDGETUI_BATCH_EVENTS", 20000))  # events per committed batch (at most)
BATCH_BYTES = 6 * 1024 * 1024  # source bytes per committed batch (at most): bounds memory per batch
CHILD_BATCH_BYTES = 1024 * 1024  # source bytes per batch sent by the parsing process
#: DuckDB buffer limit while ingesting (keeps peak RSS under ~400 MB whatever the file size)
INGEST_MEMORY_LIMIT = os.environ.get("EDGETUI_INGEST_MEMORY_LIMIT", "112MB")

ProgressFn = Callable[[int], None]  # called with bytes consumed since the last call


@dataclass
class IngestReport:
    """What one ingest did; ``messages`` are one-line notes (bad input, skipped files)."""

    runs: list[str] = field(default_factory=list)
    events_offered: int = 0
    bytes_read: int = 0
    messages: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    new_events: Optional[int] = None  # events the database did not hold before (set by the CLI)
    unchanged: int = 0  # runs recognised as unchanged from their recorded tree signature (not re-read)

    @property
    def recorded_anything(self) -> bool:
        return bool(self.runs)

    def merge(self, other: "IngestReport") -> "IngestReport":
        """This report with ``other``'s added (two ingests reported as one)."""
        self.runs += other.runs
        self.messages += other.messages
        self.failed += other.failed
        self.events_offered += other.events_offered
        self.bytes_read += other.bytes_read
        self.unchanged += other.unchanged
        if other.new_events is not None:
            self.new_events = (self.new_events or 0) + other.new_events
        return self


# ---------------------------------------------------------------------------- line sources


def derived_generation(gen: str, st: os.stat_result) -> str:
    """A generation ``<gen>.<6 hex>`` for a file rewritten under the same first line (its events'
    ids apart from the recorded ones of ``gen``)."""
    import hashlib
    import time

    return f"{gen}.{hashlib.sha1(f'{st.st_ino}:{st.st_size}:{time.time_ns()}'.encode()).hexdigest()[:6]}"


def ingest_lines(
    rec: Recorder,
    run_key: str,
    path: Path,
    source: str,
    make_parser: Callable[[str, str, Optional[dict]], object],
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
    from edgetui.parsers.cursor_check import moved_below

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
        from edgetui.parsers.base import END_OF_FILE_SUB

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
    from concurrent.futures import ThreadPoolExecutor

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
                    for e in evs:
                        if e.t is None:
                            e.t = observed_t
                            e.t_source = "observed"
                for e in evs:
                    if e.kind == "parse_error":
                        n_errors += 1
                        if first_error is None:
                            first_error = _err_line(path, e)
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
                tail, has_tail = _tail_events(fp, last_end, make_parser, source, gen, parser.state())
                if not has_tail:
                    tail = parser.finish()
            else:
                tail = []
            for e in tail:
                if e.kind == "parse_error":
                    n_errors += 1
                    first_error = first_error or _err_line(path, e)
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
    _note_read(report, st.st_size - start, n_errors, first_error)
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
            pass


def _note_read(report: IngestReport, nbytes: int, n_errors: int, first_error: Optional[str]) -> None:
    """Count the bytes read and note a file's bad records once (first one + how many more)."""
    report.bytes_read += nbytes
    if n_errors:
        more = (
            f" (+{n_errors - 1} more bad record(s), kept as parse_error events)"
            if n_errors > 1
            else " (kept as a parse_error event)"
        )
        report.messages.append(f"{first_error}{more}")


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
    import multiprocessing as mp

    import pyarrow as pa

    from edgetui.parsers import spare_parsing_process as prewarm
    from edgetui.parsers.arrow_batches import scrub_table

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
    _note_read(report, st.st_size - start, n_err, first_err)
    return offered


def _transcript_parser_factory(fmt: str):
    from edgetui.parsers.detect import parser_for

    def make(source: str, gen: str, state: Optional[dict]):
        return parser_for(fmt, source, gen, state)

    return make


def detect_file_format(path: Path) -> str:
    from edgetui.parsers.detect import detect_format

    try:
        with open_regular(path) as fp:
            head = fp.read(65536)
    except OSError:
        return "unknown"
    return detect_format(head, path.name)


# ---------------------------------------------------------------------------- prices


def load_price_file(path: Optional[Path] = None) -> dict[str, dict[str, float]]:
    """Price table: ``path``, else ``<user config dir>/edgetui/prices.json``, else the bundled one."""
    import platformdirs

    candidates = [path] if path else [Path(platformdirs.user_config_dir("edgetui")) / "prices.json"]
    candidates.append(Path(__file__).with_name("prices.json"))
    for c in candidates:
        if c and c.exists():
            try:
                data = json.loads(read_regular(c).decode("utf-8"))
                if not isinstance(data, dict) or not all(
                    isinstance(v, dict) and all(isinstance(x, (int, float)) for x in v.values())
                    for k, v in data.items()
                    if not k.startswith("_")
                ):
                    raise ValueError(
                        'expected {"model-pattern%": {"input": USD, "output": USD, '
                        '"cache_read": USD, "cache_write": USD}, ...} (USD per million tokens)'
                    )
            except (ValueError, UnicodeDecodeError) as e:
                raise ValueError(f"price table {c}: {' '.join(str(e).split())[:200]}") from None
            return {k: v for k, v in data.items() if not k.startswith("_")}
    return {}


# ---------------------------------------------------------------------------- aggregates

# (edgetui/record/derived_rows.py; re-exported: the live supervisor and callers import them from here)
from edgetui.record.derived_rows import (  # noqa: E402,F401 - re-exported in this section, where callers have always found them
    ABORT_THRESHOLD_S,
    HARNESS_QUIET_S,
    FinalizeJob,
    finalize_run,
    harness_reason,
    infer_policy,
    unreadable_reason,
)


# ---------------------------------------------------------------------------- orchestration

TRANSCRIPT_NAMES = ("agent_output.txt",)
#: sources streamed by byte offset; every other source of a run dir is a whole file
LINE_SOURCES = ("run_agent.log", "auto_eval_ticks.log", "agent_output.txt")


def ingest_paths(
    conn,
    paths: Iterable[Path],
    *,
    tasks_dir: Optional[Path] = None,
    host: str = "local",
    is_sample: bool = False,
    prices: Optional[Path] = None,
    progress: Optional[ProgressFn] = None,
    on_total: Optional[Callable[[int], None]] = None,
    unforget: bool = False,
    full: bool = False,
) -> IngestReport:
    """Record every run found under ``paths`` (task dirs, run dirs, runs roots, transcript files).

    A run directory whose tree signature (:mod:`edgetui.hosts.signature`: size, ``mtime_ns`` and
    inode of each file it holds and of each submission folder's files) equals the one recorded
    after its last ingest, with the same task settings, is not read again (counted in
    ``report.unchanged`` and listed in ``report.runs``), unless its recorded status is
    ``running`` (its status depends on the clock) or ``full`` (a tree copied with its mtimes
    over recorded files).

    Runs forgotten with ``edgetui forget`` (:mod:`edgetui.record.forget_and_tag`) are skipped with a note,
    unless ``unforget`` (their tombstones are then removed). Returns an :class:`IngestReport`;
    bad input never raises here, it becomes parse-error events and one-line ``messages``.
    """
    rec = Recorder(conn)
    rec.batch_mode = True  # the only writer while it runs: cursors once per transaction, tasks read once…
    rec.load_prices(load_price_file(prices))
    report = IngestReport()
    old_limit = conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    conn.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
    try:
        _ingest_jobs(rec, paths, tasks_dir, host, is_sample, progress, on_total, report, unforget, full)
    finally:
        conn.execute(f"SET memory_limit = '{old_limit}'")
        # the messages go to stderr: a file's name or a reason quoting its bytes, without its secrets
        report.messages[:] = [_scrub_message(rec, m) for m in report.messages]
    return report


def _scrub_message(rec: Recorder, message: str) -> str:
    """An ingest message without secrets: a message ``PATH: reason`` keeps its path (the user's own
    file name; ``…/.judge-admin-secret: skipped`` is not a credential named ``secret``) and only the
    reason, which may quote the file's bytes, is redacted."""
    path, sep, rest = message.partition(": ")
    if sep and os.sep in path and os.path.isabs(path.removeprefix("edgetui: ")):
        return path + sep + (rec.scrub(rest) or rest)
    return rec.scrub(message) or message


def _ingest_jobs(
    rec, paths, tasks_dir, host, is_sample, progress, on_total, report, unforget=False, full=False
) -> None:
    from edgetui.parsers.sforge_dir import discover, load_tasks, resolve_tasks_dir
    from edgetui.record.forget_and_tag import forgotten, unforget_run

    tdir = resolve_tasks_dir(tasks_dir)
    tasks = load_tasks(tdir) if tdir else {}
    jobs: list[tuple[str, object]] = []
    for p in paths:
        p = Path(p).expanduser()
        if not p.exists():
            report.messages.append(f"{p}: no such file or directory")
            report.failed.append(str(p))
            continue
        if p.is_file():
            jobs.append(("transcript", p))
            continue
        locs = discover(p, host=host)
        if not locs:
            found = _transcripts_under(p, report.messages)  # a folder of bare transcripts (~/.claude/projects/…)
            if found:
                jobs.extend(("folder-transcript", f) for f in found)
                continue
            report.messages.append(
                f"{p}: no SForge run directory found (no task dir with run_agent.log, "
                "started_at, final_result.json, evolve_state.json or submissions/) "
                "and no agent transcript (.jsonl / .json / .txt) in it"
            )
            report.failed.append(str(p))
        jobs.extend(("run", loc) for loc in locs)
    gone = forgotten(rec.conn)
    if gone:
        kept = []
        for kind, obj in jobs:
            key = getattr(obj, "run_key", None) if kind == "run" else None
            if key in gone:
                if not unforget:
                    report.messages.append(
                        f"{obj.task_dir}: skipped, forgotten with `edgetui forget` "  # type: ignore
                        "(`edgetui ingest --unforget PATH` records it again)"
                    )
                    continue
                unforget_run(rec.conn, key)
            kept.append((kind, obj))
        jobs = kept
    jobs, sigs, only_transcript = _changed_runs(rec, jobs, tasks, is_sample, report, full)
    if on_total:
        total = 0
        for kind, obj in jobs:
            if kind in ("transcript", "folder-transcript"):
                total += _size(obj)
            else:
                total += sum(
                    _size(obj.task_dir / n) for n in (*TRANSCRIPT_NAMES, "run_agent.log", "auto_eval_ticks.log")
                )
        on_total(total)
    try:
        with fewer_collections():  # (one scope for every run: see fewer_collections)
            _record_jobs(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report)
    finally:
        sigs.close()


def _record_jobs(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report, shard=True) -> None:
    """Record ``jobs`` in order; with ``shard``, many new run directories at their end are shared
    with a second process, which records its part into a database of its own, copied in at the
    end (:mod:`edgetui.record.ingest_shard`: the same rows)."""
    start = len(jobs)
    if shard:
        from edgetui.record.ingest_shard import shard_split

        start = shard_split(
            rec, jobs, only_transcript, small=lambda loc: _size(Path(loc.task_dir) / "agent_output.txt") <= BATCH_BYTES
        )
    if start == len(jobs):
        _record_serial(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report)
        return
    from edgetui.record.ingest_shard import start_shard

    sh = start_shard(rec, jobs, start, tasks, host, is_sample)
    if sh is None:
        _record_serial(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report)
        return
    for _, loc in jobs[start:]:  # (their signatures are taken chunk by chunk, by whichever records them)
        got = sigs.pop(loc.run_key, None)
        if got is not None and not isinstance(got, tuple):
            got.cancel()
    ok = False
    try:
        mine = progress
        if progress:

            def mine(n: int) -> None:  # (the shard's bytes said with this process's)
                progress(n + sh.poll_progress())

        # DuckDB on one thread in each process while both record (the shard's too:
        # ingest_shard.shard_main). bench_scale's root with its transcripts, 3 rounds alternating:
        # 11.8-12.7 s against 13.3-14.8 s wall, 21.8-23.5 s against 24.3-27.2 s CPU. Its setting
        # again for the copy of the shard
        with one_duckdb_thread(rec.conn):
            _record_serial(rec, jobs[:start], sigs, only_transcript, tasks, host, is_sample, mine, report)
            while (got := sh.claims.take_front()) is not None:
                _record_new_runs(rec, jobs[got[0] : got[1]], tasks, host, is_sample, mine, report)
        ok = sh.finish(rec, report, progress)
    finally:
        sh.close()
    if not ok:  # (nothing of it copied: what it had claimed is recorded here)
        _record_new_runs(rec, jobs[sh.claims.shard_from() :], tasks, host, is_sample, progress, report)


def _record_new_runs(rec, jobs, tasks, host, is_sample, progress, report) -> None:
    """:func:`_record_serial` of run jobs known to be new (their signatures taken as they go)."""
    from edgetui.record.changed_runs import fresh_signatures

    sigs = fresh_signatures(jobs, tasks, is_sample)
    try:
        _record_serial(rec, jobs, sigs, set(), tasks, host, is_sample, progress, report)
    finally:
        sigs.close()


def _record_serial(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report) -> None:
    import duckdb

    def record_run(loc, plain: bool = True, defer: Optional[GroupWrites] = None) -> Optional[str]:
        got = sigs.take(loc.run_key)  # (before the run is read: see edgetui.record.changed_runs.Signatures)
        rec.plain_new_sources = plain
        try:
            key = ingest_run(
                rec,
                loc,
                tasks,
                report,
                is_sample=is_sample,
                progress=progress,
                files_unchanged=loc.run_key in only_transcript,
                defer=defer,
            )
        finally:
            rec.plain_new_sources = True
        if key and got is not None:  # taken before the run was read: a change meanwhile is seen next time
            from edgetui.hosts.signature import TREE_SOURCE

            sig, entry = got
            cur = sig.cursor(str(loc.task_dir))
            cur["state"] = {"transcript": entry}
            rec.set_cursor(key, TREE_SOURCE, **cur)
        return key

    def one(kind: str, obj) -> None:
        try:
            if kind in ("transcript", "folder-transcript"):
                key = ingest_transcript(
                    rec,
                    obj,
                    report,
                    host=host,
                    is_sample=is_sample,
                    progress=progress,
                    from_folder=kind == "folder-transcript",
                )
            else:
                try:
                    key = record_run(obj)
                except duckdb.ConstraintException:  # a plain INSERT met a recorded event: redo with OR IGNORE
                    key = record_run(obj, plain=False)
            if key:
                report.runs.append(key)
        except Exception as e:  # keep going with the other runs; one line per failure
            if _is_interrupt(e):  # ctrl+c inside a DuckDB statement: stop the whole ingest
                raise KeyboardInterrupt from None
            if os.environ.get("EDGETUI_DEBUG"):
                raise
            where = obj if kind in ("transcript", "folder-transcript") else obj.task_dir
            nospace = _no_space(e, rec)
            if nospace:  # nothing more can be written: say so and stop
                report.messages.append(f"{where}: could not record: {nospace}")
                report.failed.append(str(where))
                raise OSError(nospace) from None
            report.messages.append(f"{where}: could not record: {' '.join(str(e).split())}")
            report.failed.append(str(where))

    def group(locs: list) -> bool:
        """Record several runs in one transaction; False (nothing kept, the report as before) when one
        of them failed: they are then recorded one by one, each failure said for its own run."""
        before = (len(report.runs), len(report.messages), len(report.failed), report.events_offered, report.bytes_read)
        try:
            with rec.transaction():
                writes = GroupWrites()
                keys = [record_run(loc, defer=writes) for loc in locs]
                writes.write(rec)
        except Exception as e:  # noqa: BLE001 - the group's transaction failed: its runs again one by one (ctrl+c re-raised)
            if _is_interrupt(e):
                raise KeyboardInterrupt from None
            del report.runs[before[0] :], report.messages[before[1] :], report.failed[before[2] :]
            report.events_offered, report.bytes_read = before[3], before[4]
            return False
        report.runs.extend(k for k in keys if k)
        return True

    i = 0
    while i < len(jobs):
        locs, nbytes = [], 0
        while i + len(locs) < len(jobs) and len(locs) < GROUP_RUNS:
            kind, obj = jobs[i + len(locs)]
            sz = _size(Path(obj.task_dir) / "agent_output.txt") if kind == "run" else BATCH_BYTES + 1
            if sz > BATCH_BYTES or (locs and nbytes + sz > GROUP_BYTES):
                break
            locs.append(obj)
            nbytes += sz
        if len(locs) >= 2 and group(locs):
            i += len(locs)
            continue
        for obj in locs:
            one("run", obj)
        i += len(locs)
        if not locs:
            one(*jobs[i])
            i += 1


#: runs with small transcripts recorded in one transaction (a commit syncs the WAL: ~3-12 ms here)
GROUP_RUNS = 32
#: transcript bytes recorded in one such transaction, at most (each transcript at most BATCH_BYTES): a
#: group's statements (insert, finalize, alignment: ~12) cost the same whatever its size, its events
#: are held in memory until its end. bench_scale's root (608 transcripts, 400 kB on average), two
#: rounds: 6 MiB 14.5 s wall, 26.4 s CPU; 16 MiB 12.6-13.7 s, 23.1-25.0 s CPU, +20 MB resident;
#: 32 MiB no faster, +60 MB
GROUP_BYTES = 16 * 1024 * 1024


def _is_interrupt(e: BaseException) -> bool:
    """DuckDB turns a ctrl+c during a statement into ``InterruptException`` ("Query interrupted"),
    and one landing while it scans a registered Arrow batch (Python code under DuckDB) into an
    ``InvalidInputException`` naming it ("…registered as '_edgetui_batch' failed: KeyboardInterrupt:",
    or the Python traceback of a stream's read ending in a ``KeyboardInterrupt`` line)."""
    import duckdb

    x: Optional[BaseException] = e
    for _ in range(6):  # the failed ROLLBACK after an interrupted statement hides it as its context
        if x is None:
            return False
        if isinstance(x, (duckdb.InterruptException, KeyboardInterrupt)) or "Query interrupted" in str(x):
            return True
        if isinstance(x, duckdb.Error) and re.search(r"failed: KeyboardInterrupt|^KeyboardInterrupt$", str(x), re.M):
            return True
        x = x.__cause__ or x.__context__
    return False


def _no_space(e: BaseException, rec) -> Optional[str]:
    """A one-line "no space left" message when ``e`` (or its cause) is a full disk, else None.
    DuckDB reports a failed write and then, on rollback, "cannot rollback - no transaction is active"."""
    import errno

    chain: list[BaseException] = []
    x: Optional[BaseException] = e
    while x is not None and len(chain) < 5:
        chain.append(x)
        x = x.__cause__ or x.__context__
    text = " ".join(str(c) for c in chain)
    full = (
        any(isinstance(c, OSError) and c.errno == errno.ENOSPC for c in chain)
        or "No space left on device" in text
        or "cannot rollback - no transaction is active" in text
    )
    if not full:
        return None
    try:
        path = rec.conn.execute(
            "SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchall()[0][0]
    except Exception:  # noqa: BLE001 - the message is the point
        path = "the database's file system"
    try:
        st = os.statvfs(os.path.dirname(path) or ".")
        free = st.f_bavail * st.f_frsize
        if free > 64 << 20 and "No space left" not in text:
            return None  # a real rollback error, not a full disk
    except OSError:
        pass
    return f"no space left on the device of {path}: free some space and run the ingest again (it resumes)"


TRANSCRIPT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".txt")


def _transcripts_under(d: Path, notes: Optional[list[str]] = None) -> list[Path]:
    """Agent transcript files under ``d`` (recursive, hidden entries skipped), in path order: files with
    a transcript suffix whose first bytes look like a known format (:func:`detect_file_format`).
    Files with such a suffix that are binary are named in ``notes`` (skipped, never runs)."""
    out = []
    for f in sorted(d.rglob("*")):
        if any(part.startswith(".") for part in f.relative_to(d).parts) or f.suffix.lower() not in TRANSCRIPT_SUFFIXES:
            continue
        try:  # (a FIFO, a link out of the folder or a loop: noted; a directory named *.jsonl: passed over)
            why = check_run_file(f, folder=d)
        except OSError:
            continue
        if why is not None:
            if notes is not None and not f.is_dir():
                notes.append(why)
            continue
        if detect_file_format(f) != "unknown":
            out.append(f)
        elif notes is not None and _binary_head(f):
            notes.append(f"{f}: skipped, not an agent transcript (binary content)")
    return out


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def transcript_task_id(path: Path) -> str:
    """``transcript-<8 hex>``: the identity of a bare transcript's content (the sha1 of its first line,
    i.e. its generation, with its session id when the first records name one). Two different files
    of the same name are two runs; the same file moved or copied is the same run."""
    import hashlib

    from edgetui.parsers.base import file_generation, open_regular

    gen = file_generation(path) or ""
    session = ""
    try:
        with open_regular(path) as f:
            head = f.read(65536)
        import re as _re

        m = _re.search(rb'"(?:session_id|sessionId)"\s*:\s*"([^"]{1,200})"', head)
        session = m.group(1).decode("utf-8", "replace") if m else ""
    except OSError:
        pass
    return "transcript-" + hashlib.sha1(f"{gen}\x1f{session}".encode()).hexdigest()[:8]


def _binary_head(path: Path) -> bool:
    """Does the file start like binary data (a NUL byte, or invalid UTF-8 in its first 4 KiB)?"""
    from edgetui.parsers.base import open_regular

    try:
        with open_regular(path) as f:
            head = f.read(4096)
    except OSError:
        return False
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start < len(head) - 4  # (a multi-byte character cut at the 4 KiB edge is fine)
    return False


def ingest_transcript(
    rec: Recorder,
    path: Path,
    report: IngestReport,
    *,
    host: str = "local",
    is_sample: bool = False,
    progress: Optional[ProgressFn] = None,
    from_folder: bool = False,
) -> Optional[str]:
    """Record a bare transcript file as run ``host/<file stem>/transcript-<content id>``
    (:func:`transcript_task_id`). An empty file is
    reported and not recorded; a binary one (unknown format, binary head) is refused (a failed
    path; in a folder only skipped with a note)."""
    if _size(path) == 0:
        report.messages.append(f"{path}: empty file; nothing recorded")
        return None
    fmt = detect_file_format(path)
    if fmt == "unknown":
        if _binary_head(path):  # a picture, an archive…: not a transcript; never a run of garbage
            report.messages.append(
                f"{path}: skipped, not an agent transcript (binary content: NUL bytes or "
                "invalid UTF-8 in its first 4 KiB)"
            )
            if not from_folder:
                report.failed.append(str(path))
            return None
        report.messages.append(f"{path}: format not recognised; lines kept as parse errors")
        fmt = "claude_stream"  # every non-JSON line becomes a parse_error event with its bytes
    run_id, task_id = path.stem, transcript_task_id(path)
    key = make_run_key(host, run_id, task_id)
    info = RunInfo(
        host=host,
        run_id=run_id,
        task_id=task_id,
        run_dir=str(path.resolve()),
        layout="transcript",
        agent_format=fmt,
        is_sample=is_sample,
    )
    task = TaskInfo(task_id=task_id)
    rec.upsert_run(key, info)
    source = path.name
    n = ingest_lines(rec, key, path, source, _transcript_parser_factory(fmt), report, progress, mp_fmt=fmt)
    report.events_offered += n
    _fill_model_agent(rec, key, info)
    finalize_run(rec, key, info, task, [], source, fallback_end=path.stat().st_mtime)
    _say_no_turns(rec, key, path, report)
    return key


def stopped_at_budget(final: Optional[dict], summary: str, data: dict) -> Optional[tuple[str, dict]]:
    """A transcript's end-of-file ``segment_end`` (a segment without its result record) of an SForge
    run whose ``final_result.json`` says ``timed_out: true``: the harness stopped the agent at the
    run's time budget (the normal end of a 12-hour run), so the cut is explained and the run is not
    flagged ``incomplete``. Returns the new (summary, data), or None when the end stays a cut.
    Used by the offline ingest and the live supervisor alike."""
    if not isinstance(final, dict) or final.get("timed_out") is not True or not data.get("incomplete"):
        return None
    seg = summary.split(" ended", 1)[0] if summary.startswith("segment ") else "the last segment"
    new = {**data, "incomplete": False, "cut_reason": data.get("reason"), "reason": "timed_out"}
    return f"{seg} stopped by the harness at the run's time budget (final_result.json: timed_out)", new


def mark_stopped_at_budget(e: Event, final: Optional[dict]) -> None:
    """:func:`stopped_at_budget` applied to the event ``e`` in place (a ``segment_end`` only): its
    summary and data replaced, no longer an error. Used by the offline ingest and the live
    supervisor alike."""
    if e.kind == "segment_end":
        got = stopped_at_budget(final, e.summary or "", e.data or {})
        if got is not None:
            e.summary, e.data, e.is_error, e.level = got[0], got[1], False, None


@reads_run_folder(lambda task_dir: Path(task_dir).parent)
def raw_secrets(task_dir: Path) -> set[str]:
    """Secret values found in a run's files before redaction (:func:`edgetui.parsers.run_secrets.run_secrets`):
    run_config.json's credential-named values (``api_key``, ``extra_env``'s), and the judge admin
    secret of the log dir. Used to scrub every other text (a key echoed by the agent) before it is
    written."""
    return run_secrets(task_dir)


def ingest_run(
    rec: Recorder,
    loc,
    tasks: dict,
    report: IngestReport,
    *,
    is_sample: bool = False,
    progress: Optional[ProgressFn] = None,
    files_unchanged: bool = False,
    defer: Optional["GroupWrites"] = None,
) -> Optional[str]:
    """Record one SForge task directory (one run): every file of sforge-format.md §2–§5.
    ``files_unchanged``: the caller knows that nothing but the transcript changed since the run was
    recorded (its tree signature, :func:`edgetui.record.changed_runs._only_transcript_changed`): what depends
    on those files only is kept as recorded instead of being re-read and compared (the whole-file
    events of the JSON files and submission folders, the two logs' events, the submission rows);
    the transcript, the alignment and the aggregates are done as always. ``defer``: a run never
    recorded before gets its whole-file events and its finalize held there, written with the
    other runs' of the caller's transaction by :meth:`GroupWrites.write` (which the caller calls
    before that transaction's commit)."""

    task_dir = Path(loc.task_dir)
    with reading_run_folder(task_dir.parent):
        return _ingest_run(rec, loc, tasks, report, task_dir, is_sample, progress, files_unchanged, defer)


def _ingest_run(
    rec: Recorder,
    loc,
    tasks: dict,
    report: IngestReport,
    task_dir: Path,
    is_sample: bool,
    progress: Optional[ProgressFn],
    files_unchanged: bool,
    defer: Optional["GroupWrites"],
) -> Optional[str]:
    from edgetui.parsers import sforge_dir as sd

    for secret in raw_secrets(task_dir):
        rec.add_secret(secret)
    info = sd.read_run_info(loc)
    info.is_sample = is_sample
    key = make_run_key(info.host, info.run_id, info.task_id)
    transcript = task_dir / "agent_output.txt"
    fmt = None
    if _regular_or_note(transcript, report):
        fmt = detect_file_format(transcript)
        if fmt == "unknown":
            fmt = {"codex": "codex_text", "opencode": "opencode"}.get(info.agent or "", "claude_stream")
        info.agent_format = fmt
    # the run's small files in one transaction (one commit instead of one per statement); a transcript
    # with more than a batch left to read is committed batch by batch on its own (memory bounded, resumable)
    big = bool(fmt) and _size(transcript) > BATCH_BYTES
    try:
        _ingest_run_files(
            rec, key, info, loc, tasks, task_dir, transcript, fmt, big, report, progress, files_unchanged, defer
        )
    finally:
        rec.fresh_run = None
    return key


def _ingest_run_files(
    rec: Recorder,
    key: str,
    info: RunInfo,
    loc,
    tasks: dict,
    task_dir: Path,
    transcript: Path,
    fmt: Optional[str],
    big: bool,
    report: IngestReport,
    progress: Optional[ProgressFn],
    files_unchanged: bool = False,
    defer: Optional["GroupWrites"] = None,
) -> None:
    from edgetui.hosts.signature import TREE_SOURCE
    from edgetui.parsers import sforge_dir as sd

    with rec.transaction():
        task = rec.task_for(sd.task_info(info.task_id, tasks))
        if not rec.upsert_run(key, info):  # a run never recorded: nothing of it to look up or replace
            rec.fresh_run = key
            rec.note_no_cursor(key, TREE_SOURCE)
        off = info.utc_offset_s
        # a new run's log events go in with its file events, one INSERT (each costs ~3 ms here)
        held = (
            []
            if (
                rec.fresh_run == key
                and not big
                and sum(_size(task_dir / n) for n in ("run_agent.log", "auto_eval_ticks.log")) <= BATCH_BYTES
            )
            else None
        )
        rec.hold = held
        try:
            for name, cls in (
                ()
                if files_unchanged and rec.fresh_run != key
                else (  # (as recorded: see ingest_run)
                    ("run_agent.log", sd.RunAgentLogParser),
                    ("auto_eval_ticks.log", sd.AutoEvalTicksParser),
                )
            ):
                f = task_dir / name
                if _regular_or_note(f, report):
                    report.events_offered += ingest_lines(
                        rec, key, f, name, lambda src, gen, st, cls=cls: cls(src, gen, off, st), report, progress
                    )
            if fmt and not big and held is not None:  # (its events held with the logs', one INSERT)
                _ingest_run_transcript(rec, key, transcript, fmt, info, report, progress, held)
        finally:
            rec.hold = None
        if fmt and not big and held is None:
            _ingest_run_transcript(rec, key, transcript, fmt, info, report, progress)
        # (a run never recorded has nothing kept: files_unchanged is for recorded runs only)
        keep_files = files_unchanged and rec.fresh_run != key
        if not big:
            _record_run_files(rec, key, info, task, task_dir, fmt, transcript, report, held or (), keep_files, defer)
    if big:
        _ingest_run_transcript(rec, key, transcript, fmt, info, report, progress)
        with rec.transaction():
            _record_run_files(rec, key, info, task, task_dir, fmt, transcript, report, (), keep_files)


def _record_run_files(
    rec: Recorder,
    key: str,
    info: RunInfo,
    task: TaskInfo,
    task_dir: Path,
    fmt: Optional[str],
    transcript: Path,
    report: IngestReport,
    held: Sequence = (),
    keep_files: bool = False,
    defer: Optional["GroupWrites"] = None,
) -> None:
    """A run's whole-file sources (submissions and JSON files), then its aggregates (finalize_run).
    ``held``: the run's log events not inserted yet (``Recorder.hold``: a run never recorded).
    ``keep_files``: those files are as recorded (see :func:`ingest_run`): their events are kept.
    ``defer``: the model lookup, finalize_run and the no-turns note are held there
    (:class:`GroupWrites`), and for a run never recorded its events' insert too (a recorded run's
    events are replaced here: what it had is compared and deleted in place)."""
    from edgetui.parsers import sforge_dir as sd

    if held:
        import pyarrow as pa
        import pyarrow.compute as pc

        ts = [
            pc.max(pc.filter(t.column("t"), pc.equal(t.column("source"), "run_agent.log"))).as_py()
            if isinstance(t, pa.Table)
            else max((e.t for e in t if e.t is not None and e.source == "run_agent.log"), default=None)
            for t, _ in held
        ]
        last_log_t = max((x for x in ts if x is not None), default=None)
    else:
        last_log_t = rec.conn.execute(
            "SELECT max(t) FROM events WHERE run_key = ? AND source = 'run_agent.log'", [key]
        ).fetchall()[0][0]
    subs = sd.read_submissions(task_dir, tests=not keep_files)  # (kept submission rows: their tests too)
    if keep_files:  # (as recorded: only the bad reports are said again, the files' events are kept)
        for s in subs:
            if s.error and s.status == "bad_report":
                report.messages.append(f"{task_dir / s.error}")
    else:
        file_events = whole_file_events(task_dir, subs, info, last_log_t)
        _say_bad_files(report, task_dir, file_events)
        rec.replace_file_events(
            key,
            file_events,
            line_sources=LINE_SOURCES,
            held=held,
            defer_to=defer.tables if defer is not None and rec.fresh_run == key else None,
        )
        report.events_offered += len(file_events)
    if defer is not None:
        defer.add(
            rec,
            key,
            info,
            FinalizeJob(
                key,
                info,
                task,
                subs,
                "agent_output.txt" if fmt else None,
                log_end=last_log_t,
                submissions_kept=keep_files,
                fresh=rec.fresh_run == key,
            ),
            transcript if fmt else None,
            report,
        )
        return
    _fill_model_agent(rec, key, info)
    finalize_run(
        rec, key, info, task, subs, "agent_output.txt" if fmt else None, log_end=last_log_t, submissions_kept=keep_files
    )
    if fmt:
        _say_no_turns(rec, key, transcript, report)


def _say_bad_files(report: IngestReport, task_dir: Path, events: Sequence[Event]) -> None:
    """One message per whole file of a run that gave parse_error events: its full path, what is
    wrong and where (the first error's reason: byte offset), how many more."""
    bad: dict[str, list[Event]] = {}
    for e in events:
        if e.kind == "parse_error":
            bad.setdefault(e.source, []).append(e)
    for source, evs in bad.items():
        reason = str((evs[0].data or {}).get("reason") or evs[0].summary or "unreadable")
        reason = " ".join(reason.removeprefix(f"{source}: ").split())
        more = (
            f" (+{len(evs) - 1} more bad record(s), kept as parse_error events)"
            if len(evs) > 1
            else " (kept as a parse_error event)"
        )
        report.messages.append(f"{os.path.normpath(task_dir / source)}: {reason}{more}")


def _ingest_run_transcript(
    rec: Recorder,
    key: str,
    transcript: Path,
    fmt: str,
    info: RunInfo,
    report: IngestReport,
    progress: Optional[ProgressFn],
    held: Optional[list] = None,
) -> None:
    """The run's transcript, then what its end says (an end-of-file ``segment_end``: kept only once
    the run has a final result, explained by :func:`stopped_at_budget` when it says so). ``held``
    (``Recorder.hold`` of a new run): its events are held there, and changed there before their
    insert (as the live supervisor changes them), instead of by statements after it."""
    report.events_offered += ingest_lines(
        rec, key, transcript, "agent_output.txt", _transcript_parser_factory(fmt), report, progress, mp_fmt=fmt
    )
    from edgetui.parsers.base import END_OF_FILE_SUB

    if held is not None:
        for i, (evs, ignore) in enumerate(held):
            if isinstance(evs, list):
                if info.final is None:
                    evs = [e for e in evs if not (e.sub == END_OF_FILE_SUB and e.source == "agent_output.txt")]
                    held[i] = (evs, ignore)
                    continue
                for e in evs:
                    if e.sub == END_OF_FILE_SUB and e.source == "agent_output.txt":
                        mark_stopped_at_budget(e, info.final)
        return
    if info.final is None:  # the run goes on (or was cut): its transcript is not "incomplete" yet,
        # as the live tailer sees it too (it says so once the run's final_result.json exists)
        rec.conn.execute(
            "DELETE FROM events WHERE run_key = ? AND source = 'agent_output.txt' AND sub = ?", [key, END_OF_FILE_SUB]
        )
    else:
        for eid, summ, data in rec.conn.execute(
            "SELECT event_id, summary, data FROM events WHERE run_key = ? AND source = 'agent_output.txt' "
            "AND sub = ? AND kind = 'segment_end'",
            [key, END_OF_FILE_SUB],
        ).fetchall():
            got = stopped_at_budget(info.final, summ or "", json.loads(data) if data else {})
            if got is not None:
                from edgetui.parsers.arrow_batches import _dumps  # (the data as every event's is written)

                rec.conn.execute(
                    "UPDATE events SET summary = ?, data = ?, is_error = FALSE, level = NULL WHERE event_id = ?",
                    [got[0], _dumps(got[1]), eid],
                )


def _regular_or_note(f: Path, report) -> bool:
    """Is ``f`` a regular file to read (:func:`edgetui.parsers.run_folder_files.check_run_file`: inside the
    run folder being read)? A FIFO, socket or device, a link out of the run folder or a link loop
    is skipped with a one-line note (opening a FIFO would block the ingest)."""
    try:
        why = check_run_file(f)
    except OSError:
        return False
    if why is None:
        return True
    report.messages.append(why)
    return False


def whole_file_events(
    task_dir: Path,
    subs: list[SubmissionRecord],
    info: RunInfo,
    last_log_t: Optional[float],
    sub_cache: Optional[dict] = None,
) -> list[Event]:
    """Events of a run's whole-file sources (run_config.json, started_at, submission folders,
    evolve_state.json, histories, final_result.json), mtime-timed ones placed inside the run.
    Shared by the offline ingest and the live supervisor (which keeps ``sub_cache``: see
    :func:`edgetui.parsers.sforge_dir.submission_events`)."""
    from edgetui.parsers import sforge_dir as sd

    off = info.utc_offset_s
    events: list[Event] = []
    with reading_run_folder(Path(task_dir).parent) as notes:
        events += sd.run_config_events(task_dir)
        events += sd.started_at_events(task_dir)
        events += sd.submission_events(task_dir, subs, off, cache=sub_cache)
        events += sd.evolve_state_events(task_dir)
        events += sd.history_events(task_dir)
        events += sd.final_result_events(task_dir, info.started_at, last_log_t)
        _check_folder_files(task_dir, subs)
        events += skipped_file_events(task_dir, notes, events)
    _place_mtime_events(events, info.started_at, info.ended_at or last_log_t)
    return events


def _check_folder_files(task_dir: Path, subs: list[SubmissionRecord]) -> None:
    """The submission folders' files that are not read here (``test_output.txt``, ``analysis.md``,
    ``submission.tar.gz``…) and the log dir's
    ``.judge-admin-secret`` checked all the same, so that one that could not be read is noted (a
    FIFO, a link out of its folder)."""
    from edgetui.parsers.sforge_submissions import FOLDER_FILES

    def check(p: Path) -> None:
        try:
            check_run_file(p)
        except OSError:  # (missing: normal)
            pass

    # (analysis.md and the archive are read later, by the why view and reports: noted at ingest too)
    names = set(FOLDER_FILES) | {"analysis.md", "submission.tar.gz"}
    for s in subs:
        entry = Path(task_dir) / "submissions" / s.round
        try:
            if entry.is_symlink():
                raise NotADirectoryError  # (checked file by file: the folder rule)
            with os.scandir(entry) as it:  # (one listing: a regular file that is no link is fine as it is)
                odd = [e.path for e in it if e.name in names and not e.is_file(follow_symlinks=False)]
        except OSError:
            odd = [str(entry / n) for n in sorted(names)]
        for p in odd:
            check(Path(p))
    for up in list(Path(task_dir).parents)[:5]:  # (the judge's admin secret read by raw_secrets)
        try:
            if not stat.S_ISREG(os.lstat(up / ".judge-admin-secret").st_mode):
                check_run_file(up / ".judge-admin-secret", folder=up)
        except OSError:
            pass


def skipped_file_events(task_dir: Path, notes: RunFolderNotes, events: Sequence[Event]) -> list[Event]:
    """A parse_error event for each file of the run folder skipped while it was read (a FIFO, a
    link out of the run folder or a loop, over its size bound: ``notes``), unless ``events``
    already say it; source relative to ``task_dir``. The line files (logs, transcript) are noted
    by their readers (:func:`_regular_or_note`)."""
    from edgetui.parsers.base import parse_error
    from edgetui.parsers.sforge_common import _content_gen

    said = {e.source for e in events if e.kind == "parse_error"}
    out = []
    for rel, reason in notes.relative(task_dir):
        if rel in said or rel in LINE_SOURCES:
            continue
        said.add(rel)
        ev = parse_error(rel, _content_gen(reason.encode()), 0, b"", f"skipped, {reason}")
        ev.data["skipped"] = True
        out.append(ev)
    return out


def _place_mtime_events(events: list[Event], start: Optional[float], end: Optional[float]) -> None:
    """Whole-file events timed by file mtime (t_source 'interpolated') keep it only when it falls
    inside the run (±1 h); a copied or checked-out run dir has meaningless mtimes, so
    run_config.json is then placed at the run start and the end-of-run files at the run end. A run
    without ``started_at`` (a harness that crashed before the agent) is bounded by its log's end."""
    if start is None:
        start = end
    if start is None:
        return
    hi = (end if end is not None else start) + 3600
    for e in events:
        if e.t_source != "interpolated" or e.t is None or start - 3600 <= e.t <= hi:
            continue
        e.t = start if e.kind == "run_config" else (end if end is not None else start)


def ingest_samples(db_path: Path, quiet: bool = True) -> IngestReport:
    """Record the bundled sample runs (tagged as samples) into ``db_path``."""
    from edgetui.store.database import open_db
    from edgetui.samples import sample_sets

    conn = open_db(db_path)
    try:
        rep = IngestReport()
        for runs, tasks in sample_sets():
            rep.merge(ingest_paths(conn, [runs], tasks_dir=tasks, is_sample=True))
        return rep
    finally:
        conn.close()
