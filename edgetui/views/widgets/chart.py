"""Score chart: best-so-far step line, submissions, time budget and a time cursor.

The figure is drawn with plotext (its master figure, so only ever on the UI
thread, inside ``render_line``), converted from ANSI to Rich segments once per
(data, size), and cached. The time cursor is an overlay on the cached lines:
moving it costs one column of a few strips, never a plotext build.

Coordinates: x is elapsed **hours** from ``x_min = 0`` to :attr:`ScoreChart.x_max`;
plotext centres the limits on the first and last canvas cells, so elapsed
``e`` seconds sits at column ``canvas_left + round(e/3600 / x_max × (canvas_width − 1))``
(:meth:`ScoreChart.column_for`).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from edgetui.quantities import lower_is_better

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget
from edgetui.views.widgets.fmt import finite
from edgetui.replay.invalid_rounds import is_invalid
from edgetui.views.plot_figure import new_figure

__all__ = [
    "ChartData",
    "MODES",
    "ScoreChart",
    "chart_data",
    "fit_legend",
    "fitted_range",
    "legend_text",
    "series_style",
]

CURSOR_STYLE = Style(color="bright_yellow", bold=True)
CURSOR_BG = Style(bgcolor="grey30")
#: series colours as 256-colour codes: plotext takes the code, the legend the same code as a Rich
#: colour, so the two can never disagree (plotext ignores colour names it does not know)
BEST_COLOR = 2  # green
AGENT_COLOR = 11  # bright yellow
AUTO_COLOR = 12  # bright blue
BUDGET_COLOR = 1  # red
AXES_COLOR = 244
AGENT_MARKER = "◆"
AUTO_MARKER = "•"
LOW_MARKER = "▾"  # a score below the fitted range, drawn at its lower edge (▼ ▲ are the cursor's)
HIGH_MARKER = "▴"  # above it, at the upper edge
MOMENT_MARKER = "✦"  # a reframing moment, at its new best (replay/moments.py)
MOMENT_COLOR = 13  # bright magenta
INVALID_MARKER = "╵"  # an invalid round (docs/sforge-formats.md, "Invalid rounds"): a grey tick on the x axis
INVALID_COLOR = 244  # grey
#: more markers than this (or two per canvas column) are thinned: per column the lowest and highest
THIN_ABOVE = 200
_SENTINEL = 1e100

#: the y quantities the chart can show (``v`` cycles them): raw score, pass rate, rescaled 0-100
MODES = ("score", "pass", "rescaled")
MODE_LABELS = {"score": "score", "pass": "pass %", "rescaled": "rescaled 0–100"}


def series_style(color: int, bold: bool = False) -> Style:
    """The Rich style of a series colour (legend, tests): the code plotext draws with."""
    return Style(color=f"color({color})", bold=bold)


def legend_text(data: "ChartData") -> Text:
    """The chart's legend, in the very colours of its series."""
    legend = Text()
    legend.append("━ best", style=series_style(BEST_COLOR))
    legend.append(f"  {AGENT_MARKER} agent", style=series_style(AGENT_COLOR))
    legend.append(f"  {AUTO_MARKER} auto-eval", style=series_style(AUTO_COLOR))
    if data.invalid:
        legend.append(f"  {INVALID_MARKER} invalid", style=series_style(INVALID_COLOR))
    if data.outliers:
        legend.append(f"  {LOW_MARKER}{HIGH_MARKER} off scale", style="dim")
    if data.moments:
        legend.append(f"  {MOMENT_MARKER} reframe", style=series_style(MOMENT_COLOR, bold=True))
    if data.budget_h:
        legend.append("  ┊ budget", style=series_style(BUDGET_COLOR))
    legend.append("  │ cursor", style="bold bright_yellow")
    if len(data.modes) > 1:
        legend.append("  v: view", style="dim")  # (the chart's title names the quantity shown)
    return legend


#: shorter names of legend entries, for a legend too long for the chart's border
_LEGEND_SHORT = {"auto-eval": "auto", "off scale": "off"}
#: legend entries left out, in turn, when even the short legend does not fit (both are said in the help)
_LEGEND_DROP = ("v: view", "│ cursor")


