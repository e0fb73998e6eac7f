"""The hosts view's relative times (since, next retry) count on while it is open, between the
supervisor's snapshots (which come only when something changed): Pilot, a clock the test moves."""

from __future__ import annotations

import pytest
from textual.app import App

from edgetui.live.remote_hosts import HostRow
from edgetui.views.screens.hosts import HostsScreen


class _Host(App):
    def __init__(self, screen):
        super().__init__()
        self._screen = screen

    def on_mount(self) -> None:
        self.push_screen(self._screen)


@pytest.mark.asyncio
async def test_the_hosts_view_counts_since_and_retry_on_between_snapshots():
    now = [1_000_000.0]
    row = HostRow("gpu16", "down", None, 1_000_000.0 - 5, 1_000_000.0 + 30, "connection refused", 6, "none")
    view = HostsScreen([row], clock=lambda: now[0])
    app = _Host(view)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()

        def body() -> str:  # what the Static shows now, as text
            from rich.console import Console

            c = Console(width=118, record=True, file=open("/dev/null", "w"))
            c.print(view.query_one("#hosts-body").content)
            return c.export_text()

        assert "(5s)" in body() and "in 30s" in body()
        now[0] += 12  # no new snapshot: only time passes
        for _ in range(30):
            await pilot.pause(0.1)
            if "(17s)" in body():
                break
        assert "(17s)" in body() and "in 18s" in body(), body()


@pytest.mark.asyncio
async def test_the_runs_screen_names_a_host_that_is_down_and_has_no_runs(tmp_path):
    """A down host with no run has no row on the runs screen: its title line names it, as the hosts
    view would (issue 36 item 11); a host up, or down with runs (their rows show it), is not named."""
    from test_live_screens import LiveApp
    from waits import pilot_wait_for

    from edgetui.views.screens.runs import RunsScreen, RunsUpdated

    rows = [
        HostRow("gpu16", "down", None, 1_000_000.0, 1_000_030.0, "connection refused", 0, "none"),
        HostRow("lab", "up", 0.003, 1_000_000.0, None, "me@lab", 0, "none"),
        HostRow("busy", "down", None, 1_000_000.0, 1_000_030.0, "connection refused", 2, "none"),
    ]
    app = LiveApp(tmp_path / "live.duckdb")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot_wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), what="the runs screen")
        screen = app.screen
        screen.post_message(RunsUpdated([], [], hosts=rows))

        def title() -> str:
            return str(screen.query_one("#runs-title").content)

        await pilot_wait_for(pilot, lambda: "gpu16" in title(), what="the down host named", describe=title)
        assert "✗ gpu16 down since 13:46:40 UTC" in title(), title()
        assert "lab" not in title() and "busy" not in title(), title()


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_f1_and_question_mark_list_the_keys_of_the_hosts_view_and_the_alarm_list(size):
    """The hosts view and the alarm list are modal screens, which the app's own F1 / ? never
    reached (a README trial): each lists its own keys, and the key again closes the list."""
    import time

    from edgetui.live.model import Alarm
    from edgetui.views.screens.live_common import AlarmsScreen
    from edgetui.views.screens.replay_parts import HelpScreen

    row = HostRow("gpu16", "down", None, 1_000_000.0 - 5, 1_000_000.0 + 30, "connection refused", 6, "none")
    alarm = Alarm(run_key="h/r/t", rule="stall", t=time.time() - 600, message="no growth for 15 min")
    for view in (HostsScreen([row]), AlarmsScreen([alarm], time.time(), states={})):
        app = _Host(view)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            for key in ("f1", "question_mark"):
                await pilot.press(key)
                for _ in range(50):
                    if isinstance(app.screen, HelpScreen):
                        break
                    await pilot.pause(0.05)
                assert isinstance(app.screen, HelpScreen), (type(view).__name__, key)
                listed = dict((w, k) for k, w in app.screen.keys)
                assert listed.get("close", "").startswith("esc"), (type(view).__name__, app.screen.keys)
                await pilot.press(key)
                for _ in range(50):
                    if app.screen is view:
                        break
                    await pilot.pause(0.05)
                assert app.screen is view, (type(view).__name__, key)
