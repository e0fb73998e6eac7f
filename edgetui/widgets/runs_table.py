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
* :func:`sort_runs` / :func:`filter_runs` — the runs screen's sort and type-ahead filter.

:class:`RunsTable` is a :class:`~textual.widgets.DataTable` whose columns
follow the width (three tiers; text columns shrink before the table scrolls
sideways). Updates keep the selected run selected and, when the rows are the
same, only repaint the cells that changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from rich.text import Text
from textual.widgets import DataTable

from edgetui.live.model import LiveRun

from .fmt import fmt_count, fmt_score, fmt_usd

__all__ = [
    "COLUMNS",
    "RunsTable",
    "SORT_KEYS",
    "STATUS_COLORS",
    "budget_bar",
    "filter_runs",
    "fmt_age",
    "fmt_bytes",
    "fmt_hm",
    "fmt_best",
    "row_cells",
    "sort_runs",
    "status_text",
    "tier_for",
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


def _cell_sig(c: Text) -> tuple:
    """What a cell shows (text and styles): equal signatures need no repaint."""
    return (c.plain, str(c.style), tuple((s.start, s.end, str(s.style)) for s in c.spans))


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
    Col("run_id", "run id", "mw", 10, shrink=True),
    Col("task", "task", "nmw", 8, shrink=True),
    Col("model", "agent/model", "mw", 8, shrink=True),
    Col("status", "status", "nmw", 9),
    Col("elapsed", "elapsed / budget", "nmw", 9, narrow_label="elapsed"),
    Col("best", "best", "nmw", 4, justify="right"),
    Col("subs", "subs", "nmw", 4, justify="right"),
    Col("last", "last", "nmw", 4, justify="right"),
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
    ("tokens", "tokens"),
    ("cost", "cost"),
    ("cpu", "cpu"),
)
#: Caps of text columns per tier.
_CAPS = {
    "n": {"task": 18, "status": 16},
    "m": {"run_id": 18, "task": 18, "model": 16, "status": 20},
    "w": {"run_id": 30, "task": 24, "model": 24, "status": 30},
}


def tier_for(width: int) -> str:
    """``n`` below 120 columns, ``m`` below 150, ``w`` from 150."""
    return "n" if width < 120 else ("m" if width < 150 else "w")


def _sort_value(run: LiveRun, key: str, now: float) -> Any:
    if key == "status":
        return (0 if run.current_alarms else 1, STATUS_RANK.get(run.status, 9), -(run.elapsed_s or 0.0))
    if key == "run_id":
        return (run.run_id, run.host)
    if key == "task":
        return run.task_id
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


def sort_runs(runs: Iterable[LiveRun], key: str = "status", reverse: bool = False, *, now: float = 0.0) -> list[LiveRun]:
    """Runs sorted by ``key`` (one of :data:`SORT_KEYS`), ties by run key; ``None`` always last.

    The default ``status`` order puts runs with alarms first, then gone,
    running/grading (longest first), aborted, finished.
    """
    runs = list(runs)
    with_v = [(r, _sort_value(r, key, now)) for r in runs]
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


def row_cells(run: LiveRun, now: float, tier: str = "w") -> dict[str, Text]:
    """Cells of one run for every column of ``tier`` (uncut; :class:`RunsTable` fits them)."""
    compact = tier == "n"
    cells: dict[str, Text] = {}
    rid = run.run_id if run.host in ("", "local", None) else f"{run.host}:{run.run_id}"
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
    cells["tokens"] = Text(fmt_count(run.tokens) if run.tokens else "–", justify="right")
    cells["cost"] = Text(fmt_usd(run.cost_usd), style="yellow", justify="right")
    cells["cpu"] = Text("–" if run.cpu_percent is None else f"{run.cpu_percent:.0f}%", justify="right")
    mem = fmt_bytes(run.mem_bytes)
    cells["mem"] = Text(mem, justify="right")
    return cells


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


