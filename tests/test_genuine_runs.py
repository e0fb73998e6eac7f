"""The genuine sample runs (sample_runs/genuine: recorded with the real SForge 1.1.0 harness, real
work and judge containers, a scripted agent CLI; see sample_runs/README.md) as edgetui records,
replays and watches them, held to SForge's own visualizer view (their _truth files)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import duckdb
import pytest

from edgetui.store import queries as store
from edgetui.parsers.base import END_OF_FILE_SUB
from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.views.widgets.header import header_text

GENUINE = Path(__file__).resolve().parents[1] / "sample_runs" / "genuine"
RUNS, TASKS, TRUTH = GENUINE / "runs", GENUINE / "tasks", GENUINE / "_truth"
CRASH, CLEAN, PACK, INSTALL_FAIL, TZ = (
    "rs1-stats-20261201",
    "real-stats-20261201180500",
    "real-pack-20261201181500",
    "real-installfail-20261201181800",
    "real-tz-20261201182000",
)


@pytest.fixture(scope="module")
def gdb(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("genuine") / "g.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(RUNS)]) == 0
    return db


def _q(db: Path, sql: str, params=()):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, list(params)).fetchall()
    finally:
        c.close()


def test_all_five_genuine_runs_are_there_with_their_truth():
    runs = sorted(p.name for p in RUNS.iterdir())
    assert runs == sorted([CRASH, CLEAN, PACK, INSTALL_FAIL, TZ])
    assert len(list(TRUTH.glob("*.json"))) == 5
    for t in TRUTH.glob("*.json"):
        assert "real SForge" in json.loads(t.read_text())["made_by"]


def test_edgetui_agrees_with_sforges_own_visualizer(gdb):
    for t in TRUTH.glob("*.json"):
        v = json.loads(t.read_text())
        row = _q(
            gdb,
            "SELECT best_round, best_pass_rate, best_score, agent_submissions, auto_submissions, status "
            "FROM runs WHERE run_id = ? AND task_id = ?",
            [v["run_id"], v["task"]],
        )
        assert row, v["run_id"]
        best_round, best_pr, best_score, n_agent, n_auto, status = row[0]
        assert (best_round or "") == (v["best_round"] or ""), v["run_id"]
        if v["best_round"]:
            assert best_pr == pytest.approx(v["best_pass_rate"]), v["run_id"]
            if v["best_score"] is not None:
                assert best_score == pytest.approx(v["best_score"]), v["run_id"]
        assert n_agent == v["submissions_by_kind"].get("agent", 0), v["run_id"]
        assert n_auto == v["submissions_by_kind"].get("auto", 0), v["run_id"]
        assert (status == "finished") == v["has_final"], v["run_id"]


def test_harness_crashes_before_the_agent_are_aborted_in_the_harness_words(gdb):
    rows = dict(
        _q(
            gdb,
            "SELECT run_id, status || ' | ' || coalesce(status_reason, '') FROM runs WHERE run_id IN (?, ?)",
            [CRASH, INSTALL_FAIL],
        )
    )
    assert rows[CRASH].startswith("aborted | harness ended before the agent started: Error: [Errno 2] No such file")
    assert "'sudo'" in rows[CRASH]
    assert rows[INSTALL_FAIL].startswith(
        "aborted | harness ended before the agent started: Error: Install command failed"
    )


def test_an_auto_resume_ends_segment_0_before_segment_1_starts(gdb):
    conn = open_db(gdb, read_only=True)
    try:
        key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [CLEAN]).fetchone()[0]
        ev = store.run_events(conn, key)
    finally:
        conn.close()
    seq = [(k, s) for k, s in zip(ev.kind, ev.segment) if k in ("segment_start", "segment_end", "resume")]
    first_start_1 = next(i for i, (k, s) in enumerate(seq) if k == "segment_start" and s == 1)
    last_end_0 = max(i for i, (k, s) in enumerate(seq) if k == "segment_end" and s == 0)
    assert last_end_0 < first_start_1, seq
    assert any(k == "resume" for k, _ in seq)


def test_a_run_stopped_at_its_time_budget_is_not_a_cut_off_stream(gdb):
    """The clean genuine run idles until SForge stops the agent at its budget (final_result.json:
    timed_out): its transcript's last segment has no result record, and that end is the harness's,
    so the run is not flagged incomplete; the end event says why, keeping the cut's own reason."""
    conn = open_db(gdb, read_only=True)
    try:
        key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [CLEAN]).fetchone()[0]
        ends = conn.execute(
            "SELECT summary, data->>'$.reason', data->>'$.cut_reason', data->>'$.incomplete' "
            "FROM events WHERE run_key = ? AND kind = 'segment_end' AND sub = ?",
            [key, END_OF_FILE_SUB],
        ).fetchall()
        flags = store.transcript_flags(conn, key)
    finally:
        conn.close()
    assert len(ends) == 1 and ends[0][1:] == ("timed_out", "no_result", "false"), ends
    assert "time budget" in ends[0][0]
    assert "incomplete" not in flags


