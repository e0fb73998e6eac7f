"""The score chart's drawing under a live run (Pilot)."""

from __future__ import annotations

import pytest


@pytest.mark.asyncio
async def test_score_chart_keeps_its_drawing_while_now_moves_less_than_a_column():
    """A live run's chart: "now" moving by seconds does not rebuild the plotext figure; moving by a
    column, or a new submission, does (and the picture then shows it)."""
    from textual.app import App as _App

    from edgetui.views.widgets.chart import ChartData, ScoreChart

    class ChartApp(_App):
        def compose(self):
            yield ScoreChart(id="c")

    def data(now_h: float, extra: bool = False) -> ChartData:
        agent = [(1.0, 40.0), (2.0, 55.0)] + ([(now_h - 0.01, 70.0)] if extra else [])
        best = [(1.0, 40.0), (2.0, 40.0), (2.0, 55.0)]
        if extra:
            best += [(now_h - 0.01, 55.0), (now_h - 0.01, 70.0)]
        best.append((now_h, best[-1][1]))
        return ChartData(best=best, agent=agent, budget_h=12.0, x_max=12.36)

    app = ChartApp()
    async with app.run_test(size=(120, 20)) as pilot:
        chart = app.query_one(ScoreChart)
        chart.set_data(data(3.0))
        await pilot.pause()
        built = chart._ensure_built()
        col_h = 12.36 / built.canvas[2]
        chart.set_data(data(3.0 + col_h / 4))  # a few seconds later
        await pilot.pause()
        assert chart._ensure_built() is built  # same drawing kept
        chart.set_data(data(3.0 + 2 * col_h))  # the line reaches the next column
        await pilot.pause()
        rebuilt = chart._ensure_built()
        assert rebuilt is not built
        chart.set_data(data(3.0 + 2 * col_h, extra=True))  # a new best: drawn at once
        await pilot.pause()
        assert chart._ensure_built() is not rebuilt
        # the new best is drawn at once: the y axis reaches 70 now, and did not before
        assert _top_label(rebuilt.lines) < 70 <= _top_label(chart._ensure_built().lines)


def _top_label(lines) -> float:
    """The highest y label of a drawing's lines (the numbers left of ``┤``)."""
    import re

    plain = [re.sub(r"\x1b\[[0-9;]*m", "", ln) for ln in lines]  # (plotext's lines carry ANSI colours)
    labels = [ln.split("┤")[0].strip() for ln in plain if "┤" in ln]
    return max(float(x) for x in labels if x)


# ---------------------------------------------------------------------------- the sample at 80x24

GW_RUN = "opus48-edge-3-20260312005800"


@pytest.fixture(scope="module")
def gw_db(tmp_path_factory):
    from pathlib import Path

    from edgetui.cli.main import main
    from edgetui.store.database import open_db

    root = Path(__file__).resolve().parents[1] / "sample_runs"
    db = tmp_path_factory.mktemp("gw") / "gw.duckdb"
    assert (
        main(
            [
                "--db",
                str(db),
                "ingest",
                "-q",
                "--sample",
                "--tasks-dir",
                str(root / "tasks"),
                str(root / "runs" / GW_RUN),
            ]
        )
        == 0
    )
    conn = open_db(db, read_only=True)
    rk = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [GW_RUN]).fetchone()[0]
    conn.close()
    return db, rk


def _y_ticks_of(chart) -> list[float]:
    """The numbers written left of the canvas, read from the rendered strips."""
    left, top, _w, h = chart.canvas
    out = []
    for y in range(top, top + h):
        label = "".join(seg.text for seg in chart.render_line(y)).replace("┤", " ").replace("│", " ")[:left]
        label = label.strip()
        if label:
            out.append(float(label))
    return out


def _cell_styles(chart, symbol: str):
    styles = set()
    for y in range(chart.size.height):
        for seg in chart.render_line(y):
            if symbol in seg.text and seg.style is not None and seg.style.color is not None:
                styles.add(seg.style.color)
    return styles


@pytest.mark.asyncio
async def test_the_gw_climb_is_readable_at_80x24_with_colours_matching_the_legend(gw_db):
    """At 80x24 the 42.8 -> 67.0 climb gets at least three evenly spaced ticks between 40 and 70
    (a few 0.0 scores drawn as ▾ at the edge instead of stretching the range), and every ◆ is
    drawn in the colour the legend gives ◆ (read from the rendered strips, not a constant)."""
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.replay import ReplayScreen
    from edgetui.views.widgets import ScoreChart

    db, rk = gw_db
    app = EdgeTUIApp(db, rk)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(300):
            if isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None:
                break
            await pilot.pause(0.02)
        await pilot.pause(0.1)
        chart = app.screen.query_one(ScoreChart)
        ticks = _y_ticks_of(chart)
        inside = [t for t in ticks if 40 <= t <= 70]
        assert len(inside) >= 3, ticks
        gaps = {round(b - a, 6) for a, b in zip(ticks, ticks[1:])}
        assert len(gaps) == 1, ticks  # evenly spaced
        assert chart.data.outliers > 0 and _cell_styles(chart, "▾")  # the low scores, at the edge
        from rich.text import Text

        legend = chart.border_subtitle
        legend = legend if isinstance(legend, Text) else Text.from_markup(legend)  # as the border shows it
        from rich.style import Style

        def color(st):  # the colour's number: Textual writes color(11) back as ansi_bright_yellow
            c = (st if isinstance(st, Style) else Style.parse(str(st).replace("ansi_", ""))).color
            return None if c is None else c.number

        legend_diamond = {color(sp.style) for sp in legend.spans if "◆" in legend.plain[sp.start : sp.end]}
        drawn = {c.number for c in _cell_styles(chart, "◆")}
        assert drawn and drawn == legend_diamond, (drawn, legend_diamond)
        legend_dot = {color(sp.style) for sp in legend.spans if "•" in legend.plain[sp.start : sp.end]}
        assert {c.number for c in _cell_styles(chart, "•")} <= legend_dot
        # v: pass rate, then the rescaled score, then back
        modes = []
        for _ in range(3):
            await pilot.press("v")
            await pilot.pause(0.05)
            modes.append(chart.data.mode)
        assert modes == ["pass", "rescaled", "score"]
        # pass rates (0/25/50 % here): every round on scale, 0 % included (the score's quartile
        # range had put the axis at 20-70 and every 0 % round off scale)
        await pilot.press("v")
        await pilot.pause(0.05)
        assert chart.data.mode == "pass"
        chart._ensure_built()
        ticks = sorted(_y_ticks_of(chart))
        values = [y for _, y in chart.data.agent + chart.data.auto]
        assert min(values) == 0.0 and chart.data.outliers == 0
        assert ticks[0] == 0.0 and ticks[-1] <= 100.0 and ticks[-1] >= max(values) - 10, ticks
        assert not _cell_styles(chart, "▾")


