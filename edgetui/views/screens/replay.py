"""Replay screen: step or play through a recorded run with the score chart's time cursor.

Data flow: thread workers read through :mod:`edgetui.store.queries` and :mod:`edgetui.store.timeline_pages` (one cursor
per call) and post messages; the handlers here own the :class:`ReplayCursor` and hand plain data
to the widgets (which do no I/O). The detail of the selected event is fetched after a short
debounce so holding ``j`` stays fast on runs of any size.

Paged (:mod:`edgetui.store.timeline_pages`): the run opens in two steps. First the header (tokens as the ``runs``
row records them), the chart's submissions (:func:`edgetui.store.queries.chart_submissions`) and the first
page of events are read and painted, over a cursor of that page (:attr:`ReplayScreen.preview`);
keys that need the whole run wait (queued, in order) for the second step: the times and marks of
every event (:func:`edgetui.store.timeline_pages.load_index`), which become the cursor. Then the exact header.
Pages of rows are read by a worker when a move or the list needs them (the list draws ``…`` rows
meanwhile, and asks); search runs in DuckDB.
"""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import duckdb
from platformdirs import user_downloads_path
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static

from edgetui.analysis.report import build_report, to_html
from edgetui.store import queries as store
from edgetui.store.database import pool_retry
from edgetui.store.timeline_pages import PAGE, PAGE_COLUMNS, PagedTimeline, first_page, load_index
from edgetui.replay.cursor import SPEEDS, ReplayCursor, format_elapsed, parse_elapsed

from edgetui.views.widgets import EventDetail, EventList, RunHeader, ScoreChart, chart_data
from edgetui.views.screens.moments import Annotated, AnnotationsRead, MomentsFound, WhyLoaded
from edgetui.views.screens.moments import MomentsScreen, WhyScreen, moment_line  # noqa: F401 (re-exported)
from edgetui.views.screens.replay_parts import (
    DepthsReady,
    DetailLoaded,
    HeaderExact,
    HelpScreen,
    LoadFailed,
    PagesLoaded,
    PreviewLoaded,
    PromptInput,
    RunLoaded,
    fit_footer,
    fold_note,
    freeze_startup_heap,
    thaw_heap,
)
from edgetui.views.screens.replay_host import app_connection
from edgetui.views.screens.replay_moments import ReplayMoments
from edgetui.views.screens.replay_search import ReplaySearch, SearchDone
from edgetui.views.widgets.chart import legend_text
from edgetui.control_chars import visible, visible_lines

from edgetui.record.moments_table import list_moments, replay_moments

__all__ = ["ReplayScreen", "HelpScreen", "MomentsScreen", "REPLAY_KEYS", "fold_note", "replay_commands", "moment_line"]

#: Tick of the play timer (seconds of wall time).
PLAY_TICK = 1 / 20
#: Debounce before loading the selected event's detail (paused / playing).
DETAIL_DELAY = 0.05
DETAIL_DELAY_PLAYING = 0.3
NARROW_WIDTH = 120
SHORT_HEIGHT = 36
#: the chart's submissions are read in at least this many buckets (:func:`edgetui.store.queries.chart_submissions`),
#: else twice the screen's width (which bounds the chart's canvas): buckets of half a column keep each
#: column's extremes though the two grids are not aligned (at the canvas width itself, 4-7 cells of a
#: 156x14 drawing of the 1,000,000-event bench run differed from the drawing of every submission; at twice
#: it, the 2 that differed before)
CHART_MIN_BUCKETS = 320
#: under this many rows the chart is left out until ``c``: the events come first
TINY_HEIGHT = 20
#: the rows at the run's end read right after the whole run's cursor (G draws them in one frame)
END_ROWS = 2 * PAGE
#: a run with more events than this whose moments are not stored gets none detected in the app: the
#: detector (:func:`edgetui.record.moments_table.detect_run`) holds every message and tool call in Python (600 MB
#: at a million events); `edgetui moments RUN` stores them, and stored ones are always shown
DETECT_MOMENTS_MAX_EVENTS = 200_000

STEP = Binding.Group("step", compact=True)
SUB = Binding.Group("sub", compact=True)
BEST = Binding.Group("best", compact=True)
MATCH = Binding.Group("match", compact=True)
MOMENT = Binding.Group("moment", compact=True)