def test_a_pass_rate_task_shows_a_pass_rate_and_the_agents_own_error_words(gdb):
    conn = open_db(gdb, read_only=True)
    try:
        key = conn.execute("SELECT run_key FROM runs WHERE run_id = ?", [CLEAN]).fetchone()[0]
        head = store.run_header(conn, key)
        perr = conn.execute("SELECT summary FROM events WHERE run_key = ? AND kind = 'parse_error'", [key]).fetchall()
    finally:
        conn.close()
    text = header_text(head, 160).plain
    assert "best 100%" in text and " score " not in text
    assert any("API Error: 529" in s and "Overloaded" in s for (s,) in perr)


def test_the_tz_run_replayed_live_into_a_watched_root_agrees_with_its_offline_ingest(gdb, tmp_path):
    """Judge and runner at +05:30, edgetui in UTC: run_agent.log lines are written into a watched
    root one by one (started_at among them, as the harness writes it), the supervisor refreshing
    between them; every event time then equals the offline ingest's (compared by SQL)."""
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    src = RUNS / TZ / "tiny_stats"
    dst = tmp_path / "runs" / TZ / "tiny_stats"
    dst.mkdir(parents=True)
    for name in ("run_config.json", "_claude_settings.json", "install_output.txt"):
        shutil.copy(src / name, dst / name)
    log_lines = (src / "run_agent.log").read_text().splitlines(keepends=True)
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        [tmp_path / "runs"],
        docker_client=None,
        tasks_dir=TASKS,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
    )
    try:
        with open(dst / "run_agent.log", "w") as f:
            for i, line in enumerate(log_lines):
                f.write(line)
                f.flush()
                if i == 3:
                    shutil.copy(src / "started_at", dst / "started_at")  # the harness writes it early on
                if i % 4 == 0:
                    sup.poll_once()
        for name in (
            "agent_output.txt",
            "auto_eval_ticks.log",
            "evolve_state.json",
            "run_history.json",
            "final_result.json",
        ):
            shutil.copy(src / name, dst / name)
        shutil.copytree(src / "submissions", dst / "submissions")
        for _ in range(3):
            sup.poll_once()
            time.sleep(0.05)
    finally:
        sup.close()
    live = conn.execute(
        "SELECT \"offset\", t FROM events WHERE source = 'run_agent.log' AND t_source = 'recorded' ORDER BY \"offset\""
    ).fetchall()
    conn.close()
    offline = _q(
        gdb,
        "SELECT \"offset\", t FROM events WHERE run_key LIKE ? AND source = 'run_agent.log' "
        "AND t_source = 'recorded' ORDER BY \"offset\"",
        [f"%/{TZ}/%"],
    )
    assert len(live) == len(offline) > 10
    worst = max(abs(a[1] - b[1]) for a, b in zip(live, offline))
    assert [o for o, _ in live] == [o for o, _ in offline] and worst < 1e-3, worst
    started = float((src / "started_at").read_text().split()[-1])
    assert abs(offline[0][1] - started) < 600  # the log's first line is next to started_at (not 5.5 h off)


def test_a_fresh_clone_of_the_crash_runs_is_aborted_and_started_when_its_log_says(tmp_path):
    """git gives every file a fresh mtime: the crash runs are still aborted (their log's own last
    record is old) and start when their log's first line says, not at the clone's time."""
    root = tmp_path / "runs"
    for name in (CRASH, INSTALL_FAIL):
        shutil.copytree(RUNS / name, root / name)
    now = time.time()
    for p in root.rglob("*"):
        os.utime(p, (now, now))
    db = tmp_path / "c.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(root)]) == 0
    rows = _q(
        db,
        "SELECT run_id, status, started_at, (SELECT min(t) FROM events e WHERE e.run_key = runs.run_key "
        "AND e.source = 'run_agent.log') FROM runs",
    )
    assert len(rows) == 2
    for run_id, status, started, first_log in rows:
        assert status == "aborted", run_id
        assert started == pytest.approx(first_log) and now - started > 600, run_id  # not the clone time


def test_a_crash_run_copied_later_keeps_its_own_seconds_of_elapsed_time(tmp_path):
    """A checked-out crash run (no started_at): its run_config.json's mtime is the checkout's, hours
    after the log; the run's elapsed time is its log's seconds, not the time since it was recorded
    (a fresh clone showed 2.9 h against a 0.12 h budget)."""
    import os
    import shutil
    import time as _t

    dst = tmp_path / "runs"
    shutil.copytree(RUNS / CRASH, dst / CRASH)
    later = _t.time() + 3 * 3600
    for p in (dst / CRASH).rglob("*"):
        os.utime(p, (later, later))
    db = tmp_path / "c.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(dst)]) == 0
    start, last = _q(db, "SELECT started_at, last_event_at FROM runs WHERE run_id = ?", [CRASH])[0]
    assert last - start < 60, (start, last)
