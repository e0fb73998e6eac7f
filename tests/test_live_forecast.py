"""The forecast shown live in the live run screen's header, through Textual's Pilot, on runs
written with the real Recorder (the live screens' test builders)."""

from __future__ import annotations

import re

import pytest

from test_live_screens import LiveApp, open_selected_run, post_runs, runs_home, snapshot, wait_for
from test_live_screens import db  # noqa: F401 - a pytest fixture, found by its name

from edgetui.store.database import open_db
from edgetui.record.recorder import Recorder
from edgetui.records import TaskInfo
from edgetui.views.widgets import RunHeader
from edgetui.views.widgets.header import header_text


def _rescaled(path):
    conn = open_db(path)
    Recorder(conn).upsert_task(
        TaskInfo(
            task_id="gw-detect",
            name="gw detect",
            selection="score_first",
            rescale={"kind": "linear", "lower": 0.0, "upper": 100.0},
            assumed=False,
        )
    )
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


def _forecast_cells(screen) -> dict[str, str]:
    from test_live_screens import col

    t = screen.query_one(__import__("edgetui.views.widgets.runs_table", fromlist=["RunsTable"]).RunsTable)
    if "forecast" not in t.columns:
        return {}
    return dict(zip(t.run_keys, col(screen, "forecast")))


