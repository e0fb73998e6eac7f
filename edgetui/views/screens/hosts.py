"""The hosts view (``H`` on the runs screen): this machine and every remote host, with its connection
state, round trip, since when, next retry, runs count and engine state, refreshed with each
supervisor snapshot (rows: :class:`edgetui.live.remote_hosts.HostRow`; no I/O here)."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from edgetui.control_chars import visible
from edgetui.views.screens.replay_parts import HelpScreen
from edgetui.views.screens.screen_keys import HELP_KEYS, binding_keys

#: state → (mark, style) as the runs screen's host column shows them
_MARKS = {
    "up": ("●", "green"),
    "local": ("●", "green"),
    "degraded": ("◐", "yellow"),
    "connecting": ("…", "dim"),
    "down": ("✗", "red"),
    "auth failed": ("✗", "red"),
    "host key refused": ("✗", "red"),
    "forbidden": ("✗", "red"),
    "closed": ("-", "dim"),
}


def _span(s: float) -> str:
    s = max(0, int(s))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def host_cells(row: Any, now: float) -> tuple[str, str, str, str, str, str, str]:
    """(host, state, round trip, since, next retry, runs, engine) texts of one
    :class:`~edgetui.live.remote_hosts.HostRow` at ``now`` (epoch UTC seconds)."""
    mark = _MARKS.get(row.kind, ("?", ""))[0]
    rtt = f"{row.rtt_s * 1000:.0f} ms" if row.rtt_s is not None else ""
    since = ""
    if row.since is not None:
        since = time.strftime("%H:%M:%S", time.gmtime(row.since)) + f" ({_span(now - row.since)})"
    retry = ""
    if row.next_retry is not None and row.kind in ("down", "auth failed", "host key refused", "forbidden"):
        retry = f"in {_span(row.next_retry - now)}"
    return (row.name, f"{mark} {row.kind}", rtt, since, retry, str(row.runs), row.engine)


def hosts_table(rows: Sequence[Any], now: float) -> Any:
    """A rich renderable of the rows (a table; each host that is not up gets its message below it)."""
    if not rows:
        return Text("no hosts (edgetui watch --host user@host:/path, or hosts.toml)", style="dim")
    t = Table(box=None, pad_edge=False, expand=True, show_edge=False, padding=(0, 1))
    for name, kw in (
        ("host", dict(no_wrap=True, overflow="ellipsis", max_width=18)),
        ("state", dict(no_wrap=True)),
        ("rtt", dict(no_wrap=True, justify="right")),
        ("since (UTC)", dict(no_wrap=True)),
        ("retry", dict(no_wrap=True)),
        ("runs", dict(no_wrap=True, justify="right")),
        ("engine", dict(no_wrap=True, overflow="ellipsis", ratio=1)),
    ):
        t.add_column(name, **kw)
    notes = []
    for r in rows:
        cells = host_cells(r, now)
        style = _MARKS.get(r.kind, ("", ""))[1]
        t.add_row(Text(visible(cells[0])), Text(visible(cells[1]), style=style), *(Text(visible(c)) for c in cells[2:]))
        if r.kind not in ("up", "local") and r.message:
            notes.append(Text(visible(f"{r.name}: {r.message}"), style="dim"))
    return Group(t, *notes) if notes else t


class HostsScreen(ModalScreen[None]):
    """The hosts view over the runs screen; :meth:`update_hosts` takes new rows (each snapshot)."""

    BINDINGS = [Binding("escape,q,H", "dismiss", "close"), Binding(HELP_KEYS, "help", "keys", show=False)]
    DEFAULT_CSS = """
    HostsScreen { align: center middle; background: $background 60%; }
    HostsScreen > Vertical { width: 96%; max-width: 160; height: auto; max-height: 90%;
        border: round $primary; background: $panel; padding: 0 1; }
    HostsScreen VerticalScroll { height: auto; max-height: 100%; }
    """

    def __init__(self, rows: Sequence[Any] = (), clock: Optional[Callable[[], float]] = None) -> None:
        super().__init__()
        self.rows = list(rows)
        self.clock = clock or time.time

    def compose(self) -> ComposeResult:
        with Vertical() as v:
            v.border_title = f"Hosts ({len(self.rows)})"
            v.border_subtitle = "esc closes"
            with VerticalScroll():
                yield Static(hosts_table(self.rows, self.clock()), id="hosts-body")

    def on_mount(self) -> None:
        # "since (12s)" and "retry in 30s" count on between snapshots (which come only on a change)
        self.set_interval(1.0, self._repaint)

    def _repaint(self) -> None:
        if self.is_mounted:
            self.query_one("#hosts-body", Static).update(hosts_table(self.rows, self.clock()))

    def update_hosts(self, rows: Sequence[Any]) -> None:
        self.rows = list(rows)
        if self.is_mounted:
            self._repaint()
            self.query_one(Vertical).border_title = f"Hosts ({len(self.rows)})"

    def action_help(self) -> None:
        """``F1`` / ``?``: this view's keys (a modal screen: the app's own F1 does not reach it)."""
        self.app.push_screen(HelpScreen(binding_keys(self), title="Hosts keys"))

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)
