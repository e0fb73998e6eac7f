"""Reframing moments in the replay screen, through Textual's Pilot on the bundled 12-hour sample:
✦ markers on the chart, ( / ) between moments, M lists them and enter jumps to one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.text import Text

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.replay import MomentsScreen, ReplayScreen
from edgetui.views.widgets import ScoreChart
from edgetui.views.widgets.chart import MOMENT_MARKER

from test_replay_app import loaded, wait_for

from conftest import copy_samples_db

ROOT = Path(__file__).resolve().parents[1]
GW_TRUTH = ROOT / "sample_runs" / "_truth" / "opus48-edge-3-20260312005800__gw_signal_search.json"
GW_KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory, samples_template) -> Path:
    db = tmp_path_factory.mktemp("mreplay") / "s.duckdb"
    copy_samples_db(samples_template, db)
    return db


def _selected(screen: ReplayScreen) -> tuple[str, str]:
    c = screen.cursor
    return c.kind[c.index], c.round[c.index]


@pytest.mark.asyncio
async def test_keys_step_between_the_reframing_moments_and_the_chart_marks_them(sample_db):
    rounds = [m["round"] for m in json.loads(GW_TRUTH.read_text())["reframing_moments"]]
    app = EdgeTUIApp(sample_db, GW_KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: [m["round"] for m in screen.moments_part.moments] == rounds)  # read after the run
        chart = screen.query_one(ScoreChart)
        after = {s["round"]: s["best_score"] for s in screen.subs}
        assert [y for _, y in chart.data.moments] == [after[r] for r in rounds]
        await pilot.pause()
        text = "\n".join(Text.from_ansi(x).plain for x in chart._ensure_built().lines)
        assert text.count(MOMENT_MARKER) == 3
        assert f"{MOMENT_MARKER} reframe" in str(chart.border_subtitle)
        await pilot.press("right_parenthesis")
        assert _selected(screen) == ("judge_result", rounds[0])
        await pilot.press("right_parenthesis", "right_parenthesis")
        assert _selected(screen) == ("judge_result", rounds[2])
        await pilot.press("right_parenthesis")  # no later one: it stays
        assert _selected(screen) == ("judge_result", rounds[2])
        await pilot.press("left_parenthesis")
        assert _selected(screen) == ("judge_result", rounds[1])
        # the chart cursor follows
        assert chart.cursor_elapsed == screen.cursor.position()
        await pilot.press("g", "M")
        await wait_for(pilot, lambda: isinstance(app.screen, MomentsScreen))
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen))
        assert _selected(screen) == ("judge_result", rounds[2])


@pytest.mark.asyncio
async def test_M_pressed_as_the_replay_opens_is_done_once_the_run_is_read_and_rows_stay_one_line(sample_db):
    """M before the run's cursor exists (nothing painted yet) was dropped; and at 160 columns a
    moment with two moved sub-scores wrapped onto a second line that read like another row."""
    app = EdgeTUIApp(sample_db, GW_KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen))
        screen = app.screen
        assert screen.cursor is None  # pressed before the run is read
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(app.screen, MomentsScreen), timeout=20)
        await pilot.pause()
        from textual.widgets import OptionList

        ol = app.screen.query_one(OptionList)
        assert ol.option_count == len(screen.moments_part.moments) == 3
        assert ol.virtual_size.height == ol.option_count  # one line a moment: at 160 columns each fits whole
        lines = [ol.render_line(y).text for y in range(ol.option_count)]
        assert all(len(ln.rstrip()) <= ol.content_region.width and "…" not in ln for ln in lines)


@pytest.mark.asyncio
async def test_a_run_without_reframing_moments_says_so(sample_db):
    app = EdgeTUIApp(sample_db, "local/judge-demo-001/judge_demo_sum")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        await pilot.pause(0.5)
        assert screen.moments_part.moments == [] and screen.query_one(ScoreChart).data.moments == []
        before = screen.cursor.index
        await pilot.press("right_parenthesis", "M")
        await pilot.pause()
        assert screen.cursor.index == before and not isinstance(app.screen, MomentsScreen)


@pytest.mark.asyncio
async def test_L_annotates_the_selected_moment_on_its_judge_result(sample_db):
    app = EdgeTUIApp(sample_db, GW_KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: bool(screen.cursor.moment_idx))
        await pilot.press("right_parenthesis", "L")
        for ch in "reframe: median PSD":
            await pilot.press("space" if ch == " " else "colon" if ch == ":" else ch)
        await pilot.press("enter")
        q = "SELECT round, label, text, event_id FROM annotations WHERE run_key = ?"
        await wait_for(pilot, lambda: app.conn.execute(q, [GW_KEY]).fetchall() != [])
        ((rnd, label, text, eid),) = app.conn.execute(q, [GW_KEY]).fetchall()
        c = screen.cursor
        assert (rnd, label, text) == ("agent-52", "reframe", "median PSD") and eid == c.events.event_id[c.index]
        # L again on the annotated moment: its label and note to edit
        await wait_for(pilot, lambda: eid in screen.moments_part.annotations)
        # the detail pane shows the annotation of the selected event (it said nothing before)
        from edgetui.views.widgets import EventDetail

        def pane() -> str:
            from rich.console import Console

            from edgetui.views.widgets.detail import render_detail

            con = Console(width=100, record=True, file=open("/dev/null", "w"))
            con.print(render_detail(screen.query_one(EventDetail).detail))
            return con.export_text()

        await wait_for(pilot, lambda: "✎ reframe: median PSD" in pane())
        await pilot.press("L")
        prompt = screen.query_one("#prompt")
        assert prompt.value == "reframe: median PSD" and "emptied: delete" in prompt.placeholder
        prompt.value = "bug fix: the PSD window"
        await pilot.press("enter")
        await wait_for(
            pilot, lambda: app.conn.execute(q, [GW_KEY]).fetchall() == [("agent-52", "bug fix", "the PSD window", eid)]
        )
        # a bad label is said, nothing written
        await wait_for(pilot, lambda: screen.moments_part.annotations[eid][0]["label"] == "bug fix")
        await pilot.press("L")
        prompt.value = "<"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.conn.execute(q, [GW_KEY]).fetchall() == [("agent-52", "bug fix", "the PSD window", eid)]
        # emptied: deleted
        await pilot.press("L")
        assert prompt.value == "bug fix: the PSD window"
        prompt.value = ""
        await pilot.press("enter")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")  # (asked first)
        await pilot.press("y")
        await wait_for(pilot, lambda: app.conn.execute(q, [GW_KEY]).fetchall() == [])
        await wait_for(pilot, lambda: eid not in screen.moments_part.annotations)
        await wait_for(pilot, lambda: "✎" not in pane())
        await pilot.press("L")  # nothing left to edit: a new one
        assert prompt.value == "" and "emptied" not in prompt.placeholder
        await pilot.press("escape")


@pytest.mark.asyncio
async def test_the_moments_queue_steps_through_unlabelled_moments_across_runs(tmp_path, samples_template):
    from edgetui.views.screens.moments import QueueScreen

    db = tmp_path / "q.duckdb"
    copy_samples_db(samples_template, db)
    app = EdgeTUIApp(db)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.action_moments_queue()
        await wait_for(pilot, lambda: isinstance(app.screen, QueueScreen) and app.screen.entries)
        queue = app.screen
        # (the gitlet sample's reframes at agent-9 and auto-3 come first: with its failed-grading round
        # agent-7 no input to the detectors, an invalid round, they are found; docs/sforge-formats.md)
        gitlet = "local/7c1e94d2a0b3/gitlet_vcs"
        assert [(e["run_key"], e["round"]) for e in queue.entries] == [(gitlet, "agent-9"), (gitlet, "auto-3")] + [
            (GW_KEY, r) for r in ("agent-52", "agent-85", "agent-167")
        ]
        await pilot.press("down", "down", "down", "enter")  # agent-85
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None)
        screen = app.screen
        assert _selected(screen) == ("judge_result", "agent-85")
        await pilot.press("L", *"tuning", "enter")
        await wait_for(pilot, lambda: app.conn.execute("SELECT count(*) FROM annotations").fetchone()[0] == 1)
        await pilot.press("q")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, QueueScreen)
                and [e["round"] for e in app.screen.entries] == ["agent-9", "auto-3", "agent-52", "agent-167"]
            ),
        )


@pytest.mark.asyncio
async def test_the_live_run_screen_marks_the_moments_found_online(sample_db):
    import time

    from edgetui.views.screens.live_run import LiveRunScreen

    rounds = [m["round"] for m in json.loads(GW_TRUTH.read_text())["reframing_moments"]]
    app = EdgeTUIApp(sample_db)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = LiveRunScreen(GW_KEY, live=None, now=time.time)
        app.push_screen(screen)
        await wait_for(pilot, lambda: screen.is_mounted and screen.cursor is not None)
        await wait_for(pilot, lambda: [m["round"] for m in screen.moments_part.moments] == rounds)
        assert not any(m["provisional"] for m in screen.moments_part.moments)
        assert [y for _, y in screen.query_one(ScoreChart).data.moments] == [
            m["score_after"] for m in screen.moments_part.moments
        ]
        await pilot.press("g", "right_parenthesis")
        c = screen.cursor
        assert (c.kind[c.index], c.round[c.index]) == ("judge_result", rounds[0])
