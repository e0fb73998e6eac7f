"""Curves to fit: from a table (``hours``, ``score`` and grouping columns) or from recorded runs,
with the units a bootstrap resamples (tasks, then the runs of each task).

A :class:`Curve` is one group's score against hours. When it is a mean (``mean_over`` a table
column such as ``task``, or recorded runs grouped by model or task) it keeps its **units**: for
each task, the values of each of its runs (repeats) at every hour; the mean follows the
leaderboard's rule (repeats averaged first, then the plain mean over the tasks with a value at
that hour). :func:`hierarchical_resamples` draws tasks with replacement, then runs within each
drawn task with replacement, and recomputes the mean curve with the same rule.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

from edgetui.replay.analysis.task_variants import mixed_tasks

__all__ = ["Curve", "read_curves_csv", "run_curves", "hierarchical_resamples", "units_mean"]


@dataclass
class Curve:
    """``group``: grouping column → value (e.g. ``{"suite": "open51", "model": "GPT-5.5"}``);
    ``hours`` (elapsed hours) and ``scores`` (0–100; ``NaN`` where no value); ``units``: task →
    list of runs' values at ``hours`` (``NaN`` = missing), empty for a plain curve;
    ``aggregation``: how ``scores`` were made; ``time_basis``: ``wall_clock`` or ``active``."""

    group: dict[str, Any]
    hours: list[float]
    scores: list[float]
    units: dict[str, list[list[float]]] = field(default_factory=dict)
    aggregation: str = "as given"
    time_basis: str = "wall_clock"
    #: tasks whose runs in this curve ran different task variants (edgetui.replay.analysis.task_variants)
    mixed_variants: list[str] = field(default_factory=list)

    def label(self) -> str:
        return " ".join(str(v) for v in self.group.values()) or "(all)"


def units_mean(units: dict[str, list[list[float]]], n_hours: int) -> np.ndarray:
    """The leaderboard mean of ``units`` at each hour: repeats first, then over tasks with a value."""
    if not units:
        return np.full(n_hours, np.nan)
    per_task = []
    for runs in units.values():
        a = np.asarray(runs, dtype=float).reshape(len(runs), n_hours)
        with np.errstate(invalid="ignore"):
            per_task.append(_nanmean(a, axis=0))
    return _nanmean(np.vstack(per_task), axis=0)


def _nanmean(a: np.ndarray, axis: int) -> np.ndarray:
    ok = np.isfinite(a)
    n = ok.sum(axis=axis)
    s = np.where(ok, a, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def hierarchical_resamples(
    units: dict[str, list[list[float]]], n_hours: int, n: int = 1000, seed: int = 0
) -> np.ndarray:
    """``n`` resampled mean curves, (n, n_hours): tasks drawn with replacement, then each drawn
    task's runs drawn with replacement, then the leaderboard mean (NaN where no drawn task has a
    value). Vectorised: one gather over a (task, run, hour) array padded with NaN."""
    rng = np.random.default_rng(seed)
    tasks = list(units.values())
    T = len(tasks)
    if T == 0:
        return np.full((n, n_hours), np.nan)
    R = max(len(r) for r in tasks)
    V = np.full((T, R, n_hours), np.nan)
    counts = np.zeros(T, dtype=int)
    for i, runs in enumerate(tasks):
        V[i, : len(runs)] = np.asarray(runs, dtype=float).reshape(len(runs), n_hours)
        counts[i] = len(runs)
    ti = rng.integers(0, T, size=(n, T))  # (n, T)
    c = counts[ti]  # (n, T)
    ri = np.floor(rng.random((n, T, R)) * c[:, :, None]).astype(int)  # (n, T, R)
    draw = V[ti[:, :, None], ri]  # (n, T, R, H)
    draw = np.where((np.arange(R)[None, None, :] < c[:, :, None])[..., None], draw, np.nan)
    per_task = _nanmean(draw, axis=2)  # (n, T, H)
    return _nanmean(per_task, axis=1)


def read_curves_csv(
    path: Path, mean_over: Optional[str] = None, group_cols: Optional[Sequence[str]] = None
) -> list[Curve]:
    """Curves of a CSV with ``hours`` and ``score`` columns; every other column groups (one curve
    per group), except ``mean_over`` (e.g. ``task``): each group's curve is then the leaderboard
    mean over that column's values (rows with the same group, unit and hour are repeats) and keeps
    them as units for the bootstrap; a ``category`` column is then dropped from the grouping.
    ``group_cols`` names the grouping columns instead. Empty scores are missing. Raises
    ``ValueError`` naming the file and line of a bad row or a missing column."""
    with open(path, newline="", encoding="utf-8") as f:
        rd = csv.DictReader(f)
        cols = list(rd.fieldnames or [])
        need = ["hours", "score"] + ([mean_over] if mean_over else [])
        missing = [c for c in need if c not in cols]
        if missing:
            raise ValueError(f"{path}: line 1: missing column(s) {', '.join(missing)} (have: {', '.join(cols)})")
        if group_cols is None:
            skip = {"hours", "score", "run"} | ({mean_over, "category"} if mean_over else set())
            group_cols = [c for c in cols if c not in skip]
        else:
            bad = [c for c in group_cols if c not in cols]
            if bad:
                raise ValueError(f"{path}: line 1: no column(s) {', '.join(bad)} to group by")
        data: dict[tuple, dict[str, dict[float, list[float]]]] = {}
        for i, r in enumerate(rd, start=2):
            try:
                h = float(r["hours"])
                s = (r["score"] or "").strip()
                v = float(s) if s else math.nan
            except (TypeError, ValueError):
                raise ValueError(
                    f"{path}: line {i}: hours {r.get('hours')!r} / score {r.get('score')!r} are not numbers"
                ) from None
            if not h > 0:
                raise ValueError(f"{path}: line {i}: hours {r.get('hours')!r} must be above 0")
            g = tuple(r[c] for c in group_cols)
            unit = r[mean_over] if mean_over else ""
            data.setdefault(g, {}).setdefault(unit, {}).setdefault(h, []).append(v)
    out = []
    for g, by_unit in data.items():
        hours = sorted({h for u in by_unit.values() for h in u})
        units: dict[str, list[list[float]]] = {}
        for unit, by_h in by_unit.items():
            reps = max(len(v) for v in by_h.values())
            units[unit] = [
                [(by_h.get(h, [])[k] if k < len(by_h.get(h, [])) else math.nan) for h in hours] for k in range(reps)
            ]
        scores = units_mean(units, len(hours))
        out.append(
            Curve(
                dict(zip(group_cols, g)),
                hours,
                [float(x) for x in scores],
                units if mean_over else {},
                f"mean over {mean_over} (repeats first; tasks with a value)"
                if mean_over
                else ("mean of repeated rows" if any(len(r) > 1 for r in units.values()) else "as given"),
            )
        )
    return out


def run_curves(curves: Sequence[Any], hours: Sequence[float], by: str = "run") -> list[Curve]:
    """Curves of recorded runs (:class:`edgetui.replay.analysis.score_at.RunCurve`) sampled at ``hours``.
    ``by``: ``run`` (one curve per run; its values are its cells, carried after its end and
    missing before its first valid submission), ``task`` (mean over the task's runs) or
    ``model`` (mean over tasks, repeats first: the leaderboard's rule). Runs going on contribute
    up to where they are."""
    groups: dict[tuple, dict[str, list[list[float]]]] = {}
    variants: dict[tuple, list[tuple[str, Optional[str]]]] = {}
    names = {"run": ("run_key",), "task": ("task_id",), "model": ("model",)}
    if by not in names:
        raise ValueError(f"--by {by!r}: use run, task or model")
    for c in curves:
        vals = []
        for h in hours:
            cell = c.cell(h, include_infra=True)
            vals.append(cell.value if cell.value is not None else math.nan)
        key = {"run": (c.run_key,), "task": (c.task_id,), "model": (c.model or "(unknown model)",)}[by]
        unit = c.run_key if by == "run" else c.task_id
        groups.setdefault(key, {}).setdefault(unit, []).append(vals)
        variants.setdefault(key, []).append((c.task_id, getattr(c, "variant", None)))
    out = []
    for key, units in groups.items():
        scores = units_mean(units, len(hours))
        agg = {
            "run": "best-so-far of one run",
            "task": "mean over the task's runs",
            "model": "mean over tasks (repeats first; tasks with a value)",
        }[by]
        basis = {c.time_basis for c in curves} or {"wall_clock"}
        out.append(
            Curve(
                dict(zip(names[by], key)),
                [float(h) for h in hours],
                [float(x) for x in scores],
                units if by != "run" else {},
                agg,
                "/".join(sorted(basis)),
                mixed_tasks(variants[key]),
            )
        )
    return out
