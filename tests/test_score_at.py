"""Score at h hours of recorded runs (edgetui.replay.analysis.score_at): every cell state, on runs written
as SForge writes them and recorded by the real ingest into a real DuckDB file."""

from __future__ import annotations

import pytest

from runs_factory import HOUR, NOW, curves, ingest, write_run, write_task


@pytest.fixture
def recorded(tmp_path):
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "a.duckdb"
    write_task(tasks, "resc", rescale={"kind": "linear", "lower": 0.0, "upper": 200.0})
    write_task(tasks, "plain", selection="pass_rate_first", parser="pytest")
    start = NOW - 20 * HOUR
    # rescaled task: 40 known at 1.1 h, 50 submitted at 1.9 h but graded for 0.2 h (known at 2.1 h)
    write_run(
        runs,
        "m1-a",
        "resc",
        model="M1",
        start=start,
        duration_s=12.5 * HOUR,
        subs=[(1.0 * HOUR, 0.2, 40.0, 360), (1.9 * HOUR, 0.1, 50.0, 720), (5 * HOUR, 0.9, 30.0, 60)],
    )
    # pass-rate task: value is pass rate x 100 under pass_rate_first; ends at 3 h
    write_run(
        runs,
        "m1-b",
        "plain",
        model="M1",
        start=start,
        duration_s=3 * HOUR,
        subs=[(0.5 * HOUR, 0.25, 9.0), (2.5 * HOUR, 0.75, 1.0)],
    )
    # going on: started 3 h ago
    write_run(
        runs,
        "m1-live",
        "plain",
        model="M1",
        start=NOW - 3 * HOUR,
        duration_s=None,
        subs=[(0.5 * HOUR, 0.5, None), (2.9 * HOUR, 0.6, None, 30)],
    )
    # infra error
    write_run(
        runs,
        "m1-infra",
        "plain",
        model="M1",
        start=start,
        duration_s=12 * HOUR,
        infra_error=True,
        subs=[(1 * HOUR, 0.5, None)],
    )
    # nothing valid: score_first ignores entries without a score
    write_run(
        runs,
        "m1-none",
        "resc",
        model="M1",
        start=start,
        duration_s=12 * HOUR,
        subs=[(1 * HOUR, 0.0, None), (3 * HOUR, 0.0, None)],
    )
    ingest(db, [runs], tasks)
    return curves(db)


def test_value_is_rescaled_best_timed_when_the_result_was_known(recorded):
    c = recorded["local/m1-a/resc"]
    assert c.cell(1.0).state == "no_valid"  # graded 360 s after 1.0 h: not known at 1 h
    assert c.cell(1.2).value == pytest.approx(20.0)  # 40 on linear 0..200
    assert c.cell(2.0).value == pytest.approx(20.0)  # 50 submitted at 1.9 h is known only at 2.1 h
    assert c.cell(2.2).value == pytest.approx(25.0)
    # score_first: a higher pass rate with a lower score does not win
    assert c.cell(12).value == pytest.approx(25.0) and c.cell(12).round == "agent-2"
    assert c.cell(12).state == "value"


def test_pass_rate_task_and_ended_before_h_carries(recorded):
    c = recorded["local/m1-b/plain"]
    assert c.cell(2).value == pytest.approx(25.0) and c.cell(2).state == "value"
    assert c.cell(4).value == pytest.approx(75.0) and c.cell(4).state == "carried"
    assert c.cell(12).state == "carried"


def test_run_going_on_is_not_yet_past_its_elapsed(recorded):
    c = recorded["local/m1-live/plain"]
    assert c.live
    assert c.cell(2).value == pytest.approx(50.0)
    assert c.cell(4).state == "not_yet" and c.cell(4).value is None


def test_infra_error_run_has_no_value_unless_asked(recorded):
    c = recorded["local/m1-infra/plain"]
    assert c.cell(2).state == "infra_error" and c.cell(2).value is None
    assert c.cell(2, include_infra=True).value == pytest.approx(50.0)


def test_past_h_without_a_valid_submission(recorded):
    c = recorded["local/m1-none/resc"]
    assert [c.cell(h).state for h in (2, 12)] == ["no_valid", "no_valid"]


def test_gravitational_wave_sample_at_12h_is_its_rescaled_best(tmp_path):
    from edgetui.samples import sample_sets

    db = tmp_path / "s.duckdb"
    for runs, tasks in sample_sets():
        ingest(db, [runs], tasks, sample=True)
    c = next(v for k, v in curves(db).items() if k.endswith("gw_signal_search"))
    # best raw 67.0 on linear 10..90 -> 71.25; the run climbed from 42.8 (41.0 rescaled)
    assert c.cell(12).value == pytest.approx(71.25)
    assert c.first_value == pytest.approx(41.0)
    assert c.is_sample


def test_results_known_out_of_submission_order(tmp_path):
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "o.duckdb"
    write_task(tasks, "resc", rescale={"kind": "linear", "lower": 0.0, "upper": 100.0})
    # agent-1 (score 80) is graded for 2 h, known at 3 h; agent-2 (score 50) is known at 1.52 h
    write_run(
        runs,
        "o-1",
        "resc",
        model="M",
        start=NOW - 20 * HOUR,
        duration_s=12.5 * HOUR,
        subs=[(1.0 * HOUR, 0.5, 80.0, 2 * HOUR), (1.5 * HOUR, 0.5, 50.0, 60)],
    )
    ingest(db, [runs], tasks)
    c = curves(db)["local/o-1/resc"]
    assert c.cell(2).value == pytest.approx(50.0) and c.cell(2).round == "agent-2"
    assert c.cell(3.1).value == pytest.approx(80.0) and c.cell(3.1).round == "agent-1"
