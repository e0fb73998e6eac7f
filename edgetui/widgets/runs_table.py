"""The live runs table: one row per :class:`edgetui.live.model.LiveRun` (no I/O).

Pure helpers (tested without a terminal) turn a snapshot into cells:

* :func:`status_text` — ``● running`` coloured by status (running green,
  grading cyan, finished dim, aborted yellow, gone red) with flags: ``⚠N``
  unacknowledged alarms (red), ``✓N`` acknowledged ones still holding (dim),
  ``⚑`` infra error, ``OOM``, ``stopped`` / ``killed`` (by the operator),
  ``over`` (budget);
* :func:`fmt_hm` / :func:`budget_bar` — elapsed and budget as ``h:mm`` plus a
  small bar (green, yellow past 75 %, red past the budget);
* :func:`fmt_age` — age of the last event: ``12s``, ``4m``, ``2h05``, ``16h``, ``3d``;
* :func:`sort_runs` / :func:`filter_runs` — the runs screen's sort and type-ahead filter;
* :func:`forecast_cell` — a live run's forecast at its horizon (budget or 12 h) with its 80 %
  interval beside "last best persists" (both 0–100), from the Forecast dicts the runs screen's
  worker reads (:func:`edgetui.analysis_data.header_forecast`).

:class:`RunsTable` is a line-API table whose columns
follow the width (three tiers; text columns shrink before the table scrolls
sideways). Updates keep the selected run selected and, when the rows are the
same, only the rows whose cells changed are drawn again.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from edgetui.live.model import LiveRun

from .fmt import fmt_count, fmt_score, fmt_usd, text_sig

__all__ = [
    "COLUMNS",
    "RunsTable",
    "SORT_KEYS",
    "STATUS_COLORS",
    "budget_bar",
    "filter_runs",
    "forecast_cell",
    "fmt_age",
    "fmt_bytes",
    "fmt_hm",
    "fmt_best",
    "row_cells",
    "sort_runs",
    "status_text",
]

#: Colour of each live status (sforge-format.md §10.1, edgetui.live.model).
STATUS_COLORS = {
    "running": "bold green",
    "grading": "bold cyan",
    "finished": "dim",
    "aborted": "yellow",
    "gone": "bold red",
}
#: Attention order used by the default ("status") sort: problems first, finished last.
STATUS_RANK = {"gone": 0, "running": 1, "grading": 1, "aborted": 2, "finished": 3}


# ---------------------------------------------------------------------------- formatting


def fmt_age(seconds: Optional[float]) -> str:
    """``12s``, ``4m``, ``2h05``, ``16h``, ``3d`` (at most 4 cells); ``–`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    h, m = divmod(s // 60, 60)
    if h < 10:
        return f"{h}h{m:02d}"
    if h < 48:
        return f"{h}h"
    return f"{h // 24}d"


def fmt_hm(seconds: Optional[float]) -> str:
    """``h:mm`` (``5:12``, ``12:00``, ``0:07``); ``–`` when unknown."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    m = max(0, int(seconds)) // 60
    return f"{m // 60}:{m % 60:02d}"


_EIGHTHS = " ▏▎▍▌▋▊▉█"


def budget_bar(elapsed: Optional[float], budget: Optional[float], width: int = 6) -> Text:
    """A ``width``-cell bar of elapsed / budget (eighth blocks); blank when either is unknown."""
    if not elapsed or not budget or budget <= 0 or width <= 0:
        return Text(" " * width)
    frac = elapsed / budget
    style = "green" if frac < 0.75 else ("yellow" if frac <= 1.0 else "bold red")
    cells = min(1.0, frac) * width
    full = int(cells)
    part = int(round((cells - full) * 8))
    if part == 8:
        full, part = full + 1, 0
    bar = "█" * full + (_EIGHTHS[part] if part and full < width else "")
    out = Text(bar, style=style)
    out.append("░" * (width - len(bar)), style="grey30")
    return out


def fmt_bytes(n: Optional[float]) -> str:
    """``512M``, ``3.2G``; ``–`` when unknown."""
    if n is None:
        return "–"
    for unit, div in (("T", 1024**4), ("G", 1024**3), ("M", 1024**2), ("k", 1024)):
        if n >= div:
            v = n / div
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return f"{int(n)}B"


def fmt_best(run: LiveRun) -> str:
    """Best so far: the raw score (score tasks) or the pass rate as ``85%``; ``–`` when none."""
    v = run.best_display
    if v is None or not math.isfinite(v):
        return "–"
    if run.score_task:
        return fmt_score(v)
    return f"{v:.0f}%" if abs(v - round(v)) < 0.05 else f"{v:.1f}%"


def _flags(run: LiveRun) -> list[str]:
    """Short distinct flags besides alarms (``infra``, ``oom``, …), in order."""
    out: list[str] = []
    if run.infra_error:
        out.append("infra")
    for f in run.flags:
        if f.startswith(("alarm:", "ack:")):
            continue
        if f not in out:
            out.append(f)
    return out


def status_text(run: LiveRun, *, compact: bool = False, budget: bool = True) -> Text:
    """``● running ⚠2 ⚑infra`` — status coloured, then alarm count and flags in red.

    ``compact`` keeps the flag symbols only (``⚑`` for infra, first letter for others);
    ``budget=False`` leaves out the over-budget flag (a caller that says it in words).
    """
    st = run.status or "?"
    t = Text("● ", style=STATUS_COLORS.get(st, "dim"))
    t.append(st, style=STATUS_COLORS.get(st, ""))
    n_alarms = len(run.current_alarms)
    if n_alarms:
        t.append(f" ⚠{n_alarms}", style="bold red")
    n_acked = len(run.acked_alarms)
    if n_acked:
        t.append(f" ✓{n_acked}", style="dim yellow")  # holding, acknowledged
    for f in _flags(run):
        if f == "infra":
            t.append(" ⚑" if compact else " ⚑infra", style="red")
        elif f == "oom":
            t.append(" OOM", style="bold red")
        elif f in ("stopped", "killed"):
            t.append(f" {f[:1]}" if compact else f" {f}", style="yellow")  # by the operator
        elif f == "over_budget":
            if budget:
                t.append(" o" if compact else " over", style="bold red")  # running past its budget (the elapsed cell is red too)
        else:
            t.append(f" {f[:1]}" if compact else f" {f}", style="red")
    return t


def _cut(s: str, n: int) -> str:
    """``s`` cut to ``n`` cells with a trailing ``…``."""
    return s if len(s) <= n else (s[: max(0, n - 1)] + "…")


def _cut_middle(s: str, n: int) -> str:
    """``s`` cut to ``n`` cells keeping both ends (run ids end in a timestamp that matters)."""
    if len(s) <= n:
        return s
    if n <= 3:
        return s[:n]
    head = (n - 1) // 2
    tail = n - 1 - head
    return s[:head] + "…" + s[-tail:]


# ---------------------------------------------------------------------------- columns


@dataclass(frozen=True)
class Col:
    key: str
    label: str
    tiers: str  # letters of the tiers showing it: n(arrow) m(edium) w(ide)
    min_w: int  # text columns shrink to this before the table scrolls sideways
    justify: str = "left"
    shrink: bool = False
    narrow_label: Optional[str] = None


#: All columns, in display order.
COLUMNS: tuple[Col, ...] = (
    Col("host", "host", "nmw", 5, shrink=True),  # shown only when a remote host's run is in the table
    Col("run_id", "run id", "nmw", 10, shrink=True),
    Col("task", "task", "nmw", 8, shrink=True),
    Col("model", "agent/model", "mw", 8, shrink=True),
    Col("status", "status", "nmw", 9),
    Col("elapsed", "elapsed / budget", "nmw", 9, narrow_label="elapsed"),
    Col("best", "best", "nmw", 4, justify="right"),
    Col("subs", "subs", "nmw", 4, justify="right"),
    Col("last", "last", "nmw", 4, justify="right"),
    Col("forecast", "forecast · last best", "w", 8, justify="right", narrow_label="forecast"),
    Col("tokens", "tokens", "w", 6, justify="right"),
    Col("cost", "$", "nmw", 5, justify="right"),
    Col("cpu", "cpu", "w", 4, justify="right"),
    Col("mem", "mem", "w", 4, justify="right"),
)
_COL = {c.key: c for c in COLUMNS}

#: Sort keys cycled by ``s`` (label, key function); ``None`` values always sort last.
SORT_KEYS: tuple[tuple[str, str], ...] = (
    ("status", "status"),
    ("run_id", "run id"),
    ("task", "task"),
    ("model", "model"),
    ("elapsed", "elapsed"),
    ("best", "best"),
    ("subs", "submissions"),
    ("last", "last event"),
    ("forecast", "forecast"),
    ("tokens", "tokens"),
    ("cost", "cost"),
    ("cpu", "cpu"),
)
#: Caps of text columns per tier.
_CAPS = {
    "n": {"host": 10, "run_id": 18, "task": 18, "status": 16},
    "m": {"host": 14, "run_id": 18, "task": 18, "model": 16, "status": 20},
    "w": {"host": 20, "run_id": 30, "task": 24, "model": 24, "status": 30},
}

#: mark and colour of a remote host's connection state (edgetui.hosts.ssh.HostState.kind) in the host column
HOST_MARKS = {"up": ("●", "green"), "degraded": ("◐", "yellow"), "connecting": ("◌", "yellow"),
              "down": ("✗", "bold red"), "auth failed": ("✗", "bold red"), "host key refused": ("✗", "bold red")}


def has_remote(runs: Iterable[LiveRun]) -> bool:
    """Does any run live on another host than this machine (the host column is shown then)?"""
    return any(r.host not in ("", "local", None) for r in runs)


def _natural(s: Optional[str]) -> tuple:
    """Sort key putting ``bench-2`` before ``bench-10`` (digit runs compare as numbers)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", s or "") if p)


def _sort_value(run: LiveRun, key: str, now: float, forecasts: Optional[dict[str, Any]] = None) -> Any:
    if key == "forecast":  # the forecast at the horizon (0-100); pending, none or ended: last
        fc = (forecasts or {}).get(run.run_key)
        return fc.get("value") if isinstance(fc, dict) else None
    if key == "status":
        return (0 if run.current_alarms else 1, STATUS_RANK.get(run.status, 9), -(run.elapsed_s or 0.0))
    if key == "run_id":
        return (_natural(run.run_id), run.host)
    if key == "task":
        return _natural(run.task_id)
    if key == "model":
        return (run.model or run.agent or None)
    if key == "elapsed":
        return run.elapsed_s
    if key == "best":
        return run.best_display
    if key == "subs":
        return run.agent_submissions + run.auto_submissions
    if key == "last":
        return None if run.last_event_at is None else now - run.last_event_at
    if key == "tokens":
        return run.tokens
    if key == "cost":
        return run.cost_usd
    if key == "cpu":
        return run.cpu_percent
    raise KeyError(key)


def sort_runs(runs: Iterable[LiveRun], key: str = "status", reverse: bool = False, *, now: float = 0.0,
              forecasts: Optional[dict[str, Any]] = None) -> list[LiveRun]:
    """Runs sorted by ``key`` (one of :data:`SORT_KEYS`), ties by run key; ``None`` always last.

    The default ``status`` order puts runs with alarms first, then gone,
    running/grading (longest first), aborted, finished. ``forecast`` sorts by the forecast value
    of ``forecasts`` (run key -> the runs screen's Forecast dicts); runs without one (ended, not
    read yet, nothing valid) come last.
    """
    runs = list(runs)
    with_v = [(r, _sort_value(r, key, now, forecasts)) for r in runs]
    known = [x for x in with_v if x[1] is not None]
    unknown = [x for x in with_v if x[1] is None]
    known.sort(key=lambda x: x[0].run_key)
    known.sort(key=lambda x: x[1], reverse=reverse)
    unknown.sort(key=lambda x: x[0].run_key)
    return [r for r, _ in known] + [r for r, _ in unknown]


def filter_runs(runs: Iterable[LiveRun], text: Optional[str]) -> list[LiveRun]:
    """Runs whose run id / task / model / agent / status / host / flags contain every word of ``text``."""
    runs = list(runs)
    words = (text or "").lower().split()
    if not words:
        return runs
    out = []
    for r in runs:
        hay = " ".join(
            str(x or "")
            for x in (r.run_key, r.run_id, r.task_id, r.model, r.agent, r.status, r.host, *r.flags,
                      "infra" if r.infra_error else "", "alarm" if r.current_alarms else "")
        ).lower()
        if all(w in hay for w in words):
            out.append(r)
    return out


#: ``forecasts`` value of a live run whose forecast is being read
FORECAST_PENDING = "pending"


def forecast_cell(run: LiveRun, forecast: Any, tier: str = "w", short: bool = False) -> Text:
    """The forecast column's cell: ``71.2 [62–80] · 48.0 @12h`` (wide tier: forecast at the horizon,
    its 80 % interval, the last best that persists, the horizon in hours; all 0–100) or
    ``71 [62–80]·48`` (medium tier), ``71 62–80`` (narrow tier); ``48.0 at 12h`` once the horizon is reached; ``…`` while it is
    read, ``–`` for a live run with no valid submission yet, blank for a run that ended. ``short``:
    the forecast alone (``54``), where not even the narrow form fits (80 columns: the selected run's
    line below the table gives its interval and last best)."""
    if run.status not in ("running", "grading"):
        return Text("", justify="right")
    if forecast == FORECAST_PENDING:
        return Text("…", style="dim", justify="right")
    if not forecast:
        return Text("–", style="dim", justify="right")
    v, lo, hi, base, h = (forecast["value"], forecast.get("lo"), forecast.get("hi"), forecast["baseline"],
                          forecast["horizon_h"])
    wide = tier == "w"
    t = Text(justify="right")
    t.append(f"{v:.1f}" if wide else f"{v:.0f}", style="bold magenta")
    if short:
        return t
    if lo is None:
        t.append(f" at {h:g}h", style="dim")
        return t
    if tier == "n":  # 80 columns: the interval only (the best column beside it holds the last best)
        t.append(f" {lo:.0f}–{hi:.0f}", style="magenta")
        return t
    t.append(f" [{lo:.0f}–{hi:.0f}]", style="magenta")
    t.append(f" · {base:.1f} @{h:g}h" if wide else f"·{base:.0f}", style="dim")
    return t


def row_cells(run: LiveRun, now: float, tier: str = "w", forecast: Any = None,
              forecast_short: bool = False, *, host_column: bool = False) -> dict[str, Text]:
    """Cells of one run for every column of ``tier`` (uncut; :class:`RunsTable` fits them).
    ``forecast``: the run's Forecast dict, :data:`FORECAST_PENDING` or ``None``; ``forecast_short``:
    its short form (:func:`forecast_cell`). Without ``host_column`` a remote run's id reads
    ``host:run_id``; with it the host has its own cell, marked with its connection state
    (:data:`HOST_MARKS`)."""
    compact = tier == "n"
    cells: dict[str, Text] = {}
    host = Text(run.host or "local", style="dim" if run.host in ("", "local", None) else "")
    if run.host_state in HOST_MARKS:
        mark, style = HOST_MARKS[run.host_state]
        host.append(" " + mark, style=style)
        if tier == "w" and run.host_state in ("up", "degraded") and run.host_rtt_s is not None:
            host.append(f" {run.host_rtt_s * 1000:.0f}ms", style="dim")
    cells["host"] = host
    rid = run.run_id if host_column or run.host in ("", "local", None) else f"{run.host}:{run.run_id}"
    cells["run_id"] = Text(rid, style="bold")
    cells["task"] = Text(run.task_id, style="cyan" if not compact else "bold cyan")
    model = run.model or run.agent or "–"
    cells["model"] = Text(model)
    cells["status"] = status_text(run, compact=tier != "w")
    sep = "/" if compact else " / "
    el = Text(fmt_hm(run.elapsed_s))
    el.append(sep + fmt_hm(run.budget_s), style="dim")
    if run.budget_s and run.elapsed_s and run.elapsed_s > run.budget_s:
        el.stylize("bold red", 0, len(fmt_hm(run.elapsed_s)))
    if tier == "w" and run.budget_s:
        el.append(" ")
        el.append_text(budget_bar(run.elapsed_s, run.budget_s, 6))
    cells["elapsed"] = el
    cells["best"] = Text(fmt_best(run), style="bold green" if run.best_display is not None else "dim", justify="right")
    cells["subs"] = Text(f"{run.agent_submissions}/{run.auto_submissions}", justify="right")
    age = None if run.last_event_at is None else now - run.last_event_at
    age_style = "" if age is None or age < 600 else ("yellow" if age < 1800 else "bold red")
    if run.status in ("finished", "aborted"):
        age_style = "dim"
    cells["last"] = Text(fmt_age(age), style=age_style, justify="right")
    cells["forecast"] = forecast_cell(run, forecast, tier, forecast_short)
    cells["tokens"] = Text(fmt_count(run.tokens) if run.tokens else "–", justify="right")
    cells["cost"] = Text(fmt_usd(run.cost_usd), style="yellow", justify="right")
    cells["cpu"] = Text("–" if run.cpu_percent is None else f"{run.cpu_percent:.0f}%", justify="right")
    mem = fmt_bytes(run.mem_bytes)
    cells["mem"] = Text(mem, justify="right")
    return cells


def _label(key: str, tier: str, sort_key: Optional[str] = None, reverse: bool = False) -> str:
    """A column's header label in ``tier`` (the narrow tier's short one), with the sort arrow when
    ``key`` is ``sort_key``."""
    col = _COL[key]
    short = tier == "n" or (tier == "m" and key == "forecast")  # its compact cell in the medium tier too
    label = (col.narrow_label or col.label) if short else col.label
    return label + ((" ▼" if reverse else " ▲") if key == sort_key else "")


def _fit(key: str, cell: Text, width: int) -> Text:
    """``cell`` cut to ``width`` cells (run ids keep both ends)."""
    if cell.cell_len <= width:
        return cell
    if key == "run_id":
        out = Text(_cut_middle(cell.plain, width), style=cell.style)
        return out
    out = cell.copy()
    out.truncate(width, overflow="ellipsis")
    return out


# ---------------------------------------------------------------------------- widget


@dataclass
class ColumnInfo:
    """A shown column: key, header label (with the sort arrow) and width in cells."""

    key: str
    label: Text
    width: int


class RunsTable(ScrollView, can_focus=True):
    """Rows of live runs; the runs screen decides order, filter and tier (:meth:`show`).

    A line-API widget (not a DataTable): each visible row is one :class:`~textual.strip.Strip`,
    cached per row until its cells, its cursor / zebra state or the layout change, so a refresh
    where 150 busy rows change costs the rows on screen whose text changed, not a render per
    cell. Keys: up/down, page up/down, home/end, enter (opens: :class:`RunsTable.RowSelected`);
    a click highlights a row, a click on the highlighted row opens it.
    """

    COMPONENT_CLASSES = {"runs-table--header", "runs-table--cursor", "runs-table--even-row"}
    DEFAULT_CSS = """
    RunsTable { height: 1fr; scrollbar-size-vertical: 1; background: $surface; color: $foreground; }
    RunsTable:focus { background-tint: $foreground 5%; }
    RunsTable > .runs-table--header { text-style: bold; background: $panel; color: $foreground; }
    RunsTable > .runs-table--even-row { background: $surface-lighten-1 50%; }
    RunsTable:dark > .runs-table--even-row { background: $surface-darken-1 40%; }
    RunsTable > .runs-table--cursor { background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground; text-style: $block-cursor-blurred-text-style; }
    RunsTable:focus > .runs-table--cursor { background: $block-cursor-background;
        color: $block-cursor-foreground; text-style: $block-cursor-text-style; }
    """
    BINDINGS = [
        Binding("enter", "select_cursor", "open", show=False),
        Binding("up,k", "cursor_up", "up", show=False),  # j/k as on the live run screen
        Binding("down,j", "cursor_down", "down", show=False),
        Binding("pageup", "page_up", "page up", show=False),
        Binding("pagedown", "page_down", "page down", show=False),
        Binding("home", "first", "first", show=False),
        Binding("end", "last", "last", show=False),
        Binding("left", "scroll_left", "left", show=False),
        Binding("right", "scroll_right", "right", show=False),
    ]

    class RowHighlighted(Message):
        """The cursor moved to ``run_key`` (row ``cursor_row``)."""

        def __init__(self, table: "RunsTable", run_key: Optional[str], cursor_row: int) -> None:
            super().__init__()
            self.table, self.run_key, self.cursor_row = table, run_key, cursor_row

        @property
        def control(self) -> "RunsTable":
            return self.table

    class RowSelected(Message):
        """Enter (or a click on the highlighted row) on ``run_key``."""

        def __init__(self, table: "RunsTable", run_key: str) -> None:
            super().__init__()
            self.table, self.run_key = table, run_key

        @property
        def control(self) -> "RunsTable":
            return self.table

    cell_padding = 1

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.run_keys: list[str] = []
        self.cursor_row = 0
        self.columns: dict[str, ColumnInfo] = {}
        self._layout: tuple = ()
        self._rows: dict[str, dict[str, Text]] = {}  # run key -> fitted cells
        self._cells: dict[str, tuple] = {}  # run key -> cell signatures (what the row shows)
        self._strips: dict[str, tuple[tuple, Strip]] = {}  # run key -> (render token, full-width row)
        self._seg_cache: dict[tuple, list[Segment]] = {}  # one padded cell's segments (_cell_segments)
        self._header: Optional[tuple[tuple, Strip]] = None
        self._total_width = 0
        self._runs: dict[str, LiveRun] = {}  # the latest snapshot of each shown run
        self._now, self._tier = 0.0, "w"
        self._stale: set[str] = set()  # rows whose cells were not rebuilt from the latest snapshot
        self._shrunk: set[str] = set()  # text columns cut to fit the width
        self._layout_in: tuple = ()
        self._widths_t = float("-inf")
        self._host_col = False  # a remote host's run is shown: the host column is on
        #: run key -> Forecast dict / FORECAST_PENDING / None (the runs screen's worker reads them)
        self.forecasts: dict[str, Any] = {}
        self._fc_short = False  # the forecast column in its short form (the value alone: 80 columns)

    def _cells_of(self, run: LiveRun, now: float, tier: str) -> dict[str, Text]:
        return row_cells(run, now, tier, self.forecasts.get(run.run_key), self._fc_short,
                         host_column=self._host_col)

    # ------------------------------------------------------------------ DataTable-like reading

    @property
    def row_count(self) -> int:
        return len(self.run_keys)

    def get_row_at(self, index: int) -> list[Text]:
        """Cells of row ``index`` in column order (as shown: fitted to the column widths)."""
        row = self._fresh(self.run_keys[index])
        return [row[k] for k in self.columns]

    def get_column(self, key: str) -> list[Text]:
        """Cells of column ``key``, top to bottom."""
        return [self._fresh(rk)[key] for rk in self.run_keys]

    @property
    def selected_run_key(self) -> Optional[str]:
        """Run key of the row under the cursor (``None`` when empty)."""
        if not self.run_keys or not (0 <= self.cursor_row < len(self.run_keys)):
            return None
        return self.run_keys[self.cursor_row]

    # ------------------------------------------------------------------ data in

    def _widths(self, keys: Sequence[str], rows: list[dict[str, Text]], tier: str, labels: dict[str, str],
                available: int) -> tuple[dict[str, int], set[str]]:
        """Column widths for ``rows`` (content, capped per tier, at least the label), text columns
        shrunk until ``available`` cells hold them; and the columns that were shrunk."""
        caps = _CAPS[tier]
        w: dict[str, int] = {}
        for k in keys:
            content = max((r[k].cell_len for r in rows), default=0)
            w[k] = max(len(labels[k]), min(content, caps.get(k, 10**6)))
        natural = dict(w)
        pad = 2 * self.cell_padding
        total = sum(w.values()) + pad * len(keys)
        # shrink the text columns (widest first) until the table fits
        shrinkable = [k for k in keys if _COL[k].shrink]
        while total > available and shrinkable:
            k = max(shrinkable, key=lambda c: w[c] - _COL[c].min_w)
            if w[k] <= max(_COL[k].min_w, len(labels[k])):
                break
            w[k] -= 1
            total -= 1
        return w, {k for k in keys if w[k] < natural[k]}

    #: column widths follow the content of every row at most this often (and whenever the rows, the
    #: tier, the sort label or the width change, or a row on screen needs a wider column); between
    #: those, only the rows on screen are built, the others when scrolled to
    WIDTHS_EVERY_S = 5.0

    def show(
        self,
        runs: Sequence[LiveRun],
        now: float,
        *,
        tier: str = "w",
        sort_key: Optional[str] = None,
        reverse: bool = False,
        available: Optional[int] = None,
    ) -> None:
        """Show ``runs`` in this order; keeps the selected run selected when it is still shown.

        ``tier``: ``w`` / ``m`` / ``n`` (see :data:`COLUMNS`), or ``auto``: the widest tier whose
        columns fit ``available`` cells (text columns shrunk to their minimum) for these rows.
        """
        avail = available if available is not None else max(20, (self.size.width or 160) - 1)
        layout_in = (tier, sort_key, reverse, avail, has_remote(runs))
        new_keys = [r.run_key for r in runs]
        self._runs = {r.run_key: r for r in runs}
        self._now = now
        if (layout_in != self._layout_in or new_keys != self.run_keys
                or time.monotonic() - self._widths_t >= self.WIDTHS_EVERY_S
                or not self._show_on_screen(new_keys, list(self.columns))):
            pad = 2 * self.cell_padding
            hc = self._host_col = has_remote(runs)
            self._fc_short = False
            for t in (("w", "m", "n") if tier == "auto" else (tier,)):
                keys = [c.key for c in COLUMNS if t in c.tiers and (hc or c.key != "host")]
                keys = self._without_empty_forecast(keys, runs)
                labels = {k: _label(k, t) for k in keys}
                shown_labels = {k: _label(k, t, sort_key, reverse) for k in keys}
                raw = [self._cells_of(r, now, t) for r in runs]
                widths, shrunk = self._widths(keys, raw, t, labels, avail)
                if sum(max(widths[k], len(shown_labels[k])) + pad for k in keys) <= avail:
                    break
            if tier == "auto":  # the narrowest tier still too wide (e.g. with the host column at 80)
                for drop in self.DROP_WHEN_NARROW:
                    if sum(max(widths[k], len(shown_labels[k])) + pad for k in keys) <= avail:
                        break
                    if drop in keys:
                        keys = [k for k in keys if k != drop]
                        widths, shrunk = self._widths(keys, raw, t, labels, avail)
            if tier == "auto" and t != "w":
                keys = self._add_fitting(keys, widths, shown_labels, raw, t, avail, sort_key, reverse, shrunk)
            self._tier = t
            self._shrunk = shrunk
            self._show_all(new_keys, keys, shown_labels, raw, widths, layout_in)

    #: columns left out, in this order, while the narrowest tier does not fit the width (rather than
    #: a table that scrolls sideways with its text columns cut to their minimum)
    DROP_WHEN_NARROW = ("cost", "last")

    #: columns of wider tiers added, in this order, to a narrower tier's when they fit the space left
    EXTRA_COLUMNS = ("forecast", "tokens", "model", "cpu", "mem")

    def _without_empty_forecast(self, keys: list[str], runs: Sequence[LiveRun]) -> list[str]:
        """The forecast column only while a shown run is going on (a table of ended runs keeps its
        columns)."""
        if "forecast" in keys and not any(r.status in ("running", "grading") for r in runs):
            return [k for k in keys if k != "forecast"]
        return keys

    def _add_fitting(self, keys: list[str], widths: dict[str, int], shown_labels: dict[str, str],
                     raw: list[dict[str, Text]], tier: str, avail: int, sort_key: Optional[str],
                     reverse: bool, shrunk: Optional[set[str]] = None) -> list[str]:
        """``keys`` plus the EXTRA_COLUMNS that fit in what the tier's columns leave of ``avail``
        (display order kept); ``widths`` / ``shown_labels`` get their entries. The forecast column
        may take room from the text columns (cut down to their minimum; added to ``shrunk``)."""
        pad = 2 * self.cell_padding
        used = sum(max(widths[k], len(shown_labels[k])) + pad for k in keys)
        out = set(keys)
        for k in self.EXTRA_COLUMNS:
            if k in out or (k == "forecast" and not any(r.status in ("running", "grading")
                                                        for r in self._runs.values())):
                continue
            label = _label(k, tier, sort_key, reverse)
            content = max((r[k].cell_len for r in raw), default=0)
            w = max(len(label), min(content, _CAPS[tier].get(k, 16)))
            if k == "forecast" and used + w + pad > avail and shrunk is not None:
                used = self._make_room(keys, widths, shown_labels, used, used + w + pad - avail, shrunk)
                if used + w + pad > avail and tier == "n":  # the value alone, when that fits
                    short = [forecast_cell(r, self.forecasts.get(rk), tier, True) for rk, r in self._runs.items()]
                    label = "fcst"
                    w = max(len(label), min(max((c.cell_len for c in short), default=0), 8))
                    used = self._make_room(keys, widths, shown_labels, used, used + w + pad - avail, shrunk)
                    if used + w + pad <= avail:
                        self._fc_short = True
                        for r, c in zip(raw, short):
                            r[k] = c
            if used + w + pad <= avail:
                out.add(k)
                widths[k] = w
                shown_labels[k] = label
                used += w + pad
        return [c.key for c in COLUMNS if c.key in out]

    def _make_room(self, keys: list[str], widths: dict[str, int], shown_labels: dict[str, str], used: int,
                   need: int, shrunk: set[str]) -> int:
        """Cut the shrinkable columns of ``keys`` (the one furthest above its minimum first) by ``need``
        cells in all, only when they can give that many; returns ``used`` (cells) after."""
        slack = {k: widths[k] - max(_COL[k].min_w, len(shown_labels[k])) for k in keys if _COL[k].shrink}
        if sum(max(0, v) for v in slack.values()) < need:
            return used  # not enough: nothing is cut
        while need > 0:
            k = max(slack, key=lambda c: slack[c])
            widths[k] -= 1
            slack[k] -= 1
            shrunk.add(k)
            need -= 1
            used -= 1
        return used

    def _show_on_screen(self, new_keys: list[str], keys: list[str]) -> bool:
        """Same rows, same layout: build only the rows on screen (the others go stale). False when a
        row on screen needs a wider column (then every row is measured)."""
        top = int(self.scroll_y)
        bottom = min(len(new_keys), top + self._visible_rows)
        caps = _CAPS[self._tier]
        built: list[tuple[int, str, dict[str, Text]]] = []
        for i in range(top, bottom):
            rk = new_keys[i]
            row = self._cells_of(self._runs[rk], self._now, self._tier)
            for k in keys:
                w = self.columns[k].width
                if row[k].cell_len > w and k not in self._shrunk and w < caps.get(k, 10**6):
                    return False
            built.append((i, rk, row))
        dirty: list[int] = []
        for i, rk, row in built:
            if self._set_row(rk, row):
                dirty.append(i)
        self._stale.update(new_keys[:top])
        self._stale.update(new_keys[bottom:])
        self._refresh_rows(dirty)
        return True

    def _set_row(self, rk: str, row: dict[str, Text]) -> bool:
        """Fit ``row`` (uncut cells) to the columns and keep it; True when what it shows changed."""
        fitted = {k: _fit(k, row[k], c.width) for k, c in self.columns.items()}
        sig = tuple(text_sig(fitted[k]) for k in self.columns)
        self._stale.discard(rk)
        self._rows[rk] = fitted
        if self._cells.get(rk) == sig:
            return False
        self._cells[rk] = sig
        return True

    def _fresh(self, rk: str) -> dict[str, Text]:
        """The fitted cells of ``rk``, built now when they went stale off screen."""
        if rk in self._stale:
            self._set_row(rk, self._cells_of(self._runs[rk], self._now, self._tier))
        return self._rows[rk]

    def _show_all(self, new_keys: list[str], keys: list[str], shown_labels: dict[str, str],
                  raw: list[dict[str, Text]], widths: dict[str, int], layout_in: tuple) -> None:
        """Every row measured and built (``raw``: uncut cells of ``self._tier``)."""
        widths = dict(widths)
        for k in keys:  # the arrow must not widen a fitted column past its label
            widths[k] = max(widths[k], len(shown_labels[k]))
        layout = (tuple(keys), tuple(widths[k] for k in keys), tuple(shown_labels[k] for k in keys))
        self._layout_in, self._widths_t = layout_in, time.monotonic()
        selected = self.selected_run_key
        changed = new_keys != self.run_keys
        if layout != self._layout:
            self._layout = layout
            self.columns = {k: ColumnInfo(k, Text(shown_labels[k], style="bold", justify=_COL[k].justify),  # type: ignore[arg-type]
                                          widths[k]) for k in keys}
            self._total_width = sum(widths[k] + 2 * self.cell_padding for k in keys)
            self._strips.clear()
            self._header = None
            self._cells.clear()
            changed = True
        keep = set(new_keys)
        for d in (self._rows, self._cells, self._strips):
            for rk in [k for k in d if k not in keep]:
                del d[rk]
        self._stale.clear()
        dirty = [i for i, (rk, row) in enumerate(zip(new_keys, raw)) if self._set_row(rk, row)]
        self.run_keys = new_keys
        self.virtual_size = Size(self._total_width, len(new_keys) + 1)
        old_row = self.cursor_row
        self.cursor_row = new_keys.index(selected) if selected in keep else 0
        if self.cursor_row != old_row or selected != self.selected_run_key:
            changed = True
            self._scroll_cursor_into_view()
            self.post_message(self.RowHighlighted(self, self.selected_run_key, self.cursor_row))
        if changed:
            self.refresh()
        else:
            self._refresh_rows(dirty)

    def _refresh_rows(self, indices: Iterable[int]) -> None:
        """Draw these rows again (those on screen; the others are drawn when scrolled to)."""
        top = int(self.scroll_y)
        bottom = top + self._visible_rows
        for i in indices:
            if top <= i < bottom:
                self.refresh_lines(i + 1)  # virtual line: the header is line 0

    def select_run(self, run_key: str) -> bool:
        """Put the cursor on ``run_key``; ``False`` when it is not shown."""
        if run_key not in self.run_keys:
            return False
        self.move_cursor(self.run_keys.index(run_key))
        return True

    # ------------------------------------------------------------------ cursor

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row ``row`` (clamped), scroll it into view, post :class:`RowHighlighted`."""
        if not self.run_keys:
            return
        row = max(0, min(len(self.run_keys) - 1, row))
        if row != self.cursor_row:
            self._refresh_rows((self.cursor_row, row))
            self.cursor_row = row
            self.post_message(self.RowHighlighted(self, self.selected_run_key, row))
        self._scroll_cursor_into_view()

    @property
    def _visible_rows(self) -> int:
        """Rows on screen under the header."""
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        visible = self._visible_rows
        y = int(self.scroll_y)
        if self.cursor_row < y:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= y + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - max(1, self._visible_rows - 1))

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + max(1, self._visible_rows - 1))

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.run_keys) - 1)

    def action_select_cursor(self) -> None:
        rk = self.selected_run_key
        if rk is not None:
            self.post_message(self.RowSelected(self, rk))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = int(self.scroll_y) + offset.y - 1
        if not (0 <= row < len(self.run_keys)):
            return
        event.stop()
        if row == self.cursor_row or event.chain > 1:
            self.move_cursor(row)
            self.action_select_cursor()
        else:
            self.move_cursor(row)

    def on_resize(self) -> None:
        """Smaller (e.g. the filter bar opened above): the selected row stays on screen."""
        self.call_after_refresh(self._scroll_cursor_into_view)

    def on_focus(self) -> None:
        self._strips.clear()  # the cursor's style follows the focus
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._seg_cache.clear()
        self._header = None

    # ------------------------------------------------------------------ rendering

    def _cell_segments(self, cell: Text, width: int, justify: str) -> list[Segment]:
        """The segments of one cell padded to its column (``width`` cells plus the cell padding), without
        the row's style; cached by what the cell shows (most cells of a busy row are the same at the
        next refresh: only its age, tokens and dollars move)."""
        key = (text_sig(cell), width, justify, self.cell_padding)
        hit = self._seg_cache.get(key)
        if hit is not None:
            return hit
        pad = " " * self.cell_padding
        line = Text(no_wrap=True, overflow="crop", end="")
        line.append(pad)
        gap = width - cell.cell_len
        if gap > 0 and justify == "right":
            line.append(" " * gap)
        line.append_text(cell)
        if gap > 0 and justify != "right":
            line.append(" " * gap)
        line.append(pad)
        segs = list(line.render(self.app.console))
        if len(self._seg_cache) >= 4096:
            self._seg_cache.clear()
        self._seg_cache[key] = segs
        return segs

    def _join(self, cells: Iterable[Text], style: Style) -> Strip:
        """One full-width line: each cell padded to its column, on ``style`` (the row's background)."""
        segments: list[Segment] = []
        for cell, col in zip(cells, self.columns.values()):
            segments.extend(self._cell_segments(cell, col.width, cell.justify or _COL[col.key].justify))
        segments = list(Segment.apply_style(segments, style))
        return Strip(segments).adjust_cell_length(self._total_width, style)

    def _row_strip(self, index: int) -> Strip:
        rk = self.run_keys[index]
        row = self._fresh(rk)
        cursor = index == self.cursor_row
        token = (self._cells.get(rk), cursor, index % 2)
        hit = self._strips.get(rk)
        if hit is not None and hit[0] == token:
            return hit[1]
        if cursor:
            style = self.get_component_rich_style("runs-table--cursor")
        elif index % 2:
            style = self.get_component_rich_style("runs-table--even-row")
        else:
            style = Style()
        strip = self._join((row[k] for k in self.columns), style)
        self._strips[rk] = (token, strip)
        return strip

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = int(self.scroll_x), int(self.scroll_y)
        if y == 0:
            if self._header is None or self._header[0] != self._layout:
                style = self.get_component_rich_style("runs-table--header")
                self._header = (self._layout, self._join((c.label for c in self.columns.values()), style))
            strip = self._header[1]
        else:
            index = scroll_y + y - 1
            if not (0 <= index < len(self.run_keys)):
                return Strip.blank(width, self.rich_style)
            strip = self._row_strip(index)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
