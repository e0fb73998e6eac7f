"""The run files of the watched runs: format detection, tail sources, whole files, ``submissions/``
folders and their ``run_instance.log``, and the refresh and finalize of a run's file events (a part
of :class:`edgetui.live.supervisor.Supervisor`; core: no Textual).
"""

from __future__ import annotations

import os
from stat import S_ISDIR as stat_isdir
import time
from pathlib import Path
from typing import Callable, Optional

from edgetui.error_log import note_swallowed
from edgetui.events import one_line
from edgetui.store.sql_in_list import in_list
from edgetui.record.derived_rows import FinalizeJob, finalize_runs
from edgetui.parsers.run_secrets import raw_secrets
from edgetui.record.group_writes import fill_model_agent
from edgetui.record.line_recording import detect_file_format
from edgetui.record.run_recording import LINE_SOURCES, mark_stopped_at_budget, whole_file_events
from edgetui.parsers import sforge_dir as sd
from edgetui.parsers.runlog import AutoEvalTicksParser, RunAgentLogParser, local_to_epoch
from edgetui.redact import redact_text
from edgetui.parsers.run_folder_files import open_run_file
from edgetui.live.containers import ContainerJoin
from edgetui.live.run_rows import load_rows
from edgetui.live.tail import TailSource, settle
from edgetui.live.watch_context import WatchContext
from edgetui.live.run_state import (
    mtime,
    set_message,
    stat_signature,
    RoundState,
    RunState,
    TRANSCRIPT,
    RUN_LOG,
    TICKS,
    WHOLE_FILES,
    FULL_CHECK_S,
    EARLY_EVENT_S,
    LOG_HEAD_RE,
    ENDING_RE,
    JUDGE_STARTED_RE,
    JUDGE_DONE_RE,
    JUDGE_ERR_RE,
    TEST_RUNTIME_RE,
)

from edgetui.parsers.detect import parser_for


def utc_offset(rs: RunState) -> Optional[float]:
    """The run's own UTC offset (its ``started_at``, else its log's clock against the log's mtime:
    :func:`edgetui.parsers.sforge_dir.infer_log_offset`), never this process's time zone; None
    (UTC) while the run has told nothing yet. When it becomes known or changes, the run's
    recorded log times are moved (:meth:`RunFiles.retime`)."""
    return rs.info.utc_offset_s


