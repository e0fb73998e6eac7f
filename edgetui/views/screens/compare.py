"""Compare screen: two or more runs (or run groups) on one chart, stepped together.

The series are :class:`edgetui.replay.analysis.compare.Series` (read by a worker through
:mod:`edgetui.analysis.recorded_curves`; no I/O here), drawn on one elapsed-time axis and one score axis
with a cursor; the values of all of them at the cursor and the first point where their
best-so-far curves part are shown beneath. Keys: ``l`` / ``→`` and ``h`` / ``←`` move the
cursor by a hundredth of the longest run, ``]`` / ``[`` to the next / previous change of any
curve, ``p`` to where they part, ``g`` / ``G`` to the start / end, ``q`` / Esc back (out of the app when opened by ``compare --view``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from edgetui.store.database import lift_pool_on
from edgetui.control_chars import visible
from edgetui.views.plot_figure import new_figure

from edgetui.replay.cursor import format_elapsed

from edgetui.replay.analysis.compare import group_series, series_of_run
from edgetui.replay.analysis.score_at import run_group_key
from edgetui.analysis.recorded_curves import fetch_from, load_curves
from edgetui.replay.analysis.compare import parting_point
from edgetui.replay.analysis.compare import values_at

__all__ = ["CompareScreen"]

COLOURS = (33, 208, 40, 170, 45, 196)


class CompareLoaded(Message):
    def __init__(self, series: list, error: str = "") -> None:
        super().__init__()
        self.series = series
        self.error = error


class CompareScreen(Screen):
    """Runs (``run_keys``) or run groups (``groups``: run group keys) aligned by elapsed time."""

    BINDINGS = [
        Binding("l,right", "move(1)", "later"),
        Binding("h,left", "move(-1)", "earlier"),
        Binding("right_square_bracket", "change(1)", "next change", key_display="]"),
        Binding("left_square_bracket", "change(-1)", "prev change", key_display="["),
        Binding("p", "parting", "where they part"),
        Binding("g,home", "edge(0)", "start", show=False),
        Binding("G,end", "edge(1)", "end", show=False),
        Binding("q,escape", "back", "back"),
    ]

    DEFAULT_CSS = """
    CompareScreen #cmp-title { height: auto; padding: 0 1; background: $panel; }
    CompareScreen #cmp-chart { height: 1fr; border: round $primary 40%; }
    CompareScreen #cmp-values { height: auto; padding: 0 1; }
    """

    def __init__(self, run_keys: Sequence[str] = (), groups: Sequence[str] = (), direct: bool = False) -> None:
        """``direct``: opened by ``edgetui compare --view`` (``q`` quits: there is nothing to go back to)."""
        super().__init__()
        self.direct = direct
        self.run_keys = list(run_keys)
        self.groups = list(groups)
        self.series: list = []
        self.at = 0.0  # the cursor, seconds of elapsed time
        self.part: Optional[tuple] = None
        self.error = ""
        self._figure: Any = (
            None  # this screen's own plotext figure (edgetui.views.plot_figure), made at the first chart
        )

    def compose(self) -> ComposeResult:
        yield Static("loading…", id="cmp-title")
        yield Static(id="cmp-chart")
        yield Static(id="cmp-values")
        yield Footer()

    def on_mount(self) -> None:
        self._load()

    def action_back(self) -> None:
        if self.direct:
            self.app.exit()
        else:
            self.app.pop_screen()

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def _load(self) -> None:

        try:
            fetch = fetch_from(self.app.conn)  # type: ignore[attr-defined]
            if self.groups:
                curves = load_curves(fetch)
                series = [group_series(g, [c for c in curves if run_group_key(c.run_id) == g]) for g in self.groups]
            else:
                by = {c.run_key: c for c in load_curves(fetch, self.run_keys)}
                series = [series_of_run(by[k]) for k in self.run_keys if k in by]
            self.post_message(CompareLoaded(series))
        except Exception as e:  # noqa: BLE001 - shown on the screen, never a crash
            if lift_pool_on(getattr(self.app, "conn", None), e):  # (a bounded buffer pool, lifted: again)
                self.app.call_from_thread(self._load)
                return
            self.post_message(CompareLoaded([], f"{type(e).__name__}: {e}"))

    @on(CompareLoaded)
    def _on_loaded(self, msg: CompareLoaded) -> None:

        self.series, self.error = msg.series, msg.error
        self.part = parting_point(self.series) if len(self.series) > 1 else None
        self.at = self.part[0] if self.part else 0.0
        self._draw()

    @property
    def span_s(self) -> float:
        ends = [s.end_s or (s.steps[-1][0] if s.steps else 0.0) for s in self.series]
        return max(ends + [1.0])

    def _changes(self) -> list[float]:
        return sorted({t for s in self.series for t, _ in s.steps})

    def action_move(self, step: int) -> None:
        self.at = min(self.span_s, max(0.0, self.at + step * self.span_s / 100))
        self._draw()

    def action_change(self, step: int) -> None:
        times = self._changes()
        nxt = [t for t in times if t > self.at + 1e-9] if step > 0 else [t for t in times if t < self.at - 1e-9]
        if nxt:
            self.at = nxt[0] if step > 0 else nxt[-1]
            self._draw()

    def action_parting(self) -> None:
        if self.part:
            self.at = self.part[0]
            self._draw()

    def action_edge(self, end: int) -> None:
        self.at = self.span_s if end else 0.0
        self._draw()

    # ------------------------------------------------------------------ drawing (no I/O)

    def _draw(self) -> None:

        if not self.is_mounted:
            return
        title = Text("compare", style="bold")
        title.append(f" · {len(self.series)} curves · one elapsed-time axis, one score axis (0–100)", style="dim")
        if self.error:
            title.append("\n" + visible(str(self.error)), style="italic red")
        elif len(self.series) < 2:
            title.append("\nneeds two or more runs with graded submissions", style="italic yellow")
        self.query_one("#cmp-title", Static).update(title)
        chart = self.query_one("#cmp-chart", Static)
        w, h = max(20, chart.size.width - 2), max(6, chart.size.height - 2)
        chart.update(self._chart(w, h) if self.series else Text(""))
        vals = values_at(self.series, self.at)
        t = Text(f"at {format_elapsed(self.at)}: ", style="bold")
        for i, (s, v) in enumerate(zip(self.series, vals)):
            if i:
                t.append("  ")
            t.append("━ ", style=f"color({COLOURS[i % len(COLOURS)]})")
            t.append(f"{visible(str(s.name))} ", style="")
            t.append("–" if v is None else f"{v:.2f}", style="bold")
        if self.part:
            t.append(f"\nthey part at {format_elapsed(self.part[0])}", style="magenta")
        elif len(self.series) > 1:
            t.append("\ntheir best-so-far curves never part", style="dim")
        self.query_one("#cmp-values", Static).update(t)

    def _chart(self, w: int, h: int) -> Text:
        # lazy: plotext loads with the first chart drawn, after the first paint
        import plotext as plt

        if self._figure is None:
            self._figure = new_figure()
        f = self._figure
        f.clear()
        f.theme("simple")
        f.plot_size(w, h)
        for i, s in enumerate(self.series[: len(COLOURS)]):
            pts = [(t / 3600.0, v) for t, v in s.steps if v is not None]
            if not pts:
                continue
            xs: list[float] = []
            ys: list[float] = []
            for k, (x, y) in enumerate(pts):  # steps: each value holds until the next
                if k:
                    xs.append(x)
                    ys.append(ys[-1])
                xs.append(x)
                ys.append(y)
            end = (s.end_s or 0.0) / 3600.0
            if end > xs[-1]:
                xs.append(end)
                ys.append(ys[-1])
            sig = f.signal(xs, ys, marker=plt.marker("braille", pixel=(COLOURS[i], "default")))
            sig.lines()
            f.draw(sig)
        f.line(self.at / 3600.0, orientation="vertical", pixel=(250, "default"), style="dotted")
        return Text.from_ansi(f.build().string())
