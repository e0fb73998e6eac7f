"""A run's score at its horizon (12 h, or its own budget) forecast from its first hours.

From a run's best-so-far curve (:class:`edgetui.replay.analysis.score_at.RunCurve`) at the elapsed time
reached so far:

* **points**: the back-test's window scaled to now (its 2–4 h window is the second half of the
  hours so far, its 2–6 h window their last two thirds): the best so far at the window's start, each
  new best after it at the time its result was known (at most 48, thinned evenly), and the best so
  far now. A run's first minutes are left out as the back-test leaves them out: a run that starts
  high would otherwise put the law's bend before its first point and its forecast at its best so far;
* **shape prior**: beta fixed to the median beta of the log-sigmoid fits of the run's earlier
  recorded runs of the same task, else of the same model (:func:`edgetui.analysis.forecast_prior.shape_prior`:
  each earlier run fitted once and stored in the ``fits`` table, never the run itself; a live
  update only reads them), else 1.0 (the median beta of the log-sigmoid fits of the 252 complete curves of
  EdgeBench's open-51 per-task table); :func:`prior_beta` applies the same median to given rows;
* **forecast**: t_mid on a grid and Smax in closed form with that beta
  (:func:`edgetui.replay.analysis.backtest.forecast_fixed_beta`), S at the horizon, kept between the best
  so far and 100;
* **interval**: the 10th–90th percentile errors of that forecast measured by back-testing single
  tasks on the open-51 per-task table (``edgetui fit --backtest``): from 2–4 h when under half of the
  horizon has elapsed, from 2–6 h otherwise; none once the horizon is reached;
* **baseline**: the best so far ("last best persists"), always shown beside it.

With EdgeBench's published per-task table (saved as CSV by the user, ``edgetui forecast --published
FILE``; nothing of it ships with edgetui) and no earlier recorded run of the task, the forecast is the
**published gain** instead where the back-test found it better (``edgetui fit --backtest``,
docs/analysis.md): the best so far plus the median gain from now to the horizon of the table's
curves of the same task (every window), or of every curve of the table while under half of the
horizon has elapsed (from half of it on, the fixed-beta fit above did better on curves of other tasks).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from edgetui.replay.analysis.backtest import forecast_fixed_beta

__all__ = [
    "Forecast",
    "PublishedCurves",
    "forecast_run",
    "prior_beta",
    "DEFAULT_BETA",
    "BACKTEST_ERRORS",
    "GAIN_ERRORS",
]

#: median beta of the log-sigmoid fits of the 252 complete open-51 per-task curves
DEFAULT_BETA = 1.0
#: window → (10th, 90th) percentile of actual − forecast (points), single tasks, open-51 per-task
#: table (`edgetui fit --backtest --format json`, fields error_q10 / error_q90; checked by a test)
BACKTEST_ERRORS = {"2-4h": (-9.28, 8.92), "2-6h": (-5.16, 4.89)}
#: the same for the published-gain forecasts (fields gain_task_q10 / _q90, gain_all_q10 / _q90): the
#: windows where each beat the fixed-beta forecast in the back-test (checked by a test)
GAIN_ERRORS = {
    "task": {"2-4h": (-5.19, 7.84), "2-6h": (-3.65, 5.27)},
    "all": {"2-4h": (-3.09, 12.64)},
}


class PublishedCurves:
    """Per-task best-so-far curves of a published table (:func:`edgetui.replay.analysis.leaderboard.read_task_table`'s
    values: one curve per group × task, e.g. model × task), for the published-gain forecast."""

    def __init__(self, values, source: str = "the published table") -> None:
        by: dict[tuple, dict[float, list[float]]] = {}
        for v in values:
            if v.value is not None:
                by.setdefault((tuple(v.group), v.task), {}).setdefault(float(v.hours), []).append(float(v.value))
        self.curves = {k: sorted((h, sum(x) / len(x)) for h, x in d.items()) for k, d in by.items()}
        self.source = source

    @staticmethod
    def _at(pts: list[tuple[float, float]], h: float) -> Optional[float]:
        """The curve at ``h`` hours, linear in ln t between its hours; ``None`` outside them."""
        if not pts or h < pts[0][0] - 1e-9 or h > pts[-1][0] + 1e-9:
            return None
        for (h0, v0), (h1, v1) in zip(pts, pts[1:]):
            if h0 <= h <= h1:
                return v0 + (v1 - v0) * (math.log(h) - math.log(h0)) / (math.log(h1) - math.log(h0))
        return pts[-1][1] if abs(h - pts[-1][0]) < 1e-9 else pts[0][1]

    def gain(self, task_id: Optional[str], from_h: float, to_h: float) -> Optional[tuple[float, int, str]]:
        """(median gain from ``from_h`` to ``to_h`` hours, curves, ``"task"`` or ``"all"``) over the curves of
        ``task_id`` when the table has it, else over all of them; ``from_h`` before the table's first hour
        counts from that hour. ``None`` when ``to_h`` is beyond the table's hours or no curve spans both."""
        same = [pts for (g, t), pts in self.curves.items() if t == task_id]
        kind, pool = ("task", same) if same else ("all", list(self.curves.values()))
        gains = []
        for pts in pool:
            a, b = self._at(pts, max(from_h, pts[0][0])), self._at(pts, to_h)
            if a is not None and b is not None:
                gains.append(b - a)
        if not gains:
            return None
        return float(statistics.median(gains)), len(gains), kind


