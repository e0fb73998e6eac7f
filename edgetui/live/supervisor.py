"""Live supervision of SForge runs on this host (core: no Textual).

:class:`Supervisor` watches one or more runs roots and the local Docker engine
and keeps the database current while runs are going:

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
  :func:`edgetui.ingest.ingest_run` for that run, then
  :func:`~edgetui.ingest.finalize_run` (best-so-far, alignment, aggregates);
  runs that only grew are finalized at most every ``finalize_interval_s``; a graded round is
  timed when its result was known — its judge log's ``Result:`` line (else the report's mtime),
  then, when ``evolve_state.json`` is written at the end, its ``at``: the same event, re-timed
  under its id (:func:`edgetui.parsers.sforge_dir.result_known_time`,
  :meth:`edgetui.recorder.Recorder.replace_file_events`), so a run watched live ends with the
  times of an offline ingest;
* **containers**: one engine listing per refresh
  (:class:`~edgetui.live.docker_watch.DockerWatch`); work containers are
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

import gc
import os
import re
import threading
from stat import S_ISDIR as stat_isdir
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

import pyarrow as pa

from replay.selection import display_value

from ..events import Event, Kind, TimeSource, one_line
from ..redact import redact_text
from ..ingest import (LINE_SOURCES, _fill_model_agent, detect_file_format, finalize_run, load_price_file, raw_secrets,
                      harness_reason, stopped_at_budget, whole_file_events)
from ..parsers import sforge_dir as sd
from ..parsers.runlog import AutoEvalTicksParser, RunAgentLogParser, local_to_epoch
from ..parsers.base import open_regular
from ..records import RunInfo, SubmissionRecord, TaskInfo, make_run_key
from ..recorder import Recorder
from .alarms import AlarmBook, AlarmCommand, AlarmSettings, RunFacts, ack_event, alarm_event, evaluate, fmt_age
from .docker_watch import DockerWatch, work_names
from .judge import JudgePoller, read_admin_secret, secret_candidates
from .model import Alarm, ContainerInfo, LiveRun, live_run_from, newest_per_key
from .tail import Tailer, TailSource, settle

TRANSCRIPT = "agent_output.txt"
RUN_LOG = "run_agent.log"
TICKS = "auto_eval_ticks.log"
DOCKER_SOURCE = "live/docker"
#: whole files of a task dir whose appearance/change re-runs the file part of the ingest
WHOLE_FILES = ("final_result.json", "started_at", "run_config.json", "evolve_state.json", "run_history.json",
               "game_history.json")
FULL_CHECK_S = 60.0  # present whole files / graded rounds are re-checked this often (overwrites)
#: events timed this long before their run's start are pointed out (see Supervisor._check_early_events)
EARLY_EVENT_S = 86400.0
MESSAGE_TTL_S = 600.0  # a run's transient one-line message (new generation, refresh problem) shows this long

_LOG_HEAD_RE = re.compile(rb"^(?:\xef\xbb\xbf)?(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3}) - ([A-Z]+) - ?(.*)$")
_ENDING_RE = re.compile(r"^(?:Agent finished: |Run interrupted by user|Done: |Done \(game\))")
_JUDGE_STARTED_RE = re.compile(rb"Judge container started: ([0-9a-f]{12,64})")
_JUDGE_DONE_RE = re.compile(rb" - INFO - Container \S+ removed\.|Removing container |Failed to remove container ")
_JUDGE_ERR_RE = re.compile(rb"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - (?:ERROR|CRITICAL) - (.*)$", re.M)
_STATUS_ORDER = {"running": 0, "grading": 0, "gone": 1, "aborted": 2, "finished": 3}


def _sig(p: Path) -> Optional[tuple]:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _kind(e: Event) -> str:
    k = e.kind
    return k if type(k) is str else k.value


@dataclass
class RoundState:
    """One ``submissions/<round>/`` folder as watched."""

    name: str
    kind: str
    first_seen: float
    report_sig: Optional[tuple] = None
    log_sig: Optional[tuple] = None
    has_report: bool = False
    container_ids: set[str] = field(default_factory=set)
    log_terminal: bool = False  # judge cleanup or an ERROR record in run_instance.log
    log_error: Optional[str] = None
    terminal_seen: Optional[float] = None
    judge_gone_since: Optional[float] = None
    judge_seen: bool = False  # its judge container was listed by the local engine at least once
    sid: Optional[str] = None
    failed: Optional[str] = None  # reason, once the grading is known to have failed
    in_flight: bool = False


@dataclass
class RunState:
    key: str
    loc: sd.RunLocation
    info: RunInfo
    task: TaskInfo
    first_seen: float
    fmt: Optional[str] = None
    sources: dict[str, TailSource] = field(default_factory=dict)
    file_sigs: dict[str, Optional[tuple]] = field(default_factory=dict)
    last_full_check: float = 0.0
    subs_sig: Optional[tuple] = None
    rounds: dict[str, RoundState] = field(default_factory=dict)
    subs: list[SubmissionRecord] = field(default_factory=list)
    # transcript / logs
    pending: dict[str, float] = field(default_factory=dict)
    last_growth_t: Optional[float] = None
    last_activity_t: Optional[float] = None
    resume_times: list[float] = field(default_factory=list)
    error_times: list[float] = field(default_factory=list)
    last_error_msg: Optional[str] = None
    ending_since: Optional[float] = None
    tick_sids: dict[str, str] = field(default_factory=dict)  # submission id -> round
    tick_error_times: list[float] = field(default_factory=list)
    last_tick_error: Optional[str] = None
    # containers
    container: Optional[ContainerInfo] = None
    container_seen_id: Optional[str] = None
    container_state: Optional[str] = None  # last recorded (running/exited/.../gone)
    container_ended_t: Optional[float] = None
    operator_action: Optional[str] = None  # "stop" / "kill" asked by the operator for the current container
    judges: list[ContainerInfo] = field(default_factory=list)
    games: list[ContainerInfo] = field(default_factory=list)
    judge_states: dict[str, str] = field(default_factory=dict)
    cpu_percent: Optional[float] = None
    mem_bytes: Optional[int] = None
    token: Optional[str] = None
    history: Any = None
    # database side
    row: dict[str, Any] = field(default_factory=dict)
    last_new_best_t: Optional[float] = None
    new_events: int = 0
    last_event_t: Optional[float] = None
    tok_delta: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # tokens since the last finalize
    cost_delta: float = 0.0
    dir_sig: Optional[int] = None
    dirty_files: bool = True
    dirty_finalize: bool = False
    last_finalize: float = 0.0
    last_full_finalize: float = 0.0  # the last finalize that recomputed the aggregates (see _refresh_files)
    early_events: int = 0  # events timed long before the run's start, last said (see _finalize)
    recorded_status: Optional[str] = None
    recorded_infra: Optional[bool] = None
    _row_sig: Optional[tuple] = None  # live figures last written to the runs row
    sub_cache: dict[str, tuple] = field(default_factory=dict)  # round -> (folder signature, its events)
    rec_cache: dict[str, tuple] = field(default_factory=dict)  # round -> (folder signature, its record)
    # state
    status: str = "running"
    deleted: bool = False
    message: Optional[str] = None
    message_t: float = 0.0  # when set; transient messages are shown for MESSAGE_TTL_S
    message_sticky: bool = False
    fmt_pending: bool = False  # agent_output.txt exists but its format cannot be told yet
    conds: list = field(default_factory=list)
    aligned: Optional[tuple] = None  # (finished, started_at, ended_at) at the last time alignment (see _finalize)
    end_marked: bool = False  # the finished run's transcript end was read (its parser's finish())

    td: Optional[Path] = None  # the task dir (cached; loc.task_dir)

    @property
    def task_dir(self) -> Path:
        td = self.loc.task_dir
        if self.td is None or (self.td is not td and self.td != td):  # same object: no Path comparison
            self.td = td if isinstance(td, Path) else Path(td)
        return self.td

    @property
    def finished(self) -> bool:
        return self.info.final is not None


class Supervisor:
    """Watches runs roots + the local engine; :meth:`poll_once` is one refresh.

    ``docker_client``: ``"auto"`` (``docker.from_env()``; an unreachable engine
    is a state message, retried), a ``docker.DockerClient``, or ``None`` (files
    only). ``judge_url`` enables /history polling. ``clock`` gives "now" (epoch
    UTC; tests inject one). ``host`` names this machine in run keys. A runs root may be given as
    ``(path, host_name)``: its runs are keyed by that host (the image of a remote root,
    :mod:`edgetui.hosts.feed`); the local engine's containers are joined to this machine's runs only.
    ``host_lines``, when set, gives lines for the state messages (remote hosts' states).
    """

    def __init__(self, conn, runs_dirs: Iterable[Path | str], *, docker_client: Any = "auto",
                 judge_url: Optional[str] = None, settings: Optional[AlarmSettings] = None,
                 on_alarm_cmd: Optional[str] = None, clock: Callable[[], float] = time.time, host: str = "local",
                 tasks_dir: Optional[Path | str] = None, prices: Optional[Path] = None):
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
        self.host_lines: Optional[Callable[[], list[str]]] = None
        #: (HostState.kind, round trip in seconds or None) of a remote host by name, for each run of its roots
        self.host_state_of: Optional[Callable[[str], Optional[tuple]]] = None
        self._run_root_host: dict[str, str] = {}  # run key -> host name of the root it was found under
        self.clock = clock
        self.host = host
        self.notes: deque[tuple[float, str]] = deque(maxlen=200)
        self.messages: list[str] = []
        self._poll_notes: list[str] = []
        tdir = sd.resolve_tasks_dir(tasks_dir)
        terr: list[str] = []
        self.tasks = sd.load_tasks(tdir, terr) if tdir else {}
        for m in terr:
            self._note(m)
        try:
            self.rec.load_prices(load_price_file(prices))
        except Exception as e:  # noqa: BLE001 - a bad price file: costs stay empty
            self._note(one_line(f"price table not loaded: {e}", 200))
        self.tailer = Tailer(self.rec)
        self.docker = DockerWatch(docker_client, host=host, retry_s=self.settings.docker_retry_s,
                                  stats_interval_s=self.settings.stats_interval_s, clock=clock) \
            if docker_client is not None else None
        self.judge: Optional[JudgePoller] = None
        if judge_url:
            secret = read_admin_secret(secret_candidates(self.roots))
            self.rec.add_secret(secret)
            self.judge = JudgePoller(judge_url, secret, interval_s=self.settings.judge_interval_s,
                                     timeout_s=self.settings.judge_timeout_s, clock=clock)
        self.book = AlarmBook()
        self.alarm_cmd = AlarmCommand(on_alarm_cmd)
        self.runs: dict[str, RunState] = {}
        self.last_alarms: list[Alarm] = []
        self.unattributed: list[ContainerInfo] = []  # judge/game containers not joined to a run
        self.last_runs: list[LiveRun] = []
        self._last_discovery = float("-inf")
        self._last_docker = float("-inf")
        self._live_events: list[Event] = []
        self._seq = 0
        self._polls = 0
        self.behind = False  # a catch-up did not finish in the last refresh
        self.last_tail = None  # TailResult of the last refresh (diagnostics)
        self._failed = False
        self._closed = False
        self.poll_delay_s = 1.0
        self._price_rows: Optional[list] = None
        self._price_cache: dict[str, Optional[tuple]] = {}
        self._wake = threading.Event()
        self._lock = threading.RLock()
        self._operator: dict[str, str] = {}  # container id/name -> "stop" | "kill" asked, not yet seen
        self._judges_here = False  # a judge container of a watched run was listed by this engine
        self._last_rows = float("-inf")
        self._watching = False  # the file watcher is running (it reports new directories)
        self._rediscover = False  # the watcher saw a path added outside every known task dir
        self._known_dirs: frozenset[str] = frozenset()  # the task dirs of the watched runs (str paths)
        self._gc_frozen = False

    # ================================================================== public API
    def poll_once(self) -> list[LiveRun]:
        """One refresh: discovery, tails, submissions, containers, judge, statuses, alarms."""
        with self._lock:
            self._poll_notes = []
            now = self.clock()
            try:
                self._poll(now)
            except Exception as e:  # noqa: BLE001 - never die; one line
                if os.environ.get("EDGETUI_DEBUG"):
                    raise
                self._note(one_line(f"refresh failed: {type(e).__name__}: {e}", 240))
                self._failed = True
            else:
                self._failed = False
            self._polls += 1
            self.messages = self._state_messages() + self._poll_notes
            return self.last_runs

    def run_forever(self, interval: float = 2.0, stop_event: Optional[threading.Event] = None,
                    on_update: Optional[Callable[[list[LiveRun]], None]] = None, *, poll: bool = False,
                    min_interval: Optional[float] = None, poll_delay_s: float = 1.0) -> None:
        """Refresh until ``stop_event`` is set: every ``interval`` seconds, earlier when a watched file
        changes (``watchfiles``; ``poll=True`` forces stat polling every ``poll_delay_s``, for network
        mounts where inotify sees nothing), never more often than ``min_interval``. ``on_update`` gets
        each refresh's runs; its errors are noted. Never raises (errors become messages)."""
        stop = stop_event or threading.Event()
        if min_interval is None:
            min_interval = self.settings.min_refresh_s
        self.poll_delay_s = poll_delay_s
        watcher = threading.Thread(target=self._watch_files, args=(stop, poll, interval), daemon=True,
                                   name="edgetui-live-watch")
        watcher.start()
        try:
            while not stop.is_set():
                t0 = time.monotonic()
                self._wake.clear()  # before the refresh: a change during it wakes the next one at once
                runs = self.poll_once()
                if on_update is not None:
                    try:
                        on_update(runs)
                    except Exception as e:  # noqa: BLE001
                        self._note(one_line(f"update callback failed: {type(e).__name__}: {e}", 200))
                if self.behind:  # catching up: continue at once
                    stop.wait(0.01)
                    continue
                if not self._gc_frozen:
                    # caught up: what was built so far (parsers, tables, caches) lives as long as the
                    # supervisor; out of the collector's full scans, which otherwise walk it again and
                    # again while hundreds of lines a second come and go
                    gc.freeze()
                    self._gc_frozen = True
                end = t0 + (min(interval, 2.0) if self._failed else interval)  # a failed refresh retries soon
                while not stop.is_set() and not self._wake.is_set() and time.monotonic() < end:
                    self._wake.wait(min(0.5, max(0.0, end - time.monotonic())))
                spent = time.monotonic() - t0
                if spent < min_interval:
                    stop.wait(min_interval - spent)
        finally:
            stop.set()
            self._wake.set()
            watcher.join(timeout=5)

    def start(self, interval: float = 2.0, on_update: Optional[Callable[[list[LiveRun]], None]] = None,
              *, poll: bool = False) -> tuple[threading.Thread, threading.Event]:
        """:meth:`run_forever` in a daemon thread; returns (thread, stop event)."""
        stop = threading.Event()
        th = threading.Thread(target=self.run_forever, args=(interval, stop, on_update), kwargs={"poll": poll},
                              daemon=True, name="edgetui-live")
        th.start()
        return th, stop

    def close(self) -> None:
        """Stop background helpers (stats sampler, judge pool) and close our cursor; the connection
        given to the constructor stays open (it is the caller's). Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.docker is not None:
            self.docker.close()
        if self.judge is not None:
            self.judge.close()
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
                except Exception as e:  # noqa: BLE001
                    self._note(one_line(f"could not update {rs.key}: {e}", 200))
            self._record_statuses()
        try:
            self.conn.close()  # our cursor only; the caller's connection stays open
        except Exception:  # noqa: BLE001
            pass

    # ---- actions for the views
    def stop_container(self, name_or_id: str, timeout: int = 10) -> str:
        """Stop a container (``docker stop``); returns a one-line outcome, never raises.

        The run whose work container this is shows as aborted with the flag
        ``stopped`` and raises no container_exit / container_gone alarm (the
        operator asked for it); the request is recorded as a container_state event."""
        if self.docker is None:
            return "docker is disabled"
        return self._operator_act(name_or_id, "stop", lambda: self.docker.stop_container(name_or_id, timeout))

    def kill_container(self, name_or_id: str) -> str:
        """Kill a container (``docker kill``); returns a one-line outcome, never raises (as :meth:`stop_container`,
        flag ``killed``)."""
        if self.docker is None:
            return "docker is disabled"
        return self._operator_act(name_or_id, "kill", lambda: self.docker.kill_container(name_or_id))

    def _operator_act(self, name_or_id: str, kind: str, fn: Callable[[], str]) -> str:
        self._operator[name_or_id] = kind  # before acting: the exit may be listed at once
        out = str(fn() or "")
        if out.startswith("could not"):
            self._operator.pop(name_or_id, None)
        self._wake.set()
        return out

    def acknowledge_alarms(self, run_key: Optional[str] = None, keys: Optional[Iterable[str]] = None) -> int:
        """Acknowledge the alarms that hold now: of ``run_key`` (all runs when None), only the
        condition ``keys`` when given. Acknowledged alarms stop counting in banners and rows until
        their condition clears and is raised again; each acknowledgement is recorded as an
        ``alarm`` event with ``data.ack = true``. Returns how many were acknowledged; never raises."""
        with self._lock:
            now = self.clock()
            evs = []
            for key in ([run_key] if run_key is not None else list(self.book.active)):
                for a in self.book.acknowledge(key, set(keys) if keys is not None else None, now):
                    self._seq += 1
                    evs.append(ack_event(a, now, self._seq % 100000))
            if evs:
                try:
                    settle(self.conn)
                    self.rec.insert_events("", evs)
                except Exception as e:  # noqa: BLE001
                    self._note(one_line(f"could not record acknowledgements: {e}", 200))
                now2 = self.clock()
                self.last_runs = [self._live_run(rs, now2) for rs in sorted(self.runs.values(), key=lambda r: r.key)]
            return len(evs)

    def shell_command(self, container: str) -> list[str]:
        """argv for an interactive shell in ``container`` (``docker exec -it <id> bash|sh``)."""
        if self.docker is None:
            return ["docker", "exec", "-it", container, "sh"]
        return self.docker.shell_command(container)

    def run_file_path(self, run_key: str, name: str) -> Optional[Path]:
        """Path of a file of a run's task dir (``agent_output.txt``, ``submissions/agent-3/report.json``...),
        or None for an unknown run or a name leaving the task dir."""
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
        p = (base / name)
        try:
            p.resolve().relative_to(base.resolve())
        except ValueError:
            return None
        return p

    # ================================================================== messages
    @staticmethod
    def _set_message(rs: RunState, msg: str, now: float, sticky: bool = False) -> None:
        rs.message, rs.message_t, rs.message_sticky = redact_text(msg), now, sticky

    def _note(self, msg: str) -> None:
        msg = redact_text(msg) or ""
        t = self.clock()
        if any(m == msg and t - mt < 300 for mt, m in list(self.notes)[-20:]):
            return
        self.notes.append((t, msg))
        self._poll_notes.append(msg)

    def _state_messages(self) -> list[str]:
        out = []
        if self.docker is not None and self.docker.error:
            out.append(self.docker.error)
        if self.judge is not None and self.judge.error:
            out.append(self.judge.error)
        if self.behind:
            out.append("catching up with existing files…")
        if self.host_lines is not None:
            try:
                out.extend(line for line in self.host_lines() if line)
            except Exception:  # noqa: BLE001 - a state line is never worth a failed refresh
                pass
        return out

    # ================================================================== one refresh
    def _poll(self, now: float) -> None:
        s = self.settings
        self._live_events = []
        # while the file watcher runs, a new run is noticed by it (a path added outside the known task
        # dirs) and the full rescan is only a safety net; without it, rescan every discovery_interval_s
        every = max(s.discovery_interval_s, WATCHED_DISCOVERY_S) if self._watching else s.discovery_interval_s
        if self._rediscover or now - self._last_discovery >= every:
            self._rediscover = False
            self._last_discovery = now
            self._discover(now)
        # docker listing
        docker_ok = False
        if self.docker is not None:
            if now - self._last_docker >= s.docker_interval_s or not self.docker.available:
                self._last_docker = now
                docker_ok = self.docker.refresh()
            else:
                docker_ok = self.docker.available
        # files of each run (cheap stats), then all tails in one transaction
        sources: list[TailSource] = []
        for rs in self.runs.values():
            try:
                self._check_run_files(rs, now)
            except Exception as e:  # noqa: BLE001
                self._set_message(rs, one_line(f"could not check files: {type(e).__name__}: {e}", 200), now)
            if not rs.deleted:
                sources.extend(rs.sources.values())
        # containers before the tails: a new work container's SFORGE_TOKEN becomes a secret
        # (scrubbed) before any line echoing it is recorded
        if self.docker is not None and docker_ok:
            try:
                self._join_containers(now)
                self._sample_stats(now)
            except Exception as e:  # noqa: BLE001
                self._note(one_line(f"could not join containers: {type(e).__name__}: {e}", 200))
        try:
            tres = self.tailer.poll(sources, now)
        except Exception as e:  # noqa: BLE001 - e.g. database error: nothing committed, retried next refresh
            self._note(one_line(f"tail failed: {type(e).__name__}: {e}", 240))
            tres = None
        self.last_tail = tres
        if tres is not None and tres.events and self.on_events is not None:
            try:  # views showing these runs read the new events now, not after the rest of the refresh
                self.on_events({key for key, _source in tres.events})
            except Exception as e:  # noqa: BLE001
                self._note(one_line(f"events callback failed: {type(e).__name__}: {e}", 200))
        if tres is not None:
            self.behind = tres.behind
            for m in tres.messages:
                self._note(m)
            for (key, source), evs in tres.events.items():
                rs = self.runs.get(key)
                if rs is not None:
                    self._observe(rs, source, evs, now)
            for key, source in tres.grown:
                rs = self.runs.get(key)
                if rs is None:
                    continue
                rs.last_activity_t = now
                rs.dirty_finalize = True
                if source == TRANSCRIPT:
                    rs.last_growth_t = now
            for key, source in tres.caught_up:
                rs = self.runs.get(key)
                if rs is not None:
                    rs.dirty_finalize = True
            for key, source in tres.new_generation:
                rs = self.runs.get(key)
                if rs is not None:
                    self._set_message(rs, f"{source} truncated or replaced: new generation", now)
        # judge history
        if self.judge is not None:
            self._poll_judge(now)
        # gradings in flight / failed
        listed = {c.id[:12] for c in self.docker.containers.values()
                  if c.state in ("running", "created", "restarting", "paused")} if (self.docker and docker_ok) else set()
        for rs in self.runs.values():
            if not rs.deleted:
                self._grading_state(rs, now, docker_ok, listed)
        # file refresh + finalize (throttled)
        self._refresh_and_finalize(now)
        # statuses, alarms
        self.last_alarms = []
        for rs in self.runs.values():
            try:
                rs.status = self._status(rs, now, docker_ok)
                self._alarms(rs, now)
            except Exception as e:  # noqa: BLE001
                self._set_message(rs, one_line(f"could not evaluate: {type(e).__name__}: {e}", 200), now)
        self._record_statuses()
        if now - self._last_rows >= s.row_refresh_s:
            self._last_rows = now
            self._record_rows()
        if self._live_events:
            try:
                settle(self.conn)
                self.rec.insert_events("", self._live_events)
            except Exception as e:  # noqa: BLE001
                self._note(one_line(f"could not record live events: {e}", 200))
        self.alarm_cmd.reap()
        for n in self.alarm_cmd.notes:
            self._note(n)
        self.alarm_cmd.notes = []
        self.last_runs = [self._live_run(rs, now) for rs in sorted(self.runs.values(), key=lambda r: r.key)]

    # ================================================================== discovery
    def _known(self, path: str) -> bool:
        """Is ``path`` inside (or equal to) the task dir of a watched run? (from the watcher's thread)"""
        known = self._known_dirs
        p = os.path.abspath(path)
        for _ in range(8):
            if p in known:
                return True
            parent = os.path.dirname(p)
            if parent == p:
                break
            p = parent
        return False

    def _discover(self, now: float) -> None:
        from ..runops import forgotten

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
                        self._run_root_host.setdefault(loc.run_key, root_host)
            except OSError as e:
                self._note(one_line(f"{root}: cannot scan ({e.strerror or e})", 200))
        for key, loc in found.items():
            if key in gone:
                continue
            rs = self.runs.get(key)
            if rs is None:
                try:
                    self._register(loc, now)
                except Exception as e:  # noqa: BLE001 - one bad run must not stop the others
                    if os.environ.get("EDGETUI_DEBUG"):
                        raise
                    self._note(one_line(f"{loc.task_dir}: could not watch: {type(e).__name__}: {e}", 240))
            elif rs.deleted and Path(loc.task_dir).is_dir():
                rs.deleted = False  # the directory came back (e.g. restored): tail it again
                self._set_message(rs, "run directory reappeared", now)
                rs.loc = loc
                for src in rs.sources.values():
                    src.sig = None
                rs.dirty_files = True
        self._known_dirs = frozenset(os.path.abspath(rs.task_dir) for rs in self.runs.values())

    def apply_request(self, req: dict) -> dict:
        """A typed request from another process (:func:`edgetui.runops.apply_request`), carried out
        between two refreshes; a forgotten run stops being watched at once."""
        from ..runops import apply_request

        with self._lock:
            if req.get("op") == "forget" and isinstance(req.get("run_key"), str):
                self.forget(req["run_key"])
            return apply_request(self.rec.conn, req)

    def forget(self, run_key: str) -> None:
        """Stop watching ``run_key`` (forgotten with ``edgetui forget``): its file handles close and
        it leaves the snapshot; nothing more of it is recorded."""
        rs = self.runs.pop(run_key, None)
        if rs is None:
            return
        for src in rs.sources.values():
            try:
                self.tailer.release(src)
            except Exception:  # noqa: BLE001
                pass
        self._note(f"{run_key}: forgotten; no longer watched")

    def _register(self, loc: sd.RunLocation, now: float) -> None:
        task_dir = Path(loc.task_dir)
        for secret in raw_secrets(task_dir):
            self.rec.add_secret(secret)
        info = sd.read_run_info(loc)
        key = make_run_key(info.host, info.run_id, info.task_id)
        task = self.rec.task_for(sd.task_info(info.task_id, self.tasks))
        rs = RunState(key=key, loc=loc, info=info, task=task, first_seen=now)
        rs.fmt = self._detect_format(rs, now)
        info.agent_format = rs.fmt
        self.rec.upsert_run(key, info)
        self._load_known(rs, now)
        for name in (TRANSCRIPT, RUN_LOG, TICKS):
            if (task_dir / name).exists():
                self._add_source(rs, name, catchup=True)
        t_mtime = _mtime(task_dir / TRANSCRIPT)
        if t_mtime is not None:
            rs.last_growth_t = min(now, t_mtime)
        rs.last_activity_t = max([x for x in (rs.last_growth_t, _mtime(task_dir / RUN_LOG), _mtime(task_dir / TICKS),
                                               info.started_at) if x is not None], default=None)
        if rs.last_activity_t is not None:
            rs.last_activity_t = min(now, rs.last_activity_t)
        for name in WHOLE_FILES:
            rs.file_sigs[name] = _sig(task_dir / name)
        rs.last_full_check = now
        self.runs[key] = rs

    def _detect_format(self, rs: RunState, now: float) -> Optional[str]:
        p = rs.task_dir / TRANSCRIPT
        try:
            st = p.stat()
        except OSError:
            return None
        fmt = detect_file_format(p)
        if fmt == "unknown":
            if st.st_size < 4096 and now - st.st_mtime < 120:
                return None  # too little to tell yet (noise lines before the first record)
            fmt = {"codex": "codex_text", "opencode": "opencode"}.get(rs.info.agent or "", "claude_stream")
        return fmt

    def _load_known(self, rs: RunState, now: float) -> None:
        """What earlier sessions recorded: the run row, pending tool calls, resumes, errors, alarms, containers."""
        c = self.conn
        key = rs.key
        self._load_row(rs)
        cur = self.rec.get_cursor(key, TRANSCRIPT)
        if cur and cur.get("generation"):
            rows = c.execute(
                """SELECT tool_use_id FROM events WHERE run_key = ? AND source = ? AND generation = ?
                   AND kind = 'tool_call' AND tool_use_id IS NOT NULL
                   AND segment IS NOT DISTINCT FROM (SELECT max(segment) FROM events WHERE run_key = ? AND source = ?
                                                     AND generation = ?)
                   AND tool_use_id NOT IN (SELECT tool_use_id FROM events WHERE run_key = ? AND kind = 'tool_result'
                                           AND tool_use_id IS NOT NULL)""",
                [key, TRANSCRIPT, cur["generation"], key, TRANSCRIPT, cur["generation"], key]).fetchall()
            rs.pending = {r[0]: now for r in rows}
        # facts of the current generation of each log (a re-run in place truncates them)
        gens = {}
        for src_name in (RUN_LOG, TICKS):
            cu = self.rec.get_cursor(key, src_name)
            gens[src_name] = cu["generation"] if cu and cu.get("generation") else ""
        for kind, t, summ in c.execute(
                "SELECT kind, t, summary FROM events WHERE run_key = ? AND ((source = ? AND generation = ?) "
                "OR (source = ? AND generation = ?)) "
                "AND kind IN ('resume', 'infra_error', 'auto_eval_error') AND t IS NOT NULL ORDER BY t",
                [key, RUN_LOG, gens[RUN_LOG], TICKS, gens[TICKS]]).fetchall():
            if kind == "resume":
                rs.resume_times.append(t)
            elif kind == "infra_error":
                rs.error_times.append(t)
                rs.last_error_msg = summ
            elif kind == "auto_eval_error":
                rs.tick_error_times.append(t)
                rs.last_tick_error = summ
        fin = c.execute("SELECT min(t) FROM events WHERE run_key = ? AND source = ? AND generation = ? "
                        "AND kind = 'segment_end' AND data->>'$.agent_finished' = 'true'",
                        [key, RUN_LOG, gens[RUN_LOG]]).fetchone()
        if fin and fin[0] is not None:
            rs.ending_since = fin[0]
        for sid, rnd in c.execute("SELECT data->>'$.submission_id', round FROM events WHERE run_key = ? AND source = ? "
                                  "AND kind = 'submission_sent'", [key, TICKS]).fetchall():
            if sid and rnd:
                rs.tick_sids[sid] = rnd
        # alarms of earlier sessions: their episodes count as still active until seen false once
        rows = c.execute("SELECT t, data FROM events WHERE run_key = ? AND kind = 'alarm' ORDER BY t", [key]).fetchall()
        if rows:
            import json

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
                alarms.append(Alarm(run_key=key, rule=str(d.get("rule") or "?"), severity=str(d.get("severity") or "warning"),
                                    t=t, message=str(d.get("message") or ""), data=d))
            self.book.preload(key, keys, alarms[-50:])
            for k, t in acks:
                self.book.restore_ack(key, k, t)
        # the last recorded state of the work container (so a container that vanished while nobody watched is "gone")
        row = c.execute("SELECT data->>'$.id', data->>'$.state', t FROM events WHERE run_key = ? AND kind = 'container_state' "
                        "AND data->>'$.role' = 'work' ORDER BY t DESC LIMIT 1", [key]).fetchone()
        if row and row[0]:
            rs.container_seen_id, rs.container_state = row[0], row[1]
            if row[1] in ("exited", "dead", "gone"):
                rs.container_ended_t = row[2]
            op = c.execute("SELECT data->>'$.operator' FROM events WHERE run_key = ? AND kind = 'container_state' "
                           "AND data->>'$.id' = ? AND data->>'$.operator' IS NOT NULL ORDER BY t DESC LIMIT 1",
                           [key, row[0]]).fetchall()
            if op:
                rs.operator_action = op[0][0]

    #: runs-row columns that only a full finalize recomputes (the live deltas are added to them)
    _AGG_COLS = ("n_events", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd",
                 "stated_cost_usd", "last_event_at")

    def _load_row(self, rs: RunState, aggregates: bool = True) -> None:
        """Read the run's runs row into ``rs.row`` (and reset the live deltas). ``aggregates=False``
        (after a submissions-only finalize) keeps the aggregate columns and their deltas as they are."""
        cols = ("best_round", "best_score", "best_pass_rate", "best_score_0_100", "score_task", "agent_submissions",
                "auto_submissions", "game_sessions", "agent", "model", "started_at", "resume_count", "ended_at",
                "selection", "score_direction")
        if aggregates:
            cols += self._AGG_COLS
        r = self.conn.execute(f"SELECT {', '.join(cols)} FROM runs WHERE run_key = ?", [rs.key]).fetchone()
        if aggregates:
            rs.row = dict(zip(cols, r)) if r else {}
        else:
            rs.row = {**rs.row, **(dict(zip(cols, r)) if r else {})}
        b = self.conn.execute("SELECT max(t) FROM submissions WHERE run_key = ? AND is_new_best", [rs.key]).fetchone()
        rs.last_new_best_t = b[0] if b else None
        if not aggregates:
            return
        rs.new_events = 0
        rs.tok_delta = [0, 0, 0, 0]
        rs.cost_delta = 0.0

    def _add_source(self, rs: RunState, name: str, catchup: bool) -> None:
        path = rs.task_dir / name
        if name == TRANSCRIPT:
            from ..parsers.detect import parser_for

            def make(source, gen, state, rs=rs):
                return parser_for(rs.fmt or "claude_stream", source, gen, state)
            hook = None
        elif name == RUN_LOG:
            def make(source, gen, state, rs=rs):
                return RunAgentLogParser(source, gen, self._utc_offset(rs), state)
            hook = self._run_log_hook
        else:
            def make(source, gen, state, rs=rs):
                return AutoEvalTicksParser(source, gen, self._utc_offset(rs), state)
            hook = None
        src = TailSource(run_key=rs.key, source=name, path=path, make_parser=make, line_hook=hook,
                         on_new_generation=self._new_generation)
        if not catchup:
            src.catchup_until = 0  # the file appeared while watching: every line is observed
        rs.sources[name] = src

    def _utc_offset(self, rs: RunState) -> Optional[float]:
        """The run's own UTC offset (its ``started_at``, else its log's clock against the log's mtime:
        :func:`edgetui.parsers.sforge_dir.infer_log_offset`), never this process's time zone; None
        (UTC) while the run has told nothing yet. When it becomes known or changes, the run's
        recorded log times are moved (:meth:`_retime`)."""
        return rs.info.utc_offset_s

    def _retime(self, rs: RunState, old: Optional[float], new: Optional[float]) -> None:
        """The run's offset changed from ``old`` to ``new`` (None = UTC): its log lines recorded with
        the old one are moved, and its live log parsers use the new one from now on."""
        shift = (old or 0.0) - (new or 0.0)
        if shift:
            self.rec.conn.execute(
                "UPDATE events SET t = t + ? WHERE run_key = ? AND source IN ('run_agent.log', 'auto_eval_ticks.log') "
                "AND t_source = 'recorded'", [shift, rs.key])
        for name in (RUN_LOG, TICKS):
            src = rs.sources.get(name)
            if src is not None and src.parser is not None:
                src.parser.utc_offset_s = new
        rs.dirty_files = True

    def _price(self, model: Optional[str]) -> Optional[tuple]:
        """USD per Mtok (in, out, cache read, cache write) for ``model``: the longest matching LIKE pattern
        of the price table, as :func:`edgetui.ingest.finalize_run` does."""
        if not model:
            return None
        if model in self._price_cache:
            return self._price_cache[model]
        if self._price_rows is None:
            try:
                rows = self.conn.execute("SELECT model_pattern, input_per_mtok, output_per_mtok, cache_read_per_mtok, "
                                         "cache_write_per_mtok FROM prices").fetchall()
            except Exception:  # noqa: BLE001
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

    # ================================================================== per-run files
    def _check_run_files(self, rs: RunState, now: float) -> None:
        td = rs.task_dir
        try:
            dst = os.stat(td)
        except OSError:
            dst = None
        if dst is None or not stat_isdir(dst.st_mode):
            if not rs.deleted:
                rs.deleted = True
                for src in rs.sources.values():  # a kept handle would hold the deleted files' space
                    self.tailer.release(src)
                self._set_message(rs, "run directory deleted", now, sticky=True)
                self._note(f"{rs.key}: run directory deleted ({td}); its records are kept")
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
                        rs.fmt = self._detect_format(rs, now)
                        rs.fmt_pending = rs.fmt is None
                        if rs.fmt is None:
                            continue
                        rs.info.agent_format = rs.fmt
                        self.rec.update_run(rs.key, agent_format=rs.fmt)
                    self._add_source(rs, name, catchup=False)
        # whole files: missing ones when the dir changed, present ones every FULL_CHECK_S,
        # an unparsable final_result.json (mid-write) at every refresh
        for name in WHOLE_FILES:
            old = rs.file_sigs.get(name)
            if old is None and not (dir_changed or full):
                continue
            if old is not None and not full and not (name == "final_result.json" and not rs.finished):
                continue
            new = _sig(os.path.join(td, name))
            if new != old:
                rs.file_sigs[name] = new
                rs.dirty_files = True
        self._scan_submissions(rs, now, full)

    def _scan_submissions(self, rs: RunState, now: float, full: bool) -> None:
        sub_dir = rs.task_dir / "submissions"
        sig = _sig(sub_dir)
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
            except OSError:
                pass
            for n, born in names.items():
                if n not in rs.rounds:
                    parsed = sd._parse_round(n)
                    if parsed is None:
                        continue
                    rs.rounds[n] = RoundState(name=n, kind=parsed[0], first_seen=born)
                    changed = True
                    if self.judge is not None:  # a new submission: ask the judge once soon (else rarely)
                        self.judge.poke(rs.key)
            for n in list(rs.rounds):
                if n not in names:
                    del rs.rounds[n]
                    changed = True
        for rd in rs.rounds.values():
            if rd.has_report and not full:
                continue
            entry = sub_dir / rd.name
            rep = _sig(entry / ("game_result.json" if rd.kind == "game" else "report.json"))
            if rep != rd.report_sig:
                rd.report_sig = rep
                rd.has_report = rep is not None
                changed = True
            if not rd.has_report and rd.kind != "game":
                ls = _sig(entry / "run_instance.log")
                if ls != rd.log_sig:
                    rd.log_sig = ls
                    self._read_instance_log(rd, entry / "run_instance.log", now)
                    changed = True
        if changed:
            rs.dirty_files = True

    def _read_instance_log(self, rd: RoundState, p: Path, now: float) -> None:
        try:
            with open_regular(p) as fp:
                data = fp.read(4 << 20)
        except OSError:
            return
        rd.container_ids.update(m.decode() for m in _JUDGE_STARTED_RE.findall(data))
        errs = _JUDGE_ERR_RE.findall(data)
        if errs:
            rd.log_error = one_line(errs[-1].decode("utf-8", "replace"), 200)
        if (errs or _JUDGE_DONE_RE.search(data)) and not rd.log_terminal:
            rd.log_terminal = True
            rd.terminal_seen = now

    def _new_generation(self, src: TailSource) -> None:
        """A log was truncated / replaced (a re-run in place): forget the facts of its old content."""
        rs = self.runs.get(src.run_key)
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
        rs = self.runs.get(src.run_key)
        if rs is None:
            return
        m = _LOG_HEAD_RE.match(line)
        if not m:
            return
        level = m.group(8)
        msg = m.group(9).decode("utf-8", "replace")
        try:
            t = local_to_epoch(tuple(g.decode() for g in m.group(1, 2, 3, 4, 5, 6)), int(m.group(7)),
                               self._utc_offset(rs))
        except ValueError:
            t = self.clock()
        if level in (b"ERROR", b"CRITICAL"):
            rs.error_times.append(t)
            rs.last_error_msg = one_line(msg, 200)
            # the run's facts are read again (sforge_dir.read_run_info: the harness's end before the
            # agent started is an ERROR as run_agent.log's last record), not only on submission changes
            rs.dirty_files = True
        elif _ENDING_RE.match(msg) and rs.ending_since is None:
            rs.ending_since = t

    def _observe(self, rs: RunState, source: str, evs: list[Event], now: float) -> None:
        rs.new_events += len(evs)
        for e in evs:
            if e.t is not None and (rs.last_event_t is None or e.t > rs.last_event_t):
                rs.last_event_t = e.t
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
                        rs.cost_delta += (u.input_tokens * pr[0] + u.output_tokens * pr[1]
                                          + u.cache_read_tokens * pr[2] + u.cache_write_tokens * pr[3]) / 1e6
                k = _kind(e)
                if k == "tool_call" and e.tool_use_id:
                    pend[e.tool_use_id] = e.t if e.t is not None and e.t_source == "observed" else now
                elif k == "tool_result" and e.tool_use_id:
                    pend.pop(e.tool_use_id, None)
                elif k in ("session_init", "segment_start"):
                    pend.clear()  # a new segment: calls of the old one never get results
        elif source == RUN_LOG:
            for e in evs:
                if _kind(e) == "resume" and e.t is not None:
                    rs.resume_times.append(e.t)
        elif source == TICKS:
            for e in evs:
                k = _kind(e)
                if k == "submission_sent" and e.round:
                    sid = (e.data or {}).get("submission_id")
                    if sid:
                        rs.tick_sids[sid] = e.round
                elif k == "auto_eval_error" and e.t is not None:
                    rs.tick_error_times.append(e.t)
                    rs.last_tick_error = one_line((e.data or {}).get("message") or e.summary, 200)

    # ================================================================== containers
    def _record(self, rs: RunState, kind: Kind, t: float, summary: str, data: dict, gen: str) -> None:
        self._seq += 1
        self._live_events.append(Event(run_key=rs.key, kind=kind, source=DOCKER_SOURCE, generation=gen[:16],
                                       offset=int(t * 1000), sub=self._seq % 100000, t=t,
                                       t_source=TimeSource.OBSERVED, summary=one_line(summary), data=data))

    def _container_event(self, rs: RunState, c: ContainerInfo, state: str, now: float) -> None:
        data = {"id": c.id, "name": c.name, "role": c.role, "state": state, "exit_code": c.exit_code,
                "oom_killed": c.oom_killed, "host": c.host}
        if c.submission_id:
            data["submission_id"] = c.submission_id
        extra = f" (exit {c.exit_code})" if state in ("exited", "dead") and c.exit_code is not None else ""
        if c.oom_killed:
            extra += " OOM-killed"
        self._record(rs, Kind.CONTAINER_STATE, now, f"{c.role} container {c.name}: {state}{extra}", data, c.id)

    def _operator_seen(self, rs: RunState, c: ContainerInfo, now: float) -> None:
        """Attach a pending operator stop/kill of container ``c`` to its run (recorded once)."""
        if not self._operator:
            return
        for ref in list(self._operator):
            if ref == c.name or (len(ref) >= 12 and c.id.startswith(ref)):
                kind = rs.operator_action = self._operator.pop(ref)
                self._record(rs, Kind.CONTAINER_STATE, now, f"work container {c.name}: {kind} asked by the operator",
                             {"id": c.id, "name": c.name, "role": "work", "state": c.state, "operator": kind,
                              "host": c.host}, c.id)

    def _join_containers(self, now: float) -> None:
        dw = self.docker
        assert dw is not None
        by_name = dw.by_name
        # work containers, by the names each run's container would have
        for rs in self.runs.values():
            c = None
            for n in work_names(rs.info.task_id, rs.info.run_id):
                c = by_name.get(n)
                if c is not None:
                    break
            if c is not None and rs.loc.host != self.host and any(
                    r.loc.host == self.host and r.info.task_id == rs.info.task_id and r.info.run_id == rs.info.run_id
                    for r in self.runs.values() if r is not rs):
                c = None  # the local run of that name owns it
            if c is not None:
                c = c.model_copy()
                c.task_id, c.run_id = rs.info.task_id, rs.info.run_id
                if c.id != rs.container_seen_id and rs.container_seen_id is not None:
                    rs.operator_action = None  # a new container (auto-resume, re-run)
                self._operator_seen(rs, c, now)
                prev = rs.container_state
                if c.id != rs.container_seen_id or prev != c.state or (c.oom_killed and not (rs.container and rs.container.oom_killed)):
                    if c.state in ("exited", "dead"):
                        if prev not in ("exited", "dead") or c.id != rs.container_seen_id:
                            rs.container_ended_t = now
                    else:
                        rs.container_ended_t = None
                    self._container_event(rs, c, c.state, now)
                rs.container_seen_id = c.id
                rs.container_state = c.state
                if rs.container is not None and rs.container.id == c.id:
                    c.cpu_percent, c.mem_bytes = rs.container.cpu_percent, rs.container.mem_bytes
                rs.container = c
                if rs.token is None:
                    tok = dw.token_of(c.id)
                    if tok:
                        rs.token = tok
                        self.rec.add_secret(tok)
            elif rs.container_seen_id is not None and rs.container_state != "gone":
                gone = rs.container or ContainerInfo(id=rs.container_seen_id, name=work_names(rs.info.task_id, rs.info.run_id)[0],
                                                     role="work", host=self.host)
                gone = gone.model_copy(update={"state": "gone", "cpu_percent": None, "mem_bytes": None})
                rs.container = gone
                rs.container_state = "gone"
                rs.container_ended_t = now
                self._container_event(rs, gone, "gone", now)
        # judge containers: by the container ids in run_instance.log, else the submission id
        by_cid: dict[str, tuple[RunState, RoundState]] = {}
        by_sid: dict[str, tuple[RunState, Optional[str]]] = {}
        for rs in self.runs.values():
            for rd in rs.rounds.values():
                for cid in rd.container_ids:
                    by_cid[cid[:12]] = (rs, rd)
                if rd.sid:
                    by_sid[rd.sid] = (rs, rd.name)
            for sid, rnd in rs.tick_sids.items():
                by_sid.setdefault(sid, (rs, rnd))
        judges: dict[str, list[ContainerInfo]] = {}
        games: dict[str, list[ContainerInfo]] = {}
        unattributed: list[ContainerInfo] = []
        for c in dw.containers.values():
            if c.role == "judge":
                hit = by_cid.get(c.id[:12])
                owner = hit[0] if hit else None
                if owner is None and c.submission_id in by_sid:
                    cand = by_sid[c.submission_id][0]
                    if cand.info.task_id == c.task_id:
                        owner = cand
                if owner is None:
                    unattributed.append(c)
                else:
                    judges.setdefault(owner.key, []).append(c)
            elif c.role == "game":
                owner = None
                if c.submission_id in by_sid:
                    owner = by_sid[c.submission_id][0]
                else:
                    cands = [r for r in self.runs.values() if r.info.task_id == c.task_id and not r.finished
                             and (r.task.game_mode or any(rd.kind == "game" for rd in r.rounds.values()))]
                    if len(cands) == 1:
                        owner = cands[0]
                if owner is None:
                    unattributed.append(c)
                else:
                    games.setdefault(owner.key, []).append(c)
        self.unattributed = unattributed
        for rs in self.runs.values():
            new_j = judges.get(rs.key, [])
            new_g = games.get(rs.key, [])
            seen = {}
            if new_j:
                self._judges_here = True
            for c in new_j + new_g:
                seen[c.id] = c.state
                if rs.judge_states.get(c.id) != c.state:
                    self._container_event(rs, c, c.state, now)
            for cid in rs.judge_states:
                if cid not in seen:
                    old = next((c for c in rs.judges + rs.games if c.id == cid), None)
                    if old is not None:
                        self._container_event(rs, old.model_copy(update={"state": "gone"}), "gone", now)
            rs.judge_states = seen
            rs.judges, rs.games = new_j, new_g

    def _sample_stats(self, now: float) -> None:
        dw = self.docker
        targets = {rs.container.id: rs.key for rs in self.runs.values()
                   if rs.container is not None and rs.container.state == "running" and not rs.deleted}
        samples = dw.sample(targets)
        for cid, smp in samples.items():
            rs = self.runs.get(targets.get(cid, ""))
            if rs is None or rs.container is None:
                continue
            rs.container.cpu_percent = smp.get("cpu_percent")
            rs.container.mem_bytes = smp.get("mem_bytes")
            if smp.get("mem_limit_bytes") and not rs.container.mem_limit_bytes:
                rs.container.mem_limit_bytes = smp.get("mem_limit_bytes")
            rs.cpu_percent, rs.mem_bytes = smp.get("cpu_percent"), smp.get("mem_bytes")
            cpu = smp.get("cpu_percent")
            mem = smp.get("mem_bytes")
            summ = f"cpu {cpu:.0f}%" if cpu is not None else "cpu ?"
            summ += f", mem {mem / 2**20:.0f} MiB" if mem is not None else ""
            self._record(rs, Kind.RESOURCE_SAMPLE, now, summ,
                         {"container": rs.container.name, "id": cid, "cpu_percent": cpu, "mem_bytes": mem,
                          "mem_limit_bytes": smp.get("mem_limit_bytes"), "sampled_at": smp.get("t")},
                         "stats:" + cid)

    # ================================================================== judge
    def _poll_judge(self, now: float) -> None:
        tokens = {rs.key: rs.token for rs in self.runs.values()
                  if rs.token and not rs.deleted and not rs.finished}
        for key, view in self.judge.poll(tokens).items():
            rs = self.runs.get(key)
            if rs is not None and view.ok:
                before = rs.history.best_round if rs.history is not None else None
                rs.history = view
                if rs.task.assumed and view.best_round and view.best_round != before:
                    rs.dirty_files = True  # the judge's best checks the assumed policy (finalize_run)

    # ================================================================== gradings
    def _grading_state(self, rs: RunState, now: float, docker_ok: bool, all_ids: set[str]) -> None:
        s = self.settings
        live_ids = {c.id[:12] for c in rs.judges if c.state in ("running", "created", "restarting", "paused")}
        limit = float(rs.task.eval_timeout or 600) + 900.0
        for rd in rs.rounds.values():
            if rd.kind in ("game", "manual") or rd.has_report:
                rd.in_flight = False
                if rd.has_report:
                    rd.failed = None
                continue
            judge_up = any(cid[:12] in live_ids or cid[:12] in all_ids for cid in rd.container_ids)
            failed = None
            if judge_up:
                rd.judge_gone_since = None
                rd.judge_seen = True
            elif docker_ok and rd.judge_seen:  # seen on this engine, now gone (a judge on another engine
                # or cluster is never seen here: only its log and the stale rule apply)
                if rd.judge_gone_since is None:
                    rd.judge_gone_since = now
                if now - rd.judge_gone_since >= s.grading_grace_s:
                    failed = rd.log_error or "judge container gone without report.json"
            if failed is None and rd.log_terminal and rd.terminal_seen is not None and not judge_up \
                    and now - rd.terminal_seen >= s.grading_grace_s:
                failed = rd.log_error or "judge finished without report.json"
            if failed is None and not judge_up and not rd.judge_seen and docker_ok and self._judges_here \
                    and rs.loc.host == self.host and now - rd.first_seen >= s.grading_start_grace_s:
                failed = rd.log_error or (f"no judge container appeared in {int(now - rd.first_seen)} s "
                                          "and no report.json")
            if failed is None and not judge_up and now - rd.first_seen > limit:
                failed = rd.log_error or f"no report.json after {int(now - rd.first_seen)} s"
            if failed is not None and rd.failed is None:
                rd.failed = failed
                rs.dirty_files = True
            rd.in_flight = failed is None and rd.failed is None

    # ================================================================== database refresh
    def _refresh_and_finalize(self, now: float) -> None:
        s = self.settings
        due: list[tuple[int, float, RunState]] = []
        for rs in self.runs.values():
            if rs.deleted:
                continue
            if rs.dirty_files and now - rs.last_finalize >= s.finalize_min_interval_s:
                due.append((0, rs.last_finalize, rs))
            elif rs.dirty_finalize and now - rs.last_full_finalize >= s.finalize_interval_s:
                due.append((1, rs.last_full_finalize, rs))
        due.sort(key=lambda x: (x[0], x[1]))
        for _, _, rs in due[: max(1, s.max_finalize_per_poll)]:
            full = True
            try:
                if rs.dirty_files:
                    full = self._refresh_files(rs, now)
                else:
                    self._finalize(rs)
                if rs.message and rs.message.startswith("could not refresh"):
                    rs.message = None
            except Exception as e:  # noqa: BLE001 - one run's trouble stays with that run
                if os.environ.get("EDGETUI_DEBUG"):
                    raise
                self._set_message(rs, one_line(f"could not refresh: {type(e).__name__}: {e}", 200), now)
            rs.last_finalize = now
            rs.dirty_files = False
            if full:  # (a submissions-only refresh leaves a growing run's full recomputation due as it was)
                rs.last_full_finalize = now
                rs.dirty_finalize = False

    def _refresh_files(self, rs: RunState, now: float) -> bool:
        """The whole-file part of :func:`edgetui.ingest.ingest_run` for one run, then finalize.

        A run going on whose aggregates were recomputed less than ``finalize_interval_s`` ago (and
        whose time anchors did not change) gets a submissions-only finalize: a new graded round
        updates its submissions and best-so-far at once, while its event counts, tokens and cost
        stay the recorded ones plus the live deltas (the full recomputation is a third of a
        refresh and runs on its own schedule). Returns whether the finalize was a full one."""
        td = rs.task_dir
        for secret in raw_secrets(td):
            self.rec.add_secret(secret)
        info = sd.read_run_info(rs.loc)
        info.agent_format = rs.fmt
        if info.utc_offset_s is None and rs.info.utc_offset_s is None:
            log = rs.sources.get(RUN_LOG)
            if log is not None and log.last_growth_t is not None:  # lines arriving now: the log's clock vs now
                info.utc_offset_s = sd.infer_log_offset(td / RUN_LOG)
        if info.utc_offset_s is None and rs.info.utc_offset_s is not None:
            info.utc_offset_s = rs.info.utc_offset_s
        elif info.utc_offset_s != rs.info.utc_offset_s:  # started_at (or the log) told the run's offset
            self._retime(rs, rs.info.utc_offset_s, info.utc_offset_s)
        rs.info = info
        self.rec.upsert_run(rs.key, info)
        subs = sd.read_submissions(td, cache=rs.rec_cache)  # unchanged folders are not read again (nor below)
        in_flight = {n for n, rd in rs.rounds.items() if rd.in_flight}
        for srec in subs:
            rd = rs.rounds.get(srec.round)
            if srec.round in in_flight:
                srec.status, srec.error = "in_flight", None
            if rd is not None and srec.submission_id:
                rd.sid = srec.submission_id
        last_log_t = self.conn.execute(
            "SELECT max(t) FROM events WHERE run_key = ? AND source = 'run_agent.log'", [rs.key]).fetchone()[0]
        graded = [x for x in subs if x.status != "in_flight" or x.kind == "game"]
        if rs.finished and not rs.end_marked:  # the run ended: what its transcript's end says (a segment
            rs.end_marked = True               # without a result: incomplete), as an offline ingest records it
            src = rs.sources.get(TRANSCRIPT)
            if src is not None and src.parser is not None:
                ends = src.parser.finish()
                for e in ends:
                    e.run_key = rs.key
                    got = stopped_at_budget(info.final, e.summary or "", e.data or {}) \
                        if e.kind == "segment_end" else None
                    if got is not None:  # the harness stopped the agent at the run's budget: not a cut
                        e.summary, e.data, e.is_error, e.level = got[0], got[1], False, None
                if ends:
                    settle(self.conn)
                    self.rec.insert_events(rs.key, ends)
        file_events = whole_file_events(td, graded, info, last_log_t, sub_cache=rs.sub_cache)
        settle(self.conn)
        added = self.rec.replace_file_events(rs.key, file_events, line_sources=LINE_SOURCES)
        rs.subs = subs
        full = (rs.finished or rs.last_full_finalize <= 0 or now - rs.last_full_finalize >= self.settings.finalize_interval_s
                or rs.aligned != (rs.finished, info.started_at, info.ended_at))
        if full:
            self._finalize(rs)
        else:
            rs.new_events += added
            self._finalize(rs, aggregates=False)
        return full

    def _finalize(self, rs: RunState, aggregates: bool = True) -> None:
        """:func:`edgetui.ingest.finalize_run` for one run, then its runs row read back
        (``aggregates=False``: see :meth:`_refresh_files`)."""
        _fill_model_agent(self.rec, rs.key, rs.info)
        settle(self.conn)
        live_end = None
        if rs.fmt and not rs.finished:  # a run going on: its transcript's last write ends the known lines
            live_end = _mtime(rs.task_dir / TRANSCRIPT)
        # once aligned, a live run's new lines carry their observed time: aligning again (a third of a
        # finalize) would change nothing unless some event still has no time (a file just read, a
        # catch-up that went on) or the run's start / end / finish changed (new anchors)
        anchors = (rs.finished, rs.info.started_at, rs.info.ended_at)
        align = rs.aligned != anchors or bool(self.conn.execute(
            "SELECT 1 FROM events WHERE run_key = ? AND t IS NULL LIMIT 1", [rs.key]).fetchall())
        finalize_run(self.rec, rs.key, rs.info, rs.task, rs.subs, TRANSCRIPT if rs.fmt else None,
                     live_end=live_end, align=align, aggregates=aggregates,
                     judge_best=rs.history.best_round if rs.history is not None else None)
        rs.aligned = anchors
        self._load_row(rs, aggregates=aggregates)
        if aggregates:
            rs.recorded_status = rs.recorded_infra = None  # finalize_run wrote its own row: write ours again
            self._check_early_events(rs)

    def _check_early_events(self, rs: RunState) -> None:
        """Say so when events are timed more than EARLY_EVENT_S before the run's start: recorded
        timestamps of lines copied from another run (a sample copied to try live mode) put them
        thousands of hours before it, where the timeline shows them; nothing is changed."""
        start = rs.info.started_at
        if start is None:
            return
        n = self.conn.execute("SELECT count(*) FROM events WHERE run_key = ? AND t < ?",
                              [rs.key, start - EARLY_EVENT_S]).fetchall()[0][0]
        if n and n != rs.early_events:
            msg = f"{n} event{'s' if n != 1 else ''} timed over a day before the run's start (copied lines?)"
            self._set_message(rs, msg, self.clock())
            self._note(f"{rs.key}: {msg}")
        rs.early_events = n

    def _record_statuses(self) -> None:
        todo = [rs for rs in self.runs.values() if not rs.deleted and
                (rs.recorded_status != rs.status or rs.recorded_infra != bool(rs.error_times))]
        if not todo:
            return
        # the infra flag too: an ERROR line arriving live (the file scan runs on submission changes)
        now = self.clock()
        if self._update_runs({"run_key": [rs.key for rs in todo], "status": [rs.status for rs in todo],
                              "infra": [bool(rs.error_times) for rs in todo],
                              "reason": [self._status_reason(rs, now) for rs in todo]},
                             "status = s.status, infra_error = coalesce(runs.infra_error, FALSE) OR s.infra, "
                             "status_reason = s.reason",
                             "run statuses"):
            for rs in todo:
                rs.recorded_status = rs.status
                rs.recorded_infra = bool(rs.error_times)

    def _status_reason(self, rs: RunState, now: float) -> Optional[str]:
        """Why the run's status is what it is, in its source's words (as :func:`edgetui.ingest.finalize_run`
        words it offline): a harness that ended before the agent started; None otherwise."""
        if rs.status == "aborted" and self._harness_ended(rs, now):
            return harness_reason(rs.info.harness_error)
        return None

    def _update_runs(self, columns: dict[str, list], sets: str, what: str) -> bool:
        """``UPDATE runs SET <sets>`` from one row per run (``columns`` incl. ``run_key``, the row
        aliased ``s``) in one statement; a failure is a note. Returns whether it was written."""
        try:
            settle(self.conn)
            self.conn.register("_edgetui_live_update", pa.table(columns))
            try:
                self.conn.execute(f"UPDATE runs SET {sets} FROM _edgetui_live_update s WHERE runs.run_key = s.run_key")
            finally:
                self.conn.unregister("_edgetui_live_update")
            return True
        except Exception as e:  # noqa: BLE001
            self._note(one_line(f"could not record {what}: {e}", 200))
            return False

    @staticmethod
    def _last_event_t(rs: RunState) -> Optional[float]:
        """The run's last event time: the recorded row's, or a newer one tailed since."""
        a, b = rs.row.get("last_event_at"), rs.last_event_t
        return b if a is None else (a if b is None or a >= b else b)

    def _record_rows(self) -> None:
        """Bring the live figures of each growing run's ``runs`` row up to date (events, last event,
        tokens, cost: the recorded aggregates plus what arrived since), in one UPDATE. The full
        recomputation (alignment, exact per-message usage) still runs every ``finalize_interval_s``."""
        rows = []
        for rs in self.runs.values():
            if rs.deleted or not (rs.new_events or rs.cost_delta or any(rs.tok_delta)):
                continue
            r = rs.row
            sig = (rs.new_events, tuple(rs.tok_delta), rs.cost_delta, rs.last_event_t)
            if rs._row_sig == sig:
                continue
            last = self._last_event_t(rs)
            cost = r.get("cost_usd")
            if rs.cost_delta:
                cost = (cost or 0.0) + rs.cost_delta
            rows.append((rs, sig, {
                "run_key": rs.key, "n_events": int(r.get("n_events") or 0) + rs.new_events, "last_event_at": last,
                "input_tokens": int(r.get("input_tokens") or 0) + rs.tok_delta[0],
                "output_tokens": int(r.get("output_tokens") or 0) + rs.tok_delta[1],
                "cache_read_tokens": int(r.get("cache_read_tokens") or 0) + rs.tok_delta[2],
                "cache_write_tokens": int(r.get("cache_write_tokens") or 0) + rs.tok_delta[3],
                "cost_usd": cost}))
        if not rows:
            return
        cols = list(rows[0][2])
        if self._update_runs({c: [x[2][c] for x in rows] for c in cols},
                             ", ".join(f"{c} = s.{c}" for c in cols if c != "run_key"), "the runs table's live figures"):
            for rs, sig, _ in rows:
                rs._row_sig = sig

    # ================================================================== status
    def _status(self, rs: RunState, now: float, docker_ok: bool) -> str:
        s = self.settings
        if rs.deleted:
            return rs.status
        if rs.finished:
            return "finished"
        grading = any(rd.in_flight for rd in rs.rounds.values()) or bool(self._grading_judges(rs)) or \
            bool(rs.history is not None and rs.history.running)
        ending = rs.ending_since is not None and now - rs.ending_since < s.finish_grace_s
        known = docker_ok and rs.loc.host == self.host
        if self._harness_ended(rs, now):  # crashed before the agent started: not "running" for 2 hours,
            return "aborted"              # even while its work container is left running (the orphan)
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
        acts = [x for x in (rs.last_activity_t, rs.last_growth_t, rs.info.started_at,
                            max((rd.first_seen for rd in rs.rounds.values()), default=None)) if x is not None]
        if acts and now - max(acts) < s.abort_after_s:
            return "grading" if grading else "running"
        return "aborted"

    @staticmethod
    def _grading_judges(rs: RunState) -> list:
        """Judge containers of ``rs`` still grading: running, and their submission's report.json not
        written yet (SForge's containers ignore SIGTERM and are killed ~15 s after the report: a
        judge whose report is written is done)."""
        done_ids: set[str] = set()
        done_sids: set[str] = set()
        for rd in rs.rounds.values():
            if rd.has_report:
                done_ids.update(c[:12] for c in rd.container_ids)
                if rd.sid:
                    done_sids.add(rd.sid)
        return [j for j in rs.judges if j.state == "running" and j.id[:12] not in done_ids
                and not (j.submission_id and j.submission_id in done_sids)]

    def _harness_ended(self, rs: RunState, now: float) -> bool:
        """run_agent.log ends on an ERROR (+ traceback), has been quiet for 60 s, no started_at, no
        final result: the harness ended before the agent started (its words: ``info.harness_error``)."""
        from ..ingest import HARNESS_QUIET_S

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
            run_key=rs.key, status=rs.status, finished=rs.finished, deleted=rs.deleted,
            started_at=rs.info.started_at, first_seen=rs.first_seen, has_transcript=TRANSCRIPT in rs.sources,
            last_growth_t=rs.last_growth_t, pending_calls=len(rs.pending), oldest_pending_t=oldest,
            last_new_best_t=rs.last_new_best_t, best_round=rs.row.get("best_round"),
            resume_times=rs.resume_times, error_times=rs.error_times, last_error_msg=rs.last_error_msg,
            ending_since=rs.ending_since,
            container_id=c.id if c else rs.container_seen_id, container_name=c.name if c else None,
            container_state=(c.state if c else None) if (self.docker is not None and self.docker.available) else
            (rs.container_state if rs.container_state == "gone" else None),
            container_exit_code=c.exit_code if c else None, container_oom=bool(c and c.oom_killed),
            container_ended_t=rs.container_ended_t, failed_rounds=failed, judge_errors=jerr,
            container_finished_at=c.finished_at if c is not None else None,
            operator_action=rs.operator_action if (c is not None and rs.operator_action) else None,
            tick_error_times=rs.tick_error_times, last_tick_error=rs.last_tick_error,
            ended_t=_mtime(rs.task_dir / "final_result.json") if rs.finished else None,
            harness_error=rs.info.harness_error if self._harness_ended(rs, now) or (
                c is not None and c.state == "running" and rs.info.harness_error) else None,
        )

    def _alarms(self, rs: RunState, now: float) -> None:
        if rs.deleted:
            return
        facts = self._facts(rs, now)
        rs.conds = evaluate(facts, self.settings, now)
        new = self.book.update(rs.key, rs.conds, now)
        for a in new:
            self._seq += 1
            ev = alarm_event(a, self._seq % 100000)
            self._live_events.append(ev)
            self.last_alarms.append(a)
            self.alarm_cmd.fire({**a.model_dump(), "run_id": rs.info.run_id, "task_id": rs.info.task_id,
                                 "host": rs.loc.host, "status": rs.status, "run_dir": str(rs.task_dir)})

    # ================================================================== snapshots
    def _live_run(self, rs: RunState, now: float) -> LiveRun:
        row = rs.row
        info = rs.info
        started = info.started_at if info.started_at is not None else row.get("started_at")
        final = info.final or {}
        if rs.status == "finished":
            end = info.ended_at or row.get("ended_at")
            if end is None and started is not None and isinstance(final.get("runtime_seconds"), (int, float)):
                end = started + final["runtime_seconds"]
        elif rs.status in ("aborted", "gone"):
            end = rs.container_ended_t or rs.last_activity_t
        else:
            end = now
        elapsed = (end - started) if (started is not None and end is not None) else None
        score_task = bool(row.get("score_task"))
        best_display = display_value(row.get("best_score"), row.get("best_pass_rate"), score_task)
        toks = sum(int(row.get(k) or 0) for k in ("input_tokens", "output_tokens", "cache_read_tokens",
                                                   "cache_write_tokens")) + sum(rs.tok_delta)
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
        acked = {k for k, a in newest_per_key(self.book.history.get(rs.key, [])).items()
                 if k in keys and a.acked_at is not None} if keys else set()
        for r in active:
            flags.append(f"ack:{r}" if all(cd.key in acked for cd in rs.conds if cd.rule == r) else f"alarm:{r}")
        last_ev = self._last_event_t(rs)
        grading_rounds = sorted(n for n, rd in rs.rounds.items() if rd.in_flight)
        resume_count = info.resume_count if (rs.finished and info.resume_count is not None) else len(rs.resume_times)
        return live_run_from(dict(
            run_key=rs.key, host=rs.loc.host, run_id=info.run_id, task_id=info.task_id, run_dir=str(rs.task_dir),
            agent=info.agent or row.get("agent"), model=info.model or row.get("model"), status=rs.status,
            infra_error=infra, flags=flags, started_at=started, elapsed_s=elapsed, budget_s=info.timeout_s,
            best_display=best_display, best_round=row.get("best_round"), score_task=score_task,
            agent_submissions=int(row.get("agent_submissions") or 0),
            auto_submissions=int(row.get("auto_submissions") or 0), last_event_at=last_ev, tokens=toks,
            cost_usd=cost, cpu_percent=c.cpu_percent if c is not None and c.state == "running" else None,
            mem_bytes=c.mem_bytes if c is not None and c.state == "running" else None,
            container=c, judges_running=len(self._grading_judges(rs)),
            alarms=list(self.book.history.get(rs.key, []))[-20:],
            message=rs.message if (rs.message_sticky or now - rs.message_t < MESSAGE_TTL_S) else None,
            best_pass_rate=row.get("best_pass_rate"), best_score=row.get("best_score"),
            best_score_0_100=row.get("best_score_0_100"), game_sessions=int(row.get("game_sessions") or 0),
            n_events=int(row.get("n_events") or 0) + rs.new_events, resume_count=int(resume_count or 0),
            pending_tool_calls=len(rs.pending), last_growth_at=rs.last_growth_t, judges=list(rs.judges),
            games_running=sum(1 for g in rs.games if g.state == "running"), grading_rounds=grading_rounds,
            active_alarms=active, deleted=rs.deleted, active_keys=keys, operator_action=rs.operator_action,
            judge_says=judge_line(rs.history, row.get("best_round"), now,
                                  assumed_policy=(f"{row.get('selection')}/{row.get('score_direction')}"
                                                  if rs.task.assumed else None)),
            host_state=(hs := self._host_state(rs.loc.run_key)) and hs[0], host_rtt_s=hs[1] if hs else None,
        ))

    def _host_state(self, run_key: str) -> Optional[tuple]:
        name = self._run_root_host.get(run_key)
        if name is None or self.host_state_of is None:
            return None
        try:
            return self.host_state_of(name)
        except Exception:  # noqa: BLE001
            return None

    # ================================================================== file watching
    def _watch_files(self, stop: threading.Event, force_polling: bool, interval: float) -> None:
        """Set the wake event whenever something changes under a runs root (restarts on errors)."""
        try:
            import watchfiles
        except ImportError:  # pragma: no cover - a dependency
            return
        while not stop.is_set():
            roots = [str(r) for r in self.roots if r.exists()]
            if not roots:
                stop.wait(interval)
                continue
            try:
                for _changes in watchfiles.watch(*roots, stop_event=stop, force_polling=force_polling,
                                                 poll_delay_ms=int(self.poll_delay_s * 1000), debounce=400, step=50,
                                                 rust_timeout=int(max(interval, 1.0) * 1000), yield_on_timeout=True,
                                                 raise_interrupt=False, ignore_permission_denied=True,
                                                 watch_filter=None):  # any change wakes us: no per-path filter
                    if _changes:
                        self._wake.set()
                        self._watching = True
                        if not self._rediscover and any(ch == watchfiles.Change.added and not self._known(p)
                                                        for ch, p in _changes):
                            self._rediscover = True
                    if stop.is_set():
                        return
                    if any(not Path(r).exists() for r in roots) or len(roots) != sum(1 for r in self.roots if r.exists()):
                        break  # a root came or went: watch the new set
            except Exception as e:  # noqa: BLE001 - root deleted, inotify limits...
                self._watching = False
                with self._lock:
                    self._note(one_line(f"file watching paused: {type(e).__name__}: {e}", 200))
                stop.wait(interval)


#: seconds between full rescans of the runs roots while the file watcher reports new directories
WATCHED_DISCOVERY_S = 30.0


def judge_line(view: Any, files_best: Optional[str], now: float,
               assumed_policy: Optional[str] = None) -> Optional[str]:
    """The judge's own view of a run in one line (its /history: what it is grading now, what it has
    graded, its best), beside what the files say when they disagree; None without a poll.
    ``assumed_policy`` (``"selection/direction"``, set when no task JSON gave the policy): the line
    says whether that policy reproduces the judge's best (the judge knows the task's real policy)."""
    if view is None:
        return None
    if not view.ok:
        return f"judge: {view.message or 'not answering'}"
    parts = [f"judge ({fmt_age(now - view.fetched_at)} ago):"]
    if view.running:
        parts.append("grading " + ", ".join(view.running[:3]) + ("…" if len(view.running) > 3 else ""))
    parts.append(f"{view.agent_submissions} agent + {view.auto_submissions} auto graded")
    if view.best_round:
        parts.append(f"best {view.best_round}")
        if files_best and files_best != view.best_round:
            parts.append(f"(the files say {files_best})")
        if assumed_policy:
            parts.append(f"assumed policy {assumed_policy} "
                         + ("agrees with the judge" if files_best == view.best_round
                            else "does NOT reproduce the judge's best"))
    return " ".join(parts[:1]) + " " + " · ".join(parts[1:])


def _mtime(p: Path) -> Optional[float]:
    try:
        return p.stat().st_mtime
    except OSError:
        return None
