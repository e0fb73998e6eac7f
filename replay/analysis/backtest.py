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
4. **baseline**: "last best persists": the window's last value, with its interval made the same way.

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
        )
        mkeys = [(m, "(suite mean)") for m in models]
        rows += _level(
            "suite mean", f"{lo:g}-{hi:g}h", mkeys, means, H, win, target, level, lambda i, j: i != j, per_model=False
        )
    return rows


def _level(name, wname, keys, full, H, win, target, level, independent, per_model=True) -> list[BacktestRow]:
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
    cov_f = np.zeros(len(idx), dtype=bool)
    cov_b = np.zeros(len(idx), dtype=bool)
    wf = np.zeros(len(idx))
    wb = np.zeros(len(idx))
    for a, i in enumerate(idx):
        others = [b for b, j in enumerate(idx) if j != i and independent(i, j)]
        if len(others) < 2:
            cov_f[a] = cov_b[a] = False
            wf[a] = wb[a] = math.nan
            continue
        lf, hf = np.percentile(err_f[others], q)
        lb, hb = np.percentile(err_b[others], q)
        cov_f[a] = fc[a] + lf <= actual[a] <= fc[a] + hf
        cov_b[a] = last[a] + lb <= actual[a] <= last[a] + hb
        wf[a], wb[a] = hf - lf, hb - lb
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
            )
        )
    return out


def markdown(rows: Sequence[BacktestRow]) -> str:
    """The back-test as the Markdown table docs/analysis.md carries (MAE in points, coverage in %)."""
    out = [
        "| curves | window | model | n | MAE forecast | MAE last best | 80 % coverage forecast | "
        "80 % coverage last best |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r.level} | {r.window} | {r.model} | {r.n} | {r.mae_forecast:.2f} | {r.mae_baseline:.2f} | "
            f"{100 * r.coverage_forecast:.0f} % | {100 * r.coverage_baseline:.0f} % |"
        )
    return "\n".join(out)
