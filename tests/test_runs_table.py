"""The runs table widget on its own (Pilot, real terminal rendering): keys, mouse, scrolling with a
fixed header, rows redrawn when their cells change and only then, the selection kept across updates."""

from __future__ import annotations


import pytest
from textual.app import App

from edgetui.live.model import LiveRun
from edgetui.views.widgets.runs_table import RunsTable

NOW = 1_790_000_000.0


def runs(n: int, k: int = 0) -> list[LiveRun]:
    return [
        LiveRun(
            run_key=f"local/r{i:03d}/t{i}",
            run_id=f"r{i:03d}",
            task_id=f"t{i}",
            model="claude-opus-4-8",
            status="running",
            elapsed_s=3600.0,
            budget_s=43200.0,
            tokens=1000 * (i + 1) + k,
            cost_usd=1.0 + k,
            last_event_at=NOW - 5,
        )
        for i in range(n)
    ]


class TableApp(App):
    def __init__(self) -> None:
        super().__init__()
        self.selected: list[str] = []
        self.highlighted: list[str] = []

    def compose(self):
        yield RunsTable(id="t")

    def on_runs_table_row_selected(self, msg: RunsTable.RowSelected) -> None:
        self.selected.append(msg.run_key)

    def on_runs_table_row_highlighted(self, msg: RunsTable.RowHighlighted) -> None:
        self.highlighted.append(msg.run_key)


def visible_text(table: RunsTable) -> list[str]:
    """The table's lines as drawn (header first)."""
    return [table.render_line(y).text for y in range(table.scrollable_content_region.height)]


async def shown(pilot, rows: list[LiveRun], focus: bool = False) -> RunsTable:
    """The app's table showing ``rows`` (focused when asked), once drawn."""
    t = pilot.app.query_one(RunsTable)
    if focus:
        t.focus()
    t.show(rows, NOW)
    await pilot.pause()
    return t


@pytest.mark.asyncio
async def test_keys_scroll_under_a_fixed_header_and_enter_selects():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        t = await shown(pilot, runs(100), focus=True)
        lines = visible_text(t)
        assert lines[0].split()[:2] == ["run", "id"] and "r000" in lines[1]
        await pilot.press("end")
        await pilot.pause()
        lines = visible_text(t)
        assert lines[0].split()[:2] == ["run", "id"]  # the header stays on top
        assert "r099" in lines[-1] and t.selected_run_key == "local/r099/t99"
        await pilot.press("up", "up")
        assert t.selected_run_key == "local/r097/t97"
        await pilot.press("home")
        await pilot.pause()
        assert "r000" in visible_text(t)[1]
        await pilot.press("pagedown")
        assert t.cursor_row == t.scrollable_content_region.height - 2
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == [t.selected_run_key]
        assert app.highlighted[-1] == t.selected_run_key


@pytest.mark.asyncio
async def test_click_highlights_then_a_second_click_opens():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        t = await shown(pilot, runs(10))
        await pilot.click(RunsTable, offset=(5, 4))  # line 4 = row 3 under the header
        await pilot.pause()
        assert t.selected_run_key == "local/r003/t3" and app.selected == []
        await pilot.click(RunsTable, offset=(5, 4))
        await pilot.pause()
        assert app.selected == ["local/r003/t3"]
        await pilot.click(RunsTable, offset=(5, 0))  # the header opens nothing
        await pilot.pause()
        assert app.selected == ["local/r003/t3"]


