"""The edgetui Textual app: run picker and replay screen over one DuckDB file.

``EdgeTUIApp(db_path)`` opens the picker; ``EdgeTUIApp(db_path, run_key)``
opens the replay of that run directly (``q`` then quits). Screens read the
database only through :mod:`edgetui.store.queries`, in thread workers, on cursors of
the one connection the app holds (:attr:`EdgeTUIApp.conn`).

Opening: read-write by default (``read_only=True`` for a viewer); when another
process holds the file, a read-only snapshot copy is opened instead and the
app says so. When the database holds no run at all the ``on_empty`` hook runs
once (default: :func:`default_on_empty`, which records the bundled sample runs
through ``edgetui.record.ingest.ingest_samples`` if that exists); the connection is
closed around the hook so it can open the file itself.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, cast

import duckdb
from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from edgetui.control_chars import visible, visible_lines
from edgetui.store.database import (
    DatabaseBusy,
    DatabaseReadOnly,
    HolderServer,
    SocketDirError,
    cap_pool,
    close_when_idle,
    default_db_path,
    open_db,
    snapshot_copy,
)
from edgetui.errors import UserError
from edgetui.store.arrow_wire import encode_rows
from edgetui.store.holder_connection import HolderConnection
from edgetui.store.queries import count_runs
from edgetui.error_log import EXIT_INTERNAL, report_internal_error
from edgetui.live.model import LiveRun
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import ReplayScreen, replay_commands

from edgetui.views.screens.compare import CompareScreen
from edgetui.views.terminal_gone import TERMINAL_GONE_STATUS, hung_up, terminal_fds
from edgetui.views.screens.live_common import LiveSupervisor, PriorFitter
from edgetui.views.screens.live_run import SupervisorActions
from edgetui.views.screens.runs import RunsUpdated
from edgetui.views.screens.runs import EventsRecorded
from edgetui.views.screens.runs import RunsScreen
from edgetui.views.screens.runs import dispatch_events_recorded
from edgetui.views.screens.runs import dispatch_runs_updated
from edgetui.record.forget_and_tag import apply_request
from edgetui.views.screens.live_run import LiveRunScreen
from edgetui.views.screens.moments import QueueScreen
from edgetui.views.screens.sql import SqlScreen
from edgetui.views.screens.leaderboard import LeaderboardScreen
from edgetui.views.screens.screen_keys import HELP_KEYS, show_keys

if TYPE_CHECKING:  # (loaded only when runs are watched: see _start_live)
    from edgetui.hosts.feed import RemoteFeed
    from edgetui.live.remote_hosts import HostLinks

__all__ = ["EdgeTUIApp", "run_app", "default_on_empty"]


def default_on_empty(db_path: Path) -> Optional[str]:
    """Record the bundled sample runs into ``db_path``; returns a note for the user or ``None``."""
    # lazy: the ingest (pyarrow, the parsers) loads only when samples are recorded
    from edgetui.record.ingest import ingest_samples

    ingest_samples(Path(db_path))
    return None


class LiveConfig:
    """Live supervision settings from the command line (see docs/live.md).

    ``runs_dirs``: runs roots to watch; ``home``: open the runs screen at once
    (``edgetui watch`` / explicit ``--runs-dir``) instead of only when a live run
    is found; ``docker``: watch the local engine; the rest go to
    :class:`edgetui.live.supervisor.Supervisor`. ``hosts``: remote hosts
    (:class:`edgetui.hosts.config.HostConfig`) whose runs roots are supervised too, each through
    one SSH connection (:class:`edgetui.hosts.feed.RemoteFeed`).
    """

    def __init__(
        self,
        runs_dirs: list[Path],
        *,
        home: bool = False,
        judge_url: Optional[str] = None,
        on_alarm: Optional[str] = None,
        poll: bool = False,
        docker: bool = True,
        tasks_dir: Optional[Path] = None,
        interval: float = 2.0,
        host: str = "local",
        hosts: Optional[list] = None,
        feed_options: Optional[dict] = None,
        pods: Optional[Callable[[Callable[[], None], dict[str, Any]], Any]] = None,
    ) -> None:
        self.runs_dirs = runs_dirs
        #: makes the engine of SForge's pods on Kubernetes (edgetui.hosts.pod_watch.PodEngine), given
        #: the supervisor's wake callback and the SSH hosts by name (a cluster may be reached via one);
        #: None: no cluster watched
        self.pods = pods
        self.hosts = list(hosts or [])
        self.feed_options = dict(feed_options or {})
        self.home = home
        self.judge_url = judge_url
        self.on_alarm = on_alarm
        self.poll = poll
        self.docker = docker
        self.tasks_dir = tasks_dir
        self.interval = interval
        self.host = host


class EdgeTUIApp(App):
    """edgetui's terminal app (see the module docstring)."""

    CSS_PATH = "app.tcss"
    TITLE = "edgetui"
    BINDINGS = [Binding("f2", "live_runs", "live runs", show=False), Binding(HELP_KEYS, "help", "keys", show=False)]

    def action_help(self) -> None:
        """``F1`` (``?`` where no input has the focus): the top screen's keys."""
        show_keys(self)

    def __init__(
        self,
        db_path: Path | str,
        run_key: Optional[str] = None,
        *,
        read_only: bool = False,
        clock: Optional[Callable[[], float]] = None,
        on_empty: Optional[Callable[[Path], Optional[str]]] = None,
        live: Optional[LiveConfig] = None,
        start_at: Optional[float] = None,
        compare: Optional[dict] = None,
        sql_timeout: Optional[float] = None,
        through_holder: bool = False,
    ) -> None:
        super().__init__()
        #: seconds a query of the SQL screen may run (``--sql-timeout``; None: no limit of the app's own,
        #: the holder's 30 s when another process holds the file)
        self.sql_timeout = sql_timeout
        #: read through the socket of the process holding the file, never opening it (a browser tab
        #: of ``edgetui serve``: :mod:`edgetui.store.holder_connection`); writes go as typed requests
        self.through_holder = through_holder
        self.start_at = start_at
        self.compare = compare  # {"run_keys": [...]} or {"groups": [...]}: open the compare screen
        self.live = live
        #: the live core's supervisor while runs are watched (:meth:`_start_live`), else None
        self.supervisor: Optional[LiveSupervisor] = None
        self._live_thread: Optional[threading.Thread] = None
        self._live_stop: Optional[threading.Event] = None
        self._runs_screen_shown = False
        self.live_actions: Optional[SupervisorActions] = None  # kept across a supervisor restart (screens hold it)
        #: the remote hosts' feeds (SSH connections) and their links to the supervisor, while watched
        self._feeds: list[RemoteFeed] = []
        self.host_links: Optional[HostLinks] = None
        #: answers other edgetui processes while this app holds the database file (:meth:`_serve`)
        self.holder: Optional[HolderServer] = None
        #: fits the forecast prior's per-run fits in the background (made on first use by a live screen)
        self.prior_fitter: Optional[PriorFitter] = None
        #: the runs screen's sort, filter and selection, kept for the next runs screen (F2)
        self.runs_view: Optional[dict] = None
        #: runs whose moments the moments queue built in this app (each once)
        self.moments_built: set[str] = set()
        self.db_path = Path(db_path).expanduser()
        self.run_key = run_key
        self.read_only = read_only
        self.clock = clock or time.monotonic
        self.on_empty = on_empty if on_empty is not None else default_on_empty
        self.conn: Optional[duckdb.DuckDBPyConnection] = None
        self.snapshot: bool = False
        self.empty_note: Optional[str] = None
        #: why the app could not start (one line), raised by :func:`run_app` once the terminal is back
        self.startup_error: Optional[str] = None
        #: the same, when it is a user error (:func:`run_app` raises it for the CLI to print)
        self.startup_exc: Optional[UserError] = None
        #: an internal error's one line (:func:`edgetui.error_log.report_internal_error`), printed by
        #: :func:`run_app` once the terminal is back
        self.internal_error: Optional[str] = None
        self._empty_done = False

    def _handle_exception(self, error: Exception) -> None:
        """The app's one handler of an exception no screen handled (a bug): its traceback to the log
        file, the app ends with :data:`EXIT_INTERNAL`, and :func:`run_app` prints the one line
        instead of Textual's traceback with local variables (which could hold a run's secrets).
        ``EDGETUI_DEBUG=1`` keeps Textual's traceback."""
        if os.environ.get("EDGETUI_DEBUG"):
            super()._handle_exception(error)
            return
        if self.internal_error is None:  # the first one says it; later ones (the app closing) log only
            self.internal_error = report_internal_error(error, "the app")
        else:
            report_internal_error(error, "the app, after an earlier internal error")
        self._return_code = EXIT_INTERNAL
        if self._exception is None:  # Textual's test pilot raises it at the end of run_test, as before
            self._exception = error
            self._exception_event.set()
        self._close_messages_no_wait()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: Optional[float] = None,
        markup: bool = True,
    ) -> None:
        """Every toast of the app (the screens' and widgets' ``notify`` end here): its text is shown
        as typed, never read as markup, and with control characters escaped (toasts carry run keys,
        file names and error messages taken from run content). ``markup`` is accepted and ignored."""
        super().notify(
            visible_lines(str(message)), title=visible(str(title)), severity=severity, timeout=timeout, markup=False
        )

    # ------------------------------------------------------------------ files delivered

    def on_delivery_complete(self, event: events.DeliveryComplete) -> None:
        """A report (``R``) or an export saved in a terminal: where; in a browser: downloaded."""
        if event.name and event.name.startswith("the "):
            where = f"saved: {event.path}" if event.path is not None else "downloaded by the browser"
            self.notify(f"{event.name[4:]} {where}", timeout=8)

    def on_delivery_failed(self, event: events.DeliveryFailed) -> None:
        if event.name and event.name.startswith("the "):
            why = " ".join(str(event.exception).split()) or type(event.exception).__name__
            self.notify(f"{event.name[4:]} not delivered: {why}", severity="error", timeout=8)

    # ------------------------------------------------------------------ database

    def _open(self) -> duckdb.DuckDBPyConnection:
        if self.through_holder:
            held = HolderConnection(self.db_path)
            try:
                count_runs(cast(duckdb.DuckDBPyConnection, held))  # the holder answers, or one line why not
            except (ConnectionError, RuntimeError) as e:
                held.close()
                raise RuntimeError(f"cannot read {self.db_path} through its holder: {e}") from None
            self.read_only = True
            # (the read side takes it where it takes a DuckDB connection: the calls it makes are there)
            return cast(duckdb.DuckDBPyConnection, held)

        def note(text: str) -> None:  # a database recovered from its WAL, or read as is
            self.notify(text, title="database", severity="warning", timeout=10, markup=False)

        try:
            try:
                conn = open_db(self.db_path, read_only=self.read_only, note=note)
            except DatabaseReadOnly as e:  # a read-only mount, file or directory: replay and reads work
                conn = open_db(self.db_path, read_only=True, note=note)
                self.read_only = True
                note(f"opened read-only: {e}")
            serve = not self.read_only
        except DatabaseBusy as e:
            self.snapshot = True
            self.notify(f"{e}\nShowing a read-only snapshot.", title="database busy", severity="warning", timeout=10)
            conn, serve = snapshot_copy(self.db_path), False
        if self.live is None:  # replay only: DuckDB's buffer pool bounded (db.REPLAY_MEMORY_LIMIT)
            cap_pool(conn)
        if serve:
            self._serve(conn)
        return conn

    def _startup_failed(self, e: Exception) -> None:
        """Keep why the database could not be opened: a :class:`~edgetui.errors.UserError` as it is
        (its line names the file and what to do), anything else as one line naming the file."""
        if isinstance(e, UserError):
            self.startup_exc = e
            self.startup_error = str(e)
        else:
            self.startup_error = " ".join(f"cannot open {self.db_path}: {e}".split())

    def on_mount(self) -> None:
        if not self.is_headless:
            self._watch_terminal()
        try:
            self.conn = self._open()
        except Exception as e:  # noqa: BLE001 - a damaged or foreign file, no permission: one line after the terminal is back
            self._startup_failed(e)
            self.exit(return_code=self.startup_exc.exit_code if self.startup_exc else 2)
            return
        if self.run_key:
            self.push_screen(ReplayScreen(self.run_key, clock=self.clock, direct=True, start_at=self.start_at))
        else:
            self.push_screen(PickerScreen())
        if self.compare:
            self.push_screen(CompareScreen(**self.compare))
        if self.live is not None and not self.snapshot and not self.read_only:
            self._start_live()

    def _watch_terminal(self) -> None:
        """End the app when its terminal goes away without a SIGHUP (:mod:`edgetui.views.terminal_gone`),
        checked every second: it would otherwise spin and hold the database for good."""

        fds = terminal_fds()
        if not fds:
            return

        def check() -> None:
            if hung_up(fds):
                self.exit(return_code=TERMINAL_GONE_STATUS)

        self.set_interval(1.0, check, name="edgetui-terminal-gone")

    # ------------------------------------------------------------------ live supervision

    def _start_live(self) -> None:
        # lazy: the live supervisor and its alarm settings load only when runs are watched, not for a replay
        from edgetui.live import alarms, supervisor

        # lazy: the SSH stack loads only when a host is watched, not for a replay
        from edgetui.hosts.feed import RemoteFeed

        cfg = self.live
        if cfg is None:
            return
        notes: list[str] = []
        settings = alarms.load_settings(messages=notes)  # <user config dir>/edgetui/alarms.toml or .json
        self._feeds = [RemoteFeed(h, **cfg.feed_options) for h in cfg.hosts]
        # (a feed's roots are (image directory, host name) pairs, which the Supervisor takes beside
        # plain paths though its annotation says paths only: i35-sup's coordinator types both)
        runs_dirs: list[Any] = [*cfg.runs_dirs, *(r for f in self._feeds for r in f.roots())]
        real = supervisor.Supervisor(
            self.conn,
            runs_dirs,
            docker_client="auto" if cfg.docker else None,
            judge_url=cfg.judge_url,
            on_alarm_cmd=cfg.on_alarm,
            tasks_dir=cfg.tasks_dir,
            host=cfg.host,
            settings=settings,
        )
        sup: LiveSupervisor = real
        self.supervisor = sup
        for n in notes:
            self.notify(n, title="alarm settings", severity="warning", timeout=10)
        if self.live_actions is not None:
            self.live_actions.sup = sup  # screens keep their actions object across a restart
        else:
            self.live_actions = SupervisorActions(sup)
        if cfg.home:
            self._show_runs_screen()

        def on_update(runs: list[LiveRun]) -> None:

            links = self.host_links
            self.post_message(RunsUpdated(list(runs), list(sup.messages), links.rows() if links is not None else None))

        def on_events(run_keys: set[str]) -> None:

            self.post_message(EventsRecorded(run_keys))

        sup.on_events = on_events
        # lazy: the live supervisor loads only when runs are watched, not for a replay
        from edgetui.live.remote_hosts import HostLinks

        if cfg.pods is not None:
            sup.add_cluster(cfg.pods(sup.wake, {f.name: f.host for f in self._feeds}).start())

        # always: the hosts view lists this machine first, remote hosts (if any) after it
        self.host_links = HostLinks(self._feeds, docker=cfg.docker).attach(sup).start()

        self._start_team_push(real)
        self._live_thread, self._live_stop = sup.start(interval=cfg.interval, on_update=on_update, poll=cfg.poll)

    def _start_team_push(self, sup: Any) -> None:
        """With a team record configured (docs/team.md): the supervisor syncs with it continuously."""
        # lazy: the team sync's stack (ADBC) loads only when a team record is configured
        from edgetui.live import team_push

        try:
            cfg = team_push.configured_team()
        except team_push.TeamError as e:  # a bad team.toml: said, and the watcher goes on without it
            self.notify(str(e), title="team record", severity="warning", timeout=10)
            return
        if cfg is not None:
            sup.start_team_push(team_push.TeamPush(sup.conn, cfg, sup.note))

    def _show_runs_screen(self) -> None:

        if not self._runs_screen_shown:
            self._runs_screen_shown = True
            self.push_screen(RunsScreen(actions=self.live_actions))

    def on_events_recorded(self, message: EventsRecorded) -> None:

        dispatch_events_recorded(self, message.run_keys)

    def on_runs_updated(self, message: RunsUpdated) -> None:
        """A supervisor refresh: the runs screen becomes home as soon as anything is live."""

        if not self._runs_screen_shown and any(r.status in ("running", "grading") for r in message.runs):
            self._show_runs_screen()
            self.call_after_refresh(dispatch_runs_updated, self, message.runs, message.messages, message.hosts)
        dispatch_runs_updated(self, message.runs, message.messages, message.hosts)

    def _stop_live(self) -> None:
        links = self.host_links
        if links is not None:
            links.close()
        else:
            for f in self._feeds:
                f.close()
        self._feeds = []
        self.host_links = None
        if self._live_stop is not None:
            self._live_stop.set()
            if self._live_thread is not None:
                self._live_thread.join(timeout=10)
            self._live_stop = None
        if self.supervisor is not None:
            self.supervisor.close()
            self.supervisor = None

    def _serve(self, conn: duckdb.DuckDBPyConnection) -> None:
        """Answer `edgetui sql` / `edgetui runs` from other terminals while this app holds the file."""
        self._stop_serving()
        try:
            self.holder = HolderServer(conn, self.db_path, on_request=self._holder_request, encode_arrow=encode_rows)
        except (OSError, SocketDirError) as e:  # no socket: other processes get the PID + --snapshot message
            self.holder = None
            self.notify(f"cannot serve other edgetui commands: {e}", severity="warning", timeout=6)

    def _holder_request(self, req: dict) -> dict:
        """A typed write from another edgetui process (forget, tag): through the supervisor when
        one runs (between its refreshes), else on this app's connection."""

        sup = self.supervisor
        if sup is not None:
            return sup.apply_request(req)
        return apply_request(self.conn, req) if self.conn is not None else {"error": "no database open"}

    def _stop_serving(self) -> None:
        if self.holder is not None:
            self.holder.close()
            self.holder = None

    def on_unmount(self) -> None:
        self._stop_live()
        self._stop_serving()
        if isinstance(self.conn, HolderConnection):
            self.conn.close()
        else:
            close_when_idle(self.conn)  # a view's worker may still be reading
        self.conn = None

    # ------------------------------------------------------------------ navigation

    def open_run(self, run_key: str) -> None:
        """Open ``run_key`` over the picker: the live run screen when the supervisor watches it, else
        its replay."""
        sup = self.supervisor
        live = next((r for r in (sup.last_runs if sup is not None else []) if r.run_key == run_key), None)
        if live is not None:
            self.push_screen(LiveRunScreen(run_key, actions=self.live_actions, live=live))
            return
        self.push_screen(ReplayScreen(run_key, clock=self.clock))

    def open_moment(self, run_key: str, round: str) -> None:
        """The replay of ``run_key`` at ``round``'s judge result (the moments queue)."""
        self.push_screen(ReplayScreen(run_key, clock=self.clock, start_round=round))

    def open_sql(self, run_key: Optional[str] = None) -> None:
        """``F6``: the SQL screen (scoped to ``run_key`` when opened from its replay)."""
        self.push_screen(SqlScreen(run_key, timeout_s=self.sql_timeout, held_elsewhere=self.held_elsewhere()))

    def held_elsewhere(self) -> Optional[Path]:
        """The database file when another process holds it (this app reads a snapshot copy, and the
        SQL screen asks that process over its socket), else ``None``."""
        return self.db_path if self.snapshot else None

    def open_replay_at(self, run_key: str, t: Optional[float]) -> None:
        """The replay of ``run_key`` at the event of time ``t`` (a row of the SQL screen)."""
        self.push_screen(ReplayScreen(run_key, clock=self.clock, start_t=t))

    def action_moments_queue(self) -> None:
        """The queue of unlabelled reframing moments across runs."""

        self.push_screen(QueueScreen())

    def action_live_runs(self) -> None:
        """``F2``: the runs screen of live supervision (back to it when it is in the stack)."""

        if self.supervisor is None:
            self.notify(
                "Not supervising: start with `edgetui watch` (or --runs-dir) to watch live runs.",
                severity="warning",
                timeout=5,
            )
            return
        if any(isinstance(s, RunsScreen) for s in self.screen_stack):
            while not isinstance(self.screen, RunsScreen):
                self.pop_screen()
            return
        self._runs_screen_shown = True
        self.push_screen(RunsScreen(actions=self.live_actions))
        sup = self.supervisor
        self.call_after_refresh(dispatch_runs_updated, self, list(sup.last_runs), list(sup.messages))

    # ------------------------------------------------------------------ empty database

    def handle_empty(self) -> None:
        """Run the ``on_empty`` hook once (in a thread), then reload the picker."""
        if self._empty_done or (self.live is not None and self.live.home) or self.through_holder:
            return  # `edgetui watch` records what it watches, not the samples; a tab writes nothing
        self._empty_done = True
        self._run_on_empty()

    @work(thread=True, exclusive=True, group="on-empty", exit_on_error=False)
    def _run_on_empty(self) -> None:
        note: Optional[str] = None
        live_was_on = self.supervisor is not None
        try:
            if live_was_on:  # the supervisor writes through this connection: pause it meanwhile
                self._stop_live()
            self._stop_serving()
            if not close_when_idle(self.conn):
                raise RuntimeError("the database is still busy with a view's query")
            note = self.on_empty(self.db_path)
        except Exception as e:  # noqa: BLE001 - the hook's failure is a message, not a crash
            note = f"Could not record the sample runs: {type(e).__name__}: {e}"
        finally:
            try:
                self.conn = self._open()
            except Exception as e:  # noqa: BLE001 - (a disk filled by the samples): nothing to show without the file
                self.conn = None
                self._startup_failed(e)
        if self.conn is None:
            self.call_from_thread(self.exit, return_code=self.startup_exc.exit_code if self.startup_exc else 2)
            return
        self.empty_note = note
        if live_was_on and self.conn is not None:
            self.call_from_thread(self._start_live)
        self.call_from_thread(self._after_empty)

    def _after_empty(self) -> None:
        if self.empty_note:
            self.notify(self.empty_note, title="no runs", timeout=10)
        for s in self.screen_stack:
            if isinstance(s, PickerScreen):
                s.reload()

    # ------------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, ReplayScreen):
            for title, help, cb in replay_commands(screen):
                yield SystemCommand(title, help, cb)
        yield SystemCommand(
            "Moments queue", "unlabelled reframing moments across runs, to label one by one", self.action_moments_queue
        )
        if not isinstance(screen, PickerScreen) and any(isinstance(s, PickerScreen) for s in self.screen_stack):
            yield SystemCommand("Recorded runs", "the run picker (replay any recorded run)", self._to_picker)

        if self.supervisor is not None and not isinstance(screen, RunsScreen):
            yield SystemCommand("Live runs", "the runs screen of live supervision (F2)", self.action_live_runs)

        if not isinstance(screen, LeaderboardScreen):
            yield SystemCommand(
                "Leaderboard",
                "the recorded runs per model x @2h...@12h, as EdgeBench aggregates",
                self.action_leaderboard,
            )

    def action_leaderboard(self) -> None:
        """The leaderboard screen (palette: "Leaderboard")."""

        self.push_screen(LeaderboardScreen())

    def _to_picker(self) -> None:
        while len(self.screen_stack) > 1 and not isinstance(self.screen, PickerScreen):
            self.pop_screen()