def fit_legend(legend: Text, room: int) -> Text:
    """``legend`` (:func:`legend_text`) in ``room`` cells: as it is when it fits, else its entries
    one space apart, then with shorter names (``• auto``, ``▾▴ off``), then without ``v: view`` and
    ``│ cursor``. (A border holds one line: at 80 columns the legend was cut at ``┊ budge…``.)"""
    if legend.cell_len <= room:
        return legend
    items = [it for it in legend.split("  ") if it.plain]
    joined = Text(" ").join(items)
    if joined.cell_len <= room:
        return joined

    def short(it: Text) -> Text:
        p = it.plain
        for long, brief in _LEGEND_SHORT.items():
            if p.endswith(" " + long) or p == long:
                style = it.spans[0].style if it.spans else it.style
                return Text(p[: len(p) - len(long)] + brief, style=style)
        return it

    items = [short(it) for it in items]
    for drop in (None, *_LEGEND_DROP):
        if drop is not None:
            items = [it for it in items if it.plain != _short_plain(drop)]
        out = Text(" ").join(items)
        if out.cell_len <= room:
            return out
    return out


def _short_plain(entry: str) -> str:
    """``entry`` (a legend entry's text) as :func:`fit_legend` shortens it."""
    for long, brief in _LEGEND_SHORT.items():
        if entry.endswith(" " + long) or entry == long:
            return entry[: len(entry) - len(long)] + brief
    return entry


@dataclass
class ChartData:
    """What the chart draws, in chart units (x: elapsed hours; y: score or pass rate %)."""

    best: list[tuple[float, float]] = field(default_factory=list)  # step line points
    agent: list[tuple[float, float]] = field(default_factory=list)
    auto: list[tuple[float, float]] = field(default_factory=list)
    #: x (hours) of the invalid rounds: no value, no step of the best line; a grey tick at the bottom
    invalid: list[float] = field(default_factory=list)
    budget_h: Optional[float] = None
    x_max: float = 1.0
    y_label: str = "score"
    policy: str = ""
    mode: str = "score"  # one of MODES
    modes: tuple[str, ...] = ()  # the modes this run has data for
    outliers: int = 0  # raw scores off the fitted y range (fitted_range): drawn as ▼ / ▲ at its edge
    moments: list[tuple[float, float]] = field(default_factory=list)  # reframing moments: (x, new best)
    #: the y quantity is a raw score the task minimises (a route's length, a cost): the best line falls
    lower_better: bool = False

    @property
    def empty(self) -> bool:
        return not (self.best or self.agent or self.auto or self.invalid)


def _num(v: Any) -> Optional[float]:
    """A plottable number: finite (:func:`fmt.finite`) and below the visualizer's 1e100 sentinel."""
    f = finite(v)
    return f if f is not None and abs(f) < _SENTINEL else None