@dataclass
class Forecast:
    """``value``: forecast at ``horizon_h`` (0–100); ``lo``/``hi``: its 80 % interval (``None``
    past the horizon); ``baseline``: the best so far; ``elapsed_h``; ``beta`` and ``prior`` (where it
    came from); ``window``: the back-test window whose errors give the interval."""

    horizon_h: float
    value: float
    lo: Optional[float]
    hi: Optional[float]
    baseline: float
    elapsed_h: float
    beta: float
    prior: str
    window: Optional[str]
    n_points: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def prior_beta(
    stored: Sequence[dict], task_id: Optional[str], model: Optional[str], exclude_run: Optional[str] = None
) -> tuple[float, str]:
    """(beta, where from) from stored fits (``fits`` rows: ``task_id``, ``model``, ``run_key``,
    ``beta``, ``findings``), never the run being forecast (``exclude_run``)."""
    rows = [r for r in stored if r.get("beta") and r.get("run_key") != exclude_run and math.isfinite(r["beta"])]
    for key, val, label in (("task_id", task_id, "task"), ("model", model, "model")):
        xs = [r["beta"] for r in rows if val is not None and r.get(key) == val and r.get("findings")]
        if xs:
            return float(statistics.median(xs)), f"{len(xs)} stored fit(s) of this {label}"
    return DEFAULT_BETA, "default (open-51 per-task median)"


def forecast_run(
    curve,
    horizon_h: float = 12.0,
    beta: float = DEFAULT_BETA,
    prior: str = "default",
    elapsed_s: Optional[float] = None,
    published: Optional[PublishedCurves] = None,
) -> Optional[Forecast]:
    """The :class:`Forecast` of ``curve`` at ``horizon_h`` hours, from its state at ``elapsed_s``
    (default: where it is now, or its end). ``None`` before it has a valid value. ``published``:
    a published per-task table, for the published-gain forecast (the caller passes it only when no
    earlier recorded run of the task gives the prior)."""
    e = elapsed_s
    if e is None:
        e = curve.now_elapsed_s if curve.live or curve.end_elapsed_s is None else curve.end_elapsed_s
    if e is None or e <= 0:
        return None
    now_cell = curve.cell(e / 3600.0, include_infra=True)
    if now_cell.value is None:
        return None
    base = float(now_cell.value)
    eh = e / 3600.0
    if eh >= horizon_h:
        v = curve.cell(horizon_h, include_infra=True).value
        return Forecast(horizon_h, float(v if v is not None else base), None, None, base, eh, beta, prior, None, 0)
    window = "2-4h" if eh < horizon_h / 2 else "2-6h"
    # the back-test's window, scaled to now: from half of the elapsed time (2-4h), from a third (2-6h);
    # its first point is the best so far there, then each new best at the time it was known (exact
    # there; a grid of times would read the steps late)
    start = e * (0.5 if window == "2-4h" else 1 / 3)
    first = curve.cell(start / 3600.0, include_infra=True).value
    pts = [(start / 3600.0, float(first))] if first is not None else []
    pts += [(t / 3600.0, v) for t, v, _ in curve.steps if v is not None and start < t <= e]
    if len(pts) > 48:  # keep the last; thin the rest evenly
        idx = sorted({round(i * (len(pts) - 1) / 47) for i in range(48)})
        pts = [pts[i] for i in idx]
    if pts and pts[-1][0] < eh:
        pts.append((eh, base))
    if len(pts) >= 2 and max(v for _, v in pts) > min(v for _, v in pts):
        t = np.array([h for h, _ in pts])
        y = np.array([[v for _, v in pts]])
        value = float(forecast_fixed_beta(t, y, np.array([beta]), horizon_h)[0])
    else:
        value = base
    value = min(100.0, max(base, value))
    q10, q90 = BACKTEST_ERRORS[window]
    g = published.gain(getattr(curve, "task_id", None), eh, horizon_h) if published is not None else None
    if g is not None and published is not None and window in GAIN_ERRORS[g[2]]:
        gain, n, kind = g
        value = min(100.0, base + max(0.0, gain))
        q10, q90 = GAIN_ERRORS[kind][window]
        what = "this task's" if kind == "task" else "all"
        prior = f"the median gain to {horizon_h:g} h of {n} curve(s) ({what}) of {published.source}"
        beta = math.nan
    return Forecast(
        horizon_h, value, max(base, value + q10), min(100.0, value + q90), base, eh, beta, prior, window, len(pts)
    )