def terminal_problem() -> Optional[str]:
    """Why the app cannot draw here (stdout or stdin not a terminal, ``TERM=dumb``), else None."""
    if not sys.stdout.isatty():
        return (
            "the app needs a terminal, and stdout is not one (a pipe or a file): for output into "
            "pipes use `edgetui runs`, `edgetui sql` or `edgetui export`"
        )
    if not sys.stdin.isatty():
        return "the app needs a terminal, and stdin is not one"
    if os.environ.get("TERM", "") in ("dumb", "unknown"):
        return (
            f"TERM={os.environ.get('TERM')}: the app needs a terminal that can move the cursor "
            "(set TERM, e.g. TERM=xterm-256color); `edgetui runs` / `edgetui sql` work here"
        )
    return None


def run_app(db_path: Path | str, run_key: Optional[str] = None, *, web: bool = False, **kwargs: Any) -> None:
    """Run the app in the terminal: the picker, or the replay of ``run_key`` when given
    (``start_at``: elapsed seconds to open at). Raises ``RuntimeError`` (one line; the CLI prints
    it and exits 2) when stdout or stdin is not a terminal or ``TERM=dumb``, when the database's
    directory does not exist, and when the database cannot be opened (a damaged file, another
    application's database, no permission); ``NO_COLOR`` is honoured (Textual). ``web``: a browser
    tab of ``edgetui serve`` (Textual's web driver speaks over pipes: no terminal is asked for)."""
    why = None if web else terminal_problem()
    if why:
        raise RuntimeError(why)
    parent = Path(db_path).expanduser().parent
    if not parent.is_dir() and Path(db_path).expanduser() == default_db_path():
        parent.mkdir(parents=True, exist_ok=True)  # the user data directory on a first start
    elif not parent.is_dir():  # an --db path with a typo: no directory tree made for it
        raise RuntimeError(f"cannot open {db_path}: no directory {parent} (create it, or choose another --db)")
    app = EdgeTUIApp(db_path, run_key, **kwargs)
    app.run()
    if app.internal_error:
        print(app.internal_error, file=sys.stderr)
        raise SystemExit(EXIT_INTERNAL)
    if app.startup_exc is not None:
        raise app.startup_exc
    if app.startup_error:
        raise RuntimeError(app.startup_error)
    if app.return_code:
        raise SystemExit(app.return_code)