@pytest.mark.asyncio
async def test_rows_are_redrawn_when_their_cells_change_and_selection_survives_reorder():
    app = TableApp()
    async with app.run_test(size=(120, 20)) as pilot:
        t = await shown(pilot, runs(5))
        t.select_run("local/r002/t2")
        before = visible_text(t)
        strip_ids = {rk: id(t._strips[rk][1]) for rk in t._strips}
        t.show(runs(5), NOW)  # the same cells: nothing is drawn again
        await pilot.pause()
        assert visible_text(t) == before
        assert all(id(t._strips[rk][1]) == v for rk, v in strip_ids.items())
        new = runs(5, k=7)  # every row's tokens and dollars change
        t.show(new, NOW)
        await pilot.pause()
        after = visible_text(t)
        assert "$8.00" in after[1] and "$1.00" not in after[1]
        t.show(list(reversed(new)), NOW)  # new order: the selected run stays selected
        await pilot.pause()
        assert t.selected_run_key == "local/r002/t2" and t.cursor_row == 2
        assert "r004" in visible_text(t)[1]
        t.show(new[:2], NOW)  # the selected run is gone: the cursor goes to the first row
        await pilot.pause()
        assert t.selected_run_key == "local/r000/t0" and t.row_count == 2
        assert [c.plain for c in t.get_column("run_id")] == ["r000", "r001"]


@pytest.mark.asyncio
async def test_rows_off_screen_are_built_when_scrolled_to_and_a_wider_number_widens_its_column():
    app = TableApp()
    async with app.run_test(size=(120, 12)) as pilot:  # ~9 rows on screen of 60
        t = await shown(pilot, runs(60))
        newer = runs(60, k=5)
        t.show(newer, NOW)  # same rows and layout: only the rows on screen are built
        await pilot.pause()
        assert "local/r059/t59" in t._stale and "local/r000/t0" not in t._stale
        assert "$6.00" in visible_text(t)[1]
        await pilot.press("end")  # scrolled to: the stale rows show the newest snapshot
        await pilot.pause()
        assert "r059" in visible_text(t)[-1] and "$6.00" in visible_text(t)[-1]
        assert "local/r059/t59" not in t._stale
        # reading a column gives the newest cells of every row, on screen or not
        assert all(c.plain == "$6.00" for c in t.get_column("cost"))
        width = t.columns["cost"].width
        wide = runs(60, k=5)
        wide[59].cost_usd = 123456.0  # a row on screen needs a wider cost column: every row is measured
        t.show(wide, NOW)
        await pilot.pause()
        assert t.columns["cost"].width > width
        cell = t.get_column("cost")[59].plain
        assert "…" not in cell and cell.replace(",", "").startswith("$123456")


@pytest.mark.asyncio
async def test_set_border_sets_only_what_changed_and_notices_direct_assignments():
    from rich.text import Text

    from edgetui.views.widgets.fmt import set_border

    app = TableApp()
    async with app.run_test(size=(60, 10)):
        t = app.query_one(RunsTable)
        assert set_border(t, "runs 3", Text("sort status ▲", style="dim"))
        assert not set_border(t, "runs 3", Text("sort status ▲", style="dim"))  # unchanged: no repaint
        assert set_border(t, subtitle=Text("sort status ▲", style="yellow"))  # a style change counts
        t.border_title = "someone else"
        assert set_border(t, "runs 3") and t.border_title == "runs 3"


@pytest.mark.asyncio
async def test_the_selected_row_stays_on_screen_when_the_table_gets_shorter():
    app = TableApp()
    async with app.run_test(size=(120, 30)) as pilot:
        t = await shown(pilot, runs(60), focus=True)
        await pilot.press("end")
        await pilot.pause()
        t.styles.height = 10  # what opening the filter bar does to the runs table
        await pilot.pause()
        await pilot.pause()
        assert any("r059" in line for line in visible_text(t))


def test_run_ids_and_tasks_sort_with_numbers_as_numbers():
    from edgetui.views.widgets.runs_table import sort_runs

    rs = runs(12)
    for r in rs:
        r.run_id = r.run_id.replace("r0", "bench-").replace("bench-0", "bench-")  # bench-0 … bench-11
    order = [r.run_id for r in sort_runs(rs, "run_id", now=NOW)]
    assert order[:4] == ["bench-0", "bench-1", "bench-2", "bench-3"] and order[-1] == "bench-11"
    assert [r.task_id for r in sort_runs(rs, "task", now=NOW)][-2:] == ["t10", "t11"]


