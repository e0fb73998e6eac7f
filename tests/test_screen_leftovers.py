"""Issue 37 leftovers on the replay's screen (Pilot, on the bundled samples at 80x24 and 160x48): the
chart's plot area uses its rows (no tick rows left empty above the data), a task that minimises its
score says "lower is better" on the chart and in the header, the moments list has column headings,
and the header's duration never takes a line of its own (110-158 columns wrapped it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from waits import pilot_wait_for as wait_for

from edgetui.replay.cursor import format_elapsed
from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.replay import ReplayScreen
from edgetui.views.widgets import ScoreChart
from edgetui.views.widgets.chart import _y_ticks, fitted_range

from conftest import copy_samples_db

SIZES = [(80, 24), (160, 48)]
GW = "local/opus48-edge-3-20260312005800/gw_signal_search"  # maximises its score
VRP = "10.0.0.7/gpt55-codex-20260402131500/vrp_route_planner"  # minimises a route's length


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path_factory.mktemp("rows") / "s.duckdb")


def _tick_rows(chart) -> dict[int, float]:
    """The canvas rows that carry a y label, and its value (read from the rendered strips)."""
    left, top, _w, h = chart.canvas
    out = {}
    for y in range(top, top + h):
        label = "".join(seg.text for seg in chart.render_line(y)).replace("┤", " ").replace("│", " ")[:left].strip()
        if label:
            out[y - top] = float(label.replace(",", ""))
    return out


async def _replay(app, pilot):
    await wait_for(
        pilot,
        lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None and app.screen.header,
        20,
        "the replay",
    )
    await pilot.pause(0.1)
    chart = app.screen.query_one(ScoreChart)
    chart._ensure_built()
    return chart


def _header_text(screen) -> str:
    from edgetui.views.widgets.header import RunHeader

    return "\n".join(w.text().plain for w in screen.query(RunHeader))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("run_key", [GW, VRP], ids=["gw", "vrp"])
async def test_the_chart_uses_its_rows(samples_db, size, run_key):
    """At 80x24 the 42.8 -> 67 climb took the rows 40 … 90, the two top ones empty: the y range now
    ends within a tick step of the data, and the data spans most of it."""
    app = EdgeTUIApp(samples_db, run_key)
    async with app.run_test(size=size) as pilot:
        chart = await _replay(app, pilot)
        d = chart.data
        lo, hi = fitted_range([y for _, y in d.best], [y for _, y in d.agent] + [y for _, y in d.auto])
        ticks = _tick_rows(chart)
        values = sorted(ticks.values())
        assert len(values) >= 4, ticks
        step = values[1] - values[0]
        assert {round(b - a, 6) for a, b in zip(values, values[1:])} == {round(step, 6)}  # evenly spaced
        assert values[0] <= lo and values[-1] < hi + step  # no tick a whole step above the data
        rows = chart.canvas[3]
        a, b, _ = _y_ticks(lo, hi, rows)
        assert (hi - lo) / (b - a) >= 0.75  # the data fills the plot area's height
        if size == (80, 24):
            assert rows >= 6  # (issue 37: at least 6 rows at 80x24)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_minimised_score_says_lower_is_better(samples_db, size):
    app = EdgeTUIApp(samples_db, VRP)
    async with app.run_test(size=size) as pilot:
        chart = await _replay(app, pilot)
        assert chart.data.lower_better and "↓ lower is better" in str(chart.border_title)
        head = _header_text(app.screen)
        assert "best 31,823 (↓ lower is better)" in head, head
        # the pass rate rises whatever the task: its view says nothing of the kind
        await pilot.press("v")
        await pilot.pause(0.1)
        assert chart.data.mode == "pass" and not chart.data.lower_better
        assert "lower is better" not in str(chart.border_title)
    app = EdgeTUIApp(samples_db, GW)  # a maximised score: not said
    async with app.run_test(size=size) as pilot:
        chart = await _replay(app, pilot)
        assert not chart.data.lower_better and "lower is better" not in str(chart.border_title)
        assert "lower is better" not in _header_text(app.screen)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_moments_list_has_column_headings(samples_db, size):
    """`M` listed the moments without saying what each column was: a heading line over them, its
    columns where the lines' columns are, inside the screen."""
    from textual.widgets import OptionList, Static

    from edgetui.views.screens.moments import MomentsScreen

    app = EdgeTUIApp(samples_db, GW)
    async with app.run_test(size=size) as pilot:
        screen = await wait_for(
            pilot,
            lambda: isinstance(app.screen, ReplayScreen) and app.screen.moments_part.read and app.screen,
            60,
            "moments",
        )
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MomentsScreen), 20, "the moments list")
        await pilot.pause()
        head = app.screen.query_one("#moments-head", Static)
        ol = app.screen.query_one(OptionList)
        heading = "".join(seg.text for seg in head.render_line(0)).rstrip()
        lines = [ol.render_line(y).text.rstrip() for y in range(ol.virtual_size.height)]
        assert heading.split()[:3] == ["round", "elapsed", "best"] and "conf" in heading, heading
        first = next(ln for ln in lines if "agent-52" in ln)
        # the headings stand over their columns: round over the round, elapsed ending over the time
        assert heading.index("round") == first.index("agent-52")
        assert heading.index("elapsed") + len("elapsed") == first.index("2:40:18") + len("2:40:18")
        box = app.screen.query_one("#moments-box")
        assert box.region.right <= size[0] and head.region.x >= box.region.x
        assert ol.option_count == len(screen.moments_part.moments) == 3  # the heading is no option
        # the rows carry values only (no `lead 0:05:58  conf 0.64`), each ending under its heading
        m = screen.moments_part.moments[0]
        assert "lead " not in first and "conf " not in first, first
        conf = f"{m['confidence']:.2f}"
        assert first.index(conf) + len(conf) == heading.index("conf") + len("conf"), (heading, first)
        lead = format_elapsed(m["lead_time_s"])
        assert first.index(lead) + len(lead) == heading.index("lead") + len("lead"), (heading, first)
        # F1 and ? list the list's keys and columns (a modal screen: the app's F1 did not reach it)
        from edgetui.views.screens.replay_parts import HelpScreen

        moments = app.screen
        for key in ("f1", "question_mark"):
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10, f"{key}: the key list")
            assert app.screen.title_text == "Moments keys"
            text = "\n".join(f"{k}  {w}" for k, w in app.screen.keys)
            assert "enter  go to the moment" in text and "conf  " in text, text
            await pilot.press("escape")
            await wait_for(pilot, lambda: app.screen is moments, 10, "back on the moments list")


