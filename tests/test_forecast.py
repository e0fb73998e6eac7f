"""The 12-hour forecast of a run (edgetui.replay.analysis.forecast, `edgetui forecast`), on recorded runs."""

from __future__ import annotations

import json

import pytest

from conftest import SHARED_DATA, need_shared_data
from runs_factory import HOUR, NOW, curves, ingest, write_run, write_task

from edgetui.cli.main import main
from edgetui.replay.analysis.forecast import BACKTEST_ERRORS, forecast_run, prior_beta


def _law(h, smax=80.0, t_mid=4.0, beta=1.0):
    return smax / (1 + (t_mid / h) ** beta)


@pytest.fixture
def law_db(tmp_path):
    """A run whose pass rate follows the law (beta 1) with a graded submission every 10 minutes."""
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "a.duckdb"
    write_task(tasks, "law", selection="pass_rate_first", parser="pytest")
    subs = [(k * 600.0, _law(k / 6) / 100, None, 1.0) for k in range(1, 73)]
    write_run(runs, "law-1", "law", model="M", start=NOW - 20 * HOUR, duration_s=12.5 * HOUR, subs=subs)
    ingest(db, [runs], tasks)
    return db


def test_forecast_from_the_first_hours_follows_the_law(law_db):
    c = curves(law_db)["local/law-1/law"]
    f = forecast_run(c, 12.0, beta=1.0, elapsed_s=4 * HOUR)
    assert f.baseline == pytest.approx(_law(23 / 6))  # the 4 h round is known 1 s after 4 h
    assert f.value == pytest.approx(_law(12.0), abs=1.5)  # 60 at 12 h, the best so far was 40
    assert f.window == "2-4h" and f.lo <= _law(12.0) <= f.hi
    assert f.value > f.baseline + 15
    done = forecast_run(c, 12.0, elapsed_s=12.2 * HOUR)
    assert done.lo is None and done.value == pytest.approx(c.cell(12).value)


def test_prior_comes_from_stored_fits_of_the_task_never_the_run_itself():
    stored = [
        {"task_id": "t", "model": "M", "run_key": "r1", "beta": 2.0, "findings": True},
        {"task_id": "t", "model": "M", "run_key": "r2", "beta": 4.0, "findings": True},
        {"task_id": "u", "model": "M", "run_key": "r3", "beta": 0.5, "findings": True},
        {"task_id": "t", "model": "M", "run_key": "r4", "beta": 9.0, "findings": False},
    ]
    assert prior_beta(stored, "t", "M", exclude_run="r2") == (2.0, "1 stored fit(s) of this task")
    assert prior_beta(stored, "v", "M")[1] == "3 stored fit(s) of this model"
    assert prior_beta(stored, "v", "N")[0] == 1.0


