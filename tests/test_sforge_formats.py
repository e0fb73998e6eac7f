"""SForge's formats after 1.1.0, scores side (issue 33 items 7 and 12, and the runs' ``format``):
invalid rounds are no point of the curve and no input to the analysis while the run's best stays
SForge's own; trajectory metrics under EdgeBench PR #9's names and rules; which format a run used.
Hand-made run folders (tests/sforge_format_runs.py) and the genuine 1.1.0 runs (sample_runs/genuine),
recorded with the real ingest into a real DuckDB file. Reference: docs/sforge-formats.md."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest

from edgetui.store import queries as store
from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.record.moments_table import load_series
from edgetui.analysis.report import build_report, to_markdown
from edgetui.views.widgets.chart import chart_data
from edgetui.views.widgets.event_list import event_mark
from edgetui.views.widgets.header import header_text
from edgetui.replay.trajectory_metrics import FIELDS, trajectory_metrics
from runs_factory import curves
from sforge_format_runs import write_pass_task, write_run

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
START = 1_790_000_000.0

#: a pass-rate run whose evaluator said valid: false on its only 100 % round, which SForge's
#: pass_rate_first (blind to validity) selects, plus a round whose grading raised (no report.json)
#: and one whose report.json was cut mid-write
INVALID_ROUNDS = [
    {"round": "agent-1", "at": 600.0, "pass_rate": 0.4, "score": None},
    {"round": "agent-2", "at": 1200.0, "pass_rate": 1.0, "score": None, "valid": False, "summary": "no result"},
    {"round": "agent-3", "at": 1800.0, "report": "missing"},
    {"round": "agent-4", "at": 2400.0, "report": "garbled"},
    {"round": "agent-5", "at": 3000.0, "pass_rate": 0.8, "score": None},
]


def _q(db: Path, sql: str, params=()):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, list(params)).fetchall()
    finally:
        c.close()


@pytest.fixture(scope="module")
def fdb(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("formats")
    runs, tasks = base / "runs", base / "tasks"
    write_pass_task(tasks, "inv_task")
    write_run(
        runs,
        "inv-run",
        "inv_task",
        start=START,
        rounds=INVALID_ROUNDS,
        final={"best_round": "agent-2", "best_pass_rate": 1.0, "best_score": 1.0},
    )
    write_pass_task(tasks, "traj_task")  # EdgeBench PR #9's own first example, as a run folder
    write_run(
        runs,
        "traj-run",
        "traj_task",
        start=START,
        rounds=[
            {"round": f"agent-{i}", "at": at, "pass_rate": pr}
            for i, (at, pr) in enumerate([(100, 0.2), (130, 0.2), (160, 0.5), (190, 0.4), (220, 0.7)], start=1)
        ],
        final={"best_round": "agent-5", "best_pass_rate": 0.7, "best_score": 0.7},
    )
    write_run(  # the judge after 1.1.0: a failed evaluation is an entry of status "error"
        runs,
        "next-run",
        "traj_task",
        start=START,
        rounds=[
            {"round": "agent-1", "at": 100, "pass_rate": 0.5},
            {"round": "agent-2", "at": 200, "report": "missing"},
        ],
        final={"best_round": "agent-1", "best_pass_rate": 0.5, "best_score": 0.5},
        history={
            "run_id": "next-run",
            "best_score": 0.5,
            "best_pass_rate": 0.5,
            "best_round": "agent-1",
            "agent_submissions": 2,
            "auto_submissions": 0,
            "entries": [
                {"type": "submission", "status": "completed", "round": "agent-1", "pass_rate": 0.5, "valid": True},
                {"type": "submission", "status": "error", "round": "agent-2", "error": "judge container exited"},
            ],
        },
    )
    db = base / "f.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(tasks), str(runs)]) == 0
    return db


def _key(db: Path, run_id: str) -> str:
    return _q(db, "SELECT run_key FROM runs WHERE run_id = ?", [run_id])[0][0]


# ------------------------------------------------------------------------------- invalid rounds
def test_the_runs_best_stays_sforges_and_says_its_round_is_invalid(fdb, capsys):
    best_round, best_pr, best_invalid = _q(
        fdb, "SELECT best_round, best_pass_rate, best_invalid FROM runs WHERE run_id = 'inv-run'"
    )[0]
    assert (best_round, best_pr, best_invalid) == ("agent-2", 1.0, True)
    assert main(["--db", str(fdb), "runs", "--format", "json"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out) if r["run_id"] == "inv-run")
    assert "best-invalid" in row["flags"] and row["best_invalid"] is True
    conn = open_db(fdb, read_only=True)
    try:
        head = store.run_header(conn, _key(fdb, "inv-run"))
    finally:
        conn.close()
    assert "(agent-2) invalid round" in header_text(head, 160).plain


def test_an_invalid_round_is_no_point_of_the_drawn_curve(fdb):
    conn = open_db(fdb, read_only=True)
    try:
        key = _key(fdb, "inv-run")
        head, subs = store.run_header(conn, key), store.chart_submissions(conn, key)
    finally:
        conn.close()
    by_round = {s["round"]: s for s in subs}
    for rnd in ("agent-2", "agent-3", "agent-4"):  # no step of the best line at them
        assert by_round[rnd]["best_round"] is None and not by_round[rnd]["is_new_best"], rnd
    assert by_round["agent-5"]["best_round"] == "agent-5" and by_round["agent-5"]["is_new_best"]
    d = chart_data(head, subs, end_elapsed_s=3600.0)
    # grey ticks where their results were known (the judge's last line, 5 s after the submission)
    assert sorted(round(x * 3600) for x in d.invalid) == [1205, 1805, 2405]
    assert max(y for _, y in d.best) == pytest.approx(80.0)  # never the invalid 100 %
    assert all(round(x * 3600) != 1205 for x, _ in d.agent)  # nor a submission mark


def test_an_invalid_round_is_no_input_to_score_at_h_moments_or_the_report(fdb):
    key = _key(fdb, "inv-run")
    cell = curves(fdb)[key].cell(1.0)  # score-at-h (so the leaderboard, fits, forecasts read it)
    assert (cell.value, cell.round) == (pytest.approx(80.0), "agent-5")
    conn = open_db(fdb, read_only=True)
    try:
        series, _ = load_series(conn, key)
        rep = build_report(conn, key, with_diff=False)
    finally:
        conn.close()
    assert [g.round for g in series] == ["agent-1", "agent-5"]
    reasons = {r["round"]: r["reason"] for r in rep["invalid_rounds"]}
    assert reasons["agent-2"] == "report valid: false"
    assert reasons["agent-3"].startswith("no report.json")
    assert reasons["agent-4"].startswith("report.json unreadable")
    md = to_markdown(rep)
    assert "; the round SForge selects is invalid" in md and "agent-2 (report valid: false)" in md


def test_an_invalid_round_is_marked_grey_in_the_event_list_with_its_reason(fdb):
    rows = dict(
        (r[0], r[1:])
        for r in _q(
            fdb,
            "SELECT round, level, is_error, summary FROM events WHERE run_key = ? AND kind = 'judge_result'",
            [_key(fdb, "inv-run")],
        )
    )
    level, is_error, summary = rows["agent-2"]
    assert event_mark("judge_result", is_error, level, False) == ("╵", "bright_black")
    assert summary.endswith("INVALID (report valid: false; not a score)")
    assert event_mark("judge_result", *rows["agent-1"][:2], False)[0] == "◆"
    assert event_mark("judge_result", *rows["agent-3"][:2], False)[0] == "✗"  # failed grading: an error


def test_the_genuine_pack_run_keeps_sforges_best_and_not_the_invalid_100(tmp_path):
    """SForge 1.1.0's visualizer counts real-pack's invalid rounds (its best rescaled: 100, the max
    over every round, agent-3's invalid 56 bins); edgetui's best is the round SForge selects
    (agent-5, 62 bins, 98.04) and the two invalid rounds are grey ticks, off the curve."""
    db = tmp_path / "g.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(GENUINE / "tasks"), str(GENUINE / "runs")]) == 0
    row = _q(
        db,
        "SELECT run_key, best_round, best_score, best_score_0_100, best_invalid, format, "
        "(SELECT max(score_0_100) FROM submissions s WHERE s.run_key = runs.run_key) "
        "FROM runs WHERE run_id = 'real-pack-20261201181500'",
    )[0]
    key, best_round, best_score, best_0_100, best_invalid, fmt, max_any = row
    assert (best_round, best_score, best_invalid, fmt) == ("agent-5", 62.0, False, "1.1.0")
    assert best_0_100 == pytest.approx(98.0392, abs=1e-3) and max_any == pytest.approx(100.0)
    conn = open_db(db, read_only=True)
    try:
        d = chart_data(store.run_header(conn, key), store.chart_submissions(conn, key))
    finally:
        conn.close()
    assert len(d.invalid) == 2
    assert {f for (f,) in _q(db, "SELECT DISTINCT format FROM runs")} == {"1.1.0"}


# -------------------------------------------------------------------------- trajectory metrics
def test_trajectory_metrics_of_a_run_as_upstream_defines_them(fdb, capsys):
    want = {
        "value_field": "pass_rate",
        "direction": "maximize",
        "submission_count": 5,
        "initial_value": 0.2,
        "final_value": 0.7,
        "best_value": 0.7,
        "total_improvement": 0.5,
        "improving_submissions": 2,
        "non_improving_submissions": 2,
        "first_improvement_seconds": 60.0,
        "time_to_best_seconds": 120.0,
    }
    assert main(["--db", str(fdb), "runs", "--format", "json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["traj-run"]["trajectory_metrics"] == want
    assert list(rows["traj-run"]["trajectory_metrics"]) == list(FIELDS)
    inv = rows["inv-run"]["trajectory_metrics"]  # over completed valid submissions only
    assert (inv["submission_count"], inv["best_value"], inv["time_to_best_seconds"]) == (2, 0.8, 2400.0)
    conn = open_db(fdb, read_only=True)
    try:
        key = _key(fdb, "traj-run")
        head = store.run_header(conn, key)
        rep = build_report(conn, key, with_diff=False)
    finally:
        conn.close()
    # SForge's times count from the first submission: said so, not shown like the run's elapsed times
    wide = header_text(head, 160).plain
    assert "2/5 improving · first gain +0:01:00 · best +0:02:00 after the first submission" in wide
    narrow = header_text(head, 80).plain
    assert "2/5 improving" in narrow and "best at" not in narrow
    assert "best +0:02:00" in narrow or "best" not in narrow.split("improving", 1)[1]
    assert rep["run"]["trajectory_metrics"] == want


def _sub(score=None, pass_rate=0.0, at=None, status="completed", valid=True, type="submission"):
    return {"type": type, "status": status, "valid": valid, "pass_rate": pass_rate, "score": score, "submitted_at": at}


def test_trajectory_metrics_rules():
    """Upstream's cases: minimize, order by submitted_at, invalid / error / game left out,
    non-finite and missing values left out, timestamps incomplete, an empty trajectory."""
    m = trajectory_metrics([_sub(10, at=20), _sub(8, at=30), _sub(9, at=40), _sub(6, at=50)], "minimize")
    assert (m["value_field"], m["direction"], m["total_improvement"]) == ("score", "minimize", 4)
    assert (m["improving_submissions"], m["non_improving_submissions"]) == (2, 1)
    assert (m["first_improvement_seconds"], m["time_to_best_seconds"]) == (10, 30)
    m = trajectory_metrics([_sub(pass_rate=0.8, at=20), _sub(pass_rate=0.2, at=10), _sub(pass_rate=0.5, at=15)])
    assert (m["initial_value"], m["final_value"], m["first_improvement_seconds"], m["time_to_best_seconds"]) == (
        0.2,
        0.8,
        5,
        10,
    )
    m = trajectory_metrics(
        [
            _sub(pass_rate=0.1, at=10),
            _sub(pass_rate=0.9, at=20, valid=False),
            _sub(pass_rate=1.0, at=30, status="error"),
            _sub(pass_rate=1.0, at=40, type="game"),
        ]
    )
    assert (m["submission_count"], m["best_value"], m["time_to_best_seconds"]) == (1, 0.1, 0)
    m = trajectory_metrics(
        [_sub(1, at=10), _sub(math.nan, at=20), _sub(math.inf, at=30), _sub(None, at=40), _sub(1, at=50)]
    )
    assert (m["submission_count"], m["improving_submissions"], m["non_improving_submissions"]) == (2, 0, 1)
    m = trajectory_metrics([_sub(pass_rate=0.5, at=10), _sub(pass_rate=0.2), _sub(pass_rate=0.9, at=5)])
    assert (m["initial_value"], m["final_value"], m["time_to_best_seconds"]) == (0.5, 0.9, 0.0)  # given order
    m = trajectory_metrics([_sub(pass_rate=-1e308, at=-1e308), _sub(pass_rate=1e308, at=1e308)])
    assert m["total_improvement"] is None and m["time_to_best_seconds"] is None
    json.dumps(m, allow_nan=False)
    assert trajectory_metrics([]) == dict(
        zip(FIELDS, ("pass_rate", "maximize", 0, None, None, None, 0.0, 0, 0, None, None))
    )


# ------------------------------------------------------------------------------------ formats
def test_runs_says_which_sforge_format_a_run_used(fdb, capsys):
    formats = dict(_q(fdb, "SELECT run_id, format FROM runs"))
    assert formats == {"inv-run": "1.1.0", "traj-run": "1.1.0", "next-run": "next"}
    assert main(["--db", str(fdb), "runs"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0].split()
    assert head[:4] == ["run_id", "task_id", "status", "format"]
    assert any(line.split()[3] == "next" for line in out.splitlines()[1:4])


def test_a_long_runs_thinned_chart_rows_keep_its_invalid_rounds(fdb):
    """A run with more submissions than the chart reads keeps, per bucket, its first invalid round
    (a grey tick), not only the extremes of its values (agent-3 has none: no report.json)."""
    conn = open_db(fdb, read_only=True)
    try:
        rows = store.chart_submissions(conn, _key(fdb, "inv-run"), max_rows=2, buckets=2)
    finally:
        conn.close()
    assert {"agent-2", "agent-3"} <= {r["round"] for r in rows}
