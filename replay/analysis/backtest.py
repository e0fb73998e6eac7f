"""Back-test of the 12-hour forecast on a per-task table (``edgetui fit --backtest``).

For every curve of the table (a task × model, and each model's suite mean) and each early window
(2–6 h and 2–4 h by default), leave-one-out:

1. **prior**: the shape ``beta`` is the median beta of the log-sigmoid fits (2–12 h, the
   vectorised profile grid of :func:`edgetui.replay.analysis.fit.fit_many`) of the curves that share
   neither the task nor the model being predicted (for a suite mean: the other models' means);
2. **forecast**: with beta fixed, ``t_mid`` (grid over ln t_mid in [ln 0.01, ln 1000]) and
   ``Smax`` (closed form, 0–100) are fitted to the window's points; the forecast is S at the
   target hour, kept between the window's last value and 100 (a best-so-far does not fall);
3. **interval**: the forecast plus the 10th and 90th percentiles of the errors (actual −
   forecast) of the curves that share neither task nor model (an 80 % interval measured by
   back-testing, never seeing the predicted curve);
4. **baseline**: "last best persists": the window's last value, with its interval made the same way;
5. **published gain** (the prior ``edgetui forecast --published TABLE`` uses): the window's last value
   plus the median gain from the window's end to the target hour of the table's other curves: of the
   same task by other models (``gain_task``; for a suite mean, the other models' means), and of every
   curve sharing neither task nor model (``gain_all``); errors and intervals made the same way.

Reported per model and overall: the mean absolute error of both and how often their 80 %
intervals cover the actual value. Curves missing a value in the window or at the target hour are
left out (and counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from edgetui.replay.analysis.fit import F, fit_many

__all__ = ["BacktestRow", "backtest", "forecast_fixed_beta", "markdown"]

_LN_TM = np.linspace(math.log(0.01), math.log(1000.0), 601)


def forecast_fixed_beta(t: np.ndarray, Y: np.ndarray, beta: np.ndarray, target: float) -> np.ndarray:
    """S at ``target`` hours for each row of ``Y`` ((U, n) over hours ``t``) fitted with its own
    fixed ``beta`` ((U,)): t_mid on a grid, Smax in closed form (clipped to 0–100). (U,)."""
    x = beta[:, None, None] * (np.log(t)[None, None, :] - _LN_TM[None, :, None])  # (U, G, n)
    Fm = F("log_sigmoid", x)
    ff = np.einsum("ugn,ugn->ug", Fm, Fm)
    fy = np.einsum("ugn,un->ug", Fm, Y)
    with np.errstate(divide="ignore", invalid="ignore"):
        sm = np.clip(np.where(ff > 0, fy / ff, 0.0), 0.0, 100.0)
    sse = np.einsum("un,un->u", Y, Y)[:, None] - 2 * sm * fy + sm * sm * ff
    j = np.argmin(sse, axis=1)
    u = np.arange(len(Y))
    s, tm = sm[u, j], _LN_TM[j]
    return s * F("log_sigmoid", beta * (math.log(target) - tm))


@dataclass
class BacktestRow:
    """One line of the back-test: ``level`` (``task`` or ``suite mean``), ``window`` (e.g. ``2-6h``),
    ``model`` (or ``overall``), ``n`` curves, ``left_out`` (missing values), ``mae_forecast`` and
    ``mae_baseline`` (points), ``coverage_forecast`` and ``coverage_baseline`` (0–1, of the 80 %
    intervals), ``width_forecast`` / ``width_baseline`` (mean interval width, points)."""

    level: str
    window: str
    model: str
    n: int
    left_out: int
    mae_forecast: float
    mae_baseline: float
    coverage_forecast: float
    coverage_baseline: float
    width_forecast: float
    width_baseline: float
    #: 10th and 90th percentiles of actual − forecast (points), over these curves
    error_q10: float = 0.0
    error_q90: float = 0.0
    #: the published-gain forecasts (same task's other curves; every independent curve): MAE in
    #: points, 80 % coverage (0–1), and the 10th / 90th percentiles of their errors
    mae_gain_task: float = math.nan
    mae_gain_all: float = math.nan
    coverage_gain_task: float = math.nan
    coverage_gain_all: float = math.nan
    gain_task_q10: float = math.nan
    gain_task_q90: float = math.nan
    gain_all_q10: float = math.nan
    gain_all_q90: float = math.nan

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _units(values) -> tuple[list[float], dict[tuple[str, str], dict[float, float]]]:
    by: dict[tuple[str, str], dict[float, list[float]]] = {}
    for v in values:
        d = by.setdefault((str(v.group[0]) if v.group else "", v.task), {})
        if v.value is not None:
            d.setdefault(v.hours, []).append(v.value)
    hours = sorted({v.hours for v in values})
    return hours, {k: {h: sum(x) / len(x) for h, x in d.items()} for k, d in by.items()}


def backtest(
    values, windows: Sequence[tuple[float, float]] = ((2, 6), (2, 4)), target: float = 12.0, level: float = 0.8
) -> list[BacktestRow]:
    """The back-test of a per-task table's values (:class:`edgetui.replay.analysis.leaderboard.TaskValue`,
    grouped by model: the first grouping value). Returns rows for tasks (per model and overall)
    and for suite means (overall), for each window."""
    hours, units = _units(values)
    if target not in hours:
        raise ValueError(f"the table has no values at {target:g} h to predict")
    keys = sorted(units)
    H = np.array(hours)
    full = np.array([[units[k].get(h, np.nan) for h in hours] for k in keys])  # (U, H)
    models = sorted({m for m, _ in keys})
    # suite means per model (the leaderboard rule over the tasks with a value)
    means = np.array([np.nanmean(full[[i for i, k in enumerate(keys) if k[0] == m]], axis=0) for m in models])
    rows: list[BacktestRow] = []
    for lo, hi in windows:
        win = (H >= lo) & (H <= hi)
        if win.sum() < 2:
            raise ValueError(f"window {lo:g}-{hi:g} h holds fewer than 2 of the table's hours")
        rows += _level(
            "task",
            f"{lo:g}-{hi:g}h",
            keys,
            full,
            H,
            win,
            target,
            level,
            lambda i, j: keys[i][0] != keys[j][0] and keys[i][1] != keys[j][1],
            lambda i, j: keys[i][0] != keys[j][0] and keys[i][1] == keys[j][1],
        )
        mkeys = [(m, "(suite mean)") for m in models]
        rows += _level(
            "suite mean",
            f"{lo:g}-{hi:g}h",
            mkeys,
            means,
            H,
            win,
            target,
            level,
            lambda i, j: i != j,
            lambda i, j: i != j,
            per_model=False,
        )
    return rows


def published_gain(full: np.ndarray, rows: Sequence[int], h_from: int, h_to: int) -> float:
    """The median gain from column ``h_from`` to ``h_to`` of ``full``'s ``rows`` with both values (NaN if none)."""
    g = [full[j, h_to] - full[j, h_from] for j in rows if np.isfinite(full[j, h_to]) and np.isfinite(full[j, h_from])]
    return float(np.median(g)) if g else math.nan


