"""Replay app through Textual's Pilot: keys, chart cursor column, play, search, sizes, picker."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from edgetui.store import queries as store
from edgetui.views.app import EdgeTUIApp
from edgetui.store.database import open_db
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import HelpScreen, ReplayScreen
from edgetui.views.widgets import EventDetail, EventList, RunHeader, ScoreChart
from edgetui.replay.cursor import ReplayCursor

from test_replay_cursor import SYNTH_BEST, build_synthetic_run
from waits import pilot_wait_for as wait_for

RUN_ID = "run-synth"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("app") / "replay.duckdb"
    rk = build_synthetic_run(path, 400, run_id=RUN_ID)
    return path, rk


@pytest.fixture(scope="module")
def ref_data(db):
    path, rk = db
    conn = open_db(path, read_only=True)
    head = store.run_header(conn, rk)
    ev = store.run_events(conn, rk)
    subs = store.submissions(conn, rk)
    conn.close()
    return head, ev, subs


def reference(ref_data) -> ReplayCursor:
    head, ev, subs = ref_data
    return ReplayCursor(ev, subs, start=head["started_at"])


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def loaded(pilot) -> ReplayScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayScreen) and pilot.app.screen.cursor is not None)
    await pilot.pause()
    return pilot.app.screen


def expected_column(chart: ScoreChart, elapsed_s: float) -> int:
    """Column of ``elapsed_s`` from the chart's x range and canvas, computed independently."""
    left, _top, width, _h = chart.canvas
    lo, hi = chart.x_range
    return left + math.floor((elapsed_s / 3600.0 - lo) / (hi - lo) * (width - 1) + 0.5)


# ---------------------------------------------------------------------------- one test per key

KEY_CASES = [
    # (keys pressed first, key under test, reference move applied to the same start)
    ([], "j", lambda c: c.step(1)),
    ([], "down", lambda c: c.step(1)),
    ([], "right", lambda c: c.step(1)),
    (["j", "j", "j"], "k", lambda c: c.step(-1)),
    (["j", "j"], "up", lambda c: c.step(-1)),
    (["j", "j"], "left", lambda c: c.step(-1)),
    ([], "right_square_bracket", lambda c: c.next_submission()),
    (["G"], "left_square_bracket", lambda c: c.prev_submission()),
    ([], "right_curly_bracket", lambda c: c.next_new_best()),
    ([], "b", lambda c: c.next_new_best()),
    (["G"], "left_curly_bracket", lambda c: c.prev_new_best()),
    (["G"], "B", lambda c: c.prev_new_best()),
    ([], "G", lambda c: c.last()),
    ([], "end", lambda c: c.last()),
    (["j", "j", "j", "j"], "g", lambda c: c.first()),
    (["j", "j", "j", "j"], "home", lambda c: c.first()),
    ([], "pagedown", None),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "before,key,move", KEY_CASES, ids=[c[1] + ("-after-" + "".join(c[0]) if c[0] else "") for c in KEY_CASES]
)
async def test_key_moves_selection_and_chart_cursor(db, ref_data, before, key, move):
    path, rk = db
    app = EdgeTUIApp(path, rk)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        ref = reference(ref_data)
        for k in before:
            await pilot.press(k)
            {"j": lambda: ref.step(1), "G": ref.last}[k]()
        start = screen.cursor.index
        assert start == ref.index
        await pilot.press(key)
        await pilot.pause()
        if move is None:  # page down: one list height minus one
            page = screen.query_one(EventList).scrollable_content_region.height - 1
            ref.step(page)
        else:
            move(ref)
        assert screen.cursor.index == ref.index
        if key not in ("k", "up", "left", "g", "home"):
            assert ref.index != start  # the key really moved
        chart = screen.query_one(ScoreChart)
        assert chart.cursor_elapsed == pytest.approx(ref.position())
        assert chart.cursor_column == expected_column(chart, ref.position())
        # the list shows the selected row
        lst = screen.query_one(EventList)
        assert lst.selected == ref.index
        top = int(lst.scroll_y)
        assert top <= ref.index < top + lst.scrollable_content_region.height


