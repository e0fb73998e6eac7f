"""``R`` in a replay: the run's HTML report, delivered by Textual. In a terminal (here Textual's
headless test driver, which saves as the terminal's does) it is saved in the downloads folder and
the toast names the file; in a browser the download is tests/test_serve_browser.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
from waits import pilot_wait_for as wait_for

from conftest import copy_samples_db
from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens import replay as replay_screen
from edgetui.views.screens.replay import ReplayScreen, report_name

GW_KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"


@pytest.mark.asyncio
async def test_R_saves_the_report_in_the_downloads_folder_and_says_where(samples_template, tmp_path, monkeypatch):
    db = copy_samples_db(samples_template, tmp_path / "s.duckdb")
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    monkeypatch.setattr(replay_screen, "user_downloads_path", lambda: downloads)
    app = EdgeTUIApp(db, GW_KEY)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor, 30, "replay")
        await pilot.press("R")
        out = downloads / "opus48-edge-3-20260312005800-gw_signal_search.report.html"
        await wait_for(pilot, lambda: any("report saved" in n.message for n in app._notifications), 60, "toast")
        assert out.is_file()
        text = out.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>") and "opus48-edge-3-20260312005800" in text
        said = [n.message for n in app._notifications if "report saved" in n.message]
        assert said == [f"report saved: {out}"]


def test_the_report_file_name_keeps_only_safe_characters():
    assert report_name(GW_KEY) == "opus48-edge-3-20260312005800-gw_signal_search"
    assert report_name("10.0.0.7/run 1;rm -rf/task") == "run_1_rm_-rf-task"
    assert report_name("h/../..") == "run"
    assert Path(report_name("x/../../etc/passwd")).name == report_name("x/../../etc/passwd")
