"""Leaderboard screen: the recorded runs per model x @2h...@12h, overall and per category.

The same cells as ``edgetui leaderboard`` (:mod:`edgetui.replay.analysis.leaderboard`), read by a worker
(no I/O here): the mean over the tasks with a value at that hour, repeats first, with the number
of tasks per cell. ``a`` counts every run (samples, infra-error and -retry runs too), ``b``
cycles the grouping (model, run group, run id), ``q`` / Esc go back.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from edgetui.control_chars import visible

from edgetui.replay.analysis.leaderboard import aggregate, left_out, left_out_note, recorded_values
from edgetui.analysis.recorded_curves import fetch_from, load_curves
from edgetui.replay.analysis.task_variants import mixed_note

__all__ = ["LeaderboardScreen"]

HOURS = (2.0, 4.0, 6.0, 8.0, 10.0, 12.0)
GROUPINGS = ("model", "run_group", "run_id")
_SUP = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


class LeaderboardLoaded(Message):
    def __init__(self, cells: list, error: str = "", left: str = "") -> None:
        super().__init__()
        self.cells = cells
        self.error = error
        self.left = left  # how many runs were left out and why (left_out_note), or ""


class LeaderboardScreen(Screen):
    """Per group x hour: value (tasks)."""

    BINDINGS = [
        Binding("a", "toggle_all", "all runs"),
        Binding("b", "cycle_by", "group by"),
        Binding("q,escape", "app.pop_screen", "back"),
    ]

    DEFAULT_CSS = """
    LeaderboardScreen #lb-title { height: auto; padding: 0 1; background: $panel; }
    LeaderboardScreen #lb-table { height: 1fr; border: round $primary 40%; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.include_all = False
        self.by = "model"
        self.cells: list = []
        self.left = ""  # the runs the last load left out, said in the title

    def compose(self) -> ComposeResult:
        yield Static(id="lb-title")
        yield DataTable(id="lb-table", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self._title("loading…")
        self._load(self.include_all, self.by)

    def _title(self, note: str) -> None:
        t = Text("leaderboard", style="bold")
        t.append(f" · by {self.by.replace('_', ' ')} · ", style="dim")
        left = self.left or "samples, infra-error and -retry runs left out"
        t.append("all runs" if self.include_all else f"{left} (a: all)", style="dim")
        t.append("\n(N) or ᴺ = tasks with a value at that hour; mean over them, repeats averaged first", style="dim")
        if note:
            t.append("\n" + visible(str(note)), style="italic yellow")
        self.query_one("#lb-title", Static).update(t)

    @work(thread=True, exclusive=True, group="leaderboard", exit_on_error=False)
    def _load(self, include_all: bool, by: str) -> None:

        try:
            curves = load_curves(fetch_from(self.app.conn))  # type: ignore[attr-defined]
            vals = recorded_values(
                curves, HOURS, by, include_retry=include_all, include_infra=include_all, include_samples=include_all
            )
            counts = left_out(curves, include_retry=include_all, include_infra=include_all, include_samples=include_all)
            left = left_out_note(counts, options=False) or "no run left out"
            self.post_message(LeaderboardLoaded(aggregate(vals), left=left))
        except Exception as e:  # noqa: BLE001 - shown on the screen, never a crash
            self.post_message(LeaderboardLoaded([], f"{type(e).__name__}: {e}"))

    @on(LeaderboardLoaded)
    def _on_loaded(self, msg: LeaderboardLoaded) -> None:
        self.cells = msg.cells
        self.left = msg.left
        table = self.query_one(DataTable)
        table.clear(columns=True)
        # one first column (the group's overall row, then its categories indented) sized to what the
        # six hour columns leave of the screen, so they fit at 80 columns
        width = self.size.width or 80
        narrow = width < 120  # the task count as a superscript: 44.1 ⁵¹ instead of 44.1 (51)
        cell_w = 8 if narrow else 9
        first = max(10, min(40, width - 4 - len(HOURS) * (cell_w + 2)))
        table.add_column(self.by.replace("_", " ") + " / category", width=first)
        for h in HOURS:
            table.add_column(f"@{h:g}h", width=cell_w)
        rows: dict[tuple, dict[float, Any]] = {}
        for c in msg.cells:
            rows.setdefault((c.group, c.category), {})[c.hours] = c

        def cut(text: str, n: int) -> str:
            return text if len(text) <= n else text[: n - 1] + "…"

        for (g, cat), by_h in rows.items():
            label = visible(" ".join(str(x) for x in g))
            name = (
                Text(cut(label, first), style="bold")
                if cat == "overall"
                else Text(cut("  " + visible(str(cat)), first), style="dim")
            )
            cells = [name]
            for h in HOURS:
                c = by_h.get(h)
                n = str(c.n_tasks).translate(_SUP) if c is not None and narrow else f"({c.n_tasks})" if c else ""
                mixed = c is not None and bool(c.mixed_variants)
                cells.append(
                    Text("–", style="dim", justify="right")
                    if c is None or c.score is None
                    else Text(
                        f"{c.score:.1f}{'!' if mixed else ''} {n}", style="yellow" if mixed else "", justify="right"
                    )
                )
            table.add_row(*cells)
        mixed_tasks = sorted({t for c in msg.cells for t in c.mixed_variants})
        note = msg.error or (
            "" if msg.cells else "no runs count here" + ("" if self.include_all else ": a counts every run")
        )
        if mixed_tasks and not msg.error:  # (docs/sforge-formats.md, "Task variants")
            note = (note + "\n" if note else "") + "! " + (mixed_note(mixed_tasks) or "")
        self._title(note)

    def action_toggle_all(self) -> None:
        self.include_all = not self.include_all
        self._title("loading…")
        self._load(self.include_all, self.by)

    def action_cycle_by(self) -> None:
        self.by = GROUPINGS[(GROUPINGS.index(self.by) + 1) % len(GROUPINGS)]
        self._title("loading…")
        self._load(self.include_all, self.by)
