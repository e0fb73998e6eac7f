"""Fits of recorded runs and their time basis (edgetui.replay.analysis.timebasis): the bundled
gravitational-wave sample, which has a cooldown rejection, recorded into a real DuckDB file."""

from __future__ import annotations

import json

import pytest


from edgetui.cli.main import main
from edgetui.replay.analysis.timebasis import ActiveClock, wait_intervals

from conftest import copy_samples_db


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template):
    db = copy_samples_db(samples_template, tmp_path_factory.mktemp("s") / "s.duckdb")
    return db


def _gw(db, basis):
    from edgetui.analysis.recorded_curves import fetch_from, load_curves
    from edgetui.store.database import open_db

    conn = open_db(db, read_only=True)
    try:
        return next(c for c in load_curves(fetch_from(conn), time_basis=basis) if c.task_id == "gw_signal_search")
    finally:
        conn.close()


def test_active_clock_leaves_out_grading_and_cooldown_waits():
    iv = wait_intervals(
        [
            {"kind": "agent", "t": 1100.0, "runtime_s": 100.0},
            {"kind": "auto", "t": 1150.0, "runtime_s": 500.0},
        ],  # auto-eval: not a wait
        [
            {
                "t": 1500.0,
                "summary": "error: sforge-submit rejected (cooldown): Submission cooldown "
                "active — wait 66s before next submission.",
            }
        ],
        1000.0,
    )
    assert iv == [(100.0, 200.0), (500.0, 566.0)]
    clock = ActiveClock(iv)
    assert [clock(e) for e in (50.0, 150.0, 300.0, 530.0, 1000.0)] == [50.0, 100.0, 200.0, 400.0, 834.0]
    assert clock.excluded_s == 166.0


def test_wall_clock_and_active_time_differ_on_the_gw_sample(samples_db):
    wall, active = _gw(samples_db, "wall_clock"), _gw(samples_db, "active")
    assert wall.time_basis == "wall_clock" and active.time_basis == "active"
    assert wall.end_elapsed_s / 3600 == pytest.approx(12.03, abs=0.01)
    assert active.end_elapsed_s < wall.end_elapsed_s - 3600
    # the same final best, reached earlier in active hours
    assert wall.cell(12).value == active.cell(12).value == pytest.approx(71.25)
    assert active.cell(4).value > wall.cell(4).value


def test_cooldown_rejection_is_one_of_the_waits(samples_db):
    from edgetui.analysis.recorded_curves import fetch_from
    from edgetui.store.database import open_db
    from edgetui.replay.analysis.timebasis import COOLDOWN_SQL

    conn = open_db(samples_db, read_only=True)
    try:
        rows = fetch_from(conn)(COOLDOWN_SQL).rows
        start = conn.execute("SELECT started_at FROM runs WHERE task_id = 'gw_signal_search'").fetchone()[0]
    finally:
        conn.close()
    gw = [{"t": t, "summary": s} for k, t, s in rows if k.endswith("gw_signal_search")]
    assert len(gw) == 1
    iv = wait_intervals([], gw, start)
    assert len(iv) == 1 and iv[0][1] - iv[0][0] == pytest.approx(66.0)


def test_fit_json_of_a_recorded_run_records_basis_and_aggregation(samples_db, capsys):
    assert (
        main(
            [
                "--db",
                str(samples_db),
                "fit",
                "opus48-edge-3",
                "--format",
                "json",
                "--bootstrap",
                "200",
                "--time-basis",
                "active",
            ]
        )
        == 0
    )
    (rec,) = json.loads(capsys.readouterr().out)
    assert rec["run_key"].endswith("gw_signal_search")
    assert rec["time_basis"] == "active" and rec["aggregation"] == "best-so-far of one run"
    assert rec["fit"]["bootstrap"]["kind"] == "residuals"
    lo, hi = rec["fit"]["intervals"]["S@12"]
    assert lo <= rec["fit"]["S_at"]["12"] <= hi
    assert max(rec["fit"]["hours"]) < 6.0  # active hours of a 12-hour run


def test_fit_by_model_leaves_out_samples_unless_asked(samples_db, capsys):
    assert main(["--db", str(samples_db), "fit", "--by", "model"]) == 2
    assert "left out: 11 sample runs (--include-samples)" in capsys.readouterr().err
    assert (
        main(
            [
                "--db",
                str(samples_db),
                "fit",
                "--by",
                "model",
                "--include-samples",
                "--include-infra",
                "--format",
                "json",
                "--bootstrap",
                "100",
            ]
        )
        == 0
    )
    recs = {r["model"]: r for r in json.loads(capsys.readouterr().out)}
    assert recs["claude-opus-4-8"]["aggregation"].startswith("mean over tasks")


def test_readme_fit_example_shows_what_the_points_determine(samples_db, capsys, monkeypatch):
    # the README's first fit example: a flagged fit (Smax at its bound) must still show its t_half with
    # its interval, the gain per doubling and the withheld parameters' ranges; no optimiser code; the
    # log-linear form's parameters in the parameters column, not in flags (issue 37)
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["--db", str(samples_db), "fit", "opus48-edge-3", "--time-basis", "active", "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    header, star, *rest = out.splitlines()
    assert "status" not in header.split() and "gain/2x" in header and "t_half_80%" in header
    cells = star.split()
    assert "withheld" in star and "Smax" in star and "at_bound:Smax" in star
    assert cells[cells.index("withheld") + 2] == "Smax"  # "withheld (80%: Smax lo–hi ...)"
    after = cells[next(i for i, c in enumerate(cells) if c.endswith(")")) + 1 :]  # past "withheld (80%: ...)"
    t_half, t_half_iv, gain = float(after[0]), after[1], float(after[2])
    assert 0.3 < t_half < 3.0 and "–" in t_half_iv and 3.0 < gain < 20.0
    assert 0.3 < t_half < 3.0
    linear = next(line for line in rest if " log_linear " in line)
    assert "S = " in linear and " ln t" in linear and "a=" not in linear and linear.rstrip().endswith("ok")
    assert "values are 0-100" in out and "what they do determine" in out
