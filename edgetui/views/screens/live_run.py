"""Live run screen: the replay screen of one run, following the run as it grows.

It *is* a :class:`~edgetui.views.screens.replay.ReplayScreen` (same header, chart,
event list, detail, keys), plus:

* **pinned to now** — the selection sits on the newest event and follows new
  events until the user moves it; moving back to the last event (``G``/end)
  pins it again. While unpinned the list does not scroll by itself and its
  border says ``▼ N new``.
* **incremental reload** — on every :class:`~edgetui.views.screens.runs.RunsUpdated`
  (and ``r``) a thread worker asks the store how many events the run has now;
  when only events at or after the newest known time were added (the usual
  case while a run is watched), only that tail is read and appended; anything
  else (events inserted earlier, a re-graded round) reloads the run. The chart
  is rebuilt from the new submissions and grows to "now".
* a **live status** line from the :class:`~edgetui.live.model.LiveRun`
  snapshot (status, elapsed / budget, last event age, judges, container, CPU /
  memory), the run's **alarms**, and a **submissions** table (round, elapsed,
  pass rate, score, new best ★, status; Enter jumps to the graded event).
* container **actions** through an injected :class:`LiveActions`: ``x`` stop
  and ``K`` kill (both after a confirmation), ``e`` a shell in the work
  container and ``o`` a run file in ``$PAGER``, both with the app suspended.

The screen never touches Docker or files itself: everything outside goes
through ``actions`` (tests pass recording fakes).
"""

from __future__ import annotations

import subprocess
import time
from typing import Any, Callable, Iterable, Optional, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Static

from edgetui.store import queries as store
from edgetui.live.model import LiveRun
from edgetui.replay.cursor import ReplayCursor, format_elapsed

from edgetui.views.widgets import EventDetail, EventList, RunHeader, ScoreChart, chart_data
from edgetui.views.widgets.fmt import set_border, set_static
from edgetui.views.screens.live_parts import SubmissionsTable, alarm_line, grading_text, live_status_text  # noqa: F401 - grading_text: for the runs screen
from edgetui.views.screens.live_common import (  # noqa: F401 - re-exported: where callers have always found them
    LiveForecast,
    LiveForecastPart,
    LiveMoments,
    LiveMomentsPart,
    PriorsFitted,
    RUN_FILES,
    AlarmsScreen,
    LiveActions,
    ScreenCommands,
    SupervisorActions,
    wrap_units,
    acknowledge_alarms,
    alarm_states,
    confirm_container_action,
    open_run_file,
    open_shell,
    pager_argv,
)
from edgetui.views.screens.replay_host import app_connection
from edgetui.views.screens.replay import (
    NARROW_WIDTH,
    SHORT_HEIGHT,
    HelpScreen,
    LoadFailed,
    PromptInput,
    ReplayScreen,
    RunLoaded,
    fold_note,
)

from edgetui.analysis.forecast_prior import header_forecast

__all__ = [
    "LIVE_KEYS",
    "LiveActions",
    "LiveRunScreen",
    "RUN_FILES",
    "ScreenCommands",
    "SubmissionsTable",
    "SupervisorActions",
    "acknowledge_alarms",
    "confirm_container_action",
    "open_run_file",
    "open_shell",
]

