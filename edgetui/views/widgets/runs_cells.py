"""The live runs table's cells: pure helpers (no Textual, no I/O; tested without a terminal)
that turn a :class:`edgetui.live.model.LiveRun` snapshot into cells, and the columns, their
tiers and widths. The widget is :class:`edgetui.views.widgets.runs_table.RunsTable`.

* :func:`status_text` — ``● running`` coloured by status (running green,
  grading cyan, finished dim, aborted yellow, gone red), ``N queued`` (``qN``
  compact: rounds waiting in the judge's queue) and flags: ``⚠N``
  unacknowledged alarms (red), ``✓N`` acknowledged ones still holding (dim),
  ``⚑`` infra error, ``OOM``, ``stopped`` / ``killed`` (by the operator),
  ``over`` (budget);
* :func:`fmt_hm` / :func:`budget_bar` — elapsed and budget as ``h:mm`` plus a
  small bar (green, yellow past 75 %, red past the budget);
* :func:`fmt_age` — age of the last event: ``12s``, ``4m``, ``2h05``, ``16h``, ``3d``;
* :func:`sort_runs` / :func:`filter_runs` — the runs screen's sort and type-ahead filter;
* :func:`forecast_cell` — a live run's forecast at its horizon (budget or 12 h) with its 80 %
  interval beside "last best persists" (both 0–100), from the Forecast dicts the runs screen's
  worker reads (:func:`edgetui.analysis.forecast_prior.header_forecast`).

"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Optional

from rich.text import Text

from edgetui.live.model import LiveRun

from edgetui.control_chars import visible
from edgetui.names import abbreviate
from edgetui.views.widgets.fmt import fmt_count, fmt_hours, fmt_score, fmt_subs, fmt_usd, visible_text

__all__ = [
    "COLUMNS",
    "NAME_KEYS",
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

#: Colour of each live status (docs/sforge-run-folders.md §8.1, edgetui.live.model).
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
    if elapsed is None or elapsed < 0 or not budget or budget <= 0 or width <= 0:
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
    """``● grading 2 queued ⚠2 ⚑infra`` — status coloured, the run's rounds waiting in the judge's
    queue, then alarm count and flags in red.

    ``compact`` keeps the flag symbols only (``⚑`` for infra, first letter for others);
    ``budget=False`` leaves out the over-budget flag (a caller that says it in words).
    """
    st = run.status or "?"
    t = Text("● ", style=STATUS_COLORS.get(st, "dim"))
    t.append(st, style=STATUS_COLORS.get(st, ""))
    n_queued = len(getattr(run, "queued_rounds", None) or [])
    if n_queued:  # rounds waiting in the judge's queue (newer judges, /history: docs/sforge-judge.md)
        t.append(f" q{n_queued}" if compact else f" {n_queued} queued", style="yellow")
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
                t.append(
                    " o" if compact else " over", style="bold red"
                )  # running past its budget (the elapsed cell is red too)
        else:
            t.append(f" {f[:1]}" if compact else f" {f}", style="red")
    return visible_text(t, one_line=True)


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
COL = {c.key: c for c in COLUMNS}

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
CAPS = {
    "n": {"host": 10, "run_id": 18, "task": 18, "status": 16},
    "m": {"host": 22, "run_id": 18, "task": 18, "model": 16, "status": 20},
    "w": {"host": 28, "run_id": 30, "task": 24, "model": 24, "status": 30},
}

#: mark and colour of a remote host's connection state (edgetui.hosts.ssh.HostState.kind) in the host column
HOST_MARKS = {
    "up": ("●", "green"),
    "degraded": ("◐", "yellow"),
    "connecting": ("◌", "yellow"),
    "down": ("✗", "bold red"),
    "auth failed": ("✗", "bold red"),
    "host key refused": ("✗", "bold red"),
    "forbidden": ("✗", "bold red"),
}


def has_remote(runs: Iterable[LiveRun]) -> bool:
    """Does any run live on another host than this machine (the host column is shown then)?"""
    return any(r.host not in ("", "local", None) or r.cluster for r in runs)


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
        return run.model or run.agent or None
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


def sort_runs(
    runs: Iterable[LiveRun],
    key: str = "status",
    reverse: bool = False,
    *,
    now: float = 0.0,
    forecasts: Optional[dict[str, Any]] = None,
) -> list[LiveRun]:
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
            for x in (
                r.run_key,
                r.run_id,
                r.task_id,
                r.model,
                r.agent,
                r.status,
                r.host,
                *r.flags,
                "infra" if r.infra_error else "",
                "alarm" if r.current_alarms else "",
            )
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
    v, lo, hi, base, h = (
        forecast["value"],
        forecast.get("lo"),
        forecast.get("hi"),
        forecast["baseline"],
        forecast["horizon_h"],
    )
    wide = tier == "w"
    t = Text(justify="right")
    t.append(f"{v:.1f}" if wide else f"{v:.0f}", style="bold magenta")
    if short:
        return t
    if lo is None:
        t.append(f" at {fmt_hours(h)}", style="dim")
        return t
    if tier == "n":  # 80 columns: the interval only (the best column beside it holds the last best)
        t.append(f" {lo:.0f}–{hi:.0f}", style="magenta")
        return t
    t.append(f" [{lo:.0f}–{hi:.0f}]", style="magenta")
    t.append(f" · {base:.1f} @{fmt_hours(h)}" if wide else f"·{base:.0f}", style="dim")
    return t


def row_cells(
    run: LiveRun,
    now: float,
    tier: str = "w",
    forecast: Any = None,
    forecast_short: bool = False,
    *,
    host_column: bool = False,
) -> dict[str, Text]:
    """Cells of one run for every column of ``tier`` (uncut; :class:`RunsTable` fits them).
    ``forecast``: the run's Forecast dict, :data:`FORECAST_PENDING` or ``None``; ``forecast_short``:
    its short form (:func:`forecast_cell`). Without ``host_column`` a remote run's id reads
    ``host:run_id``; with it the host has its own cell, marked with its connection state
    (:data:`HOST_MARKS`)."""
    compact = tier == "n"
    cells: dict[str, Text] = {}
    where = run.cluster or run.host or "local"  # a pod-backed run: context/namespace
    host = Text(visible(where), style="dim" if where in ("", "local") else "")
    if run.host_state in HOST_MARKS:  # the mark first: a narrow column cuts the name, not the state
        mark, style = HOST_MARKS[run.host_state]
        host = Text.assemble((mark, style), " ", host)
        if tier == "w" and run.host_state in ("up", "degraded") and run.host_rtt_s is not None:
            host.append(f" {run.host_rtt_s * 1000:.0f}ms", style="dim")
    cells["host"] = host
    rid = run.run_id if host_column or run.host in ("", "local", None) else f"{run.host}:{run.run_id}"
    cells["run_id"] = Text(visible(rid), style="bold")  # (escaped before Text, which drops BEL, BS, VT, FF, CR)
    cells["task"] = Text(visible(run.task_id), style="cyan" if not compact else "bold cyan")
    model = run.model or run.agent or "–"
    cells["model"] = Text(visible(model))
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
    cells["subs"] = Text(fmt_subs(run.agent_submissions, run.auto_submissions, run.game_sessions), justify="right")
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
    # run content (folder names, model, host) shown escaped: one row stays one line, no sequence sent
    return {k: visible_text(v, one_line=True) for k, v in cells.items()}


def column_label(key: str, tier: str, sort_key: Optional[str] = None, reverse: bool = False) -> str:
    """A column's header label in ``tier`` (the narrow tier's short one), with the sort arrow when
    ``key`` is ``sort_key``."""
    col = COL[key]
    short = tier == "n" or (tier == "m" and key == "forecast")  # its compact cell in the medium tier too
    label = (col.narrow_label or col.label) if short else col.label
    return label + ((" ▼" if reverse else " ▲") if key == sort_key else "")


#: columns of names: cut to the part that tells a value apart from the others of its column
#: (:func:`edgetui.names.abbreviate`), and given that width before the numbers' columns
NAME_KEYS = ("host", "run_id", "task", "model")


def fit(key: str, cell: Text, width: int, ends: Optional[dict[str, tuple[int, int]]] = None) -> Text:
    """``cell`` cut to ``width`` cells: a name (:data:`NAME_KEYS`) to what tells it apart from the
    others of its column (``ends``: :func:`edgetui.names.shared_ends` of the column), other text
    with a trailing ``…``."""
    if cell.cell_len <= width:
        return cell
    if key in NAME_KEYS and ends is not None and not cell.spans:
        plain = cell.plain
        return Text(abbreviate(plain, width, *ends.get(plain, (0, 0))), style=cell.style)
    if key == "run_id":
        out = Text(_cut_middle(cell.plain, width), style=cell.style)
        return out
    out = cell.copy()
    out.truncate(width, overflow="ellipsis")
    return out