#: (keys, what they do) for the help screen, in reading order.
REPLAY_KEYS: list[tuple[str, str]] = [
    ("j ↓ →  /  k ↑ ←", "next / previous event"),
    ("pgdn / pgup", "a page of events forward / back"),
    ("]  /  [", "next / previous graded submission"),
    ("}  b  /  {  B", "next / previous new best"),
    (")  /  (", "next / previous reframing moment (✦ on the chart)"),
    ("M", "the run's reframing moments: enter jumps to one"),
    (
        "w",
        "why: what the agent did since the previous best, its notes, the code diff (the moment at "
        "or before the cursor, or the selected new best); in it ] / [ step milestone to milestone",
    ),
    (
        "L",
        "annotate the selected event (a graded round: its moment): label, then : and a note, e.g. "
        "reframe: coherent statistic; on an annotated event it edits the newest one (emptied: deletes it)",
    ),
    ("g home  /  G end", "first / last event"),
    ("space", "play / pause (run time advances at the speed)"),
    ("s  +  /  -", "faster / slower: 1× 10× 60× 600×"),
    ("t", "jump to an elapsed time: 3h20m · 2:15:00 · 2:15 (h:mm) · 95m · 5400"),
    ("/", "search summaries and event data (case-insensitive)"),
    ("n  /  N", "next / previous match"),
    ("d", "show / hide the detail pane"),
    ("enter", "maximise the detail pane (esc restores)"),
    (
        "z",
        "show / fold the metadata rows (permission-mode, mode, progress, file-history-snapshot, "
        "queue-operation, last-prompt…): folded into one “N folded” row per run of them by default",
    ),
    ("c", "show / hide the chart (left out when the terminal is under 20 rows or nothing is graded)"),
    ("v", "chart: score / pass rate / rescaled 0–100 (those the run has); ▾▴ mark scores off the scale"),
    ("F6", "SQL screen, its query scoped to this run (WHERE run_key = …)"),
    ("R", "the run's HTML report: downloaded by the browser (edgetui serve), else saved in the downloads folder"),
    ("ctrl+p", "command palette"),
    (
        "header: traj",
        "traj N/M improving: of the M counted submissions, N raised the best; first gain +h:mm:ss and "
        "best +h:mm:ss count from the FIRST SUBMISSION (SForge's trajectory metrics), not from the run's start",
    ),
    ("? / F1", "this help"),
    ("q", "back to the run picker (quit when the run was opened directly)"),
]