@pytest.mark.asyncio
async def test_host_column_only_with_remote_runs_and_marked_with_the_host_state():
    app = TableApp()
    async with app.run_test(size=(120, 12)) as pilot:
        t = await shown(pilot, runs(3))
        assert "host" not in t.columns  # this machine only: the table as before
        remote = [
            LiveRun(
                run_key=f"gpu-1/r9{i}/t", host="gpu-1", run_id=f"r9{i}", task_id="t", status="running", host_state=state
            )
            for i, state in enumerate(("up", "down"))
        ]
        t = await shown(pilot, [*runs(2), *remote])
        assert list(t.columns)[:2] == ["host", "run_id"]
        lines = visible_text(t)
        assert lines[0].split()[0] == "host"
        up_line = next(line for line in lines if "r90" in line)
        down_line = next(line for line in lines if "r91" in line)
        assert up_line.split()[:2] == ["●", "gpu-1"] and down_line.split()[:2] == ["✗", "gpu-1"]
        assert "gpu-1:r90" not in up_line  # the host has its own column: the run id is bare
        assert next(line for line in lines if "r000" in line).split()[0] == "local"
        long = [
            LiveRun(run_key=f"{h}/r8{i}/t", host=h, run_id=f"r8{i}", task_id="t", status="running", host_state=state)
            for i, (h, state) in enumerate((("gpu-cluster-node-17.example", "down"), ("127.0.0.1:2299", "up")))
        ]
        await pilot.resize_terminal(80, 12)
        t = await shown(pilot, [*runs(2), *long])
        lines = visible_text(t)
        # a host name too long for its column is cut; its state mark is still there, first
        assert next(line for line in lines if "r80" in line).split()[0] == "✗"
        assert next(line for line in lines if "r81" in line).split()[0] == "●"


def test_a_remote_hosts_cell_carries_its_round_trip_in_the_wide_tier():
    from edgetui.views.widgets.runs_table import row_cells

    r = LiveRun(run_key="gpu-1/r/t", host="gpu-1", run_id="r", task_id="t", host_state="up", host_rtt_s=0.0123)
    assert row_cells(r, NOW, "w", host_column=True)["host"].plain == "● gpu-1 12ms"
    assert row_cells(r, NOW, "n", host_column=True)["host"].plain == "● gpu-1"
    down = LiveRun(run_key="gpu-1/r/t", host="gpu-1", run_id="r", task_id="t", host_state="down", host_rtt_s=0.01)
    assert row_cells(down, NOW, "w", host_column=True)["host"].plain == "✗ gpu-1"
    assert row_cells(down, NOW, "w")["run_id"].plain == "gpu-1:r"  # no host column: the id says the host


FC = {"value": 54.3, "lo": 45.0, "hi": 63.2, "baseline": 40.7, "horizon_h": 12.0}


def fc_runs(run_id_len: int, task: str = "task", n: int = 3) -> list[LiveRun]:
    """Live runs (one finished) with run ids of ``run_id_len`` characters and tasks ``<task><i>``."""
    out = []
    for i in range(n):
        rid = (f"r{i}-" + "x" * 40)[:run_id_len]
        out.append(
            LiveRun(
                run_key=f"local/{rid}/t{i}",
                run_id=rid,
                task_id=f"{task}{i}",
                model="m",
                cost_usd=88.5 + i,
                status="finished" if i == n - 1 else "running",
                elapsed_s=3600.0,
                budget_s=43200.0,
                last_event_at=NOW - 5,
            )
        )
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "width, run_id_len, task, want",
    [
        (160, 16, "gw_signal_search", "54.3 [45–63] · 40.7 @12h"),  # wide: forecast, 80 % interval, last best, horizon
        (160, 24, "gw_signal_search", "54 [45–63]·41"),  # longer ids: names first, the medium form
        (80, 8, "task", "54 45–63"),  # 80 columns, short ids: the narrow form
        (80, 14, "gw_sig", "54"),  # 80 columns, longer ids: the value alone (the selected line has the rest)
    ],
)
async def test_forecast_column_degrades_with_the_width(width, run_id_len, task, want):
    from edgetui.views.widgets.runs_table import FORECAST_PENDING

    app = TableApp()
    async with app.run_test(size=(width, 20)) as pilot:
        t = pilot.app.query_one(RunsTable)
        rows = fc_runs(run_id_len, task)
        t.forecasts = {rows[0].run_key: FC, rows[1].run_key: FORECAST_PENDING}
        t.show(rows, NOW, tier="auto", available=width - 3)
        await pilot.pause()
        assert "forecast" in t.columns and t._total_width <= width - 3
        cells = [c.plain.strip() for c in t.get_column("forecast")]
        assert cells == [want, "…", ""]  # read, being read, a finished run
        assert "task" in t.columns and all(c.plain[:2] == task[:2] for c in t.get_column("task"))


