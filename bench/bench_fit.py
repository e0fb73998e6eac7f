"""Speed of an aggregate fit with its hierarchical bootstrap: 1,000 resamples of a 51-task suite.

Builds a synthetic suite (51 tasks x 3 repeats, values at 2, 4, ..., 12 h: log-sigmoid task curves
with different midpoints plus noise), then times in this process:

* the point fit (``fit_curve``: grid + bounded robust least squares) of the suite's mean curve;
* the bootstrap: 1,000 resampled mean curves (tasks, then runs; ``hierarchical_resamples``) and
  their fits at once (``bootstrap`` -> ``fit_many``: the profile grid for every resample in one
  matrix product, then a zoomed grid);
* the baseline, measured here too: the same fits one resample at a time with ``fit_curve`` (the
  optimiser per resample), on the first 20 resamples, scaled per resample.

Prints the total, the time per resample and the ratio to the baseline. Target: < 5 s in all.

Then a forecast update, as after each graded submission of a live run: the run's best-so-far curve
rebuilt from its 250 submissions (``run_curve``, the selection policy over the submissions known
at each time) and ``forecast_run``; median of 30, against the curve rebuild alone (the baseline
a view pays already to draw the best-so-far line). Target: < 50 ms.

Usage: ``.venv/bin/python bench/bench_fit.py [--resamples N] [--tasks N] [--repeats N]``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from edgetui.replay.analysis.curves import hierarchical_resamples, units_mean  # noqa: E402 - after sys.path is set above
from edgetui.replay.analysis.fit import bootstrap, fit_curve  # noqa: E402 - after sys.path is set above

HOURS = np.array([2.0, 4.0, 6.0, 8.0, 10.0, 12.0])


def suite(tasks: int, repeats: int, seed: int = 0) -> dict[str, list[list[float]]]:
    rng = np.random.default_rng(seed)
    units = {}
    for k in range(tasks):
        smax, t_mid, beta = rng.uniform(20, 90), np.exp(rng.uniform(np.log(0.5), np.log(20))), rng.uniform(0.8, 3)
        units[f"task{k}"] = [
            list(np.clip(smax / (1 + (t_mid / HOURS) ** beta) + rng.normal(0, 3, len(HOURS)), 0, 100))
            for _ in range(repeats)
        ]
    return units


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--tasks", type=int, default=51)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    units = suite(a.tasks, a.repeats)
    y = units_mean(units, len(HOURS))
    fit_curve(HOURS, y)  # warm-up: imports, first calls
    t0 = time.perf_counter()
    f = fit_curve(HOURS, y)
    t_point = time.perf_counter() - t0
    t0 = time.perf_counter()
    Y = hierarchical_resamples(units, len(HOURS), a.resamples, seed=1)
    t_draw = time.perf_counter() - t0
    t0 = time.perf_counter()
    bootstrap(f, Y, kind="tasks then runs")
    t_fit = time.perf_counter() - t0
    n_base = min(20, len(Y))
    t0 = time.perf_counter()
    for row in Y[:n_base]:
        fit_curve(HOURS, row, horizons=())
    t_base = (time.perf_counter() - t0) / n_base
    total = t_point + t_draw + t_fit
    per = (t_draw + t_fit) / a.resamples
    print(f"suite: {a.tasks} tasks x {a.repeats} repeats, hours 2..12; {a.resamples} resamples")
    print(
        f"point fit: {1000 * t_point:.1f} ms; resampling: {1000 * t_draw:.1f} ms; vectorised fits: "
        f"{1000 * t_fit:.1f} ms"
    )
    print(f"total {total:.2f} s (target < 5 s: {'met' if total < 5 else 'NOT met'}); {1000 * per:.3f} ms per resample")
    print(
        f"baseline (fit_curve per resample, first {n_base}): {1000 * t_base:.1f} ms per resample; "
        f"vectorised is {t_base / per:.0f}x faster"
    )
    lo, hi = f.intervals["S@12"]
    print(
        f"S@12 = {f.S_at[12.0]:.2f} (80% interval {lo:.2f}-{hi:.2f}); bounds hit in "
        f"{100 * f.bootstrap['at_bound_share']:.1f}% of resamples; flags: {' '.join(f.flags) or 'none'}"
    )
    forecast_bench()
    return 0


def forecast_bench(n_subs: int = 250) -> None:
    import statistics

    from edgetui.replay.analysis.forecast import forecast_run
    from edgetui.replay.analysis.score_at import run_curve

    rng = np.random.default_rng(2)
    start = 1.7e9
    subs = []
    for k in range(n_subs):
        t = start + (k + 1) * 170.0
        subs.append(
            {
                "round": f"agent-{k + 1}",
                "kind": "agent",
                "n": k + 1,
                "status": "graded",
                "t": t,
                "runtime_s": 120.0,
                "seen_at": t + 140,
                "pass_rate": 0.25,
                "score": float(rng.uniform(10, 70)),
                "score_0_100": None,
                "valid": True,
            }
        )
    run = {
        "run_key": "local/r/t",
        "run_id": "r",
        "task_id": "t",
        "status": "running",
        "started_at": start,
        "last_event_at": start + (n_subs + 1) * 170.0,
        "selection": "score_first",
        "score_direction": "maximize",
    }
    spec = {"kind": "linear", "lower": 0.0, "upper": 100.0}
    curve_t, both_t = [], []
    for _ in range(30):
        t0 = time.perf_counter()
        c = run_curve(run, subs, spec)
        t1 = time.perf_counter()
        f = forecast_run(c, 12.0)
        t2 = time.perf_counter()
        curve_t.append(t1 - t0)
        both_t.append(t2 - t0)
    med, base = statistics.median(both_t), statistics.median(curve_t)
    print(
        f"forecast update, {n_subs} submissions: {1000 * med:.2f} ms (target < 50 ms: "
        f"{'met' if med < 0.05 else 'NOT met'}); the curve rebuild alone {1000 * base:.2f} ms; "
        f"forecast {f.value:.1f} at 12 h, last best {f.baseline:.1f}"
    )


if __name__ == "__main__":
    sys.exit(main())
