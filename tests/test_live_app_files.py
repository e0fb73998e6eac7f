"""The live app without Docker (files only, ``--no-docker``): Textual Pilot over EdgeTUIApp with the
real supervisor and a real run directory. Alarm acknowledgement (``A``) end to end, and the picker
behind the runs screen listing runs that appeared after the app started."""

from __future__ import annotations

import time

import pytest

from test_live_app_docker import _rows, _until
from test_live_core import init_line, log_line, make_run, text_line

from edgetui.views.app import EdgeTUIApp, LiveConfig
from edgetui.store.database import open_db
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.runs import AlarmsScreen, RunsScreen


@pytest.fixture(autouse=True)
def _no_user_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


@pytest.mark.asyncio
async def test_acknowledging_alarms_in_the_app(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    t = time.time() - 30
    make_run(
        root,
        "bad",
        log=log_line(t, "INFO", "Images ready") + log_line(t + 1, "ERROR", "Error: image missing"),
        transcript=[init_line(), text_line(1)],
    )
    make_run(
        root,
        "bad2",
        log=log_line(t, "INFO", "Images ready") + log_line(t + 1, "ERROR", "Error: disk full"),
        transcript=[init_line(), text_line(1)],
    )
    db = tmp_path / "live.duckdb"
    app = EdgeTUIApp(db, live=LiveConfig([root], home=True, interval=0.5, docker=False), on_empty=lambda p: None)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="runs screen")
        screen = app.screen
        await _until(
            pilot, lambda: len(screen.runs) == 2 and all(r.current_alarms for r in screen.runs), what="two infra alarms"
        )
        banner = screen.query_one("#alarm-banner")
        await _until(pilot, lambda: "2 alarms" in banner.render().plain, what="banner counts 2")
        # A on the selected run: that run's alarm stops counting, the other one still does
        sel = screen.selected_run_key
        await pilot.press("A")
        await _until(pilot, lambda: "1 alarm" in banner.render().plain, what="banner counts 1")
        row = next(r for r in _rows(screen) if r.split()[0] == sel.split("/")[1])
        assert "✓1" in row and "⚠" not in row
        # `a` lists both, the acknowledged one marked; A there acknowledges all
        await pilot.press("a")
        await _until(pilot, lambda: isinstance(app.screen, AlarmsScreen), what="alarm list")
        lines = app.screen.lines
        assert len(lines) == 2 and sum("✓" in x for x in lines) == 1
        assert next(x for x in lines if "✓" in x).split()[3] == sel  # age, ⚠, rule, run key, ack
        await pilot.press("A")
        await _until(
            pilot, lambda: isinstance(app.screen, RunsScreen) and not screen.has_class("-alarms"), what="banner gone"
        )
        assert all(r.current_alarms == [] and len(r.acked_alarms) == 1 for r in screen.runs)
    conn = open_db(db, read_only=True)
    try:
        acks = conn.execute(
            "SELECT run_key, data->>'$.rule' FROM events WHERE kind = 'alarm' "
            "AND data->>'$.ack' = 'true' ORDER BY run_key"
        ).fetchall()
    finally:
        conn.close()
    assert [r[1] for r in acks] == ["infra_error", "infra_error"] and len({r[0] for r in acks}) == 2


@pytest.mark.asyncio
async def test_picker_behind_the_runs_screen_lists_runs_that_appeared_later(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    db = tmp_path / "live.duckdb"
    app = EdgeTUIApp(db, live=LiveConfig([root], home=False, interval=0.5, docker=False), on_empty=lambda p: None)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, PickerScreen), what="picker")
        picker = app.screen
        assert all("late1" not in str(r.get("run_id")) for r in picker.rows)
        make_run(root, "late1", transcript=[init_line(), text_line(1)])  # a run starts after the app
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), timeout=20, what="runs screen becomes home")
        await _until(pilot, lambda: any("late1" in r for r in _rows(app.screen)), what="late1 listed")
        await pilot.press("q")  # back to the picker: it reloads
        await _until(pilot, lambda: app.screen is picker, what="picker again")
        await _until(pilot, lambda: any(r.get("run_id") == "late1" for r in picker.rows), what="picker lists late1")
        from textual.widgets import DataTable

        assert picker.query_one(DataTable).row_count == len(picker.shown) >= 1
        # Enter on a watched run opens it live (not a static replay); F2 leads back to the live runs
        from edgetui.views.screens.live_run import LiveRunScreen

        row = next(i for i, r in enumerate(picker.shown) if r.get("run_id") == "late1")
        picker.query_one(DataTable).move_cursor(row=row)
        picker.action_open()
        await _until(
            pilot,
            lambda: isinstance(app.screen, LiveRunScreen) and app.screen.run_key.endswith("/late1/taskA"),
            what="live run screen from the picker",
        )
        await pilot.press("f2")
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="F2: runs screen")
        await _until(pilot, lambda: any("late1" in r for r in _rows(app.screen)), what="runs listed after F2")
