"""Runs screen: every live run in one table — the app's home while anything is live.

Data comes in only through :class:`RunsUpdated` (a list of
:class:`~edgetui.live.model.LiveRun` snapshots plus supervisor notes), posted
by the supervisor's thread worker; :meth:`RunsScreen.update_runs` is the same
entry point as a method. The screen keeps the newest snapshot, sorts and
filters it in memory and hands rows to :class:`~edgetui.views.widgets.runs_table.RunsTable`.

Alarms are loud: a red banner with the count and the latest alarm, a toast
for every new alarm (error severity and a bell for critical ones), and ``a``
lists them all. Enter opens the :class:`~edgetui.views.screens.live_run.LiveRunScreen`
of the selected run; ``x`` / ``K`` / ``e`` / ``o`` act on the selected run
like they do there.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any, Callable, Iterable, Optional, Protocol, Sequence, runtime_checkable

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from edgetui.error_log import note_swallowed
from edgetui.live.model import LiveRun

from edgetui.control_chars import visible
from edgetui.views.widgets.fmt import (
    fmt_count,
    fmt_hours,
    fmt_usd,
    plural,
    prior_note,
    set_border,
    set_static,
    visible_text,
)
from edgetui.views.widgets.runs_table import (
    FORECAST_PENDING,
    SORT_KEYS,
    STATUS_COLORS,
    RunsTable,
    filter_runs,
    fmt_age,
    sort_runs,
    status_text,
)
from edgetui.views.screens.live_common import (
    AlarmsScreen,
    MessagesScreen,
    PriorsFitted,
    alarm_states,
    request_prior_fits,
    wrap_units,
)
from edgetui.views.screens.live_run import (
    acknowledge_alarms,
    LiveActions,
    LiveRunScreen,
    ScreenCommands,
    confirm_container_action,
    grading_text,
    open_run_file,
    open_shell,
)
from edgetui.views.screens.replay import HelpScreen, fit_footer

from edgetui.store import queries as store
from edgetui.store.run_groups import group_by_run_id

from edgetui.analysis.forecast_prior import header_forecast
from edgetui.views.screens.hosts import HostsScreen

__all__ = [
    "AlarmsScreen",
    "MessagesScreen",
    "RUNS_KEYS",
    "RunsScreen",
    "RunsUpdated",
    "dispatch_runs_updated",
]

#: run key of a row that stands for a run id's tasks (folded, ``g``)
GROUP_KEY = "group:"


def run_id_rows(runs: Sequence[LiveRun]) -> list[LiveRun]:
    """One row per (host, SForge run id) of ``runs`` (:func:`edgetui.store.run_groups.group_by_run_id`),
    in their order: the task column says how many tasks and how many finished (``3 tasks, 2 done``), best is their mean
    score (0–100), submissions, tokens and dollars are summed, the status is running while one runs."""
    by_key = {r.run_key: r for r in runs}
    out = []
    for g in group_by_run_id(runs):
        members = [by_key[k] for k in g.run_keys]
        costs = [m.cost_usd for m in members if m.cost_usd is not None]
        ends = [m.last_event_at for m in members if m.last_event_at is not None]
        out.append(
            LiveRun(
                run_key=GROUP_KEY + g.key,
                host=g.host,
                run_id=g.run_id,
                task_id=f"{plural(g.n_tasks, 'task')}, {g.n_finished} done",
                model=" ".join(g.models) or None,
                status="running" if g.n_running else "finished",
                started_at=g.started_at,
                elapsed_s=max((m.elapsed_s or 0.0 for m in members), default=None),
                budget_s=max((m.budget_s or 0.0 for m in members), default=None) or None,
                best_display=g.mean_score,
                score_task=True,
                agent_submissions=sum(m.agent_submissions for m in members),
                auto_submissions=sum(m.auto_submissions for m in members),
                game_sessions=sum(m.game_sessions for m in members),
                last_event_at=max(ends) if ends else None,
                tokens=sum(m.tokens for m in members),
                cost_usd=sum(costs) if costs else None,
                host_state=members[0].host_state,
            )
        )
    return out


#: Supervisor notes kept for ``m``.
MAX_MESSAGES = 500
#: Toasts for new alarms in one update before the rest are summed up.
MAX_ALARM_TOASTS = 3

RUNS_KEYS: list[tuple[str, str]] = [
    ("↑ ↓  pgup pgdn", "choose a run"),
    ("enter", "open the live run (chart, events, submissions, alarms)"),
    ("s  /  S", "sort by the next column / reverse the order"),
    ("/", "filter: words match run id, task, model, agent, status, host, flags"),
    ("esc", "clear the filter"),
    ("a", "all alarms, newest first (A there: acknowledge them all)"),
    ("A", "acknowledge the selected run's alarms (they stop counting until raised again)"),
    ("m", "supervisor notes"),
    ("x  /  K", "stop / kill the selected run's work container (asks first)"),
    ("e", "shell in the selected run's work container (app suspended)"),
    ("o", "open a run file in $PAGER (app suspended; a remote run's file from its local image)"),
    ("H", "hosts: each host's connection, round trip, since when, next retry, runs, engine"),
    (
        "g",
        "fold the tasks under their SForge run id (n tasks, n done, best: their mean on the 0–100 scale); enter shows its tasks",
    ),
    ("ctrl+p", "command palette"),
    ("? / F1", "this help"),
    ("q", "back to the recorded runs when they are below (edgetui watch), else quit"),
    ("", ""),
    ("status column", "● running · grading · finished · aborted · gone; N queued (qN): rounds in the judge's queue"),
    ("", "⚠N alarms · ✓N acknowledged ones still holding · ⚑ infra error · OOM"),
    ("", "over (o) past the budget · deleted (d) run directory · exit:N / exited (e) container · gone (g)"),
    ("", "stopped (s) / killed (k) by you — the letters where the column is narrow (80 columns)"),
    ("subs", "agent / auto-eval submissions (225/23), or a game task's sessions (6 games)"),
    ("last", "age of the run's last event"),
    ("$", 'dollars from the tokens at list prices; "stated $" is what the agent CLI itself reported'),
]


class RunsUpdated(Message):
    """A supervisor snapshot: every run it watches, and its new notes (one line each)."""

    def __init__(
        self, runs: Sequence[LiveRun], messages: Sequence[str] = (), hosts: Optional[Sequence[Any]] = None
    ) -> None:
        self.runs = list(runs)
        self.messages = list(messages)
        #: rows of the hosts view (:class:`edgetui.live.remote_hosts.HostRow`), None without remote hosts
        self.hosts = list(hosts) if hosts is not None else None
        super().__init__()


class ForecastRead(Message):
    """Live runs' forecasts read by the runs screen's worker (``forecasts``: run key -> a Forecast
    dict, or None when the run has none)."""

    def __init__(self, forecasts: dict[str, Optional[dict]]) -> None:
        super().__init__()
        self.forecasts = forecasts


class EventsRecorded(Message):
    """The supervisor committed new events of these runs (posted mid-refresh, before the snapshot:
    a live run screen reads them at once instead of after the refresh's other work)."""

    def __init__(self, run_keys: Iterable[str]) -> None:
        self.run_keys = set(run_keys)
        super().__init__()


def _to_screens(app: App, method: str, *args: Any) -> int:
    """Call ``method(*args)`` on every screen of the stack that has it; returns how many."""
    n = 0
    for screen in list(app.screen_stack):
        fn = getattr(screen, method, None)
        if callable(fn):
            fn(*args)
            n += 1
    return n


def dispatch_events_recorded(app: App, run_keys: Iterable[str]) -> int:
    """Tell every screen of the stack that takes it (``events_recorded``); returns how many."""
    return _to_screens(app, "events_recorded", set(run_keys))


def dispatch_runs_updated(
    app: App, runs: Sequence[LiveRun], messages: Sequence[str] = (), hosts: Optional[Sequence[Any]] = None
) -> int:
    """Hand a snapshot to every screen of the stack that takes one (``update_runs``; the hosts
    view's rows to those taking ``update_hosts``); returns how many took the runs."""
    if hosts is not None:
        _to_screens(app, "update_hosts", hosts)
    return _to_screens(app, "update_runs", runs, messages)


# ---------------------------------------------------------------------------- the screen


@runtime_checkable
class KeepsRunsView(Protocol):
    """An app that keeps the runs screen's view (sort, filter, selected run) for the next one (F2):
    :attr:`edgetui.views.app.EdgeTUIApp.runs_view`."""

    runs_view: Optional[dict]


class RunsScreen(Screen):
    """Table of live runs; keys in :data:`RUNS_KEYS`."""

    COMMANDS = {ScreenCommands}

    BINDINGS = [
        Binding("enter", "open", "open", key_display="enter"),
        Binding("s", "sort(1)", "sort"),
        Binding("S", "reverse", "reverse", show=False),
        Binding("slash", "filter", "filter", key_display="/"),
        Binding("escape", "clear_filter", "clear filter", show=False),
        Binding("a", "alarms", "alarms"),
        Binding("A", "ack_alarms", "ack", show=False),
        Binding("m", "messages", "notes", show=False),
        Binding("x", "stop_container", "stop"),
        Binding("K", "kill_container", "kill"),
        Binding("e", "shell", "shell", show=False),
        Binding("o", "open_file", "file", show=False),
        Binding("H", "hosts", "hosts", show=False),
        Binding("g", "fold_run_ids", "by run id"),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "quit_or_back('back')", "back"),  # over the recorded runs (edgetui watch)
        Binding("q", "quit_or_back('quit')", "quit"),  # the app's only screen: the footer says which
    ]

    CSS = """
    RunsScreen #runs-title { height: auto; padding: 0 1; background: $panel; }
    RunsScreen #alarm-banner { height: auto; max-height: 2; padding: 0 1; background: $error; color: $text;
        text-style: bold; display: none; }
    RunsScreen.-alarms #alarm-banner { display: block; }
    RunsScreen #runs-filter { border: tall $accent 60%; height: 3; }
    RunsScreen #runs-table { height: 1fr; border: round $primary 40%; border-title-color: $text;
        border-subtitle-color: $text-muted; }
    RunsScreen #runs-table:focus { border: round $accent; }
    RunsScreen #runs-empty { height: auto; padding: 1 2; display: none; }
    RunsScreen.-empty #runs-empty { display: block; }
    RunsScreen #runs-selected { height: auto; max-height: 3; padding: 0 1; background: $panel; }
    RunsScreen #runs-notes { height: 1; padding: 0 1; color: $text-muted; }
    """

    def __init__(
        self,
        *,
        actions: Optional[LiveActions] = None,
        now: Callable[[], float] = time.time,
        run_command: Callable[[Sequence[str]], int] = subprocess.call,
        runs: Sequence[LiveRun] = (),
        name: Optional[str] = None,
    ) -> None:
        super().__init__(name=name)
        self.actions = actions
        self.now = now
        self.run_command = run_command
        self.runs: list[LiveRun] = list(runs)
        self.shown: list[LiveRun] = []
        self.messages: list[str] = []
        self.host_rows: list = []  # the hosts view's rows (edgetui.live.remote_hosts.HostRow) of the newest snapshot
        self.sort_index = 0
        self.reverse = False
        self.filter_text = ""
        self.updates = 0
        self.seen_alarms: set[tuple[str, str]] = set()
        self._rendered_at = float("-inf")
        self._first_alarms = True
        self._reselect: Optional[str] = None  # the run selected when this view was last left
        #: every live run's forecast (run key -> Forecast dict, FORECAST_PENDING or None), read by a
        #: worker when the run's best or submissions change (the supervisor's snapshot says when);
        #: shown in the forecast column and in the selected run's line
        self.forecasts: dict[str, Any] = {}
        self._fc_sig: dict[str, tuple] = {}
        self._fc_busy: set[str] = set()  # run keys a worker is reading
        #: tasks folded under their SForge run id (g): one row per (host, run id), :func:`run_id_rows`
        self.folded = False

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(id="runs-title")
        yield Static(id="alarm-banner")
        yield Input(
            placeholder="filter runs: words match run id, task, model, agent, status, host, flags "
            "(enter keeps · esc clears)",
            id="runs-filter",
        )
        yield RunsTable(id="runs-table")
        yield Static(id="runs-empty")
        yield Static(id="runs-selected")
        yield Static(id="runs-notes")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#runs-filter", Input).display = False
        self.query_one(RunsTable).focus()
        self.set_interval(1.0, self._tick)
        fit_footer(self, self.size.width)
        app = self.app
        view = app.runs_view if isinstance(app, KeepsRunsView) else None  # left with q, back with F2: same view
        if view:
            self.sort_index, self.reverse, self.filter_text = view["sort"], view["reverse"], view["filter"]
            self._reselect = view.get("run")
        self._render_all()

    def on_screen_suspend(self) -> None:
        """Popped (q) or covered: the view is kept for the next runs screen (F2)."""
        app = self.app
        if not isinstance(app, KeepsRunsView):
            return
        try:
            app.runs_view = {
                "sort": self.sort_index,
                "reverse": self.reverse,
                "filter": self.filter_text,
                "run": self.query_one(RunsTable).selected_run_key,
            }
        except Exception:  # noqa: BLE001 - the app is shutting down
            note_swallowed("the app is shutting down")

    def on_resize(self) -> None:
        fit_footer(self, self.size.width)
        self._render_all()

    @property
    def sort_key(self) -> str:
        return SORT_KEYS[self.sort_index][0]

    @property
    def by_key(self) -> dict[str, LiveRun]:
        return {r.run_key: r for r in self.runs}

    @property
    def selected_run_key(self) -> Optional[str]:
        return self.query_one(RunsTable).selected_run_key

    @property
    def selected_run(self) -> Optional[LiveRun]:
        rk = self.selected_run_key
        return self.by_key.get(rk) if rk else None

    # ------------------------------------------------------------------ data in

    @on(RunsUpdated)
    def _on_runs_updated(self, msg: RunsUpdated) -> None:
        """Posted to this screen (thread-safe from a worker): update every screen that shows live data."""
        msg.stop()
        dispatch_runs_updated(self.app, msg.runs, msg.messages, msg.hosts)
        if self not in self.app.screen_stack:  # not pushed yet / already popped: still keep the data
            self.update_runs(msg.runs, msg.messages)

    def update_runs(self, runs: Sequence[LiveRun], messages: Sequence[str] = ()) -> None:
        """Take a new snapshot (replaces the previous one) and new supervisor notes."""
        self.runs = list(runs)
        self.updates += 1
        recent = set(self.messages[-50:])
        for m in messages:
            if m and m not in recent:
                self.messages.append(m)
                recent.add(m)
        del self.messages[:-MAX_MESSAGES]
        self._raise_alarms()
        if self.is_mounted and self._on_top:
            self._render_all()

    def _raise_alarms(self) -> None:
        alarms = [a for r in self.runs for a in r.current_alarms]  # not cleared / acknowledged ones
        # an alarm is new when its (run, rule) was not raised in the previous snapshot, so a
        # standing alarm whose text or time is refreshed by the supervisor does not toast again
        keys = {(a.run_key, a.rule) for a in alarms}
        new = [a for a in alarms if (a.run_key, a.rule) not in self.seen_alarms]
        self.seen_alarms = keys
        if not new or not self.is_mounted:
            return
        new.sort(key=lambda a: a.t)
        crit = any(a.severity == "critical" for a in new)
        if self._first_alarms and len(new) > 1:
            latest = new[-1]
            self.notify(
                f"{len(new)} alarms on {len({a.run_key for a in new})} runs; latest: "
                f"{latest.run_key} {latest.rule}: {latest.message}\n(a: list them)",
                title="alarms",
                severity="error" if crit else "warning",
                timeout=10,
            )
        else:
            for a in new[-MAX_ALARM_TOASTS:]:
                self.notify(
                    f"{a.run_key}\n{a.message}",
                    title=f"alarm · {a.rule}",
                    severity="error" if a.severity == "critical" else "warning",
                    timeout=10,
                )
            if len(new) > MAX_ALARM_TOASTS:
                self.notify(
                    f"… and {len(new) - MAX_ALARM_TOASTS} more (a: list them)",
                    title="alarms",
                    severity="warning",
                    timeout=10,
                )
        self._first_alarms = False
        if crit:
            self.app.bell()

    #: seconds between the clock's re-renders while no run is live (ages of minutes and hours only)
    IDLE_TICK_S = 15.0

    def _tick(self) -> None:
        """Ages and elapsed times move with the clock: re-render once a second, unless a snapshot
        did within the last second (busy supervisors send several a second); while no run is live
        (every run finished: no elapsed time moves) every :attr:`IDLE_TICK_S` seconds."""
        if not self.runs or not self._on_top:
            return
        since = time.monotonic() - self._rendered_at
        if since >= 0.9 and (since >= self.IDLE_TICK_S or any(r.status in ("running", "grading") for r in self.runs)):
            self._render_all()

    def on_screen_resume(self) -> None:
        self._render_all()

    @property
    def _on_top(self) -> bool:
        """Shown and on top (Textual's ``is_current`` is also true for the screen just below the top one:
        rendering this table under the live run screen would cost a core share for nothing)."""
        try:
            return self.app.screen is self
        except Exception:  # noqa: BLE001 - no screen stack yet / any more
            note_swallowed("no screen stack yet / any more")
            return False

    # ------------------------------------------------------------------ render

    def _render_all(self) -> None:
        self._rendered_at = time.monotonic()
        now = self.now()
        width = max(20, self.size.width)
        try:
            table = self.query_one(RunsTable)
        except NoMatches:  # a snapshot arriving while the app shuts down (children already removed)
            return
        self._want_forecasts()
        self.shown = sort_runs(
            filter_runs(self.runs, self.filter_text), self.sort_key, self.reverse, now=now, forecasts=self.forecasts
        )
        if self.folded:
            self.shown = run_id_rows(self.shown)
        table.forecasts = self.forecasts
        table.show(
            self.shown, now, tier="auto", sort_key=self.sort_key, reverse=self.reverse, available=max(20, width - 2 - 1)
        )
        if self._reselect and table.select_run(self._reselect):
            self._reselect = None
        label = SORT_KEYS[self.sort_index][1]
        title = f"runs {len(self.shown):,}" + (f" of {len(self.runs):,}" if len(self.shown) != len(self.runs) else "")
        if self.folded:
            title = f"{plural(len(self.shown), 'run id')} · best: the tasks' mean (0–100) · g unfolds"
        sub = Text()
        sub.append(f"sort {label} {'▼' if self.reverse else '▲'}", style="")
        if self.filter_text:
            sub.append(f"  /{self.filter_text}", style="yellow")
        set_border(table, title, sub)
        set_static(self.query_one("#runs-title", Static), self._title_text(width - 2))
        self._render_banner(now, width - 2)
        self._render_selected(now, width - 2)
        self._render_empty()
        notes = self.query_one("#runs-notes", Static)
        if self.messages:
            t = Text("› ", style="dim")
            t.append(self.messages[-1])
            if len(self.messages) > 1:
                t.append(f"   (m: {len(self.messages)} notes)", style="dim")
            t.truncate(max(10, width - 2), overflow="ellipsis")
            set_static(notes, visible_text(t, one_line=True))
        else:
            set_static(notes, Text("› waiting for the supervisor…" if not self.updates else "", style="dim"))

    def _title_text(self, width: int) -> Text:
        counts: dict[str, int] = {}
        for r in self.runs:
            counts[r.status] = counts.get(r.status, 0) + 1
        head = Text()
        head.append("edgetui ", style="bold bright_magenta")
        head.append("live", style="bold")
        fields = [head, Text(f"{len(self.runs)} run{'s' if len(self.runs) != 1 else ''}", style="bold")]
        for st in ("running", "grading", "aborted", "gone", "finished"):
            if counts.get(st):
                t = Text("● ", style=STATUS_COLORS.get(st, ""))
                t.append(f"{counts[st]} {st}", style=STATUS_COLORS.get(st, ""))
                fields.append(t)
        for h in self.host_rows:  # a host not up with no run here: only the hosts view would say so
            if h.kind not in ("local", "up", "degraded") and not h.runs:
                since = time.strftime(" since %H:%M:%S UTC", time.gmtime(h.since)) if h.since else ""
                mark = "…" if h.kind == "connecting" else "✗"
                fields.append(Text(visible(f"{mark} {h.name} {h.kind}{since} (H: hosts)"), style="red"))
        n_alarms = sum(len(r.current_alarms) for r in self.runs)
        if n_alarms:
            fields.append(Text(f"⚠ {n_alarms} alarm{'s' if n_alarms != 1 else ''}", style="bold red"))
        cost = sum(r.cost_usd for r in self.runs if r.cost_usd is not None)
        tokens = sum(r.tokens for r in self.runs)
        if cost:
            fields.append(Text(fmt_usd(cost), style="yellow"))
        if tokens:
            fields.append(Text(f"{fmt_count(tokens)} tok", style="dim"))
        return wrap_units(fields, max(20, width), sep=" · ")

    def _render_banner(self, now: float, width: int) -> None:
        alarms = [a for r in self.runs for a in r.current_alarms]  # cleared alarms stay in the `a` list only
        self.set_class(bool(alarms), "-alarms")
        if not alarms:
            return
        latest = max(alarms, key=lambda a: a.t)
        n_runs = len({a.run_key for a in alarms})
        t = Text()
        t.append(f"⚠ {len(alarms)} alarm{'s' if len(alarms) != 1 else ''}")
        t.append(f" on {n_runs} run{'s' if n_runs != 1 else ''}" if n_runs > 1 else "")
        t.append(f" · latest {fmt_age(now - latest.t)} ago: ")
        t.append(f"{latest.rule} ", style="underline")
        run = self.by_key.get(latest.run_key)
        who = latest.run_key if width >= 120 or run is None else run.task_id
        t.append(f"{who} — {latest.message}", style="not bold")
        t.append("  (a: list)", style="not bold")
        set_static(self.query_one("#alarm-banner", Static), visible_text(t, one_line=True))

    def _render_selected(self, now: float, width: int) -> None:
        r = self.selected_run
        box = self.query_one("#runs-selected", Static)
        if r is None:
            set_static(box, "")
            return
        fields: list[Text] = []
        ident = Text(visible(r.run_key), style="bold")
        fields.append(ident)
        if r.model or r.agent:
            m = Text(visible(r.model or r.agent or ""))
            if r.model and r.agent:
                m.append(f" ({r.agent})", style="dim")
            fields.append(m)
        fields.append(status_text(r, budget=False))
        if "over_budget" in r.flags and r.elapsed_s and r.budget_s:
            fields.append(Text(f"over budget by {fmt_age(r.elapsed_s - r.budget_s)}", style="bold red"))
        if r.best_round:
            fields.append(Text(f"best at {r.best_round}", style="dim"))
        fc = self.forecasts.get(r.run_key)
        if isinstance(fc, dict):
            f = Text(f"{fmt_hours(fc['horizon_h'])} forecast ", style="dim")
            f.append(f"{fc['value']:.1f}", style="bold magenta")
            if fc.get("lo") is not None:
                f.append(f" [{fc['lo']:.1f}–{fc['hi']:.1f}]", style="magenta")
            f.append(f" · last best {fc['baseline']:.1f}", style="dim")
            note = prior_note(fc)
            if note:
                f.append(f" ({note})", style="dim italic")
            fields.append(f)
        grading = grading_text(r)
        if grading is not None:
            fields.append(grading)
        c = r.container
        if c is not None:
            ct = Text(f"{c.name} ", style="dim")
            ct.append(c.state or "?", style="green" if c.state == "running" else "red")
            if c.phase is not None:  # a pod: its phase, why it waits or ended, restarts, node (the cluster's words)
                ct.append(f" ({c.phase}" + (f", {c.reason}" if c.reason else ""), style="dim")
                ct.append(
                    (f", {c.restart_count} restarts" if c.restart_count else "")
                    + (f", node {c.node}" if c.node else "")
                    + ")",
                    style="dim",
                )
                if c.inferred:
                    ct.append(" inferred join", style="dim italic")
            fields.append(ct)
        if r.current_alarms:
            a = max(r.current_alarms, key=lambda x: x.t)
            fields.append(Text(f"⚠ {a.rule}: {a.message}", style="bold red"))
        if r.message:
            fields.append(Text(r.message, style="italic yellow"))
        set_static(box, wrap_units(fields, max(20, width)))

    def _want_forecasts(self) -> None:
        """Read again, in a worker, the forecast of every live run whose best or submissions changed
        since its last read (a run being read is looked at again after its read); forget ended runs'."""
        live = {r.run_key for r in self.runs if r.status in ("running", "grading")}
        for rk in [k for k in self.forecasts if k not in live]:
            del self.forecasts[rk]
            self._fc_sig.pop(rk, None)
        if getattr(self.app, "conn", None) is None:
            return
        want = []
        for r in self.runs:
            if r.run_key not in live or r.run_key in self._fc_busy:
                continue
            sig = (r.best_round, r.agent_submissions, r.auto_submissions, r.status)
            if self._fc_sig.get(r.run_key) == sig:
                continue
            self._fc_sig[r.run_key] = sig
            self._fc_busy.add(r.run_key)
            self.forecasts.setdefault(r.run_key, FORECAST_PENDING)
            want.append(r.run_key)
        if want:
            self._read_forecasts(want)

    #: the worker posts what it has read at most this often (seconds), so many runs' forecasts
    #: redraw the table a few times, not once per run
    FORECAST_POST_EVERY_S = 0.25

    @work(thread=True, exclusive=False, group="runs-forecast", exit_on_error=False)
    def _read_forecasts(self, run_keys: list[str]) -> None:

        out: dict[str, Optional[dict]] = {}
        posted = time.monotonic()
        conn = None
        try:
            conn = self.app.conn.cursor()  # type: ignore[attr-defined]  # this thread's own connection
            for rk in run_keys:
                try:
                    head = store.run_header(conn, rk)
                    out[rk] = None if head is None else header_forecast(conn, head, store.submissions(conn, rk))
                except Exception:  # noqa: BLE001 - a forecast is an extra: the row and its best stay as they are
                    out[rk] = None
                if time.monotonic() - posted >= self.FORECAST_POST_EVERY_S:
                    self.post_message(ForecastRead(out))
                    out, posted = {}, time.monotonic()
        except Exception:  # noqa: BLE001 - no connection (the app is shutting down)
            out.update({rk: None for rk in run_keys if rk not in out})
        finally:
            if conn is not None:
                conn.close()
        self.post_message(ForecastRead(out))

    @on(ForecastRead)
    def _on_forecast(self, msg: ForecastRead) -> None:
        live = {r.run_key for r in self.runs if r.status in ("running", "grading")}
        pending: set[str] = set()
        for rk, fc in msg.forecasts.items():
            self._fc_busy.discard(rk)
            if rk in live:
                self.forecasts[rk] = fc
                if isinstance(fc, dict):
                    pending.update(fc.get("prior_pending") or ())
        if pending:  # feeding runs without a stored fit: the app's fitter fits them, then we read again
            request_prior_fits(self.app, pending)
        if self.is_mounted and self._on_top:
            self._render_all()

    @on(PriorsFitted)
    def _on_priors_fitted(self, msg: PriorsFitted) -> None:
        """Fits for forecast priors were stored: read again the forecasts that were waiting for them."""
        for rk, fc in self.forecasts.items():
            if isinstance(fc, dict) and fc.get("prior_pending"):
                self._fc_sig.pop(rk, None)
        if self.is_mounted and self._on_top:
            self._render_all()

    def _render_empty(self) -> None:
        empty = not self.shown
        self.set_class(empty, "-empty")
        if not empty:
            return
        if self.runs:
            text = Text(f"No run matches “{self.filter_text}”. esc clears the filter.", style="italic")
        elif self.updates:
            text = Text(
                "No live run found yet: the supervisor is watching; runs appear here as they start.", style="italic"
            )
        else:
            text = Text("Waiting for the supervisor's first look at runs and containers…", style="dim italic")
        set_static(self.query_one("#runs-empty", Static), text)

    @on(RunsTable.RowHighlighted, "#runs-table")
    def _on_highlight(self) -> None:
        self._render_selected(self.now(), max(20, self.size.width - 2))

    # ------------------------------------------------------------------ sort / filter

    def action_sort(self, step: int = 1) -> None:
        """Next sort key among the columns shown (a narrow terminal hides some)."""
        shown = set(self.query_one(RunsTable).columns) or {k for k, _ in SORT_KEYS}
        for _ in range(len(SORT_KEYS)):
            self.sort_index = (self.sort_index + step) % len(SORT_KEYS)
            if SORT_KEYS[self.sort_index][0] in shown:
                break
        self._render_all()
        self.notify(f"sort by {SORT_KEYS[self.sort_index][1]} (s: next · S: reverse)", timeout=1.5)

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self._render_all()

    def action_filter(self) -> None:
        f = self.query_one("#runs-filter", Input)
        f.display = True  # inline, so the input is focusable before the next style pass
        f.value = self.filter_text
        self.set_focus(f)  # now, not later: keys typed right after / go to the input

    @on(Input.Changed, "#runs-filter")
    def _on_filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._render_all()

    @on(Input.Submitted, "#runs-filter")
    def _on_filter_submitted(self) -> None:
        self.query_one("#runs-filter", Input).display = False
        self.query_one(RunsTable).focus()

    def action_clear_filter(self) -> None:
        f = self.query_one("#runs-filter", Input)
        was = f.display or self.filter_text
        f.display = False
        if f.value:
            f.value = ""
        self.filter_text = ""
        self.query_one(RunsTable).focus()
        if was:
            self._render_all()

    # ------------------------------------------------------------------ open / act

    @on(RunsTable.RowSelected, "#runs-table")
    def _on_row_selected(self, event: RunsTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def action_open(self) -> None:
        rk = self.selected_run_key
        if rk and rk.startswith(GROUP_KEY):  # a run id: its tasks, unfolded
            self.folded = False
            self.filter_text = rk[len(GROUP_KEY) :].split("/", 1)[-1]
            self._render_all()
        elif rk:
            self.open_run(rk)

    def action_fold_run_ids(self) -> None:
        """Fold the tasks under their SForge run id (again: one row per task)."""
        self.folded = not self.folded
        self._render_all()

    def open_run(self, run_key: str) -> None:
        """Push the live run screen of ``run_key`` (with this screen's actions and the newest snapshot)."""
        self.app.push_screen(
            LiveRunScreen(
                run_key, actions=self.actions, live=self.by_key.get(run_key), now=self.now, run_command=self.run_command
            )
        )

    def _need_selection(self) -> Optional[str]:
        rk = self.selected_run_key
        if rk and rk.startswith(GROUP_KEY):
            self.notify("a run id: enter shows its tasks", timeout=2)
            return None
        if rk is None:
            self.notify("no run selected", timeout=2)
        return rk

    def action_stop_container(self) -> None:
        rk = self._need_selection()
        if rk:
            confirm_container_action(self, self.actions, rk, self.by_key.get(rk), "stop")

    def action_kill_container(self) -> None:
        rk = self._need_selection()
        if rk:
            confirm_container_action(self, self.actions, rk, self.by_key.get(rk), "kill")

    def action_shell(self) -> None:
        rk = self._need_selection()
        if rk:
            open_shell(self, self.actions, rk, self.run_command)

    def action_open_file(self) -> None:
        rk = self._need_selection()
        if rk:
            open_run_file(self, self.actions, rk, self.run_command)

    def action_alarms(self) -> None:
        alarms = [a for r in self.runs for a in r.alarms]
        if not alarms:
            self.notify("no alarm", timeout=2)
            return
        self.app.push_screen(AlarmsScreen(alarms, self.now(), on_ack=self._ack_all, states=alarm_states(self.runs)))

    def _ack_all(self) -> None:
        acknowledge_alarms(self, self.actions, None, on_done=self._render_all)

    def action_ack_alarms(self) -> None:
        rk = self.selected_run_key
        if rk is None:
            self.notify("no run selected", timeout=2)
            return
        acknowledge_alarms(self, self.actions, rk, on_done=self._render_all)

    def action_messages(self) -> None:
        self.app.push_screen(MessagesScreen(self.messages))

    def update_hosts(self, rows: Sequence[Any]) -> None:
        """Take the hosts view's rows of the newest snapshot."""
        self.host_rows = list(rows)

    def action_hosts(self) -> None:

        self.app.push_screen(HostsScreen(self.host_rows))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(RUNS_KEYS, title="Runs keys"))

    @property
    def _over_another_screen(self) -> bool:
        return len(self.app.screen_stack) > 2

    def check_action(self, action: str, parameters: tuple[object, ...]) -> Optional[bool]:
        if action == "quit_or_back" and parameters:  # one q binding shows: back or quit
            return (parameters[0] == "back") == self._over_another_screen
        return True

    def action_quit_or_back(self, what: str = "") -> None:
        if self._over_another_screen:
            self.app.pop_screen()
        else:
            self.app.exit()

    def palette_commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        return [
            ("Runs: open the selected run", "enter", self.action_open),
            ("Runs: sort by the next column", "s", self.action_sort),
            ("Runs: reverse the sort", "S", self.action_reverse),
            ("Runs: filter", "/", self.action_filter),
            ("Runs: all alarms", "a", self.action_alarms),
            ("Runs: supervisor notes", "m", self.action_messages),
            ("Runs: hosts", "H", self.action_hosts),
            ("Runs: stop the selected work container", "asks first (x)", self.action_stop_container),
            ("Runs: kill the selected work container", "asks first (K)", self.action_kill_container),
            ("Runs: shell in the selected work container", "e", self.action_shell),
            ("Runs: open a run file", "o", self.action_open_file),
            ("Runs: keys", "?", self.action_help),
        ]
