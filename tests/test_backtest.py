"""The 12-hour forecast back-test (edgetui.replay.analysis.backtest, `edgetui fit --backtest`)."""

from __future__ import annotations

import json


from conftest import ROOT, SHARED_DATA, need_shared_data

from edgetui.cli.main import main
from edgetui.replay.analysis.backtest import backtest, markdown
from edgetui.replay.analysis.leaderboard import TaskValue, read_task_table

HOURS = (2, 4, 6, 8, 10, 12)


def _table(beta_of_model):
    vals = []
    for m, beta in beta_of_model.items():
        for k in range(8):
            smax, t_mid = 40 + 5 * k, 1.0 + 0.7 * k
            for h in HOURS:
                vals.append(TaskValue((m,), f"task{k}", None, float(h), smax / (1 + (t_mid / h) ** beta)))
    return vals


def _row(rows, level, window, model="overall"):
    return next(r for r in rows if r.level == level and r.window == window and r.model == model)


def test_forecast_beats_last_best_on_curves_that_follow_the_law():
    rows = backtest(_table({f"M{i}": 1.2 for i in range(6)}))
    for w in ("2-6h", "2-4h"):
        r = _row(rows, "task", w)
        assert r.n == 48 and r.left_out == 0
        assert r.mae_forecast < 0.2 and r.mae_baseline > 3  # (the grids' resolution)
        s = _row(rows, "suite mean", w)
        assert s.n == 6 and s.mae_forecast < s.mae_baseline


def test_the_prior_never_sees_the_model_it_predicts():
    # model X alone has beta 4; the others 0.8. X's forecasts use a prior from the other models only.
    rows = backtest(_table({"X": 4.0, **{f"M{i}": 0.8 for i in range(5)}}))
    x = _row(rows, "task", "2-4h", "X")
    others = [_row(rows, "task", "2-4h", f"M{i}") for i in range(5)]
    assert x.mae_forecast > 1.0
    assert all(o.mae_forecast < 0.2 for o in others)


def _need(name):
    return need_shared_data(SHARED_DATA / name)


def test_per_task_table_backtest_and_readme_figures(capsys):
    p = _need("edgebench_open51_per_task.csv")
    _, vals = read_task_table(p)
    rows = backtest(vals)
    r = _row(rows, "task", "2-6h")
    assert r.n + r.left_out == 255
    assert 0.6 <= r.coverage_forecast <= 0.95  # an 80 % interval measured by back-testing
    assert r.mae_forecast < r.mae_baseline
    # docs/analysis.md carries exactly these numbers (`edgetui fit --backtest --csv ... --markdown`)
    assert markdown(rows) in (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    assert main(["fit", "--backtest", "--csv", str(p), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {d["model"] for d in out} >= {"overall", "GPT-5.5"}


def test_backtest_needs_a_table(capsys):
    assert main(["fit", "--backtest"]) == 2
    assert "--backtest needs --csv" in capsys.readouterr().err
