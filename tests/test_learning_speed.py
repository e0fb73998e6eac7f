"""Learning speed and its doubling time (edgetui.replay.analysis.learning, `edgetui learning-speed`)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import SHARED_DATA, need_shared_data
from runs_factory import HOUR, NOW, ingest, write_run, write_task

from edgetui.cli.main import main
from edgetui.replay.analysis.learning import read_speed_table


def test_table_doubling_time_is_ln2_over_the_slope(capsys):
    p = need_shared_data(SHARED_DATA / "edgebench_learning_speed.csv")
    pts = read_speed_table(p)
    slope = np.polyfit([x for _, x, _ in pts], np.log([v for _, _, v in pts]), 1)[0]
    assert main(["learning-speed", "--csv", str(p), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["doubling_months"] == pytest.approx(12 * math.log(2) / slope, rel=1e-9)
    lo, hi = d["interval_months"]
    assert lo < d["doubling_months"] < hi and d["bootstrap"] == "models" and d["resamples"] == 1000
    assert "13 points" in d["note"] and "one value per model" in d["note"]
    assert 2 < d["doubling_months"] < 6  # "about every three months"


def test_recorded_runs_gain_from_the_first_graded_submission(tmp_path, capsys):
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "a.duckdb"
    for t in ("ta", "tb"):
        write_task(tasks, t, selection="pass_rate_first", parser="pytest")
    s = NOW - 30 * HOUR
    # gains 10, 20, 40 points within 2 h for models released 6 months apart: doubling every 6 months
    for model, gain in (("A", 0.10), ("B", 0.20), ("C", 0.40)):
        for t in ("ta", "tb"):
            write_run(
                runs,
                f"{model.lower()}-{t}",
                t,
                model=model,
                start=s,
                duration_s=12.5 * HOUR,
                subs=[(0.1 * HOUR, 0.3, None), (1.5 * HOUR, 0.3 + gain, None), (3 * HOUR, 0.99, None)],
            )
    ingest(db, [runs], tasks)
    dates = tmp_path / "dates.csv"
    dates.write_text("model,release_date\nA,2025-01\nB,2025-07\nC,2026-01\n")
    assert main(["--db", str(db), "learning-speed", "--release-dates", str(dates), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    speeds = {p["model"]: p["learning_speed"] for p in d["points"]}
    assert speeds == pytest.approx({"A": 10.0, "B": 20.0, "C": 40.0})  # not 69 (the 3 h submission)
    assert d["doubling_months"] == pytest.approx(6.0, rel=1e-6)
    assert d["bootstrap"] == "tasks then runs"


def test_bad_release_date_names_file_and_line(tmp_path, capsys):
    p = tmp_path / "s.csv"
    p.write_text("model,release_month,learning_speed\nA,2025-01,3\nB,May 2025,4\n")
    assert main(["learning-speed", "--csv", str(p)]) == 2
    assert f"{p}: line 3: release date 'May 2025'" in capsys.readouterr().err


def test_recorded_runs_without_release_dates_say_what_the_file_holds(tmp_path, capsys):
    """The release-dates file was nowhere explained: the error says its lines and names the models of
    the recorded runs that need a date; the README and docs/analysis.md say the same."""
    from pathlib import Path

    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "a.duckdb"
    write_task(tasks, "ta", selection="pass_rate_first", parser="pytest")
    for model in ("model-a", "model-b"):
        write_run(
            runs,
            f"{model}-ta",
            "ta",
            model=model,
            start=NOW - 30 * HOUR,
            duration_s=3 * HOUR,
            subs=[(0.5 * HOUR, 0.5, None)],
        )
    ingest(db, [runs], tasks)
    assert main(["--db", str(db), "learning-speed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--release-dates FILE: a CSV of model,release_date (YYYY-MM)" in err
    assert "of your runs (model-a, model-b)" in err and "e.g. 'model-a,2026-06'" in err
    root = Path(__file__).resolve().parents[1]
    assert "--release-dates" in (root / "README.md").read_text()
    assert "### Learning speed" in (root / "docs" / "analysis.md").read_text()