@pytest.mark.asyncio
async def test_click_selects_row(db, ref_data):
    path, rk = db
    async with EdgeTUIApp(path, rk).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        lst = screen.query_one(EventList)
        await pilot.click(EventList, offset=(20, 1 + 4))  # border row + 4 → fifth visible row
        await pilot.pause()
        assert screen.cursor.index == int(lst.scroll_y) + 4
        chart = screen.query_one(ScoreChart)
        assert chart.cursor_column == expected_column(chart, screen.cursor.position())


@pytest.mark.asyncio
async def test_chart_cursor_is_drawn_at_its_column(db):
    path, rk = db
    async with EdgeTUIApp(path, rk).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("right_square_bracket", "right_square_bracket")
        await pilot.pause()
        chart = screen.query_one(ScoreChart)
        col = chart.cursor_column
        left, top, width, height = chart.canvas
        assert left < col < left + width - 1
        assert chart.render_line(top - 1).text[col] == "▼"
        assert chart.render_line(top + height).text[col] == "▲"
        inside = [chart.render_line(y).text[col] for y in range(top, top + height)]
        assert inside.count("│") >= height // 2  # blank cells on the cursor column show the line


@pytest.mark.asyncio
async def test_play_with_injected_clock(db, ref_data):
    path, rk = db
    clock = FakeClock()
    async with EdgeTUIApp(path, rk, clock=clock).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("s", "s", "s")
        assert screen.cursor.speed == 600
        await pilot.press("space")
        assert screen.cursor.playing
        h0 = screen.cursor.play_head
        n = 9
        for _ in range(n):
            clock.now += 1.0
            screen.play_tick()
        await pilot.pause()  # real timer ticks see no clock time: dt = 0
        assert screen.cursor.play_head == pytest.approx(h0 + n * 600)
        ref = reference(ref_data)
        ref.jump_to(h0 + n * 600)
        assert screen.cursor.index == ref.index
        chart = screen.query_one(ScoreChart)
        assert chart.cursor_column == expected_column(chart, ref.position())
        await pilot.press("space")
        assert not screen.cursor.playing
        clock.now += 5
        screen.play_tick()
        assert screen.cursor.play_head == pytest.approx(h0 + n * 600)  # paused: no movement
        await pilot.press("minus")
        assert screen.cursor.speed == 60


@pytest.mark.asyncio
async def test_search_finds_and_cycles(db, ref_data):
    path, rk = db
    conn = open_db(path, read_only=True)
    ids = store.search_events(conn, rk, "nan detected")
    conn.close()
    head, ev, subs = ref_data
    expected = sorted(ev.index_of(e) for e in ids)
    assert len(expected) >= 2
    async with EdgeTUIApp(path, rk).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("slash")
        await pilot.press(*"NaN detected")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.cursor.query == "NaN detected")
        await pilot.pause()
        assert screen.cursor.matches == expected
        assert screen.cursor.index == expected[0]
        chart = screen.query_one(ScoreChart)
        assert chart.cursor_column == expected_column(chart, screen.cursor.position())
        await pilot.press("n")
        assert screen.cursor.index == expected[1]
        for _ in range(len(expected) - 1):
            await pilot.press("n")
        assert screen.cursor.index == expected[0]  # wrapped
        await pilot.press("N")
        assert screen.cursor.index == expected[-1]
        # matches in the data JSON only (not in summaries) are found too
        await pilot.press("slash")
        await pilot.press("ctrl+a", "ctrl+k", *"needle-in-output", "enter")
        await wait_for(pilot, lambda: screen.cursor.query == "needle-in-output")
        assert screen.cursor.matches and all("needle" not in (ev.summary[i] or "") for i in screen.cursor.matches)