def chart_data(
    head: Mapping[str, Any],
    subs: Sequence[Mapping[str, Any]],
    *,
    end_elapsed_s: Optional[float] = None,
    mode: Optional[str] = None,
    moments: Sequence[str] = (),
) -> ChartData:
    """Chart series from a run header (:func:`edgetui.store.queries.run_header`) and its submissions.

    ``mode`` picks the y quantity (:data:`MODES`): ``score`` (the task's raw score),
    ``pass`` (pass rate × 100) or ``rescaled`` (SForge's 0–100 rescaled score); by
    default score for score tasks (``runs.score_task``), else pass rate. The
    best-so-far line is the running best under the task's selection policy as the
    submissions record it (``best_round``; SForge selection.py semantics), shown in
    the chosen quantity, run on to ``end_elapsed_s``. Agent (and game) rounds and
    auto-eval samples are separate series so they get different markers; invalid rounds
    (:mod:`edgetui.replay.invalid_rounds`) are neither: only their x, drawn as a grey tick on the x axis,
    and never a step of the best line. ``moments``: rounds
    of reframing moments, marked ✦ on the best-so-far line where their new best starts.
    """
    start = head.get("started_at") or head.get("first_t") or 0.0
    score_task = head.get("score_task")
    if score_task is None:
        score_task = (head.get("selection") or "pass_rate_first") != "pass_rate_first" and any(
            s.get("score") is not None for s in subs
        )
    modes = tuple(
        m
        for m, key in (("score", "score"), ("pass", "pass_rate"), ("rescaled", "score_0_100"))
        if any(_num(s.get(key)) is not None for s in subs)
    )
    if mode not in MODES:
        mode = "score" if score_task else "pass"
    by_round = {s.get("round"): s for s in subs}

    def value(s: Optional[Mapping[str, Any]]) -> Optional[float]:
        if s is None:
            return None
        if mode == "score":
            return _num(s.get("score"))
        if mode == "rescaled":
            return _num(s.get("score_0_100"))
        pr = _num(s.get("pass_rate"))
        return None if pr is None else pr * 100

    def best_of(s: Mapping[str, Any]) -> Optional[float]:
        if mode == "score" and score_task:
            return _num(s.get("best_score"))
        if mode == "pass" and not score_task:
            pr = _num(s.get("best_pass_rate"))
            return None if pr is None else pr * 100
        br = s.get("best_round")  # the best round's own value in the chosen quantity
        return value(by_round.get(br)) if br else None

    def x_of(s: Mapping[str, Any]) -> Optional[float]:
        e = _num(s.get("elapsed_s"))
        if e is None:
            t = _num(s.get("t")) or _num(s.get("submitted_at")) or _num(s.get("graded_at"))
            e = None if t is None else t - start
        return None if e is None else e / 3600.0

    d = ChartData(y_label=MODE_LABELS[mode], mode=mode, modes=modes)
    d.policy = str(head.get("selection") or head.get("task_selection") or "")
    # (pass rates and SForge's rescaled 0-100 score rise whatever the task: only the raw score falls)
    d.lower_better = mode == "score" and lower_is_better(head)
    prev: Optional[float] = None
    last_x = 0.0
    for s in subs:
        x = x_of(s)
        if x is None:
            continue
        last_x = max(last_x, x)
        if is_invalid(s):
            d.invalid.append(x)
            continue
        v = value(s)
        if v is not None:
            (d.auto if s.get("kind") == "auto" else d.agent).append((x, v))
        b = best_of(s)
        if b is None:
            continue
        if prev is not None and b != prev:
            d.best.append((x, prev))
        if prev is None or b != prev:
            d.best.append((x, b))
        prev = b
    want = set(moments)
    for s in subs:
        if s.get("round") in want:
            x, b = x_of(s), best_of(s)
            if x is not None and b is not None:
                d.moments.append((x, b))
    end_h = (end_elapsed_s or 0.0) / 3600.0
    if d.best and end_h > d.best[-1][0]:
        d.best.append((end_h, d.best[-1][1]))
    budget = _num(head.get("timeout_s"))
    d.budget_h = budget / 3600.0 if budget else None
    x_max = max(end_h, last_x, d.budget_h * 1.03 if d.budget_h else 0.0)
    d.x_max = x_max if x_max > 0 else 1.0
    lo, hi = fitted_range(
        [y for _, y in d.best], [y for _, y in d.agent] + [y for _, y in d.auto], whole=d.mode != "score"
    )
    d.outliers = sum(1 for _, y in d.agent + d.auto if not lo <= y <= hi)
    return d


def _same_drawing(old: ChartData, new: ChartData, columns: int) -> bool:
    """True when ``new`` differs from ``old`` only by less than one of ``columns`` chart columns in x
    range and in the x of the best line's last point (its run-on to "now")."""
    if columns <= 0 or old.x_max <= 0:
        return False
    col_h = old.x_max / columns
    if (
        old.agent != new.agent
        or old.auto != new.auto
        or old.invalid != new.invalid
        or old.budget_h != new.budget_h
        or old.y_label != new.y_label
        or old.policy != new.policy
        or len(old.best) != len(new.best)
        or old.mode != new.mode
        or old.moments != new.moments
        or abs(new.x_max - old.x_max) >= col_h
    ):
        return False
    if old.best[:-1] != new.best[:-1]:
        return False
    if old.best:
        (ox, oy), (nx, ny) = old.best[-1], new.best[-1]
        if oy != ny or abs(nx - ox) >= col_h:
            return False
    return True


def _quantile(sorted_vs: Sequence[float], q: float) -> float:
    i = q * (len(sorted_vs) - 1)
    a = int(math.floor(i))
    b = min(a + 1, len(sorted_vs) - 1)
    return sorted_vs[a] + (sorted_vs[b] - sorted_vs[a]) * (i - a)


