"""A score is shown when it was known, not before (issue 12, item 9).

A round's graded row (``judge_result``) and its ``submissions.t`` are the moment its result was
known: ``evolve_state.json`` ``at`` for agent rounds (SForge's visualizer semantics,
docs/sforge-run-folders.md §8.2), the judge's ``Result:`` line in ``run_instance.log`` for auto
rounds (and for agent rounds before ``evolve_state.json`` is written), else the report's mtime. The
submission stays where it was sent (``submitted_at``: the sforge-submit call, the auto-eval tick).
Best-so-far and the chart follow the result-known time. Live, a result is timed by the judge log
and re-timed under the same event id when ``evolve_state.json`` gives ``at``: a finished run
watched live and ingested afterwards has the same times.

Reference values are read from the run's own files here (own regexes, not edgetui's parser).
"""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import duckdb
import pytest

from edgetui.store import queries as store
from edgetui.cli.main import main
from edgetui.store.database import open_db

ROOT = Path(__file__).resolve().parents[1]
GW = next((ROOT / "sample_runs" / "runs").glob("opus48-edge-3-*")) / "gw_signal_search"
TASKS = ROOT / "sample_runs" / "tasks"
GENUINE = ROOT / "sample_runs" / "genuine"
CLEAN = GENUINE / "runs" / "real-stats-20261201180500" / "tiny_stats"
TZ = GENUINE / "runs" / "real-tz-20261201182000" / "tiny_stats"  # judge and runner at +05:30
_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) - \w+ - (.*)$")


def _offset(task_dir: Path) -> float:
    """The run's UTC offset (s) from its started_at file: a local ISO line, then the epoch."""
    local, epoch = task_dir.joinpath("started_at").read_text().split()
    naive = datetime.fromisoformat(local).replace(tzinfo=timezone.utc).timestamp()
    return round((naive - float(epoch)) / 900) * 900


def _log_times(log: Path, offset: float) -> dict[str, float]:
    """First time (epoch UTC) of each message prefix of a judge log: 'Result:', 'Judge container started:'."""
    out: dict[str, float] = {}
    for ln in log.read_text().splitlines():
        m = _LINE.match(ln)
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
            t += int(m.group(2)) / 1000 - offset
            for key in ("Result:", "Judge container started:"):
                if m.group(3).startswith(key):
                    out.setdefault(key, t)
    return out


def _expected_known(task_dir: Path) -> dict[str, float]:
    """Round -> when its result was known, from the files: evolve ``at`` (agent), else Result: line."""
    at = {
        s["round"]: float(s["at"])
        for s in json.loads((task_dir / "evolve_state.json").read_text())["submissions"]
        if s.get("at")
    }
    off = _offset(task_dir)
    out = {}
    for d in (task_dir / "submissions").iterdir():
        if (d / "report.json").exists():
            out[d.name] = (
                at[d.name]
                if d.name.startswith("agent-") and d.name in at
                else _log_times(d / "run_instance.log", off)["Result:"]
            )
    return out


@pytest.fixture(scope="module")
def gw_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("gw") / "gw.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(GW)]) == 0
    return db


def _q(db: Path, sql: str, params=()):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, list(params)).fetchall()
    finally:
        c.close()


def test_the_first_rounds_score_sits_after_its_judge_ran_not_at_submitted_at(gw_db):
    """gw_signal_search agent-1: submitted 0:03:39, judge started 0:03:46, Result 0:05:56, the agent
    saw it 0:06:21 (evolve ``at``): the graded row is at 0:06:21, after both judge lines."""
    start = float(GW.joinpath("started_at").read_text().split()[-1])
    logs = _log_times(GW / "submissions" / "agent-1" / "run_instance.log", _offset(GW))
    sub_at = json.loads((GW / "submissions" / "agent-1" / "report.json").read_text())["submitted_at"]
    assert [round(x - start) for x in (sub_at, logs["Judge container started:"], logs["Result:"])] == [220, 227, 357]
    ((t, ts, known_by),) = _q(
        gw_db, "SELECT t, t_source, data->>'known_by' FROM events WHERE kind = 'judge_result' AND round = 'agent-1'"
    )
    assert (round(t - start), ts, known_by) == (381, "recorded", "evolve_state")
    assert t == _expected_known(GW)["agent-1"]
    # in the replay's timeline: the sforge-submit call, the judge's start, its Result:, then the score
    c = open_db(gw_db, read_only=True)
    try:
        key = c.execute("SELECT run_key FROM runs").fetchone()[0]
        ev = store.run_events(c, key)
    finally:
        c.close()
    rows = list(zip(ev.kind, ev.round, ev.summary, ev.tool_name))

    def first(pred) -> int:
        return next(i for i, r in enumerate(rows) if pred(r))

    submit = first(lambda r: r[0] == "tool_call" and "sforge-submit" in (r[2] or ""))
    judge_started = first(lambda r: r[1] == "agent-1" and (r[2] or "").startswith("Judge container started"))
    result_line = first(lambda r: r[1] == "agent-1" and (r[2] or "").startswith("Result:"))
    graded = first(lambda r: r[0] == "judge_result" and r[1] == "agent-1")
    assert submit < judge_started < result_line < graded


