"""Log-sigmoid fits and their look-alikes (edgetui.replay.analysis.fit, `edgetui fit`): known parameters
recovered from synthetic noisy curves, flags raised and Smax withheld on flat and ridge curves,
forms compared on held-out hours, the vectorised bootstrap."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import SHARED_DATA, need_shared_data

from edgetui.cli.main import main
from edgetui.replay.analysis.curves import hierarchical_resamples, units_mean
from edgetui.replay.analysis.fit import bootstrap, compare_forms, fit_curve, fit_many, predict

HOURS = np.array([2.0, 4.0, 6.0, 8.0, 10.0, 12.0])
SEEDS = range(20)


def _curve(smax, t_mid, beta, seed, noise=1.0):
    rng = np.random.default_rng(seed)
    return smax / (1 + (t_mid / HOURS) ** beta) + rng.normal(0, noise, len(HOURS))


def test_noiseless_curve_is_recovered_exactly():
    f = fit_curve(HOURS, 60 / (1 + (4 / HOURS) ** 1.5))
    assert not f.flags
    assert f.params["Smax"] == pytest.approx(60, rel=1e-3)
    assert f.params["t_mid"] == pytest.approx(4, rel=1e-3)
    assert f.params["beta"] == pytest.approx(1.5, rel=1e-3)
    assert f.r2 == pytest.approx(1.0, abs=1e-9) and f.status > 0


# Stated tolerance (README "Fits"): with noise of 1 point at hours 2..12 and t_mid within 2-12 h,
# every fit that raises no flag is within 35 % of Smax, a factor 2 of t_mid and a factor 1.7 of beta,
# and at least half of the fits raise no flag.
@pytest.mark.parametrize("smax,t_mid,beta", [(60, 4, 1.5), (45, 3, 1.0), (80, 8, 2.0), (40, 2.5, 3.0), (70, 10, 1.2)])
def test_known_parameters_recovered_from_noisy_curves(smax, t_mid, beta):
    clean = 0
    for seed in SEEDS:
        f = fit_curve(HOURS, _curve(smax, t_mid, beta, seed))
        if f.flags:
            continue
        clean += 1
        assert abs(f.params["Smax"] - smax) <= 0.35 * smax, (seed, f.params)
        assert abs(math.log(f.params["t_mid"] / t_mid)) <= math.log(2.0), (seed, f.params)
        assert abs(math.log(f.params["beta"] / beta)) <= math.log(1.7), (seed, f.params)
    assert clean >= len(SEEDS) // 2


@pytest.mark.parametrize("t_mid,kind", [(0.05, "flat"), (0.1, "flat"), (60.0, "ridge"), (200.0, "ridge")])
def test_flat_and_ridge_curves_are_flagged_and_withhold_smax(t_mid, kind):
    flagged = flat = 0
    for seed in SEEDS:
        f = fit_curve(HOURS, _curve(50 if kind == "flat" else 90, t_mid, 1.5 if kind == "flat" else 0.6, seed))
        d = f.as_dict()
        if f.flags:
            flagged += 1
            assert d["Smax"] is None and d["t_mid"] is None and d["beta"] is None and not d["findings"]
            assert d["raw"]["Smax"] == f.params["Smax"]  # kept, not presented
            assert d["S_at"]["12"] is not None  # what stays well determined is still shown
        flat += "flat" in f.flags
    assert flagged >= 17  # at least 85 % of the 20 noisy curves
    if kind == "flat":
        assert flat >= 17


def test_forms_compared_on_held_out_hours():
    # 16 points from 15 min to 12 h: enough to tell the forms apart (on six points they are not)
    h = np.geomspace(0.25, 12, 16)
    y = 55 / (1 + (3 / h) ** 2.0) + np.random.default_rng(3).normal(0, 0.3, len(h))
    rows = compare_forms(h, y)
    by = {r["form"]: r for r in rows}
    assert rows[0]["form"] == "log_sigmoid"  # the generating form predicts held-out hours best
    assert by["log_linear"]["heldout_rmse"] > 5 * by["log_sigmoid"]["heldout_rmse"]
    assert all(r["r2"] > 0.99 for r in rows if r["form"] != "log_linear")  # R² alone would not separate them
    # t_half is comparable across forms: Gompertz's t_mid is not its half-maximum time
    g = by["log_gompertz"]["params"]
    assert predict("log_gompertz", g, [by["log_gompertz"]["t_half"]])[0] == pytest.approx(g["Smax"] / 2, rel=1e-6)


def test_vectorised_fits_agree_with_single_fits():
    Y = np.vstack([_curve(60, 4, 1.5, s) for s in range(30)])
    r = fit_many("log_sigmoid", HOURS, Y)
    for i in range(0, 30, 7):
        f = fit_curve(HOURS, Y[i])
        sse = float(np.sum((predict("log_sigmoid", f.params, HOURS) - Y[i]) ** 2))
        assert r["sse"][i] <= sse * 1.05 + 1e-6  # the zoomed grid reaches the optimiser's error


def test_hierarchical_bootstrap_resamples_tasks_then_runs():
    # two tasks; task b has two repeats. The mean is (10 + (30 + 50) / 2) / 2 = 25.
    units = {"a": [[10.0, 10.0]], "b": [[30.0, 30.0], [50.0, 50.0]]}
    assert list(units_mean(units, 2)) == [25.0, 25.0]
    Y = hierarchical_resamples(units, 2, 4000, seed=1)
    vals = set(np.round(Y[:, 0], 6))
    # tasks {a,a}: 10; {b,b}: 30..50; {a,b}: 20..30: only these values can occur
    assert vals <= {10.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0}
    assert 45.0 in vals and 10.0 in vals  # runs within b are resampled too, not only tasks
    assert Y[:, 0].mean() == pytest.approx(25.0, abs=0.6)


def test_bootstrap_interval_records_its_kind_and_covers_the_fit():
    units = {
        f"t{i}": [list(40 / (1 + (3 / HOURS) ** 1.2) + np.random.default_rng(i).normal(0, 8, 6))] for i in range(51)
    }
    y = units_mean(units, 6)
    f = fit_curve(HOURS, y)
    bootstrap(f, hierarchical_resamples(units, 6, 1000), kind="tasks")
    lo, hi = f.intervals["S@12"]
    assert lo < f.S_at[12.0] < hi and hi - lo > 0.5
    assert f.bootstrap["resamples"] == 1000 and f.bootstrap["kind"] == "tasks"


def _need(name):
    return need_shared_data(SHARED_DATA / name)


def test_cli_fits_every_suite_model_curve_of_the_leaderboard(capsys):
    p = _need("edgebench_leaderboard.csv")
    assert main(["fit", "--csv", str(p), "--format", "json", "--bootstrap", "100"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert len(recs) == 10
    assert {(r["suite"], r["model"]) for r in recs} >= {("open51", "GPT-5.5"), ("full134", "Claude Opus 4.8")}
    for r in recs:
        assert {"Smax", "t_mid", "beta", "fit", "forms", "time_basis", "aggregation"} <= set(r)
        assert {x["form"] for x in r["forms"]} == {"log_sigmoid", "log_probit", "log_gompertz", "weibull", "log_linear"}
        if r["fit"]["flags"]:
            assert r["Smax"] is None
        else:
            assert r["Smax"] == r["fit"]["raw"]["Smax"] and r["fit"]["r2"] > 0.99
    flagged = {r["model"] for r in recs if r["suite"] == "open51" and r["fit"]["flags"]}
    assert {"GPT-5.4", "GLM-5.1"} <= flagged  # their open-51 curves never bend inside 2-12 h


def test_cli_mean_over_tasks_table_and_plot(capsys):
    p = _need("edgebench_open51_per_task.csv")
    assert main(["fit", "--csv", str(p), "--mean-over", "task", "--bootstrap", "200", "--plot"]) == 0
    out = capsys.readouterr().out
    for m in ("Claude Opus 4.8", "GPT-5.5", "GPT-5.4", "GLM-5.1", "DS-V4-Pro"):
        assert f"{m}: log_sigmoid" in out  # a legend line per curve under the plot
    assert "log_gompertz" in out and "heldout_RMSE" in out


def test_cli_bad_table_is_one_line(tmp_path, capsys):
    p = tmp_path / "c.csv"
    p.write_text("model,hours,score\nM,2,10\nM,0,12\n")
    assert main(["fit", "--csv", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "line 3" in err


def test_bootstrap_interval_holds_its_own_value_and_a_flat_curve_has_a_sane_r2():
    """The resamples are fitted on the grid only, the point is refined: the interval is placed
    around the point (it once read 47.20 with an interval 47.3–47.3); a flat curve's R² is not the
    ratio of two rounding errors (it read −2·10¹⁴)."""
    from edgetui.replay.analysis.fit import bootstrap, fit_curve, residual_resamples

    hours = [2, 4, 6, 8, 10, 12]
    law = [60.0 / (1 + (3.3 / h) ** 1.7) for h in hours]
    f = fit_curve(hours, law, horizons=(12.0,))
    bootstrap(f, residual_resamples(f, 200), horizons=(12.0,))
    lo, hi = f.intervals["S@12"]
    assert lo <= f.S_at[12.0] <= hi
    noisy = [v + d for v, d in zip(law, [0.8, -1.1, 0.4, -0.3, 1.2, -0.6])]
    g = fit_curve(hours, noisy, horizons=(12.0,))
    bootstrap(g, residual_resamples(g, 300), horizons=(12.0,))
    lo, hi = g.intervals["S@12"]
    assert lo < g.S_at[12.0] < hi and hi - lo > 0.5
    flat = fit_curve(hours, [38.571428571428573] * 6, horizons=(12.0,))
    assert flat.r2 in (0.0, 1.0) and "flat" in flat.flags