@pytest.mark.asyncio
async def test_jump_to_time(db, ref_data):
    path, rk = db
    async with EdgeTUIApp(path, rk).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("t", *"3h20m", "enter")
        await pilot.pause()
        ref = reference(ref_data)
        ref.jump_to(3 * 3600 + 20 * 60)
        assert screen.cursor.index == ref.index
        chart = screen.query_one(ScoreChart)
        assert chart.cursor_column == expected_column(chart, ref.position())
        await pilot.press("t", *"2:15:00", "enter")
        ref.jump_to(2 * 3600 + 15 * 60)
        assert screen.cursor.index == ref.index
        await pilot.press("t", *"oops", "enter")  # error keeps the prompt open
        assert screen.prompt_mode == "time"
        await pilot.press("escape")
        assert screen.prompt_mode is None


@pytest.mark.asyncio
async def test_detail_shows_submission_report(db):
    path, rk = db
    async with EdgeTUIApp(path, rk).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("right_square_bracket")
        detail = screen.query_one(EventDetail)
        await wait_for(pilot, lambda: detail.detail is not None and detail.detail["event"]["kind"] == "judge_result")
        assert detail.detail["submission"]["round"] == screen.cursor.round[screen.cursor.index]
        assert any(t["status"] == "failed" for t in detail.detail["tests"])
        await pilot.press("j")  # a plain event; tool calls carry their result
        await wait_for(pilot, lambda: detail.detail["event"]["kind"] != "judge_result")
        await pilot.press("home")
        for _ in range(3):
            await pilot.press("j")
        await wait_for(pilot, lambda: detail.detail["event"]["kind"] == "agent_message")


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_renders_at_size_with_full_header(db, size):
    path, rk = db
    async with EdgeTUIApp(path, rk).run_test(size=size) as pilot:
        screen = await loaded(pilot)
        await pilot.press("right_square_bracket")
        await pilot.pause()
        header = screen.query_one(RunHeader)
        text = header.text().plain
        assert RUN_ID in text and f"{SYNTH_BEST}" in text
        assert "$412.50" in text and "tokens" in text
        # not cut off: the widget is as tall as its lines and every line fits its width
        lines = text.split("\n")
        assert header.size.height == len(lines)
        assert all(len(line) <= header.content_region.width for line in lines)
        assert header.region.y == 0 and header.region.right <= size[0]
        chart = screen.query_one(ScoreChart)
        assert chart.canvas is not None and chart.cursor_column is not None
        lst = screen.query_one(EventList)
        assert lst.scrollable_content_region.height >= 5
        svg = pilot.app.export_screenshot()
        assert RUN_ID in svg and "67.25" in svg
        narrow = size[0] < 120
        assert screen.detail_visible is not narrow  # narrow terminals start without the detail pane
        await pilot.press("d")  # toggle the detail pane
        await pilot.pause()
        assert screen.detail_visible is narrow
        assert (
            screen.query_one(EventDetail).region.height > 0
            if narrow
            else screen.query_one(EventDetail).region.height == 0
        )


@pytest.mark.asyncio
async def test_help_and_palette_and_back(db):
    path, rk = db
    async with EdgeTUIApp(path, rk).run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("escape")
        assert pilot.app.screen is screen
        titles = [c.title for c in pilot.app.get_system_commands(screen)]
        assert "Replay: next submission" in titles and "Replay: jump to time" in titles
        await pilot.press("enter")  # zoom the detail
        assert screen.maximized is not None
        await pilot.press("escape")
        assert screen.maximized is None
        app = pilot.app
        exits = []
        real_exit = app.exit
        app.exit = lambda *a, **k: (exits.append(True), real_exit(*a, **k))  # type: ignore[method-assign]
        await pilot.press("q")  # opened directly: q quits
        await pilot.pause()
        assert exits == [True]


