"""Recording runs one after another: an SForge run directory (its line sources, whole files and
submissions, then its derived rows) or a bare transcript, in groups of transactions, with the
interruptions (ctrl+c, a full disk) said as what they are (no Textual)."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from functools import partial
from typing import Any, Optional, Sequence

from edgetui.events import Event
from edgetui.parsers.run_folder_files import RunFolderNotes, check_run_file, reading_run_folder
from edgetui.records import RunInfo, SubmissionRecord, TaskInfo, make_run_key
from edgetui.record.changed_runs import changed_runs, signature_salt  # noqa: F401  (signature_salt: live/dormant.py)
from edgetui.record.ingest_report import IngestReport
from edgetui.record.recorder import Recorder
from edgetui.parsers.transcript_identity import transcript_task_id
from edgetui.record.group_writes import (
    GroupWrites,
    fill_model_agent,
    say_no_turns,
)  # (fill_model_agent: also live/run_files.py)

from edgetui.record.derived_rows import (
    FinalizeJob,
    finalize_run,
)
from edgetui.record import line_recording
from edgetui.record.line_recording import ProgressFn, detect_file_format, ingest_lines, transcript_parser_factory
from edgetui.parsers.run_secrets import raw_secrets

from edgetui.hosts.signature import TREE_SOURCE
import errno
from edgetui.parsers.base import open_regular
from edgetui.parsers import sforge_dir as sd
from edgetui.parsers.base import END_OF_FILE_SUB, LineParser
from edgetui.parsers.arrow_batches import data_json  # (the data as every event's is written)
from edgetui.parsers.sforge_submissions import FOLDER_FILES
from edgetui.parsers.base import parse_error
from edgetui.parsers.sforge_common import content_gen

import duckdb


TRANSCRIPT_NAMES = ("agent_output.txt",)
#: sources streamed by byte offset; every other source of a run dir is a whole file
LINE_SOURCES = ("run_agent.log", "auto_eval_ticks.log", "agent_output.txt")


def record_serial(rec, jobs, sigs, only_transcript, tasks, host, is_sample, progress, report) -> None:

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
            if is_interrupt(e):  # ctrl+c inside a DuckDB statement: stop the whole ingest
                raise KeyboardInterrupt from None
            if os.environ.get("EDGETUI_DEBUG"):
                raise
            where = obj if kind in ("transcript", "folder-transcript") else obj.task_dir
            nospace = no_space(e, rec)
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
            if is_interrupt(e):
                raise KeyboardInterrupt from None
            del report.runs[before[0] :], report.messages[before[1] :], report.failed[before[2] :]
            report.events_offered, report.bytes_read = before[3], before[4]
            return False
        report.runs.extend(k for k in keys if k)
        return True

    i = 0
    while i < len(jobs):
        locs: list[Any] = []  # (run locations: any other job ends a group)
        nbytes = 0
        while i + len(locs) < len(jobs) and len(locs) < GROUP_RUNS:
            kind, obj = jobs[i + len(locs)]
            sz = file_size(Path(obj.task_dir) / "agent_output.txt") if kind == "run" else line_recording.BATCH_BYTES + 1
            if sz > line_recording.BATCH_BYTES or (locs and nbytes + sz > GROUP_BYTES):
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
#: transcript bytes recorded in one such transaction, at most (each transcript at most line_recording.BATCH_BYTES): a
#: group's statements (insert, finalize, alignment: ~12) cost the same whatever its size, its events
#: are held in memory until its end. bench_scale's root (608 transcripts, 400 kB on average), two
#: rounds: 6 MiB 14.5 s wall, 26.4 s CPU; 16 MiB 12.6-13.7 s, 23.1-25.0 s CPU, +20 MB resident;
#: 32 MiB no faster, +60 MB
GROUP_BYTES = 16 * 1024 * 1024


def is_interrupt(e: BaseException) -> bool:
    """DuckDB turns a ctrl+c during a statement into ``InterruptException`` ("Query interrupted"),
    and one landing while it scans a registered Arrow batch (Python code under DuckDB) into an
    ``InvalidInputException`` naming it ("…registered as '_edgetui_batch' failed: KeyboardInterrupt:",
    or the Python traceback of a stream's read ending in a ``KeyboardInterrupt`` line)."""

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


def no_space(e: BaseException, rec) -> Optional[str]:
    """A one-line "no space left" message when ``e`` (or its cause) is a full disk, else None.
    DuckDB reports a failed write and then, on rollback, "cannot rollback - no transaction is active"."""

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


def transcripts_under(d: Path, notes: Optional[list[str]] = None) -> list[Path]:
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


def file_size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _binary_head(path: Path) -> bool:
    """Does the file start like binary data (a NUL byte, or invalid UTF-8 in its first 4 KiB)?"""

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
    reported and not recorded; one in no known format (binary, or text no parser recognises) is
    refused (a failed path; in a folder only skipped with a note)."""
    if file_size(path) == 0:
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
        # text in no format edgetui reads (a README, a log of something else): not a run (issue 37,
        # item 8); a known format's malformed lines are still kept as parse_error events
        report.messages.append(
            f"{path}: skipped, not an agent transcript edgetui reads (no known format in its first 64 KiB)"
        )
        if not from_folder:
            report.failed.append(str(path))
        return None
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
    n = ingest_lines(rec, key, path, source, transcript_parser_factory(fmt), report, progress, mp_fmt=fmt)
    report.events_offered += n
    fill_model_agent(rec, key, info)
    finalize_run(rec, key, info, task, [], source, fallback_end=path.stat().st_mtime)
    say_no_turns(rec, key, path, report)
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
    """Record one SForge task directory (one run): every file of docs/sforge-run-folders.md
    §3–§4.
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
    big = bool(fmt) and file_size(transcript) > line_recording.BATCH_BYTES
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

    with rec.transaction():
        task = rec.task_for(sd.task_info(info.task_id, tasks))
        if not rec.upsert_run(key, info):  # a run never recorded: nothing of it to look up or replace
            rec.fresh_run = key
            rec.note_no_cursor(key, TREE_SOURCE)
        off = info.utc_offset_s
        # a new run's log events go in with its file events, one INSERT (each costs ~3 ms here)
        held: Optional[list[Event]] = (
            []
            if (
                rec.fresh_run == key
                and not big
                and sum(file_size(task_dir / n) for n in ("run_agent.log", "auto_eval_ticks.log"))
                <= line_recording.BATCH_BYTES
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
                        rec, key, f, name, partial(_log_parser, cls, off), report, progress
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
    if big and fmt:  # (big: a transcript of a known format)
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

    if held:
        # lazy: pyarrow is not loaded by listing commands; it loads on first use
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
    fill_model_agent(rec, key, info)
    finalize_run(
        rec, key, info, task, subs, "agent_output.txt" if fmt else None, log_end=last_log_t, submissions_kept=keep_files
    )
    if fmt:
        say_no_turns(rec, key, transcript, report)


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


def _log_parser(cls, utc_offset_s: Optional[float], source: str, gen: str, state: Optional[dict]) -> LineParser:
    """A parser of the run's harness logs (``cls``: RunAgentLogParser, AutoEvalTicksParser)."""
    return cls(source, gen, utc_offset_s, state)


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
        rec, key, transcript, "agent_output.txt", transcript_parser_factory(fmt), report, progress, mp_fmt=fmt
    )

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
                rec.conn.execute(
                    "UPDATE events SET summary = ?, data = ?, is_error = FALSE, level = NULL WHERE event_id = ?",
                    [got[0], data_json(got[1]), eid],
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

    said = {e.source for e in events if e.kind == "parse_error"}
    out = []
    for rel, reason in notes.relative(task_dir):
        if rel in said or rel in LINE_SOURCES:
            continue
        said.add(rel)
        ev = parse_error(rel, content_gen(reason.encode()), 0, b"", f"skipped, {reason}")
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
