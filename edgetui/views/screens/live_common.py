"""What the live screens share: actions on a run's work container and files, the command
palette's provider, the alarms and notes lists.

The runs screen and the live run screen both use these, so they live here and the two
screens import in one direction only (runs -> live_run -> replay), checked by the
import-linter contracts in ``pyproject.toml``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Protocol, Sequence, runtime_checkable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from edgetui.error_log import note_swallowed
from edgetui.live.model import Alarm, LiveRun
from edgetui.control_chars import make_file_visible, visible, visible_lines
from edgetui.redact import redacted_copy

from edgetui.views.widgets.fmt import visible_text
from edgetui.views.widgets.runs_table import fmt_age
from edgetui.views.screens.confirm import ChoiceScreen, ConfirmScreen, shown_as_typed
from edgetui.views.screens.replay_host import ReplayHost, app_connection
from edgetui.views.screens.replay_moments import ReplayMoments
from edgetui.views.screens.replay_parts import HelpScreen
from edgetui.views.screens.screen_keys import HELP_KEYS, binding_keys

import time

from edgetui.analysis.recorded_curves import fetch_from
from edgetui.analysis.forecast_prior import fit_runs
from edgetui.analysis.forecast_prior import header_forecast

from edgetui.record.moments_table import online_start, online_step
from edgetui.replay.moments import OnlineMoments

#: Files of a task directory offered by ``o`` (name, what it holds).
RUN_FILES: tuple[tuple[str, str], ...] = (
    ("run_agent.log", "harness log: segments, resumes, errors"),
    ("agent_output.txt", "agent transcript"),
    ("final_result.json", "final result (absent while running)"),
    ("evolve_state.json", "submission counter and times"),
    ("run_history.json", "judge history"),
    ("run_config.json", "run configuration (secrets redacted)"),
    ("install_output.txt", "agent install output"),
    ("started_at", "start time"),
    ("pod.log", "the work pod's log (Kubernetes: read from its API server)"),
)

# ---------------------------------------------------------------------------- injected effects


@runtime_checkable
class LiveActions(Protocol):
    """What the live screens may do outside the app; implemented by the live core.

    ``stop`` / ``kill`` act on the run's work container and may block (they
    are called in a thread worker); they raise on failure (the message is
    shown). ``shell_argv`` returns the command that opens an interactive shell
    in the work container (e.g. ``["docker", "exec", "-it", id, "sh"]``, or
    through ssh for a remote host), ``None`` when there is no running
    container. ``file_path`` returns a local path to open in ``$PAGER`` for a
    file of the task directory (see :data:`RUN_FILES`), ``None`` when absent
    or not reachable.
    """

    def stop(self, run_key: str) -> Any: ...

    def kill(self, run_key: str) -> Any: ...

    def shell_argv(self, run_key: str) -> Optional[Sequence[str]]: ...

    def file_path(self, run_key: str, name: str) -> Optional[Any]: ...

    def known_secrets(self, run_key: str) -> set[str]:
        """The secret values known for the run (its ``api_key``, ``extra_env`` values, the judge's admin
        secret…): the pager's copy of a run file replaces them as well. (Optional: an implementation
        without it gives the copy redacted by the rules alone.)"""
        ...

    def acknowledge(self, run_key: Optional[str]) -> int:
        """Acknowledge the alarms holding now (of one run, or of all runs when None); returns how many."""
        ...


_LIVE_STATES = ("running", "paused", "restarting")


class LiveSupervisor(Protocol):
    """The live core's supervisor (:class:`edgetui.live.supervisor.Supervisor`) as the views use it:
    typed by its public names, not its class (the app starts and stops it, reads its snapshots and
    notes, hands it other processes' writes; :class:`SupervisorActions` acts through it)."""

    #: called with the run keys whose new events were just committed (the app sets it)
    on_events: Optional[Callable[[set[str]], None]]

    @property
    def last_runs(self) -> Sequence[LiveRun]:
        """The newest snapshot: every run watched."""
        ...

    @property
    def messages(self) -> Sequence[str]:
        """Its notes, newest last."""
        ...

    def start(
        self, interval: float = 2.0, on_update: Optional[Callable[[list[LiveRun]], None]] = None, *, poll: bool = False
    ) -> tuple[threading.Thread, threading.Event]: ...

    def close(self) -> None: ...

    def apply_request(self, req: dict) -> dict: ...

    def stop_container(self, name_or_id: str) -> str: ...

    def kill_container(self, name_or_id: str) -> str: ...

    def shell_command(self, container: str) -> list[str]: ...

    def run_file_path(self, run_key: str, name: str) -> Optional[Path]: ...

    def known_secrets(self, run_key: str) -> set[str]: ...

    def acknowledge_alarms(self, run_key: Optional[str] = None) -> int: ...

    def add_cluster(self, engine: Any) -> None: ...

    def wake(self) -> None: ...


class SupervisorActions:
    """:class:`LiveActions` over the live core's supervisor (:class:`LiveSupervisor`: its public
    names, no import of the class).

    The supervisor acts on container names or ids and answers one-line
    outcomes (``"stopped …"`` / ``"could not stop …: …"``) without raising;
    here the run's work container comes from the supervisor's newest snapshot
    (``last_runs``) and a failed outcome becomes an exception, which the
    screens show as an error.
    """

    def __init__(self, supervisor: LiveSupervisor) -> None:
        #: the supervisor acted through (the app puts a restarted one here: screens keep this object)
        self.sup = supervisor

    def container(self, run_key: str) -> Optional[str]:
        for r in list(self.sup.last_runs):
            if r.run_key == run_key and r.container is not None:
                return r.container.id or r.container.name
        return None

    def _act(self, run_key: str, fn: Callable[[str], str]) -> str:
        c = self.container(run_key)
        if c is None:
            raise RuntimeError(f"no work container known for {run_key}")
        out = str(fn(c) or "")
        if out.startswith("could not") or "disabled" in out:
            raise RuntimeError(out)
        return out

    def stop(self, run_key: str) -> str:
        return self._act(run_key, self.sup.stop_container)

    def kill(self, run_key: str) -> str:
        return self._act(run_key, self.sup.kill_container)

    def shell_argv(self, run_key: str) -> Optional[Sequence[str]]:
        c = self.container(run_key)
        return None if c is None else self.sup.shell_command(c)

    def file_path(self, run_key: str, name: str) -> Optional[Any]:
        p = self.sup.run_file_path(run_key, name)
        return p if p is not None and os.path.isfile(p) else None

    def known_secrets(self, run_key: str) -> set[str]:
        return set(self.sup.known_secrets(run_key))

    def acknowledge(self, run_key: Optional[str]) -> int:
        return int(self.sup.acknowledge_alarms(run_key))


def _container_label(live: Optional[LiveRun]) -> str:
    c = live.container if live else None
    if c is None:
        return "the work container"
    return f"{c.name} ({c.id[:12]})"


def confirm_container_action(
    screen: Screen, actions: Optional[LiveActions], run_key: str, live: Optional[LiveRun], kind: str
) -> None:
    """Ask, then ``actions.stop`` / ``actions.kill`` the run's work container in a thread worker."""
    if actions is None:
        screen.notify("Container actions are not available here (no live supervisor).", severity="warning", timeout=4)
        return
    c = live.container if live else None
    pod = c is not None and c.phase is not None  # a Kubernetes pod (a pending one may be deleted too)
    if live is not None and (c is None or c.state not in (_LIVE_STATES + ("created",) if pod else _LIVE_STATES)):
        screen.notify(f"{run_key}: no running work container to {kind}.", severity="warning", timeout=4)
        return
    target = _container_label(live)
    msg = Text()
    if pod:
        msg.append("Delete pod ", style="bold red" if kind == "kill" else "bold yellow")
        msg.append(target, style="bold")
        msg.append(f" ({c.host})" if c is not None else "")
        msg.append(" now, with no grace period?\n\n" if kind == "kill" else "?\n\n", style="bold")
        msg.append("As SForge removes its pods (grace period 15 s). " if kind != "kill" else "")
    elif kind == "kill":
        msg.append("Kill ", style="bold red")
        msg.append(target, style="bold")
        msg.append(" now (SIGKILL)?\n\n", style="bold red")
        msg.append("The agent gets no chance to save anything; ", style="")
    else:
        msg.append("Stop ", style="bold yellow")
        msg.append(target, style="bold")
        msg.append("?\n\n")
        msg.append("docker stop: SIGTERM, then SIGKILL after the grace period. ", style="")
    msg.append(f"The run {run_key} ends without a final_result.json and shows as aborted.", style="dim")
    msg = visible_text(msg)

    def answered(yes: Optional[bool]) -> None:
        if not yes:
            screen.notify(f"{kind} cancelled", timeout=2)
            return
        fn = actions.kill if kind == "kill" else actions.stop

        def run() -> None:
            try:
                out = fn(run_key)
            except Exception as e:  # noqa: BLE001 - shown, never crashes the app
                screen.app.call_from_thread(screen.notify, f"{kind} {target} failed: {e}", severity="error", timeout=8)
                return
            note = out if isinstance(out, str) and out else f"{kind} sent to {target}"
            screen.app.call_from_thread(screen.notify, note, timeout=4)

        screen.run_worker(run, thread=True, group=f"container-{kind}", exit_on_error=False, name=f"{kind} {run_key}")

    title = "Kill the work container" if kind == "kill" else "Stop the work container"
    screen.app.push_screen(
        ConfirmScreen(title, msg, confirm_label="Kill" if kind == "kill" else "Stop", danger=kind == "kill"),
        answered,
    )


def acknowledge_alarms(
    screen: Screen, actions: Optional[LiveActions], run_key: Optional[str], on_done: Optional[Callable[[], None]] = None
) -> None:
    """``A``: acknowledge the holding alarms of ``run_key`` (all runs when None) in a thread worker;
    they stop counting in banners and rows until raised again (the acknowledgement is recorded)."""
    if actions is None or not hasattr(actions, "acknowledge"):
        screen.notify("Alarms can only be acknowledged while supervising.", severity="warning", timeout=4)
        return
    what = run_key or "all runs"

    def run() -> None:
        try:
            n = actions.acknowledge(run_key)
        except Exception as e:  # noqa: BLE001 - shown, never crashes the app
            screen.app.call_from_thread(screen.notify, f"could not acknowledge: {e}", severity="error", timeout=8)
            return
        note = f"acknowledged {n} alarm{'s' if n != 1 else ''} of {what}" if n else f"no alarm to acknowledge on {what}"
        screen.app.call_from_thread(screen.notify, note, timeout=3)
        if on_done is not None:
            screen.app.call_from_thread(on_done)

    screen.run_worker(run, thread=True, group="alarm-ack", exit_on_error=False, name=f"ack {what}")


def _run_suspended(
    screen: Screen, argv: Sequence[str], what: str, run_command: Callable[[Sequence[str]], int]
) -> Optional[int]:
    """Run ``argv`` with the app suspended (terminal handed over); returns its exit code."""
    try:
        with screen.app.suspend():
            rc = run_command(list(argv))
    except SuspendNotSupported:
        screen.notify(
            f"Cannot hand the terminal over here: run `{shlex.join(argv)}` yourself.", severity="error", timeout=8
        )
        return None
    except (OSError, subprocess.SubprocessError) as e:
        screen.notify(f"{what}: cannot run {argv[0]}: {e}", severity="error", timeout=8)
        return None
    screen.app.refresh()
    if rc:
        screen.notify(f"{what} exited with status {rc}", severity="warning", timeout=4)
    return rc


def open_shell(
    screen: Screen,
    actions: Optional[LiveActions],
    run_key: str,
    run_command: Callable[[Sequence[str]], int] = subprocess.call,
) -> None:
    """``e``: a shell in the work container, app suspended."""
    if actions is None:
        screen.notify("Shells are not available here (no live supervisor).", severity="warning", timeout=4)
        return
    try:
        argv = actions.shell_argv(run_key)
    except Exception as e:  # noqa: BLE001 - shown, never crashes the app
        screen.notify(f"cannot open a shell: {e}", severity="error", timeout=6)
        return
    if not argv:
        screen.notify(f"{run_key}: no running work container to open a shell in.", severity="warning", timeout=4)
        return
    _run_suspended(screen, argv, "shell", run_command)


def pager_argv(path: Any) -> list[str]:
    """``$PAGER path`` (``less +G`` — start at the end — when ``$PAGER`` is unset)."""
    pager = os.environ.get("PAGER")
    base = shlex.split(pager) if pager else ["less", "+G"]
    return [*base, str(path)]


def open_run_file(
    screen: Screen,
    actions: Optional[LiveActions],
    run_key: str,
    run_command: Callable[[Sequence[str]], int] = subprocess.call,
) -> None:
    """``o``: choose a file of the task directory, then open it in ``$PAGER`` with the app suspended."""
    if actions is None:
        screen.notify("Run files are not available here (no live supervisor).", severity="warning", timeout=4)
        return
    paths: dict[str, Any] = {}
    choices = []
    for name, desc in RUN_FILES:
        try:
            p = actions.file_path(run_key, name)
        except Exception:  # noqa: BLE001 - a file that cannot be located is offered as not there
            p = None
        if p is not None:
            paths[name] = p
        choices.append((name, desc if p is not None else "not there", p is not None))
    if not paths:
        screen.notify(f"{run_key}: no run file is reachable from here.", severity="warning", timeout=4)
        return

    def chosen(name: Optional[str]) -> None:
        if name and name in paths:
            known = getattr(actions, "known_secrets", None)
            try:  # the pager sees a copy with secrets redacted and control characters escaped
                view = redacted_copy(paths[name], set(known(run_key)) if known is not None else set())
                make_file_visible(view)
            except OSError as e:
                screen.notify(f"cannot open {name}: {e.strerror or e}", severity="error", timeout=6)
                return
            try:
                _run_suspended(screen, pager_argv(view), name, run_command)
            finally:
                shutil.rmtree(os.path.dirname(view), ignore_errors=True)

    screen.app.push_screen(ChoiceScreen(f"Open a file of {run_key}", choices), chosen)


# ---------------------------------------------------------------------------- palette


class ScreenCommands(Provider):
    """Command palette entries of the active screen's ``palette_commands()`` (title, help, callback)."""

    def _commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        f = getattr(self.screen, "palette_commands", None)
        return list(f()) if callable(f) else []

    async def discover(self) -> Hits:
        for title, help, cb in self._commands():
            yield DiscoveryHit(title, cb, help=help)

    async def search(self, query: str) -> Hits:
        m = self.matcher(query)
        for title, help, cb in self._commands():
            score = m.match(title)
            if score > 0:
                yield Hit(score, m.highlight(title), cb, help=help)


# ---------------------------------------------------------------------------- messages


def wrap_units(fields: Sequence[Text], width: int, sep: str = "  ") -> Text:
    """Fields joined by ``sep``, wrapping between fields, never inside one (a field longer than the width is cut;
    each field on one line, its control characters escaped)."""
    out = Text()
    line = 0
    for k, f in enumerate(fields):
        f = visible_text(f, one_line=True)
        if f.cell_len > width:
            f = f.copy()
            f.truncate(width, overflow="ellipsis")
        if k and line + len(sep) + f.cell_len > width:
            out.append("\n")
            line = 0
        elif k:
            out.append(sep)
            line += len(sep)
        out.append_text(f)
        line += f.cell_len
    return out


# ---------------------------------------------------------------------------- modals


class _ListModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,a,m", "dismiss", "close"), Binding(HELP_KEYS, "help", "keys", show=False)]
    DEFAULT_CSS = """
    _ListModal { align: center middle; background: $background 60%; }
    _ListModal > Vertical { width: 90%; max-width: 140; height: auto; max-height: 90%;
        border: round $error; background: $panel; padding: 0 1; }
    _ListModal.-notes > Vertical { border: round $primary; }
    _ListModal VerticalScroll { height: auto; max-height: 100%; }
    """

    def __init__(self, title: str, body: Any, *, notes: bool = False) -> None:
        super().__init__(classes="-notes" if notes else "")
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical() as v:
            v.border_title = shown_as_typed(self.title_text, one_line=True)
            v.border_subtitle = "esc closes"
            with VerticalScroll():
                yield Static(shown_as_typed(self.body) if isinstance(self.body, (str, Text)) else self.body)

    def action_help(self) -> None:
        """``F1`` / ``?``: this list's keys (a modal screen: the app's own F1 does not reach it)."""
        self.app.push_screen(HelpScreen(binding_keys(self), title="List keys"))

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def alarm_states(runs: Iterable[LiveRun]) -> dict[int, str]:
    """``id(alarm)`` -> ``holding`` | ``acked`` | ``cleared`` for every alarm of ``runs`` (as the live
    run screen's header marks them)."""
    out: dict[int, str] = {}
    for r in runs:
        holding = {id(a) for a in r.current_alarms}
        acked = {id(a) for a in r.acked_alarms}
        for a in r.alarms:
            out[id(a)] = "holding" if id(a) in holding else ("acked" if id(a) in acked else "cleared")
    return out


class AlarmsScreen(_ListModal):
    """Alarms, newest first: age, severity, rule, run, state, message. The state is ``holding``
    (its condition holds), ``✓ <age>`` (acknowledged) or ``cleared`` (its condition no longer
    holds: the row is dim), as the live run screen's header marks them. ``A`` calls ``on_ack``
    (acknowledge the alarms shown) and closes."""

    BINDINGS = [Binding("A", "ack", "acknowledge", show=False)]

    def __init__(
        self,
        alarms: Iterable[Alarm],
        now: float,
        title: str = "Alarms",
        on_ack: Optional[Callable[[], None]] = None,
        states: Optional[dict[int, str]] = None,
    ) -> None:
        alarms = sorted(alarms, key=lambda a: a.t, reverse=True)
        self.on_ack = on_ack
        t = Table(box=None, show_header=True, header_style="bold", padding=(0, 1), expand=True)
        t.add_column("age", justify="right", no_wrap=True)
        t.add_column("", no_wrap=True)
        t.add_column("rule", no_wrap=True)
        t.add_column("run", no_wrap=True, overflow="ellipsis", max_width=44)
        t.add_column("state", no_wrap=True)
        t.add_column("message", ratio=1)
        self.lines: list[str] = []  # plain text of each row (what the table shows)
        for a in alarms:
            crit = a.severity == "critical"
            state = (states or {}).get(id(a))
            if a.acked_at is not None and state != "cleared":
                st = Text(f"✓ {fmt_age(now - a.acked_at)}", style="dim")
            elif state == "cleared":
                st = Text("cleared", style="dim")
            elif state == "holding":
                st = Text("holding", style="bold")
            else:
                st = Text("–", style="dim")
            dim = "dim" if state == "cleared" else ""
            cells = [
                Text(fmt_age(now - a.t), style=dim),
                Text(
                    "⚠" if state != "cleared" else "·", style="dim" if dim else ("bold red" if crit else "bold yellow")
                ),
                Text(visible(a.rule), style=dim or "bold"),
                Text(visible(a.run_key), style=dim or "cyan"),
                st,
                Text(visible_lines(a.message), style=dim),
            ]
            t.add_row(*cells)
            self.lines.append(" ".join(c.plain for c in cells))
        super().__init__(f"{title} ({len(alarms)})", t)

    def on_mount(self) -> None:
        if self.on_ack is not None:
            self.query_one(Vertical).border_subtitle = "A acknowledges · esc closes"

    def action_ack(self) -> None:
        if self.on_ack is not None:
            self.dismiss(None)
            self.on_ack()


class MessagesScreen(_ListModal):
    """The supervisor's notes, newest last."""

    def __init__(self, messages: Sequence[str]) -> None:
        body = Text("\n".join(map(visible, messages)) if messages else "no notes yet", style="" if messages else "dim")
        super().__init__(f"Supervisor notes ({len(messages)})", body, notes=True)


class LiveMoments(Message):
    """The reframing moments of the live run so far (provisional ones included)."""

    def __init__(self, moments: list[dict], graded: int) -> None:
        self.moments, self.graded = moments, graded
        super().__init__()


#: live moments are looked for once the run has this many graded rounds (a behaviour baseline)
LIVE_MOMENTS_MIN_GRADED = 5


class LiveRunHost(ReplayHost, Protocol):
    """The live run screen as its parts (:class:`LiveMomentsPart`, :class:`LiveForecastPart`) see it:
    a :class:`~edgetui.views.screens.replay_host.ReplayHost` that also draws its header again (with
    the live dollars)."""

    def set_header(self) -> None: ...


class LiveMomentsPart:
    """Live reframing moments for the live run screen (a part of it): when its graded rounds change
    (and there are a few), a worker brings an :class:`edgetui.replay.moments.OnlineMoments` up to date
    with what was recorded since (:func:`edgetui.record.moments_table.online_step`); the moments
    (provisional ones included) go to the screen's moments part (``moments``), which marks them on
    the chart and reaches them with ``(`` / ``)`` as in the replay."""

    def __init__(self, host: LiveRunHost, moments: ReplayMoments) -> None:
        self.host = host
        self.moments = moments
        #: the graded rounds the moments were last looked for at (-1: never)
        self.graded = -1
        #: the detector's state between updates (made by the first worker)
        self.online: Optional[OnlineMoments] = None

    def maybe_update(self) -> None:
        """Look for moments again when the graded rounds changed (in a worker, incremental:
        :func:`edgetui.record.moments_table.online_step`), once the run has a few of them."""
        graded = sum(1 for s in self.host.subs if s.get("status") == "graded")
        if graded < LIVE_MOMENTS_MIN_GRADED or graded == self.graded:
            return
        self.graded = graded
        self.host.run_worker(
            lambda: self._update(graded), thread=True, exclusive=True, group="live-moments", exit_on_error=False
        )

    def _update(self, graded: int) -> None:
        host = self.host
        try:
            conn = app_connection(host.app)
            if self.online is None:
                self.online = online_start(conn, host.run_key)
            host.post_message(LiveMoments(online_step(conn, host.run_key, self.online), graded))
        except Exception:  # noqa: BLE001  (no moments is no reason to stop following the run)
            note_swallowed("no moments is no reason to stop following the run")
            return

    def found(self, msg: LiveMoments) -> None:
        """(The screen's handler of :class:`LiveMoments`.)"""
        shown = self.moments.moments
        if [m["round"] for m in msg.moments] == [m["round"] for m in shown] and [
            m["provisional"] for m in msg.moments
        ] == [m["provisional"] for m in shown]:
            return
        self.moments.set_moments(msg.moments)


# ---------------------------------------------------------------------------- forecast priors


class PriorsFitted(Message):
    """The background prior fitter stored current fits for ``run_keys``
    (:func:`request_prior_fits`): the live screens read their forecasts again."""

    def __init__(self, run_keys: list[str]) -> None:
        self.run_keys = run_keys
        super().__init__()


class PriorFitter:
    """One background thread of the app making the forecast prior's per-run fits current
    (:func:`edgetui.analysis.forecast_prior.fit_runs`), so that a live forecast update only reads stored fits.

    :meth:`request` queues run keys (the ``prior_pending`` of a forecast just read, so the first
    forecasts after start-up ask for every feeding run not yet stored) from the UI thread; one round
    runs at a time and takes everything queued. After a round, every screen of the stack gets
    :class:`PriorsFitted`. A key is not tried again within
    :attr:`RETRY_S` seconds (a read-only database would otherwise be asked on every update)."""

    RETRY_S = 60.0

    def __init__(self, app: Any) -> None:
        self.app = app
        self.queue: set[str] = set()
        self.busy = False
        self.tried: dict[str, float] = {}
        #: rounds run and run keys passed to fit_runs (for tests and the curious)
        self.rounds = 0
        self.fitted: list[str] = []

    def request(self, run_keys: Iterable[str]) -> None:

        now = time.monotonic()
        new = {k for k in run_keys if now - self.tried.get(k, -1e18) >= self.RETRY_S}
        if not new:
            return
        self.queue |= new
        self._maybe_start()

    def _maybe_start(self) -> None:
        if self.busy or not self.queue or getattr(self.app, "conn", None) is None:
            return

        keys, self.queue = sorted(self.queue), set()
        now = time.monotonic()
        for k in keys:
            self.tried[k] = now
        self.busy = True
        self.app.run_worker(lambda: self._round(keys), thread=True, group="prior-fits", exit_on_error=False)

    def _round(self, keys: list[str]) -> None:

        done: list[str] = []
        conn = None
        try:
            conn = self.app.conn.cursor()  # this thread's own connection to the database
            fetch = fetch_from(conn)
            fit_runs(fetch, keys, execute=conn.execute)
            done = keys
        except Exception:  # noqa: BLE001 - the prior is an extra: the forecast keeps the default meanwhile
            done = []
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a connection that may have failed
                    note_swallowed("closing a connection that may have failed")
        try:
            self.app.call_from_thread(self._after, done)
        except Exception:  # noqa: BLE001 - the app is shutting down
            note_swallowed("the app is shutting down")

    def _after(self, done: list[str]) -> None:
        self.busy = False
        self.rounds += 1
        self.fitted.extend(done)
        if done:
            for s in list(self.app.screen_stack):
                s.post_message(PriorsFitted(done))
        self._maybe_start()


@runtime_checkable
class FitsPriors(Protocol):
    """An app holding a :class:`PriorFitter` (:attr:`edgetui.views.app.EdgeTUIApp.prior_fitter`, made on
    first use)."""

    prior_fitter: Optional[PriorFitter]


def request_prior_fits(app: object, run_keys: Iterable[str]) -> None:
    """Queue ``run_keys`` for the app's :class:`PriorFitter` (made on first use; UI thread only). An
    app without one (:class:`FitsPriors`) fits nothing: its forecasts keep the default prior."""
    if not isinstance(app, FitsPriors):
        return
    if app.prior_fitter is None:
        app.prior_fitter = PriorFitter(app)
    app.prior_fitter.request(run_keys)


class LiveForecast(Message):
    """The live run's forecast read again (its prior's fits were stored meanwhile)."""

    def __init__(self, forecast: Optional[dict]) -> None:
        self.forecast = forecast
        super().__init__()


class LiveForecastPart:
    """The live run screen's side of the forecast prior (a part of it): a forecast read with pending
    feeding runs asks the app's :class:`PriorFitter` for them (:meth:`ask_prior_fits`, called with
    each fresh header); when fits are stored (:class:`PriorsFitted`) the forecast alone is read again
    in a worker and the header redrawn."""

    def __init__(self, host: LiveRunHost) -> None:
        self.host = host

    def ask_prior_fits(self, head: Optional[dict]) -> None:
        fc = (head or {}).get("forecast")
        if fc and fc.get("prior_pending"):
            request_prior_fits(self.host.app, fc["prior_pending"])

    def priors_fitted(self, msg: PriorsFitted) -> None:
        """(The screen's handler of :class:`PriorsFitted`.)"""
        header = self.host.header
        if header is not None and (header.get("forecast") or {}).get("prior_pending"):
            head, subs = dict(header), list(self.host.subs)
            self.host.run_worker(
                lambda: self._read_forecast(head, subs),
                thread=True,
                exclusive=True,
                group="live-forecast",
                exit_on_error=False,
            )

    def _read_forecast(self, head: dict, subs: list[dict]) -> None:
        try:
            fc = header_forecast(app_connection(self.host.app), head, subs)
        except Exception:  # noqa: BLE001 - the forecast shown stays; the next header read brings it
            note_swallowed("the forecast shown stays; the next header read brings it")
            return
        self.host.post_message(LiveForecast(fc))

    def forecast_read(self, msg: LiveForecast) -> None:
        """(The screen's handler of :class:`LiveForecast`.)"""
        header = self.host.header
        if header is None:
            return
        header["forecast"] = msg.forecast
        self.ask_prior_fits(header)
        self.host.set_header()