class RunFiles:
    """The files of the runs of ``ctx``: what changed in them, their tail sources, the refresh of
    their file events and their finalize. ``containers`` tells a run's judge poller (poked at a new
    submission); ``on_run_deleted`` is called when a run's directory went away."""

    def __init__(self, ctx: WatchContext, containers: ContainerJoin, on_run_deleted: Callable[[], None]):
        self.ctx = ctx
        self.containers = containers
        self.on_run_deleted = on_run_deleted

    def retime(self, rs: RunState, old: Optional[float], new: Optional[float]) -> None:
        """The run's offset changed from ``old`` to ``new`` (None = UTC): its log lines recorded with
        the old one are moved, and its live log parsers use the new one from now on."""
        shift = (old or 0.0) - (new or 0.0)
        if shift:
            self.ctx.rec.conn.execute(
                "UPDATE events SET t = t + ? WHERE run_key = ? AND source IN ('run_agent.log', 'auto_eval_ticks.log') "
                "AND t_source = 'recorded'",
                [shift, rs.key],
            )
        for name in (RUN_LOG, TICKS):
            src = rs.sources.get(name)
            if src is not None and src.parser is not None:
                src.parser.utc_offset_s = new
        rs.dirty_files = True

    def detect_format(self, rs: RunState, now: float) -> Optional[str]:
        p = rs.task_dir / TRANSCRIPT
        try:
            st = p.stat()
        except OSError:  # (no transcript yet: no format yet)
            return None
        fmt = detect_file_format(p)
        if fmt == "unknown":
            if st.st_size < 4096 and now - st.st_mtime < 120:
                return None  # too little to tell yet (noise lines before the first record)
            fmt = {"codex": "codex_text", "opencode": "opencode"}.get(rs.info.agent or "", "claude_stream")
        return fmt

    def add_source(self, rs: RunState, name: str, catchup: bool) -> None:
        path = rs.task_dir / name
        if name == TRANSCRIPT:

            def make(source, gen, state, rs=rs):
                return parser_for(rs.fmt or "claude_stream", source, gen, state)

            hook = None
        elif name == RUN_LOG:

            def make(source, gen, state, rs=rs):
                return RunAgentLogParser(source, gen, utc_offset(rs), state)

            hook = self._run_log_hook
        else:

            def make(source, gen, state, rs=rs):
                return AutoEvalTicksParser(source, gen, utc_offset(rs), state)

            hook = None
        src = TailSource(
            run_key=rs.key,
            source=name,
            path=path,
            make_parser=make,
            line_hook=hook,
            on_new_generation=self._new_generation,
            folder=rs.task_dir.parent,
        )
        if not catchup:
            src.catchup_until = 0  # the file appeared while watching: every line is observed
        rs.sources[name] = src

    # ================================================================== per-run files
    def check_run_files(self, rs: RunState, now: float) -> None:
        td = rs.task_dir
        try:
            dst = os.stat(td)
        except OSError:
            dst = None
        if dst is None or not stat_isdir(dst.st_mode):
            if not rs.deleted:
                rs.deleted = True
                for src in rs.sources.values():  # a kept handle would hold the deleted files' space
                    self.ctx.tailer.release(src)
                set_message(rs, "run directory deleted", now, sticky=True)
                self.on_run_deleted()  # one made again above it is noticed at once
                self.ctx.note(f"{rs.key}: run directory deleted ({td}); its records are kept")
            return
        full = now - rs.last_full_check >= FULL_CHECK_S
        if full:
            rs.last_full_check = now
        # a file appearing changes the task dir's mtime; a recent mtime is re-checked (coarse clocks)
        dir_changed = dst.st_mtime_ns != rs.dir_sig or time.time() - dst.st_mtime < 2.0
        rs.dir_sig = dst.st_mtime_ns
        if dir_changed or full or rs.fmt_pending:
            for name in (TRANSCRIPT, RUN_LOG, TICKS):
                if name not in rs.sources and os.path.exists(os.path.join(td, name)):
                    if name == TRANSCRIPT and rs.fmt is None:
                        rs.fmt = self.detect_format(rs, now)
                        rs.fmt_pending = rs.fmt is None
                        if rs.fmt is None:
                            continue
                        rs.info.agent_format = rs.fmt
                        self.ctx.rec.update_run(rs.key, agent_format=rs.fmt)
                    self.add_source(rs, name, catchup=False)
        # whole files: missing ones when the dir changed, present ones every FULL_CHECK_S,
        # an unparsable final_result.json (mid-write) at every refresh
        for name in WHOLE_FILES:
            old = rs.file_sigs.get(name)
            if old is None and not (dir_changed or full):
                continue
            if old is not None and not full and not (name == "final_result.json" and not rs.finished):
                continue
            new = stat_signature(os.path.join(td, name))
            if new != old:
                rs.file_sigs[name] = new
                rs.dirty_files = True
        self._scan_submissions(rs, now, full)

    def _scan_submissions(self, rs: RunState, now: float, full: bool) -> None:
        sub_dir = rs.task_dir / "submissions"
        sig = stat_signature(sub_dir)
        changed = False
        if sig != rs.subs_sig or (sig is not None and time.time() - sig[1] / 1e9 < 2.0):
            rs.subs_sig = sig
            names: dict[str, float] = {}
            try:
                for e in os.scandir(sub_dir):
                    if e.is_dir() and not e.name.startswith("."):
                        try:
                            names[e.name] = min(now, e.stat().st_mtime)
                        except OSError:
                            names[e.name] = now
            except OSError:  # (a folder gone or unreadable: no names from it this time)
                note_swallowed("a run folder could not be listed")
            for n, born in names.items():
                if n not in rs.rounds:
                    parsed = sd.parse_round(n)
                    if parsed is None:
                        continue
                    rs.rounds[n] = RoundState(name=n, kind=parsed[0], first_seen=born)
                    changed = True
                    judge = self.containers.judge_of(rs)
                    if judge is not None:  # a new submission: ask the judge once soon (else rarely)
                        judge.poke(rs.key)
            for n in list(rs.rounds):
                if n not in names:
                    del rs.rounds[n]
                    changed = True
        for rd in rs.rounds.values():
            if rd.has_report and not full:
                continue
            entry = sub_dir / rd.name
            rep = stat_signature(entry / ("game_result.json" if rd.kind == "game" else "report.json"))
            if rep != rd.report_sig:
                rd.report_sig = rep
                rd.has_report = rep is not None
                changed = True
            if not rd.has_report and rd.kind != "game":
                ls = stat_signature(entry / "run_instance.log")
                if ls != rd.log_sig:
                    rd.log_sig = ls
                    self._read_instance_log(rd, entry / "run_instance.log", now)
                    changed = True
        if changed:
            rs.dirty_files = True

    def _read_instance_log(self, rd: RoundState, p: Path, now: float) -> None:
        try:
            with open_run_file(p, folder=p.parents[3]) as fp:  # (<run>/<task>/submissions/<round>/…)
                data = fp.read(4 << 20)
        except OSError:  # (not written yet, or gone: the next refresh reads it again)
            note_swallowed(f"{p}: the instance log could not be read")
            return
        rd.container_ids.update(m.decode() for m in JUDGE_STARTED_RE.findall(data))
        if (tm := TEST_RUNTIME_RE.search(data)) is not None and tm.group(2) == b"True":
            rd.log_timed_out_s = float(tm.group(1))  # (before report.json: said as eval_timeout)
        errs = JUDGE_ERR_RE.findall(data)
        if errs:
            rd.log_error = one_line(redact_text(errs[-1].decode("utf-8", "replace"), self.ctx.rec.secrets) or "", 200)
        if (errs or JUDGE_DONE_RE.search(data)) and not rd.log_terminal:
            rd.log_terminal = True
            rd.terminal_seen = now

    def _new_generation(self, src: TailSource) -> None:
        """A log was truncated / replaced (a re-run in place): forget the facts of its old content."""
        rs = self.ctx.runs.get(src.run_key)
        if rs is None:
            return
        if src.source == TRANSCRIPT:
            rs.pending.clear()
        elif src.source == RUN_LOG:
            rs.resume_times, rs.error_times, rs.ending_since, rs.last_error_msg = [], [], None, None
        elif src.source == TICKS:
            rs.tick_error_times, rs.last_tick_error = [], None

    # ================================================================== observing new lines
    def _run_log_hook(self, src: TailSource, line: bytes, offset: int) -> None:
        rs = self.ctx.runs.get(src.run_key)
        if rs is None:
            return
        m = LOG_HEAD_RE.match(line)
        if not m:
            return
        level = m.group(8)
        msg = m.group(9).decode("utf-8", "replace")
        try:
            t = local_to_epoch(tuple(g.decode() for g in m.group(1, 2, 3, 4, 5, 6)), int(m.group(7)), utc_offset(rs))
        except ValueError:
            t = self.ctx.clock()
        if level in (b"ERROR", b"CRITICAL"):
            rs.error_times.append(t)
            rs.last_error_msg = one_line(redact_text(msg, self.ctx.rec.secrets) or "", 200)  # (an alarm's text)
            # the run's facts are read again (sforge_dir.read_run_info: the harness's end before the
            # agent started is an ERROR as run_agent.log's last record), not only on submission changes
            rs.dirty_files = True
        elif ENDING_RE.match(msg) and rs.ending_since is None:
            rs.ending_since = t

    # ================================================================== database refresh
    def refresh_and_finalize(self, now: float) -> None:
        s = self.ctx.settings
        due: list[tuple[int, float, RunState]] = []
        for rs in self.ctx.runs.values():
            if rs.deleted:
                continue
            if rs.dirty_files and now - rs.last_finalize >= s.finalize_min_interval_s:
                due.append((0, rs.last_finalize, rs))
            elif rs.dirty_finalize and now - rs.last_full_finalize >= s.finalize_interval_s:
                due.append((1, rs.last_full_finalize, rs))
        if not due:
            return
        due.sort(key=lambda x: (x[0], x[1]))
        # runs never refreshed (just registered: a start-up, runs woken) besides the others' quota
        first = [rs for _, _, rs in due if rs.last_finalize <= 0][: max(1, s.max_first_refresh_per_poll)]
        batch = first + [rs for _, _, rs in due if rs.last_finalize > 0][: max(1, s.max_finalize_per_poll)]
        # the runs' files in one transaction (a fixed number of statements for the batch, see
        # refresh_files_many), then the finalize of all of them at once (edgetui.record.derived_rows.finalize_runs:
        # a fixed number of statements for the batch instead of ~25 a run); when a batch fails, its runs
        # again one by one, each in its own transaction (one run's trouble stays with that run)
        todo: list[tuple[RunState, bool, bool, dict]] = []  # (rs, full, aggregates, known)
        files = [rs for rs in batch if rs.dirty_files]
        kept = {rs.key: (rs.info, rs.end_marked, rs.upserted_secrets) for rs in files}
        got: dict[str, tuple[bool, dict]] = {}
        try:
            if files:
                with self.ctx.rec.transaction():
                    got = self.refresh_files_many(files, now)
        except Exception:  # then one by one: each failure said for its own run
            if os.environ.get("EDGETUI_DEBUG") and len(files) == 1:
                raise
            got = {}
            for rs in files:
                rs.info, rs.end_marked, rs.upserted_secrets = kept[rs.key]  # (what the batch's try changed)
                try:
                    with self.ctx.rec.transaction():
                        got.update(self.refresh_files_many([rs], now))
                except Exception as e:  # noqa: BLE001 - one run's trouble stays with that run
                    self._refresh_failed(rs, e, now)
                    self._refreshed(rs, now, True)
        file_keys = {rs.key for rs in files}
        for rs in batch:
            if rs.key not in file_keys:  # (a growing run's full recomputation only)
                todo.append((rs, True, True, {}))
            elif rs.key in got:  # (else its refresh failed: said, and not finalized)
                full, known = got[rs.key]
                todo.append((rs, full, full, known))
        if not todo:
            return
        failed: set[str] = set()
        try:
            with self.ctx.rec.transaction():
                self.finalize_many([(rs, agg, known) for rs, _, agg, known in todo])
        except Exception:  # then one by one: each failure said for its own run
            if os.environ.get("EDGETUI_DEBUG") and len(todo) == 1:
                raise
            for rs, _, agg, known in todo:
                try:
                    with self.ctx.rec.transaction():
                        self.finalize_many([(rs, agg, known)])
                except Exception as e:  # noqa: BLE001 - said for its own run; the other runs go on
                    self._refresh_failed(rs, e, now)
                    failed.add(rs.key)
        for rs, full, _, _ in todo:
            if rs.key not in failed and rs.message and rs.message.startswith("could not refresh"):
                rs.message = None
            self._refreshed(rs, now, full)

    def _refresh_failed(self, rs: RunState, e: Exception, now: float) -> None:
        if os.environ.get("EDGETUI_DEBUG"):
            raise e
        set_message(rs, one_line(f"could not refresh: {type(e).__name__}: {e}", 200), now)

    @staticmethod
    def _refreshed(rs: RunState, now: float, full: bool) -> None:
        rs.last_finalize = now
        rs.dirty_files = False
        if full:  # (a submissions-only refresh leaves a growing run's full recomputation due as it was)
            rs.last_full_finalize = now
            rs.dirty_finalize = False

    def refresh_files_many(self, runs: list[RunState], now: float) -> dict[str, tuple[bool, dict]]:
        """The whole-file part of :func:`edgetui.record.ingest.ingest_run` for each of ``runs`` (their
        finalize follows), in a fixed number of statements for the batch: one read of their
        run_agent.log ends, one insert of the finished ones' transcript ends, and
        :meth:`edgetui.record.recorder.Recorder.replace_file_events_many` of their file events.

        A run going on whose aggregates were recomputed less than ``finalize_interval_s`` ago (and
        whose time anchors did not change) gets a submissions-only finalize: a new graded round
        updates its submissions and best-so-far at once, while its event counts, tokens and cost
        stay the recorded ones plus the live deltas (the full recomputation is a third of a
        refresh and runs on its own schedule). Returns by run key ``(full, known)``: whether the
        finalize due is a full one and what :meth:`finalize_many` takes of it (the caller finalizes
        them together)."""
        keys = [rs.key for rs in runs]
        settle(self.ctx.conn)
        log_end: dict = {k: None for k in keys}
        log_end.update(
            self.ctx.conn.execute(
                f"SELECT run_key, max(t) FROM events WHERE {in_list('run_key', keys)} AND source = 'run_agent.log' "
                "GROUP BY run_key",
                keys,
            ).fetchall()
        )
        ends_all: list = []
        files: list[tuple[str, list]] = []
        out: dict[str, tuple[bool, dict]] = {}
        for rs in runs:
            td = rs.task_dir
            for secret in raw_secrets(td):
                self.ctx.rec.add_secret(secret)
            info = sd.read_run_info(rs.loc)
            info.agent_format = rs.fmt
            if info.utc_offset_s is None and rs.info.utc_offset_s is None:
                log = rs.sources.get(RUN_LOG)
                if log is not None and log.last_growth_t is not None:  # lines arriving now: the log's clock vs now
                    info.utc_offset_s = sd.infer_log_offset(td / RUN_LOG)
            if info.utc_offset_s is None and rs.info.utc_offset_s is not None:
                info.utc_offset_s = rs.info.utc_offset_s
            elif info.utc_offset_s != rs.info.utc_offset_s:  # started_at (or the log) told the run's offset
                self.retime(rs, rs.info.utc_offset_s, info.utc_offset_s)
                settle(self.ctx.conn)
                row = self.ctx.conn.execute(  # (its log's times just moved)
                    "SELECT max(t) FROM events WHERE run_key = ? AND source = 'run_agent.log'", [rs.key]
                ).fetchone()
                log_end[rs.key] = row[0] if row else None
            # the runs row's descriptive columns: unchanged since we last wrote them (same facts, no new
            # secret to scrub its config with) is not written again (an UPDATE costs ~5 ms inside the
            # refresh's transaction: 150 new runs' first refresh)
            if info != rs.info or rs.upserted_secrets != len(self.ctx.rec.secrets):
                self.ctx.rec.upsert_run(rs.key, info)
                rs.upserted_secrets = len(self.ctx.rec.secrets)
            rs.info = info
            subs = sd.read_submissions(td, cache=rs.rec_cache)  # unchanged folders are not read again (nor below)
            in_flight = {n for n, rd in rs.rounds.items() if rd.in_flight}
            for srec in subs:
                rd = rs.rounds.get(srec.round)
                if srec.round in in_flight:
                    srec.status, srec.error = "in_flight", None
                if rd is not None and srec.submission_id:
                    rd.sid = srec.submission_id
            last_log_t = log_end[rs.key]
            graded = [x for x in subs if x.status != "in_flight" or x.kind == "game"]
            if rs.finished and not rs.end_marked:  # the run ended: what its transcript's end says (a segment
                rs.end_marked = True  # without a result: incomplete), as an offline ingest records it
                src = rs.sources.get(TRANSCRIPT)
                if src is not None and src.parser is not None:
                    ends = src.parser.finish()  # (leaves the parser's state as it was)
                    for e in ends:
                        e.run_key = rs.key
                        mark_stopped_at_budget(e, info.final)  # (the harness stopped it at the budget: not a cut)
                    ends_all.extend(ends)
            files.append((rs.key, whole_file_events(td, graded, info, last_log_t, sub_cache=rs.sub_cache)))
            rs.subs = subs
            full = (
                rs.finished
                or rs.last_full_finalize <= 0
                or now - rs.last_full_finalize >= self.ctx.settings.finalize_interval_s
                or rs.aligned != (rs.finished, info.started_at, info.ended_at)
            )
            # (the file events about to be replaced hold no run_agent.log line: its latest time is still last_log_t)
            out[rs.key] = (full, {"log_end": last_log_t})
        settle(self.ctx.conn)
        if ends_all:
            self.ctx.rec.insert_events("", ends_all)
        added = self.ctx.rec.replace_file_events_many(files, line_sources=LINE_SOURCES)
        for rs, n in zip(runs, added):
            if not out[rs.key][0]:
                rs.new_events += n
        return out

    def finalize(self, rs: RunState, aggregates: bool = True, **known) -> None:
        """:func:`edgetui.record.derived_rows.finalize_run` for one run, then its runs row read back
        (``aggregates=False``: see :meth:`refresh_files_many`). ``known``: ``log_end`` (the latest time of
        the run's run_agent.log events, epoch UTC or None) when the caller just read it."""
        self.finalize_many([(rs, aggregates, known)])

    def finalize_many(self, items: list[tuple[RunState, bool, dict]]) -> None:
        """:meth:`finalize` of several runs ``(rs, aggregates, known)`` together
        (:func:`edgetui.record.derived_rows.finalize_runs`; the reads before and after it grouped too)."""
        settle(self.ctx.conn)
        for rs, _, _ in items:
            fill_model_agent(self.ctx.rec, rs.key, rs.info)
        settle(self.ctx.conn)
        # once aligned, a live run's new lines carry their observed time: aligning again (a third of a
        # finalize) would change nothing unless some event still has no time (a file just read, a
        # catch-up that went on) or the run's start / end / finish changed (new anchors)
        anchors = {rs.key: (rs.finished, rs.info.started_at, rs.info.ended_at) for rs, _, _ in items}
        ask = [rs.key for rs, _, _ in items if rs.aligned == anchors[rs.key]]
        untimed = (
            {
                r[0]
                for r in self.ctx.conn.execute(
                    f"SELECT DISTINCT run_key FROM events WHERE {in_list('run_key', ask)} AND t IS NULL", ask
                ).fetchall()
            }
            if ask
            else set()
        )
        jobs = []
        for rs, aggregates, known in items:
            live_end = None
            if rs.fmt and not rs.finished:  # a run going on: its transcript's last write ends the known lines
                live_end = mtime(rs.task_dir / TRANSCRIPT)
            jobs.append(
                FinalizeJob(
                    rs.key,
                    rs.info,
                    rs.task,
                    rs.subs,
                    TRANSCRIPT if rs.fmt else None,
                    live_end=live_end,
                    align=rs.aligned != anchors[rs.key] or rs.key in untimed,
                    aggregates=aggregates,
                    judge_best=rs.history.best_round if rs.history is not None else None,
                    **known,
                )
            )
        finalize_runs(self.ctx.rec, jobs, self.ctx.settings.abort_after_s)
        for rs, _, _ in items:
            rs.aligned = anchors[rs.key]
        load_rows(self.ctx.conn, [(rs, aggregates) for rs, aggregates, _ in items], self.ctx.clock())
        full = [rs for rs, aggregates, _ in items if aggregates]
        for rs in full:
            rs.recorded_status = rs.recorded_infra = None  # finalize_run wrote its own row: write ours again
        self._check_early_events(full)

    def _check_early_events(self, runs: list[RunState]) -> None:
        """Say so when events are timed more than EARLY_EVENT_S before the run's start: recorded
        timestamps of lines copied from another run (a sample copied to try live mode) put them
        thousands of hours before it, where the timeline shows them; nothing is changed. (One
        statement for the runs.)"""
        starts = {rs.key: rs.info.started_at for rs in runs if rs.info.started_at is not None}
        runs = [rs for rs in runs if rs.key in starts]
        if not runs:
            return
        vals = [x for rs in runs for x in (rs.key, starts[rs.key] - EARLY_EVENT_S)]
        got = dict(
            self.ctx.conn.execute(
                "SELECT e.run_key, count(*) FROM events e JOIN (VALUES "
                + ", ".join("(?, ?::DOUBLE)" for _ in runs)
                + ") s(rk, lim) ON e.run_key = s.rk "
                f"WHERE {in_list('e.run_key', [rs.key for rs in runs])} AND e.t < s.lim GROUP BY e.run_key",
                vals + [rs.key for rs in runs],
            ).fetchall()
        )
        for rs in runs:
            n = got.get(rs.key, 0)
            if n and n != rs.early_events:
                msg = f"{n} event{'s' if n != 1 else ''} timed over a day before the run's start (copied lines?)"
                set_message(rs, msg, self.ctx.clock())
                self.ctx.note(f"{rs.key}: {msg}")
            rs.early_events = n
