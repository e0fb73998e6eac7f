"""Recording runs into the database: run directories, runs roots and bare transcripts.

``ingest_paths`` is what ``edgetui ingest`` calls. Each line-oriented source
is streamed by byte offset through its parser and committed in batches
together with its cursor (see :mod:`edgetui.record.recorder`); after the files,
:func:`edgetui.record.derived_rows.finalize_run` replaces the run's submissions, aligns
times (:mod:`edgetui.record.time_alignment`), computes best-so-far under the task's selection
policy (:mod:`edgetui.replay.selection`) and refreshes the run's aggregates.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from edgetui.garbage_collector import fewer_collections
from edgetui.hosts.signature import image_prefixes
from edgetui.record.changed_runs import changed_runs
from edgetui.record.ingest_report import INGEST_MEMORY_LIMIT, IngestReport
from edgetui.record.recorder import Recorder
from edgetui.record import line_recording
from edgetui.record.line_recording import ProgressFn, one_duckdb_thread
from edgetui.record.prices import load_price_file
from edgetui.record.run_recording import TRANSCRIPT_NAMES, file_size, record_serial, transcripts_under

from edgetui.parsers.sforge_dir import discover, load_tasks, resolve_tasks_dir
from edgetui.record.forget_and_tag import forgotten, unforget_run
from edgetui.samples import sample_set_of
from edgetui.record.ingest_shard import shard_split
from edgetui.record.ingest_shard import start_shard
from edgetui.record.changed_runs import fresh_signatures
from edgetui.store.database import open_db
from edgetui.samples import sample_sets


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
    images: Iterable[Path | str] = (),
) -> IngestReport:
    """Record every run found under ``paths`` (task dirs, run dirs, runs roots, transcript files).

    A run directory whose tree signature (:mod:`edgetui.hosts.signature`: size, ``mtime_ns`` and
    inode of each file it holds and of each submission folder's files) equals the one recorded
    after its last ingest, with the same task settings, is not read again (counted in
    ``report.unchanged`` and listed in ``report.runs``), unless its recorded status is
    ``running`` (its status depends on the clock) or ``full`` (a tree copied with its mtimes
    over recorded files).

    ``images``: the local images of remote runs roots among ``paths`` (each
    :class:`~edgetui.hosts.mirror.Mirror`'s ``local_root``): their runs are signed without inodes
    (:func:`edgetui.hosts.signature.tree_signature`).

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
        _ingest_jobs(
            rec, paths, tasks_dir, host, is_sample, progress, on_total, report, unforget, full, image_prefixes(images)
        )
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
    rec, paths, tasks_dir, host, is_sample, progress, on_total, report, unforget=False, full=False, images=()
) -> None:

    tdir = resolve_tasks_dir(tasks_dir)
    tasks = load_tasks(tdir) if tdir else {}
    jobs: list[tuple[str, Any]] = []  # (kind, a transcript's Path or a run's RunLocation)
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
            found = transcripts_under(p, report.messages)  # a folder of bare transcripts (~/.claude/projects/…)
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
                    again = "samples --unforget" if sample_set_of(obj.task_dir) else "ingest --unforget PATH"
                    report.messages.append(
                        f"{obj.task_dir}: skipped, forgotten with `edgetui forget` (`edgetui {again}` records it again)"
                    )
                    continue
                unforget_run(rec.conn, key)
            kept.append((kind, obj))
        jobs = kept
    jobs, sigs, only_transcript = changed_runs(rec, jobs, tasks, is_sample, report, full, images)
    if on_total:
        total = 0
        for kind, obj in jobs:
            if kind in ("transcript", "folder-transcript"):
                total += file_size(obj)
            else:
                total += sum(
                    file_size(obj.task_dir / n) for n in (*TRANSCRIPT_NAMES, "run_agent.log", "auto_eval_ticks.log")
                )
        on_total(total)
    try:
        with fewer_collections():  # (one scope for every run: see fewer_collections)
            _record_jobs(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report, images=images)
    finally:
        sigs.close()


def _record_jobs(
    rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report, shard=True, images=()
) -> None:
    """Record ``jobs`` in order; with ``shard``, many new run directories at their end are shared
    with a second process, which records its part into a database of its own, copied in at the
    end (:mod:`edgetui.record.ingest_shard`: the same rows)."""
    start = len(jobs)
    if shard:
        start = shard_split(
            rec,
            jobs,
            only_transcript,
            small=lambda loc: file_size(Path(loc.task_dir) / "agent_output.txt") <= line_recording.BATCH_BYTES,
        )
    if start == len(jobs):
        record_serial(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report)
        return

    sh = start_shard(rec, jobs, start, tasks, host, is_sample, images)
    if sh is None:
        record_serial(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report)
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
            record_serial(rec, jobs[:start], sigs, only_transcript, tasks, host, is_sample, mine, report)
            while (got := sh.claims.take_front()) is not None:
                _record_new_runs(rec, jobs[got[0] : got[1]], tasks, host, is_sample, mine, report, images)
        ok = sh.finish(rec, report, progress)
    finally:
        sh.close()
    if not ok:  # (nothing of it copied: what it had claimed is recorded here)
        _record_new_runs(rec, jobs[sh.claims.shard_from() :], tasks, host, is_sample, progress, report, images)


def _record_new_runs(rec, jobs, tasks, host, is_sample, progress, report, images=()) -> None:
    """:func:`record_serial` of run jobs known to be new (their signatures taken as they go)."""

    sigs = fresh_signatures(jobs, tasks, is_sample, images)
    try:
        record_serial(rec, jobs, sigs, set(), tasks, host, is_sample, progress, report)
    finally:
        sigs.close()


def ingest_samples(db_path: Path, quiet: bool = True) -> IngestReport:
    """Record the bundled sample runs (tagged as samples) into ``db_path``."""

    conn = open_db(db_path)
    try:
        rep = IngestReport()
        for runs, tasks in sample_sets():
            rep.merge(ingest_paths(conn, [runs], tasks_dir=tasks, is_sample=True))
        return rep
    finally:
        conn.close()