@pytest.mark.asyncio
async def test_no_empty_chart_for_a_bare_transcript_and_events_first_when_tiny(gw_db, tmp_path):
    from pathlib import Path

    from edgetui.views.app import EdgeTUIApp
    from edgetui.cli.main import main
    from edgetui.store.database import open_db
    from edgetui.views.screens.replay import ReplayScreen
    from edgetui.views.widgets import EventList, ScoreChart

    tr = tmp_path / "t.jsonl"
    tr.write_text(
        "".join(
            '{"type":"assistant","message":{"id":"m%d","role":"assistant","content":[{"type":"text","text":"step %d"}]}}\n'
            % (i, i)
            for i in range(30)
        )
    )
    db = tmp_path / "bare.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(tr)]) == 0
    conn = open_db(db, read_only=True)
    rk = conn.execute("SELECT run_key FROM runs").fetchone()[0]
    conn.close()

    async def shown(db: Path, rk: str, size) -> tuple[bool, int]:
        app = EdgeTUIApp(db, rk)
        async with app.run_test(size=size) as pilot:
            for _ in range(300):
                if isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None:
                    break
                await pilot.pause(0.02)
            await pilot.pause(0.1)
            chart = app.screen.query_one(ScoreChart)
            events = app.screen.query_one(EventList)
            visible = chart.display and chart.region.height > 0
            rows = events.region.height - 2
            if not visible:
                await pilot.press("c")  # c still brings it back
                await pilot.pause(0.05)
                assert chart.region.height > 0
            return visible, rows

    visible, rows = await shown(db, rk, (160, 48))
    assert not visible and rows >= 30  # nothing graded: no 9-row empty chart
    db2, rk2 = gw_db
    visible, rows = await shown(db2, rk2, (40, 12))
    assert not visible and rows >= 4  # a tiny terminal shows events first
    visible, rows = await shown(db2, rk2, (80, 24))
    assert visible


@pytest.mark.asyncio
async def test_submissions_on_the_best_so_far_line_keep_their_marks():
    """A run whose every submission is a new best or a tie (the genuine real-tz run: pass 30, 70,
    70, 70, 90, 90, 100, 100 %) showed the line and not one ◆: the line was drawn over them. Each
    tie keeps its mark on the line; each new best is its step, drawn over any mark in its column
    (issue 37: at 80x24 the steps hid under the ◆ of the new bests and ties)."""
    from textual.app import App as _App

    from edgetui.views.widgets.chart import ChartData, ScoreChart

    class ChartApp(_App):
        def compose(self):
            yield ScoreChart(id="c")

    xs = [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
    ys = [30.0, 70.0, 70.0, 70.0, 90.0, 90.0, 100.0, 100.0]
    best, b = [], None
    new_bests = []
    for x, y in zip(xs, ys):
        if b is None or y > b:
            if b is not None:
                best.append((x, b))
                new_bests.append(x)
            best.append((x, y))
            b = y
    best.append((8.0, b))
    app = ChartApp()
    async with app.run_test(size=(120, 20)) as pilot:
        chart = app.query_one(ScoreChart)
        chart.set_data(ChartData(best=best, agent=list(zip(xs, ys)), budget_h=8.0, x_max=8.24, mode="pass"))
        await pilot.pause()
        lines = ["".join(seg.text for seg in chart.render_line(y)) for y in range(chart.size.height)]
        drawn = sum(ln.count("◆") for ln in lines)
        assert drawn == len(xs) - len(new_bests) == 5  # the first round and the four ties
        _left, top, _w, height = chart.canvas
        for x in new_bests:
            col = chart.column_for(x * 3600)
            column = [ln[col] for ln in lines[top : top + height]]
            assert "◆" not in column and any("\u2800" < ch <= "\u28ff" for ch in column), (x, column)


def test_a_run_of_minutes_gets_minute_ticks():
    """The genuine real-tz run (4 minutes) had the one x tick "0h"; an hour-long one keeps hours."""
    from edgetui.views.widgets.chart import _hour_ticks

    pos, labels = _hour_ticks(4.5 / 60, 10)
    assert labels[0] == "0m" and len(labels) >= 3 and all(x.endswith("m") for x in labels)
    assert pos[-1] <= 4.5 / 60
    _, labels = _hour_ticks(12.0, 10)
    assert labels[:3] == ["0h", "2h", "4h"]
    _, labels = _hour_ticks(1.5, 10)
    assert "1h30" in labels or "1h" in labels