@pytest.mark.asyncio
async def test_picker_filters_opens_and_returns(tmp_path):
    path = tmp_path / "two.duckdb"
    conn = open_db(path)
    rk1 = build_synthetic_run(path, 120, run_id="alpha-run", conn=conn)
    rk2 = build_synthetic_run(path, 120, run_id="beta-run", task_id="other-task", conn=conn)
    conn.close()
    app = EdgeTUIApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) == 2)
        picker = app.screen
        await pilot.press(*"beta")
        await pilot.pause()
        assert [r["run_key"] for r in picker.shown] == [rk2]
        await pilot.press("enter")
        screen = await loaded(pilot)
        assert screen.run_key == rk2 and not screen.direct
        await pilot.press("q")
        await pilot.pause()
        assert app.screen is picker
        await pilot.press("escape")  # clears the filter
        await pilot.pause()
        assert len(picker.shown) == 2
        await pilot.press("down", "enter")
        screen = await loaded(pilot)
        assert screen.run_key == picker.shown[1]["run_key"]
        assert {rk1, rk2} == {r["run_key"] for r in picker.shown}


@pytest.mark.asyncio
async def test_picker_fits_a_narrow_terminal_without_scrolling(tmp_path):
    """At 80 columns the picker leaves out its least needed columns and cuts long run ids in the
    middle (both ends tell runs apart) instead of scrolling sideways; at 160 the run id shows whole, beside the other columns that fit."""
    from textual.widgets import DataTable

    path = tmp_path / "narrow.duckdb"
    conn = open_db(path)
    long_id = "opus48-edge-3-installfail-20260312005800"
    build_synthetic_run(path, 60, run_id=long_id, task_id="gravitational_wave_signal_search", conn=conn)
    build_synthetic_run(path, 60, run_id="beta-run", conn=conn)
    conn.close()
    app = EdgeTUIApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) == 2)
        await pilot.pause()
        t = app.screen.query_one(DataTable)
        labels = [str(c.label) for c in t.columns.values()]
        assert labels[:5] == ["run id", "task", "best", "pass", "status"]
        assert "started (UTC)" not in labels
        assert t.virtual_size.width <= t.size.width  # nothing hidden to the right
        ids = [t.get_row_at(i)[0].plain for i in range(t.row_count)]
        cut = next(i for i in ids if i.startswith("opus48"))
        assert "…" in cut and cut.endswith("005800") and len(cut) < len(long_id)
        assert "beta-run" in ids
        await pilot.resize_terminal(160, 48)
        await wait_for(pilot, lambda: len(t.columns) >= 9)
        assert long_id in [t.get_row_at(i)[0].plain for i in range(t.row_count)]  # room: not cut
        assert t.virtual_size.width <= t.size.width


@pytest.mark.asyncio
async def test_empty_database_calls_on_empty(tmp_path):
    path = tmp_path / "empty.duckdb"
    open_db(path).close()
    calls = []

    def hook(db_path: Path):
        calls.append(db_path)
        build_synthetic_run(db_path, 60, run_id="from-hook")
        return None

    app = EdgeTUIApp(path, on_empty=hook)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) == 1)
        assert calls == [path]
        assert app.screen.rows[0]["run_id"] == "from-hook"


@pytest.mark.asyncio
async def test_empty_hook_failure_is_a_message(tmp_path):
    path = tmp_path / "empty2.duckdb"
    open_db(path).close()

    def hook(db_path):
        raise RuntimeError("no samples here")

    app = EdgeTUIApp(path, on_empty=hook)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.empty_note is not None)
        assert "no samples here" in app.empty_note
        await pilot.pause()
        assert isinstance(app.screen, PickerScreen) and app.screen.rows == []


@pytest.mark.asyncio
async def test_unknown_run_says_so(db):
    path, _ = db
    async with EdgeTUIApp(path, "local/nope/nope").run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.3)
        assert isinstance(pilot.app.screen, ReplayScreen) and pilot.app.screen.cursor is None


