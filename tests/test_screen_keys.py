"""F1 opens the key list on every screen, and ? too where no text input has the focus (issue 37:
the README said "? lists the keys" but in the run picker ? went into the filter, and the compare,
leaderboard, why and moments screens had no key list at all)."""

from __future__ import annotations

from pathlib import Path

import pytest
from waits import pilot_wait_for as wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.compare import CompareScreen
from edgetui.views.screens.leaderboard import LeaderboardScreen
from edgetui.views.screens.moments import WhyScreen
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.screens.replay import ReplayScreen
from edgetui.views.screens.replay_parts import HelpScreen

from conftest import copy_samples_db

SIZES = [(80, 24), (160, 48)]
TWELVE_HOURS = "local/opus48-edge-3-20260312005800/gw_signal_search"


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path_factory.mktemp("keys") / "s.duckdb")


def help_lines(app) -> str:
    """The key list's text (its keys and what they do)."""
    assert isinstance(app.screen, HelpScreen), type(app.screen).__name__
    return "\n".join(f"{k}  {what}" for k, what in app.screen.keys)


async def opens_and_closes(pilot, app, key: str, title: str) -> str:
    """``key`` opens the key list titled ``title`` over the screen on top, esc closes it; returns its text."""
    under = app.screen
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10, f"{key}: the key list over {under}")
    assert app.screen.title_text == title
    text = help_lines(app)
    await pilot.press("escape")
    await wait_for(pilot, lambda: app.screen is under, 10, "back under the key list")
    return text


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_f1_lists_the_keys_on_every_screen(samples_db, size):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.rows, 30, "the picker")
        # the picker: the filter has the focus, so ? is a character of it, and F1 opens the keys
        text = await opens_and_closes(pilot, app, "f1", "Run picker keys")
        assert "enter" in text and "filter" in text
        assert "ctrl+g" in text  # (the footer names it: ^g by run id)
        # the picker's title names the picker, not the replay
        title = str(app.screen.query_one("#picker-title").render())
        assert title.startswith("edgetui · runs") and "replay" not in title, title
        await pilot.press("question_mark")
        await pilot.pause()
        assert app.screen.query_one("#filter").value == "?"
        await pilot.press("escape")  # (clears the filter)
        # the replay: ? and F1
        app.open_run(TWELVE_HOURS)
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor, 30, "the replay")
        for key in ("question_mark", "f1"):
            text = await opens_and_closes(pilot, app, key, "Replay keys")
            assert "reframing moment" in text
            assert "traj N/M improving" in text and "FIRST SUBMISSION" in text  # (the header's metrics explained)
        # the why of a new best (a screen of its own)
        await pilot.press("right_curly_bracket", "w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen), 30, "the why")
        for key in ("question_mark", "f1"):
            text = await opens_and_closes(pilot, app, key, "Why keys")
            assert "next milestone" in text and "F1 / ?" in text
        await pilot.press("escape")
        # the leaderboard (from the palette)
        app.action_leaderboard()
        await wait_for(pilot, lambda: isinstance(app.screen, LeaderboardScreen), 10, "the leaderboard")
        for key in ("question_mark", "f1"):
            text = await opens_and_closes(pilot, app, key, "Leaderboard keys")
            assert "group by" in text and "back" in text


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_f1_and_question_mark_on_the_compare_screen(samples_db, size):
    from edgetui.cli.analysis_commands import compare_view_spec
    from edgetui.store.database import open_db

    conn = open_db(samples_db, read_only=True)
    keys = [
        r[0] for r in conn.execute("SELECT run_key FROM runs WHERE run_id LIKE 'real-%' ORDER BY 1 LIMIT 2").fetchall()
    ]
    conn.close()
    app = EdgeTUIApp(samples_db, compare=compare_view_spec(keys, groups=False))
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.series, 30, "compare")
        for key in ("question_mark", "f1"):
            text = await opens_and_closes(pilot, app, key, "Compare keys")
            assert "where they part" in text and "next change" in text


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_sql_screens_key_list_is_titled_sql_and_written_lower_case(samples_db, size, tmp_path, monkeypatch):
    """Issue 37 trial: the SQL screen's key list read "Sql keys", and Textual's ctrl+q "Quit" was the
    one entry written with a capital."""
    from edgetui.views.screens.sql import SqlScreen

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.rows, 30, "the picker")
        await pilot.press("f6")
        await wait_for(pilot, lambda: isinstance(app.screen, SqlScreen), 30, "the SQL screen")
        await opens_and_closes(pilot, app, "f1", "SQL keys")
        await pilot.press("f1")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 10, "the key list")
        rows = app.screen.keys
        assert ("^q", "quit") in rows, rows
        capitalised = [what for _, what in rows if what[:1].isupper() and not what[1:2].isupper()]
        assert not capitalised, capitalised


def test_the_watch_key_list_names_each_column_once():
    """Issue 37 trial: the watch screen's key list explained "status" and "subs" twice."""
    from edgetui.views.screens.runs import RUNS_KEYS

    named = [k for k, _ in RUNS_KEYS if k]
    assert len(named) == len(set(named)), named
    words = [w for k in named for w in k.replace("·", " ").split() if w in ("status", "subs", "last")]
    assert sorted(words) == ["last", "status", "subs"], words
