"""The forecast shown live in the live run screen's header, through Textual's Pilot, on runs
written with the real Recorder (the live screens' test builders)."""

from __future__ import annotations

import re

import pytest

from test_live_screens import (LiveApp, open_selected_run, post_runs, runs_home, snapshot,  # noqa: F401
                               wait_for, db)

from edgetui.db import open_db
from edgetui.recorder import Recorder
from edgetui.records import TaskInfo
from edgetui.widgets import RunHeader
from edgetui.widgets.header import header_text


def _rescaled(path):
    conn = open_db(path)
    Recorder(conn).upsert_task(TaskInfo(task_id="gw-detect", name="gw detect", selection="score_first",
                                        rescale={"kind": "linear", "lower": 0.0, "upper": 100.0}, assumed=False))
    conn.close()


def _header(run) -> str:
    return header_text(run.query_one(RunHeader).head, 160).plain


@pytest.mark.asyncio
async def test_live_run_header_shows_the_forecast_beside_last_best(db):
    path, writers = db
    _rescaled(path)
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        run = await open_selected_run(pilot)
        await wait_for(pilot, lambda: "forecast" in _header(run))
        text = _header(run)
        m = re.search(r"12h forecast (\d+\.\d) \[(\d+\.\d)–(\d+\.\d)\] · last best (\d+\.\d)", text)
        assert m, text
        value, lo, hi, last = map(float, m.groups())
        assert last == 50.0 and lo <= value <= hi and value >= last  # 40, 42.5 ... 50 so far, still rising
        # two more graded rounds: the forecast follows the new best
        w.attach(app.conn.cursor())
        w.add(25)
        await post_runs(pilot, snapshot(writers))
        await wait_for(pilot, lambda: "last best 55.0" in _header(run))
        assert "12h forecast" in _header(run)


@pytest.mark.asyncio
async def test_finished_run_shows_no_forecast(db):
    path, writers = db
    app = LiveApp(path)
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        for _ in range(3):
            if app.screen.selected_run_key == writers["old"].rk:
                break
            await pilot.press("down")
        assert app.screen.selected_run_key == writers["old"].rk
        run = await open_selected_run(pilot)
        await wait_for(pilot, lambda: "best" in _header(run))
        assert "forecast" not in _header(run)


@pytest.mark.asyncio
async def test_runs_screen_shows_the_selected_live_runs_forecast(db):
    from textual.widgets import Static

    path, writers = db
    _rescaled(path)
    app = LiveApp(path)
    w = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen
        assert screen.selected_run_key == w.rk

        def box() -> str:
            return screen.query_one("#runs-selected", Static).render().plain

        await wait_for(pilot, lambda: "12h forecast" in box())
        assert "last best 50.0" in box()
        # a new graded round (a new snapshot with more submissions): read again
        w.attach(app.conn.cursor())
        w.add(25)
        await post_runs(pilot, snapshot(writers, gw=dict(agent_submissions=7, best_round="agent-7")))
        await wait_for(pilot, lambda: "last best 55.0" in box())