class ReplayScreen(Screen):
    """Header, score chart, event list and detail of one run; keys in :data:`REPLAY_KEYS`. Its search
    and its moments are parts it holds (:attr:`search_part`, :attr:`moments_part`: each with its own
    state, seeing the screen as a :class:`~edgetui.views.screens.replay_host.ReplayHost`)."""

    BINDINGS = [
        Binding("j,down,right", "step(1)", "next", key_display="j", group=STEP),
        Binding("k,up,left", "step(-1)", "prev", key_display="k", group=STEP),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("left_square_bracket", "submission(-1)", "prev submission", key_display="[", group=SUB),
        Binding("right_square_bracket", "submission(1)", "next submission", key_display="]", group=SUB),
        Binding("left_curly_bracket,B", "new_best(-1)", "prev best", key_display="{", group=BEST),
        Binding("right_curly_bracket,b", "new_best(1)", "next best", key_display="}", group=BEST),
        Binding("left_parenthesis", "moment(-1)", "prev moment", show=False, group=MOMENT),
        Binding("right_parenthesis", "moment(1)", "next moment", show=False, group=MOMENT),
        Binding("M", "moments_list", "moments", show=False),
        Binding("w", "why", "why", show=False),
        Binding("L", "prompt('label')", "label", show=False),
        Binding("g,home", "first", "first", show=False),
        Binding("G,end", "last", "last", show=False),
        Binding("space", "play", "play", key_display="␣"),  # (short: the footer fits 80 columns)
        Binding("s,plus", "speed(1)", "speed", key_display="s", show=False),  # (in ? help; the footer fits 80)
        Binding("minus", "speed(-1)", "slower", show=False),
        Binding("t", "prompt('time')", "time"),
        Binding("slash", "prompt('search')", "search", key_display="/"),
        Binding("n", "match(1)", "next match", show=False, group=MATCH),
        Binding("N", "match(-1)", "prev match", show=False, group=MATCH),
        Binding("d", "toggle_detail", "detail"),
        Binding("z", "toggle_fold", "fold"),
        Binding("c", "toggle_chart", "chart", show=False),
        Binding("v", "chart_mode", "score/pass/rescaled", show=False),
        Binding("enter", "maximize_detail", "zoom", show=False),
        Binding("escape", "restore", "restore", show=False),
        Binding("question_mark", "help", "help", key_display="?"),
        Binding("q", "back", "back"),
        Binding("f6", "sql", "SQL", show=False),
        Binding("R", "report", "report", show=False),
    ]

    def __init__(
        self,
        run_key: str,
        *,
        clock: Optional[Callable[[], float]] = None,
        direct: bool = False,
        name: Optional[str] = None,
        start_at: Optional[float] = None,
        start_round: Optional[str] = None,
        start_t: Optional[float] = None,
    ) -> None:
        super().__init__(name=name)
        self.start_t = start_t  # a time to open at (an event's, from the SQL screen)
        self.run_key = run_key
        self.start_at = start_at  # elapsed seconds to open at (edgetui replay --at)
        self.start_round = start_round  # a round to open at, its judge result (the moments queue)
        self.clock = clock or time.monotonic
        self.direct = direct
        self.cursor: Optional[ReplayCursor] = None
        #: a cursor over the first page only, shown until :attr:`cursor` (the whole run's) is ready
        self.preview: Optional[ReplayCursor] = None
        self._pending: list[tuple[Callable, tuple]] = []  # keys pressed while only the preview was shown
        self._pages_asked: set[int] = set()  # pages being read
        self.header: Optional[dict] = None
        self.subs: list[dict] = []
        #: the search (/, n, N) and the reframing moments ( ( ) M w L ): parts of this screen
        self.search_part = ReplaySearch(self)
        self.moments_part = ReplayMoments(self)
        self.prompt_mode: Optional[str] = None
        self.show_detail: Optional[bool] = None  # None: automatic (hidden when narrow)
        self.chart_choice: Optional[bool] = None  # None: automatic (hidden when tiny or nothing graded)
        self.chart_mode: Optional[str] = None  # score / pass / rescaled (v); None: the task's own
        #: metadata rows folded into "N folded" rows (z); every cursor of this screen follows it
        self.folding: bool = True
        self._chart_texts: tuple[str, str] = ("", "")
        self._play_timer: Optional[Timer] = None
        self._detail_timer: Optional[Timer] = None
        self._detail_pending = False
        self._last_tick: float = 0.0
        self._detail_for: int = -1
        self.loaded_at: Optional[float] = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield RunHeader(id="header")
        yield ScoreChart(id="chart")
        with Container(id="body"):
            yield EventList(id="events")
            yield EventDetail(id="detail")
        yield PromptInput(id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        freeze_startup_heap(self)
        self.query_one("#prompt").display = False
        chart = self.query_one(ScoreChart)
        chart.border_title = "score"
        events = self.query_one(EventList)
        events.border_title = "events"
        events.loading = True
        self.query_one(EventDetail).border_title = "detail"
        self._play_timer = self.set_interval(PLAY_TICK, self.play_tick, pause=True)
        self._apply_layout()
        self._start_loading()

    def on_unmount(self) -> None:
        thaw_heap(self)

    def on_resize(self) -> None:
        self._apply_layout()

    def _apply_layout(self) -> None:
        w, h = self.size
        fit_footer(self, w)
        narrow = w < NARROW_WIDTH
        self.set_class(narrow, "-narrow")
        self.set_class(h < SHORT_HEIGHT, "-short")
        show = self.show_detail if self.show_detail is not None else not narrow
        self.set_class(not show, "-no-detail")
        self.set_class(self._chart_hidden(), "-chart-hidden")

    def _chart_hidden(self) -> bool:
        """Is the chart left out? Your ``c`` decides; else it is when the terminal is tiny (under
        :data:`TINY_HEIGHT` rows: the events come first) or the run has nothing graded to draw."""
        if self.chart_choice is not None:
            return not self.chart_choice
        return self.size.height < TINY_HEIGHT or (self.cursor is not None and not self.subs)

    @property
    def detail_visible(self) -> bool:
        return not self.has_class("-no-detail")

    # ------------------------------------------------------------------ loading

    def _start_loading(self) -> None:
        """Read the run (:meth:`_load_run`; the live run screen reads it its own way)."""
        self._load_run()

    @work(thread=True, exclusive=True, group="replay-load", exit_on_error=False)
    def _load_run(self) -> None:
        try:
            conn = app_connection(self.app)
            pool_retry(conn, self._load_run_once, conn)  # (a read past a bounded buffer pool lifts it)
        except Exception as e:  # noqa: BLE001 - shown, never crashes the app
            self.post_message(LoadFailed(f"{type(e).__name__}: {e}"))

    def _load_run_once(self, conn) -> None:
        head = store.run_header(conn, self.run_key, tokens=False)
        if head is None:
            self.post_message(LoadFailed(f"no run {self.run_key!r} in this database"))
            return
        # the chart's rows, as many as its width can show (the screen's width bounds its canvas)
        subs = store.chart_submissions(conn, self.run_key, buckets=max(CHART_MIN_BUCKETS, 2 * self.app.size.width))
        marks = [{"round": r, "is_new_best": True} for r in store.new_best_rounds(conn, self.run_key)]
        page = first_page(conn, self.run_key)
        start = head.get("started_at") or head.get("first_t")
        preview = ReplayCursor(page, marks, start=start)
        preview.set_folding(self.folding)
        painted = threading.Event()
        self.post_message(PreviewLoaded(head, preview, subs, painted))
        # the index's reads hold the GIL in part and keep both cores busy: they start once the first
        # page is on screen, so the first paint does not wait for them
        painted.wait(2.0)
        # then every event's time and the marks (graded rounds, folds, depths): the whole run's cursor
        events = load_index(conn, self.run_key)
        events.add_pages({0: [getattr(page, c) for c in PAGE_COLUMNS]})
        cur = ReplayCursor(events, marks, start=start)
        cur.set_folding(self.folding)
        self.post_message(RunLoaded(head, cur, subs))
        # the run's last pages, for G / end (where the final results are) to draw in one frame
        end = events.missing(events.n - END_ROWS, events.n - 1)
        if end:
            self.post_message(PagesLoaded(events, events.fetch_pages(conn, end)))
        exact = store.run_header(conn, self.run_key)
        if exact is not None:
            self.post_message(HeaderExact(exact))
        # then the moments (stored, else detected now): the first paint does not wait for them
        try:
            if events.n > DETECT_MOMENTS_MAX_EVENTS and not list_moments(conn, self.run_key):
                self.post_message(
                    MomentsFound(
                        [],
                        not_detected=(
                            f"moments are not detected in the app for a run of over {DETECT_MOMENTS_MAX_EVENTS:,} events "
                            f"(the detector reads every message and tool call): `edgetui moments` stores them, then ✦ show"
                        ),
                    )
                )
            else:
                self.post_message(MomentsFound(replay_moments(conn, self.run_key)))
        except duckdb.OutOfMemoryException:  # (db.pool_retry lifts the bound and reads again)
            raise
        except Exception:  # noqa: BLE001  (no moments is no reason not to replay the run)
            self.post_message(MomentsFound([]))
        self.moments_part.read_annotations_now()

    @on(PreviewLoaded)
    def _on_preview(self, msg: PreviewLoaded) -> None:
        if self.cursor is not None:  # (the whole run came first)
            if msg.painted is not None:
                msg.painted.set()
            return
        self.header, self.preview, self.subs = msg.header, msg.cursor, msg.subs
        self.query_one(RunHeader).set_header(msg.header)
        self.draw_chart()
        self._apply_layout()
        events = self.query_one(EventList)
        events.loading = False
        events.set_timeline(msg.cursor, 0)
        events.focus()
        self._update_status()
        if msg.painted is not None:
            self.call_after_refresh(msg.painted.set)

    @on(HeaderExact)
    def _on_header_exact(self, msg: HeaderExact) -> None:
        self.header = msg.header
        self.query_one(RunHeader).set_header(msg.header)

    def later(self, fn: Callable, *args: Any) -> bool:
        """Before the whole run's cursor is ready (nothing shown yet, or only the first page): queue
        ``fn(*args)`` for when it is and say so (``True``); else ``False``. A key pressed right as
        the screen opens is done once the run is read, not dropped."""
        if self.cursor is None:
            self._pending.append((fn, args))
            return True
        return False

    # ------------------------------------------------------------------ pages

    def _want_rows(self, lo: int, hi: int) -> None:
        """Have the pages holding events ``lo``..``hi`` read (a worker) unless read or being read."""
        cur = self.cursor
        tl = cur.events if cur is not None else None
        if not isinstance(tl, PagedTimeline):
            return
        want = [p for p in tl.missing(lo, hi) if p not in self._pages_asked]
        if want:
            self._pages_asked.update(want)
            self._read_pages(tl, want)

    def _want_around(self) -> None:
        """The pages of the rows in view around the selection, and a screen's worth either side."""
        cur = self.cursor
        if cur is None or not isinstance(cur.events, PagedTimeline) or cur.n == 0:
            return
        h = max(1, self.query_one(EventList).scrollable_content_region.height or 40)
        row = cur.row_of()
        lo = cur.row_event(max(0, row - 2 * h))
        last = min(cur.n_rows - 1, row + 2 * h)
        hi = cur.row_event(last) + max(0, cur.row_folded(last) - 1)
        self._want_rows(lo, hi)

    @work(thread=True, group="replay-pages", exit_on_error=False)
    def _read_pages(self, tl: PagedTimeline, pages: list[int]) -> None:
        try:
            conn = app_connection(self.app)
            got = pool_retry(conn, tl.fetch_pages, conn, pages)
        except Exception as e:  # noqa: BLE001 - shown, never crashes the app
            got = {}
            self.app.call_from_thread(self.notify, f"cannot read events: {e}", severity="error", timeout=4)
        self.post_message(PagesLoaded(tl, {p: got.get(p) for p in pages}))

    @on(PagesLoaded)
    def _on_pages(self, msg: PagesLoaded) -> None:
        self._pages_asked.difference_update(msg.pages)
        read = {p: cols for p, cols in msg.pages.items() if cols is not None}
        msg.timeline.add_pages(read)
        cur = self.cursor
        if cur is None or cur.events is not msg.timeline:
            return
        self.query_one(EventList).refresh()
        if self._detail_for != cur.index:
            self._schedule_detail()

    @on(EventList.NeedRows)
    def _on_need_rows(self, msg: EventList.NeedRows) -> None:
        self._want_rows(msg.lo, msg.hi)

    @on(RunLoaded)
    def _on_run_loaded(self, msg: RunLoaded) -> None:
        preview, self.preview = self.preview, None
        if self.header is None or msg.header.get("tokens_exact") or not self.header.get("tokens_exact"):
            self.header = msg.header
        self.cursor, self.subs = msg.cursor, msg.subs
        if preview is not None and self.start_at is None and self.start_round is None and self.start_t is None:
            msg.cursor.select(preview.index)  # (j / k within the first page before the rest came)
        if msg.cursor.folding != self.folding:  # (z pressed while it was read)
            msg.cursor.set_folding(self.folding)
        self.moments_part.loaded(msg.moments)
        self.query_one(RunHeader).set_header(self.header)
        self.draw_chart()
        self._apply_layout()  # (nothing graded: no empty chart)
        events = self.query_one(EventList)
        events.loading = False
        if self.start_at is not None:  # edgetui replay RUN --at 3h20m
            at, self.start_at = self.start_at, None
            end = msg.cursor.end_elapsed or 0.0
            msg.cursor.jump_to(min(at, end))
            if at > end:
                self.notify(
                    f"--at {format_elapsed(at)} is past the run's end: the run ended at {format_elapsed(end)}; "
                    "at its last event",
                    timeout=10,
                )
        if self.start_t is not None:  # a row of the SQL screen: its event's time
            at_t, self.start_t = self.start_t, None
            base = msg.cursor.start if msg.cursor.start is not None else at_t
            msg.cursor.jump_to(at_t - base)
        if self.start_round is not None:
            rnd, self.start_round = self.start_round, None
            idx = next((i for i in msg.cursor.submission_idx if msg.cursor.round[i] == rnd), None)
            if idx is not None:
                msg.cursor.select(idx)
        events.set_timeline(msg.cursor, msg.cursor.index)
        events.focus()
        self.loaded_at = time.perf_counter()
        self.moved(True)
        pending, self._pending = self._pending, []
        for fn, args in pending:  # the keys pressed while the first page was shown
            fn(*args)

    @on(DepthsReady)
    def _on_depths(self, msg: DepthsReady) -> None:
        cur = self.cursor
        if cur is not None and msg.cursor is cur:
            cur.depth = msg.depth
            self.query_one(EventList).refresh()

    @on(LoadFailed)
    def _on_load_failed(self, msg: LoadFailed) -> None:
        events = self.query_one(EventList)
        events.loading = False
        self.query_one(EventDetail).show(None)
        self.query_one("#detail-body", Static).update(Text(visible_lines(str(msg.error)), style="bold red"))
        self.notify(msg.error, title="cannot open run", severity="error", timeout=8)

    # ------------------------------------------------------------------ after every move

    def moved(self, changed: bool = True) -> None:
        cur = self.cursor
        if cur is None:
            return
        self.query_one(EventList).select(cur.index)
        self._want_around()
        self.query_one(ScoreChart).set_cursor(cur.position())
        self._update_status()
        if changed or self._detail_for != cur.index:
            self._schedule_detail()

    def _update_status(self) -> None:
        cur = self.cursor or self.preview
        if cur is None:
            return
        events = self.query_one(EventList)
        n = cur.n if self.cursor is not None else int((self.header or {}).get("n_events") or cur.n)
        events.border_title = (
            f"events {cur.index + 1:,}/{n:,}"
            + (fold_note(cur) if self.cursor is not None else "")
            + (" · c: chart" if self.has_class("-chart-hidden") else "")
        )
        state = "▶" if cur.playing else "⏸"
        sub = Text()
        sub.append(f"{state} {cur.speed}×", style="bold green" if cur.playing else "")
        sub.append(f"  {format_elapsed(cur.play_head if cur.playing else cur.position())}")
        if cur.query:
            num = cur.match_number
            sub.append(visible(f"  /{cur.query} "), style="yellow")
            shown = f"{num:,}" if num else "–"
            if cur.match_cover is not None:  # a first page of matches: the count is coming
                sub.append(f"{shown}/{len(cur.matches):,}+ counting…", style="yellow")
            else:
                sub.append(f"{shown}/{len(cur.matches):,}", style="yellow")
        events.border_subtitle = sub

    def _schedule_detail(self) -> None:
        """Load the selected event's detail soon: debounced when stepping, throttled when playing."""
        throttle = self._detail_throttle_s()
        if throttle is not None and self._detail_pending:
            return  # the pending load will pick up the latest selection
        if self._detail_timer is not None:
            self._detail_timer.stop()
        if not self.detail_visible:
            self._detail_pending = False
            return
        self._detail_pending = True
        self._detail_timer = self.set_timer(throttle if throttle is not None else DETAIL_DELAY, self._request_detail)

    def _detail_throttle_s(self) -> Optional[float]:
        """Seconds between detail loads while the selection moves by itself (playing), else None
        (a move by the user: debounced by DETAIL_DELAY only)."""
        return DETAIL_DELAY_PLAYING if self.cursor is not None and self.cursor.playing else None

    def _request_detail(self) -> None:
        self._detail_pending = False
        cur = self.cursor
        if cur is None or cur.n == 0:
            return
        i = cur.index
        eid = cur.events.event_id[i]
        if eid is None:  # its page is being read: the detail follows it (PagesLoaded)
            self._detail_for = -1
            self._want_rows(i, i)
            return
        self._detail_for = i
        row = cur.row_of(i)
        n = cur.row_folded(row)
        fold = (i - cur.row_event(row) + 1, n) if n else None  # (the selected row is a fold)
        self._fetch_detail(i, eid, cur.elapsed[i], fold)

    @work(thread=True, exclusive=True, group="replay-detail", exit_on_error=False)
    def _fetch_detail(
        self, index: int, event_id: str, elapsed: Optional[float], fold: Optional[tuple[int, int]] = None
    ) -> None:
        try:
            conn = app_connection(self.app)
            pool_retry(conn, self._fetch_detail_once, conn, index, event_id, elapsed, fold)
        except Exception as e:  # noqa: BLE001 - shown in the detail pane, never crashes the app
            self.post_message(
                DetailLoaded(index, {"event": {"kind": "parse_error", "summary": f"cannot load detail: {e}"}})
            )

    def _fetch_detail_once(
        self, conn, index: int, event_id: str, elapsed: Optional[float], fold: Optional[tuple[int, int]]
    ) -> None:
        ev = store.event_detail(conn, event_id)
        detail: dict[str, Any] = {"event": ev, "elapsed": elapsed}
        if fold is not None:
            detail["folded"] = fold
        if ev is not None:
            if ev.get("tool_use_id") and ev.get("kind") in ("tool_call", "tool_result"):
                detail["pair"] = [
                    e for e in store.tool_events(conn, self.run_key, ev["tool_use_id"]) if e["event_id"] != event_id
                ]
            if ev.get("kind") in ("judge_result", "game_result") and ev.get("round"):
                detail["submission"] = store.submission(conn, self.run_key, ev["round"])
                detail["tests"] = store.test_results(conn, self.run_key, ev["round"])
        self.post_message(DetailLoaded(index, detail))

    @on(DetailLoaded)
    def _on_detail(self, msg: DetailLoaded) -> None:
        if self.cursor is not None and msg.index == self.cursor.index:
            self.query_one(EventDetail).show(self._with_annotations(msg.detail))

    def _with_annotations(self, detail: Optional[dict]) -> Optional[dict]:
        """``detail`` with its event's annotations (the run's, read by the moments part) beside it."""
        ev = (detail or {}).get("event") or {}
        anns = self.moments_part.annotations.get(ev["event_id"]) if ev.get("event_id") else None
        return dict(detail, annotations=anns) if detail is not None and anns else detail

    def annotations_changed(self) -> None:
        """(The moments part read the run's annotations again.) The detail pane shows the new ones."""
        pane = self.query_one(EventDetail)
        if pane.detail is not None:
            pane.show(self._with_annotations({k: v for k, v in pane.detail.items() if k != "annotations"}))

    # ------------------------------------------------------------------ moves

    def do(self, move: Callable[[], bool], what: str = "") -> None:
        if self.cursor is None:
            return
        changed = move()
        if not changed and what:
            self.notify(what, timeout=2)
        self.moved(changed)

    def action_step(self, n: int) -> None:
        if self.later(self.action_step, n) or (c := self.cursor) is None:
            return
        self.do(lambda: c.step(n))

    def action_page(self, direction: int) -> None:
        if self.later(self.action_page, direction) or (c := self.cursor) is None:
            return
        h = max(1, self.query_one(EventList).scrollable_content_region.height - 1)
        self.do(lambda: c.step(direction * h))

    def action_submission(self, direction: int) -> None:
        if self.later(self.action_submission, direction):
            return
        c = self.cursor
        if c is not None:
            fwd = direction > 0
            self.do(
                c.next_submission if fwd else c.prev_submission,
                "no later submission" if fwd else "no earlier submission",
            )

    def action_new_best(self, direction: int) -> None:
        if self.later(self.action_new_best, direction):
            return
        c = self.cursor
        if c is not None:
            fwd = direction > 0
            self.do(c.next_new_best if fwd else c.prev_new_best, "no later new best" if fwd else "no earlier new best")

    def action_first(self) -> None:
        if self.later(self.action_first) or (c := self.cursor) is None:
            return
        self.do(c.first)

    def action_last(self) -> None:
        if self.later(self.action_last) or (c := self.cursor) is None:
            return
        self.do(c.last)

    # ------------------------------------------------------------------ play

    def action_play(self) -> None:
        if self.later(self.action_play):
            return
        c = self.cursor
        if c is None:
            return
        c.toggle_play()
        timer = self._play_timer
        if c.playing:
            self._last_tick = self.clock()
            if timer is not None:
                timer.resume()
        elif timer is not None:
            timer.pause()
        self.moved(False)

    def action_speed(self, direction: int) -> None:
        if self.later(self.action_speed, direction):
            return
        if self.cursor is None:
            return
        # `s` / `+` cycle upwards (600× wraps to 1×); `-` slows down and stops at 1×
        sp = self.cursor.cycle_speed(direction, wrap=direction > 0)
        self._update_status()
        self.notify(f"speed {sp}×  ({' '.join(f'{s}×' for s in SPEEDS)})", timeout=1.5)

    def play_tick(self) -> None:
        """One play step: advance the cursor by the clock time since the last tick × speed."""
        c = self.cursor
        if c is None or not c.playing:
            return
        now = self.clock()
        dt, self._last_tick = now - self._last_tick, now
        changed = c.advance(max(0.0, dt))
        if not c.playing and self._play_timer is not None:
            self._play_timer.pause()
        self.moved(changed)

    # ------------------------------------------------------------------ prompt

    def action_prompt(self, mode: str) -> None:
        # (opened at once, also over the first page only: what is typed is not lost; what it asks
        # for waits for the whole run, see _on_prompt)
        c = self.cursor or self.preview
        if c is None:
            return
        p = self.query_one(PromptInput)
        self.prompt_mode = mode
        if mode == "search":
            p.placeholder = "search summaries and data…  (enter: find · esc: cancel)"
            p.value = c.query
        elif mode == "label":
            where = c.round[c.index] if c.kind[c.index] in ("judge_result", "game_result") else "this event"
            p.value, editing = self.moments_part.label_prompt(c.events.event_id[c.index])
            p.placeholder = f"annotate {visible(str(where))}: reframe · bug fix · tuning · reward hack? [: note]  " + (
                "(enter: save · emptied: delete · esc: cancel)" if editing else "(enter: save · esc: cancel)"
            )
        else:
            p.placeholder = "jump to elapsed time: 3h20m · 2:15:00 · 2:15 · 95m · 5400  (esc: cancel)"
            p.value = ""
        p.display = True
        p.focus()

    def _close_prompt(self) -> None:
        p = self.query_one(PromptInput)
        p.display = False
        self.prompt_mode = None
        self.query_one(EventList).focus()

    @on(PromptInput.Cancelled)
    def _on_prompt_cancel(self) -> None:
        self._close_prompt()

    @on(Input.Submitted, "#prompt")
    def _on_prompt(self, event: Input.Submitted) -> None:
        self._prompt_done(event.value.strip(), self.prompt_mode)

    def _prompt_done(self, text: str, mode: Optional[str]) -> None:
        if self.cursor is None and self.preview is not None:  # only the first page yet: done when the run is
            if mode == "time":
                try:
                    parse_elapsed(text)
                except ValueError as e:
                    self.notify(str(e), severity="error", timeout=4)
                    return
            self._close_prompt()
            self._pending.append((self._prompt_done, (text, mode)))
            return
        if mode == "time":
            try:
                secs = parse_elapsed(text)
            except ValueError as e:
                self.notify(str(e), severity="error", timeout=4)
                return
            self._close_prompt()
            cur = self.cursor
            if cur is not None:
                self.do(lambda: cur.jump_to(secs))
            return
        self._close_prompt()
        c = self.cursor
        if c is None:
            return
        if mode == "label":
            eid = c.events.event_id[c.index]
            if eid is None:
                self.notify("the event is still being read: press L again", timeout=3)
                return
            self.moments_part.label_submitted(eid, text)
            return
        if mode == "search":
            if not text:
                self.search_part.clear()
                self._update_status()
                return
            self.search_part.search(text)

    # ------------------------------------------------------------------ panes

    def action_toggle_detail(self) -> None:
        self.show_detail = not self.detail_visible
        self._apply_layout()
        if self.detail_visible:
            self._schedule_detail()

    def action_toggle_fold(self) -> None:
        """``z``: fold the metadata rows (one "N folded" row per run of them) or show them all."""
        if self.later(self.action_toggle_fold):
            return
        self.folding = not self.folding
        cur = self.cursor
        if cur is None:
            return
        if not cur.n_metadata:
            self.notify("no metadata rows in this run", timeout=2)
        cur.set_folding(self.folding)
        events = self.query_one(EventList)
        events.set_timeline(cur, cur.index)
        self.moved(False)

    def action_toggle_chart(self) -> None:
        self.chart_choice = self._chart_hidden()  # hidden -> shown, shown -> hidden
        self._apply_layout()
        self._update_status()

    def action_chart_mode(self) -> None:
        """``v``: the chart's quantity, in turn score / pass rate / rescaled (those the run has)."""
        chart = self.query_one(ScoreChart)
        modes = chart.data.modes or (chart.data.mode,)
        cur = chart.data.mode if chart.data.mode in modes else modes[0]
        self.chart_mode = modes[(modes.index(cur) + 1) % len(modes)]
        self.draw_chart()  # (the chart's title names the quantity: no toast over the events)

    def _chart_data(self) -> Any:
        end = self.cursor.end_elapsed if self.cursor is not None else 0.0
        return chart_data(
            self.header or {},
            self.subs,
            end_elapsed_s=end,
            mode=self.chart_mode,
            moments=self.moments_part.rounds(),
        )

    def draw_chart(self) -> None:
        chart = self.query_one(ScoreChart)
        data = self._chart_data()
        chart.set_data(data)
        legend = legend_text(data)  # a Text: no markup parsing at every render
        head = self.header or {}
        assumed = ", policy assumed" if head.get("policy_assumed") or head.get("task_assumed") else ""
        title = f"{data.y_label} · best-so-far" + (f" ({data.policy}{assumed})" if data.policy else "")
        if data.lower_better:  # (a minimised score: its best line falls, its new bests are drops)
            title += " · ↓ lower is better"
        if self._chart_texts != (legend.plain, title):  # (a live reload redraws the same often)
            self._chart_texts = (legend.plain, title)
            chart.border_subtitle = legend
            chart.border_title = Text(visible(title))  # (a str would be read as markup)

    def action_maximize_detail(self) -> None:
        if self.maximized is not None:
            self.action_restore()
            return
        if not self.detail_visible:
            self.show_detail = True
            self._apply_layout()
            self._schedule_detail()
        detail = self.query_one(EventDetail)
        if self.maximize(detail, container=False):
            detail.focus()  # ↑/↓ scroll the detail; j/k still step through events

    def action_restore(self) -> None:
        """Undo a maximised pane (esc)."""
        if self.maximized is not None:
            self.minimize()
            self.query_one(EventList).focus()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(REPLAY_KEYS))

    def action_sql(self) -> None:
        """``F6``: the SQL screen over this run."""
        self.app.open_sql(self.run_key)  # type: ignore[attr-defined]

    def action_report(self) -> None:
        """``R``: the run's HTML report (:func:`edgetui.analysis.report.to_html`), built in a worker and
        delivered by Textual: a download in the browser (``edgetui serve``), else a file in the
        user's downloads folder."""
        self.notify("building the report…", timeout=3)
        self._build_report()

    @work(thread=True, exclusive=True, group="replay-report", exit_on_error=False)
    def _build_report(self) -> None:
        try:
            with app_connection(self.app).cursor() as cur:  # (a cursor of its own: other workers read meanwhile)
                rep = build_report(cur, self.run_key)
            html = to_html(rep)
        except Exception as e:  # noqa: BLE001 - a report that cannot be built is a toast, not a crash
            self.app.call_from_thread(
                self.notify, f"no report: {' '.join(str(e).split())[:200]}", severity="error", timeout=6
            )
            return
        name = f"{report_name(self.run_key)}.report.html"
        self.app.call_from_thread(self._deliver_report, html, name)

    def _deliver_report(self, html: str, name: str) -> None:
        """Textual delivers it: the browser downloads it, or it is saved in the downloads folder
        (the app says where once saved: :meth:`edgetui.views.app.EdgeTUIApp.on_delivery_complete`)."""
        # (as text: Textual 8.2.8's terminal driver opens the file in text mode for any in-memory
        # binary stream, so deliver_binary fails there; the web driver sends either the same way)
        self.app.deliver_text(
            io.StringIO(html),
            save_directory=None if self.app.is_web else download_folder(),
            save_filename=name,
            mime_type="text/html",
            encoding="utf-8",
            open_method="download",
            name="the report",
        )
        if self.app.is_web:
            self.notify(f"report {name}: the browser downloads it", timeout=4)

    def action_back(self) -> None:
        if self.maximized is not None:
            self.action_restore()
            return
        if self._play_timer is not None:
            self._play_timer.pause()
        if self.direct or len(self.app.screen_stack) <= 2:
            self.app.exit()
        else:
            self.app.pop_screen()

    # ------------------------------------------------------------------ the parts' keys and messages

    def action_match(self, direction: int) -> None:
        self.search_part.match(direction)

    def action_moment(self, direction: int) -> None:
        self.moments_part.moment(direction)

    def action_moments_list(self) -> None:
        self.moments_part.moments_list()

    def action_why(self) -> None:
        self.moments_part.why()

    def show_query(self, query: str) -> None:
        self.query_one(EventList).set_query(query)

    @on(SearchDone)
    def _on_search_done(self, msg: SearchDone) -> None:
        self.search_part.done(msg)

    @on(MomentsFound)
    def _on_moments_found(self, msg: MomentsFound) -> None:
        self.moments_part.found(msg)

    @on(WhyLoaded)
    def _on_why_loaded(self, msg: WhyLoaded) -> None:
        self.moments_part.why_loaded(msg)

    @on(AnnotationsRead)
    def _on_annotations_read(self, msg: AnnotationsRead) -> None:
        self.moments_part.annotations_read(msg)

    @on(Annotated)
    def _on_annotated(self, msg: Annotated) -> None:
        self.moments_part.annotated(msg)

    @on(EventList.Clicked)
    def _on_clicked(self, msg: EventList.Clicked) -> None:
        c = self.cursor
        if c is not None:
            self.do(lambda: c.select(msg.index))