def _coverage(idx, independent, fc, actual, err, q):
    """(covered by the 80 % interval made from the independent curves' errors, interval width) per curve."""
    cov = np.zeros(len(idx), dtype=bool)
    width = np.full(len(idx), math.nan)
    for a, i in enumerate(idx):
        others = [b for b, j in enumerate(idx) if j != i and independent(i, j) and np.isfinite(err[b])]
        if len(others) < 2 or not np.isfinite(fc[a]):
            continue
        lo, hi = np.percentile(err[others], q)
        cov[a] = fc[a] + lo <= actual[a] <= fc[a] + hi
        width[a] = hi - lo
    return cov, width


def _level(name, wname, keys, full, H, win, target, level, independent, same_task, per_model=True) -> list[BacktestRow]:
    ti = int(np.where(H == target)[0][0])
    complete = np.all(np.isfinite(full), axis=1)
    betas = np.full(len(keys), np.nan)
    if complete.any():
        r = fit_many("log_sigmoid", H, full[complete])
        betas[complete] = r["beta"]
    usable = np.all(np.isfinite(full[:, win]), axis=1) & np.isfinite(full[:, ti])
    idx = np.where(usable)[0]
    prior = np.array(
        [np.nanmedian([betas[j] for j in range(len(keys)) if j != i and independent(i, j)] or [np.nan]) for i in idx]
    )
    ok = np.isfinite(prior)
    idx, prior = idx[ok], prior[ok]
    Yw = full[idx][:, win]
    fc = forecast_fixed_beta(H[win], Yw, prior, target)
    last = Yw[:, -1]
    fc = np.clip(fc, last, 100.0)
    actual = full[idx, ti]
    err_f, err_b = actual - fc, actual - last
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    cov_f, wf = _coverage(idx, independent, fc, actual, err_f, q)
    cov_b, wb = _coverage(idx, independent, last, actual, err_b, q)
    h_end = int(np.where(win)[0][-1])
    n = len(keys)
    gt = np.array([published_gain(full, [j for j in range(n) if same_task(i, j)], h_end, ti) for i in idx])
    ga = np.array([published_gain(full, [j for j in range(n) if independent(i, j)], h_end, ti) for i in idx])
    fc_gt, fc_ga = np.clip(last + gt, last, 100.0), np.clip(last + ga, last, 100.0)
    err_gt, err_ga = actual - fc_gt, actual - fc_ga
    cov_gt, _ = _coverage(idx, independent, fc_gt, actual, err_gt, q)
    cov_ga, _ = _coverage(idx, independent, fc_ga, actual, err_ga, q)
    groups = [("overall", np.ones(len(idx), dtype=bool))]
    if per_model:
        for m in sorted({keys[i][0] for i in idx}):
            groups.append((m, np.array([keys[i][0] == m for i in idx])))
    out = []
    for label, mask in groups:
        n_all = len(keys) if label == "overall" else sum(1 for k in keys if k[0] == label)
        out.append(
            BacktestRow(
                name,
                wname,
                label,
                int(mask.sum()),
                int(n_all - mask.sum()),
                float(np.mean(np.abs(err_f[mask]))),
                float(np.mean(np.abs(err_b[mask]))),
                float(np.mean(cov_f[mask])),
                float(np.mean(cov_b[mask])),
                float(np.nanmean(wf[mask])),
                float(np.nanmean(wb[mask])),
                float(np.percentile(err_f[mask], q[0])),
                float(np.percentile(err_f[mask], q[1])),
                *_gain_stats(err_gt[mask], cov_gt[mask], err_ga[mask], cov_ga[mask], q),
            )
        )
    return out