def fitted_range(best: Sequence[float], raw: Sequence[float], whole: bool = False) -> tuple[float, float]:
    """The y range drawn: the whole best-so-far line and the middle half of the raw scores (their
    quartiles), padded by 5 %. Scores outside it are drawn as ▼ / ▲ at its edge: a few 0.0
    submissions, or a long tail of weak ones, must not squash a 42.8 -> 67.0 climb into a row.
    ``whole``: every raw value in range (pass rates and rescaled scores, bounded 0–100 and often a
    few levels such as 0/25/50 %, where the quartiles would put the 0 % rounds off scale)."""
    raw_s = sorted(raw)
    vs = list(best)
    if len(raw_s) >= 8 and not whole:
        vs += [_quantile(raw_s, 0.25), _quantile(raw_s, 0.75)]
    else:
        vs += raw_s
    if not vs:
        return 0.0, 100.0
    lo, hi = min(vs), max(vs)
    if hi - lo < 1e-9:
        pad = abs(hi) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


#: tick steps' mantissas, and those read as round (1, 2, 2.5, 5 x 10^k: no penalty)
_STEP_MANTISSAS = (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
_ROUND_MANTISSAS = (1.0, 2.0, 2.5, 5.0)


def _y_ticks(lo: float, hi: float, rows: int) -> tuple[float, float, float]:
    """(lo, hi, step): ticks from ``lo`` every ``step``, landing exactly every r canvas rows (r
    whole: evenly spaced, never two on one row), at most six of them, ``hi`` where the top row falls
    (just above the data). Of the steps and bottom ticks that cover the data, the one whose range
    the data fills most (a 40-70 climb on 6 rows: 40, 46 … 70, not 40 … 90 with two rows empty),
    round steps (1 / 2 / 2.5 / 5 x 10^k) and a bottom tick on the step's own grid preferred."""
    span = max(hi - lo, 1e-9)
    lines = max(1, rows - 1)
    k0 = math.floor(math.log10(span / min(lines, 5)))
    best: Optional[tuple[tuple, float, float, float]] = None
    for k in range(k0 - 1, k0 + 3):
        for m in _STEP_MANTISSAS:
            step = m * 10.0**k
            if step * min(lines, 5) < span * (1 - 1e-9):
                continue  # (six ticks at most: five steps must cover the data)
            unit = 10.0 ** math.floor(math.log10(step) + 1e-9)
            # the bottom tick on the step's grid; a step that is not round may start on a round number
            # (40, 46 … 70), a round one never off its grid (not 38, 43 …)
            round_step = m in _ROUND_MANTISSAS
            grids = [step] + ([5.0 * unit] if not round_step and 5.0 * unit < step * (1 - 1e-9) else [])
            for g in grids:
                a = math.floor(lo / g + 1e-9) * g
                n = max(1, math.ceil((hi - a) / step - 1e-9))
                if n > min(lines, 5) or n < min(3, lines):  # (four to six ticks where the rows allow)
                    continue
                r = lines // n
                b = a + step * lines / r
                on_grid = g == step
                score = span / (b - a) - (0.0 if round_step else 0.12) - (0.0 if on_grid else 0.08)
                key = (round(score, 3), round_step, on_grid)
                if best is None or key > best[0]:
                    best = (key, a, b, step)
    if best is None:
        return lo, hi, span
    return best[1], best[2], best[3]


def _nice_step_at_least(x: float) -> float:
    """The smallest 1 / 2 / 2.5 / 5 × 10^k not below ``x``."""
    mag = 10 ** math.floor(math.log10(x)) if x > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= x * (1 - 1e-9):
            return m * mag
    return 10 * mag


def _thin(pts: Sequence[tuple[float, float]], x_max: float, cols: int) -> list[tuple[float, float]]:
    """At most the lowest and the highest point of each of ``cols`` columns (crowded markers)."""
    if len(pts) <= 2:
        return list(pts)
    buckets: dict[int, list[tuple[float, float]]] = {}
    for x, y in pts:
        buckets.setdefault(int(x / x_max * cols) if x_max > 0 else 0, []).append((x, y))
    out = []
    for b in buckets.values():
        lo_p, hi_p = min(b, key=lambda p: p[1]), max(b, key=lambda p: p[1])
        out.append(lo_p)
        if hi_p is not lo_p:
            out.append(hi_p)
    return sorted(out)


#: the best-so-far line is thinned to this many parts per canvas cell before plotext draws it (its
#: braille dots are 2 a cell wide: 4 keeps every dot the line covers, see :func:`_thin_line`)
LINE_COLUMNS_PER_CELL = 4


def _thin_line(pts: Sequence[tuple[float, float]], x_max: float, parts: int) -> list[tuple[float, float]]:
    """A polyline with, of each of ``parts`` equal parts of ``[0, x_max]``, only the points that
    enter and leave it and its lowest and highest (in their order): within a part narrower than a
    dot the points drawn in between lie on the vertical from the lowest to the highest, so the dots
    are the same, and plotext's cost (per point) is bounded by the width, not by the new bests (a
    1,000,000-event bench run's 920 made 1,839 points, 1,186 after; 45 ms a build against 14 ms for
    the 478 of its 50,000-event run). A part can straddle two dots (the canvas is a few cells narrower
    than ``cols``): at 76×8 that run's line differs in 2 cells, at 156×14 and 300×30 in none."""
    if len(pts) <= 4 or x_max <= 0 or parts <= 0:
        return list(pts)
    out: list[tuple[float, float]] = []
    group: list[tuple[float, float]] = []
    key = None

    def flush() -> None:
        if len(group) <= 4:
            out.extend(group)
            return
        keep = {
            0,
            len(group) - 1,
            min(range(len(group)), key=lambda k: group[k][1]),
            max(range(len(group)), key=lambda k: group[k][1]),
        }
        out.extend(group[k] for k in sorted(keep))

    for p in pts:
        k = min(parts - 1, int(p[0] / x_max * parts))
        if k != key and group:
            flush()
            group = []
        key = k
        group.append(p)
    flush()
    return out


def _hour_ticks(x_max: float, max_ticks: int) -> tuple[list[float], list[str]]:
    """x ticks (hours) and their labels: ``0h 2h 4h``, ``1h30``, or minutes (``0m 5m 10m``) for a
    run shorter than an hour (a 4-minute run had the one tick ``0h``)."""
    for step in (1 / 60, 2 / 60, 5 / 60, 10 / 60, 0.25, 0.5, 1, 2, 3, 4, 6, 12, 24, 48):
        if x_max / step <= max(1, max_ticks):
            break
    n = int(x_max / step + 1e-9)
    pos = [k * step for k in range(n + 1)]
    labels = []
    for p in pos:
        if step < 1 and x_max < 1:
            labels.append(f"{round(p * 60)}m")
        elif step < 1:
            h, m = divmod(round(p * 60), 60)
            labels.append(f"{h}h{m:02d}" if m else f"{h}h")
        else:
            labels.append(f"{p:g}h")
    return pos, labels


def _fmt_tick(v: float, step: float) -> str:
    if step >= 1:
        return f"{v:.0f}"
    digits = max(0, -math.floor(math.log10(step)) + (0 if step * 10 ** -math.floor(math.log10(step)) == 1 else 1))
    return f"{v:.{min(digits, 4)}f}"


def chart_column(x: float, x_max: float, canvas_w: int) -> int:
    """The canvas column (from 0) of ``x`` hours where plotext puts a marker: the limits centred
    on the first and last cells."""
    frac = min(1.0, max(0.0, x / x_max)) if x_max > 0 else 0.0
    return int(math.floor(frac * (canvas_w - 1) + 0.5))


def rise_columns(best: Sequence[tuple[float, float]], x_max: float, canvas_w: int) -> set[int]:
    """The canvas columns of the best-so-far line's steps (its new bests): where a marker would
    hide the step. Each step's column as a marker's, and as the line's braille dots (two a cell)
    place it, when those differ."""
    out: set[int] = set()
    for (x0, y0), (x1, y1) in zip(best, best[1:]):
        if x0 == x1 and y0 != y1:
            out.add(chart_column(x1, x_max, canvas_w))
            frac = min(1.0, max(0.0, x1 / x_max)) if x_max > 0 else 0.0
            out.add(int(math.floor(frac * (2 * canvas_w - 1) + 0.5)) // 2)
    return out


def split_on_line(
    d: "ChartData", rises: set[int], canvas_w: int
) -> tuple[dict[str, list[tuple[float, float]]], dict[str, list[tuple[float, float]]]]:
    """The agent's and the auto-eval's points ``({"agent": …, "auto": …})`` on the best-so-far line
    (a tie or the new best itself: drawn over the line) outside the columns of ``rises`` (there the
    step is drawn over them, so they are left out), and those off the line (drawn under it)."""
    xs = [x for x, _ in d.best]
    on: dict[str, list[tuple[float, float]]] = {"agent": [], "auto": []}
    off: dict[str, list[tuple[float, float]]] = {"agent": [], "auto": []}
    for key, pts in (("agent", d.agent), ("auto", d.auto)):
        for x, y in pts:
            j = bisect.bisect_right(xs, x) - 1
            line = [d.best[j][1]] if j >= 0 else []
            if j >= 1 and xs[j - 1] == x:  # the foot of a step at x
                line.append(d.best[j - 1][1])
            if any(abs(y - v) <= 1e-9 * max(1.0, abs(v)) for v in line):
                if chart_column(x, d.x_max, canvas_w) not in rises:
                    on[key].append((x, y))
            else:
                off[key].append((x, y))
    return on, off


@dataclass
class _Built:
    size: Size
    lines: list[str]  # ANSI, one per row
    canvas: tuple[int, int, int, int]  # left, top, width, height
    strips: Optional[list[Strip]] = None


class _FittedLegend:
    """:attr:`ScoreChart.border_subtitle`: the screens set the whole legend (:func:`legend_text`);
    the border shows it fitted to the chart's width (:func:`fit_legend`), again at each resize."""

    def __set__(self, obj: "ScoreChart", value: Any) -> None:
        obj.legend = value
        obj.show_legend()

    def __get__(self, obj: Optional["ScoreChart"], objtype: Any = None) -> Any:
        return None if obj is None else _BORDER_SUBTITLE.__get__(obj, objtype)


#: Textual's own border subtitle (a descriptor of :class:`Widget`), which :class:`_FittedLegend` feeds
_BORDER_SUBTITLE = Widget.__dict__["border_subtitle"]
#: under this many rows of content the chart leaves out its frame's top line: one more row of canvas
#: (at 80x24 the chart had 4 rows of canvas; the border above already closes it)
FULL_FRAME_ROWS = 12


class ScoreChart(Widget):
    """The score-over-time chart with a vertical time cursor (see module docstring). Nothing is
    drawn while it has no data (no placeholder axes while a run loads)."""

    DEFAULT_CSS = """
    ScoreChart { height: 14; min-height: 5; }
    """

    border_subtitle = _FittedLegend()

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.data: ChartData = ChartData()
        self.cursor_elapsed: Optional[float] = None
        self._built: Optional[_Built] = None
        self._figure: Any = None  # this chart's own plotext figure (edgetui.views.plot_figure), made at the first build
        #: the legend as the screen set it (:attr:`border_subtitle`), shown fitted to the width
        self.legend: Any = None

    def show_legend(self) -> None:
        """Put :attr:`legend` in the border, fitted to the width: the corners and the dashes
        around the text take 6 cells."""
        legend = self.legend
        if isinstance(legend, Text) and self.size.width:
            legend = fit_legend(legend, max(10, self.size.width - 6))
        _BORDER_SUBTITLE.__set__(self, legend)

    def on_resize(self) -> None:
        self.show_legend()

    # ------------------------------------------------------------------ API

    def set_data(self, data: ChartData) -> None:
        """Draw ``data``. A live run's new data that would draw the same picture (only the line's
        run-on to "now" or the x range moved, by less than one column) keeps the current drawing:
        building a plotext figure costs tens of ms, and "now" moves every second."""
        if self._built is not None and _same_drawing(self.data, data, self._built.canvas[2]):
            return
        self.data = data
        self._built = None
        self.refresh()

    def set_cursor(self, elapsed_s: Optional[float]) -> None:
        """Put the time cursor at ``elapsed_s`` (``None`` hides it); repaints only the chart."""
        if elapsed_s == self.cursor_elapsed:
            return
        before = self.cursor_column if self._built is not None else -1
        self.cursor_elapsed = elapsed_s
        if before == -1 or self.cursor_column != before:  # the same column: nothing to draw again
            self.refresh()

    @property
    def x_range(self) -> tuple[float, float]:
        """(x_min, x_max) in elapsed hours."""
        return 0.0, self.data.x_max

    @property
    def canvas(self) -> Optional[tuple[int, int, int, int]]:
        """(left, top, width, height) of the plot canvas inside the widget's content, once sized."""
        b = self._ensure_built()
        return b.canvas if b else None

    def column_for(self, elapsed_s: float) -> Optional[int]:
        """Content column of elapsed ``elapsed_s`` seconds (clamped to the canvas)."""
        c = self.canvas
        if c is None:
            return None
        left, _top, width, _h = c
        lo, hi = self.x_range
        frac = (elapsed_s / 3600.0 - lo) / (hi - lo) if hi > lo else 0.0
        frac = min(1.0, max(0.0, frac))
        return left + int(math.floor(frac * (width - 1) + 0.5))

    @property
    def cursor_column(self) -> Optional[int]:
        """Content column of the time cursor (``None`` when hidden or not laid out)."""
        if self.cursor_elapsed is None:
            return None
        return self.column_for(self.cursor_elapsed)

    # ------------------------------------------------------------------ build

    def _ensure_built(self) -> Optional[_Built]:
        size = self.content_size
        if size.width < 10 or size.height < 3 or self.data.empty:
            return None
        if self._built is None or self._built.size != size:
            self._built = self._build(size)
        return self._built

    def _build(self, size: Size) -> _Built:
        # lazy: plotext loads with the first chart drawn, after the first paint
        import plotext as plt

        d = self.data
        w, h = size.width, size.height
        if self._figure is None:
            self._figure = new_figure()
        f = self._figure
        f.clear()
        f.theme("simple")
        f.plot_size(w, h)
        lo, hi = fitted_range(
            [y for _, y in d.best], [y for _, y in d.agent] + [y for _, y in d.auto], whole=d.mode != "score"
        )
        if d.mode != "score":  # bounded 0-100: no axis below 0 or above 100 for the padding's sake
            lo, hi = max(lo, 0.0), min(hi, 100.0)
        top_frame = h >= FULL_FRAME_ROWS
        rows = max(2, h - (3 if top_frame else 2))  # canvas rows (frame top and bottom, x labels)
        lo, hi, step = _y_ticks(lo, hi, rows)
        f.ruler("x").lim(0.0, d.x_max)
        f.ruler("y").lim(lo, hi)
        yt = [lo + k * step for k in range(int((hi - lo) / step + 1e-9) + 1)]  # (from lo: on the rows)
        if d.mode != "score":  # a pass rate / rescaled score has no tick past 100 (the range may go on)
            yt = [v for v in yt if 0.0 <= v <= 100.0 + 1e-9]
        f.ruler("y").ticks(yt, [_fmt_tick(v, step) for v in yt])
        xt, xl = _hour_ticks(d.x_max, max(2, (w - 8) // 7))
        f.ruler("x").ticks(xt, xl)
        f.axes(pixel=(AXES_COLOR, "default"))
        if not top_frame:
            f.axes(False, axis=0, side=1)
        f.ruler("both").pixel((AXES_COLOR, "default"))
        if d.budget_h is not None:
            f.line(d.budget_h, orientation="vertical", pixel=(BUDGET_COLOR, "default"), style="dotted")
        cols = max(1, w - 8)
        # the canvas's columns: the y labels and their axis to the left, the frame to the right
        label_w = max((len(_fmt_tick(v, step)) for v in yt), default=1)
        canvas_w = max(2, w - label_w - 2)
        rises = rise_columns(d.best, d.x_max, canvas_w)
        on_line, off_line = split_on_line(d, rises, canvas_w)

        def markers(series: Sequence[tuple[list[tuple[float, float]], str, int]]) -> None:
            for pts, mk, color in series:
                inside = [(x, y) for x, y in pts if lo <= y <= hi]
                low = [(x, lo) for x, y in pts if y < lo]
                high = [(x, hi) for x, y in pts if y > hi]
                if len(inside) > THIN_ABOVE or len(inside) > 2 * cols:
                    inside = _thin(inside, d.x_max, cols)
                for group, sym in (
                    (inside, mk),
                    (_thin(low, d.x_max, cols), LOW_MARKER),
                    (_thin(high, d.x_max, cols), HIGH_MARKER),
                ):
                    if group:
                        f.draw(
                            f.signal(
                                [x for x, _ in group],
                                [y for _, y in group],
                                marker=plt.marker(sym, pixel=(color, "default")),
                            )
                        )

        # the submissions off the line, then the line over them, then the ties on it: a new best's
        # step (its column) is never under a mark (at 80x24 the line hid under the ◆ of the ties
        # and new bests), and a tie elsewhere keeps its mark on the line
        markers(
            [
                (off_line[k], mk, color)
                for k, mk, color in (("auto", AUTO_MARKER, AUTO_COLOR), ("agent", AGENT_MARKER, AGENT_COLOR))
            ]
        )
        if d.best:
            best = _thin_line([(x, min(hi, max(lo, y))) for x, y in d.best], d.x_max, LINE_COLUMNS_PER_CELL * cols)
            s = f.signal(
                [x for x, _ in best], [y for _, y in best], marker=plt.marker("braille", pixel=(BEST_COLOR, "default"))
            )
            s.lines()
            f.draw(s)
        markers(
            [
                (on_line[k], mk, color)
                for k, mk, color in (("auto", AUTO_MARKER, AUTO_COLOR), ("agent", AGENT_MARKER, AGENT_COLOR))
            ]
        )
        if d.invalid:  # on the x axis's row: no value to place them by
            xs = sorted(set(d.invalid))
            f.draw(f.signal(xs, [lo] * len(xs), marker=plt.marker(INVALID_MARKER, pixel=(INVALID_COLOR, "default"))))
        if d.moments:  # on top of the line: where the reframing's new best starts
            f.draw(
                f.signal(
                    [x for x, _ in d.moments],
                    [min(hi, max(lo, y)) for _, y in d.moments],
                    marker=plt.marker(MOMENT_MARKER, pixel=(MOMENT_COLOR, "default")),
                )
            )
        m = f.build()
        lines = m.string().split("\n")[:h]
        canvas = self._canvas_of(f, lines)
        return _Built(size, lines, canvas)

    @staticmethod
    def _canvas_of(f: Any, lines: list[str]) -> tuple[int, int, int, int]:
        try:
            (left, top), (cw, ch) = f._parts.canvas.position(), f._parts.canvas.size()
            return int(left), int(top), int(cw), int(ch)
        except Exception:  # noqa: BLE001 - plotext internals moved: read the frame corners instead
            plain = [Text.from_ansi(x).plain for x in lines]
            top = next((i for i, x in enumerate(plain) if "┌" in x), 0)
            bottom = next((i for i, x in enumerate(plain) if "└" in x), len(plain) - 1)
            left = plain[bottom].find("└") + 1
            right = plain[bottom].rfind("┘")
            return left, top + 1, max(1, right - left), max(1, bottom - top - 1)

    def _strips(self, b: _Built) -> list[Strip]:
        if b.strips is None:
            console = self.app.console
            out = []
            for line in b.lines:
                segs = []
                for seg in Text.from_ansi(line).render(console):
                    st = seg.style
                    if st is not None and st.bgcolor is not None:  # keep the app's background
                        st = Style(color=st.color, bold=st.bold, dim=st.dim, italic=st.italic)
                    segs.append(Segment(seg.text, st))
                # plotext colours cell by cell: merged runs of one style make every later strip
                # operation (cursor overlay, crop, Textual's per-line styling) several times cheaper
                out.append(Strip(list(Segment.simplify(segs))).crop_extend(0, b.size.width, None))
            while len(out) < b.size.height:
                out.append(Strip.blank(b.size.width))
            b.strips = out
        return b.strips

    # ------------------------------------------------------------------ render

    def render_line(self, y: int) -> Strip:
        b = self._ensure_built()
        width = self.content_size.width
        if b is None:
            return Strip.blank(width)
        strips = self._strips(b)
        if y >= len(strips):
            return Strip.blank(width)
        strip = strips[y]
        col = self.cursor_column
        left, top, _cw, ch = b.canvas
        if col is None or not (top - 1 <= y <= top + ch):
            return strip
        parts = strip.divide([col, col + 1, strip.cell_length])
        if len(parts) < 3:
            return strip
        before, mid, after = parts[0], parts[1], parts[2]
        ch_text = mid.text or " "
        if y == top - 1:
            seg = Segment("▼", CURSOR_STYLE)
        elif y == top + ch:
            seg = Segment("▲", CURSOR_STYLE)
        elif ch_text.strip() == "" or ch_text in "⠀":
            seg = Segment("│", CURSOR_STYLE)
        else:
            base = next(iter(mid), Segment(ch_text)).style or Style()
            seg = Segment(ch_text, base + CURSOR_BG)
        return Strip.join([before, Strip([seg], 1), after])
