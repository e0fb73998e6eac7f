"""The run picker's filter keeps every key of a burst in order (issue 37: a backspace typed among
other keys in one terminal read deleted a character typed after it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events
from waits import pilot_wait_for as wait_for

from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.picker import PickerScreen

from conftest import copy_samples_db

SIZES = [(80, 24), (160, 48)]
NAMES = {"-": "minus", " ": "space"}


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path_factory.mktemp("burst") / "s.duckdb")


def burst(app, keys: list[str]) -> None:
    """Post ``keys`` to the app at once, as the terminal driver does with the keys of one read."""
    for k in keys:
        ch = k if len(k) == 1 else None
        app.post_message(events.Key(NAMES.get(k, k), ch))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_a_burst_of_keys_with_backspaces_keeps_every_key_in_order(samples_db, size):
    app = EdgeTUIApp(samples_db)
    async with app.run_test(size=size) as pilot:
        picker = await wait_for(
            pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.rows and app.screen, 30, "the picker"
        )
        f = picker.query_one("#filter")
        burst(app, [*"opus", "backspace", *"s48", "backspace", "backspace", *"48-e"])
        await wait_for(pilot, lambda: f.value == "opus48-e", 10, "the filter typed", describe=lambda: f.value)
        await wait_for(pilot, lambda: [r["run_id"] for r in picker.shown] == ["opus48-edge-3-20260312005800"], 10)
        # the cursor moves and deletes too: ← ← delete home x end ⌫ (in one read)
        burst(app, ["left", "left", "delete", "home", "x", "end", "backspace"])
        await wait_for(pilot, lambda: f.value == "xopus48", 10, "edited in order", describe=lambda: f.value)
        # and Enter after a burst opens the run the burst chose
        f.value = ""
        await pilot.pause()
        burst(app, [*"gpx", "backspace", *"t55", "enter"])
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ReplayScreen", 30, "the replay")
        assert app.screen.run_key.endswith("gpt55-codex-20260402131500/vrp_route_planner")
