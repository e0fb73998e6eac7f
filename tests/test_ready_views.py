"""The ready-made views (edgetui/store/ready_views.py, docs/database.md), each against the bundled samples."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from conftest import copy_samples_db
from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.store.queries import list_runs
from edgetui.store.ready_views import AGENT_KINDS, IDLE_GAP_S, READY_VIEWS
from edgetui.store.run_groups import group_by_run_id

GW = "local/opus48-edge-3-20260312005800/gw_signal_search"
DOCS = Path(__file__).resolve().parent.parent / "docs" / "database.md"


@pytest.fixture
def samples_db(samples_template, tmp_path) -> Path:
    return copy_samples_db(samples_template, tmp_path / "s.duckdb")


@pytest.fixture
def conn(samples_db):
    c = open_db(samples_db)
    yield c
    c.close()


def test_every_view_has_its_comment_and_its_place_in_the_docs(conn):
    comments = dict(conn.execute("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal").fetchall())
    text = DOCS.read_text()
    for name, (meaning, _select) in READY_VIEWS.items():
        assert comments.get(name) == meaning
        assert f"`{name}`" in text, f"{name} not in docs/database.md"


def test_a_file_of_version_11_gets_the_views_on_open(samples_db):
    c = duckdb.connect(str(samples_db))
    for name in READY_VIEWS:
        c.execute(f"DROP VIEW {name}")
    c.execute("UPDATE meta SET value = '11' WHERE key = 'schema_version'")
    c.close()
    conn = open_db(samples_db)
    try:
        names = {r[0] for r in conn.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        assert set(READY_VIEWS) <= names
    finally:
        conn.close()


def test_best_so_far_times_a_result_when_it_was_known(conn):
    rows = conn.execute(
        "SELECT round, submitted_at, known_at, known_by, best_score, event_id FROM best_so_far "
        "WHERE run_key = ? ORDER BY known_at",
        [GW],
    ).fetchall()
    started = conn.execute("SELECT started_at FROM runs WHERE run_key = ?", [GW]).fetchone()[0]
    first = next(r for r in rows if r[0] == "agent-1")
    # docs/database.md: agent-1 was sent at 0:03:39, its score shows at 0:06:21 (evolve_state's `at`)
    assert int(first[1] - started) == 3 * 60 + 39
    assert int(first[2] - started) == 6 * 60 + 21
    assert first[3] == "evolve_state"
    # the last row's best is the run's best, and every row names its judge_result event
    assert rows[-1][4] == conn.execute("SELECT best_score FROM runs WHERE run_key = ?", [GW]).fetchone()[0]
    kinds = {conn.execute("SELECT kind FROM events WHERE event_id = ?", [r[5]]).fetchone()[0] for r in rows if r[5]}
    assert kinds == {"judge_result"}
    assert (
        conn.execute("SELECT count(*) FROM best_so_far").fetchone()[0]
        == conn.execute("SELECT count(*) FROM submissions").fetchone()[0]
    )


def test_tool_calls_pair_each_call_with_its_result(conn):
    n_calls = conn.execute("SELECT count(*) FROM events WHERE kind = 'tool_call'").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM tool_calls").fetchone()[0] == n_calls  # one row per call
    # an error result, or a non-zero exit, is a failure; each failure is one of those
    rows = conn.execute(
        "SELECT tc.failed, r.is_error, TRY_CAST(r.data->>'exit_code' AS INTEGER), tc.duration_s, "
        "TRY_CAST(r.data->>'duration_ms' AS DOUBLE), r.t - c.t "
        "FROM tool_calls tc JOIN events c ON c.event_id = tc.event_id "
        "JOIN events r ON r.event_id = tc.result_event_id"
    ).fetchall()
    assert any(r[0] for r in rows) and not all(r[0] for r in rows)
    for failed, is_error, exit_code, duration_s, duration_ms, dt in rows:
        assert failed == bool(is_error or (exit_code or 0) != 0)
        assert duration_s == pytest.approx(duration_ms / 1000 if duration_ms is not None else dt)
    # Codex commands give a non-zero exit without is_error: the view counts those too
    assert conn.execute("SELECT count(*) FROM tool_calls WHERE failed AND exit_code <> 0").fetchone()[0] > 0


def test_idle_gaps_are_the_pauses_between_the_agents_own_events(conn):
    rows = conn.execute(
        "SELECT event_id, kind, t FROM events WHERE run_key = ? AND t IS NOT NULL ORDER BY t, event_id", [GW]
    ).fetchall()
    agent = [r for r in rows if r[1] in AGENT_KINDS]
    expected = {(b[0], round(b[2] - a[2], 6)) for a, b in zip(agent, agent[1:]) if b[2] - a[2] >= IDLE_GAP_S}
    got = conn.execute("SELECT event_id, round(gap_s, 6) FROM idle_gaps WHERE run_key = ?", [GW]).fetchall()
    assert expected and set(got) == expected
    assert max(g for _e, g in got) > 600  # the sample's 10-minute stall


def test_spend_over_time_adds_up_to_the_runs_totals(conn):
    rows = conn.execute(
        "SELECT r.run_key, r.cost_usd, r.input_tokens + r.output_tokens + r.cache_read_tokens + r.cache_write_tokens, "
        "(SELECT arg_max(cum_cost_usd, t) FROM spend_over_time s WHERE s.run_key = r.run_key), "
        "(SELECT arg_max(cum_tokens, t) FROM spend_over_time s WHERE s.run_key = r.run_key) "
        "FROM runs r WHERE coalesce(r.n_repeated, 0) = 0 AND r.input_tokens IS NOT NULL"
    ).fetchall()
    assert len(rows) >= 5
    for run_key, cost, tokens, cum_cost, cum_tokens in rows:
        assert cum_tokens == tokens, run_key
        assert (cum_cost or 0) == pytest.approx(cost or 0), run_key


def test_alarms_read_the_alarm_events(samples_db):
    c = duckdb.connect(str(samples_db))
    data = {"key": "stall:x", "idle_s": 900.0, "message": "no agent event for 15 min"}
    ack = {"ack": True, "key": "stall:x", "rule": "stall", "raised_at": 100.0, "message": "no agent event"}
    c.execute(
        "INSERT INTO events (event_id, run_key, kind, t, source, level, summary, data) VALUES "
        "('a1', ?, 'alarm', 100.0, 'live/alarms', 'warning', 'alarm stall: no agent event', ?),"
        "('a2', ?, 'alarm', 130.0, 'live/alarms', 'info', 'alarm stall acknowledged', ?)",
        [GW, json.dumps({**data, "rule": "stall"}), GW, json.dumps(ack)],
    )
    rows = c.execute("SELECT event_id, rule, message, acked, raised_at FROM alarms ORDER BY t").fetchall()
    c.close()
    assert rows == [
        ("a1", "stall", "no agent event for 15 min", False, None),
        ("a2", "stall", "no agent event", True, 100.0),
    ]


def test_moment_why_gives_each_moment_its_reasons_and_judge_event(samples_db, capsys):
    assert main(["--db", str(samples_db), "moments", "opus48-edge-3-20260312005800"]) == 0
    capsys.readouterr()
    c = duckdb.connect(str(samples_db), read_only=True)
    try:
        rows = c.execute(
            "SELECT detector, round, why, moved, event_id FROM moment_why WHERE run_key = ?", [GW]
        ).fetchall()
        n = c.execute("SELECT count(*) FROM moments WHERE run_key = ?", [GW]).fetchone()[0]
        assert len(rows) == n > 0
        reframes = [r for r in rows if r[0] == "reframe"]
        assert reframes and all(json.loads(r[2]) for r in reframes)  # the behaviour change's notes
        for _d, rnd, _why, moved, event_id in rows:
            assert json.loads(moved)
            assert c.execute("SELECT kind, round FROM events WHERE event_id = ?", [event_id]).fetchone() == (
                "judge_result",
                rnd,
            )
    finally:
        c.close()


def test_test_matrix_is_every_test_result_in_round_order(conn):
    total, passed = conn.execute("SELECT count(*), count(*) FILTER (status = 'PASSED') FROM test_results").fetchone()
    assert conn.execute("SELECT count(*), count(*) FILTER (passed) FROM test_matrix").fetchone() == (total, passed)
    order = conn.execute(
        "SELECT DISTINCT round, round_no FROM test_matrix WHERE run_key = ? ORDER BY round_no", [GW]
    ).fetchall()
    by_known = conn.execute(
        "SELECT round FROM submissions WHERE run_key = ? AND round IN (SELECT round FROM test_results "
        "WHERE run_key = ?) ORDER BY t, round",
        [GW, GW],
    ).fetchall()
    assert [r[0] for r in order] == [r[0] for r in by_known]
    # the matrix a user asks for: one column per round
    pivot = conn.execute(
        f"PIVOT (SELECT test, round_no, passed FROM test_matrix WHERE run_key = '{GW}' AND round_no <= 3) "
        "ON round_no USING any_value(passed) ORDER BY test"
    ).fetchall()
    assert pivot and all(len(r) == 4 for r in pivot)


def test_run_id_tasks_groups_as_the_picker_does(conn):
    groups = {g.key: g for g in group_by_run_id(list_runs(conn))}
    rows = conn.execute(
        "SELECT DISTINCT host || '/' || run_id, n_tasks, n_ended, mean_best_0_100 FROM run_id_tasks"
    ).fetchall()
    assert len(rows) == len(groups)
    for key, n_tasks, n_ended, mean in rows:
        g = groups[key]
        assert (n_tasks, n_ended) == (g.n_tasks, g.n_finished)
        assert mean == pytest.approx(g.mean_score) if g.mean_score is not None else mean is None


def test_the_columns_meanings_are_duckdb_comments(conn):
    from edgetui.store.ready_views import COLUMN_MEANINGS
    from edgetui.store.sql_results import schema_entries

    got = {
        (t, c): comment
        for t, c, comment in conn.execute(
            "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE comment IS NOT NULL"
        ).fetchall()
    }
    assert {k: got.get(k) for k in COLUMN_MEANINGS} == COLUMN_MEANINGS  # (the others: tests/test_column_meanings.py)
    # the SQL screen's schema tree reads them
    events = next(e for e in schema_entries(conn) if e["name"] == "events")
    assert ("t_source", "VARCHAR", COLUMN_MEANINGS[("events", "t_source")]) in events["columns"]
    assert events["meaning"].startswith("every event")


def test_the_example_questions_of_the_docs_run_under_the_read_only_rule(samples_db, capsys):
    import re

    from edgetui.store.sql_results import run_paged

    assert main(["--db", str(samples_db), "moments", "opus48-edge-3-20260312005800"]) == 0
    capsys.readouterr()
    conn = open_db(samples_db)
    text = DOCS.read_text()
    section = text[text.index("## Ready-made views") : text.index("Best-so-far follows SForge exactly")]
    queries = [q for q in re.findall(r"`((?:SELECT|PIVOT) [^`]+)`", section)]
    assert len(queries) >= len(READY_VIEWS)
    answered = 0
    for q in queries:
        res = run_paged(conn, q.replace("'X'", "'opus48-edge-3-20260312005800'"))
        answered += bool(res.next_page())
        res.close()
    conn.close()
    assert answered == len(queries) - 1  # (alarms: none in the samples)


def test_spend_goes_toward_the_next_submission_sent(conn):
    rows = conn.execute(
        "SELECT s.t, s.toward_round, (SELECT min(submitted_at) FROM submissions b WHERE b.run_key = s.run_key "
        "AND b.submitted_at >= s.t) FROM spend_over_time s WHERE run_key = ?",
        [GW],
    ).fetchall()
    sent = dict(conn.execute("SELECT round, submitted_at FROM submissions WHERE run_key = ?", [GW]).fetchall())
    assert any(r[1] for r in rows)
    for _t, toward, first_after in rows:
        assert (sent[toward] if toward else None) == first_after