def _gain_stats(err_t, cov_t, err_a, cov_a, q) -> tuple[float, ...]:
    """(MAE task, MAE all, coverage task, coverage all, q10/q90 task, q10/q90 all) of the gain forecasts."""

    def mae(e):
        e = e[np.isfinite(e)]
        return float(np.mean(np.abs(e))) if len(e) else math.nan

    def pct(e, k):
        e = e[np.isfinite(e)]
        return float(np.percentile(e, q[k])) if len(e) else math.nan

    ok_t, ok_a = np.isfinite(err_t), np.isfinite(err_a)
    return (
        mae(err_t),
        mae(err_a),
        float(np.mean(cov_t[ok_t])) if ok_t.any() else math.nan,
        float(np.mean(cov_a[ok_a])) if ok_a.any() else math.nan,
        pct(err_t, 0),
        pct(err_t, 1),
        pct(err_a, 0),
        pct(err_a, 1),
    )


def markdown(rows: Sequence[BacktestRow]) -> str:
    """The back-test as the Markdown table docs/analysis.md carries (MAE in points, coverage in %)."""
    out = [
        "| curves | window | model | n | MAE forecast | MAE last best | MAE gain (task) | MAE gain (all) | "
        "80 % coverage forecast | 80 % coverage last best | 80 % coverage gain (task) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.level} | {r.window} | {r.model} | {r.n} | {r.mae_forecast:.2f} | {r.mae_baseline:.2f} | "
            f"{r.mae_gain_task:.2f} | {r.mae_gain_all:.2f} | "
            f"{100 * r.coverage_forecast:.0f} % | {100 * r.coverage_baseline:.0f} % | "
            f"{100 * r.coverage_gain_task:.0f} % |"
        )
    return "\n".join(out)
