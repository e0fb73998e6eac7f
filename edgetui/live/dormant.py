"""Runs that cost nothing while watched: finished (or aborted) runs *asleep* (a part of
:class:`edgetui.live.supervisor.Supervisor`; core: no Textual).

A run asleep has no tail sources, no file checks, statuses, alarms or snapshot work per refresh:
it is shown from its ``runs`` row, one :class:`~edgetui.live.model.LiveRun` built when it fell
asleep. A run falls asleep

* at discovery, when the database already holds it as ``finished`` or ``aborted`` and the
  directory's *tree signature* (:mod:`edgetui.hosts.signature`: size, ``mtime_ns`` and inode of
  every file it holds) equals the one recorded after its last ingest or watch (``source_cursors``
  row ``<tree>``): the runs rows of all such runs are read in one query, nothing of their files is
  read;
* while watched, once it is finished or aborted, fully recomputed, with nothing pending (no
  grading in flight, no container running) and quiet for ``dormant_after_s``: its signature is
  taken, then one more refresh checks every file of it (whole files, submissions, tails); if that
  refresh found nothing new the signature is recorded and the run sleeps.

A run asleep is woken (read again through the ordinary path, from its stored cursors) by a file
watcher event under its task directory, by its cheap check (the stats of its directory,
``submissions/`` and its logs and result files, every ``dormant_check_s`` while the file watcher
runs, every ``dormant_poll_s`` without it), by its full signature differing (each asleep run's
is taken again every ``dormant_full_s``, a few runs per refresh), or by a work container of its
name running on the local engine. Every stat goes through a :class:`~edgetui.hosts.Host`.
"""

from __future__ import annotations

import json
import os
from collections import deque
from typing import Optional

from edgetui.hosts.local import LocalHost
from edgetui.hosts.signature import TREE_SOURCE, in_image, tree_signature
from edgetui.parsers import sforge_dir as sd
from edgetui.records import RunInfo
from edgetui.record.changed_runs import signature_salt
from edgetui.hosts.docker_watch import work_names
from edgetui.live.containers import ContainerJoin, grading_judges
from edgetui.live.model import LiveRun
from edgetui.live.register import RunRegistry
from edgetui.live.run_rows import AGG_COLS, ROW_COLS, RunRows
from edgetui.live.watch_context import WatchContext
from edgetui.live.run_state import RunState, TRANSCRIPT, RUN_LOG, TICKS, FULL_CHECK_S

from edgetui.events import one_line

#: recorded statuses a run may sleep in (a run recorded as running is always watched: its status
#: depends on the clock)
SLEEP_STATUSES = ("finished", "aborted")
#: files of a task dir whose stats the cheap check compares (besides the task dir and submissions/)
CHEAP_FILES = (TRANSCRIPT, RUN_LOG, TICKS, "final_result.json", "evolve_state.json", "started_at")
_ACTIVE_STATES = ("running", "created", "restarting", "paused")

#: columns of the runs row read for a run asleep: those :func:`edgetui.live.run_rows.load_rows` reads
#: (then :data:`_INFO_COLS`, what its :class:`~edgetui.records.RunInfo` needs)
_ROW_COLS = ROW_COLS + AGG_COLS
_INFO_COLS = (
    "status",
    "is_sample",
    "infra_error",
    "final",
    "timeout_s",
    "eval_interval_s",
    "utc_offset_s",
    "agent_format",
    "layout",
    "run_dir",
)


