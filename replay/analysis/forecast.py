"""A run's score at its horizon (12 h, or its own budget) forecast from its first hours.

From a run's best-so-far curve (:class:`edgetui.replay.analysis.score_at.RunCurve`) at the elapsed time
reached so far:

* **points**: each new best at the time its result was known, up to now (at most 48, thinned
  evenly), and the best so far now;
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
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from edgetui.replay.analysis.backtest import forecast_fixed_beta

__all__ = ["Forecast", "forecast_run", "prior_beta", "DEFAULT_BETA", "BACKTEST_ERRORS"]

#: median beta of the log-sigmoid fits of the 252 complete open-51 per-task curves
DEFAULT_BETA = 1.0
#: window → (10th, 90th) percentile of actual − forecast (points), single tasks, open-51 per-task
#: table (`edgetui fit --backtest --format json`, fields error_q10 / error_q90; checked by a test)
BACKTEST_ERRORS = {"2-4h": (-9.28, 8.92), "2-6h": (-5.16, 4.89)}


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
) -> Optional[Forecast]:
    """The :class:`Forecast` of ``curve`` at ``horizon_h`` hours, from its state at ``elapsed_s``
    (default: where it is now, or its end). ``None`` before it has a valid value."""
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
    # each new best at the time it was known (exact there; a grid of times would read the steps late)
    pts = [(t / 3600.0, v) for t, v, _ in curve.steps if v is not None and 0 < t <= e]
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
    window = "2-4h" if eh < horizon_h / 2 else "2-6h"
    q10, q90 = BACKTEST_ERRORS[window]
    return Forecast(
        horizon_h, value, max(base, value + q10), min(100.0, value + q90), base, eh, beta, prior, window, len(pts)
    )
