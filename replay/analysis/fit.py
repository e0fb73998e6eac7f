"""EdgeBench's law and its look-alikes, fitted without fooling ourselves (``scaling-notes.md``).

Forms, all ``S(t) = Smax · F(beta · (ln t − ln t_mid))`` with t in hours and S on the 0–100 scale:

* ``log_sigmoid``: F(x) = 1 / (1 + e^(−x)), i.e. ``S = Smax / (1 + (t_mid / t)^beta)`` (EdgeBench);
* ``log_probit``: F = Φ, the normal CDF;
* ``log_gompertz``: F(x) = exp(−e^(−x));
* ``weibull``: F(x) = 1 − exp(−e^x), i.e. ``Smax · (1 − exp(−(t / t_mid)^beta))``;
* ``log_linear``: ``S = a + b · ln t`` (two parameters; the paper's baseline).

**Fitting.** Smax is linear given the shape (t_mid, beta): for each shape it is solved in closed
form (least squares, clipped to ``[0, smax_max]``). A dense grid over ln t_mid ∈ [ln 0.01,
ln 1000] and ln beta ∈ [ln 0.05, ln 20] picks the start; ``scipy.optimize.least_squares`` (trust
region reflective, bounds as the grid's and ``0 ≤ Smax ≤ smax_max``, ``soft_l1`` loss with a
scale of 1 point) refines all three. No synthetic points (no S(0) = 0) are added.

**Flags** (a flagged fit's Smax, t_mid and beta are not findings: :attr:`Fit.findings` is false
and :meth:`Fit.as_dict` withholds them, keeping them under ``raw``):

* ``at_bound:<param>``: a parameter ends within 1 % (of its log range; Smax within 0.1 point) of
  a bound;
* ``ill_conditioned``: the Jacobian's condition number exceeds 1e6, or the standard error of
  Smax (from the Jacobian; a quick check only) exceeds Smax itself: the ridge where Smax, t_mid
  and beta trade off with the same error;
* ``did_not_converge``: the optimiser's status is ≤ 0;
* ``ill_conditioned`` also when the 80 % profile range of Smax (over the grid's shapes whose
  error is within SSE_min + 1.64 σ̂², σ̂² = SSE_min / (n − 3)) comes within 1 point of its bound
  or is wider than half of Smax: the same ridge seen without the Jacobian;
* ``flat``: the curve barely moves over the fitted hours (fitted rise below max(1 point,
  2 × RMSE, 5 % of the last fitted value)), so its shape is not determined.

What stays well determined is reported for every fit: S at fixed horizons (``S_at``), ``t_half``
(the time of half of Smax: t_mid for the symmetric forms, not for Gompertz or Weibull), and the
gain per doubling of time at the last hour.

**Bootstrap** (:func:`bootstrap`): many curves over the same hours, fitted at once: the grid's
Smax and error are computed for every resample in one matrix product, then a zoomed grid (±1
coarse step, 11 × 11) around each resample's best; no per-resample optimiser call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np

__all__ = [
    "FORMS",
    "SHAPE_FORMS",
    "Fit",
    "fit_curve",
    "fit_many",
    "predict",
    "t_half",
    "bootstrap",
    "compare_forms",
    "residual_resamples",
    "FIT_METHOD",
    "FIT_VERSION",
    "TMID_BOUNDS",
    "BETA_BOUNDS",
]

FIT_METHOD = "profile-grid+least_squares(trf,soft_l1)"
FIT_VERSION = 1
#: bounds (hours; unitless)
TMID_BOUNDS = (0.01, 1000.0)
BETA_BOUNDS = (0.05, 20.0)
SHAPE_FORMS = ("log_sigmoid", "log_probit", "log_gompertz", "weibull")
FORMS = SHAPE_FORMS + ("log_linear",)

_LN_TM = (math.log(TMID_BOUNDS[0]), math.log(TMID_BOUNDS[1]))
_LN_B = (math.log(BETA_BOUNDS[0]), math.log(BETA_BOUNDS[1]))
_GRID_TM = np.linspace(*_LN_TM, 121)
_GRID_B = np.linspace(*_LN_B, 81)


def F(form: str, x: np.ndarray) -> np.ndarray:
    if form == "log_sigmoid":
        return 0.5 * (1.0 + np.tanh(0.5 * x))
    if form == "log_probit":
        # lazy: scipy loads with the first fit, not with the analysis modules
        from scipy.special import ndtr

        return ndtr(x)
    if form == "log_gompertz":
        return np.exp(-np.exp(-np.clip(x, -50, 50)))
    if form == "weibull":
        return -np.expm1(-np.exp(np.clip(x, -50, 50)))
    raise ValueError(f"unknown form {form!r}; forms: {', '.join(FORMS)}")


#: F(x_half) = 1/2
_X_HALF = {
    "log_sigmoid": 0.0,
    "log_probit": 0.0,
    "log_gompertz": -math.log(math.log(2.0)),
    "weibull": math.log(math.log(2.0)),
}


def predict(form: str, params: dict[str, float], t: Any) -> np.ndarray:
    """S at hours ``t`` (array-like) for ``params`` (``Smax``, ``t_mid``, ``beta``; log_linear: ``a``, ``b``)."""
    t = np.asarray(t, dtype=float)
    if form == "log_linear":
        return params["a"] + params["b"] * np.log(t)
    x = params["beta"] * (np.log(t) - math.log(params["t_mid"]))
    return params["Smax"] * F(form, x)


def t_half(form: str, t_mid: float, beta: float) -> float:
    """Hours at which the curve reaches Smax / 2."""
    return t_mid * math.exp(_X_HALF[form] / beta)


@dataclass
class Fit:
    """One fitted curve. ``params``: unrounded (``Smax`` 0–100, ``t_mid`` hours, ``beta``; or
    ``a``, ``b`` for log_linear); ``r2``, ``rmse`` (points) in-sample; ``status``: the optimiser's
    (scipy ``least_squares`` status, 0 = max evaluations, < 0 = failure); ``flags``; ``S_at``:
    S at the horizons asked (hours → value); ``intervals``: percentile intervals from a
    bootstrap (name → (lo, hi)); ``hours``/``scores``: the data fitted."""

    form: str
    params: dict[str, float]
    r2: float
    rmse: float
    n: int
    status: int
    message: str = ""
    flags: list[str] = field(default_factory=list)
    t_half: Optional[float] = None
    gain_per_doubling: Optional[float] = None
    S_at: dict[float, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    hours: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    bootstrap: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> bool:
        """Are Smax, t_mid and beta findings (no flag)?"""
        return not self.flags

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of ``edgetui fit --format json`` (docs/commands.md "fit JSON")."""
        shown = {k: (v if self.findings else None) for k, v in self.params.items()}
        d: dict[str, Any] = {
            "form": self.form,
            **shown,
            "t_half": self.t_half,
            "r2": self.r2,
            "rmse": self.rmse,
            "n": self.n,
            "status": self.status,
            "flags": list(self.flags),
            "findings": self.findings,
            "raw": dict(self.params),
            "gain_per_doubling": self.gain_per_doubling,
            "S_at": {f"{h:g}": v for h, v in self.S_at.items()},
            "intervals": {k: list(v) for k, v in self.intervals.items()},
            "hours": self.hours,
            "scores": self.scores,
        }
        if self.bootstrap:
            d["bootstrap"] = self.bootstrap
        if self.diagnostics:
            d["diagnostics"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.diagnostics.items()}
        return d


