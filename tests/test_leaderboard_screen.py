"""The leaderboard screen through Textual's Pilot, on the bundled sample runs recorded into a real
DuckDB file: the same cells as `edgetui leaderboard`."""

from __future__ import annotations

import pytest

from waits import pilot_wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.leaderboard import LeaderboardScreen

from conftest import copy_samples_db


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template):
    db = copy_samples_db(samples_template, tmp_path_factory.mktemp("l") / "s.duckdb")
    return db


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_leaderboard_screen_counts_samples_only_when_asked(samples_db, size):
    from textual.widgets import DataTable, Static

    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        app.action_leaderboard()
        await pilot_wait_for(pilot, lambda: isinstance(app.screen, LeaderboardScreen), 20, "the leaderboard screen")
        screen = app.screen

        def title() -> str:
            q = screen.query("#lb-title")
            return q.first(Static).render().plain if q else "loading"

        await pilot_wait_for(pilot, lambda: "loading" not in title(), 20, "the leaderboard loaded", describe=title)
        assert screen.query_one(DataTable).row_count == 0 and "no runs count here" in title()
        assert "left out: 11 sample runs (a: all)" in title()  # how many, and why
        await pilot.press("a")
        await pilot_wait_for(pilot, lambda: screen.query_one(DataTable).row_count > 0, 20, "rows in the leaderboard")
        t = screen.query_one(DataTable)
        rows = [[str(c) for c in t.get_row_at(i)] for i in range(t.row_count)]
        i = next(i for i, r in enumerate(rows) if r[0] == "claude-opus-4-8")
        opus = rows[i]
        assert rows[i + 1][0].startswith("  Scientific Co")  # its categories follow, indented
        # gw_signal_search (71.25 rescaled at 12 h) and gitlet_vcs (95.3 % pass rate): (71.25 + 95.3125) / 2
        assert opus[-1] == ("83.3 ²" if size[0] < 120 else "83.3 (2)")
        assert "all runs" in title() and "left out" not in title()
        await pilot.press("q")
        assert not isinstance(app.screen, LeaderboardScreen)