#: (keys, what they do) for the help screen.
LIVE_KEYS: list[tuple[str, str]] = [
    ("j ↓ →  /  k ↑ ←", "next / previous event (moving unpins from now)"),
    ("G end", "back to now: the newest event, following new ones"),
    ("g home", "first event"),
    ("pgdn / pgup", "a page of events forward / back"),
    ("]  /  [", "next / previous graded submission"),
    ("}  b  /  {  B", "next / previous new best"),
    ("/  n  N", "search summaries and data; next / previous match"),
    ("t", "jump to an elapsed time: 3h20m · 2:15:00 · 95m"),
    ("space  s", "play from the selection / speed (replay keys)"),
    ("d  c  u", "show / hide detail, chart, submissions"),
    ("z", "show / fold the metadata rows (permission-mode, progress…; folded by default)"),
    ("v", "chart: score / pass rate / rescaled 0–100"),
    ("enter", "maximise the detail pane (in the submissions table: jump to that round)"),
    ("a", "all alarms of this run"),
    ("A", "acknowledge this run's alarms (they stop counting until raised again)"),
    ("r f5", "read the whole run again now (new events also arrive by themselves)"),
    ("x", "stop the work container (asks first)"),
    ("K", "kill the work container (asks first)"),
    ("e", "shell in the work container (docker exec -it … sh; kubectl exec for a pod), app suspended"),
    ("o", "open a run file in $PAGER, app suspended"),
    ("ctrl+p", "command palette"),
    ("? / F1", "this help"),
    ("q", "back to the runs"),
]


class LiveLoaded(Message):
    """A (re)load of the run: ``full`` when the whole run was read, else ``added`` events were appended."""

    def __init__(
        self,
        base: Optional[ReplayCursor],
        header: dict,
        cursor: ReplayCursor,
        subs: list[dict],
        full: bool,
        fresh_header: bool = True,
    ) -> None:
        self.base, self.header, self.cursor, self.subs, self.full = base, header, cursor, subs, full
        self.fresh_header = fresh_header  # header and submissions read now (False: kept from the last read)
        super().__init__()


class LiveIdle(Message):
    """A reload found nothing new."""


class LiveWaiting(Message):
    """The run is not in the database yet."""

    def __init__(self, note: str) -> None:
        self.note = note
        super().__init__()


def _subs_sig(subs: Iterable[dict]) -> dict[Optional[str], tuple]:
    return {
        s.get("round"): (
            s.get("status"),
            s.get("score"),
            s.get("pass_rate"),
            s.get("is_new_best"),
            s.get("graded_at"),
            s.get("t"),
        )
        for s in subs
    }


tail_start = store.tail_start  # (k, t0) of a timeline: where a tail read starts


def load_increment(
    conn: Any, run_key: str, base: Optional[ReplayCursor], base_subs: list[dict], header: Optional[dict] = None
) -> tuple[str, Optional[dict], Optional[ReplayCursor], list[dict]]:
    """Read what changed since ``base``: ``("idle"|"tail"|"full"|"missing", header, cursor, subs)``.

    ``tail``: events at or after the newest known time (and untimed ones) were
    re-read and appended to the unchanged prefix; ``full``: the run was read
    again (first load, events inserted earlier, a submission changed, the start
    moved). ``header`` (the last one read, with ``base`` and ``base_subs``): the
    caller knows that neither the submissions nor the run row changed (only lines
    were tailed), so a tail read keeps them (its ``n_events`` / ``last_t`` are
    brought up to date) instead of four more queries. Pure store reads on fresh
    cursors: safe in a thread worker.
    """
    light = header is not None and base is not None
    subs = list(base_subs) if light else store.submissions(conn, run_key)
    if base is not None:
        ev = base.events
        old_sig, new_sig = _subs_sig(base_subs), _subs_sig(subs)
        total = store.event_count(conn, run_key)
        if total == len(ev) and new_sig == old_sig:
            return "idle", None, None, subs
        subs_appended = all(new_sig.get(r) == s for r, s in old_sig.items())
        grown = store.run_events_since(conn, run_key, ev, total=total) if subs_appended else None
        if grown is not None:
            merged, total = grown
            head = dict(header) if light and header is not None else store.run_header(conn, run_key)
            if head is None:
                return "missing", None, None, subs
            start = head.get("started_at") or head.get("first_t")
            if start == base.start:
                if light:  # timeline order: the last timed event is the newest (untimed ones come after)
                    head["n_events"] = total
                    last_t = next((x for x in reversed(merged.t) if x is not None), None)
                    if last_t is not None:
                        head["last_t"] = max(last_t, head.get("last_t") or last_t)
                if light or head["n_events"] == total:
                    kept = tail_start(ev)[0]  # the events before the re-read tail: unchanged
                    return (
                        "tail",
                        head,
                        ReplayCursor(merged, subs, start=start, metadata_prefix=base.metadata[:kept]),
                        subs,
                    )
        if light:  # not a plain append after all: read everything
            return load_increment(conn, run_key, base, base_subs)
    head = store.run_header(conn, run_key)
    if head is None:
        return "missing", None, None, subs
    events = store.run_events(conn, run_key)
    subs = store.submissions(conn, run_key)
    start = head.get("started_at") or head.get("first_t")
    return "full", head, ReplayCursor(events, subs, start=start), subs