def test_cli_forecast_prior_comes_from_an_earlier_run_of_the_task(law_db, tmp_path, capsys):
    # alone, the run has no earlier run to learn the shape from: the default prior
    assert main(["--db", str(law_db), "forecast", "law-1", "--at", "4h", "--horizon", "12", "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["prior"].startswith("default") and alone["beta"] == 1.0
    # an earlier run of the task on the same law (beta 1): its fit is the prior, fitted on demand
    subs = [(k * 600.0, _law(k / 6) / 100, None, 1.0) for k in range(1, 73)]
    write_run(tmp_path / "runs", "law-0", "law", model="M", start=NOW - 40 * HOUR, duration_s=12.5 * HOUR, subs=subs)
    ingest(law_db, [tmp_path / "runs" / "law-0"], tmp_path / "tasks")
    assert main(["--db", str(law_db), "forecast", "law-1", "--at", "4h", "--horizon", "12", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    import duckdb

    conn = duckdb.connect(str(law_db), read_only=True)
    stored = conn.execute("SELECT beta FROM fits WHERE source = 'prior' AND run_key = 'local/law-0/law'").fetchone()[0]
    conn.close()
    assert d["prior"] == "median of 1 earlier run(s) of this task" and d["beta"] == stored != 1.0
    # the fit read the steps of a best-so-far curve: its beta is near, not at, the true 1.0
    assert stored == pytest.approx(1.0, rel=0.2)
    # a 13 % error in beta moves the 12 h forecast by ~5 points; still far nearer than last best persists
    truth = _law(12.0)
    assert abs(d["value"] - truth) < abs(d["baseline"] - truth) / 3


def test_interval_constants_are_the_backtests():
    p = need_shared_data(SHARED_DATA / "edgebench_open51_per_task.csv")
    from edgetui.replay.analysis.backtest import backtest
    from edgetui.replay.analysis.leaderboard import read_task_table

    rows = {r.window: r for r in backtest(read_task_table(p)[1]) if r.level == "task" and r.model == "overall"}
    for w, (q10, q90) in BACKTEST_ERRORS.items():
        assert rows[w].error_q10 == pytest.approx(q10, abs=0.01) and rows[w].error_q90 == pytest.approx(q90, abs=0.01)


def test_gain_interval_constants_are_the_backtests():
    p = need_shared_data(SHARED_DATA / "edgebench_open51_per_task.csv")
    from edgetui.replay.analysis.backtest import backtest
    from edgetui.replay.analysis.forecast import GAIN_ERRORS
    from edgetui.replay.analysis.leaderboard import read_task_table

    rows = {r.window: r for r in backtest(read_task_table(p)[1]) if r.level == "task" and r.model == "overall"}
    for kind, windows in GAIN_ERRORS.items():
        for w, (q10, q90) in windows.items():
            r = rows[w]
            assert getattr(r, f"gain_{kind}_q10") == pytest.approx(q10, abs=0.01)
            assert getattr(r, f"gain_{kind}_q90") == pytest.approx(q90, abs=0.01)
            # a gain prior is used only in a window where it beat the fixed-beta forecast
            assert getattr(r, f"mae_gain_{kind}") < r.mae_forecast
    # and the "all curves" gain is left out where it lost
    assert rows["2-6h"].mae_gain_all > rows["2-6h"].mae_forecast and "2-6h" not in GAIN_ERRORS["all"]


@pytest.fixture(scope="module")
def flagship_db(tmp_path_factory, samples_template):
    from conftest import copy_samples_db

    return copy_samples_db(samples_template, tmp_path_factory.mktemp("f") / "s.duckdb")


def _forecast_json(db, capsys, *extra):
    assert main(["--db", str(db), "forecast", "opus48-edge-3", *extra, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_run_that_starts_high_is_forecast_above_its_last_best(flagship_db, capsys):
    # the 12-hour sample starts near 43 in its first minutes: a law through 0 fitted to every point from
    # there put its bend before them and its forecast at the best so far (issue 37: 50.4 at 3 h, 71.2 reached)
    reached = _forecast_json(flagship_db, capsys, "--at", "13h")["value"]
    for at in ("3h", "6h", "9h"):
        d = _forecast_json(flagship_db, capsys, "--at", at)
        assert d["value"] > d["baseline"] + 1.0, (at, d)
        assert d["lo"] <= reached <= d["hi"] or at == "3h"  # a single task jumps: 3 h's interval misses it
        if at != "9h":  # at 9 h the last best is 0.5 below; the forecast 2 above
            assert abs(d["value"] - reached) < abs(d["baseline"] - reached) * 0.7


def test_forecast_says_its_scale_and_when_at_is_past_the_end(flagship_db, capsys):
    assert main(["--db", str(flagship_db), "forecast", "opus48-edge-3", "--at", "3h"]) == 0
    out = capsys.readouterr().out
    assert "values are 0-100" in out and "past the run's end" not in out
    assert main(["--db", str(flagship_db), "forecast", "opus48-edge-3", "--at", "13h"]) == 0
    out = capsys.readouterr().out
    assert "--at 13h is past the run's end (12.03 h)" in out
    assert _forecast_json(flagship_db, capsys, "--at", "13h")["past_end"] is True


def test_published_table_gives_the_gain_prior(flagship_db, tmp_path, capsys):
    # a table of the user's, in the published table's shape: this task's curves gain 10 from 3 h to 12 h
    t = tmp_path / "per_task.csv"
    rows = ["task,category,model,hours,score"]
    for m, base in (("A", 30.0), ("B", 40.0), ("C", 50.0)):
        for h in (2, 4, 6, 8, 10, 12):
            rows.append(f"gw_signal_search,Sci,{m},{h},{base + 10.0 * (h - 2) / 10:.3f}")
    t.write_text("\n".join(rows) + "\n")
    d = _forecast_json(flagship_db, capsys, "--at", "3h", "--published", str(t))
    # the same task in the table: the gain from 3 h (interpolated in ln t) to 12 h, median of 3 curves
    import math

    g = 10.0 - 2.0 * math.log(3 / 2) / math.log(2)
    assert d["value"] == pytest.approx(d["baseline"] + g, abs=0.01)
    assert "median gain to 12 h of 3 curve(s) (this task's)" in d["prior"] and d["beta"] is None
    lo, hi = d["lo"] - d["value"], d["hi"] - d["value"]
    from edgetui.replay.analysis.forecast import GAIN_ERRORS

    assert (round(lo, 2), round(hi, 2)) == GAIN_ERRORS["task"]["2-4h"]
    # a task the table does not have, past half the horizon: the fixed-beta forecast stays (it won there)
    other = tmp_path / "other.csv"
    other.write_text(t.read_text().replace("gw_signal_search", "another_task"))
    d = _forecast_json(flagship_db, capsys, "--at", "8h", "--published", str(other))
    assert d["prior"].startswith("default") and d["beta"] == 1.0
    assert main(["--db", str(flagship_db), "forecast", "opus48-edge-3", "--published", str(tmp_path / "no.csv")]) == 2
    assert "--published" in capsys.readouterr().err
