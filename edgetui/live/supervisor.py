"""Live supervision of SForge runs on this host (core: no Textual).

:class:`Supervisor` watches one or more runs roots and the local Docker engine
and keeps the database current while runs are going:

* **runs asleep**: finished and aborted runs unchanged since recorded cost nothing until a change
  wakes them (:mod:`edgetui.live.dormant`); changes come from the file watcher, or stat polling
  when it cannot run (:mod:`edgetui.live.watching`);
* **discovery** of run directories appearing under the roots (flat
  ``<root>/<run_id>/<task>`` and machine-grouped ``<root>/<ip>/<run_id>/<task>``
  layouts, :func:`edgetui.parsers.sforge_dir.discover`), at most every
  ``discovery_interval_s``;
* **tailing** of ``agent_output.txt``, ``run_agent.log`` and
  ``auto_eval_ticks.log`` of every run by byte offset from the recorder's
  cursors (:mod:`edgetui.live.tail`: one transaction per refresh for all runs,
  half-written lines wait, truncated/replaced files become new generations,
  arriving lines are stamped ``observed``);
* **submissions**: new ``submissions/<round>/`` folders and their
  ``report.json`` (and the run's other whole files: ``final_result.json``,
  ``started_at``, ``evolve_state.json``, histories) re-run the file part of
  :func:`edgetui.record.ingest.ingest_run` for that run, then
  :func:`~edgetui.record.ingest.finalize_run` (best-so-far, alignment, aggregates);
  runs that only grew are finalized at most every ``finalize_interval_s``; a graded round is
  timed when its result was known — its judge log's ``Result:`` line (else the report's mtime),
  then, when ``evolve_state.json`` is written at the end, its ``at``: the same event, re-timed
  under its id (:func:`edgetui.parsers.sforge_dir.result_known_time`,
  :meth:`edgetui.record.recorder.Recorder.replace_file_events`), so a run watched live ends with the
  times of an offline ingest;
* **containers**: the engine's container events, a listing when they say something changed
  (:class:`~edgetui.hosts.docker_watch.DockerWatch`); work containers are
  joined by name, judge containers through the submission folder's
  ``run_instance.log`` ("Judge container started: <id>"), ``report.json``
  ``submission_id`` or the auto-eval tick's submission id (never by task name
  alone), game containers by session id (or the only game run of that task);
  state changes are recorded as ``container_state`` events, CPU/memory samples
  as ``resource_sample`` events (observed times);
* **judge history** (optional ``judge_url``), **statuses**, **alarms**
  (:mod:`edgetui.live.alarms`, recorded as ``alarm`` events and passed to the
  ``on_alarm_cmd``).

Nothing here raises to the caller: problems become one-line
:attr:`Supervisor.messages` or a run's :attr:`LiveRun.message`. The engine
going away, a judge that does not answer, a run directory deleted while
watched, a transcript truncated — the supervisor keeps going and nothing
recorded is lost.

Threading: the supervisor uses its own cursor of ``conn`` (DuckDB
connections are not shared across threads); views reading the database
from another thread should use their own ``conn.cursor()`` too.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from edgetui.error_log import note_swallowed
from edgetui.events import Event, one_line
from edgetui.garbage_collector import COLLECTOR
from edgetui.hosts.local import LocalHost
from edgetui.hosts.signature import image_prefixes
from edgetui.parsers.run_secrets import run_secrets
from edgetui.record.prices import load_price_file
from edgetui.parsers import sforge_dir as sd
from edgetui.record.recorder import Recorder
from edgetui.live.alarms import AlarmBook, AlarmCommand, AlarmSettings, ack_event
from edgetui.hosts.docker_watch import DockerWatch
from edgetui.live.judge import JudgePoller, read_admin_secret, secret_candidates
from edgetui.hosts.container_info import ContainerInfo
from edgetui.live.model import Alarm, LiveRun
from edgetui.live.tail import Tailer, TailResult, TailSource, settle
from edgetui.live.run_state import (
    WATCHED_DISCOVERY_S,
    kind_of,
    set_message,
    RunState,
    TRANSCRIPT,
    RUN_LOG,
    TICKS,
)
from edgetui.live.containers import POD_LOG, ContainerJoin
from edgetui.live.dormant import DormantRuns
from edgetui.live.register import RunRegistry
from edgetui.live.run_files import RunFiles
from edgetui.live.run_rows import HostStateOf, RunRows, judge_line  # noqa: F401  (judge_line: public here before the split)
from edgetui.live.watch_context import LiveEvents, Notes, WatchContext
from edgetui.live.watching import FileWatch

from edgetui.record.forget_and_tag import forgotten
from edgetui.record.forget_and_tag import apply_request
from edgetui.live.judge_queue import PendingCount, refused_by_full_judge

if TYPE_CHECKING:  # (the team sync's stack, ADBC, loads only when a team record is configured)
    from edgetui.live.team_push import TeamPush


#: this many runs registered in one refresh are shown before any of their lines is read
FIRST_SHOW_RUNS = 20
#: file refreshes and finalizes wait at most this long for a catch-up with existing files to end
CATCHUP_DEFER_S = 30.0


class Supervisor:
    """Watches runs roots + the local engine; :meth:`poll_once` is one refresh.

    ``docker_client``: ``"auto"`` (``docker.from_env()``; an unreachable engine
    is a state message, retried), a ``docker.DockerClient``, or ``None`` (files
    only). ``judge_url`` enables /history polling. ``clock`` gives "now" (epoch
    UTC; tests inject one). ``host`` names this machine in run keys. A runs root may be given as
    ``(path, host_name)``: its runs are keyed by that host (the image of a remote root,
    :mod:`edgetui.hosts.feed`); the local engine's containers are joined to this machine's runs only.
    ``host_lines``, when set, gives lines for the state messages (remote hosts' states).
    ``sleep``: finished and aborted runs fall asleep and cost nothing until a change wakes them
    (:mod:`edgetui.live.dormant`); ``False`` watches every run in full.

    The work is done by the parts it owns, each with its own state (docs/live.md, "How the
    supervisor is built"): :attr:`containers`, :attr:`rows`, :attr:`files`, :attr:`registry`,
    :attr:`sleepers` and :attr:`watch`, sharing :attr:`ctx`.
    """

    def __init__(
        self,
        conn,
        runs_dirs: Iterable[Path | str | tuple[Path | str, str]],
        *,
        docker_client: Any = "auto",
        judge_url: Optional[str] = None,
        settings: Optional[AlarmSettings] = None,
        on_alarm_cmd: Optional[str] = None,
        clock: Callable[[], float] = time.time,
        host: str = "local",
        tasks_dir: Optional[Path | str] = None,
        prices: Optional[Path] = None,
        sleep: bool = True,
    ):
        self.conn = conn.cursor()  # our own connection: the supervisor may run in a worker thread
        self.settings = settings or AlarmSettings()
        if self.settings.duckdb_threads > 0:  # a setting of the database (shared with the views' cursors)
            self.conn.execute(f"SET threads = {int(self.settings.duckdb_threads)}")
        self.rec = Recorder(self.conn)
        #: called (from the refresh's thread) with the run keys whose new events were just committed,
        #: before the rest of the refresh; the snapshot callback comes at its end
        self.on_events: Optional[Callable[[set[str]], None]] = None
        self.roots: list[Path] = []
        self._root_host: dict[Path, str] = {}
        for r in runs_dirs:
            if isinstance(r, tuple):
                path = Path(r[0]).expanduser()
                self._root_host[path] = r[1]
            else:
                path = Path(r).expanduser()
            self.roots.append(path)
        #: the roots given with their host (``(path, host)``: a feed's images of a remote host's
        #: roots, edgetui.hosts.feed.RemoteFeed.roots): their runs are signed without inodes
        self.image_roots = image_prefixes(self._root_host)
        self.host_lines: Optional[Callable[[], list[str]]] = None
        self.clock = clock
        self.host = host
        self.messages: list[str] = []
        tdir = sd.resolve_tasks_dir(tasks_dir)
        terr: list[str] = []
        tasks = sd.load_tasks(tdir, terr) if tdir else {}
        self.tailer = Tailer(self.rec)
        self.ctx = WatchContext(
            conn=self.conn,
            rec=self.rec,
            tailer=self.tailer,
            settings=self.settings,
            clock=clock,
            host=host,
            tasks=tasks,
            notes=Notes(clock, self.rec.secrets),
            events=LiveEvents(),
        )
        #: the runs watched in full (awake), by run key (the runs asleep: :attr:`dormant`)
        self.runs: dict[str, RunState] = self.ctx.runs
        for m in terr:
            self._note(m)
        try:
            self.rec.load_prices(load_price_file(prices))
        except Exception as e:  # noqa: BLE001 - a bad price file: costs stay empty
            self._note(one_line(f"price table not loaded: {e}", 200))
        self._wake = threading.Event()
        docker = (
            DockerWatch(
                docker_client,
                host=host,
                retry_s=self.settings.docker_retry_s,
                stats_interval_s=self.settings.stats_interval_s,
                clock=clock,
                list_interval_s=self.settings.docker_list_s,
                events_window_s=self.settings.docker_events_window_s,
                on_change=self._wake.set,
            )
            if docker_client is not None
            else None
        )
        judge: Optional[JudgePoller] = None
        if judge_url:
            secret = read_admin_secret(secret_candidates(self.roots))
            self.rec.add_secret(secret)
            judge = JudgePoller(
                judge_url,
                secret,
                interval_s=self.settings.judge_interval_s,
                timeout_s=self.settings.judge_timeout_s,
                clock=clock,
            )
        self.judge_queue = PendingCount(max(1.0, self.settings.discovery_interval_s))  # judge-pending/ counts
        self.book = AlarmBook()
        self.alarm_cmd = AlarmCommand(on_alarm_cmd, secrets=self.rec.secrets)
        self._lock = threading.RLock()
        local_host = LocalHost()
        # the parts, each with its own state; what one needs of another is given to it here
        self.containers = ContainerJoin(self.ctx, docker, judge, self._wake.set)
        self.rows = RunRows(self.ctx, self.containers, self.book, self.alarm_cmd, self.judge_queue, clock())
        self.files = RunFiles(self.ctx, self.containers, self._forget_parents)
        self.registry = RunRegistry(self.ctx, self.files, self.book)
        self.sleepers = DormantRuns(
            self.ctx, self.registry, self.rows, self.containers, local_host, self.image_roots, sleep
        )
        self.watch = FileWatch(
            self.roots, local_host, self.settings, self.sleepers, self._known, self._wake.set, self._note, self._lock
        )
        self.last_alarms: list[Alarm] = []
        self.last_runs: list[LiveRun] = []
        self._last_discovery = float("-inf")
        self._last_docker = float("-inf")
        self._polls = 0
        self.behind = False  # a catch-up did not finish in the last refresh
        self.last_tail: Optional[TailResult] = None  # of the last refresh (diagnostics)
        self._failed = False
        self._closed = False
        self._price_rows: Optional[list] = None
        self._price_cache: dict[str, Optional[tuple]] = {}
        self._last_rows = float("-inf")
        self._known_dirs: frozenset[str] = frozenset()  # the task dirs of the watched runs (str paths)
        #: the directories above them up to their root (str paths), of runs not deleted: see _known
        self._known_parents: frozenset[str] = frozenset()
        self._gc_frozen = False
        #: the snapshot changed in the last refresh (False: nothing awake, nothing woke or slept)
        self.snapshot_changed = True
        self._snap_sig: Optional[tuple] = None
        self._behind_since: Optional[float] = None  # when the current catch-up began
        self._snap_asleep: Optional[tuple] = None  # (dormant_changes, runs awake) at the last snapshot
        #: the continuous sync with the team record, when one is configured (:meth:`start_team_push`)
        self.team_push: Optional[TeamPush] = None

    # ================================================================== the parts' state, by its old names
    @property
    def docker(self) -> Optional[DockerWatch]:
        return self.containers.docker

    @property
    def judge(self) -> Optional[JudgePoller]:
        return self.containers.judge

    @property
    def engines(self) -> dict[str, Any]:
        return self.containers.engines

    @property
    def judges(self) -> dict[str, JudgePoller]:
        return self.containers.judges

    @property
    def unattributed(self) -> list[ContainerInfo]:
        """Judge and game containers not joined to a run (the last refresh's)."""
        return self.containers.unattributed

    @property
    def dormant(self) -> dict[str, RunState]:
        """The runs asleep by run key (:mod:`edgetui.live.dormant`)."""
        return self.sleepers.dormant

    @property
    def dormant_changes(self) -> int:
        return self.sleepers.changes

    @property
    def watch_mode(self) -> str:
        """``"starting"``, ``"inotify"`` or ``"polling: <why>"`` (:mod:`edgetui.live.watching`)."""
        return self.watch.mode

    @property
    def notes(self) -> deque[tuple[float, str]]:
        """The last 200 notes, ``(time, line)``."""
        return self.ctx.notes.kept

    @property
    def run_root_host(self) -> dict[str, str]:
        """Run key -> the host of the root its run was found under (remote hosts' images only)."""
        return self.ctx.root_host

    @property
    def watch_started(self) -> float:
        return self.rows.watch_started

    @property
    def host_state_of(self) -> Optional[HostStateOf]:
        """(HostState.kind, round trip in seconds or None) of a remote host by name, for each run of its roots."""
        return self.rows.host_state_of

    @host_state_of.setter
    def host_state_of(self, fn: Optional[HostStateOf]) -> None:
        self.rows.host_state_of = fn

    def add_engine(self, host_name: str, engine: Any) -> None:
        """Join the containers of ``engine`` to the runs of ``host_name``'s roots
        (:meth:`edgetui.live.containers.ContainerJoin.add_engine`)."""
        self.containers.add_engine(host_name, engine)

    def add_cluster(self, engine: Any) -> None:
        """Join SForge's pods watched by ``engine`` (:class:`edgetui.hosts.pod_watch.PodEngine`)
        to the pod-backed runs (:meth:`edgetui.live.containers.ContainerJoin.add_cluster`); closed
        with the supervisor."""
        self.containers.add_cluster(engine)

    @property
    def cluster(self) -> Any:
        """The pods' engine (:meth:`add_cluster`), or None."""
        return self.containers.cluster

    def add_judge(self, host_name: str, poller: JudgePoller) -> None:
        """Poll the runs of ``host_name``'s roots with ``poller``
        (:meth:`edgetui.live.containers.ContainerJoin.add_judge`)."""
        self.containers.add_judge(host_name, poller)

    def stop_container(self, name_or_id: str, timeout: int = 10) -> str:
        """:meth:`edgetui.live.containers.ContainerJoin.stop_container` (never raises)."""
        return self.containers.stop_container(name_or_id, timeout)

    def kill_container(self, name_or_id: str) -> str:
        """:meth:`edgetui.live.containers.ContainerJoin.kill_container` (never raises)."""
        return self.containers.kill_container(name_or_id)

    def shell_command(self, container: str) -> list[str]:
        """:meth:`edgetui.live.containers.ContainerJoin.shell_command`."""
        return self.containers.shell_command(container)

    def wake(self) -> None:
        """Start the next refresh now (from any thread)."""
        self._wake.set()

    # ================================================================== public API
    def poll_once(self) -> list[LiveRun]:
        """One refresh: discovery, tails, submissions, containers, judge, statuses, alarms."""
        with self._lock:
            self.ctx.notes.this_refresh = []
            now = self.clock()
            try:
                self._poll(now)
            except Exception as e:  # never die; one line
                if os.environ.get("EDGETUI_DEBUG"):
                    raise
                self._note(one_line(f"refresh failed: {type(e).__name__}: {e}", 240))
                self._failed = True
            else:
                self._failed = False
            self._polls += 1
            self.messages = self._state_messages() + self.ctx.notes.this_refresh
            sig = (self.dormant_changes, tuple(self.messages), len(self.last_runs))
            self.snapshot_changed = bool(self.runs) or bool(self.ctx.root_host) or self._failed or sig != self._snap_sig
            self._snap_sig = sig
            return self.last_runs

    def run_forever(
        self,
        interval: float = 2.0,
        stop_event: Optional[threading.Event] = None,
        on_update: Optional[Callable[[list[LiveRun]], None]] = None,
        *,
        poll: bool = False,
        min_interval: Optional[float] = None,
        poll_delay_s: float = 1.0,
    ) -> None:
        """Refresh until ``stop_event`` is set: every ``interval`` seconds, earlier when a watched file
        changes (``watchfiles``; ``poll=True``: no watcher, stat polling with adaptive intervals,
        for network mounts where inotify sees nothing; so does a watcher whose limit is reached:
        :mod:`edgetui.live.watching`), never more often than ``min_interval``. ``on_update`` gets
        each refresh's runs; its errors are noted. Never raises (errors become messages)."""
        stop = stop_event or threading.Event()
        if min_interval is None:
            min_interval = self.settings.min_refresh_s
        self.watch.poll_delay_s = poll_delay_s
        watcher = threading.Thread(
            target=self.watch.watch_files, args=(stop, poll, interval), daemon=True, name="edgetui-live-watch"
        )
        watcher.start()
        try:
            while not stop.is_set():
                t0 = time.monotonic()
                self._wake.clear()  # before the refresh: a change during it wakes the next one at once
                runs = self.poll_once()
                if on_update is not None and self.snapshot_changed:
                    try:
                        on_update(runs)
                    except Exception as e:  # noqa: BLE001 - a listener's failure is a note, not the supervisor's end
                        self._note(one_line(f"update callback failed: {type(e).__name__}: {e}", 200))
                if self.behind:  # catching up: continue at once
                    stop.wait(0.01)
                    continue
                if not self._gc_frozen:
                    # caught up: what was built so far (parsers, tables, caches) lives as long as the
                    # supervisor; out of the collector's full scans, which otherwise walk it again and
                    # again while hundreds of lines a second come and go
                    COLLECTOR.hold_frozen(self)
                    self._gc_frozen = True
                gap = self._next_gap(interval)  # without the file watcher: longer while nothing changes
                end = t0 + (min(interval, 2.0) if self._failed else gap)  # a failed refresh retries soon
                while not stop.is_set() and not self._wake.is_set() and time.monotonic() < end:
                    self._wake.wait(min(0.5, max(0.0, end - time.monotonic())))
                spent = time.monotonic() - t0
                if spent < min_interval:
                    stop.wait(min_interval - spent)
        finally:
            stop.set()
            self._wake.set()
            watcher.join(timeout=5)
            if self._gc_frozen:  # stopped: what it froze for its lifetime goes back to the collector
                COLLECTOR.release(self)
                self._gc_frozen = False

    def start(
        self, interval: float = 2.0, on_update: Optional[Callable[[list[LiveRun]], None]] = None, *, poll: bool = False
    ) -> tuple[threading.Thread, threading.Event]:
        """:meth:`run_forever` in a daemon thread; returns (thread, stop event)."""
        stop = threading.Event()
        th = threading.Thread(
            target=self.run_forever,
            args=(interval, stop, on_update),
            kwargs={"poll": poll},
            daemon=True,
            name="edgetui-live",
        )
        th.start()
        return th, stop

    def start_team_push(self, push: TeamPush) -> TeamPush:
        """Start ``push`` (:mod:`edgetui.live.team_push`: the continuous sync with the team record, made
        with :attr:`conn` and :meth:`note`); it says its failures among the state lines, and stops
        with :meth:`close`."""
        if self.team_push is None:
            self.team_push = push.start()
        return self.team_push

    def close(self) -> None:
        """Stop background helpers (team sync, stats sampler, judge pool) and close our cursor; the connection
        given to the constructor stays open (it is the caller's). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.team_push is not None:  # joined: no thread of ours left inside DuckDB
            self.team_push.close()
        if self.docker is not None:
            self.docker.close()
        if self.containers.cluster is not None:
            self.containers.cluster.close()
        self.containers.close()
        for p in [self.judge, *self.judges.values()]:
            if p is not None:
                p.close()
        self.alarm_cmd.reap()
        with self._lock:
            try:  # save the live cursors (they are saved every few seconds while running)
                self.tailer.flush([src for rs in self.runs.values() for src in rs.sources.values()], self.clock())
            except Exception as e:  # noqa: BLE001 - at worst a few seconds of lines are re-read (same ids)
                self._note(one_line(f"could not save cursors: {e}", 200))
            self.tailer.close()
            # runs-table aggregates are refreshed at most every few minutes while watching: bring the
            # row of every run that changed since its last full refresh up to date before leaving,
            # keeping the live status (the others are current: quitting stays quick with many runs)
            for rs in list(self.runs.values()):
                if rs.deleted or not (rs.dirty_files or rs.dirty_finalize or rs.new_events):
                    continue
                try:
                    self._finalize(rs)
                except Exception as e:  # noqa: BLE001 - said for its own run; the other runs go on
                    self._note(one_line(f"could not update {rs.key}: {e}", 200))
            self.rows.record_statuses()
        try:
            self.conn.close()  # our cursor only; the caller's connection stays open
        except Exception:  # noqa: BLE001 - closing our cursor at the end: nothing left to tell
            note_swallowed("closing our cursor at the end: nothing left to tell")

    def acknowledge_alarms(self, run_key: Optional[str] = None, keys: Optional[Iterable[str]] = None) -> int:
        """Acknowledge the alarms that hold now: of ``run_key`` (all runs when None), only the
        condition ``keys`` when given. Acknowledged alarms stop counting in banners and rows until
        their condition clears and is raised again; each acknowledgement is recorded as an
        ``alarm`` event with ``data.ack = true``. Returns how many were acknowledged; never raises."""
        with self._lock:
            now = self.clock()
            evs = []
            for key in [run_key] if run_key is not None else list(self.book.active):
                for a in self.book.acknowledge(key, set(keys) if keys is not None else None, now):
                    evs.append(ack_event(a, now, self.ctx.events.next_sub()))
            if evs:
                try:
                    settle(self.conn)
                    self.rec.insert_events("", evs)
                except Exception as e:  # noqa: BLE001 - said as a note; the acknowledgement stays in memory
                    self._note(one_line(f"could not record acknowledgements: {e}", 200))
                self._snapshot(self.clock())
            return len(evs)

    def run_file_path(self, run_key: str, name: str) -> Optional[Path]:
        """Path of a file of a run's task dir (``agent_output.txt``, ``submissions/agent-3/report.json``...),
        or None for an unknown run or a name leaving the task dir."""
        if name == POD_LOG:
            return self.containers.pod_log_file(run_key)
        rs = self.runs.get(run_key)
        if rs is None:
            cur = self.conn.cursor()  # callable from a view thread while a refresh runs
            try:
                rows = cur.execute("SELECT run_dir FROM runs WHERE run_key = ?", [run_key]).fetchall()
            finally:
                cur.close()
            if not rows or not rows[0][0]:
                return None
            base = Path(rows[0][0])
        else:
            base = rs.task_dir
        p = base / name
        try:
            p.resolve().relative_to(base.resolve())
        except ValueError:  # (a name that leaves the run folder: refused)
            return None
        return p

    def known_secrets(self, run_key: str) -> set[str]:
        """Every secret value the recorder knows (the watched runs' ``api_key`` / ``extra_env`` values,
        admin secrets, container env tokens) and those of the run's own folder (read now: a run not
        watched, opened from the database)."""
        while True:
            try:
                known = set(self.rec.secrets)  # (the set grows on the supervisor's thread)
                break
            except RuntimeError:  # (the set changed size during the copy: copy again)
                continue
        path = self.run_file_path(run_key, ".")
        return known | run_secrets(path, environment=True) if path is not None else known

    # ================================================================== messages
    def note(self, msg: str) -> None:
        """Add a one-line note to the supervisor's messages (from any thread; a line said in the
        last 5 minutes is not said again)."""
        self._note(msg)

    def _note(self, msg: str) -> None:
        self.ctx.note(msg)

    def _state_messages(self) -> list[str]:
        out = []
        if self.docker is not None and self.docker.error:
            out.append(self.docker.error)
        for p in [self.judge, *self.judges.values()]:
            if p is not None and p.error:
                out.append(p.error)
        for eng in self.engines.values():
            if eng.error:
                out.append(eng.error)
        if self.behind:
            out.append("catching up with existing files…")
        if self.team_push is not None and self.team_push.error:
            out.append(self.team_push.error)
        if self.host_lines is not None:
            try:
                out.extend(line for line in self.host_lines() if line)
            except Exception:  # noqa: BLE001 - a state line is never worth a failed refresh
                note_swallowed("a state line is never worth a failed refresh")
        return out

    # ================================================================== one refresh
    def _poll(self, now: float) -> None:
        s = self.settings
        self.ctx.events.pending = []
        # while the file watcher runs, a new run is noticed by it (a path added outside the known task
        # dirs) and the full rescan is only a safety net; without it, rescan every discovery_interval_s
        every = max(s.discovery_interval_s, WATCHED_DISCOVERY_S) if self.watch.watching else s.discovery_interval_s
        if not self.watch.watching:  # stat polling: discovery follows the adaptive interval
            every = max(every, self.watch.poll_gap or 0.0)
        n_runs, n_awake = len(self.runs) + len(self.dormant), len(self.runs)
        if self.watch.rediscover or now - self._last_discovery >= every:
            self.watch.rediscover = False
            self._last_discovery = now
            self._discover(now)
        self.sleepers.check_asleep(now, self.watch.watching)
        # docker listing
        docker_ok = False
        if self.docker is not None:
            if now - self._last_docker >= s.docker_interval_s or not self.docker.available:
                self._last_docker = now
                docker_ok = self.docker.refresh()
            else:
                docker_ok = self.docker.available
            if docker_ok and self.dormant:
                self.sleepers.wake_by_containers(now)
        engines_ok = self.containers.engines_ok(docker_ok)
        cluster = self.containers.cluster
        if cluster is not None and self.dormant and engines_ok.get(id(cluster)):
            self.sleepers.wake_by_pods(now)
        # files of each run (cheap stats), then all tails in one transaction
        sources: list[TailSource] = []
        for rs in self.runs.values():
            try:
                self.files.check_run_files(rs, now)
            except Exception as e:  # noqa: BLE001 - said for its own run; the other runs go on
                set_message(rs, one_line(f"could not check files: {type(e).__name__}: {e}", 200), now)
            if not rs.deleted:
                sources.extend(rs.sources.values())
        # containers before the tails: a new work container's SFORGE_TOKEN becomes a secret
        # (scrubbed) before any line echoing it is recorded
        if any(engines_ok.values()):
            try:
                self.containers.join(now, engines_ok)
                self.containers.sample_stats(now, engines_ok)
            except Exception as e:  # noqa: BLE001 - said as a note; the refresh goes on
                self._note(one_line(f"could not join containers: {type(e).__name__}: {e}", 200))
        if len(self.runs) - n_awake >= FIRST_SHOW_RUNS:
            # many runs just registered (a start-up): show them at once, from what their files' stats
            # and their rows say; their lines are read from the next refresh on (which comes at once)
            for rs in self.runs.values():
                rs.status = self.rows.status(rs, now, docker_ok)
            self.rows.record_statuses()
            self.behind = self.watch.found = True
            self._snapshot(now)
            return
        try:
            tres = self.tailer.poll(sources, now)
        except Exception as e:  # noqa: BLE001 - e.g. database error: nothing committed, retried next refresh
            self._note(one_line(f"tail failed: {type(e).__name__}: {e}", 240))
            tres = None
        self.last_tail = tres
        if tres is not None and tres.events and self.on_events is not None:
            try:  # views showing these runs read the new events now, not after the rest of the refresh
                self.on_events({key for key, _source in tres.events})
            except Exception as e:  # noqa: BLE001 - a listener's failure is a note, not the refresh's
                self._note(one_line(f"events callback failed: {type(e).__name__}: {e}", 200))
        if tres is not None:
            self.behind = tres.behind
            for m in tres.messages:
                self._note(m)
            for (key, source), evs in tres.events.items():
                hit = self.runs.get(key)
                if hit is not None:
                    self._observe(hit, source, evs, now)
            for key, source in tres.grown:
                hit = self.runs.get(key)
                if hit is None:
                    continue
                hit.last_activity_t = now
                hit.dirty_finalize = True
                if source == TRANSCRIPT:
                    hit.last_growth_t = now
            for key, _source in tres.caught_up:
                hit = self.runs.get(key)
                if hit is not None:
                    hit.dirty_finalize = True
            for key, source in tres.new_generation:
                hit = self.runs.get(key)
                if hit is not None:
                    set_message(hit, f"{source} truncated or replaced: new generation", now)
        # judge history
        if self.judge is not None or self.judges:
            self.containers.poll_judges(now)
        # gradings in flight / failed
        listed = self.containers.listed_ids(engines_ok)
        for rs in self.runs.values():
            if not rs.deleted:
                eng = self.containers.engine_of(rs)
                ok = eng is not None and bool(engines_ok.get(id(eng)))
                self.containers.grading_state(rs, now, ok, listed.get(id(eng), set()) if ok else set())
        # file refresh + finalize (throttled; while catching up with existing files, for at most
        # CATCHUP_DEFER_S, after the catch-up: its refreshes come back to back and read more at once)
        if tres is not None and tres.behind:
            if self._behind_since is None:
                self._behind_since = now
        else:
            self._behind_since = None
        if self._behind_since is None or now - self._behind_since >= CATCHUP_DEFER_S:
            self.files.refresh_and_finalize(now)
        # statuses, alarms
        self.last_alarms = []
        for rs in self.runs.values():
            try:
                eng = self.containers.engine_of(rs)
                rs.status = self.rows.status(rs, now, eng is not None and bool(engines_ok.get(id(eng))))
                self.last_alarms.extend(self.rows.alarms(rs, now))
            except Exception as e:  # noqa: BLE001 - said for its own run; the other runs go on
                set_message(rs, one_line(f"could not evaluate: {type(e).__name__}: {e}", 200), now)
        self.rows.record_statuses()
        self.rows.record_images()
        if now - self._last_rows >= s.row_refresh_s:
            self._last_rows = now
            self.rows.record_rows()
        if self.ctx.events.pending:
            try:
                settle(self.conn)
                self.rec.insert_events("", self.ctx.events.pending)
            except Exception as e:  # noqa: BLE001 - said as a note; the refresh goes on
                self._note(one_line(f"could not record live events: {e}", 200))
        self.alarm_cmd.reap()
        for n in self.alarm_cmd.notes:
            self._note(n)
        self.alarm_cmd.notes = []
        self.sleepers.settle_sleepers(now)
        self.watch.found = (
            bool(tres is not None and (tres.events or tres.grown))
            or len(self.runs) + len(self.dormant) != n_runs
            or bool(self.sleepers.touched)
        )
        self._snapshot(now)

    def _finalize(self, rs: RunState) -> None:
        """A full finalize of ``rs`` (:meth:`edgetui.live.run_files.RunFiles.finalize`)."""
        self.files.finalize(rs)

    def _next_gap(self, interval: float) -> float:
        """The wait before the next refresh (:meth:`edgetui.live.watching.FileWatch.next_gap`)."""
        return self.watch.next_gap(interval)

    def _forget_parents(self) -> None:
        """A watched run's directory was deleted: one made again above it is found at once."""
        self._known_parents = frozenset()

    def _snapshot(self, now: float) -> None:
        """``last_runs``: a LiveRun of every run awake, the kept one of every run asleep, by run key;
        ``snapshot_changed`` False when nothing is awake and no run woke or fell asleep."""
        if not self.runs and self._snap_asleep == (self.dormant_changes, 0) and not self.ctx.root_host:
            return  # nothing awake now or at the last one, no run woke or fell asleep: the same snapshot
        runs = [self.rows.live_run(rs, now) for rs in self.runs.values()]
        if self.dormant:
            runs.extend(self.sleepers.snapshot())
        runs.sort(key=lambda r: r.run_key)
        self.last_runs = runs
        self._snap_asleep = (self.dormant_changes, len(self.runs))

    # ================================================================== discovery
    def _known(self, path: str) -> bool:
        """Is ``path`` inside (or equal to) the task dir of a watched run, or one of the directories
        above such a task dir (its run dir, machine dir, root)? (from the watcher's thread) A change
        of such a directory itself (its mtime or attributes: a file written beside the runs, a
        remote host's image setting its directories' times at every sync) is no new run: a new run
        is reported under its own new path. (Not for the directories above a deleted run: one made
        again there is found at once.)"""
        known = self._known_dirs
        asleep = self.sleepers.dirs
        p = os.path.abspath(path)
        if p in self._known_parents:
            return True
        for _ in range(8):
            if p in known or p in asleep:
                return True
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
        return False

    def _discover(self, now: float) -> None:

        found: dict[str, sd.RunLocation] = {}
        try:
            gone = forgotten(self.rec.conn)  # runs forgotten with `edgetui forget` stay forgotten
        except Exception:  # noqa: BLE001 - a database without the table (never: migrated on open)
            gone = set()
        for key in [k for k in self.runs if k in gone]:
            self.forget(key)
        for root in self.roots:
            if not root.exists():
                self._note(f"{root}: runs root not found (waiting for it)")
                continue
            try:
                root_host = self._root_host.get(root)
                for loc in sd.discover(root, host=root_host or self.host):
                    found.setdefault(loc.run_key, loc)
                    if root_host is not None:
                        self.ctx.root_host.setdefault(loc.run_key, root_host)
            except OSError as e:
                self._note(one_line(f"{root}: cannot scan ({e.strerror or e})", 200))
        new = {
            key: loc
            for key, loc in found.items()
            if key not in gone and key not in self.runs and key not in self.dormant
        }
        asleep = self.sleepers.asleep_from_records(new, now)  # unchanged since recorded: shown from their rows
        self.registry.register_all([loc for key, loc in new.items() if key not in asleep], now)
        for key, loc in found.items():
            if key in gone or key in new:
                continue
            rs = self.runs.get(key)
            if rs is None:
                continue  # asleep
            if rs.deleted and Path(loc.task_dir).is_dir():
                rs.deleted = False  # the directory came back (e.g. restored): tail it again
                set_message(rs, "run directory reappeared", now)
                rs.loc = loc
                for src in rs.sources.values():
                    src.sig = None
                rs.dirty_files = True
        for key in [k for k in self.dormant if k not in found or k in gone]:
            if key in gone:
                self.forget(key)
            else:
                self.sleepers.wake_run(key, now)  # its directory went away: watched in full, it shows as deleted
        self._known_dirs = frozenset(os.path.abspath(rs.task_dir) for rs in self.runs.values())
        parents: set[str] = set()
        for key, loc in found.items():
            rs = self.runs.get(key)
            if key in gone or (rs is not None and rs.deleted):
                continue
            p = os.path.abspath(str(loc.task_dir))
            for _ in range(3 if loc.layout == "grouped" else 2):  # run dir, [machine dir,] root
                p = os.path.dirname(p)
                parents.add(p)
        self._known_parents = frozenset(parents)

    def apply_request(self, req: dict) -> dict:
        """A typed request from another process (:func:`edgetui.record.forget_and_tag.apply_request`), carried out
        between two refreshes; a forgotten run stops being watched at once."""

        with self._lock:
            if req.get("op") == "forget" and isinstance(req.get("run_key"), str):
                self.forget(req["run_key"])
            return apply_request(self.rec.conn, req)

    def forget(self, run_key: str) -> None:
        """Stop watching ``run_key`` (forgotten with ``edgetui forget``): its file handles close and
        it leaves the snapshot; nothing more of it is recorded."""
        rs = self.runs.pop(run_key, None)
        if rs is None:
            if self.sleepers.forget(run_key):
                self._note(f"{run_key}: forgotten; no longer watched")
            return
        for src in rs.sources.values():
            try:
                self.tailer.release(src)
            except Exception:  # noqa: BLE001 - the run is forgotten either way
                note_swallowed("the run is forgotten either way")
        self._note(f"{run_key}: forgotten; no longer watched")

    def _price(self, model: Optional[str]) -> Optional[tuple]:
        """USD per Mtok (in, out, cache read, cache write) for ``model``: the longest matching LIKE pattern
        of the price table, as :func:`edgetui.record.ingest.finalize_run` does."""
        if not model:
            return None
        if model in self._price_cache:
            return self._price_cache[model]
        if self._price_rows is None:
            try:
                rows = self.conn.execute(
                    "SELECT model_pattern, input_per_mtok, output_per_mtok, cache_read_per_mtok, "
                    "cache_write_per_mtok FROM prices"
                ).fetchall()
            except Exception:  # noqa: BLE001 - no price table: costs stay empty
                rows = []
            pats = []
            for pat, *p in rows:
                rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pat)
                pats.append((len(pat), re.compile(rx + r"\Z", re.S), tuple(float(x or 0.0) for x in p)))
            pats.sort(key=lambda x: -x[0])
            self._price_rows = pats
        hit = next((p for _, rx, p in self._price_rows if rx.match(model)), None)
        self._price_cache[model] = hit
        return hit

    def _observe(self, rs: RunState, source: str, evs: list[Event], now: float) -> None:
        rs.new_events += len(evs)
        for e in evs:
            # on the watcher's clock: a line cannot have been written after it was read (a runner's
            # log read with an offset not known yet, a runner's clock ahead: issue 36, item 3)
            t = e.t if e.t is None or e.t <= now else now
            if t is not None and (rs.last_event_t is None or t > rs.last_event_t):
                rs.last_event_t = t
        if source == TRANSCRIPT:
            pend = rs.pending
            td = rs.tok_delta
            for e in evs:
                u = e.usage
                if u is not None:
                    td[0] += u.input_tokens
                    td[1] += u.output_tokens
                    td[2] += u.cache_read_tokens
                    td[3] += u.cache_write_tokens
                    pr = self._price(e.model or rs.info.model)
                    if pr is not None:
                        rs.cost_delta += (
                            u.input_tokens * pr[0]
                            + u.output_tokens * pr[1]
                            + u.cache_read_tokens * pr[2]
                            + u.cache_write_tokens * pr[3]
                        ) / 1e6
                k = kind_of(e)
                if k == "tool_call" and e.tool_use_id:
                    pend[e.tool_use_id] = e.t if e.t is not None and e.t_source == "observed" else now
                elif k == "tool_result" and e.tool_use_id:
                    pend.pop(e.tool_use_id, None)
                    if refused_by_full_judge(e):
                        rs.judge_full_times.append(e.t if e.t is not None else now)
                elif k in ("session_init", "segment_start"):
                    pend.clear()  # a new segment: calls of the old one never get results
        elif source == RUN_LOG:
            for e in evs:
                if kind_of(e) == "resume" and e.t is not None:
                    rs.resume_times.append(e.t)
        elif source == TICKS:
            for e in evs:
                k = kind_of(e)
                if k == "submission_sent" and e.round:
                    sid = (e.data or {}).get("submission_id")
                    if sid:
                        rs.tick_sids[sid] = e.round
                elif k == "auto_eval_error" and e.t is not None:
                    if (e.data or {}).get("judge_full"):  # refused by a full judge: saturation, not an error
                        rs.judge_full_times.append(e.t)
                        continue
                    rs.tick_error_times.append(e.t)
                    rs.last_tick_error = one_line((e.data or {}).get("message") or e.summary, 200)