class RunsTable(DataTable):
    """Rows of live runs; the runs screen decides order, filter and tier (:meth:`show`)."""

    DEFAULT_CSS = """
    RunsTable { height: 1fr; scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self.run_keys: list[str] = []
        self._layout: tuple = ()
        self._cells: dict[str, tuple] = {}
        # per-cell render cache that survives updates of OTHER cells (DataTable's own cell cache is
        # keyed on a table-wide update counter, so one changed cell re-renders every visible cell)
        self._cell_ver: dict[tuple, int] = {}
        self._gen = 0
        self._cell_cache: dict[tuple, Any] = {}

    def _render_cell(self, row_index: int, column_index: int, base_style: Any, width: int,
                     cursor: bool = False, hover: bool = False) -> Any:
        if row_index < 0 or column_index < 0:  # header / labels: DataTable's own path
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        rk = self._row_locations.get_key(row_index)
        ck = self._column_locations.get_key(column_index)
        key = (self._gen, rk, ck, self._cell_ver.get((rk, ck), 0), row_index, base_style, width, cursor, hover,
               self._show_hover_cursor, self._pseudo_class_state)
        hit = self._cell_cache.get(key)
        if hit is None:
            if len(self._cell_cache) > 20000:
                self._cell_cache.clear()
            hit = self._cell_cache[key] = super()._render_cell(row_index, column_index, base_style, width,
                                                                cursor, hover)
        return hit

    @property
    def selected_run_key(self) -> Optional[str]:
        """Run key of the row under the cursor (``None`` when empty)."""
        if not self.run_keys or not (0 <= self.cursor_row < len(self.run_keys)):
            return None
        return self.run_keys[self.cursor_row]

    def _widths(self, keys: Sequence[str], rows: list[dict[str, Text]], tier: str, labels: dict[str, str],
                available: int) -> dict[str, int]:
        caps = _CAPS[tier]
        w: dict[str, int] = {}
        for k in keys:
            content = max((r[k].cell_len for r in rows), default=0)
            w[k] = max(len(labels[k]), min(content, caps.get(k, 10**6)))
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
        return w

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
        """Show ``runs`` in this order; keeps the selected run selected when it is still shown."""
        keys = [c.key for c in COLUMNS if tier in c.tiers]
        labels = {}
        for k in keys:
            c = _COL[k]
            labels[k] = (c.narrow_label or c.label) if tier == "n" else c.label
        raw = [row_cells(r, now, tier) for r in runs]
        avail = available if available is not None else max(20, (self.size.width or 160) - 1)
        widths = self._widths(keys, raw, tier, labels, avail)
        arrow = " ▼" if reverse else " ▲"
        shown_labels = {k: labels[k] + (arrow if k == sort_key else "") for k in keys}
        for k in keys:  # the arrow must not widen a fitted column past its label
            widths[k] = max(widths[k], len(shown_labels[k]))
        layout = (tuple(keys), tuple(widths[k] for k in keys), tuple(shown_labels[k] for k in keys))
        new_keys = [r.run_key for r in runs]
        fitted = [{k: _fit(k, row[k], widths[k]) for k in keys} for row in raw]
        selected = self.selected_run_key

        if layout == self._layout and new_keys == self.run_keys:
            for rk, row in zip(new_keys, fitted):
                sig = tuple(_cell_sig(row[k]) for k in keys)
                old = self._cells.get(rk)
                if old == sig:
                    continue
                for j, k in enumerate(keys):
                    if old is None or old[j] != sig[j]:  # only the cells that changed
                        self._cell_ver[(rk, k)] = self._cell_ver.get((rk, k), 0) + 1  # == (RowKey, ColumnKey)
                        self.update_cell(rk, k, row[k])
                self._cells[rk] = sig
            return

        scroll_y = self.scroll_y
        self._gen += 1  # rows re-added: every cached cell render is stale
        self._cell_ver.clear()
        self._cell_cache.clear()
        self.clear(columns=layout != self._layout)
        if layout != self._layout:
            for k in keys:
                c = _COL[k]
                lab = Text(shown_labels[k], style="bold", justify=c.justify)  # type: ignore[arg-type]
                self.add_column(lab, width=widths[k], key=k)
            self._layout = layout
        self._cells = {}
        for rk, row in zip(new_keys, fitted):
            self.add_row(*(row[k] for k in keys), key=rk)
            self._cells[rk] = tuple(_cell_sig(row[k]) for k in keys)
        self.run_keys = new_keys
        if selected in new_keys:
            idx = new_keys.index(selected)
            self.scroll_y = scroll_y
            self.move_cursor(row=idx, animate=False, scroll=True)
        elif new_keys:
            self.move_cursor(row=0, animate=False)

    def select_run(self, run_key: str) -> bool:
        """Put the cursor on ``run_key``; ``False`` when it is not shown."""
        if run_key not in self.run_keys:
            return False
        self.move_cursor(row=self.run_keys.index(run_key), animate=False)
        return True
