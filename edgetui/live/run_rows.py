"""What the supervisor shows and records of each run: its status, alarm facts and alarms, the runs
rows written to the database and the :class:`~edgetui.live.model.LiveRun` views (a part of
:class:`edgetui.live.supervisor.Supervisor`; core: no Textual).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import duckdb
import pyarrow as pa

from edgetui.error_log import note_swallowed
from edgetui.replay.selection import display_value

from edgetui.events import one_line
from edgetui.record.derived_rows import harness_reason, unreadable_reason
from edgetui.records import sforge_runtime_s
from edgetui.live.alarms import AlarmBook, AlarmCommand, RunFacts, alarm_event, evaluate, fmt_age
from edgetui.live.containers import ContainerJoin, grading_judges
from edgetui.live.judge_queue import PendingCount
from edgetui.live.model import Alarm, LiveRun, live_run_from, newest_per_key
from edgetui.live.tail import settle
from edgetui.store.sql_in_list import in_list
from edgetui.live.run_state import mtime, plus, RunState, TRANSCRIPT, RUN_LOG, MESSAGE_TTL_S
from edgetui.live.watch_context import WatchContext

from edgetui.record.derived_rows import HARNESS_QUIET_S

#: (HostState.kind, round trip in seconds or None) of a remote host by its name, or None
HostStateOf = Callable[[str], Optional[tuple]]


def last_event_t(rs: RunState) -> Optional[float]:
    """The run's last event time on the watcher's clock: the recorded row's (never after the moment
    the row was read: a time ahead of the watcher's clock, a runner's log read with an offset not
    known yet, would hold the ``last`` age at 0 s; issue 36, item 3), or a newer one tailed since
    (:meth:`edgetui.live.supervisor.Supervisor._observe` bounds those by their read)."""
    a, b = rs.row.get("last_event_at"), rs.last_event_t
    if a is not None and rs.row_read_t is not None and a > rs.row_read_t:
        a = rs.row_read_t
    return b if a is None else (a if b is None or a >= b else b)


#: runs-row columns that only a full finalize recomputes (the live deltas are added to them)
AGG_COLS = (
    "n_events",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "stated_cost_usd",
    "last_event_at",
)


#: the runs row's columns the live side reads for a run beside :data:`AGG_COLS` (its totals)
ROW_COLS = (
    "best_round",
    "best_score",
    "best_pass_rate",
    "best_score_0_100",
    "score_task",
    "agent_submissions",
    "auto_submissions",
    "game_sessions",
    "agent",
    "model",
    "started_at",
    "resume_count",
    "ended_at",
    "selection",
    "score_direction",
)


def load_row(
    conn: duckdb.DuckDBPyConnection, rs: RunState, now: float, aggregates: bool = True, fresh: bool = False
) -> None:
    """Read the run's runs row into ``rs.row`` (and reset the live deltas). ``aggregates=False``
    (after a submissions-only finalize) keeps the aggregate columns and their deltas as they are.
    ``fresh``: the row was just written for a run never recorded before (no submissions rows)."""
    load_rows(conn, [(rs, aggregates)], now, fresh=fresh)


def load_rows(
    conn: duckdb.DuckDBPyConnection, items: list[tuple[RunState, bool]], now: float, fresh: bool = False
) -> None:
    """:func:`load_row` of several runs ``(rs, aggregates)``, two statements whatever their number
    (``now``: the moment they are read, on the watcher's clock)."""

    cols = ROW_COLS
    every = cols + AGG_COLS
    keys = [rs.key for rs, _ in items]
    got = {
        r[0]: r[1:]
        for r in conn.execute(
            f"SELECT run_key, {', '.join(every)} FROM runs WHERE {in_list('run_key', keys)}", keys
        ).fetchall()
    }
    best = (
        {}
        if fresh
        else dict(
            conn.execute(
                f"SELECT run_key, max(t) FROM submissions WHERE {in_list('run_key', keys)} AND is_new_best "
                "GROUP BY run_key",
                keys,
            ).fetchall()
        )
    )
    for rs, aggregates in items:
        r = got.get(rs.key)
        if aggregates:
            rs.row = dict(zip(every, r)) if r else {}
            rs.row_read_t = now
        else:
            rs.row = {**rs.row, **(dict(zip(cols, r)) if r else {})}
        rs.last_new_best_t = best.get(rs.key)
        if aggregates:
            reset_deltas(rs)


def reset_deltas(rs: RunState) -> None:
    rs.new_events = 0
    rs.tok_delta = [0, 0, 0, 0]
    rs.cost_delta = 0.0


class RunRows:
    """Statuses, alarms, the runs rows' live columns and the LiveRun of each run of ``ctx``.
    ``host_state_of`` (set by :class:`edgetui.live.remote_hosts.HostLinks`) tells a remote host's
    state for the runs of its roots."""

    def __init__(
        self,
        ctx: WatchContext,
        containers: ContainerJoin,
        book: AlarmBook,
        alarm_cmd: AlarmCommand,
        judge_queue: PendingCount,
        watch_started: float,
    ):
        self.ctx = ctx
        self.containers = containers
        self.book = book
        self.alarm_cmd = alarm_cmd
        self.judge_queue = judge_queue
        #: when this watch began: a run over before it is shown, not alarmed (issue 36, item 6)
        self.watch_started = watch_started
        self.host_state_of: Optional[HostStateOf] = None

    def record_statuses(self) -> None:
        todo = [
            rs
            for rs in self.ctx.runs.values()
            if not rs.deleted and (rs.recorded_status != rs.status or rs.recorded_infra != bool(rs.error_times))
        ]
        if not todo:
            return
        # the infra flag too: an ERROR line arriving live (the file scan runs on submission changes)
        now = self.ctx.clock()
        if self._update_runs(
            {
                "run_key": [rs.key for rs in todo],
                "status": [rs.status for rs in todo],
                "infra": [bool(rs.error_times) for rs in todo],
                "reason": [self._status_reason(rs, now) for rs in todo],
            },
            "status = s.status, infra_error = coalesce(runs.infra_error, FALSE) OR s.infra, status_reason = s.reason",
            "run statuses",
        ):
            for rs in todo:
                rs.recorded_status = rs.status
                rs.recorded_infra = bool(rs.error_times)

    def record_images(self) -> None:
        """Write the image digests the runs' work and judge containers ran (the engine's image ids)
        to ``runs.work_image`` / ``runs.judge_image``: one digest, or several joined by ", " when
        they changed within the run (docs/sforge-formats.md, "Task variants")."""
        todo = []
        for rs in self.ctx.runs.values():
            images = (", ".join(rs.work_images) or None, ", ".join(rs.judge_images) or None)
            if not rs.deleted and images != (None, None) and images != rs.recorded_images:
                todo.append((rs, images))
        if todo and self._update_runs(
            {
                "run_key": [rs.key for rs, _ in todo],
                "work": [w for _, (w, _j) in todo],
                "judge": [j for _, (_w, j) in todo],
            },
            "work_image = coalesce(s.work, runs.work_image), judge_image = coalesce(s.judge, runs.judge_image)",
            "the runs' images",
        ):
            for rs, images in todo:
                rs.recorded_images = images

    def _status_reason(self, rs: RunState, now: float) -> Optional[str]:
        """Why the run's status is what it is, in its source's words (as :func:`edgetui.record.ingest.finalize_run`
        words it offline): a harness that ended before the agent started, a final_result.json that
        cannot be read; None otherwise."""
        if rs.status == "aborted" and self.harness_ended(rs, now):
            return harness_reason(rs.info.harness_error)
        if rs.status != "finished" and rs.info.final is None:
            return unreadable_reason(rs.info.unreadable)
        return None

    def _update_runs(self, columns: dict[str, list], sets: str, what: str) -> bool:
        """``UPDATE runs SET <sets>`` from one row per run (``columns`` incl. ``run_key``, the row
        aliased ``s``) in one statement; a failure is a note. Returns whether it was written."""
        try:
            settle(self.ctx.conn)
            self.ctx.conn.register("_edgetui_live_update", pa.table(columns))
            try:
                self.ctx.conn.execute(
                    f"UPDATE runs SET {sets} FROM _edgetui_live_update s WHERE runs.run_key = s.run_key"
                )
            finally:
                self.ctx.conn.unregister("_edgetui_live_update")
            return True
        except Exception as e:  # noqa: BLE001 - said as a note; the refresh goes on
            self.ctx.note(one_line(f"could not record {what}: {e}", 200))
            return False

    def record_rows(self) -> None:
        """Bring the live figures of each growing run's ``runs`` row up to date (events, last event,
        tokens, cost: the recorded aggregates plus what arrived since), in one UPDATE. The full
        recomputation (alignment, exact per-message usage) still runs every ``finalize_interval_s``."""
        rows = []
        for rs in self.ctx.runs.values():
            if rs.deleted or not (rs.new_events or rs.cost_delta or any(rs.tok_delta)):
                continue
            r = rs.row
            sig = (rs.new_events, tuple(rs.tok_delta), rs.cost_delta, rs.last_event_t)
            if rs.row_sig == sig:
                continue
            last = last_event_t(rs)
            cost = r.get("cost_usd")
            if rs.cost_delta:
                cost = (cost or 0.0) + rs.cost_delta
            rows.append(
                (
                    rs,
                    sig,
                    {
                        "run_key": rs.key,
                        "n_events": int(r.get("n_events") or 0) + rs.new_events,
                        "last_event_at": last,
                        # (none counted stays NULL, as offline: a run without a transcript has no tokens)
                        "input_tokens": plus(r.get("input_tokens"), rs.tok_delta[0]),
                        "output_tokens": plus(r.get("output_tokens"), rs.tok_delta[1]),
                        "cache_read_tokens": plus(r.get("cache_read_tokens"), rs.tok_delta[2]),
                        "cache_write_tokens": plus(r.get("cache_write_tokens"), rs.tok_delta[3]),
                        "cost_usd": cost,
                    },
                )
            )
        if not rows:
            return
        cols = list(rows[0][2])
        if self._update_runs(
            {c: [x[2][c] for x in rows] for c in cols},
            ", ".join(f"{c} = s.{c}" for c in cols if c != "run_key"),
            "the runs table's live figures",
        ):
            for rs, sig, _ in rows:
                rs.row_sig = sig

    # ================================================================== status
    def status(self, rs: RunState, now: float, docker_ok: bool) -> str:
        s = self.ctx.settings
        if rs.deleted:
            return rs.status
        if rs.finished:
            return "finished"
        grading = (
            any(rd.in_flight for rd in rs.rounds.values())
            or bool(grading_judges(rs))
            or bool(rs.judge_in_flight()[0])  # (the judge's history less what the files settled since)
        )
        ending = rs.ending_since is not None and now - rs.ending_since < s.finish_grace_s
        known = docker_ok and (
            rs.loc.host == self.ctx.host or self.containers.engine_of(rs) is not self.containers.docker
        )
        if self.harness_ended(rs, now):  # crashed before the agent started: not "running" for 2 hours,
            rs.log_ended()  # (its held ERROR record is final: the event id an offline ingest gives it)
            return "aborted"  # even while its work container is left running (the orphan)
        if known and rs.container_state == "gone" and rs.container_ended_t is not None:
            if ending or now - rs.container_ended_t < s.container_grace_s:
                return "grading" if grading else "running"
            return "gone"
        if known and rs.container is not None and rs.container.state:
            st = rs.container.state
            if st in ("running", "restarting", "paused"):
                return "grading" if grading else "running"
            if ending or (rs.container_ended_t is not None and now - rs.container_ended_t < s.container_grace_s):
                return "grading" if grading else "running"
            if st == "created" and now - rs.first_seen < s.container_grace_s:
                return "running"
            return "aborted"
        acts = [
            x
            for x in (
                rs.last_activity_t,
                rs.last_growth_t,
                rs.info.started_at,
                max((rd.first_seen for rd in rs.rounds.values()), default=None),
            )
            if x is not None
        ]
        if acts and now - max(acts) < s.abort_after_s:
            return "grading" if grading else "running"
        return "aborted"

    def harness_ended(self, rs: RunState, now: float) -> bool:
        """run_agent.log ends on an ERROR (+ traceback), has been quiet for 60 s, no started_at, no
        final result: the harness ended before the agent started (its words: ``info.harness_error``)."""

        info = rs.info
        if not info.harness_error or info.started_at is not None or rs.finished:
            return False
        log = rs.sources.get(RUN_LOG)
        if log is not None and log.last_growth_t is not None:  # grew while watched: since its last growth
            quiet_since: Optional[float] = log.last_growth_t
        else:  # seen whole: the earlier of its mtime and its last record's time (a copy's mtime is fresh)
            last = rs.error_times[-1] if rs.error_times else None
            quiet_since = min([x for x in (info.log_mtime, last) if x is not None], default=None)
        return quiet_since is not None and now - quiet_since >= HARNESS_QUIET_S

    # ================================================================== alarms
    def _facts(self, rs: RunState, now: float) -> RunFacts:
        c = rs.container
        hist = rs.history
        failed = {n: rd.failed for n, rd in rs.rounds.items() if rd.failed}
        jerr: dict[str, str] = {}
        if hist is not None:
            jerr.update(hist.judge_errors)
            for n, why in hist.failed.items():
                failed.setdefault(n, why)
        oldest = min(rs.pending.values()) if rs.pending else None
        return RunFacts(
            run_key=rs.key,
            status=rs.status,
            finished=rs.finished,
            deleted=rs.deleted,
            started_at=rs.info.started_at,
            first_seen=rs.first_seen,
            watch_started=self.watch_started,
            has_transcript=TRANSCRIPT in rs.sources,
            last_growth_t=rs.last_growth_t,
            pending_calls=len(rs.pending),
            oldest_pending_t=oldest,
            last_new_best_t=rs.last_new_best_t,
            best_round=rs.row.get("best_round"),
            resume_times=rs.resume_times,
            error_times=rs.error_times,
            last_error_msg=rs.last_error_msg,
            ending_since=rs.ending_since,
            container_id=c.id if c else rs.container_seen_id,
            container_name=c.name if c else None,
            container_state=(c.state if c else None)
            if (self.containers.docker is not None and self.containers.docker.available)
            or (c is not None and c.phase is not None and bool(getattr(self.containers.cluster, "available", False)))
            else (rs.container_state if rs.container_state == "gone" else None),
            container_exit_code=c.exit_code if c else None,
            container_oom=bool(c and c.oom_killed),
            container_ended_t=rs.container_ended_t,
            failed_rounds=failed,
            eval_timeouts=rs.eval_timeouts(),
            judge_errors=jerr,
            container_finished_at=c.finished_at if c is not None else None,
            operator_action=rs.operator_action if (c is not None and rs.operator_action) else None,
            tick_error_times=rs.tick_error_times,
            last_tick_error=rs.last_tick_error,
            judge_full_times=rs.judge_full_times,
            ended_t=mtime(rs.task_dir / "final_result.json") if rs.finished else None,
            pod_problems=[(p.name, line) for p in [c, *rs.judges] if p is not None for line in p.problems],
            harness_error=rs.info.harness_error
            if self.harness_ended(rs, now) or (c is not None and c.state == "running" and rs.info.harness_error)
            else None,
        )

    def alarms(self, rs: RunState, now: float) -> list[Alarm]:
        """Evaluate the alarm rules for ``rs``: the alarms newly raised (recorded as live events and
        passed to the alarm command)."""
        if rs.deleted:
            return []
        facts = self._facts(rs, now)
        rs.conds = evaluate(facts, self.ctx.settings, now)
        new = self.book.update(rs.key, rs.conds, now)
        for a in new:
            self.ctx.events.add(alarm_event(a, self.ctx.events.next_sub()))
            self.alarm_cmd.fire(
                {
                    **a.model_dump(),
                    "run_id": rs.info.run_id,
                    "task_id": rs.info.task_id,
                    "host": rs.loc.host,
                    "status": rs.status,
                    "run_dir": str(rs.task_dir),
                }
            )
        return new

    # ================================================================== snapshots
    def live_run(self, rs: RunState, now: float) -> LiveRun:
        row = rs.row
        info = rs.info
        started = info.started_at if info.started_at is not None else row.get("started_at")
        final = info.final or {}
        if rs.status == "finished":
            end = info.ended_at or row.get("ended_at")
            if end is None and started is not None and isinstance(final.get("runtime_seconds"), (int, float)):
                end = started + final["runtime_seconds"]
        elif rs.status in ("aborted", "gone"):
            # its own last record, before the files' mtimes: a copied or freshly cloned tree has
            # every mtime at copy time (an aborted 7-minute run read 10 h of elapsed)
            end = (None if self.harness_ended(rs, now) else rs.container_ended_t) or last_event_t(rs)
            end = end or rs.last_activity_t  # (a crash before the agent: its log's last record, as offline)
        else:
            end = now
        elapsed = (end - started) if (started is not None and end is not None) else None
        score_task = bool(row.get("score_task"))
        best_display = display_value(row.get("best_score"), row.get("best_pass_rate"), score_task)
        toks = sum(
            int(row.get(k) or 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
        ) + sum(rs.tok_delta)
        cost = row.get("cost_usd") if row.get("cost_usd") is not None else row.get("stated_cost_usd")
        if rs.cost_delta:
            cost = (cost or 0.0) + rs.cost_delta
        infra = bool(rs.error_times)  # ERROR-level records only (not " - ERROR - " quoted inside other lines)
        flags: list[str] = []
        if infra:
            flags.append("infra")
        c = rs.container
        if c is not None:
            if c.oom_killed:
                flags.append("oom")
            elif c.state in ("exited", "dead", "gone") and rs.status != "finished" and rs.operator_action:
                flags.append("stopped" if rs.operator_action == "stop" else "killed")
            elif c.state in ("exited", "dead") and rs.status != "finished" and rs.ending_since is None:
                # (after "Agent finished" the harness kills its container: exit 137 there is a normal
                # end, told from an OOM kill by the engine's OOMKilled state above, never by the code)
                flags.append(f"exit:{c.exit_code}" if c.exit_code is not None else "exited")
        if rs.status == "gone" and not rs.operator_action and rs.ending_since is None:
            flags.append("gone")
        if rs.deleted:
            flags.append("deleted")
        if elapsed is not None and info.timeout_s and elapsed > info.timeout_s and rs.status in ("running", "grading"):
            flags.append("over_budget")
        active, keys = [], []
        for cond in rs.conds:
            keys.append(cond.key)
            if cond.rule not in active:
                active.append(cond.rule)
        # acknowledged = the newest alarm of the condition's episode was acknowledged (as the banner counts)
        acked = (
            {
                k
                for k, a in newest_per_key(self.book.history.get(rs.key, [])).items()
                if k in keys and a.acked_at is not None
            }
            if keys
            else set()
        )
        for r in active:
            flags.append(f"ack:{r}" if all(cd.key in acked for cd in rs.conds if cd.rule == r) else f"alarm:{r}")
        last_ev = last_event_t(rs)
        grading_rounds = sorted(n for n, rd in rs.rounds.items() if rd.in_flight)
        resume_count = info.resume_count if (rs.finished and info.resume_count is not None) else len(rs.resume_times)
        return live_run_from(
            dict(
                run_key=rs.key,
                host=rs.loc.host,
                run_id=info.run_id,
                task_id=info.task_id,
                run_dir=str(rs.task_dir),
                agent=info.agent or row.get("agent"),
                model=info.model or row.get("model"),
                status=rs.status,
                infra_error=infra,
                flags=flags,
                started_at=started,
                elapsed_s=elapsed,
                budget_s=info.timeout_s,
                best_display=best_display,
                best_round=row.get("best_round"),
                score_task=score_task,
                agent_submissions=int(row.get("agent_submissions") or 0),
                auto_submissions=int(row.get("auto_submissions") or 0),
                last_event_at=last_ev,
                tokens=toks,
                cost_usd=cost,
                cpu_percent=c.cpu_percent if c is not None and c.state == "running" else None,
                mem_bytes=c.mem_bytes if c is not None and c.state == "running" else None,
                container=c,
                judges_running=len(grading_judges(rs)),
                alarms=list(self.book.history.get(rs.key, []))[-20:],
                message=rs.message if (rs.message_sticky or now - rs.message_t < MESSAGE_TTL_S) else None,
                best_pass_rate=row.get("best_pass_rate"),
                best_score=row.get("best_score"),
                best_score_0_100=row.get("best_score_0_100"),
                game_sessions=int(row.get("game_sessions") or 0),
                n_events=int(row.get("n_events") or 0) + rs.new_events,
                resume_count=int(resume_count or 0),
                pending_tool_calls=len(rs.pending),
                last_growth_at=rs.last_growth_t,
                judges=list(rs.judges),
                games_running=sum(1 for g in rs.games if g.state == "running"),
                grading_rounds=grading_rounds,
                queued_rounds=rs.judge_in_flight()[1],
                judge_pending=self.judge_queue.pending_for(rs.task_dir, now)
                if rs.status in ("running", "grading") and not rs.deleted
                else None,
                active_alarms=active,
                deleted=rs.deleted,
                active_keys=keys,
                operator_action=rs.operator_action,
                judge_says=judge_line(
                    rs.history,
                    row.get("best_round"),
                    now,
                    assumed_policy=(
                        f"{row.get('selection')}/{row.get('score_direction')}" if rs.task.assumed else None
                    ),
                ),
                cluster=c.host if c is not None and c.phase is not None else None,
                host_state=(hs := self.host_state(rs.loc.run_key))
                and hs[0]
                or (self.containers.cluster.state_of(c.host) if c is not None and c.phase is not None else None),
                host_rtt_s=hs[1] if hs else None,
                sforge_runtime_s=sforge_runtime_s(info.final),
            )
        )

    def host_state(self, run_key: str) -> Optional[tuple]:
        name = self.ctx.root_host.get(run_key)
        if name is None or self.host_state_of is None:
            return None
        try:
            return self.host_state_of(name)
        except Exception:  # noqa: BLE001 - no host state is shown as none
            note_swallowed("no host state is shown as none")
            return None


def judge_line(view: Any, files_best: Optional[str], now: float, assumed_policy: Optional[str] = None) -> Optional[str]:
    """The judge's own view of a run in one line (its /history: what it is grading now, what it has
    graded, its best), beside what the files say when they disagree; None without a poll.
    ``assumed_policy`` (``"selection/direction"``, set when no task JSON gave the policy): the line
    says whether that policy reproduces the judge's best (the judge knows the task's real policy)."""
    if view is None:
        return None
    if not view.ok:
        return f"judge: {view.message or 'not answering'}"
    parts = [f"judge ({fmt_age(now - view.fetched_at)} ago):"]
    grading = [r for r in view.running if r not in view.queued]
    if grading:
        parts.append("grading " + ", ".join(grading[:3]) + ("…" if len(grading) > 3 else ""))
    if view.queued:
        parts.append("queued " + ", ".join(view.queued[:3]) + ("…" if len(view.queued) > 3 else ""))
    parts.append(f"{view.agent_submissions} agent + {view.auto_submissions} auto graded")
    if view.best_round:
        parts.append(f"best {view.best_round}")
        if files_best and files_best != view.best_round:
            parts.append(f"(the files say {files_best})")
        if assumed_policy:
            parts.append(
                f"assumed policy {assumed_policy} "
                + ("agrees with the judge" if files_best == view.best_round else "does NOT reproduce the judge's best")
            )
    return " ".join(parts[:1]) + " " + " · ".join(parts[1:])