def download_folder() -> Path:
    """Where ``R`` saves a report in a terminal: the user's downloads folder when it exists, else
    the current directory (no folder is made for it)."""
    d = user_downloads_path()
    return d if d.is_dir() else Path.cwd()


def report_name(run_key: str) -> str:
    """A file name for a run's report: the run key without its host (run id, task), letters, digits
    and ``.-_`` only."""
    parts = [p for p in run_key.split("/") if p]
    tail = "-".join(parts[1:] if len(parts) > 1 else parts) or "run"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", tail).strip("._-") or "run"


def replay_commands(screen: ReplayScreen) -> list[tuple[str, str, Callable[[], Any]]]:
    """(title, help, callback) of the replay actions for the command palette."""
    return [
        ("Replay: next event", "step forward (j)", lambda: screen.action_step(1)),
        ("Replay: previous event", "step back (k)", lambda: screen.action_step(-1)),
        ("Replay: next submission", "next graded round (])", lambda: screen.action_submission(1)),
        ("Replay: previous submission", "previous graded round ([)", lambda: screen.action_submission(-1)),
        ("Replay: next new best", "next round that beat the best so far (})", lambda: screen.action_new_best(1)),
        ("Replay: previous new best", "previous new best ({)", lambda: screen.action_new_best(-1)),
        ("Replay: next reframing moment", "next ✦ on the chart ())", lambda: screen.action_moment(1)),
        ("Replay: previous reframing moment", "previous ✦ (()", lambda: screen.action_moment(-1)),
        ("Replay: reframing moments", "the list (M)", screen.action_moments_list),
        ("Replay: why", "what led to the moment or new best (w)", screen.action_why),
        ("Replay: first event", "go to the start (g)", screen.action_first),
        ("Replay: last event", "go to the end (G)", screen.action_last),
        ("Replay: play / pause", "play at the current speed (space)", screen.action_play),
        ("Replay: faster", "cycle 1× 10× 60× 600× (s)", lambda: screen.action_speed(1)),
        ("Replay: slower", "one speed down, to 1× (-)", lambda: screen.action_speed(-1)),
        ("Replay: jump to time", "elapsed time like 3h20m (t)", lambda: screen.action_prompt("time")),
        ("Replay: search", "summaries and data (/)", lambda: screen.action_prompt("search")),
        ("Replay: next match", "n", lambda: screen.action_match(1)),
        ("Replay: previous match", "N", lambda: screen.action_match(-1)),
        ("Replay: toggle detail", "d", screen.action_toggle_detail),
        ("Replay: toggle chart", "c", screen.action_toggle_chart),
        ("Replay: fold / show metadata rows", "permission-mode, progress… (z)", screen.action_toggle_fold),
        ("Replay: report", "download the run's HTML report (R)", screen.action_report),
        ("Replay: keys", "help (?)", screen.action_help),
    ]