def _check(t: np.ndarray, y: np.ndarray) -> None:
    if t.shape != y.shape or t.ndim != 1:
        raise ValueError("hours and scores must be two lists of the same length")
    if np.any(~np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("hours must be finite and above 0 (no point at t = 0: every form is 0 there)")


def _grid_sse(form: str, t: np.ndarray, Y: np.ndarray, smax_max: float, ln_tm: np.ndarray, ln_b: np.ndarray):
    """SSE and Smax of every shape for every curve. ``Y``: (B, n); shapes: flattened grid (G,).
    Returns (sse (B, G), smax (B, G))."""
    x = np.exp(ln_b)[:, None] * (np.log(t)[None, :] - ln_tm[:, None])  # (G, n)
    Fm = F(form, x)
    ff = np.einsum("gn,gn->g", Fm, Fm)
    fy = Y @ Fm.T  # (B, G)
    with np.errstate(divide="ignore", invalid="ignore"):
        sm = np.where(ff > 0, fy / ff, 0.0)
    sm = np.clip(sm, 0.0, smax_max)
    yy = np.einsum("bn,bn->b", Y, Y)[:, None]
    sse = yy - 2 * sm * fy + sm * sm * ff
    return sse, sm


_CHUNK = 128


def _grid_F(form: str, t: np.ndarray, ln_tm: np.ndarray, ln_b: np.ndarray):
    """F of every grid shape at ``t`` ((G, n)) and its squared norms ((G,))."""
    Fm = F(form, np.exp(ln_b)[:, None] * (np.log(t)[None, :] - ln_tm[:, None]))
    return Fm, np.einsum("gn,gn->g", Fm, Fm)


def _shape_grid():
    tm, b = np.meshgrid(_GRID_TM, _GRID_B, indexing="ij")
    return tm.ravel(), b.ravel()


def fit_curve(
    hours: Union[Sequence[float], np.ndarray],
    scores: Union[Sequence[float], np.ndarray],
    form: str = "log_sigmoid",
    *,
    smax_max: float = 100.0,
    horizons: Sequence[float] = (12.0,),
) -> Fit:
    """Fit one curve. ``hours``: elapsed hours (> 0); ``scores``: 0–100 values (missing values
    must be dropped by the caller). ``smax_max``: Smax's upper bound (100, or the task's maximum).
    Raises ``ValueError`` for mismatched or non-positive hours, or fewer than 3 points (2 for
    log_linear): never three free parameters on fewer points."""
    t = np.asarray(hours, dtype=float)
    y = np.asarray(scores, dtype=float)
    _check(t, y)
    keep = np.isfinite(y)
    t, y = t[keep], y[keep]
    n = len(t)
    need = 2 if form == "log_linear" else 3
    if n < need:
        raise ValueError(f"{form}: {n} point(s); at least {need} are needed")
    sst = float(np.sum((y - y.mean()) ** 2))
    if form == "log_linear":
        A = np.column_stack([np.ones(n), np.log(t)])
        coef, *_ = np.linalg.lstsq(A, y, rcond=None)
        res = y - A @ coef
        sse = float(res @ res)
        f = Fit(form, {"a": float(coef[0]), "b": float(coef[1])}, _r2(sse, sst), math.sqrt(sse / n), n, 1, "lstsq")
        f.gain_per_doubling = float(coef[1] * math.log(2))
    else:
        f = _fit_shape(form, t, y, smax_max, sst)
    f.hours, f.scores = [float(v) for v in t], [float(v) for v in y]
    f.S_at = {float(h): float(predict(form, f.params, [h])[0]) for h in horizons}
    if f.gain_per_doubling is None:
        tl = float(t.max())
        f.gain_per_doubling = float(predict(form, f.params, [tl])[0] - predict(form, f.params, [tl / 2])[0])
    return f


#: sums of squares (points²) under this are a flat curve's rounding noise, not variation
_SS_EPS = 1e-9


def _r2(sse: float, sst: float) -> float:
    """R² = 1 − SSE/SST; a flat curve (SST ≈ 0) has 1 when the fit is exact too, else 0 (never the
    ratio of two rounding errors: it printed −2·10¹⁴ for a flat run)."""
    if sst > _SS_EPS:
        return 1.0 - sse / sst
    return 1.0 if sse <= _SS_EPS else 0.0


def _fit_shape(form: str, t: np.ndarray, y: np.ndarray, smax_max: float, sst: float) -> Fit:
    # lazy: scipy loads with the first fit, not with the analysis modules
    from scipy.optimize import least_squares

    gtm, gb = _shape_grid()
    sse, sm = _grid_sse(form, t, y[None, :], smax_max, gtm, gb)
    i = int(np.argmin(sse[0]))
    x0 = np.array([max(1e-6, min(smax_max - 1e-6, sm[0, i])), gtm[i], gb[i]])
    x0[1] = min(max(x0[1], _LN_TM[0] + 1e-9), _LN_TM[1] - 1e-9)
    x0[2] = min(max(x0[2], _LN_B[0] + 1e-9), _LN_B[1] - 1e-9)
    lt = np.log(t)

    def resid(p):
        return p[0] * F(form, math.exp(p[2]) * (lt - p[1])) - y

    lower, upper = [0.0, _LN_TM[0], _LN_B[0]], [smax_max, _LN_TM[1], _LN_B[1]]
    r = least_squares(
        resid, x0, bounds=(lower, upper), method="trf", loss="soft_l1", f_scale=1.0, max_nfev=2000, x_scale="jac"
    )
    p = r.x
    # the robust refinement must not end worse than the grid's start in plain squares
    if float(np.sum(resid(p) ** 2)) > float(np.sum(resid(x0) ** 2)):
        p = x0
    res = resid(p)
    sse_v = float(res @ res)
    params = {"Smax": float(p[0]), "t_mid": float(math.exp(p[1])), "beta": float(math.exp(p[2]))}
    f = Fit(form, params, _r2(sse_v, sst), math.sqrt(sse_v / len(t)), len(t), int(r.status), str(r.message))
    f.t_half = t_half(form, params["t_mid"], params["beta"])
    f.flags = _flags(form, p, r, t, y, smax_max, f.rmse)
    lo, hi = _profile_smax(sse[0], sm[0], sse_v, len(t))
    lo, hi = min(lo, p[0]), max(hi, p[0])
    f.diagnostics["profile_Smax"] = (lo, hi)
    if "ill_conditioned" not in f.flags and (hi >= smax_max - 1.0 or hi - lo > 0.5 * p[0]):
        f.flags.insert(len([x for x in f.flags if x.startswith("at_bound")]), "ill_conditioned")
    return f


def _profile_smax(sse_grid: np.ndarray, smax_grid: np.ndarray, sse_min: float, n: int) -> tuple[float, float]:
    """Range of Smax over the shapes whose error is within the 80 % profile region:
    SSE ≤ SSE_min + 1.64 σ̂², σ̂² = SSE_min / (n − 3) (floored at 0.05² points², the tables' rounding)."""
    s2 = max(sse_min / max(n - 3, 1), 0.0025)
    ok = sse_grid <= sse_min + 1.64 * s2
    if not np.any(ok):
        return (math.nan, math.nan)
    return (float(smax_grid[ok].min()), float(smax_grid[ok].max()))


def _flags(form, p, r, t, y, smax_max, rmse) -> list[str]:
    flags = []
    span_tm, span_b = _LN_TM[1] - _LN_TM[0], _LN_B[1] - _LN_B[0]
    if p[0] <= 0.1:
        flags.append("at_bound:Smax_low")
    if p[0] >= smax_max - 0.1:
        flags.append("at_bound:Smax")
    if p[1] - _LN_TM[0] < 0.01 * span_tm or _LN_TM[1] - p[1] < 0.01 * span_tm:
        flags.append("at_bound:t_mid")
    if p[2] - _LN_B[0] < 0.01 * span_b or _LN_B[1] - p[2] < 0.01 * span_b:
        flags.append("at_bound:beta")
    J = r.jac
    try:
        sv = np.linalg.svd(J, compute_uv=False)
        cond = float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf
    except np.linalg.LinAlgError:
        cond = math.inf
    se_smax = math.inf
    dof = len(t) - 3
    if dof > 0 and math.isfinite(cond):
        s2 = float(np.sum((p[0] * F(form, math.exp(p[2]) * (np.log(t) - p[1])) - y) ** 2)) / dof
        try:
            cov = np.linalg.inv(J.T @ J) * max(s2, 1e-12)
            se_smax = math.sqrt(max(cov[0, 0], 0.0))
        except np.linalg.LinAlgError:
            pass
    if cond > 1e6 or se_smax > max(p[0], 1e-9):
        flags.append("ill_conditioned")
    if r.status <= 0:
        flags.append("did_not_converge")
    fitted = p[0] * F(form, math.exp(p[2]) * (np.log(np.array([t.min(), t.max()])) - p[1]))
    if abs(float(fitted[1] - fitted[0])) < max(1.0, 2.0 * rmse, 0.05 * abs(float(fitted[1]))):
        flags.append("flat")
    return flags


def fit_many(form: str, t: np.ndarray, Y: np.ndarray, smax_max: float = 100.0) -> dict[str, np.ndarray]:
    """Fit ``B`` curves over the same ``t`` hours at once (``Y``: (B, n), no missing values): the
    profile grid for all of them in one matrix product, then a zoomed 11 × 11 grid around each
    one's best. Returns arrays (B,) ``Smax``, ``t_mid``, ``beta``, ``sse``."""
    gtm, gb = _shape_grid()
    Fm, ff = _grid_F(form, t, gtm, gb)
    best = np.empty(len(Y), dtype=int)
    for a in range(0, len(Y), _CHUNK):  # chunks keep the (resamples x shapes) arrays in cache
        Yc = Y[a : a + _CHUNK]
        fy = Yc @ Fm.T
        with np.errstate(divide="ignore", invalid="ignore"):
            sm = np.clip(np.where(ff > 0, fy / ff, 0.0), 0.0, smax_max)
        best[a : a + _CHUNK] = np.argmin(sm * (sm * ff - 2 * fy), axis=1)  # SSE minus the constant y·y
    c_tm, c_b = gtm[best], gb[best]
    d_tm, d_b = _GRID_TM[1] - _GRID_TM[0], _GRID_B[1] - _GRID_B[0]
    off = np.linspace(-1, 1, 11)
    otm, ob = np.meshgrid(off * d_tm, off * d_b, indexing="ij")
    ltm = np.clip(c_tm[:, None] + otm.ravel()[None, :], *_LN_TM)  # (B, L)
    lb = np.clip(c_b[:, None] + ob.ravel()[None, :], *_LN_B)
    x = np.exp(lb)[:, :, None] * (np.log(t)[None, None, :] - ltm[:, :, None])  # (B, L, n)
    Fm = F(form, x)
    ff = np.einsum("bln,bln->bl", Fm, Fm)
    fy = np.einsum("bln,bn->bl", Fm, Y)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.clip(np.where(ff > 0, fy / ff, 0.0), 0.0, smax_max)
    yy = np.einsum("bn,bn->b", Y, Y)[:, None]
    e = yy - 2 * s * fy + s * s * ff
    j = np.argmin(e, axis=1)
    rows = np.arange(len(Y))
    return {"Smax": s[rows, j], "t_mid": np.exp(ltm[rows, j]), "beta": np.exp(lb[rows, j]), "sse": e[rows, j]}


def bootstrap(
    fit: Fit,
    Y: np.ndarray,
    *,
    horizons: Sequence[float] = (12.0,),
    smax_max: float = 100.0,
    level: float = 0.8,
    kind: str = "",
) -> Fit:
    """Attach percentile intervals from resampled curves ``Y`` ((B, n) over ``fit.hours``; rows with
    a missing value are dropped) to ``fit`` (its form): ``Smax``, ``t_mid``, ``beta``, ``t_half`` and
    ``S@<h>`` for each horizon, at ``level`` (0.8 → 10th–90th percentiles), placed around the fit's
    own (refined) values: the resamples' grid fits are measured against the grid fit of the data
    itself. Records in
    ``fit.bootstrap`` the count, the kind, the level and how often a bound was hit."""
    if fit.form == "log_linear":
        raise ValueError("the bootstrap is for the shape forms")
    t = np.asarray(fit.hours, dtype=float)
    Y = np.asarray(Y, dtype=float)
    Y = Y[np.all(np.isfinite(Y), axis=1)]
    if len(Y) == 0:
        return fit
    r = fit_many(fit.form, t, Y, smax_max)
    th = r["t_mid"] * np.exp(_X_HALF[fit.form] / r["beta"])
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    vals = {"Smax": r["Smax"], "t_mid": r["t_mid"], "beta": r["beta"], "t_half": th}
    for h in horizons:
        vals[f"S@{h:g}"] = r["Smax"] * F(fit.form, r["beta"] * (math.log(h) - np.log(r["t_mid"])))
    # the resamples are fitted on the grid only (no refinement): their spread is measured around the
    # grid fit of the data itself and placed around the refined point, so the grid's step never
    # shifts an interval off its own value (seen: 47.20 with an interval 47.3–47.3)
    ys = np.asarray(fit.scores, dtype=float)
    centre: dict[str, float] = {}
    if len(ys) == len(t) and np.all(np.isfinite(ys)):
        r0 = fit_many(fit.form, t, ys[None, :], smax_max)
        centre = {"Smax": float(r0["Smax"][0]), "t_mid": float(r0["t_mid"][0]), "beta": float(r0["beta"][0])}
        centre["t_half"] = centre["t_mid"] * math.exp(_X_HALF[fit.form] / centre["beta"])
        for h in horizons:
            centre[f"S@{h:g}"] = centre["Smax"] * float(
                F(fit.form, np.array(centre["beta"] * (math.log(h) - math.log(centre["t_mid"]))))
            )
    point = {
        **{k: fit.params.get(k) for k in ("Smax", "t_mid", "beta")},
        "t_half": fit.t_half,
        **{f"S@{h:g}": fit.S_at.get(h) for h in horizons},
    }
    fit.intervals = {}
    for k, v in vals.items():
        lo, hi = float(np.percentile(v, q[0])), float(np.percentile(v, q[1]))
        pk = point.get(k)
        if k in centre and pk is not None and math.isfinite(pk):
            shift = pk - centre[k]
            lo, hi = lo + shift, hi + shift
        fit.intervals[k] = (lo, hi)
    at_b = (
        (r["Smax"] >= smax_max - 0.1)
        | (np.log(r["t_mid"]) >= _LN_TM[1] - 0.01 * (_LN_TM[1] - _LN_TM[0]))
        | (np.log(r["t_mid"]) <= _LN_TM[0] + 0.01 * (_LN_TM[1] - _LN_TM[0]))
        | (np.log(r["beta"]) <= _LN_B[0] + 0.01 * (_LN_B[1] - _LN_B[0]))
        | (np.log(r["beta"]) >= _LN_B[1] - 0.01 * (_LN_B[1] - _LN_B[0]))
    )
    fit.bootstrap = {"resamples": int(len(Y)), "kind": kind, "level": level, "at_bound_share": float(at_b.mean())}
    return fit


def residual_resamples(fit: Fit, n: int = 1000, seed: int = 0) -> np.ndarray:
    """``n`` curves = the fit's values + its residuals drawn with replacement (for a single run or
    table curve, whose hours have no repeats to resample). (n, len(hours))."""
    rng = np.random.default_rng(seed)
    t = np.asarray(fit.hours)
    yhat = predict(fit.form, fit.params, t)
    res = np.asarray(fit.scores) - yhat
    return yhat[None, :] + rng.choice(res, size=(n, len(t)), replace=True)


def compare_forms(
    hours: Sequence[float], scores: Sequence[float], *, smax_max: float = 100.0, forms: Sequence[str] = FORMS
) -> list[dict[str, Any]]:
    """Every form on one curve, compared by RMSE on held-out hours (leave one hour out: fit on the
    others, predict it; points), beside in-sample R² and RMSE, sorted by held-out RMSE. An entry
    whose leave-one-out fit has too few points gets ``heldout_rmse`` ``None``."""
    t = np.asarray(hours, dtype=float)
    y = np.asarray(scores, dtype=float)
    out = []
    for form in forms:
        full = fit_curve(t, y, form, smax_max=smax_max)
        errs: list[float] = []
        for i in range(len(t)):
            m = np.arange(len(t)) != i
            try:
                f = fit_curve(t[m], y[m], form, smax_max=smax_max, horizons=())
            except ValueError:
                errs = []
                break
            errs.append(float(predict(form, f.params, [t[i]])[0] - y[i]))
        out.append(
            {
                "form": form,
                "heldout_rmse": math.sqrt(sum(e * e for e in errs) / len(errs)) if errs else None,
                "rmse": full.rmse,
                "r2": full.r2,
                "t_half": full.t_half,
                "flags": full.flags,
                "params": full.params,
            }
        )
    out.sort(key=lambda d: (d["heldout_rmse"] is None, d["heldout_rmse"] or 0.0))
    return out