class DormantRuns:
    """The runs asleep (``dormant``) of the runs found under the roots of ``ctx``: put to sleep at
    discovery or once quiet, woken through ``registry``; shown from the LiveRun ``rows`` built."""

    def __init__(
        self,
        ctx: WatchContext,
        registry: RunRegistry,
        rows: RunRows,
        containers: ContainerJoin,
        local_host: LocalHost,
        image_roots: tuple[str, ...],
        sleep: bool,
    ):
        self.ctx = ctx
        self.registry = registry
        self.rows = rows
        self.containers = containers
        self.local_host = local_host
        #: the roots given with their host (images of remote roots): their runs are signed without inodes
        self.image_roots = image_roots
        #: runs may sleep (``Supervisor(sleep=False)``: every run is watched in full, as before)
        self.sleep_runs = sleep
        self.dormant: dict[str, RunState] = {}  # run key -> the state of a run asleep (rs.live: its LiveRun)
        self.dirs: dict[str, str] = {}  # absolute task dir -> run key
        self.names: dict[str, str] = {}  # work container name -> run key
        #: run keys asleep the watcher saw a change under (its thread appends, refreshes pop)
        self.touched: deque[str] = deque()
        self.last_cheap = float("-inf")
        self.full_credit = 0.0
        self.full_pos = 0
        self.last_full_tick: Optional[float] = None
        self.docker_seen = -1  # DockerWatch.listings last checked for asleep runs' containers
        self.pods_seen: Optional[tuple] = None  # PodEngine.generations() last checked for asleep runs' pods
        self.changes = 0  # falls asleep + wakes (a new snapshot is due)
        self.woken = 0
        self.slept = 0

    def forget(self, run_key: str) -> bool:
        """Forget ``run_key`` if it is asleep (True), else False."""
        rs = self.dormant.pop(run_key, None)
        if rs is None:
            return False
        self._unindex_asleep(rs)
        self.changes += 1
        return True

    # ------------------------------------------------------------------ helpers
    def _cheap_stats(self, td: str) -> tuple:
        """The stats the cheap check compares: the task dir's and ``submissions/``'s mtime and inode,
        each :data:`CHEAP_FILES` file's size, mtime and inode (None where missing)."""
        host = self.local_host
        out: list[Optional[tuple[int, ...]]] = []
        for p in (td, os.path.join(td, "submissions")):
            e = host.stat(p)
            out.append(None if e is None else (e.mtime_ns, e.inode))
        for name in CHEAP_FILES:
            e = host.stat(os.path.join(td, name))
            out.append(None if e is None else (e.size, e.mtime_ns, e.inode))
        return tuple(out)

    def _signature(self, td: str, task_id: str, is_sample: bool):
        salt = signature_salt(self.ctx.tasks, task_id, is_sample)
        return tree_signature(self.local_host, td, salt, in_image(td, self.image_roots))

    def _index_asleep(self, rs: RunState) -> None:
        self.dirs[os.path.abspath(str(rs.task_dir))] = rs.key
        for n in work_names(rs.info.task_id, rs.info.run_id):
            self.names[n] = rs.key

    def _unindex_asleep(self, rs: RunState) -> None:
        self.dirs.pop(os.path.abspath(str(rs.task_dir)), None)
        for n in work_names(rs.info.task_id, rs.info.run_id):
            if self.names.get(n) == rs.key:
                self.names.pop(n, None)

    def owner(self, path: str) -> Optional[str]:
        """The run key asleep whose task dir holds ``path`` (from the watcher's thread), else None."""
        dirs = self.dirs
        if not dirs:
            return None
        p = os.path.abspath(path)
        for _ in range(8):
            k = dirs.get(p)
            if k is not None:
                return k
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
        return None

    # ------------------------------------------------------------------ falling asleep at discovery
    def asleep_from_records(self, locs: dict[str, sd.RunLocation], now: float) -> set[str]:
        """Of ``locs`` (runs found and not watched yet), put to sleep those recorded as finished or
        aborted whose tree signature is the recorded one; their runs rows come from one query.
        Returns their keys (the others are registered in full by the caller)."""
        if not locs or not self.sleep_runs:
            return set()
        cols = _ROW_COLS + _INFO_COLS
        sel = ", ".join(f"r.{c}" for c in cols)
        rows = self.ctx.conn.execute(
            f"SELECT r.run_key, c.generation, {sel} FROM runs r JOIN source_cursors c "
            "ON c.run_key = r.run_key AND c.source = ? WHERE r.status IN (?, ?)",
            [TREE_SOURCE, *SLEEP_STATUSES],
        ).fetchall()
        out: set[str] = set()
        for key, digest, *vals in rows:
            loc = locs.get(key)
            if loc is None:
                continue
            d = dict(zip(cols, vals))
            td = str(loc.task_dir)
            cheap = self._cheap_stats(td)  # before the signature: a change after it is seen by the check
            sig = self._signature(td, loc.task_id, bool(d["is_sample"]))
            if sig is None or sig.digest != digest:
                continue
            try:
                final = json.loads(d["final"]) if d["final"] else None
            except ValueError:
                final = None
            info = RunInfo(
                host=loc.host,
                run_id=loc.run_id,
                task_id=loc.task_id,
                run_dir=td,
                layout=loc.layout,
                agent=d["agent"],
                model=d["model"],
                agent_format=d["agent_format"],
                timeout_s=d["timeout_s"],
                eval_interval_s=d["eval_interval_s"],
                started_at=d["started_at"],
                ended_at=d["ended_at"],
                utc_offset_s=d["utc_offset_s"],
                final=final,
                is_sample=bool(d["is_sample"]),
                infra_error=bool(d["infra_error"]),
                resume_count=d["resume_count"],
            )
            rs = RunState(key=key, loc=loc, info=info, task=sd.task_info(loc.task_id, self.ctx.tasks), first_seen=now)
            rs.row = {c: d[c] for c in _ROW_COLS}
            rs.row_read_t = now
            rs.status = rs.recorded_status = d["status"]
            rs.recorded_infra = bool(d["infra_error"])
            mt = [c[1] / 1e9 for c in cheap[2:5] if c is not None]  # the logs' mtimes: the run's last activity
            rs.last_activity_t = (
                min(now, max(mt + ([info.started_at] if info.started_at else []))) if (mt or info.started_at) else None
            )
            rs.dirty_files = False
            self._put_to_sleep(rs, sig.digest, cheap, now)
            out.add(key)
        if out:
            self.last_cheap = now  # their cheap stats were just taken
        return out

    def _put_to_sleep(self, rs: RunState, digest: str, cheap: Optional[tuple], now: float) -> None:
        rs.sleep_digest, rs.sleep_cheap = digest, cheap
        rs.sleep_sig = None
        live = self.rows.live_run(rs, now)
        row = rs.row
        if not rs.finished and row.get("resume_count") is not None:  # (a run watched counts its resumes live)
            live.resume_count = max(live.resume_count, int(row["resume_count"] or 0))
        if rs.recorded_infra and not live.infra_error:  # an infra error recorded (its lines are not re-read)
            live.infra_error = True
            live.flags = ["infra", *live.flags]
        rs.live = live
        rs.live_host_state = live.host_state
        self.dormant[rs.key] = rs
        self._index_asleep(rs)
        self.changes += 1

    # ------------------------------------------------------------------ falling asleep while watched
    def _may_sleep(self, rs: RunState, now: float) -> bool:
        if (
            rs.deleted
            or rs.status not in SLEEP_STATUSES
            or rs.dirty_files
            or rs.dirty_finalize
            or rs.fmt_pending
            or rs.last_full_finalize <= 0
            or rs.recorded_status != rs.status
        ):
            return False
        if any(rd.in_flight for rd in rs.rounds.values()) or grading_judges(rs):
            return False
        c = rs.container
        if c is not None and c.state in _ACTIVE_STATES:
            return False
        quiet_since = max(x for x in (rs.last_activity_t, rs.last_finalize, rs.first_seen) if x is not None)
        return now - quiet_since >= self.ctx.settings.dormant_after_s

    def _sleep_mark(self, rs: RunState) -> tuple:
        return (
            rs.new_events,
            rs.last_event_t,
            rs.last_activity_t,
            rs.last_finalize,
            len(rs.rounds),
            tuple(sorted(rs.file_sigs.items(), key=lambda kv: kv[0])),
        )

    def settle_sleepers(self, now: float) -> None:
        """Runs quiet long enough: take their signature (phase 1), or, one fully checked refresh later
        with nothing new, record it and put them to sleep (phase 2)."""
        if not self.sleep_runs:
            return
        for rs in list(self.ctx.runs.values()):
            if rs.sleep_sig is None:
                if self._may_sleep(rs, now):
                    td = str(rs.task_dir)
                    cheap = self._cheap_stats(td)
                    sig = self._signature(td, rs.info.task_id, self._is_sample(rs))
                    if sig is not None:
                        rs.sleep_sig, rs.sleep_cheap, rs.sleep_t = sig, cheap, now
                        rs.sleep_mark = self._sleep_mark(rs)
                        rs.last_full_check = now - FULL_CHECK_S - 1.0  # the next refresh checks every file
                continue
            if not self._may_sleep(rs, now) or self._sleep_mark(rs) != rs.sleep_mark:
                rs.sleep_sig = None  # something moved: try again once quiet
                continue
            if rs.last_full_check <= rs.sleep_t:
                continue  # the full check has not run yet
            sig = rs.sleep_sig
            srcs = list(rs.sources.values())
            try:
                self.ctx.tailer.flush(srcs, now)
                self.ctx.rec.set_cursor(rs.key, TREE_SOURCE, **sig.cursor(str(rs.task_dir)))
            except Exception as e:  # noqa: BLE001 - stays awake; tried again once quiet
                self.ctx.note(one_line(f"{rs.key}: could not record its tree signature: {e}", 200))
                rs.sleep_sig = None
                continue
            for src in srcs:
                self.ctx.tailer.release(src)
            rs.sources = {}
            rs.sub_cache, rs.rec_cache, rs.subs = {}, {}, []
            del self.ctx.runs[rs.key]
            self._put_to_sleep(rs, sig.digest, rs.sleep_cheap, now)
            self.slept += 1

    def _is_sample(self, rs: RunState) -> bool:
        r = self.ctx.conn.execute("SELECT is_sample FROM runs WHERE run_key = ?", [rs.key]).fetchall()
        return bool(r and r[0][0])

    # ------------------------------------------------------------------ waking
    def wake_run(self, key: str, now: float) -> None:
        """Watch ``key`` in full again (its cursors resume where it stopped)."""
        rs = self.dormant.pop(key, None)
        if rs is None:
            return
        self._unindex_asleep(rs)
        self.changes += 1
        self.woken += 1
        if os.path.isdir(rs.task_dir):
            try:
                self.registry.register(rs.loc, now)
                return
            except Exception as e:  # noqa: BLE001 - shown as it was; its check says what is wrong
                self.ctx.note(one_line(f"{rs.loc.task_dir}: could not watch: {type(e).__name__}: {e}", 240))
        rs.sleep_sig = None
        rs.dirty_files = False
        self.ctx.runs[key] = rs  # its directory is gone: the file check marks it deleted

    def check_asleep(self, now: float, watching: bool) -> None:
        """Wake the runs asleep that the watcher, their cheap check, their full signature or the
        engine say changed; a few full signatures per refresh (each run every ``dormant_full_s``)."""
        touched = self.touched
        while touched:
            self.wake_run(touched.popleft(), now)
        if not self.dormant:
            self.last_full_tick = now
            return
        s = self.ctx.settings
        period = s.dormant_check_s if watching else s.dormant_poll_s
        if now - self.last_cheap >= period:
            self.last_cheap = now
            for key, rs in list(self.dormant.items()):
                if self._cheap_stats(str(rs.task_dir)) != rs.sleep_cheap:
                    self.wake_run(key, now)
        last = self.last_full_tick if self.last_full_tick is not None else now
        self.last_full_tick = now
        if s.dormant_full_s > 0 and self.dormant:
            self.full_credit = min(
                self.full_credit + len(self.dormant) * (now - last) / s.dormant_full_s, float(len(self.dormant))
            )
            keys = list(self.dormant)
            while self.full_credit >= 1.0 and keys:
                self.full_credit -= 1.0
                self.full_pos = (self.full_pos + 1) % len(keys)
                rs = self.dormant[keys[self.full_pos]]
                sig = self._signature(str(rs.task_dir), rs.info.task_id, bool(rs.info.is_sample))
                if sig is None or sig.digest != rs.sleep_digest:
                    self.wake_run(rs.key, now)
                    keys = list(self.dormant)

    def wake_by_containers(self, now: float) -> None:
        """A work container of a run asleep is running (a resume, a re-run in place): wake it."""
        dw = self.containers.docker
        if not self.names or dw is None or dw.listings == self.docker_seen:
            return
        self.docker_seen = dw.listings
        for c in list(dw.containers.values()):
            if c.role == "work" and c.state in _ACTIVE_STATES:
                key = self.names.get(c.name)
                if key is not None and self.dormant[key].loc.host == self.ctx.host:
                    self.wake_run(key, now)

    def wake_by_pods(self, now: float) -> None:
        """A work pod of a run asleep is running (SForge's pods on Kubernetes): wake it. Looked at
        when the pods changed only."""
        cl = self.containers.cluster
        if cl is None or not self.dormant:
            return
        gen = cl.generations()
        if gen == self.pods_seen:
            return
        self.pods_seen = gen
        for key, rs in list(self.dormant.items()):
            c = cl.work_container(rs.info.task_id, rs.info.run_id)
            if c is not None and c.state in _ACTIVE_STATES and key in self.dormant:
                self.wake_run(key, now)

    def snapshot(self) -> list[LiveRun]:
        """The LiveRuns of the runs asleep (a remote image's run gets its host's state of now)."""
        out = []
        for rs in self.dormant.values():
            lr = rs.live
            if self.rows.host_state_of is not None and rs.key in self.ctx.root_host:
                hs = self.rows.host_state(rs.key)
                st = hs[0] if hs else None
                if st != rs.live_host_state:
                    lr = rs.live = lr.model_copy(update={"host_state": st, "host_rtt_s": hs[1] if hs else None})
                    rs.live_host_state = st
            out.append(lr)
        return out
