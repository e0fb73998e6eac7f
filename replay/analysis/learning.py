"""Learning speed and its doubling time across model generations.

**Learning speed** of a run (EdgeBench's notion): the gain within its first 2 hours, here the
per-task value at 2 h minus the value of the run's *first graded submission* (its starting
score, :attr:`edgetui.replay.analysis.score_at.RunCurve.first_value`), in points (0–100). A model's
learning speed is the mean over tasks (repeats averaged first) of its runs' gains.

**Doubling time** (the method METR uses for its time-horizon trend): least squares of
ln(learning speed) on the release date (decimal years); doubling time = ln 2 / slope, in months.
Its interval is a bootstrap: over models for a table with one value per model (say how few points
that is), over tasks then runs for recorded runs. Models whose learning speed is not above 0 cannot
enter a log and are left out (and counted).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from edgetui.replay.analysis.curves import hierarchical_resamples

__all__ = [
    "Trend",
    "read_speed_table",
    "read_release_dates",
    "release_year",
    "doubling_trend",
    "run_gain",
    "recorded_speeds",
]


def release_year(text: str, where: str = "") -> float:
    """``2026-05`` (month: its middle) or ``2026-05-14`` → decimal year. Raises ``ValueError``."""
    s = (text or "").strip()
    m = re.fullmatch(r"(\d{4})-(\d{1,2})(?:-(\d{1,2}))?", s)
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise ValueError(f"{where}release date {text!r}: use YYYY-MM or YYYY-MM-DD")
    y, mo = int(m.group(1)), int(m.group(2))
    day = int(m.group(3)) if m.group(3) else None
    frac = ((mo - 1) + ((day - 0.5) / 31 if day else 0.5)) / 12
    return y + frac


@dataclass
class Trend:
    """A fitted trend: ``points`` (model, decimal year, learning speed), ``slope`` (per year, of
    ln speed), ``doubling_months`` and its ``interval`` (percentiles at ``level``), ``r2``,
    ``resamples``, ``left_out`` (models with speed ≤ 0), ``basis`` (what was resampled)."""

    points: list[tuple[str, float, float]]
    slope: float
    doubling_months: float
    interval: tuple[float, float]
    r2: float
    resamples: int
    level: float
    basis: str
    left_out: list[str] = field(default_factory=list)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "points": [{"model": m, "release_year": y, "learning_speed": v} for m, y, v in self.points],
            "slope_per_year": self.slope,
            "doubling_months": self.doubling_months,
            "interval_months": list(self.interval),
            "level": self.level,
            "r2": self.r2,
            "resamples": self.resamples,
            "bootstrap": self.basis,
            "left_out": self.left_out,
            "note": self.note,
        }


def _slope(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    xm, ym = x.mean(), y.mean()
    sxx = float(((x - xm) ** 2).sum())
    if sxx == 0:
        return math.nan, 0.0
    b = float(((x - xm) * (y - ym)).sum() / sxx)
    res = y - (ym + b * (x - xm))
    sst = float(((y - ym) ** 2).sum())
    return b, (1 - float((res**2).sum()) / sst) if sst > 0 else 0.0


def _slopes(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of each row of Y on the same row of X ((B, n) each), vectorised."""
    xm = X.mean(axis=1, keepdims=True)
    ym = Y.mean(axis=1, keepdims=True)
    sxx = ((X - xm) ** 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sxx > 0, ((X - xm) * (Y - ym)).sum(axis=1) / sxx, np.nan)


def _months(slope: np.ndarray | float):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 12 * math.log(2) / np.asarray(slope, dtype=float)


def _rank_interval(v: np.ndarray, level: float) -> tuple[float, float]:
    """Nearest-rank percentiles (they keep infinite doubling times as infinite)."""
    if len(v) == 0:
        return (math.nan, math.nan)
    s = np.sort(v)
    lo = s[int(math.floor((1 - level) / 2 * (len(s) - 1)))]
    hi = s[int(math.ceil((1 + level) / 2 * (len(s) - 1)))]
    return float(lo), float(hi)