@pytest.mark.asyncio
async def test_event_list_time_column_fits_runs_past_999_hours_and_before_their_start():
    """Elapsed times wider than h:mm:ss's 8 columns (a run 6,345 h on, events 5,014 h before the
    start) widen the time column for every row, so the kind column stays aligned."""
    from textual.app import App, ComposeResult

    from edgetui.store.queries import EventColumns
    from edgetui.replay.cursor import ReplayCursor

    start = 1_767_225_600.0
    offs = [-5014 * 3600.0 - 5, 10.0, 6345 * 3600.0 + 49]
    rows = [
        {
            "event_id": f"e{i}",
            "kind": "agent_message",
            "t": start + dt,
            "source": "agent_output.txt",
            "offset": i,
            "sub": 0,
            "summary": f"row {i}",
        }
        for i, dt in enumerate(offs)
    ]
    cur = ReplayCursor(EventColumns.from_rows(rows), [], start=start)

    class One(App):
        def compose(self) -> ComposeResult:
            yield EventList()

    app = One()
    async with app.run_test(size=(100, 10)) as pilot:
        lst = app.query_one(EventList)
        lst.set_timeline(cur, 0)
        await pilot.pause()
        texts = [lst.render_line(y).text for y in range(3)]
        assert [t.split()[0] for t in texts] == ["-5014:00:05", "0:00:10", "6345:00:49"]
        cols = {t.index("row ") for t in texts}
        assert len(cols) == 1, texts  # the columns after the time start at the same place on every row


@pytest.mark.asyncio
async def test_event_list_grows_without_a_screen_layout_and_scrolls_to_new_rows_at_once():
    """A live reload with more rows (the scrollbar shown before and after) changes only the scroll
    range: no layout of the screen is queued, the scrollbar knows the new length and the newest
    row can be selected into view in the same frame; a list that first needs its scrollbar
    still gets a layout."""
    from textual.app import App, ComposeResult

    from edgetui.store.queries import EventColumns
    from edgetui.replay.cursor import ReplayCursor

    start = 1_767_225_600.0

    def cursor(n: int) -> ReplayCursor:
        rows = [
            {
                "event_id": f"e{i}",
                "kind": "agent_message",
                "t": start + i,
                "source": "agent_output.txt",
                "offset": i,
                "sub": 0,
                "summary": f"row {i}",
            }
            for i in range(n)
        ]
        return ReplayCursor(EventColumns.from_rows(rows), [], start=start)

    class One(App):
        def compose(self) -> ComposeResult:
            yield EventList()

    app = One()
    async with app.run_test(size=(100, 12)) as pilot:
        lst = app.query_one(EventList)
        lst.set_timeline(cursor(5), 4)  # fits: no scrollbar yet
        await pilot.pause()
        assert not lst.show_vertical_scrollbar
        layouts = lst._layout_updates
        lst.set_timeline(cursor(40), 39)  # now it needs one: laid out
        assert lst._layout_updates == layouts + 1
        await pilot.pause()
        assert lst.show_vertical_scrollbar and lst.vertical_scrollbar.window_virtual_size == 40
        layouts = lst._layout_updates
        lst.set_timeline(cursor(60), 59)
        assert lst._layout_updates == layouts
        assert lst.virtual_size.height == 60 and lst.vertical_scrollbar.window_virtual_size == 60
        h = lst.scrollable_content_region.height
        assert lst.max_scroll_y == 60 - h and int(lst.scroll_y) == 60 - h  # the newest row is in view now
        await pilot.pause()
        assert lst.render_line(h - 1).text.split()[-1] == "59"


@pytest.mark.asyncio
async def test_subagent_indents_arrive_after_the_first_paint(db, ref_data):
    """The replay screen loads Arrow columns (edgetui.store.timeline_columns) and sets the sub-agent depths right
    after the first paint: the same depths as the list-backed cursor, drawn as ↳ in the rows."""
    path, rk = db
    ref = reference(ref_data)
    first_sub = next(i for i, d in enumerate(ref.depth) if d)
    async with EdgeTUIApp(path, rk).run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: list(screen.cursor.depth) == ref.depth)
        lst = screen.query_one(EventList)
        screen.cursor.select(first_sub)
        lst.select(first_sub, center=True)
        await pilot.pause()
        row = lst.render_line(first_sub - int(lst.scroll_y))
        assert "↳" in "".join(seg.text for seg in row)
