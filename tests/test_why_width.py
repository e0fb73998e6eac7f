"""The why view and the moments list use the terminal's width (issue 37: both cut text at ~70
characters even at 160 columns, half the line empty, and raw ``**…**`` from Codex transcripts
showed in the why)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text
from textual.widgets import OptionList
from waits import pilot_wait_for as wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.moments import HANG, MOMENT_INDENT, MomentsScreen, WhyScreen, why_head_text
from edgetui.views.screens.replay import ReplayScreen

from conftest import copy_samples_db

SIZES = [(80, 24), (160, 48)]
GW_KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"
CODEX_KEY = "10.0.0.7/gpt55-codex-20260402131500/vrp_route_planner"


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path_factory.mktemp("why") / "s.duckdb")


async def open_why(pilot, app, milestones: int = 2) -> WhyScreen:
    await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor, 30, "the replay")
    await pilot.press(*["right_curly_bracket"] * milestones, "w")
    await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen), 30, "the why")
    await wait_for(pilot, lambda: "Code" in app.screen.body_text(), 30, "the why's diff")
    return app.screen


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_why_uses_the_width_with_a_hanging_indent(samples_db, size):
    app = EdgeTUIApp(samples_db, GW_KEY)
    async with app.run_test(size=size) as pilot:
        why = await open_why(pilot, app)
        room = why._text_width()
        lines = why.body_text().split("\n")
        assert max(len(ln) for ln in lines) <= room
        # an action sample takes the rest of its line (it was cut at 70 cells whatever the width)
        head = "What the agent did"
        actions = lines[lines.index(head) + 1 : lines.index("", lines.index(head))]
        assert any(ln.rstrip().endswith("…") for ln in actions)  # (this milestone's samples are long)
        assert max(len(ln) for ln in actions) >= room - 6, actions
        # a note wrapped onto more lines goes on 2 cells further in than it starts
        notes = lines[lines.index("Its thinking") + 1 : lines.index("Its last messages")]
        starts = [ln for ln in notes if ln.startswith("  ") and not ln.startswith("   ")]
        wrapped = [ln for ln in notes if ln.startswith(" " * (2 + HANG)) and ln.strip()]
        assert starts and wrapped, notes
        assert all(not ln.startswith(" " * (3 + HANG)) for ln in wrapped), notes


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_codex_markdown_bold_is_shown_bold_not_as_asterisks(samples_db, size):
    app = EdgeTUIApp(samples_db, CODEX_KEY)
    async with app.run_test(size=size) as pilot:
        why = await open_why(pilot, app)
        text = why.body_text()
        assert "Planning the next improvement" in text
        assert "**Planning" not in text and "improvement**" not in text
        # a command's asterisks are its own (which commands the view samples depends on the events' order)
        cmd = "$ /bin/bash -lc 'apply_patch <<EOF *** Begin Patch *** Update File: a.py *** End Patch EOF'"
        mine = dict(why.why, actions={"other": {"n": 1, "examples": [cmd]}})
        assert "*** Begin Patch *** Update File: a.py" in why_head_text(mine, 200).plain
        t = why_head_text(why.why, why._text_width())
        at = t.plain.index("Its thinking")
        bold = [t.plain[s.start : s.end] for s in t.spans if s.start > at and "bold" in str(s.style)]
        assert "Planning the next improvement" in bold, bold


def test_markdown_in_a_note_never_becomes_markup_or_control_sequences():
    why = {
        "round": "agent-2",
        "before": 1.0,
        "after": 2.0,
        "actions": {},
        "notes": {"thinking": [{"text": "**[bold red]x[/] \x1b[31mred\x1b[0m** and **ok**"}]},
    }
    t = why_head_text(why, 120)
    assert isinstance(t, Text)
    assert "[bold red]x[/]" in t.plain and "\x1b" not in t.plain and "**" not in t.plain


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_moments_list_shows_every_sub_score_in_the_width(samples_db, size):
    app = EdgeTUIApp(samples_db, GW_KEY)
    async with app.run_test(size=size) as pilot:
        screen = await wait_for(
            pilot,
            lambda: isinstance(app.screen, ReplayScreen) and app.screen.moments_part.read and app.screen,
            60,
            "moments",
        )
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MomentsScreen), 20, "the moments list")
        await pilot.pause()
        ol = app.screen.query_one(OptionList)
        shown = [ol.render_line(y).text.rstrip() for y in range(ol.virtual_size.height)]
        text = "\n".join(shown)
        assert "…" not in text
        for m in screen.moments_part.moments:
            for name, (x, y) in m["components"].items():
                assert f"{name} {x:g}→{y:g}" in text, (name, text)
        assert max(len(ln) for ln in shown) <= size[0]
        rows = [ln for ln in shown if ln.strip()]
        if size[0] >= 160:
            assert len(rows) == len(screen.moments_part.moments)  # one line a moment
        else:  # the rest goes on under the elapsed time, never where a round starts
            more = [ln for ln in rows if not ln.lstrip().startswith("agent-")]
            assert more and all(ln.startswith(" " * MOMENT_INDENT) for ln in more), rows
