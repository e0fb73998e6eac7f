"""The score chart's drawing under a live run (Pilot)."""

from __future__ import annotations

import pytest


@pytest.mark.asyncio
async def test_score_chart_keeps_its_drawing_while_now_moves_less_than_a_column():
    """A live run's chart: "now" moving by seconds does not rebuild the plotext figure; moving by a
    column, or a new submission, does (and the picture then shows it)."""
    from textual.app import App as _App

    from edgetui.widgets.chart import ChartData, ScoreChart

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
        assert any("70" in line for line in rebuilt.lines) is False
        assert any("70" in line for line in chart._ensure_built().lines)
