"""One formatter per quantity, shared by the command line and the screens (pure functions, no I/O,
no Rich): a score, a pass rate, a task's best (whichever of the two it is judged by), submissions
(or game sessions), counts, dollars, UTC times, hours (horizons, axis ticks) and counted nouns.
The screens' :mod:`edgetui.views.widgets.fmt` re-exports them."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Optional

__all__ = [
    "elapsed_ticks",
    "finite",
    "fmt_best",
    "fmt_count",
    "fmt_hours",
    "fmt_pct",
    "fmt_score",
    "fmt_subs",
    "fmt_usd",
    "fmt_utc",
    "lower_is_better",
    "plural",
]


def finite(v: Any) -> Optional[float]:
    """``v`` as a finite float; ``None`` for None, booleans, text and NaN / infinities."""
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):  # not a number (text, an object): no value
        return None
    return f if math.isfinite(f) else None


def fmt_score(v: Any) -> str:
    """A raw score with up to 4 significant digits (``67.25``, ``0.1235``, ``12,345``); ``–`` if none."""
    f = finite(v)
    if f is None:
        return "–"
    if abs(f) >= 1e4:
        return f"{f:,.0f}" if abs(f) < 1e9 else f"{f:.3g}"
    s = f"{f:.4g}"
    return s if "e" not in s else f"{f:.3g}"


def fmt_pct(pass_rate: Any) -> str:
    """A 0–1 pass rate as percent: ``85%``, ``85.5%``; ``–`` if none."""
    f = finite(pass_rate)
    if f is None:
        return "–"
    p = f * 100
    return f"{p:.0f}%" if abs(p - round(p)) < 0.05 else f"{p:.1f}%"


def fmt_best(score: Any, pass_rate: Any, score_task: Any) -> str:
    """A task's best in its own quantity: the raw score of a score task (``67.25``), the pass rate of
    a pass-rate task (``100%``; SForge stores it as its best score too); ``–`` if none."""
    return fmt_score(score) if score_task else fmt_pct(pass_rate)


def fmt_subs(agent: Any, auto: Any, games: Any = None) -> str:
    """Submissions as ``agent/auto`` (``225/23``: the agent's, then the automatic ones), or a game
    task's sessions (``6 games``)."""
    g = finite(games)
    if g:
        return plural(int(g), "game")
    return f"{int(finite(agent) or 0)}/{int(finite(auto) or 0)}"


def fmt_count(n: Any) -> str:
    """``950``, ``12.3k``, ``4.5M``, ``1.2B``."""
    f = finite(n)
    if f is None:
        return "–"
    a = abs(f)
    for unit, div in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if a >= div:
            v = f / div
            return f"{v:.1f}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"
    return f"{f:.0f}"


def fmt_usd(v: Any) -> str:
    """``$1.23``, ``$12,345``; ``–`` if none."""
    f = finite(v)
    if f is None:
        return "–"
    return f"${f:,.2f}" if abs(f) < 1e5 else f"${f:,.0f}"


def fmt_utc(t: Any) -> str:
    """Epoch seconds as ``2026-01-01 12:34:56Z``."""
    f = finite(t)
    if f is None:
        return "–"
    return datetime.fromtimestamp(f, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def fmt_hours(h: Any) -> str:
    """A duration given in hours, as a horizon or an axis tick reads it: ``12h``, ``1.5h``, ``1h05``,
    ``10m``, ``4m``, ``30s`` (whole minutes under an hour, never ``0.166667h``); ``–`` if none."""
    f = finite(h)
    if f is None:
        return "–"
    sign = "-" if f < 0 else ""
    s = round(abs(f) * 3600)
    if s == 0:
        return "0"
    if s < 60:
        return f"{sign}{s}s"
    if s < 3600:
        m, sec = divmod(s, 60)
        return f"{sign}{m}m" if sec == 0 or m >= 10 else f"{sign}{m}m{sec:02d}"
    hours = s / 3600
    if abs(hours * 2 - round(hours * 2)) < 1e-9:  # whole and half hours: 12h, 1.5h
        return f"{sign}{hours:g}h"
    hh, rem = divmod(s, 3600)
    return f"{sign}{hh}h{round(rem / 60):02d}"


def lower_is_better(run: Any) -> bool:
    """Whether a run's task minimises its raw score (a route's length, a cost): ``score_direction``
    of the run (a dict such as a run header or a runs row), else of its task."""
    get = run.get if isinstance(run, dict) else lambda k: getattr(run, k, None)
    return str(get("score_direction") or get("task_score_direction") or "").lower() == "minimize"


def plural(n: int, word: str, words: Optional[str] = None) -> str:
    """``1 annotation``, ``2 annotations`` (``words``: an irregular plural)."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


#: steps between elapsed-time ticks, in hours: 1, 2, 5, 10, 15, 30 minutes, then whole hours
TICK_STEPS_H = (1 / 60, 2 / 60, 1 / 12, 1 / 6, 0.25, 0.5, 1, 2, 3, 4, 6, 12, 24, 48)


def elapsed_ticks(span_h: float, most: int) -> list[float]:
    """Ticks (hours) from 0 over ``span_h`` hours, at most ``most`` of them, on a round step
    (:data:`TICK_STEPS_H`); labelled with :func:`fmt_hours`. Empty for no span."""
    if not span_h or span_h <= 0 or most < 2:
        return []
    step = next((s for s in TICK_STEPS_H if span_h / s <= most - 1), TICK_STEPS_H[-1])
    n = int(span_h / step + 1e-9)
    return [round(i * step, 9) for i in range(n + 1)]