def doubling_trend(
    points: Sequence[tuple[str, float, float]],
    *,
    resamples: int = 1000,
    level: float = 0.8,
    seed: int = 0,
    resampled: Optional[np.ndarray] = None,
    basis: str = "models",
) -> Trend:
    """The trend of ``points`` (model, decimal year, speed). The interval resamples the models
    with replacement (``resampled`` (B, models) speeds replaces that: e.g. tasks then runs). A
    resample whose slope is ≤ 0 (no doubling) counts as an infinite doubling time in the
    percentiles. Raises ``ValueError`` with fewer than 3 usable points."""
    keep = [(m, x, v) for m, x, v in points if v is not None and v > 0 and math.isfinite(v)]
    left = [m for m, x, v in points if not (v is not None and v > 0 and math.isfinite(v))]
    if len(keep) < 3:
        raise ValueError(f"{len(keep)} model(s) with a learning speed above 0: at least 3 are needed for a trend")
    x = np.array([p[1] for p in keep])
    y = np.log(np.array([p[2] for p in keep]))
    b, r2 = _slope(x, y)
    rng = np.random.default_rng(seed)
    if resampled is None:
        idx = rng.integers(0, len(keep), size=(resamples, len(keep)))
        bs = _slopes(x[idx], y[idx])
    else:
        R = np.asarray(resampled, dtype=float)
        ok_cols = [i for i, (m, _, v) in enumerate(points) if m not in left]
        R = R[:, ok_cols]
        with np.errstate(divide="ignore", invalid="ignore"):
            LY = np.where(R > 0, np.log(np.where(R > 0, R, 1.0)), np.nan)
        good = np.all(np.isfinite(LY), axis=1)
        bs = _slopes(np.broadcast_to(x, LY[good].shape), LY[good])
        resamples = int(good.sum())
    dm = np.where(bs > 0, _months(np.where(bs > 0, bs, 1.0)), np.inf)
    lo, hi = _rank_interval(dm, level)
    note = f"{len(keep)} points" + (" (one value per model: a thin basis for a trend)" if basis == "models" else "")
    return Trend(
        [(m, float(xx), float(v)) for m, xx, v in keep],
        b,
        float(_months(b)) if b > 0 else math.inf,
        (lo, hi),
        r2,
        resamples,
        level,
        basis,
        left,
        note,
    )


def read_speed_table(path: Path) -> list[tuple[str, float, float]]:
    """``model``, ``release_month`` (or ``release_date``), ``learning_speed`` rows → points.
    Raises ``ValueError`` naming the file and line of a bad row or a missing column."""
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.DictReader(f)
        cols = rd.fieldnames or []
        date_col = "release_month" if "release_month" in cols else "release_date"
        missing = [c for c in ("model", date_col, "learning_speed") if c not in cols]
        if missing:
            raise ValueError(f"{path}: line 1: missing column(s) {', '.join(missing)} (have: {', '.join(cols)})")
        out = []
        for i, r in enumerate(rd, start=2):
            x = release_year(r[date_col], f"{path}: line {i}: ")
            try:
                v = float(r["learning_speed"])
            except (TypeError, ValueError):
                raise ValueError(f"{path}: line {i}: learning_speed {r['learning_speed']!r} is not a number") from None
            out.append((r["model"], x, v))
    return out


def read_release_dates(path: Path) -> dict[str, float]:
    """A small user file: CSV ``model,release_date`` (``YYYY-MM`` or ``YYYY-MM-DD``; a header line
    is optional) → model → decimal year. Raises ``ValueError`` naming the file and line."""
    out = {}
    with open(path, newline="", encoding="utf-8") as f:
        for i, row in enumerate(csv.reader(f), start=1):
            if not row or not "".join(row).strip() or row[0].startswith("#"):
                continue
            if i == 1 and row[0].strip().lower() == "model":
                continue
            if len(row) < 2:
                raise ValueError(f"{path}: line {i}: expected model,release_date")
            out[row[0].strip()] = release_year(row[1], f"{path}: line {i}: ")
    return out


def run_gain(curve, hours: float = 2.0) -> Optional[float]:
    """A run's gain within its first ``hours``: value at ``hours`` − its first graded submission's
    value (points); ``None`` without both (or when the first result came after ``hours``)."""
    if curve.first_value is None or curve.first_elapsed_s is None or curve.first_elapsed_s > hours * 3600:
        return None
    v = curve.cell(hours, include_infra=True).value
    return None if v is None else v - curve.first_value


def recorded_speeds(
    curves, dates: dict[str, float], *, resamples: int = 1000, seed: int = 0, hours: float = 2.0
) -> tuple[list[tuple[str, float, float]], np.ndarray, list[str]]:
    """Per-model learning speeds of recorded runs (mean over tasks, repeats first) for the models
    in ``dates``, and (resamples, models) bootstrap speeds: tasks, then runs within each task, drawn
    with replacement per model. Returns (points, resampled, models without a release date)."""

    by: dict[str, dict[str, list[list[float]]]] = {}
    undated = set()
    for c in curves:
        g = run_gain(c, hours)
        if g is None:
            continue
        m = c.model or "(unknown model)"
        if m not in dates:
            undated.add(m)
            continue
        by.setdefault(m, {}).setdefault(c.task_id, []).append([g])
    points, cols = [], []
    for i, (m, units) in enumerate(sorted(by.items())):
        per_task = [float(np.mean([r[0] for r in runs])) for runs in units.values()]
        points.append((m, dates[m], float(np.mean(per_task))))
        cols.append(hierarchical_resamples(units, 1, resamples, seed=seed + i)[:, 0])
    R = np.column_stack(cols) if cols else np.zeros((resamples, 0))
    return points, R, sorted(undated)
