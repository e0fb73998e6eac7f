"""The SQL screen (edgetui/views/screens/sql.py) driven by Pilot on the bundled samples, at 80x24 and
160x48: a query typed and run, rows paged in lazily, a cell opened whole, a running query cancelled,
a result exported, history kept across restarts, a row opening the replay at its event."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from textual.coordinate import Coordinate
from waits import pilot_wait_for as wait_for

from conftest import copy_samples_db
from edgetui.store.sql_results import PAGE_ROWS, QueryBuffer, QueryHistory, run_paged
from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import ReplayScreen
from edgetui.views.screens.sql import CellScreen, ExportScreen, HistoryScreen, SqlEditor, SqlScreen

GW = "local/opus48-edge-3-20260312005800/gw_signal_search"
SIZES = [(80, 24), (160, 48)]


@pytest.fixture
def samples_db(samples_template, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the history file's directory
    return copy_samples_db(samples_template, tmp_path / "s.duckdb")


async def open_sql(app, pilot) -> SqlScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.rows, what="the picker")
    await pilot.press("f6")
    await wait_for(pilot, lambda: isinstance(app.screen, SqlScreen) and app.screen.words, what="the SQL screen")
    return app.screen


async def run(pilot, screen: SqlScreen, sql: str) -> None:
    screen.query_one(SqlEditor).text = sql
    screen.query_one(SqlEditor).focus()
    await pilot.press("f5")
    await wait_for(pilot, lambda: screen.running is None and screen.sql == sql and (screen.result or screen.rows == []))


def status(screen: SqlScreen) -> str:
    return str(screen.query_one("#sql-status").render())


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_query_runs_pages_lazily_and_a_cell_opens_whole(samples_db, size):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=size) as pilot:
        screen = await open_sql(app, pilot)
        sql = "SELECT i, 'x' || chr(27) || '[31mred' || repeat('y', 60) AS s FROM range(1000) t(i)"
        await run(pilot, screen, sql)
        await wait_for(pilot, lambda: len(screen.rows) >= PAGE_ROWS, what="the first page")
        await pilot.pause(0.2)
        # the first page and the one fetched ahead of the cursor; the rest is not fetched
        assert len(screen.rows) == 2 * PAGE_ROWS and not screen.result.done
        await pilot.press("ctrl+r")
        while screen.query_one("#sql-results").cursor_row < PAGE_ROWS:  # a screenful at a time
            await pilot.press("pagedown")
        await wait_for(pilot, lambda: len(screen.rows) > 2 * PAGE_ROWS, what="the next page")
        table = screen.query_one("#sql-results")
        assert table.row_count == len(screen.rows) < 1000
        shown_cell = table.get_cell_at(Coordinate(0, 1))
        assert "\x1b" not in shown_cell.plain and shown_cell.plain.startswith("x\\x1b[31mred")
        await pilot.press("right")  # the column s
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, CellScreen))
        shown = str(app.screen.query_one("#cell-text").render())
        assert "\x1b" not in shown and "\\x1b[31mred" in shown and "y" * 60 in shown  # whole, escaped
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen)


@pytest.mark.asyncio
async def test_a_running_query_is_cancelled_by_f8(samples_db):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        screen.query_one(SqlEditor).text = "SELECT count(*) FROM range(100000000000) a"
        await pilot.press("f5")
        await wait_for(pilot, lambda: screen.running is not None, what="the query running")
        await pilot.pause(0.3)
        await pilot.press("f8")
        await wait_for(pilot, lambda: screen.running is None, what="the query stopped")
        assert "cancelled" in status(screen)
        assert screen.result is None


@pytest.mark.asyncio
async def test_writes_are_refused_like_the_socket(samples_db):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        await run(pilot, screen, "DELETE FROM runs")
        assert "refused" in status(screen)
    c = duckdb.connect(str(samples_db), read_only=True)
    assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 11
    c.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("ext", ["parquet", "csv"])
async def test_a_result_is_exported_by_the_app(samples_db, tmp_path, ext):
    out = tmp_path / f"out.{ext}"
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_sql(app, pilot)
        await run(pilot, screen, "SELECT * FROM best_so_far")
        await wait_for(pilot, lambda: len(screen.rows) >= PAGE_ROWS)
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
        app.screen.query_one("#export-path").value = str(out)
        await pilot.press("enter")
        await wait_for(pilot, lambda: "rows written" in status(screen), what="the export")
    n = 359  # every row, not the page shown
    if ext == "parquet":
        assert pq.read_table(out).num_rows == n
    else:
        assert len(out.read_text().splitlines()) == n + 1


@pytest.mark.asyncio
async def test_history_is_kept_across_restarts_and_filtered(samples_db):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        await run(pilot, screen, "SELECT * FROM tool_calls WHERE failed")
        await run(pilot, screen, "SELECT * FROM idle_gaps")
    await_path = QueryHistory()
    assert await_path.load()[-2:] == ["SELECT * FROM tool_calls WHERE failed", "SELECT * FROM idle_gaps"]
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        await pilot.press("f7")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen))
        assert app.screen.shown[:2] == ["SELECT * FROM idle_gaps", "SELECT * FROM tool_calls WHERE failed"]
        await pilot.press(*"failed")
        await wait_for(pilot, lambda: app.screen.shown == ["SELECT * FROM tool_calls WHERE failed"])
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.screen is screen)
        assert screen.query_one(SqlEditor).text == "SELECT * FROM tool_calls WHERE failed"


@pytest.mark.asyncio
async def test_enter_on_a_row_opens_the_replay_at_its_event_and_f6_comes_back_scoped(samples_db):
    c = duckdb.connect(str(samples_db), read_only=True)
    eid, t, start = c.execute(
        "SELECT g.event_id, g.ended_at, r.started_at FROM idle_gaps g JOIN runs r USING (run_key) "
        "WHERE run_key = ? ORDER BY gap_s DESC LIMIT 1",
        [GW],
    ).fetchone()
    c.close()
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await open_sql(app, pilot)
        await run(pilot, screen, f"SELECT run_key, event_id, gap_s FROM idle_gaps WHERE event_id = '{eid}'")
        await wait_for(pilot, lambda: len(screen.rows) == 1)
        await pilot.press("ctrl+r", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None, 20)
        replay = app.screen
        cur = replay.cursor
        assert cur.index > 0
        assert cur.elapsed[cur.index] == pytest.approx(t - start)
        await pilot.press("f6")
        await wait_for(pilot, lambda: isinstance(app.screen, SqlScreen) and app.screen is not screen)
        assert f"WHERE run_key = '{GW}'" in app.screen.query_one(SqlEditor).text


def test_paged_result_holds_a_page_not_the_result(tmp_path):
    conn = duckdb.connect()
    res = run_paged(conn, "SELECT i FROM range(1000000) t(i)")
    first = res.next_page()
    assert [r[0] for r in first] == list(range(PAGE_ROWS)) and res.fetched == PAGE_ROWS and not res.done
    assert res.next_page()[0][0] == PAGE_ROWS
    with pytest.raises(ValueError, match="refused"):
        run_paged(conn, "COPY (SELECT 1) TO 'x.csv'")


@pytest.mark.asyncio
async def test_the_open_query_is_saved_and_offered_back_after_a_crash(samples_db):
    typed = "SELECT * FROM spend_over_time -- half done"
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        screen.query_one(SqlEditor).text = typed
        screen.save_buffer()  # what the minute's timer does
        await wait_for(pilot, lambda: QueryBuffer().load() == typed, what="the buffer saved")
    # (the app ended without the screen closing: as a crash would leave it)
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        await wait_for(pilot, lambda: screen.query_one(SqlEditor).text == typed, what="the buffer restored")
        assert "left open last time" in status(screen)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_held_elsewhere_the_screen_pages_through_the_holders_cursor(samples_db, size):
    """Another process (a real one) holds the file: the app reads a snapshot copy, and the SQL screen
    asks the holder, a page at a time: it sees a tag the holder wrote after the copy was taken."""
    from edgetui.store.holder_socket import ask_holder_op
    from edgetui.store.sql_results import HolderPagedResult
    from test_holder import _holder_process

    holder = _holder_process(samples_db)
    try:
        app = EdgeTUIApp(samples_db)
        async with app.run_test(size=size) as pilot:
            screen = await open_sql(app, pilot)
            assert app.snapshot and screen.held_elsewhere == samples_db
            ask_holder_op(samples_db, {"op": "tag", "run_key": GW, "tag": "after-the-copy"})
            await run(pilot, screen, "SELECT run_key, tag FROM run_tags")
            assert isinstance(screen.result, HolderPagedResult)
            assert (GW, "after-the-copy") in screen.rows
            assert "from the holding process" in status(screen)
            # lazily: a page and the one ahead of the cursor, not the whole result
            await run(pilot, screen, "SELECT i, 'r' || i AS s FROM range(100000) t(i)")
            await wait_for(pilot, lambda: len(screen.rows) >= 2 * PAGE_ROWS, what="two pages")
            await pilot.pause(0.2)
            assert len(screen.rows) == 2 * PAGE_ROWS and not screen.result.done
            await pilot.press("ctrl+r")
            while screen.query_one("#sql-results").cursor_row < PAGE_ROWS:
                await pilot.press("pagedown")
            await wait_for(pilot, lambda: len(screen.rows) > 2 * PAGE_ROWS, what="the next page")
            assert [r[0] for r in screen.rows] == list(range(len(screen.rows)))  # in order, none twice
            # an export reads the snapshot copy, and says so
            out = samples_db.parent / f"held-{size[0]}.csv"
            await pilot.press("f4")
            await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen))
            app.screen.query_one("#export-path").value = str(out)
            await pilot.press("enter")
            await wait_for(pilot, lambda: "rows written" in status(screen), what="the export")
            assert "from the snapshot copy" in status(screen) and len(out.read_text().splitlines()) == 100_001
            # refused there as here
            screen.query_one(SqlEditor).text = "DELETE FROM runs"
            await pilot.press("f5")
            await wait_for(pilot, lambda: "refused" in status(screen), what="the refusal")
            # F8 stops a query running in the holder
            screen.query_one(SqlEditor).text = "SELECT count(*) FROM range(1000000000000) a(i) WHERE hash(i) = 42"
            screen.query_one(SqlEditor).focus()
            await pilot.press("f5")
            await wait_for(pilot, lambda: screen.running is not None, what="the query running")
            await pilot.pause(0.3)
            await pilot.press("f8")
            await wait_for(pilot, lambda: screen.running is None, what="the query stopped", timeout=20)
            assert "cancelled" in status(screen)
            # the holder gone: the snapshot copy answers, and the status line says so
            holder.kill()
            holder.wait()
            await run(pilot, screen, "SELECT count(*) AS n FROM run_tags")
            assert screen.rows == [(0,)] and "from the snapshot copy" in status(screen)
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.asyncio
async def test_a_query_past_the_sql_timeout_is_stopped_in_one_line(samples_db):
    app = EdgeTUIApp(samples_db, sql_timeout=0.5)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        await run(pilot, screen, "SELECT count(*) FROM range(1000000000000) a(i) WHERE hash(i) = 42")
        assert status(screen).strip() == "stopped after 0.5 s (--sql-timeout)"
        await run(pilot, screen, "SELECT 1 AS one")  # a quick one runs as before
        assert screen.rows == [(1,)]


def footer_keys(screen) -> dict[str, tuple[int, int]]:
    """The footer's keys: key -> (its left, right) as laid out."""
    from textual.widgets import Footer

    return {k.key: (k.region.x, k.region.right) for k in screen.query_one(Footer).query("FooterKey")}


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_esc_leaves_from_the_editor_and_f5_closes_the_completions(samples_db, size):
    """Issue 37 trial: Esc did nothing in the editor (where the screen opens), the completion list
    stayed over the editor after F5, and at 80 columns the footer never reached F10 back and the
    hint under the editor was cut."""
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=size) as pilot:
        screen = await open_sql(app, pilot)
        editor = screen.query_one(SqlEditor)
        await pilot.pause(0.2)
        # the footer names the back key, and the hint fits its line, at 80 columns too
        keys = footer_keys(screen)
        assert "f10" in keys and keys["f10"][1] > keys["f10"][0], keys
        assert max(right for _, right in keys.values()) <= size[0], keys
        hint = status(screen)
        assert "enter" in hint and len(hint) <= screen.query_one("#sql-status").size.width - 2, hint
        # typing a word's start opens the completion list; Esc closes it and stays
        editor.text = ""
        editor.focus()
        await pilot.press("s", "e", "l")
        await wait_for(pilot, lambda: editor.completion_list.is_open, what="the completion list")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and not editor.completion_list.is_open
        # open again; F5 runs the query and closes it
        await pilot.press("e")
        await wait_for(pilot, lambda: editor.completion_list.is_open, what="the completion list again")
        await pilot.press("f5")
        await wait_for(pilot, lambda: screen.running is None and screen.sql == "sele", what="the query run")
        assert not editor.completion_list.is_open
        # with no list open, Esc in the editor leaves the screen
        assert isinstance(app.focused, type(editor.text_input))
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen), what="back on the picker")


@pytest.mark.asyncio
async def test_esc_in_the_editors_find_input_closes_it_not_the_screen(samples_db):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_sql(app, pilot)
        await pilot.press("ctrl+f")
        editor = screen.query_one(SqlEditor)
        await wait_for(
            pilot, lambda: app.focused is not None and app.focused is not editor.text_input, what="the find input"
        )
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.screen is screen and app.focused is editor.text_input
