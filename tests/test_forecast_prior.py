"""The forecast's shape prior fitted on demand from a run's earlier recorded runs
(edgetui.priors.shape_prior), cached in the fits table of a real DuckDB file with the run keys
that fed it: the run is never in its own prior, later and live runs never feed it, and the cache
follows the runs it was built from (re-ingested with other rounds, forgotten)."""

from __future__ import annotations

import json
import shutil

import duckdb
import pytest

from runs_factory import HOUR, NOW, ingest, write_run, write_task

from edgetui.analysis_data import fetch_from
from edgetui.db import open_db
from edgetui.priors import shape_prior


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
    write_run(runs, "law-x", "law", model="M", start=NOW - 70 * HOUR, duration_s=12.5 * HOUR, subs=_subs(6.0),
              infra_error=True)
    # a run of another task by model M, before everything
    write_run(runs, "oth-a", "other", model="M", start=NOW - 80 * HOUR, duration_s=12.5 * HOUR, subs=_subs(1.5))
    ingest(db, [runs], tasks)
    return tmp_path, tasks, runs, db


def _prior(db, key):
    conn = open_db(db)
    try:
        return shape_prior(fetch_from(conn), key, execute=conn.execute)
    finally:
        conn.close()


def _rows(db):
    conn = duckdb.connect(str(db), read_only=True)
    try:
        return [(json.loads(g), rk, beta, findings) for g, rk, beta, findings in conn.execute(
            "SELECT grouping, run_key, beta, findings FROM fits WHERE source = 'prior' ORDER BY fit_id").fetchall()]
    finally:
        conn.close()


def test_prior_is_fitted_from_earlier_runs_of_the_task_and_cached_with_its_keys(lab):
    _, _, _, db = lab
    p = _prior(db, "local/law-c/law")
    assert p.level == "task" and p.fed_by == ["local/law-a/law", "local/law-b/law"]
    assert sorted(p.fitted) == p.fed_by and not p.cached
    # the fitted betas of the two law curves (sampled best-so-far steps: near their true 2 and 3)
    assert 2.0 < p.beta < 3.0 and p.label == "median of 2 earlier run(s) of this task"
    rows = _rows(db)
    prior = [g for g, *_ in rows if g["role"] == "prior"]
    assert len(prior) == 1 and prior[0]["for_run"] == "local/law-c/law"
    assert sorted(prior[0]["fed_by"]) == p.fed_by  # which run keys fed it, with their curves' hashes
    per_run = {rk: beta for g, rk, beta, _ in rows if g["role"] == "run"}
    assert set(per_run) == set(p.fed_by) and p.beta == pytest.approx(sum(per_run.values()) / 2)
    assert per_run["local/law-a/law"] == pytest.approx(2.0, rel=0.25)
    assert per_run["local/law-b/law"] == pytest.approx(3.0, rel=0.25)
    again = _prior(db, "local/law-c/law")
    assert again.cached and again.fitted == [] and again.beta == p.beta


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


def test_cache_follows_the_runs_that_fed_it(lab):
    _, tasks, runs, db = lab
    p = _prior(db, "local/law-c/law")
    # law-b re-recorded with another curve (beta 3 -> 6): only it is fitted again, the prior moves
    shutil.rmtree(runs / "law-b")
    write_run(runs, "law-b", "law", model="N", start=NOW - 50 * HOUR, duration_s=12.5 * HOUR, subs=_subs(6.0))
    ingest(db, [runs / "law-b"], tasks)
    q = _prior(db, "local/law-c/law")
    assert not q.cached and q.fitted == ["local/law-b/law"] and q.beta > p.beta + 0.5
    # law-a forgotten: the prior is rebuilt from law-b alone
    from edgetui.runops import forget_run

    conn = open_db(db)
    forget_run(conn, "local/law-a/law")
    conn.close()
    r = _prior(db, "local/law-c/law")
    assert r.fed_by == ["local/law-b/law"] and not r.cached and r.fitted == []
    assert r.beta == pytest.approx(dict((rk, b) for g, rk, b, _ in _rows(db) if g["role"] == "run")["local/law-b/law"])


def test_prior_without_a_writable_database_is_computed_uncached(lab):
    _, _, _, db = lab
    conn = duckdb.connect(str(db), read_only=True)
    try:
        p = shape_prior(fetch_from(conn), "local/law-c/law")
    finally:
        conn.close()
    assert p.level == "task" and len(p.fed_by) == 2 and _rows(db) == []
    with pytest.raises(LookupError, match="no such run"):
        conn = duckdb.connect(str(db), read_only=True)
        try:
            shape_prior(fetch_from(conn), "local/nope/law")
        finally:
            conn.close()