# ---------------------------------------------------------------------------- the screen


#: a supervisor snapshot with nothing new for this run still reads the database after this many seconds
SNAPSHOT_RELOAD_S = 5.0
#: reads of tailed lines keep the header and submissions read less than this many seconds ago
HEADER_REFRESH_S = 3.0
#: while pinned to now, the detail pane follows the newest event at most this often (seconds): each
#: follow is a database read and a layout of the pane (8-12 ms of the main thread at 160x48)
LIVE_DETAIL_S = 2.0


def _snapshot_sig(live: Optional[LiveRun]) -> Any:
    """The figures of a snapshot row that mean the run's recorded events or submissions changed
    other than by tailed lines (those are announced by ``events_recorded``)."""
    if live is None:
        return None
    c = live.container
    return (
        live.status,
        live.agent_submissions,
        live.auto_submissions,
        live.game_sessions,
        live.best_round,
        live.best_display,
        tuple(live.grading_rounds),
        live.started_at,
        live.deleted,
        len(live.alarms),
        live.alarms[-1].t if live.alarms else None,
        tuple((a.acked_at is not None) for a in live.alarms),
        (c.state, c.exit_code, c.oom_killed, c.restart_count) if c is not None else None,
        live.operator_action,
    )


class LiveRunScreen(ReplayScreen):
    """The replay screen of ``run_key`` following the run live (module docstring). Besides the replay
    screen's parts it holds the live moments (:attr:`live_moments`) and the forecast's prior
    (:attr:`forecast_part`)."""

    COMMANDS = {ScreenCommands}

    BINDINGS = [
        Binding("G,end", "last", "now", key_display="G"),
        Binding("left_curly_bracket,B", "new_best(-1)", "prev best", show=False),
        Binding("right_curly_bracket,b", "new_best(1)", "next best", show=False),
        Binding("d", "toggle_detail", "detail", show=False),
        Binding("space", "play", "play", show=False),
        Binding("s,plus", "speed(1)", "speed", show=False),
        Binding("t", "prompt('time')", "time", show=False),
        Binding("u", "toggle_subs", "subs", show=False),
        Binding("a", "alarms", "alarms", show=False),
        Binding("A", "ack_alarms", "ack", show=False),
        Binding("r,f5", "refresh_live", "reload", show=False),
        Binding("x", "stop_container", "stop"),
        Binding("K", "kill_container", "kill"),
        Binding("e", "shell", "shell"),
        Binding("o", "open_file", "file"),
    ]

    CSS = """
    LiveRunScreen #live-status { height: auto; padding: 0 1; background: $panel; }
    LiveRunScreen #live-alarms { height: auto; max-height: 4; padding: 0 1; background: $error 25%; display: none; }
    LiveRunScreen.-has-alarms #live-alarms { display: block; }
    LiveRunScreen.-quiet-alarms #live-alarms { background: $panel; }
    LiveRunScreen #top { height: 16; }
    LiveRunScreen.-short #top { height: 9; }
    LiveRunScreen #top #chart { width: 1fr; height: 1fr; }
    LiveRunScreen #events { overflow-x: hidden; }
    LiveRunScreen #subs { width: 58; height: 1fr; border: round $primary 40%; border-title-color: $text; }
    LiveRunScreen #subs:focus { border: round $accent; }
    LiveRunScreen.-no-subs #subs { display: none; }
    LiveRunScreen.-no-chart #top #chart { display: none; }
    LiveRunScreen.-no-chart #subs { width: 1fr; }
    LiveRunScreen.-no-chart.-no-subs #top { display: none; }
    """

    def __init__(
        self,
        run_key: str,
        *,
        actions: Optional[LiveActions] = None,
        live: Optional[LiveRun] = None,
        now: Callable[[], float] = time.time,
        run_command: Callable[[Sequence[str]], int] = subprocess.call,
        clock: Optional[Callable[[], float]] = None,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(run_key, clock=clock, direct=False, name=name)
        self.actions = actions
        self.live = live
        self.now = now
        self.run_command = run_command
        #: the selection follows the newest event
        self.pinned: bool = True
        #: events added since the selection left the newest event
        self.new_count: int = 0
        self.show_subs: Optional[bool] = None  # None: automatic (shown when wide)
        self.show_chart: bool = True
        #: the user chose what the top area shows (c / u): no automatic collapse any more
        self._top_chosen: bool = False
        self.waiting_note: Optional[str] = None
        self.reloads: dict[str, int] = {"full": 0, "tail": 0, "idle": 0}
        self._refreshing = False
        self._busy = False
        self._again = False
        self._again_full = False
        self._snap_sig: Any = None  # what of the last snapshot decides a reload (_snapshot_sig)
        self._header_t = float("-inf")  # monotonic time the header and submissions were last read
        self._need_full_header = True  # the snapshot said the run row / submissions changed
        self._last_reload_t = float("-inf")  # monotonic time of the last reload request
        self._live_dirty = False  # a snapshot's figures (tokens, dollars, ages) wait for the next tick
        self._tick_timer: Optional[Timer] = None
        self.live_moments = LiveMomentsPart(self, self.moments_part)
        self.forecast_part = LiveForecastPart(self)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield Static(id="live-status")
        yield Static(id="live-alarms")
        with Horizontal(id="top"):
            yield ScoreChart(id="chart")
            yield SubmissionsTable(id="subs")
        with Container(id="body"):
            yield EventList(id="events")
            yield EventDetail(id="detail")
        yield PromptInput(id="prompt")
        yield Footer()

    def on_mount(self) -> None:  # runs before ReplayScreen.on_mount (Textual calls both)
        self.query_one(SubmissionsTable).border_title = "submissions"
        self._tick_timer = self.set_interval(1.0, self._tick)
        self._show_live()

    def _apply_layout(self) -> None:
        super()._apply_layout()
        narrow = self.size.width < NARROW_WIDTH
        subs = self.show_subs if self.show_subs is not None else not narrow
        chart = self.show_chart and not (narrow and subs)  # narrow: submissions take the chart's place
        # a short terminal and nothing graded yet: an empty chart would take 9 of 24 rows from the
        # events; the top area comes back with the first submission (or with c / u)
        collapsed = (
            self.size.height < SHORT_HEIGHT and self.cursor is not None and not self.subs and not self._top_chosen
        )
        if collapsed:
            subs = chart = False
        hint = collapsed != self.has_class("-top-collapsed")
        self.set_class(collapsed, "-top-collapsed")
        if hint:
            self._show_live()  # the status line's hint comes and goes with the collapse
        self.set_class(not subs, "-no-subs")
        self.set_class(not chart, "-no-chart")

    def action_toggle_subs(self) -> None:
        self._top_chosen = True
        if self.has_class("-top-collapsed"):  # the automatic collapse: u shows the submissions
            self.show_subs = True
            self._apply_layout()
            return
        narrow = self.size.width < NARROW_WIDTH
        cur = self.show_subs if self.show_subs is not None else not narrow
        self.show_subs = not cur
        self._apply_layout()

    def action_toggle_chart(self) -> None:
        self._top_chosen = True
        if self.has_class("-top-collapsed"):  # the automatic collapse: c shows the chart
            self.show_chart = True
            self._apply_layout()
            return
        narrow = self.size.width < NARROW_WIDTH
        if narrow and self.show_chart and self.has_class("-no-chart"):
            self.show_subs = False  # narrow, submissions in the chart's place: bring the chart back
        else:
            self.show_chart = not self.show_chart
        self._apply_layout()

    # ------------------------------------------------------------------ live data in

    def update_runs(self, runs: Sequence[LiveRun], messages: Sequence[str] = ()) -> None:
        """A new supervisor snapshot: take this run's row and look for new events."""
        for r in runs:
            if r.run_key == self.run_key:
                self.live = r
                break
        if not self.is_mounted:  # pushed but not composed yet: on_mount shows what is kept here
            return
        sig = _snapshot_sig(self.live)
        if sig != self._snap_sig:  # a status, alarm, submission or container change shows at once
            self._show_live()
            self.set_header()
            self._live_dirty = False
        else:  # only figures moved: drawn with the next 1 s tick (one frame, not one per snapshot)
            self._live_dirty = True
        # new transcript / log lines come with ``events_recorded`` (right after their commit); the
        # snapshot reads again only when what it says about the run changed (a graded submission,
        # a status, an alarm, the container), the run has more events than the screen holds, or
        # nothing was read for SNAPSHOT_RELOAD_S (events the supervisor writes outside the tail
        # commit, e.g. resource samples)
        behind = self.live is not None and self.cursor is not None and self.live.n_events > self.cursor.n
        if behind or sig != self._snap_sig or time.monotonic() - self._last_reload_t >= SNAPSHOT_RELOAD_S:
            if sig != self._snap_sig:
                self._need_full_header = True
            self._snap_sig = sig
            self.refresh_live()

    def set_header(self) -> None:
        """The recorded header with the live dollars: the runs row's cost is written every
        ``row_refresh_s``, the snapshot's adds what was tailed since (tokens are summed from the
        events, so they are current already)."""
        if self.header is None:
            return
        head = dict(self.header)
        if self.live is not None and self.live.cost_usd is not None:
            head["cost_usd"] = self.live.cost_usd
        self.query_one(RunHeader).set_header(head)

    def events_recorded(self, run_keys: set[str]) -> None:
        """New events of these runs were committed: read ours now (the snapshot follows later)."""
        if self.run_key in run_keys and self.is_mounted:
            self.refresh_live()

    def _tick(self) -> None:
        self._show_live()
        if self._live_dirty:
            self._live_dirty = False
            self.set_header()

    def _show_live(self) -> None:
        now = self.now()
        width = max(20, self.size.width - 2)
        try:
            status = self.query_one("#live-status", Static)
        except NoMatches:  # a snapshot or tick arriving while the app shuts down (children already removed)
            return
        text = live_status_text(self.live, now, width)
        if self.has_class("-top-collapsed"):
            text.append("  · nothing graded yet (c: chart)", style="dim")
        set_static(status, text)
        live = self.live
        current = live.current_alarms if live else []
        acked = live.acked_alarms if live else []
        holding = {id(a) for a in current}
        ack_ids = {id(a) for a in acked}
        # loud ones first (newest first), then acknowledged, then cleared
        alarms = (
            sorted(live.alarms, key=lambda a: (0 if id(a) in holding else (1 if id(a) in ack_ids else 2), -a.t))
            if live
            else []
        )
        self.set_class(bool(alarms), "-has-alarms")
        self.set_class(bool(alarms) and not current, "-quiet-alarms")
        if alarms:
            narrow = self.size.width < NARROW_WIDTH
            shown = alarms[: 1 if narrow or self.has_class("-short") else 3]
            t = Text()
            for k, a in enumerate(shown):
                if k:
                    t.append("\n")
                line = alarm_line(
                    a, now, "holding" if id(a) in holding else ("acked" if id(a) in ack_ids else "cleared")
                )
                if line.cell_len > width:
                    line.truncate(width, overflow="ellipsis")
                t.append_text(line)
            if len(alarms) > len(shown):
                t.append(
                    f"\n… {len(alarms) - len(shown)} more (a: all alarms)"
                    if not narrow
                    else f"  (+{len(alarms) - len(shown)}, a)",
                    style="dim",
                )
            set_static(self.query_one("#live-alarms", Static), t)

    # ------------------------------------------------------------------ loading

    def _start_loading(self) -> None:  # called by ReplayScreen.on_mount
        self.query_one(EventList).loading = True
        self.refresh_live()

    def refresh_live(self, full: bool = False) -> None:
        """Look for new events now (one reload worker at a time; a request while busy runs after it).

        ``full`` reads the whole run again instead of only what was appended.
        """
        self._last_reload_t = time.monotonic()
        if self._busy:
            self._again = True
            self._again_full = self._again_full or full
            return
        self._busy = True
        self._again = False
        self._again_full = False
        # only lines were tailed since the last full read (less than HEADER_REFRESH_S ago): keep the
        # header and submissions (the snapshot brings the live dollars; tokens follow within seconds)
        light = (
            not full
            and not self._need_full_header
            and self.header is not None
            and time.monotonic() - self._header_t < HEADER_REFRESH_S
        )
        self._reload(None if full else self.cursor, list(self.subs), self.header if light else None)

    def action_refresh_live(self) -> None:
        """``r``: read the whole run again (also catches rows rewritten in place)."""
        self.refresh_live(full=True)

    @work(thread=True, exclusive=False, group="live-reload", exit_on_error=False)
    def _reload(self, base: Optional[ReplayCursor], base_subs: list[dict], header: Optional[dict] = None) -> None:
        try:
            conn = app_connection(self.app)
            how, head, cur, subs = load_increment(conn, self.run_key, base, base_subs, header)
            if cur is not None:
                cur.set_folding(self.folding)
            if head is not None and header is None:  # a fresh header read: the forecast with it
                head["forecast"] = header_forecast(conn, head, subs)
        except Exception as e:  # noqa: BLE001 - shown as a load failure, never crashes the app
            self.post_message(LoadFailed(f"{type(e).__name__}: {e}"))
            self.post_message(LiveIdle())
            return
        if how == "idle":
            self.post_message(LiveIdle())
        elif how == "missing":
            self.post_message(LiveWaiting(f"waiting for {self.run_key} to be recorded…"))
        else:
            assert head is not None and cur is not None  # (a tail and a full read bring both)
            self.post_message(LiveLoaded(base, head, cur, subs, full=how == "full", fresh_header=header is None))

    def _done(self) -> None:
        self._busy = False
        if self._again:
            self.refresh_live(full=self._again_full)

    @on(LiveIdle)
    def _on_live_idle(self) -> None:
        self.reloads["idle"] += 1
        self._done()

    @on(LiveWaiting)
    def _on_waiting(self, msg: LiveWaiting) -> None:
        self.waiting_note = msg.note
        events = self.query_one(EventList)
        events.loading = False
        set_border(events, "events", Text(msg.note, style="italic"))
        self._done()

    def _chart_data(self) -> Any:
        head = dict(self.header or {})
        if not head.get("timeout_s") and self.live and self.live.budget_s:
            head["timeout_s"] = self.live.budget_s
        end = self.cursor.end_elapsed if self.cursor else 0.0
        if self.live and self.live.status in ("running", "grading") and self.live.elapsed_s:
            end = max(end, self.live.elapsed_s)
        return chart_data(head, self.subs, end_elapsed_s=end, mode=self.chart_mode, moments=self.moments_part.rounds())

    def _chart_hidden(self) -> bool:  # the live screen lays out its top area itself (-no-chart)
        return False

    @on(LiveLoaded)
    def _on_live_loaded(self, msg: LiveLoaded) -> None:
        self.waiting_note = None
        self.reloads["full" if msg.full else "tail"] += 1
        if msg.fresh_header:  # (an idle read leaves the header as old as it was)
            self._need_full_header = False
            self._header_t = time.monotonic()
            self.forecast_part.ask_prior_fits(msg.header)
        try:
            if self.cursor is None:
                self._first_load(msg)
            else:
                self._apply_reload(msg)
        finally:
            self._done()

    def _first_load(self, msg: LiveLoaded) -> None:
        ReplayScreen._on_run_loaded(self, RunLoaded(msg.header, msg.cursor, msg.subs))
        self.live_moments.maybe_update()
        self._apply_layout()  # (a short terminal and nothing graded yet: the top area collapses)
        self.set_header()
        self.draw_chart()
        self.query_one(SubmissionsTable).set_submissions(msg.subs, msg.cursor.start)
        self._update_subs_title()
        self.pinned = True
        self.new_count = 0
        msg.cursor.last()
        self.moved(True)
        self.call_after_refresh(self._follow)

    def _apply_reload(self, msg: LiveLoaded) -> None:
        old, new = self.cursor, msg.cursor
        assert old is not None
        if new.folding != self.folding:  # (z pressed while it was read)
            new.set_folding(self.folding)
        added = max(0, new.n - old.n)
        new.speed = old.speed
        if old.query:
            ids = [old.events.event_id[j] for j in old.matches]
            new.query = old.query
            new.matches = sorted(i for i in (new.events.index_of(e) for e in ids) if i is not None)
        if self.pinned:
            new.last()
        else:
            sel = old.events.event_id[old.index] if old.n else None
            i = new.events.index_of(sel) if sel is not None else None
            new.select(i if i is not None else min(old.index, max(0, new.n - 1)))
            self.new_count += added
            if old.playing:
                new.playing, new.play_head = True, old.play_head
        changed = (new.n != old.n) or (new.index != old.index)
        had_subs = bool(self.subs)
        new.set_moments(self.moments_part.rounds())
        self.cursor, self.header, self.subs = new, msg.header, msg.subs
        self.live_moments.maybe_update()
        if had_subs != bool(self.subs):
            self._apply_layout()  # the first graded submission brings back a collapsed top area
        self.set_header()
        self.draw_chart()
        self.query_one(SubmissionsTable).set_submissions(msg.subs, new.start)
        self._update_subs_title()
        events = self.query_one(EventList)
        top = events.scroll_y
        events.set_timeline(new, new.index)
        if not self.pinned:
            events.scroll_to(y=top, animate=False, immediate=True)
        self._refreshing = True
        try:
            self.moved(changed)
        finally:
            self._refreshing = False
        if self.pinned:
            self.call_after_refresh(self._follow)

    def _detail_throttle_s(self) -> Optional[float]:
        """While new events move the selection (pinned to now), the detail follows at most every
        LIVE_DETAIL_S: each load is a database read and a layout pass of the screen."""
        if self._refreshing:
            return LIVE_DETAIL_S
        return super()._detail_throttle_s()

    def _follow(self) -> None:
        """Scroll the list to the selected (newest) event once the new virtual size is laid out.

        ``EventList.select`` right after ``set_timeline`` with more rows is clamped to the
        old scroll range; selecting again after the refresh reaches the bottom.
        """
        if self.cursor is not None and self.pinned:
            lst = self.query_one(EventList)
            if not lst.row_in_view(self.cursor.index):  # in view already: no second frame
                lst.select(self.cursor.index)

    def _update_subs_title(self) -> None:
        t = self.query_one(SubmissionsTable)
        n_agent = sum(1 for s in self.subs if s.get("kind") != "auto")
        n_auto = len(self.subs) - n_agent
        set_border(t, f"submissions {n_agent} agent · {n_auto} auto")

    # ------------------------------------------------------------------ pinning

    def moved(self, changed: bool = True) -> None:
        cur = self.cursor
        if cur is not None and not self._refreshing:
            at_end = cur.n == 0 or cur.index >= cur.n - 1 or cur.row_of() >= cur.n_rows - 1  # (the last row: a fold)
            self.pinned = at_end
            if at_end:
                self.new_count = 0
        super().moved(changed)

    def _update_status(self) -> None:
        cur = self.cursor
        if cur is None:
            return
        events = self.query_one(EventList)
        set_border(events, f"events {cur.index + 1:,}/{cur.n:,}" + fold_note(cur))
        sub = Text()
        if self.pinned:
            sub.append("● now", style="bold green")
        elif self.new_count:
            sub.append(f" ▼ {self.new_count:,} new ", style="bold black on yellow")
            sub.append(" G: now", style="yellow")
        else:
            sub.append("⏸ paused here", style="yellow")
            sub.append(" · G: now", style="dim")
        if cur.playing:
            sub.append(f"  ▶ {cur.speed}×", style="bold green")
        sub.append(f"  {format_elapsed(cur.play_head if cur.playing else cur.position())}")
        if cur.query:
            num = cur.match_number
            sub.append(f"  /{cur.query} ", style="yellow")
            sub.append(f"{num if num else '–'}/{len(cur.matches)}", style="yellow")
        set_border(events, subtitle=sub)

    @on(DataTable.RowSelected, "#subs")
    def _on_sub_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        cur = self.cursor
        rnd = self.query_one(SubmissionsTable).selected_round
        if cur is None or rnd is None:
            return
        idx = next((i for i in cur.submission_idx if cur.round[i] == rnd), None)
        if idx is None:
            self.notify(f"{rnd}: no graded event in the timeline yet", timeout=3)
            return
        self.do(lambda: cur.select(idx))
        self.query_one(EventList).focus()

    # ------------------------------------------------------------------ the parts' messages

    @on(LiveMoments)
    def _on_live_moments(self, msg: LiveMoments) -> None:
        self.live_moments.found(msg)

    @on(PriorsFitted)
    def _on_priors_fitted(self, msg: PriorsFitted) -> None:
        self.forecast_part.priors_fitted(msg)

    @on(LiveForecast)
    def _on_live_forecast(self, msg: LiveForecast) -> None:
        self.forecast_part.forecast_read(msg)

    # ------------------------------------------------------------------ actions

    def action_stop_container(self) -> None:
        confirm_container_action(self, self.actions, self.run_key, self.live, "stop")

    def action_kill_container(self) -> None:
        confirm_container_action(self, self.actions, self.run_key, self.live, "kill")

    def action_shell(self) -> None:
        open_shell(self, self.actions, self.run_key, self.run_command)

    def action_open_file(self) -> None:
        open_run_file(self, self.actions, self.run_key, self.run_command)

    def action_alarms(self) -> None:

        live = self.live
        alarms = list(live.alarms) if live else []
        if live is None or not alarms:
            self.notify("no alarm on this run", timeout=2)
            return
        self.app.push_screen(
            AlarmsScreen(
                alarms,
                self.now(),
                title=f"Alarms of {self.run_key}",
                on_ack=self.action_ack_alarms,
                states=alarm_states([live]),
            )
        )

    def action_ack_alarms(self) -> None:
        acknowledge_alarms(self, self.actions, self.run_key, on_done=self._after_ack)

    def _after_ack(self) -> None:
        self._show_live()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(LIVE_KEYS, title="Live run keys"))

    def action_back(self) -> None:
        if self.maximized is not None:
            self.action_restore()
            return
        if self._play_timer is not None:
            self._play_timer.pause()
        if len(self.app.screen_stack) <= 2:
            self.app.exit()
        else:
            self.app.pop_screen()

    def palette_commands(self) -> list[tuple[str, str, Callable[[], Any]]]:
        return [
            ("Live: back to now", "follow the newest event (G)", self.action_last),
            ("Live: reload events", "read the whole run again (r)", self.action_refresh_live),
            ("Live: stop the work container", "docker stop, asks first (x)", self.action_stop_container),
            ("Live: kill the work container", "docker kill, asks first (K)", self.action_kill_container),
            ("Live: shell in the work container", "docker exec -it … sh (e)", self.action_shell),
            ("Live: open a run file", "run_agent.log, agent_output.txt… in $PAGER (o)", self.action_open_file),
            ("Live: toggle submissions", "u", self.action_toggle_subs),
            ("Live: alarms of this run", "a", self.action_alarms),
            ("Live: keys", "help (?)", self.action_help),
        ]
