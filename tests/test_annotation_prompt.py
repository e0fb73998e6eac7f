"""L on an annotated event: the prompt holds its text with the cursor after it and nothing
selected (typing went over it: Textual's input selected all on focus), and emptying it asks before
the annotation is deleted (issue 37)."""

from __future__ import annotations

from pathlib import Path

import pytest
from waits import pilot_wait_for as wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.confirm import ConfirmScreen
from edgetui.views.screens.replay import ReplayScreen

from conftest import copy_samples_db

SIZES = [(80, 24), (160, 48)]
GW_KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"
Q = "SELECT label, text FROM annotations WHERE run_key = ?"


@pytest.fixture
def samples_db(tmp_path, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path / "s.duckdb")


async def type_text(pilot, text: str) -> None:
    names = {" ": "space", ":": "colon", "-": "minus"}
    await pilot.press(*[names.get(ch, ch) for ch in text])


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_L_edits_after_the_old_text_and_asks_before_deleting(samples_db, size):
    app = EdgeTUIApp(samples_db, GW_KEY)
    async with app.run_test(size=size) as pilot:
        screen = await wait_for(
            pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor and app.screen, 30, "replay"
        )
        await wait_for(pilot, lambda: bool(screen.cursor.moment_idx), 60, "the moments")
        await pilot.press("right_parenthesis", "L")
        await type_text(pilot, "reframe: median")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.conn.execute(Q, [GW_KEY]).fetchall() == [("reframe", "median")], 10)
        c = screen.cursor
        await wait_for(pilot, lambda: c.events.event_id[c.index] in screen._annotations, 10, "read back")
        # L again: the old text, the cursor after it, nothing selected; typing goes on from it
        await pilot.press("L")
        prompt = screen.query_one("#prompt")
        await wait_for(pilot, lambda: prompt.has_focus, 10, "the prompt")
        assert prompt.value == "reframe: median"
        assert prompt.selection.is_empty and prompt.cursor_position == len(prompt.value)
        await type_text(pilot, " PSD")
        assert prompt.value == "reframe: median PSD"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.conn.execute(Q, [GW_KEY]).fetchall() == [("reframe", "median PSD")], 10)
        await wait_for(pilot, lambda: screen._annotations[c.events.event_id[c.index]][0]["text"] == "median PSD", 10)
        # emptied: it asks; n keeps the annotation
        await pilot.press("L")
        await wait_for(pilot, lambda: prompt.has_focus, 10, "the prompt")
        await pilot.press("ctrl+u", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the question")
        assert "median PSD" in str(app.screen.message)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen is screen, 10, "back")
        await pilot.pause(0.3)
        assert app.conn.execute(Q, [GW_KEY]).fetchall() == [("reframe", "median PSD")]
        # emptied again, y: deleted
        await pilot.press("L")
        await wait_for(pilot, lambda: prompt.has_focus, 10, "the prompt")
        await pilot.press("ctrl+u", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 10, "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: app.conn.execute(Q, [GW_KEY]).fetchall() == [], 10, "deleted")