def test_every_round_is_timed_when_its_result_was_known_and_best_so_far_follows(gw_db):
    """All 248 graded rounds: agent rounds at evolve ``at``, auto rounds at their Result: line; the
    submissions rows in that order, with the best-so-far of that order (edgetui.replay.selection, tested
    against SForge's own), and the submission times kept as sent."""
    from edgetui.replay.selection import best_so_far, entry_from_submission
    from edgetui.records import SubmissionRecord

    want = _expected_known(GW)
    got = dict(_q(gw_db, "SELECT round, t FROM events WHERE kind = 'judge_result'"))
    assert got == pytest.approx(want) and len(want) == 248
    rows = _q(
        gw_db,
        "SELECT round, t, elapsed_s, submitted_at, pass_rate, score, valid, is_new_best, best_round "
        "FROM submissions ORDER BY t",
    )
    start = float(GW.joinpath("started_at").read_text().split()[-1])
    assert [r[0] for r in rows] == sorted(want, key=want.get)
    for rnd, t, el, sub_at, *_ in rows:
        assert t == pytest.approx(want[rnd]) and el == pytest.approx(want[rnd] - start)
        rep = json.loads((GW / "submissions" / rnd / "report.json").read_text())
        assert sub_at == rep["submitted_at"] < t  # sent before its result was known
    # the order differs from the submission order here (auto-1 sent after agent-10, known before)
    assert [r[0] for r in rows] != [r[0] for r in sorted(rows, key=lambda r: r[3])]
    # the drawn curve is over the valid rounds: an invalid one (valid: false) is no point of it
    valid = [r for r in rows if r[6] is not False]
    entries = [
        entry_from_submission(
            SubmissionRecord(
                round=r[0], kind=r[0].split("-")[0], status="graded", pass_rate=r[4], score=r[5], valid=r[6]
            )
        )
        for r in valid
    ]
    steps = best_so_far(entries, "maximize", "score_first")
    assert [(s.is_new_best, s.best_round) for s in steps] == [(r[7], r[8]) for r in valid]
    assert [(r[0], r[7], r[8]) for r in rows if r[6] is False] == [
        (rnd, False, None) for rnd in ("agent-39", "auto-13", "agent-178")
    ]


def test_the_chart_draws_each_score_at_its_result_time(gw_db):
    from edgetui.views.widgets.chart import chart_data

    c = open_db(gw_db, read_only=True)
    try:
        key = c.execute("SELECT run_key FROM runs").fetchone()[0]
        head, subs = store.run_header(c, key), store.submissions(c, key)
    finally:
        c.close()
    data = chart_data(head, subs, end_elapsed_s=12 * 3600)
    start = head["started_at"]
    want = _expected_known(GW)
    agent_x = {round((want[r] - start) / 3600, 6) for r in want if r.startswith("agent-")}
    drawn = sorted(round(x, 6) for x, _ in data.agent)  # (rounds without a score are not drawn)
    assert set(drawn) <= agent_x and len(drawn) > 200 and drawn[0] == round((want["agent-1"] - start) / 3600, 6)
    assert round(data.best[0][0], 6) == drawn[0]  # the best-so-far line starts when the first score was known


def _copy_round(src: Path, dst: Path) -> None:
    """One submission folder as the judge writes it: run_instance.log first, report.json last."""
    dst.mkdir(parents=True)
    for f in sorted(src.iterdir(), key=lambda p: p.name == "report.json"):
        shutil.copy2(f, dst / f.name)