@pytest.mark.asyncio
async def test_no_forecast_column_without_a_live_run():
    app = TableApp()
    async with app.run_test(size=(160, 20)) as pilot:
        t = pilot.app.query_one(RunsTable)
        rows = [LiveRun(run_key="local/r/t", run_id="r", task_id="t", status="finished", last_event_at=NOW)]
        t.show(rows, NOW, tier="auto", available=157)
        await pilot.pause()
        assert "forecast" not in t.columns and "tokens" in t.columns


@pytest.mark.asyncio
async def test_narrow_table_with_a_host_column_leaves_columns_out_rather_than_scroll_sideways():
    """At 80 columns the narrow tier plus the host column were 9 cells too wide: the table scrolled
    sideways, a scrollbar thumb sat in the empty rows and the run ids were cut to 10 cells. Now the
    cost and last-event columns are left out first and the freed cells go to the run id."""
    app = TableApp()
    long = [
        LiveRun(
            run_key=f"{h}/opus48-edge-3-2026031200580{i}/gw_signal_search",
            host=h,
            run_id=f"opus48-edge-3-2026031200580{i}",
            task_id="gw_signal_search",
            model="claude-opus-4-8",
            status="finished",
            elapsed_s=43260.0,
            budget_s=43200.0,
            best_score=67.0,
            n_submissions=225,
            cost_usd=46.55,
            last_event_at=NOW - 86400 * 200,
        )
        for i, h in enumerate(["local", "10.0.0.7"])
    ]
    async with app.run_test(size=(78, 20)) as pilot:
        t = pilot.app.query_one(RunsTable)
        t.show(long, NOW, tier="auto", available=77)
        await pilot.pause()
        assert "host" in t.columns and "status" in t.columns and "best" in t.columns
        assert t.virtual_size.width <= t.scrollable_content_region.width
        assert "cost" not in t.columns
        assert t.columns["run_id"].width > 10
        t.show(long, NOW, tier="auto", available=157)  # wide: everything back
        await pilot.pause()
        assert "cost" in t.columns and "last" in t.columns


@pytest.mark.asyncio
async def test_a_host_with_its_port_and_state_is_not_cut_in_a_wide_table():
    """At 160 columns the host cell read "127.0.0.1:4…" (cap 20 cells) with the table's right end empty."""
    from edgetui.views.widgets.runs_table import row_cells

    app = TableApp()
    r = LiveRun(
        run_key="127.0.0.1:42289/r1/t",
        host="127.0.0.1:42289",
        run_id="r1",
        task_id="t",
        status="running",
        host_state="up",
        host_rtt_s=0.0012,
        elapsed_s=60.0,
        budget_s=3600.0,
        last_event_at=NOW - 5,
    )
    async with app.run_test(size=(160, 20)) as pilot:
        t = pilot.app.query_one(RunsTable)
        t.show([r], NOW, tier="auto", available=157)
        await pilot.pause()
        full = row_cells(r, NOW, t._tier, host_column=True)["host"].plain
        assert "42289" in full and "ms" in full
        assert t.get_column("host")[0].plain.strip() == full