def test_the_headers_duration_never_takes_a_line_of_its_own(samples_db):
    """At 110-158 columns `ran 0:00:00 to last event` (or `ran 12:01:51 start→end · SForge runtime
    12:00:00`) wrapped onto a line of its own under the identity. Every sample run, every width from
    60 to 200: no line holds the duration alone, none is wider than the width, and from 110 columns
    on (the wide header) the duration is always there."""
    from edgetui.store.database import open_db
    from edgetui.store.queries import run_header
    from edgetui.views.widgets.header import SEP, header_text

    conn = open_db(samples_db, read_only=True)
    try:
        heads = [run_header(conn, k) for (k,) in conn.execute("SELECT run_key FROM runs").fetchall()]
    finally:
        conn.close()
    assert len(heads) == 11
    for width in range(60, 201):
        for head in heads:
            lines = header_text(head, width).plain.split("\n")
            where = (width, head["run_key"], lines)
            assert all(len(ln) <= width for ln in lines), where
            assert not any(ln.startswith(("ran ", "runtime ")) and SEP not in ln for ln in lines), where
            if width >= 110 and head.get("duration_s") is not None:
                assert any("ran " in ln for ln in lines), where


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (140, 40), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_replay_header_keeps_ran_beside_other_fields(samples_db, size):
    from edgetui.views.widgets.header import SEP, RunHeader

    app = EdgeTUIApp(samples_db, "local/real-installfail-20261201181800/tiny_stats")
    async with app.run_test(size=size) as pilot:
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, ReplayScreen) and app.screen.header,
            20,
            "the replay",
        )
        await pilot.pause(0.1)
        header = app.screen.query_one(RunHeader)
        lines = ["".join(seg.text for seg in header.render_line(y)).strip() for y in range(header.size.height)]
        ran = [ln for ln in lines if "ran 0:00" in ln]
        assert ran and all(SEP in ln for ln in ran), lines  # beside another field, never alone
