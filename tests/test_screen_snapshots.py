"""Snapshots of the main screens at 80x24 and 160x48 on the bundled sample runs: a screen that
renders wrong (a cut legend, a lost column, overlapping text) fails a test.

Each snapshot is the screen's text as the app draws it (Textual's compositor, the same render
``App.export_screenshot`` makes into an SVG), kept in ``tests/screen_snapshots/<name>.txt``.
pytest-textual-snapshot would keep SVGs, but its pinned syrupy (4.8.0) refuses pytest 9
(Textualize/pytest-textual-snapshot#28, #24 unreleased).

When a screen changes on purpose, write the new snapshots and LOOK AT EACH ONE before committing:

    EDGETUI_UPDATE_SNAPSHOTS=1 .venv/bin/pytest -q tests/test_screen_snapshots.py
    git diff tests/screen_snapshots
"""

from __future__ import annotations

import io
import time
import os
from pathlib import Path

import pytest
from rich.console import Console
from waits import pilot_wait_for as wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import HelpScreen, ReplayScreen

from conftest import copy_samples_db

SNAPSHOTS = Path(__file__).resolve().parent / "screen_snapshots"
UPDATE = os.environ.get("EDGETUI_UPDATE_SNAPSHOTS") == "1"
TWELVE_HOURS = "local/opus48-edge-3-20260312005800/gw_signal_search"
SIZES = [(80, 24), (160, 48)]


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    db = tmp_path_factory.mktemp("snap") / "s.duckdb"
    copy_samples_db(samples_template, db)
    return db


def screen_text(app) -> str:
    """The screen as drawn, as text (every line its full width, trailing blanks cut)."""
    width, height = app.size
    console = Console(
        width=width,
        height=height,
        file=io.StringIO(),
        force_terminal=True,
        color_system="truecolor",
        record=True,
        legacy_windows=False,
        safe_box=False,
    )
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return "\n".join(line.rstrip() for line in console.export_text(styles=False).splitlines()) + "\n"


def check(name: str, text: str) -> None:
    path = SNAPSHOTS / f"{name}.txt"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no snapshot {path.name}: write it with EDGETUI_UPDATE_SNAPSHOTS=1 and look at it"
    want = path.read_text(encoding="utf-8")
    assert text == want, f"{name} differs from {path}:\n{text}"


async def check_settled(pilot, app, name: str, within: float = 15.0) -> None:
    """:func:`check` of the screen once it is drawn as the snapshot, re-read every 0.1 s for up to
    ``within`` seconds: a fixed pause left a footer or a row not yet painted under load (two xdist
    workers at load 10), and the test failed on a screen still being drawn. A screen that never
    matches still fails, with the last text."""
    if UPDATE:
        await pilot.pause(0.5)
        check(name, screen_text(app))
        return
    path = SNAPSHOTS / f"{name}.txt"
    want = path.read_text(encoding="utf-8") if path.exists() else None
    deadline = time.monotonic() + within
    text = screen_text(app)
    while text != want and time.monotonic() < deadline:
        await pilot.pause(0.1)
        text = screen_text(app)
    check(name, text)


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_run_picker(samples_db, size, monkeypatch):
    monkeypatch.chdir(samples_db.parent)  # (the header names the database as given: no temp path)
    app = EdgeTUIApp(Path(samples_db.name))
    async with app.run_test(size=size) as pilot:
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) >= 11,
            30,
            "the picker with the 11 sample runs",
        )
        await check_settled(pilot, app, f"picker-{size[0]}x{size[1]}")


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_replay_of_the_12_hour_run(samples_db, size, monkeypatch):
    monkeypatch.chdir(samples_db.parent)
    app = EdgeTUIApp(Path(samples_db.name), TWELVE_HOURS)
    async with app.run_test(size=size) as pilot:
        await wait_for(
            pilot,
            lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None,
            30,
            "the replay loaded",
        )
        await wait_for(pilot, lambda: "events 1/" in screen_text(app), 30, "the first paint")
        # the reframing moments are detected after the first paint: the chart marks them (✦) then
        await wait_for(pilot, lambda: app.screen.moments_part.read, 60, "the moments read")
        await wait_for(pilot, lambda: "✦ reframe" in screen_text(app), 30, "the moments on the chart")
        await check_settled(pilot, app, f"replay-{size[0]}x{size[1]}")
        await pilot.press("]")  # the next submission, its report in the detail pane
        if size[0] < 120:
            await pilot.press("d")  # (a narrow terminal shows the detail pane on demand)
        await wait_for(
            pilot,
            lambda: "Submission report" in screen_text(app),
            30,
            "the submission's report shown",
            describe=lambda: screen_text(app),
        )
        await check_settled(pilot, app, f"replay-submission-{size[0]}x{size[1]}")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 30, "the help screen")
        await check_settled(pilot, app, f"help-{size[0]}x{size[1]}")


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_sql_screen(samples_db, size, monkeypatch, tmp_path):
    from edgetui.views.screens.sql import SqlEditor, SqlScreen

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(samples_db.parent)
    app = EdgeTUIApp(Path(samples_db.name))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) >= 11)
        await pilot.press("f6")
        await wait_for(pilot, lambda: isinstance(app.screen, SqlScreen) and app.screen.words)
        screen = app.screen
        screen.query_one(SqlEditor).text = (
            "SELECT tool_name, count(*) AS calls, count(*) FILTER (failed) AS failed,\n"
            "       round(max(duration_s), 1) AS longest_s\nFROM tool_calls GROUP BY ALL ORDER BY calls DESC"
        )
        await pilot.press("f5")
        await wait_for(pilot, lambda: screen.result is not None and screen.rows and screen.result.done)
        await check_settled(pilot, app, f"sql-{size[0]}x{size[1]}")


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_sql_screens_schema_with_column_meanings(samples_db, size, monkeypatch, tmp_path):
    """The schema tree with a table opened: each column with its type and its meaning (schema 13)."""
    from textual.widgets import Tree

    from edgetui.views.screens.sql import SqlScreen

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(samples_db.parent)
    app = EdgeTUIApp(Path(samples_db.name))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) >= 11)
        await pilot.press("f6")
        await wait_for(pilot, lambda: isinstance(app.screen, SqlScreen) and app.screen.words)
        screen = app.screen
        tree = screen.query_one(Tree)
        await wait_for(pilot, lambda: len(tree.root.children) == 2, what="the schema read")
        if size[0] < 120:
            await pilot.press("ctrl+t")
        views, tables = tree.root.children
        views.collapse()
        node = next(n for n in tables.children if str(n.label) == "submissions")
        node.expand()
        await pilot.pause(0.1)
        tree.focus()
        tree.move_cursor(node)
        tree.scroll_to_node(node, animate=False)
        # the line cut at the tree's width, whole under it for the highlighted column
        pass_rate = next(n for n in node.children if str(n.label).startswith("pass_rate "))
        tree.move_cursor(pass_rate)
        await wait_for(
            pilot,
            lambda: "submissions.pass_rate double" in screen_text(app) and "pass_rate double t" in screen_text(app),
            what="the column's meaning whole under the tree",
        )
        await pilot.pause(0.3)
        text = screen_text(app)
        assert "submissions.pass_rate double" in text and "tests passed ÷ tests, 0–1" in text
        check(f"sql-schema-{size[0]}x{size[1]}", text)
