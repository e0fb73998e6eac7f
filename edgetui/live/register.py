"""Registering the runs the supervisor finds: what their files say, what earlier sessions recorded of
them (the runs row, pending tool calls, resumes, errors, alarms, containers), their tail sources (a
part of :class:`edgetui.live.supervisor.Supervisor`; core: no Textual).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


from edgetui.events import one_line
from edgetui.parsers.run_secrets import raw_secrets
from edgetui.parsers import sforge_dir as sd
from edgetui.records import TaskInfo, make_run_key
from edgetui.live.alarms import AlarmBook
from edgetui.live.model import Alarm
from edgetui.live.run_files import RunFiles
from edgetui.live.run_rows import load_row, load_rows
from edgetui.live.run_state import mtime, stat_signature, RunState, TRANSCRIPT, RUN_LOG, TICKS, WHOLE_FILES
from edgetui.live.watch_context import WatchContext

import json
from edgetui.parsers.runlog import JUDGE_FULL_TICK


class RunRegistry:
    """Adds the runs found to ``ctx.runs``: their files through ``files`` (format, tail sources),
    their earlier alarms into ``book``."""

    def __init__(self, ctx: WatchContext, files: RunFiles, book: AlarmBook):
        self.ctx = ctx
        self.files = files
        self.book = book
        self.known_keys: Optional[set[str]] = None  # run keys with a runs row (while registering)
        self.task_cache: dict[str, tuple[TaskInfo, TaskInfo]] = {}  # task id -> (TaskInfo asked, recorded)

    def register_all(self, locs: list, now: float) -> None:
        """Register new runs: in one transaction and a fixed number of statements for them
        (:meth:`_register_many`; a commit per statement was most of a new run's cost, then a few
        statements each), the runs without a runs row skip the reads of what earlier sessions
        recorded; when one fails, the group is rolled back and the runs registered one by one, each
        failure said once."""
        if not locs:
            return
        self.known_keys = {r[0] for r in self.ctx.conn.execute("SELECT run_key FROM runs").fetchall()}
        try:
            if len(locs) > 1:
                before = set(self.ctx.runs)
                try:
                    with self.ctx.rec.transaction():
                        self._register_many(locs, now)
                    return
                except Exception:  # one by one below
                    if os.environ.get("EDGETUI_DEBUG"):
                        raise
                    for key in set(self.ctx.runs) - before:
                        rs = self.ctx.runs.pop(key, None)
                        for src in rs.sources.values() if rs is not None else ():
                            self.ctx.tailer.release(src)
                    self.task_cache.clear()
                    self.known_keys = {r[0] for r in self.ctx.conn.execute("SELECT run_key FROM runs").fetchall()}
            for loc in locs:
                try:
                    self.register(loc, now)
                except Exception as e:  # one bad run must not stop the others
                    if os.environ.get("EDGETUI_DEBUG"):
                        raise
                    self.ctx.note(one_line(f"{loc.task_dir}: could not watch: {type(e).__name__}: {e}", 240))
        finally:
            self.known_keys = None

    def register(self, loc: sd.RunLocation, now: float) -> None:
        self._register_many([loc], now)

    def _register_many(self, locs: list, now: float) -> None:
        """Register the runs at ``locs``: their files read one by one, then their tasks
        (:meth:`edgetui.record.recorder.Recorder.tasks_for`), their runs rows
        (:meth:`~edgetui.record.recorder.Recorder.upsert_runs`) and the new ones' rows read back
        (:func:`edgetui.live.run_rows.load_rows`) each in one statement for them all."""
        got = []
        for loc in locs:
            task_dir = Path(loc.task_dir)
            for secret in raw_secrets(task_dir):
                self.ctx.rec.add_secret(secret)
            info = sd.read_run_info(loc)
            key = make_run_key(info.host, info.run_id, info.task_id)
            got.append((loc, task_dir, info, key, sd.task_info(info.task_id, self.ctx.tasks)))
        ask: dict[str, TaskInfo] = {}
        for _, _, info, _, asked in got:
            cached = self.task_cache.get(info.task_id)
            if cached is None or cached[0] != asked:
                ask[info.task_id] = asked
        for asked, task in zip(ask.values(), self.ctx.rec.tasks_for(list(ask.values()))):
            self.task_cache[asked.task_id] = (asked, task)
        made = []
        for loc, _task_dir, info, key, _ in got:
            rs = RunState(key=key, loc=loc, info=info, task=self.task_cache[info.task_id][1], first_seen=now)
            rs.fmt = self.files.detect_format(rs, now)
            info.agent_format = rs.fmt
            made.append(rs)
        self.ctx.rec.upsert_runs([(rs.key, rs.info) for rs in made])
        fresh = []
        for rs in made:
            rs.upserted_secrets = len(self.ctx.rec.secrets)
            if self.known_keys is not None and rs.key not in self.known_keys:
                fresh.append(rs)  # never recorded before: nothing else of it to read
            else:
                self._load_known(rs, now)
        if fresh:
            load_rows(self.ctx.conn, [(rs, True) for rs in fresh], now, fresh=True)
        for rs in made:
            task_dir, info = rs.task_dir, rs.info
            for name in (TRANSCRIPT, RUN_LOG, TICKS):
                if (task_dir / name).exists():
                    self.files.add_source(rs, name, catchup=True)
            t_mtime = mtime(task_dir / TRANSCRIPT)
            if t_mtime is not None:
                rs.last_growth_t = min(now, t_mtime)
            rs.last_activity_t = max(
                [
                    x
                    for x in (rs.last_growth_t, mtime(task_dir / RUN_LOG), mtime(task_dir / TICKS), info.started_at)
                    if x is not None
                ],
                default=None,
            )
            if rs.last_activity_t is not None:
                rs.last_activity_t = min(now, rs.last_activity_t)
            for name in WHOLE_FILES:
                rs.file_sigs[name] = stat_signature(task_dir / name)
            rs.last_full_check = now
            self.ctx.runs[rs.key] = rs

    def _load_known(self, rs: RunState, now: float) -> None:
        """What earlier sessions recorded: the run row, pending tool calls, resumes, errors, alarms, containers."""
        c = self.ctx.conn
        key = rs.key
        load_row(self.ctx.conn, rs, now)
        cur = self.ctx.rec.get_cursor(key, TRANSCRIPT)
        if cur and cur.get("generation"):
            rows = c.execute(
                """SELECT tool_use_id FROM events WHERE run_key = ? AND source = ? AND generation = ?
                   AND kind = 'tool_call' AND tool_use_id IS NOT NULL
                   AND segment IS NOT DISTINCT FROM (SELECT max(segment) FROM events WHERE run_key = ? AND source = ?
                                                     AND generation = ?)
                   AND tool_use_id NOT IN (SELECT tool_use_id FROM events WHERE run_key = ? AND kind = 'tool_result'
                                           AND tool_use_id IS NOT NULL)""",
                [key, TRANSCRIPT, cur["generation"], key, TRANSCRIPT, cur["generation"], key],
            ).fetchall()
            rs.pending = {r[0]: now for r in rows}
            # sforge-submit calls a full judge refused (HTTP 503): the judge_saturated rule's facts
            rs.judge_full_times.extend(
                r[0]
                for r in c.execute(
                    "SELECT t FROM events WHERE run_key = ? AND source = ? AND kind = 'tool_result' "
                    "AND t IS NOT NULL AND contains(data, 'judge_full') "
                    "AND data->>'$.submit_result.rejected' = 'judge_full' ORDER BY t",
                    [key, TRANSCRIPT],
                ).fetchall()
            )
        # facts of the current generation of each log (a re-run in place truncates them)
        gens = {}
        for src_name in (RUN_LOG, TICKS):
            cu = self.ctx.rec.get_cursor(key, src_name)
            gens[src_name] = cu["generation"] if cu and cu.get("generation") else ""
        for kind, t, summ in c.execute(
            "SELECT kind, t, summary FROM events WHERE run_key = ? AND ((source = ? AND generation = ?) "
            "OR (source = ? AND generation = ?)) "
            "AND kind IN ('resume', 'infra_error', 'auto_eval_error') AND t IS NOT NULL ORDER BY t",
            [key, RUN_LOG, gens[RUN_LOG], TICKS, gens[TICKS]],
        ).fetchall():
            if kind == "resume":
                rs.resume_times.append(t)
            elif kind == "infra_error":
                rs.error_times.append(t)
                rs.last_error_msg = summ
            elif kind == "auto_eval_error" and summ and summ.startswith(JUDGE_FULL_TICK):
                rs.judge_full_times.append(t)
            elif kind == "auto_eval_error":
                rs.tick_error_times.append(t)
                rs.last_tick_error = summ
        fin = c.execute(
            "SELECT min(t) FROM events WHERE run_key = ? AND source = ? AND generation = ? "
            "AND kind = 'segment_end' AND data->>'$.agent_finished' = 'true'",
            [key, RUN_LOG, gens[RUN_LOG]],
        ).fetchone()
        if fin and fin[0] is not None:
            rs.ending_since = fin[0]
        for sid, rnd in c.execute(
            "SELECT data->>'$.submission_id', round FROM events WHERE run_key = ? AND source = ? "
            "AND kind = 'submission_sent'",
            [key, TICKS],
        ).fetchall():
            if sid and rnd:
                rs.tick_sids[sid] = rnd
        # alarms of earlier sessions: their episodes count as still active until seen false once
        rows = c.execute("SELECT t, data FROM events WHERE run_key = ? AND kind = 'alarm' ORDER BY t", [key]).fetchall()
        if rows:
            alarms, keys, acks = [], set(), []
            for t, data in rows[-100:]:
                try:
                    d = json.loads(data) if data else {}
                except ValueError:
                    d = {}
                if d.get("ack"):
                    acks.append((str(d.get("key") or d.get("rule")), t))
                    continue
                keys.add(str(d.get("key") or d.get("rule")))
                alarms.append(
                    Alarm(
                        run_key=key,
                        rule=str(d.get("rule") or "?"),
                        severity=str(d.get("severity") or "warning"),
                        t=t,
                        message=str(d.get("message") or ""),
                        data=d,
                    )
                )
            self.book.preload(key, keys, alarms[-50:])
            for k, t in acks:
                self.book.restore_ack(key, k, t)
        # the last recorded state of the work container (so a container that vanished while nobody watched is "gone")
        row = c.execute(
            "SELECT data->>'$.id', data->>'$.state', t FROM events WHERE run_key = ? AND kind = 'container_state' "
            "AND data->>'$.role' = 'work' ORDER BY t DESC LIMIT 1",
            [key],
        ).fetchone()
        if row and row[0]:
            rs.container_seen_id, rs.container_state = row[0], row[1]
            if row[1] in ("exited", "dead", "gone"):
                rs.container_ended_t = row[2]
            op = c.execute(
                "SELECT data->>'$.operator' FROM events WHERE run_key = ? AND kind = 'container_state' "
                "AND data->>'$.id' = ? AND data->>'$.operator' IS NOT NULL ORDER BY t DESC LIMIT 1",
                [key, row[0]],
            ).fetchall()
            if op:
                rs.operator_action = op[0][0]
