"""The whole live path through the real app: Textual Pilot over EdgeTUIApp in live mode, the real
supervisor, a real Docker container appending to a real run directory, and the stop action
stopping that container."""

from __future__ import annotations


import pytest

from test_live_docker import APPEND_LOOP, make_run, start_work
from waits import pilot_wait_for

from edgetui.views.app import EdgeTUIApp, LiveConfig
from edgetui.views.screens.confirm import ConfirmScreen
from edgetui.views.screens.live_run import LiveRunScreen
from edgetui.views.screens.runs import RunsScreen
from edgetui.views.widgets.event_list import EventList
from edgetui.views.widgets.runs_table import RunsTable


async def _until(pilot, pred, timeout: float = 15.0, what: str = "condition"):
    """The one wait (waits.pilot_wait_for) with this module's defaults: an exception (widgets not mounted
    yet) counts as not yet."""
    return await pilot_wait_for(pilot, pred, timeout, what, 0.2, ignore=(Exception,))


def _rows(screen) -> list[str]:
    t = screen.query_one(RunsTable)
    return [" ".join(str(getattr(c, "plain", c)) for c in t.get_row_at(i)) for i in range(t.row_count)]


@pytest.mark.asyncio
async def test_live_app_over_a_real_container(tmp_path, engine, image, token):
    root = tmp_path / "runs"
    root.mkdir()
    task = f"{token}_task"
    td = make_run(root, "live1", task)
    container = start_work(engine, image, task, "live1", td, APPEND_LOOP)
    app = EdgeTUIApp(
        tmp_path / "live.duckdb", live=LiveConfig([root], home=True, interval=0.5), on_empty=lambda p: None
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="runs screen")
        screen = app.screen
        await _until(
            pilot, lambda: any("live1" in r and "running" in r for r in _rows(screen)), what="the run listed as running"
        )
        await pilot.press("enter")
        await _until(
            pilot,
            lambda: isinstance(app.screen, LiveRunScreen) and app.screen.cursor is not None,
            what="live run screen",
        )
        run = app.screen
        n0 = run.cursor.n
        # the container keeps appending: new events reach the screen while pinned to now
        await _until(pilot, lambda: run.cursor.n >= n0 + 5, timeout=10, what="new events on screen")
        assert run.pinned and run.query_one(EventList).selected == run.cursor.n - 1
        # stop action, confirmed: the real container stops
        await pilot.press("x")
        await _until(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="confirmation")
        await pilot.press("y")

        def stopped() -> bool:
            container.reload()
            return container.status != "running"

        await pilot_wait_for(pilot, stopped, 30, "the real container stopped", 0.5, describe=lambda: container.status)
