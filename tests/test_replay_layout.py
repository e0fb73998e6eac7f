"""The replay at 80x24 and 160x48 (issue 37): a chart of at least 6 rows whose best-so-far steps are
never hidden under a submission's mark, a legend that fits its border, no placeholder axes while a
run loads, an event list of at least 5 rows with the detail pane open, toasts off the borders."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.app import App
from waits import pilot_wait_for as wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.replay import ReplayScreen
from edgetui.views.widgets import EventList, ScoreChart
from edgetui.views.widgets.chart import ChartData

from conftest import copy_samples_db

SIZES = [(80, 24), (160, 48)]
GW_KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"
BRAILLE = {chr(c) for c in range(0x2801, 0x2900)}


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path_factory.mktemp("layout") / "s.duckdb")


async def gw_replay(pilot, app) -> ReplayScreen:
    screen = await wait_for(
        pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor and app.screen, 30, "the replay"
    )
    await wait_for(pilot, lambda: screen.moments_read and screen.query_one(ScoreChart).data.moments, 60, "moments")
    await pilot.pause(0.2)
    return screen


def chart_cells(chart: ScoreChart) -> list[str]:
    return ["".join(seg.text for seg in chart.render_line(y)) for y in range(chart.content_size.height)]


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_chart_has_rows_visible_steps_and_a_legend_that_fits(samples_db, size):
    app = EdgeTUIApp(samples_db, GW_KEY)
    async with app.run_test(size=size) as pilot:
        screen = await gw_replay(pilot, app)
        chart = screen.query_one(ScoreChart)
        left, top, width, height = chart.canvas
        assert height >= (6 if size[1] < 36 else 11), chart.canvas  # (at 80x24: 4 rows before)
        # every new best's step: its column shows the line (braille), never only submissions' marks
        # (a reframing moment's ✦ marks the top of its step)
        lines = chart_cells(chart)
        rises = [x1 for (x0, y0), (x1, y1) in zip(chart.data.best, chart.data.best[1:]) if x0 == x1 and y0 != y1]
        assert len(rises) >= 20
        hidden = []
        for x in rises:
            col = chart.column_for(x * 3600)
            column = [ln[col] for ln in lines[top : top + height]]
            if not any(ch in BRAILLE or ch == "✦" for ch in column):
                hidden.append((round(x, 3), "".join(column)))
        assert not hidden, hidden
        # the legend fits its border whole: every entry, nothing cut
        legend = Text.from_markup(chart.border_subtitle).plain
        assert "…" not in legend and len(legend) <= size[0] - 6, legend
        for entry in ("━ best", "◆ agent", "• auto", "╵ invalid", "▾▴ off", "✦ reframe", "┊ budget"):
            assert entry in legend, (entry, legend)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_event_list_keeps_5_rows_with_the_detail_open_and_toasts_stay_off_borders(samples_db, size):
    app = EdgeTUIApp(samples_db, GW_KEY)
    async with app.run_test(size=size, notifications=True) as pilot:
        screen = await gw_replay(pilot, app)
        if not screen.detail_visible:
            await pilot.press("d")
            await wait_for(pilot, lambda: screen.detail_visible, 10, "the detail pane")
        await pilot.pause(0.1)
        events = screen.query_one(EventList)
        detail = screen.query_one("#detail")
        assert events.region.height - 2 >= 5 and detail.region.height - 2 >= 5, (events.region, detail.region)
        assert screen.query_one(ScoreChart).canvas[3] >= 6
        # a toast: above the panes' bottom border (the play status) and inside the right border
        app.notify("speed 10×  (1× 10× 60× 600×)", timeout=30)
        await wait_for(pilot, lambda: app.screen.query("Toast"), 10, "the toast")
        await pilot.pause(0.2)
        toast = app.screen.query_one("Toast")
        bottom_border = events.region.bottom - 1
        assert toast.region.bottom <= bottom_border, (toast.region, events.region)
        assert toast.region.right <= size[0] - 1, toast.region


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_no_placeholder_axes_before_the_data(size):
    class ChartApp(App):
        def compose(self):
            yield ScoreChart(id="c")

    app = ChartApp()
    async with app.run_test(size=size) as pilot:
        chart = app.query_one(ScoreChart)
        await pilot.pause()
        assert chart.content_size.height > 5
        assert not "".join(chart_cells(chart)).strip()  # (drawn: 0-150 and 0h-1h axes)
        assert chart.canvas is None
        chart.set_data(
            ChartData(
                best=[(0.5, 40.0), (1.0, 40.0), (1.0, 60.0), (2.0, 60.0)], agent=[(0.5, 40.0), (1.0, 60.0)], x_max=2.0
            )
        )
        await pilot.pause()
        assert "┤" in "".join(chart_cells(chart))
