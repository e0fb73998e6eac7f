"""The leaderboard (edgetui.replay.analysis.leaderboard, `edgetui leaderboard`): the published open-51
EdgeBench tables reproduced from the per-task table, and repeats, -retry, infra-error and sample
runs on recorded runs."""

from __future__ import annotations

import csv
import json

import pytest

from conftest import SHARED_DATA, need_shared_data
from runs_factory import HOUR, NOW, ingest, write_run, write_task

from edgetui.cli.main import main
from edgetui.replay.analysis.leaderboard import OVERALL, aggregate, read_task_table

PER_TASK = SHARED_DATA / "edgebench_open51_per_task.csv"


def _need(path):
    return need_shared_data(path)


def _published(name, suite="open51"):
    with open(_need(SHARED_DATA / name), newline="") as f:
        return [r for r in csv.DictReader(f) if r["suite"] == suite]


def test_reproduces_every_open51_leaderboard_and_category_row_within_0_1():
    _, vals = read_task_table(_need(PER_TASK))
    cells = {(c.group[0], c.category, c.hours): c for c in aggregate(vals)}
    lb = _published("edgebench_leaderboard.csv")
    cat = _published("edgebench_category_12h.csv")
    assert len(lb) == 30 and len(cat) == 30
    for r in lb:
        c = cells[(r["model"], OVERALL, float(r["hours"]))]
        assert abs(c.score - float(r["score"])) <= 0.1, (r, c.score)
        assert c.n_tasks in (50, 51)  # the missing cells are dropped, not counted as 0
    for r in cat:
        c = cells[(r["model"], r["category"], 12.0)]
        assert abs(c.score - float(r["score"])) <= 0.1, (r, c.score)
    # drop-missing, not missing-as-0: Opus 4.8 lacks one task at every hour
    opus12 = cells[("Claude Opus 4.8", OVERALL, 12.0)]
    assert opus12.n_tasks == 50
    as_zero = opus12.score * 50 / 51
    assert abs(as_zero - 44.2) > 0.1


def test_cli_csv_json_is_unrounded_and_matches(capsys):
    _need(PER_TASK)
    assert main(["leaderboard", "--csv", str(PER_TASK), "--format", "json", "--hours", "12", "--no-categories"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["model"] for r in rows} == {"Claude Opus 4.8", "GPT-5.5", "GPT-5.4", "GLM-5.1", "DS-V4-Pro"}
    assert all(r["hours"] == 12 and r["category"] == OVERALL for r in rows)
    pub = {r["model"]: float(r["score"]) for r in _published("edgebench_leaderboard.csv") if r["hours"] == "12"}
    for r in rows:
        assert abs(r["score"] - pub[r["model"]]) <= 0.1
    assert any(abs(r["score"] - round(r["score"], 1)) > 1e-9 for r in rows)  # unrounded values


def test_bad_table_is_one_line_error_naming_file_and_line(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("task,model,hours,score\na,M,2,10\na,M,two,11\n")
    assert main(["leaderboard", "--csv", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{p}: line 3" in err


@pytest.fixture
def suite_db(tmp_path):
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "a.duckdb"
    for t, cat in (("ta", "Optimization"), ("tb", "Formal")):
        write_task(tasks, t, category=cat, selection="pass_rate_first", parser="pytest")
    s = NOW - 30 * HOUR
    # model M: task ta twice (20, 40 -> 30 first), tb once (60): mean (30 + 60) / 2 = 45, not 40
    write_run(runs, "m-r1-1-20261101000000", "ta", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 0.2, None)])
    write_run(runs, "m-r1-2-20261101000000", "ta", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 0.4, None)])
    write_run(runs, "m-r1-1-20261101000000", "tb", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 0.6, None)])
    # left out by default: a -retry run, an infra-error run (model M), and a sample run
    write_run(runs, "m-retry", "tb", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 1.0, None)])
    write_run(
        runs, "m-infra", "tb", model="M", start=s, duration_s=12.5 * HOUR, infra_error=True, subs=[(HOUR, 0.1, None)]
    )
    ingest(db, [runs], tasks)
    sample = tmp_path / "sample"
    write_run(sample, "m-sample", "ta", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 1.0, None)])
    ingest(db, [sample], tasks, sample=True)
    return db


def _lb(db, capsys, *extra):
    assert main(["--db", str(db), "leaderboard", "--hours", "2", "--format", "json", *extra]) == 0
    return {
        (
            tuple(
                v
                for k, v in r.items()
                if k not in ("category", "hours", "score", "n_tasks", "n_runs", "mixed_variants")
            ),
            r["category"],
        ): r
        for r in json.loads(capsys.readouterr().out)
    }


def test_repeats_averaged_first_and_retry_infra_samples_left_out(suite_db, capsys):
    cells = _lb(suite_db, capsys)
    ov = cells[(("M",), OVERALL)]
    assert ov["score"] == pytest.approx(45.0) and ov["n_tasks"] == 2 and ov["n_runs"] == 3
    assert cells[(("M",), "Formal")]["score"] == pytest.approx(60.0)


def test_retry_runs_counted_when_asked(suite_db, capsys):
    ov = _lb(suite_db, capsys, "--include-retry")[(("M",), OVERALL)]
    assert ov["score"] == pytest.approx((30 + (60 + 100) / 2) / 2)


def test_infra_error_runs_counted_when_asked(suite_db, capsys):
    ov = _lb(suite_db, capsys, "--include-infra")[(("M",), OVERALL)]
    assert ov["score"] == pytest.approx((30 + (60 + 10) / 2) / 2)


def test_sample_runs_counted_when_asked(suite_db, capsys):
    ov = _lb(suite_db, capsys, "--include-samples")[(("M",), OVERALL)]
    assert ov["score"] == pytest.approx(((20 + 40 + 100) / 3 + 60) / 2)


def test_run_groups_merge_machine_siblings(suite_db, capsys):
    cells = _lb(suite_db, capsys, "--by", "run_group")
    assert cells[(("m-r1",), OVERALL)]["score"] == pytest.approx(45.0)


def test_table_says_its_values_are_rescaled(suite_db, capsys):
    # recorded runs' values are rescaled 0-100 (or pass rate x 100): the table says so (issue 37)
    assert main(["--db", str(suite_db), "leaderboard"]) == 0
    assert "values are 0-100: the task's rescaled score" in capsys.readouterr().out