@pytest.mark.parametrize("run", [CLEAN, TZ], ids=["utc", "tz+0530"])
def test_a_run_watched_live_then_ingested_has_the_same_result_times(tmp_path, run):
    """A genuine run (one in UTC, one with judge and runner at +05:30) replayed into a watched
    root in its recorded order (each round's folder when it was graded, evolve_state.json at the
    end as the harness writes it): while the
    state file is missing an agent round's score is timed by its Result: line; when it comes, the
    same event is re-timed to ``at``; at the end every graded row, submission row and best-so-far
    equals an offline ingest's (compared by SQL)."""
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor
    from edgetui.views.screens.live_run import load_increment

    dst = tmp_path / "runs" / run.parent.name / run.name
    dst.mkdir(parents=True)
    for name in ("run_config.json", "started_at", "run_agent.log", "agent_output.txt", "auto_eval_ticks.log"):
        shutil.copy2(run / name, dst / name)
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        [tmp_path / "runs"],
        docker_client=None,
        tasks_dir=GENUINE / "tasks",
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
    )
    off = _offset(run)
    rounds = sorted(
        (run / "submissions").iterdir(), key=lambda d: json.loads((d / "report.json").read_text())["submitted_at"]
    )
    try:
        sup.poll_once()
        for d in rounds:
            _copy_round(d, dst / "submissions" / d.name)
            sup.poll_once()
        result = _log_times(run / "submissions" / "agent-1" / "run_instance.log", off)["Result:"]
        before = conn.execute(
            "SELECT event_id, t, data->>'known_by' FROM events WHERE kind = 'judge_result' AND round = 'agent-1'"
        ).fetchall()
        sub_before = conn.execute("SELECT t FROM submissions WHERE round = 'agent-1'").fetchone()[0]
        assert [(t, k) for _, t, k in before] == [(pytest.approx(result), "judge_log")] and sub_before == before[0][1]
        key = conn.execute("SELECT run_key FROM runs").fetchone()[0]
        _, head, screen, screen_subs = load_increment(conn, key, None, [])  # what the live run screen holds
        for name in ("evolve_state.json", "run_history.json", "final_result.json"):
            shutil.copy2(run / name, dst / name)
        for _ in range(3):
            sup.poll_once()
            time.sleep(0.05)
        after = conn.execute(
            "SELECT event_id, t, data->>'known_by' FROM events WHERE kind = 'judge_result' AND round = 'agent-1'"
        ).fetchall()
        assert after == [(before[0][0], _expected_known(run)["agent-1"], "evolve_state")]  # same id, re-timed
        # the live run screen's next read (its header older than a refresh) has the new order
        how, _, screen, _ = load_increment(conn, key, screen, screen_subs)
        full = store.run_events(conn, key)
        assert how == "full" and screen.events.event_id == full.event_id
        rows = list(zip(screen.events.kind, screen.events.round, screen.events.summary))
        graded = next(i for i, r in enumerate(rows) if r[:2] == ("judge_result", "agent-1"))
        result_row = next(i for i, r in enumerate(rows) if r[1] == "agent-1" and (r[2] or "").startswith("Result:"))
        assert graded > result_row
    finally:
        sup.close()
    offline = tmp_path / "offline.duckdb"
    assert main(["--db", str(offline), "ingest", "-q", "--tasks-dir", str(GENUINE / "tasks"), str(run)]) == 0
    graded = (
        "SELECT round, event_id, t, t_source, data->>'known_by' FROM events WHERE kind = 'judge_result' ORDER BY round"
    )
    subs = "SELECT round, t, elapsed_s, submitted_at, is_new_best, best_round FROM submissions ORDER BY t, round"
    judge_lines = (
        "SELECT source, \"offset\", t FROM events WHERE source LIKE 'submissions/%/run_instance.log' "
        'ORDER BY source, "offset"'
    )
    live = [conn.execute(q).fetchall() for q in (graded, subs, judge_lines)]
    conn.close()
    want = [_q(offline, q) for q in (graded, subs, judge_lines)]
    assert live == want and len(live[0]) == len(rounds) >= 8


def test_the_report_detail_says_when_the_result_was_known_and_how_long_after_the_submission(gw_db):
    import io

    from rich.console import Console

    from edgetui.views.widgets.detail import render_detail

    c = open_db(gw_db, read_only=True)
    try:
        key = c.execute("SELECT run_key FROM runs").fetchone()[0]
        texts = {}
        for rnd in ("agent-1", "auto-1"):
            eid = c.execute("SELECT event_id FROM events WHERE kind = 'judge_result' AND round = ?", [rnd]).fetchone()[
                0
            ]
            con = Console(width=100, record=True, file=io.StringIO())
            con.print(
                render_detail(
                    {
                        "event": store.event_detail(c, eid),
                        "elapsed": 0.0,
                        "submission": store.submission(c, key, rnd),
                        "tests": [],
                    }
                )
            )
            texts[rnd] = " ".join(con.export_text().split())
    finally:
        c.close()
    # agent-1: submitted_at 1773277375.4, evolve at 1773277537: 161.6 s later
    assert "known agent saw it (evolve at) · sent 0:02:41 before" in texts["agent-1"]
    assert "known judge's Result: line · sent" in texts["auto-1"]