@pytest.mark.asyncio
async def test_runs_screen_forecast_column_for_every_live_run(db):
    path, writers = db
    _rescaled(path)
    app = LiveApp(path)
    gw, sat, old = writers["gw"], writers["sat"], writers["old"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen

        def ready() -> bool:
            cells = _forecast_cells(screen)
            return all(cells.get(w.rk, "…") not in ("…", "") for w in (gw, sat))

        await wait_for(pilot, ready)
        cells = _forecast_cells(screen)
        assert cells[old.rk].strip() == ""  # a finished run has no forecast
        for w in (gw, sat):  # every live run, not only the selected one (gw)
            fc = screen.forecasts[w.rk]
            # the wide form (value, interval, last best, horizon) or, where the names took the width
            # (they come first), the medium one (value, interval, last best; whole numbers)
            m = re.fullmatch(r"\s*(\d+(?:\.\d)?) \[(\d+)–(\d+)\] ?· ?(\d+(?:\.\d)?)(?: @(\d+)h)?", cells[w.rk])
            assert m, cells[w.rk]
            digits = 1 if "." in m.group(1) else 0
            assert float(m.group(1)) == round(fc["value"], digits)
            assert float(m.group(4)) == round(fc["baseline"], digits)
            assert int(m.group(2)) == round(fc["lo"]) and int(m.group(3)) == round(fc["hi"])
            assert m.group(5) in ("12", None) and fc["lo"] <= fc["value"] <= fc["hi"]
        assert screen.forecasts[gw.rk]["baseline"] == 50.0
        # a new graded round of gw: its cell follows, sat's stays
        before_sat = cells[sat.rk]
        gw.attach(app.conn.cursor())
        gw.add(25)
        await post_runs(pilot, snapshot(writers, gw=dict(agent_submissions=7, best_round="agent-7")))
        await wait_for(pilot, lambda: (screen.forecasts.get(gw.rk) or {}).get("baseline") == 55.0)
        await wait_for(pilot, lambda: re.search(r"·\s?55(\.0)?\b", _forecast_cells(screen).get(gw.rk, "")))
        assert _forecast_cells(screen)[sat.rk] == before_sat


@pytest.mark.asyncio
async def test_forecast_selected_line_at_80_columns_and_no_sideways_scroll(db):
    from textual.widgets import Static

    from edgetui.views.widgets.runs_table import RunsTable

    path, writers = db
    _rescaled(path)
    app = LiveApp(path)
    gw = writers["gw"]
    async with app.run_test(size=(80, 24)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen
        await wait_for(pilot, lambda: isinstance(screen.forecasts.get(gw.rk), dict))
        await post_runs(pilot, snapshot(writers))
        t = screen.query_one(RunsTable)
        assert t._total_width <= 80 - 2  # the forecast column never makes the table scroll sideways
        # these run ids, tasks and costs leave it no room at 80 columns: the selected run's line has it
        box = screen.query_one("#runs-selected", Static).render().plain
        assert "12h forecast" in box and "last best 50.0" in box


def _earlier_runs(path, n=2):
    """``n`` ended 12-hour runs of gw-detect, started a day and more before the live one, each on the
    law S = 80 / (1 + (4 h / t)^beta) with beta 1.5 and 2.5, a graded round every 30 minutes."""
    from test_live_screens import T0

    from edgetui.records import RunInfo, make_run_key

    conn = open_db(path)
    rec = Recorder(conn)
    keys = []
    for i in range(n):
        beta = 1.5 + i
        start = T0 - (40 - 13 * i) * 3600.0
        rk = make_run_key("local", f"early-{i}", "gw-detect")
        rec.upsert_run(
            rk,
            RunInfo(
                host="local",
                run_id=f"early-{i}",
                task_id="gw-detect",
                agent="claude",
                model="claude-opus-4",
                timeout_s=12 * 3600.0,
                started_at=start,
                layout="flat",
                ended_at=start + 12 * 3600.0,
            ),
            status="finished",
            score_task=True,
            selection="score_first",
        )
        subs, best = [], None
        for k in range(1, 25):
            h = k / 2
            score = round(80.0 / (1 + (4.0 / h) ** beta), 2)
            best = score if best is None else max(best, score)
            subs.append(
                dict(
                    round=f"agent-{k}",
                    kind="agent",
                    n=k,
                    status="graded",
                    t=start + h * 3600.0,
                    elapsed_s=h * 3600.0,
                    pass_rate=0.5,
                    score=score,
                    valid=True,
                    is_new_best=score >= best,
                    best_round=f"agent-{k}",
                    best_score=best,
                    best_pass_rate=0.5,
                    summary="graded",
                )
            )
        rec.replace_submissions(rk, subs)
        rec.update_run(rk, last_event_at=start + 12 * 3600.0, best_score=best, agent_submissions=len(subs))
        keys.append(rk)
    conn.close()
    return keys


@pytest.mark.asyncio
async def test_forecast_prior_is_fitted_in_the_background_then_swaps(db, monkeypatch):
    """The first forecast of a live run whose earlier runs have no stored fit shows the default prior
    and says so (the update fits nothing); the app's fitter fits them in a thread, then the forecast is
    read again with their median beta, in the runs screen and the live run screen."""
    import threading

    from textual.widgets import Static

    import edgetui.analysis.forecast_prior as priors
    import edgetui.views.screens.live_common as live_common

    path, writers = db
    _rescaled(path)
    keys = _earlier_runs(path)
    gate, real = threading.Event(), priors.fit_runs
    calls: list[list[str]] = []

    def gated(fetch, run_keys, **kw):  # the real fit, held until the test has seen the default
        calls.append(list(run_keys))
        assert gate.wait(10)
        return real(fetch, run_keys, **kw)

    monkeypatch.setattr(priors, "fit_runs", gated)
    monkeypatch.setattr(live_common, "fit_runs", gated)  # (the screens' own binding of it)
    app = LiveApp(path)
    gw = writers["gw"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen

        def box() -> str:
            return screen.query_one("#runs-selected", Static).render().plain

        await wait_for(pilot, lambda: "12h forecast" in box())
        assert "(default prior: fitting 2 earlier runs)" in box()
        fc = screen.forecasts[gw.rk]
        assert fc["beta"] == 1.0 and fc["prior_level"] == "default" and sorted(fc["prior_pending"]) == keys
        await wait_for(pilot, lambda: calls == [keys])  # one background round, asked by the forecast read
        # the live run screen, opened meanwhile, says the same in its header
        run = await open_selected_run(pilot)
        await wait_for(pilot, lambda: "forecast" in _header(run))
        assert "(default prior: fitting 2 earlier runs)" in _header(run)
        gate.set()  # the fit itself (scipy's first import included) takes seconds on a loaded machine
        await wait_for(pilot, lambda: (run.header.get("forecast") or {}).get("prior_level") == "task", timeout=90)
        fc = run.header["forecast"]
        assert fc["prior"] == "median of 2 earlier run(s) of this task" and fc["prior_pending"] == []
        await wait_for(pilot, lambda: "fitting" not in _header(run))
        betas = [
            b
            for (b,) in app.conn.cursor()
            .execute("SELECT beta FROM fits WHERE source = 'prior' ORDER BY run_key")
            .fetchall()
        ]
        assert len(betas) == 2 and fc["beta"] == pytest.approx(sum(betas) / 2)
        assert betas[0] == pytest.approx(1.5, rel=0.3) and betas[1] == pytest.approx(2.5, rel=0.3)
        # back on the runs screen: its forecast was read again with the stored fits
        await pilot.press("q")
        await wait_for(pilot, lambda: app.screen is screen)
        await wait_for(pilot, lambda: screen.forecasts.get(gw.rk, {}).get("prior_level") == "task", timeout=30)
        assert screen.forecasts[gw.rk]["beta"] == pytest.approx(fc["beta"])
        await wait_for(pilot, lambda: "fitting" not in box())
        assert calls == [keys]  # nothing fitted twice


@pytest.mark.asyncio
async def test_runs_screen_sorts_by_the_forecast_column(db):
    """``s`` reaches the forecast column; runs sort by the forecast value (``S`` reverses), runs
    without a forecast (the finished one) always last."""
    from test_live_screens import col

    path, writers = db
    _rescaled(path)
    app = LiveApp(path)
    gw, sat, old = writers["gw"], writers["sat"], writers["old"]
    async with app.run_test(size=(160, 48)) as pilot:
        await runs_home(pilot, writers)
        screen = app.screen
        await wait_for(pilot, lambda: all(isinstance(screen.forecasts.get(w.rk), dict) for w in (gw, sat)))
        for _ in range(12):
            if screen.sort_key == "forecast":
                break
            await pilot.press("s")
        assert screen.sort_key == "forecast"
        vals = {w.rk: screen.forecasts[w.rk]["value"] for w in (gw, sat)}
        assert vals[gw.rk] != vals[sat.rk]
        want = sorted(vals, key=vals.get)
        t = screen.query_one(__import__("edgetui.views.widgets.runs_table", fromlist=["RunsTable"]).RunsTable)
        assert t.run_keys == [*want, old.rk]
        assert "▲" in str(t.columns["forecast"].label)
        await pilot.press("S")
        assert t.run_keys == [*reversed(want), old.rk]  # reversed, the run without a forecast still last
        assert col(screen, "forecast")[-1].strip() == ""
