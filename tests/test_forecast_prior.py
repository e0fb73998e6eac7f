"""The forecast's shape prior from stored per-run fits of a run's earlier recorded runs
(edgetui.analysis.forecast_prior), in a real DuckDB file: the run is never in its own prior, later and live runs
never feed it, each feeding run's fit is stored once with what it was made from, and the live
update (``fit=False``) only reads: runs without a current stored fit are pending (a missing row
left out, the default while none is stored; a row whose run moved kept until re-checked) until
:func:`edgetui.analysis.forecast_prior.fit_runs` fits them."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from runs_factory import HOUR, NOW, ingest, write_run, write_task

from edgetui.analysis.recorded_curves import fetch_from
from edgetui.store.database import open_db
from edgetui.analysis.forecast_prior import fit_runs, shape_prior
from edgetui.replay.analysis.forecast import DEFAULT_BETA


def _law(h, smax=80.0, t_mid=4.0, beta=1.0):
    return smax / (1 + (t_mid / h) ** beta)


def _subs(beta, smax=80.0, t_mid=4.0):
    """A graded submission every 10 minutes for 12 h on the law (pass rates)."""
    return [(k * 600.0, _law(k / 6, smax, t_mid, beta) / 100, None, 1.0) for k in range(1, 73)]


@pytest.fixture
def lab(tmp_path):
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "p.duckdb"
    write_task(tasks, "law", selection="pass_rate_first", parser="pytest")
    write_task(tasks, "other", selection="pass_rate_first", parser="pytest")
    # earlier runs of the task law: beta 2 and beta 3 (the median is their mean: 2.5)
    write_run(runs, "law-a", "law", model="M", start=NOW - 60 * HOUR, duration_s=12.5 * HOUR, subs=_subs(2.0))
    write_run(runs, "law-b", "law", model="N", start=NOW - 50 * HOUR, duration_s=12.5 * HOUR, subs=_subs(3.0))
    # the run forecast, then a later run of the task (beta 0.5) that must not feed it
    write_run(runs, "law-c", "law", model="M", start=NOW - 40 * HOUR, duration_s=12.5 * HOUR, subs=_subs(1.0))
    write_run(runs, "law-d", "law", model="M", start=NOW - 30 * HOUR, duration_s=12.5 * HOUR, subs=_subs(0.5))
    # an earlier infra-error run and an earlier run still going on: neither feeds a prior
    write_run(
        runs,
        "law-x",
        "law",
        model="M",
        start=NOW - 70 * HOUR,
        duration_s=12.5 * HOUR,
        subs=_subs(6.0),
        infra_error=True,
    )
    # a run of another task by model M, before everything
    write_run(runs, "oth-a", "other", model="M", start=NOW - 80 * HOUR, duration_s=12.5 * HOUR, subs=_subs(1.5))
    ingest(db, [runs], tasks)
    return tmp_path, tasks, runs, db


def _prior(db, key, fit=True):
    conn = open_db(db)
    try:
        return shape_prior(fetch_from(conn), key, execute=conn.execute, fit=fit)
    finally:
        conn.close()


def _fit(db, keys):
    conn = open_db(db)
    try:
        return fit_runs(fetch_from(conn), keys, execute=conn.execute)
    finally:
        conn.close()


def _rows(db):
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return {
            rk: (json.loads(g), beta, findings, created)
            for g, rk, beta, findings, created in conn.execute(
                "SELECT grouping, run_key, beta, findings, created_at FROM fits WHERE source = 'prior'"
            ).fetchall()
        }
    finally:
        conn.close()


def test_prior_is_fitted_from_earlier_runs_of_the_task_and_stored_per_run(lab):
    _, _, _, db = lab
    p = _prior(db, "local/law-c/law")
    assert p.level == "task" and p.fed_by == ["local/law-a/law", "local/law-b/law"]
    assert sorted(p.fitted) == p.fed_by and p.pending == []
    # the fitted betas of the two law curves (sampled best-so-far steps: near their true 2 and 3)
    assert 2.0 < p.beta < 3.0 and p.label == "median of 2 earlier run(s) of this task"
    rows = _rows(db)
    assert set(rows) == set(p.fed_by)  # one row per feeding run, none for the run forecast
    for rk, (g, _beta, findings, _) in rows.items():
        assert g["role"] == "run" and g["run_key"] == rk and len(g["data_fp"]) == 64 and len(g["run_sig"]) == 64
        assert findings
    assert p.beta == pytest.approx(sum(b for _, b, _, _ in rows.values()) / 2)
    assert rows["local/law-a/law"][1] == pytest.approx(2.0, rel=0.25)
    assert rows["local/law-b/law"][1] == pytest.approx(3.0, rel=0.25)
    again = _prior(db, "local/law-c/law")
    assert again.fitted == [] and again.beta == p.beta and _rows(db) == rows  # nothing fitted or written


def test_the_live_update_only_reads_and_names_what_is_pending(lab):
    _, _, _, db = lab
    before = _prior(db, "local/law-c/law", fit=False)  # nothing stored yet: the default, and it says so
    assert before.level == "default" and before.beta == DEFAULT_BETA and before.fed_by == []
    assert before.pending == ["local/law-a/law", "local/law-b/law"] and before.fitted == []
    assert "until 2 earlier run(s) of this task are fitted" in before.label
    assert _rows(db) == {}  # the update wrote nothing
    done = _fit(db, before.pending)  # what the app's background fitter does with them
    assert set(done) == set(before.pending)
    after = _prior(db, "local/law-c/law", fit=False)
    assert after.pending == [] and after.fed_by == before.pending and after.level == "task"
    assert after.beta == pytest.approx(_prior(db, "local/law-c/law").beta) and 2.0 < after.beta < 3.0


def test_the_run_itself_later_and_infra_error_runs_never_feed_it(lab):
    _, _, _, db = lab
    first = _prior(db, "local/law-a/law")  # the earliest of its task: the model's earlier run
    assert first.level == "model" and first.fed_by == ["local/oth-a/other"]
    p = _prior(db, "local/law-d/law")
    assert "local/law-d/law" not in p.fed_by and "local/law-x/law" not in p.fed_by
    assert p.fed_by == ["local/law-a/law", "local/law-b/law", "local/law-c/law"]
    assert _prior(db, "local/oth-a/other").level == "default"  # nothing before it


def test_a_run_going_on_does_not_feed_a_prior(lab):
    tmp, tasks, runs, db = lab
    live = tmp / "live"
    # started 2 h ago, graded every 10 minutes up to 10 minutes ago: still running
    write_run(live, "law-live", "law", model="M", start=NOW - 2 * HOUR, duration_s=None, subs=_subs(2.0)[:11])
    write_run(live, "law-now", "law", model="M", start=NOW - 1 * HOUR, duration_s=None, subs=_subs(2.0)[:5])
    ingest(db, [live], tasks)
    conn = duckdb.connect(str(db), read_only=True)
    status = dict(conn.execute("SELECT run_id, status FROM runs WHERE run_id LIKE 'law-%'").fetchall())
    conn.close()
    assert status["law-live"] == "running" and status["law-now"] == "running"
    p = _prior(db, "local/law-now/law")
    assert p.fed_by == ["local/law-a/law", "local/law-b/law", "local/law-c/law", "local/law-d/law"]
    assert "local/law-live/law" not in p.fitted


def test_stored_fits_follow_the_runs_that_feed_them(lab):
    _, tasks, runs, db = lab
    p = _prior(db, "local/law-c/law")
    rows = _rows(db)
    # law-b re-recorded with another curve (beta 3 -> 6): its stored fit is pending (its stored beta
    # counts until re-checked); once fitted again the prior moves
    shutil.rmtree(runs / "law-b")
    write_run(runs, "law-b", "law", model="N", start=NOW - 50 * HOUR, duration_s=12.5 * HOUR, subs=_subs(6.0))
    ingest(db, [runs / "law-b"], tasks)
    q = _prior(db, "local/law-c/law", fit=False)
    assert q.pending == ["local/law-b/law"] and q.fed_by == ["local/law-a/law", "local/law-b/law"]
    assert q.beta == pytest.approx(p.beta) and q.label.endswith("(1 being fitted)")
    # a missing row is left out: law-a's row deleted, the update gives law-b's stored beta alone
    conn = open_db(db)
    conn.execute("DELETE FROM fits WHERE run_key = 'local/law-a/law'")
    conn.close()
    q2 = _prior(db, "local/law-c/law", fit=False)
    assert q2.fed_by == ["local/law-b/law"] and q2.pending == ["local/law-a/law", "local/law-b/law"]
    assert q2.beta == pytest.approx(rows["local/law-b/law"][1])
    _fit(db, ["local/law-a/law"])
    rows["local/law-a/law"] = _rows(db)["local/law-a/law"]
    _fit(db, q.pending)
    r = _prior(db, "local/law-c/law", fit=False)
    assert r.pending == [] and r.beta > p.beta + 0.5
    assert _rows(db)["local/law-a/law"] == rows["local/law-a/law"]  # law-a was not fitted again by law-b's refit
    # law-a forgotten: the prior is law-b's alone, nothing fitted
    from edgetui.record.forget_and_tag import forget_run

    conn = open_db(db)
    forget_run(conn, "local/law-a/law")
    conn.close()
    s = _prior(db, "local/law-c/law")
    assert s.fed_by == ["local/law-b/law"] and s.fitted == [] and s.pending == []
    assert s.beta == pytest.approx(_rows(db)["local/law-b/law"][1])


def test_a_signature_change_without_new_data_is_rechecked_not_refitted(lab):
    _, _, _, db = lab
    _prior(db, "local/law-c/law")
    rows = _rows(db)
    conn = open_db(db)  # read again by an ingest (ingested_at moves) with the same submissions
    conn.execute("UPDATE runs SET ingested_at = ingested_at + 5 WHERE run_key = 'local/law-a/law'")
    conn.close()
    q = _prior(db, "local/law-c/law", fit=False)
    assert q.pending == ["local/law-a/law"]
    _fit(db, q.pending)
    after = _rows(db)
    g, beta, findings, created = after["local/law-a/law"]
    assert (
        g["data_fp"] == rows["local/law-a/law"][0]["data_fp"] and g["run_sig"] != rows["local/law-a/law"][0]["run_sig"]
    )
    assert (beta, findings, created) == rows["local/law-a/law"][1:]  # the same fit row: not fitted again
    assert _prior(db, "local/law-c/law", fit=False).pending == []


def test_prior_without_a_writable_database_is_computed_uncached(lab):
    _, _, _, db = lab
    conn = duckdb.connect(str(db), read_only=True)
    try:
        p = shape_prior(fetch_from(conn), "local/law-c/law")
    finally:
        conn.close()
    assert p.level == "task" and len(p.fed_by) == 2 and _rows(db) == {}
    with pytest.raises(LookupError, match="no such run"):
        conn = duckdb.connect(str(db), read_only=True)
        try:
            shape_prior(fetch_from(conn), "local/nope/law")
        finally:
            conn.close()
