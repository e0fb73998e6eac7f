"""Tests for edgetui.parsers.sforge_dir / edgetui.parsers.runlog on run directories built in tmp_path."""

from __future__ import annotations

import io
import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from edgetui.events import Event
from edgetui.parsers.base import iter_lines
from edgetui.parsers.runlog import AutoEvalTicksParser, RunAgentLogParser, redact_text
from edgetui.parsers.sforge_dir import (
    DEFAULT_TIMEOUT_S,
    FAILED_GRADING_SUB,
    discover,
    final_result_events,
    load_run,
    load_tasks,
    read_run_info,
    read_started_at,
    read_submissions,
    redact_config,
    resolve_tasks_dir,
    run_config_events,
    started_at_events,
    submission_events,
    task_info,
)

# host local time is UTC+2: 14:30:00 local == 12:30:00 UTC
OFFSET = 7200.0
START_EPOCH = datetime(2026, 7, 17, 12, 30, 0, tzinfo=timezone.utc).timestamp() + 0.25
START_LOCAL = "2026-07-17T14:30:00"


def utc(h: int, m: int, s: int, ms: int = 0) -> float:
    return datetime(2026, 7, 17, h, m, s, tzinfo=timezone.utc).timestamp() + ms / 1000


def log_line(local_hms: str, level: str, msg: str, ms: int = 0) -> str:
    return f"2026-07-17 {local_hms},{ms:03d} - {level} - {msg}\n"


def write(p: Path, data: str | bytes) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    p.write_bytes(data)
    return p


def wjson(p: Path, obj) -> Path:
    return write(p, json.dumps(obj, indent=2))


RUN_AGENT_LOG = (
    log_line("14:29:50", "INFO", "Images ready")
    + log_line(
        "14:30:00",
        "INFO",
        'Running agent: claude -p "$(cat /tmp/agent_prompt.md)" --output-format stream-json... (timeout=3600s)',
        500,
    )
    + log_line("14:40:00", "INFO", "Agent exited after 600.0s, will resume")
    + log_line(
        "14:40:00",
        "INFO",
        'Resuming agent (attempt 1/100, 3000s left): claude --continue -p "Continue working."...',
        10,
    )
    + log_line("15:00:00", "WARNING", "Failed to extract final archive: boom\nsecond line of warning")
    + log_line("15:30:00", "INFO", "Agent finished: runtime=3600.0s, timed_out=True, resumes=1")
    + log_line("15:30:05", "ERROR", "Error: docker went away")
    + "Traceback (most recent call last):\n"
    + '  File "/x/run_agent.py", line 934, in run_agent\n'
    + "    raise RuntimeError('docker went away')\n"
    + "RuntimeError: docker went away\n"
    + log_line(
        "15:31:00", "INFO", "Done: best=85.00% (round 'agent-1'), agent_subs=2, auto_subs=1, resumes=1, runtime=3600.0s"
    )
)

SECRET_API = "sk-ant-api03-PLANTEDapikey0123456789"
SECRET_TOKEN = "PLANTED-auth-token-value"
SECRET_PW = "PLANTEDhunter2"
SECRET_VAL = "sk-proj-PLANTEDvalue0123456789abc"
SECRET_ADMIN = "PLANTED-admin-secret"
SECRET_LOG = "sk-ant-PLANTEDinlog0123456789"
ALL_SECRETS = [SECRET_API, SECRET_TOKEN, SECRET_PW, SECRET_VAL, SECRET_ADMIN, SECRET_LOG]

TASK_CONFIG = {
    "task_id": "t1",
    "agent": "claude-code",
    "model": "claude-opus-4-8",
    "timeout": None,
    "eval_interval": 300,
    "api_key": SECRET_API,
    "admin_secret": SECRET_ADMIN,
    "extra_env": {
        "ANTHROPIC_AUTH_TOKEN": SECRET_TOKEN,
        "MY_PASSWORD": SECRET_PW,
        "INNOCENT_LOOKING": SECRET_VAL,
        "PLAIN": "plain-value",
    },
}


def report(**kw) -> dict:
    d = {
        "task_id": "t1",
        "submission_id": "abc123def456",
        "total_tests": 4,
        "passed": 3,
        "failed": 1,
        "errors": 0,
        "pass_rate": 0.75,
        "score": None,
        "score_0_100": None,
        "timed_out": False,
        "runtime_seconds": 12.5,
        "test_details": [
            {"name": "t::a", "status": "PASSED"},
            {"name": "t::b", "status": "PASSED"},
            {"name": "t::c", "status": "PASSED"},
            {"name": "t::d", "status": "FAILED"},
        ],
        "valid": True,
        "summary": "3/4 tests passed. Failed: t::d",
        "details": [
            {"name": "t::a", "status": "PASSED", "message": None, "score": None, "weight": None},
            {"name": "t::b", "status": "PASSED", "message": None, "score": None, "weight": None},
            {"name": "t::c", "status": "PASSED", "message": None, "score": None, "weight": None},
            {"name": "t::d", "status": "FAILED", "message": None, "score": None, "weight": None},
        ],
        "metrics": {},
        "submitted_at": utc(12, 45, 0),
    }
    d.update(kw)
    return d


def make_task(td: Path, *, with_secrets: bool = True) -> Path:
    """A finished task dir with every kind of submission folder."""
    wjson(td / "run_config.json", TASK_CONFIG if with_secrets else {"task_id": td.name, "timeout": 7200})
    write(td / "started_at", f"{START_LOCAL}\n{START_EPOCH!r}\n")
    write(td / "run_agent.log", RUN_AGENT_LOG)
    write(
        td / "auto_eval_ticks.log",
        "[2026-07-17T14:35:00] submitted 18342 bytes -> 3f9c0a1b2d4e round=auto-1\n"
        "[2026-07-17T15:05:00] error: Could not create the submission archive: tar failed\n",
    )
    subs = td / "submissions"
    # agent-1: legacy pytest report (details + test_details repeat the same tests)
    wjson(subs / "agent-1" / "report.json", report())
    write(
        subs / "agent-1" / "run_instance.log",
        log_line("14:44:59", "INFO", "Judge container started: deadbeef")
        + log_line("14:45:00", "INFO", "Running eval script...")
        + log_line("14:45:13", "INFO", "Result: 3/4 passed (pass_rate=75.00%)"),
    )
    # auto-1: NaN score; structured details only
    write(
        subs / "auto-1" / "report.json",
        json.dumps(
            report(
                submission_id="3f9c0a1b2d4e",
                score=float("nan"),
                score_0_100=float("nan"),
                test_details=[],
                details=[
                    {"name": "case1", "status": "PASSED", "message": "ok", "score": 1.0, "weight": 2.0},
                    {"name": "case2", "status": "WA", "message": "wrong", "score": float("inf"), "weight": 1.0},
                ],
                metrics={"latency": float("inf"), "n": 3},
                submitted_at=utc(12, 35, 1),
            )
        ),
    )
    # agent-2: Infinity score, valid false
    write(
        subs / "agent-2" / "report.json",
        json.dumps(report(score=float("inf"), valid=False, submitted_at=utc(13, 10, 0))),
    )
    # 3: legacy integer folder, older report without submitted_at / details
    wjson(
        subs / "3" / "report.json",
        {
            "task_id": "t1",
            "submission_id": "x",
            "total_tests": 1,
            "passed": 1,
            "pass_rate": 1.0,
            "test_details": [{"name": "only", "status": "PASSED"}],
        },
    )
    # agent-4: report.json is not JSON
    write(subs / "agent-4" / "report.json", b'{\n  "task_id": "t1",\n  "pass_rate": 0.5,\n  "score": oops\n}')
    # agent-5: grading raised -> no report.json, traceback in run_instance.log
    write(
        subs / "agent-5" / "run_instance.log",
        log_line("15:10:00", "INFO", "Judge container started: cafe")
        + log_line("15:10:02", "ERROR", "Traceback (most recent call last):")
        + '  File "/x/run_evaluation.py", line 230, in judge_submission\n'
        + "sforge.harness.run_evaluation.EvaluationError: Archive extraction failed: bad tar\n"
        + log_line("15:10:03", "INFO", "Container cafe removed."),
    )
    # agent-6: folder without anything
    (subs / "agent-6").mkdir(parents=True)
    # game-1: archived session; game-2: in flight (steps.jsonl only)
    wjson(
        subs / "game-1" / "game_result.json",
        {
            "type": "game",
            "round": "game-1",
            "session_id": "s1",
            "task_id": "t1",
            "max_score": 10,
            "peak_score": 6,
            "final_score": 5,
            "score": 5,
            "moves": 42,
            "steps": [{"move": 1}],
            "pass_rate": 0.5,
        },
    )
    write(
        subs / "game-2" / "steps.jsonl",
        '{"move": 1, "action": "look", "observation": "dark", "score": 0, "peak_score": 0, "max_score": 20, "done": false}\n'
        "not json at all\n"
        '{"move": 2, "action": "north", "observation": "room", "score": 4, "peak_score": 4, "max_score": 20, "done": false}\n',
    )
    wjson(subs / "manual-1" / "report.json", report(submitted_at=utc(16, 0, 0)))
    (subs / "scratch").mkdir()  # unknown folder names are ignored
    wjson(
        td / "evolve_state.json",
        {
            "best_pass_rate": 0.75,
            "best_score": None,
            "best_round": "agent-1",
            "submissions": [
                {"kind": "agent", "round": "agent-1", "at": int(utc(12, 45, 20)), "pass_rate": 0.75, "score": None},
                {"kind": "agent", "round": "agent-2", "at": int(utc(13, 10, 20)), "pass_rate": 0.75, "score": None},
            ],
        },
    )
    wjson(
        td / "run_history.json",
        {
            "run_id": "r1",
            "best_score": None,
            "best_pass_rate": 0.75,
            "best_round": "agent-1",
            "entries": [
                {"type": "submission", "round": "agent-1", "status": "completed", "pass_rate": 0.75, "score": None}
            ],
        },
    )
    wjson(
        td / "final_result.json",
        {
            "agent": "claude-code",
            "task": "t1",
            "run_id": "r1",
            "model": "claude-opus-4-8",
            "best_pass_rate": 0.75,
            "best_round": "agent-1",
            "total_rounds": 3,
            "agent_submissions": 2,
            "auto_submissions": 1,
            "timed_out": True,
            "runtime_seconds": 3600.0,
            "archive_size_bytes": 10,
            "resume_count": 1,
        },
    )
    return td


def all_event_text(events: list[Event]) -> str:
    return "\n".join(e.model_dump_json() for e in events)


# --------------------------------------------------------------------------- discovery


def test_discover_all_entry_points(tmp_path: Path) -> None:
    flat = tmp_path / "logs" / "runs"
    write(flat / "runA" / "t1" / "run_agent.log", "")
    (flat / "runA" / "t2" / "submissions").mkdir(parents=True)
    (flat / "runA" / "not_a_task").mkdir()
    write(flat / "runA" / "run_config.json", "{}")
    write(flat / "runB" / "t1" / "started_at", "")
    grouped = tmp_path / "grouped"
    write(grouped / "10.0.0.5" / "runC" / "t9" / "final_result.json", "{}")
    write(grouped / "10.0.0.6" / "runD" / "t8" / "evolve_state.json", "{}")

    locs = discover(flat)
    assert [(l.host, l.run_id, l.task_id, l.layout) for l in locs] == [
        ("local", "runA", "t1", "flat"),
        ("local", "runA", "t2", "flat"),
        ("local", "runB", "t1", "flat"),
    ]
    # a log dir holding runs/ is accepted
    assert discover(tmp_path / "logs") == locs
    # a run dir, a task dir
    assert [l.task_id for l in discover(flat / "runA", host="gpu1")] == ["t1", "t2"]
    assert {l.host for l in discover(flat / "runA", host="gpu1")} == {"gpu1"}
    one = discover(flat / "runA" / "t2")
    assert len(one) == 1 and one[0].run_id == "runA" and one[0].task_dir == flat / "runA" / "t2"
    assert one[0].run_key == "local/runA/t2"
    # grouped root: ip becomes host
    g = discover(grouped)
    assert [(l.host, l.run_id, l.task_id, l.layout) for l in g] == [
        ("10.0.0.5", "runC", "t9", "grouped"),
        ("10.0.0.6", "runD", "t8", "grouped"),
    ]
    # a task dir below an ip dir keeps the ip as host (same run_key as from the root)
    assert discover(grouped / "10.0.0.5" / "runC" / "t9")[0].run_key == "10.0.0.5/runC/t9"
    assert discover(grouped / "10.0.0.5" / "runC")[0].run_key == "10.0.0.5/runC/t9"
    assert discover(tmp_path / "missing") == []


def test_discover_never_descends_into_task_dirs(tmp_path: Path) -> None:
    td = tmp_path / "runs" / "r" / "t"
    write(td / "run_agent.log", "")
    # a nested dir inside the task that itself looks like a task dir must not become a run
    write(td / "submissions" / "agent-1" / "run_agent.log", "")
    assert [l.task_id for l in discover(tmp_path / "runs")] == ["t"]


# --------------------------------------------------------------------------- started_at / run_agent.log


def test_started_at_offset_and_utc_times(tmp_path: Path) -> None:
    td = make_task(tmp_path / "runs" / "r1" / "t1")
    sa = read_started_at(td)
    assert sa is not None and sa.error is None
    assert sa.epoch == pytest.approx(START_EPOCH)
    assert sa.utc_offset_s == OFFSET
    ev = started_at_events(td)
    assert (
        [e.kind for e in ev] == ["run_start"] and ev[0].t == pytest.approx(START_EPOCH) and ev[0].t_source == "recorded"
    )

    run = load_run(discover(td)[0])
    seg0 = [e for e in run.events if e.kind == "segment_start" and e.segment == 0]
    assert len(seg0) == 1
    assert seg0[0].t == pytest.approx(utc(12, 30, 0, 500))  # 14:30:00,500 local at UTC+2
    ticks = [e for e in run.events if e.source == "auto_eval_ticks.log"]
    assert ticks[0].kind == "submission_sent" and ticks[0].t == pytest.approx(utc(12, 35, 0))
    assert "tz_assumed" not in ticks[0].data


def test_negative_offset_and_truncated_seconds(tmp_path: Path) -> None:
    # UTC-05:30 host; line 1 truncates the fractional second
    ep = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc).timestamp() + 0.9
    local = datetime.fromtimestamp(ep - 5.5 * 3600, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    write(tmp_path / "started_at", f"{local}\n{ep}\n")
    assert read_started_at(tmp_path).utc_offset_s == -5.5 * 3600


def test_run_agent_log_segments_resume_and_traceback(tmp_path: Path) -> None:
    p = write(tmp_path / "run_agent.log", RUN_AGENT_LOG)
    parser = RunAgentLogParser("run_agent.log", "g", OFFSET)
    events: list[Event] = []
    with open(p, "rb") as fp:
        for ln in iter_lines(fp):
            events.extend(parser.feed(ln.data, ln.offset))
    events.extend(parser.finish())
    kinds = [e.kind for e in events]
    assert kinds == [
        "log",
        "segment_start",
        "segment_end",
        "resume",
        "segment_start",
        "log",  # WARNING
        "log",  # its continuation line
        "segment_end",  # Agent finished closes segment 1
        "infra_error",
        "log",
    ]
    assert [e.segment for e in events[1:5]] == [0, 0, 1, 1]
    assert events[3].sub == 0 and events[4].sub == 1 and events[3].offset == events[4].offset
    assert events[3].data["attempt"] == 1 and events[3].data["remaining_s"] == 3000
    assert events[2].data == {
        "message": "Agent exited after 600.0s, will resume",
        "elapsed_s": 600.0,
        "will_resume": True,
    }
    assert events[5].level == "WARNING" and events[5].segment == 1
    assert events[6].data["continuation_of"] == events[5].offset and events[6].level == "WARNING"
    fin = events[7]
    assert fin.data["agent_finished"] is True and fin.data["timed_out"] is True and fin.segment == 1
    err = events[8]
    assert err.level == "ERROR" and err.t == pytest.approx(utc(13, 30, 5))
    assert "RuntimeError: docker went away" in err.data["traceback"]
    assert err.data["traceback"].count("\n") == 3  # 4 traceback lines in ONE event
    assert err.data["exception"] == "RuntimeError: docker went away"
    assert err.summary.startswith("Error: docker went away")
    assert all(e.t_source == "recorded" for e in events)
    # ids unique
    assert len({e.event_id() for e in events}) == len(events)


def test_traceback_record_resume_offset_and_state(tmp_path: Path) -> None:
    data = RUN_AGENT_LOG.encode()
    lines = list(iter_lines(io.BytesIO(data)))
    err_idx = next(i for i, ln in enumerate(lines) if b" - ERROR - " in ln.data)
    full = RunAgentLogParser("run_agent.log", "g", OFFSET)
    ref: list[Event] = []
    for ln in lines:
        ref.extend(full.feed(ln.data, ln.offset))
    ref.extend(full.finish())

    # stop in the middle of the traceback, then resume like the recorder would
    p1 = RunAgentLogParser("run_agent.log", "g", OFFSET)
    got: list[Event] = []
    for ln in lines[: err_idx + 2]:
        got.extend(p1.feed(ln.data, ln.offset))
    assert p1.resume_offset() == lines[err_idx].offset
    st = json.loads(json.dumps(p1.state()))  # JSON-serialisable
    assert st["seg_open"] is False and st["segment"] == 1
    p2 = RunAgentLogParser("run_agent.log", "g", OFFSET, state=st)
    for ln in lines:
        if ln.offset >= p1.resume_offset():
            got.extend(p2.feed(ln.data, ln.offset))
    got.extend(p2.finish())
    assert [e.event_id() for e in got] == [e.event_id() for e in ref]
    assert [e.data for e in got] == [e.data for e in ref]
    assert p2.resume_offset() is None


def test_crlf_and_bom_run_agent_log(tmp_path: Path) -> None:
    text = RUN_AGENT_LOG.replace("\n", "\r\n")
    td = tmp_path / "r" / "t"
    write(td / "run_agent.log", b"\xef\xbb\xbf" + text.encode())
    write(td / "started_at", f"{START_LOCAL}\r\n{START_EPOCH!r}\r\n")
    run = load_run(discover(td)[0])
    logs = [e for e in run.events if e.source == "run_agent.log"]
    assert not [e for e in logs if e.kind == "parse_error"]
    assert logs[0].offset == 3 and logs[0].t == pytest.approx(utc(12, 29, 50))
    assert all("\r" not in e.summary and "\r" not in str(e.data.get("message", "")) for e in logs)
    err = next(e for e in logs if e.kind == "infra_error")
    assert "\r" not in err.data["traceback"]
    assert run.info.utc_offset_s == OFFSET and run.info.infra_error is True and run.info.resume_count == 1


def test_unprefixed_garbage_and_no_offset(tmp_path: Path) -> None:
    parser = RunAgentLogParser("run_agent.log", "g", None)
    ev = parser.feed(b"garbage before any record", 0)
    assert [e.kind for e in ev] == ["parse_error"] and "run_agent.log @ byte 0" in ev[0].summary
    assert ev[0].raw == b"garbage before any record"
    ev = parser.feed(b"2026-13-45 10:00:00,000 - INFO - impossible date", 26)
    assert [e.kind for e in ev] == ["parse_error"]
    ev = parser.feed(b"2026-07-17 10:00:00,000 - INFO - Images ready", 80)
    assert ev[0].kind == "log" and ev[0].data["tz_assumed"] is True
    assert ev[0].t == pytest.approx(utc(10, 0, 0))  # no offset known: read as UTC


def test_ticks_parser() -> None:
    p = AutoEvalTicksParser("auto_eval_ticks.log", "g", OFFSET)
    ev = p.feed(b"[2026-07-17T14:30:05] submitted 18342 bytes -> 3f9c0a1b2d4e round=auto-7", 0)
    assert len(ev) == 1
    e = ev[0]
    assert e.kind == "submission_sent" and e.round == "auto-7" and e.t == pytest.approx(utc(12, 30, 5))
    assert e.data["submission_id"] == "3f9c0a1b2d4e" and e.data["bytes"] == 18342 and e.data["kind"] == "auto"
    ev = p.feed(b"[2026-07-17T15:00:05] error: HTTPConnectionPool: Max retries\r", 80)
    assert ev[0].kind == "auto_eval_error" and ev[0].data["message"] == "HTTPConnectionPool: Max retries"
    ev = p.feed(b"continued text of the exception", 140)
    assert ev[0].kind == "log" and ev[0].data["continuation_of"] == 80
    p2 = AutoEvalTicksParser("auto_eval_ticks.log", "g", None, state=json.loads(json.dumps(p.state())))
    assert p2.feed(b"[2026-07-17T15:30:05] submitted 1 bytes -> ? round=?", 200)[0].round is None
    assert AutoEvalTicksParser("x", "g", None).feed(b"junk", 0)[0].kind == "parse_error"


# --------------------------------------------------------------------------- submissions


def test_read_submissions_statuses(tmp_path: Path) -> None:
    td = make_task(tmp_path / "runs" / "r1" / "t1")
    recs = {r.round: r for r in read_submissions(td)}
    assert set(recs) == {
        "agent-1",
        "auto-1",
        "agent-2",
        "3",
        "agent-4",
        "agent-5",
        "agent-6",
        "game-1",
        "game-2",
        "manual-1",
    }

    a1 = recs["agent-1"]
    assert a1.status == "graded" and a1.kind == "agent" and a1.n == 1
    assert a1.pass_rate == 0.75 and a1.valid is True and a1.submitted_at == pytest.approx(utc(12, 45, 0))
    assert a1.graded_at == pytest.approx((td / "submissions" / "agent-1" / "report.json").stat().st_mtime)
    assert a1.seen_at == utc(12, 45, 20)
    assert len(a1.tests) == 4 and {t.origin for t in a1.tests} == {"details"}  # test_details duplicates merged

    au = recs["auto-1"]
    assert au.score is None and au.score_flag == "nan" and au.score_0_100 is None and au.seen_at is None
    assert [(t.name, t.status, t.message, t.score, t.weight) for t in au.tests] == [
        ("case1", "PASSED", "ok", 1.0, 2.0),
        ("case2", "WA", "wrong", None, 1.0),
    ]
    assert au.metrics == {"latency": None, "n": 3}

    a2 = recs["agent-2"]
    assert a2.score is None and a2.score_flag == "inf" and a2.valid is False

    leg = recs["3"]
    assert leg.kind == "legacy" and leg.n == 3 and leg.status == "graded" and leg.submitted_at is None
    assert [(t.name, t.origin) for t in leg.tests] == [("only", "test_details")]

    bad = recs["agent-4"]
    raw = (td / "submissions" / "agent-4" / "report.json").read_bytes()
    assert bad.status == "bad_report"
    assert bad.error.startswith("submissions/agent-4/report.json: invalid JSON at byte ")
    assert f"byte {raw.index(b'oops')}" in bad.error and "\n" not in bad.error

    fg = recs["agent-5"]
    assert fg.status == "failed_grading"
    assert fg.error == "sforge.harness.run_evaluation.EvaluationError: Archive extraction failed: bad tar"
    assert recs["agent-6"].status == "failed_grading" and recs["agent-6"].error == "no report.json"

    g1 = recs["game-1"]
    assert (g1.status, g1.pass_rate, g1.score, g1.max_score, g1.metrics["moves"], g1.submission_id) == (
        "graded",
        0.5,
        5.0,
        10.0,
        42,
        "s1",
    )
    g2 = recs["game-2"]
    assert (g2.status, g2.score, g2.max_score, g2.pass_rate, g2.metrics["moves"]) == ("in_flight", 4.0, 20.0, 0.2, 2)
    assert recs["manual-1"].kind == "manual"

    order = [r.round for r in read_submissions(td)]
    assert order.index("auto-1") < order.index("agent-1") < order.index("agent-2")


def test_read_submissions_matches_sforge_scanner(tmp_path: Path) -> None:
    scanner = pytest.importorskip("sforge.visualizer.scanner")
    td = make_task(tmp_path / "runs" / "r1" / "t1")
    theirs = scanner._scan_submissions_shallow(td)
    ours = [r for r in read_submissions(td) if r.kind != "manual"]  # the visualizer ignores manual-N
    assert len(ours) == len(theirs)
    kind_map = {"legacy": "agent"}
    assert sorted((r.round, kind_map.get(r.kind, r.kind)) for r in ours) == sorted(
        (s.round_label, s.kind) for s in theirs
    )
    by_round = {s.round_label: s for s in theirs}
    for r in ours:
        if r.status == "graded" and r.kind != "game":
            assert by_round[r.round].pass_rate == pytest.approx(r.pass_rate)


def test_submission_events(tmp_path: Path) -> None:
    td = make_task(tmp_path / "runs" / "r1" / "t1")
    recs = read_submissions(td)
    events = submission_events(td, recs, OFFSET)
    judge = {e.round: e for e in events if e.kind == "judge_result"}
    assert set(judge) == {r.round for r in recs if r.kind != "game"}
    a1 = judge["agent-1"]
    assert a1.source == "submissions/agent-1/report.json" and a1.offset == 0
    assert a1.t == pytest.approx(utc(12, 45, 0)) and a1.t_source == "recorded"
    assert a1.data["failing"] == ["t::d"] and a1.data["pass_rate"] == 0.75 and a1.data["valid"] is True
    leg = judge["3"]
    assert leg.t_source == "interpolated" and leg.t == pytest.approx((td / "submissions/3/report.json").stat().st_mtime)
    fg = judge["agent-5"]
    assert fg.source == "submissions/agent-5/run_instance.log" and fg.sub == FAILED_GRADING_SUB
    assert fg.data["status"] == "failed_grading" and fg.is_error and fg.t == pytest.approx(utc(13, 10, 2))
    bad = [e for e in events if e.kind == "parse_error" and e.source == "submissions/agent-4/report.json"]
    assert len(bad) == 1 and "invalid JSON at byte" in bad[0].summary and bad[0].raw.startswith(b'{\n  "task_id"')
    assert judge["agent-4"].sub == 1 and judge["agent-4"].data["status"] == "bad_report"
    # run_instance.log: Result line and the ERROR record (as LOG, level ERROR, with traceback)
    res = [e for e in events if e.source == "submissions/agent-1/run_instance.log"]
    assert [e.data["message"] for e in res] == [
        "Judge container started: deadbeef",
        "Result: 3/4 passed (pass_rate=75.00%)",
    ]
    assert all(e.round == "agent-1" and e.kind == "log" for e in res)
    errs = [
        e
        for e in events
        if e.source == "submissions/agent-5/run_instance.log" and e.level == "ERROR" and e.kind == "log"
    ]
    assert len(errs) == 1 and "Archive extraction failed" in errs[0].data["traceback"]
    # games
    gr = [e for e in events if e.kind == "game_result"]
    assert [e.round for e in gr] == ["game-1"] and "steps" not in gr[0].data
    steps = [e for e in events if e.source == "submissions/game-2/steps.jsonl"]
    assert [e.kind for e in steps] == ["game_step", "parse_error", "game_step"]
    assert steps[2].data["score"] == 4 and steps[2].t is None and steps[2].round == "game-2"
    assert len({e.event_id() for e in events}) == len(events)


def test_failed_grading_while_run_instance_log_has_no_error(tmp_path: Path) -> None:
    sub = tmp_path / "t" / "submissions" / "auto-3"
    write(sub / "run_instance.log", log_line("10:00:00", "INFO", "Judge container started: x"))
    (rec,) = read_submissions(tmp_path / "t")
    assert rec.status == "failed_grading" and rec.error == "no report.json"
    evs = submission_events(tmp_path / "t", [rec], None)
    jr = [e for e in evs if e.kind == "judge_result"]
    assert len(jr) == 1 and jr[0].t_source == "interpolated"
    assert len({e.event_id() for e in evs}) == len(evs)  # no clash with line 0 of run_instance.log


def test_report_not_an_object_and_empty(tmp_path: Path) -> None:
    write(tmp_path / "t" / "submissions" / "agent-1" / "report.json", "[1, 2]")
    write(tmp_path / "t" / "submissions" / "agent-2" / "report.json", "")
    write(tmp_path / "t" / "submissions" / "game-3" / "game_result.json", '{"score": ')
    recs = {r.round: r for r in read_submissions(tmp_path / "t")}
    assert recs["agent-1"].status == "bad_report" and "not a JSON object" in recs["agent-1"].error
    assert recs["agent-2"].status == "bad_report" and "empty file" in recs["agent-2"].error
    assert recs["game-3"].status == "bad_report" and recs["game-3"].error.startswith(
        "submissions/game-3/game_result.json: invalid JSON at byte 10"
    )
    evs = submission_events(tmp_path / "t", list(recs.values()), None)
    assert sum(e.kind == "parse_error" for e in evs) == 3


# --------------------------------------------------------------------------- run info, other files


def test_read_run_info(tmp_path: Path) -> None:
    td = make_task(tmp_path / "runs" / "r1" / "t1")
    info = read_run_info(discover(td)[0])
    assert (info.host, info.run_id, info.task_id, info.layout) == ("local", "r1", "t1", "flat")
    assert info.run_dir == str(td.absolute())
    assert info.agent == "claude-code" and info.model == "claude-opus-4-8"
    assert info.timeout_s == DEFAULT_TIMEOUT_S and info.eval_interval_s == 300
    assert info.started_at == pytest.approx(START_EPOCH) and info.utc_offset_s == OFFSET
    assert info.final is not None and info.final["best_round"] == "agent-1"
    assert info.infra_error is True and info.resume_count == 1
    assert info.ended_at is not None


def test_run_info_fallbacks(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r2"
    td = run / "t1"
    write(
        td / "run_agent.log",
        log_line(
            "10:00:00",
            "INFO",
            'Running agent: codex exec --dangerously-bypass-approvals-and-sandbox "$(cat /tmp/p)"... (timeout=60s)',
        ),
    )
    wjson(
        run / "run_config.json",
        {
            "run_id": "r2",
            "experiment": None,
            "stagger": None,
            "tasks": {"t1": {"task_id": "t1", "timeout": 43200, "eval_interval": 1800, "api_key": SECRET_API}},
        },
    )
    write(td / "final_result.json", '{"agent": "codex", "best_pass')  # mid-write
    info = read_run_info(discover(td)[0])
    assert info.timeout_s == 43200 and info.eval_interval_s == 1800
    assert info.config is not None and info.config["api_key"] == "<redacted>"
    assert info.final is None and info.ended_at is None
    assert info.agent == "codex" and info.started_at is None and info.utc_offset_s is None
    assert info.infra_error is False and info.resume_count == 0
    events = load_run(discover(td)[0]).events
    cfg = [e for e in events if e.kind == "run_config"]
    assert len(cfg) == 1 and cfg[0].source == "../run_config.json" and cfg[0].data["root"]["run_id"] == "r2"
    pe = [e for e in events if e.kind == "parse_error"]
    assert len(pe) == 1 and pe[0].source == "final_result.json" and "invalid JSON at byte" in pe[0].summary
    assert all(e.data.get("tz_assumed") for e in events if e.source == "run_agent.log")
    # a bare task dir with nothing: nothing raises
    empty = tmp_path / "runs" / "r3" / "t"
    (empty / "submissions").mkdir(parents=True)
    run3 = load_run(discover(empty)[0])
    assert run3.events == [] and run3.submissions == [] and run3.info.config is None and run3.info.timeout_s is None


def test_garbage_top_level_files_give_parse_errors(tmp_path: Path) -> None:
    td = tmp_path / "r" / "t"
    write(td / "run_config.json", "{not json")
    write(td / "started_at", "yesterday\n")
    write(td / "evolve_state.json", '{"submissions": [1, {"round": "agent-1", "at": "soon"}]}')
    write(td / "run_history.json", b"\xff\xfe garbage")
    write(td / "final_result.json", "[]")
    run = load_run(discover(td)[0])
    pe = {e.source: e for e in run.events if e.kind == "parse_error"}
    assert set(pe) == {"run_config.json", "started_at", "evolve_state.json", "run_history.json", "final_result.json"}
    assert pe["run_history.json"].summary.startswith("run_history.json: invalid UTF-8 at byte 0")
    assert run.info.started_at is None and run.info.final is None and run.info.config is None
    saw = [e for e in run.events if e.source == "evolve_state.json" and e.kind == "log"]
    assert len(saw) == 2 and saw[1].t is None  # "soon" is not a time


def test_final_result_time_plausibility(tmp_path: Path) -> None:
    td = make_task(tmp_path / "r" / "t")
    fr = td / "final_result.json"
    last_log = utc(13, 31, 0)
    os.utime(fr, (last_log + 5, last_log + 5))
    (ev,) = final_result_events(td, START_EPOCH, last_log)
    assert ev.kind == "run_end" and ev.t == pytest.approx(last_log + 5) and ev.t_source == "interpolated"
    os.utime(fr, (last_log + 86400 * 30, last_log + 86400 * 30))  # copied without -p
    (ev,) = final_result_events(td, START_EPOCH, last_log)
    assert ev.t == pytest.approx(last_log)
    run = load_run(discover(td)[0])
    assert run.info.ended_at == pytest.approx(last_log)
    assert [e.t for e in run.events if e.kind == "run_end"] == [pytest.approx(last_log)]


def test_load_run_event_ids_unique_and_run_key(tmp_path: Path) -> None:
    make_task(tmp_path / "runs" / "10.1.2.3" / "r1" / "t1")
    (loc,) = discover(tmp_path / "runs")
    assert loc.host == "10.1.2.3" and loc.layout == "grouped"
    run = load_run(loc)
    assert all(e.run_key == "10.1.2.3/r1/t1" for e in run.events)
    ids = [e.event_id() for e in run.events]
    assert len(ids) == len(set(ids))
    kinds = {e.kind for e in run.events}
    assert {
        "run_config",
        "run_start",
        "segment_start",
        "resume",
        "infra_error",
        "submission_sent",
        "auto_eval_error",
        "judge_result",
        "game_result",
        "game_step",
        "run_end",
    } <= kinds
    seen = [e for e in run.events if e.source == "evolve_state.json" and e.round == "agent-2"]
    assert len(seen) == 1 and seen[0].t == utc(13, 10, 20) and seen[0].t_source == "recorded"
    hist = [e for e in run.events if e.source == "run_history.json"]
    assert len(hist) == 1 and hist[0].data["history"]["best_round"] == "agent-1"
    # re-loading yields the same ids (idempotent ingest)
    assert [e.event_id() for e in load_run(loc).events] == ids


# --------------------------------------------------------------------------- secrets


def test_secrets_absent_from_info_and_events(tmp_path: Path) -> None:
    td = make_task(tmp_path / "runs" / "r1" / "t1")
    with open(td / "run_agent.log", "a") as f:
        f.write(
            log_line(
                "15:32:00",
                "INFO",
                f"Running agent: ANTHROPIC_API_KEY={SECRET_LOG} opencode run --format json... (timeout=5s)",
            )
        )
        f.write(log_line("15:33:00", "ERROR", "Error: request failed"))
        f.write(f"  headers: Authorization: Bearer {SECRET_TOKEN}\n")
    run = load_run(discover(td)[0])
    blob = run.info.model_dump_json() + all_event_text(run.events)
    for s in ALL_SECRETS:
        assert s not in blob, s
    cfg = run.info.config
    assert cfg["api_key"] == "<redacted>" and cfg["admin_secret"] == "<redacted>"
    assert cfg["extra_env"] == {
        "ANTHROPIC_AUTH_TOKEN": "<redacted>",
        "MY_PASSWORD": "<redacted>",
        "INNOCENT_LOOKING": "<redacted>",
        "PLAIN": "plain-value",
    }
    assert cfg["model"] == "claude-opus-4-8" and cfg["eval_interval"] == 300
    (rc,) = [e for e in run.events if e.kind == "run_config"]
    assert rc.data["config"] == cfg


def test_redact_config_unit() -> None:
    """run_config.json goes through the one rule set (edgetui.redact.redact_obj): a credential's
    name redacts its value (a list's strings too), whatever its first character; data under other
    names stays, hashes and opaque ids included (no second policy that redacts by shape alone)."""
    hexhash = "0123456789abcdef0123456789abcdef"
    urlsafe = "Zx8_kQ2mN4pR7sT9vW1yB3dF5hJ6lL0aCeGiKoMqUsW"
    obj = {
        "run_id": "glm51-n35-160-152-20260528172933",
        "tasks": {
            "token_bucket_limiter": {"task_id": "token_bucket_limiter", "timeout": 43200, "api_key": "sk-ant-a..."},
            "graph_node_classification_with_long_name_2024": {"model": "gpt-5.5", "max_submissions": None},
        },
        "api_keys": ["k1-first-key", "4k2-second-key"],
        "judge_url": "http://user:pa55word@host.docker.internal:8080",
        "note": f"use Bearer {urlsafe} please",
        "opaque": urlsafe,
        "hex": hexhash,
        "author": "Ada Lovelace",
        "authored_by": "ada1815x",
        "extra_env": {
            "GITHUB_TOKEN": "0123456789abcdef",
            "DB_PASSWORD": "4Xelsh3NtOnD",
            "LICENSE_KEY": "2b7c-9d1e",
            "MAX_TOKENS": "32000",
        },
        "nested": [{"GITHUB_TOKEN": "ghp_abc"}, "ok"],
        "disable_auto_eval": False,
        "max_tokens": 32000,
        "empty_key": "",
    }
    out = redact_config(obj)
    assert out["run_id"] == obj["run_id"]
    tb = out["tasks"]["token_bucket_limiter"]
    assert tb["task_id"] == "token_bucket_limiter" and tb["timeout"] == 43200 and tb["api_key"] == "<redacted>"
    assert out["tasks"]["graph_node_classification_with_long_name_2024"] == {
        "model": "gpt-5.5",
        "max_submissions": None,
    }
    assert out["api_keys"] == ["<redacted>", "<redacted>"]
    assert out["judge_url"] == "http://user:<redacted>@host.docker.internal:8080"
    assert out["note"] == "use Bearer <redacted> please"
    assert out["nested"] == [{"GITHUB_TOKEN": "<redacted>"}, "ok"]
    assert out["extra_env"] == {
        "GITHUB_TOKEN": "<redacted>",
        "DB_PASSWORD": "<redacted>",
        "LICENSE_KEY": "<redacted>",
        "MAX_TOKENS": "32000",
    }
    # data, as the database's rule set keeps it
    assert out["hex"] == hexhash and out["opaque"] == urlsafe
    assert out["author"] == "Ada Lovelace" and out["authored_by"] == "ada1815x"
    assert out["disable_auto_eval"] is False and out["max_tokens"] == 32000 and out["empty_key"] == ""
    assert obj["api_keys"] == ["k1-first-key", "4k2-second-key"]  # input untouched


def test_redact_text() -> None:
    assert redact_text("OPENAI_API_KEY=sk-abc123456789012345 codex exec") == "OPENAI_API_KEY=<redacted> codex exec"
    assert redact_text('{"api_key": "zzzzzzzz"}') == '{"api_key": "<redacted>"}'
    assert redact_text("Running agent: claude -p hi") == "Running agent: claude -p hi"


# --------------------------------------------------------------------------- tasks


def test_load_tasks_and_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tdir = tmp_path / "tasks"
    wjson(
        tdir / "score_task.json",
        {
            "task_id": "score_task",
            "name": "Score Task",
            "category": "optimization",
            "game_mode": False,
            "judge": {
                "parser": "score_sum",
                "score_direction": "minimize",
                "selection": "score_first",
                "eval_timeout": 900,
                "rescale": {"kind": "min_linear", "baseline": 10, "expert": 1},
            },
        },
    )
    wjson(
        tdir / "game.json",
        {"task_id": "game_x", "name": "Game", "metadata": {"category": "games"}, "game_mode": True, "judge": {}},
    )
    write(tdir / "broken.json", "{")
    write(tdir / "BENCHMARK.yaml", "name: edgebench\n")
    errors: list[str] = []
    tasks = load_tasks(tdir, errors)
    assert set(tasks) == {"score_task", "game", "game_x"}
    st = tasks["score_task"]
    assert (st.selection, st.score_direction, st.parser, st.eval_timeout, st.category, st.name, st.assumed) == (
        "score_first",
        "minimize",
        "score_sum",
        900,
        "optimization",
        "Score Task",
        False,
    )
    assert st.rescale == {"kind": "min_linear", "baseline": 10, "expert": 1}
    g = tasks["game"]
    assert g.game_mode is True and g.category == "games" and g.selection == "pass_rate_first" and g.eval_timeout == 600
    assert tasks["game_x"].task_id == "game_x"
    assert len(errors) == 1 and "broken.json: invalid JSON at byte 1" in errors[0]
    d = task_info("unknown", tasks)
    assert (d.task_id, d.selection, d.score_direction, d.rescale, d.assumed) == (
        "unknown",
        "pass_rate_first",
        "maximize",
        None,
        True,
    )
    assert task_info("score_task", tasks) is st
    assert load_tasks(tmp_path / "nope") == {}

    monkeypatch.delenv("SFORGE_TASKS_DIR", raising=False)
    monkeypatch.chdir(tmp_path / "tasks")
    assert resolve_tasks_dir(None) is None
    monkeypatch.chdir(tmp_path)
    assert resolve_tasks_dir(None) == Path("tasks")
    monkeypatch.setenv("SFORGE_TASKS_DIR", "/env/tasks")
    assert resolve_tasks_dir(None) == Path("/env/tasks")
    assert resolve_tasks_dir("/cli/tasks") == Path("/cli/tasks")


def test_run_config_events_without_secrets(tmp_path: Path) -> None:
    td = make_task(tmp_path / "r" / "t", with_secrets=False)
    (ev,) = run_config_events(td)
    assert ev.kind == "run_config" and ev.data["config"]["timeout"] == 7200 and ev.source == "run_config.json"
    assert read_run_info(discover(td)[0]).timeout_s == 7200


def test_read_submissions_cache_rereads_changed_folders_only(tmp_path, monkeypatch):
    import json as _json
    import time as _time

    from edgetui.parsers import sforge_dir as sd

    td = tmp_path / "run" / "task"
    for i in (1, 2, 3):
        d = td / "submissions" / f"agent-{i}"
        d.mkdir(parents=True)
        (d / "report.json").write_text(
            _json.dumps(
                {"pass_rate": i / 10, "passed": i, "total_tests": 10, "submitted_at": 1000.0 + i, "test_details": []}
            )
        )
    read = []
    from edgetui.parsers import sforge_submissions as subs_mod

    real = subs_mod.read_report_folder
    monkeypatch.setattr(subs_mod, "read_report_folder", lambda e, r: read.append(e.name) or real(e, r))
    cache: dict = {}
    first = sd.read_submissions(td, cache=cache)
    assert sorted(read) == ["agent-1", "agent-2", "agent-3"]
    read.clear()
    _time.sleep(0.01)
    (td / "submissions" / "agent-2" / "report.json").write_text(
        _json.dumps({"pass_rate": 0.9, "passed": 9, "total_tests": 10, "submitted_at": 1002.0, "test_details": []})
    )
    import shutil

    shutil.rmtree(td / "submissions" / "agent-3")
    again = sd.read_submissions(td, cache=cache)
    assert read == ["agent-2"] and sorted(cache) == ["agent-1", "agent-2"]
    assert [r.model_dump() for r in again] == [r.model_dump() for r in sd.read_submissions(td)]
    assert [r.pass_rate for r in again] == [0.1, 0.9] and first[1].pass_rate == 0.2


JUDGE_LOG = (
    "stray line before any record\n"
    + log_line("14:40:00", "INFO", "Judge container started: abc123")
    + log_line("14:40:01", "INFO", "Archive saved (616 bytes)")
    + "  a continuation of a dropped record\n"
    + log_line("14:40:02", "WARNING", "slow disk")
    + "  the warning's second line\n"
    + log_line("14:40:03", "INFO", "Running agent: judge... (timeout=60s)")
    + log_line("14:40:04", "INFO", "Running eval script with API_KEY=sk-abcdefghijklmnopqrstuvwx")
    + log_line("14:40:05", "ERROR", "grading raised")
    + 'Traceback (most recent call last):\n  File "x", line 1\nValueError: bad\n'
    + log_line("14:40:06", "INFO", "Test runtime: 0.45s, timed_out: False")
    + "Result: a continuation line that starts like a result\n"
    + log_line("14:40:07", "INFO", "Result: 10/10 passed (pass_rate=100.00%)")
    + log_line("14:40:08", "INFO", "Agent exited after 3.0s, will resume")
    + "2026-07-17 14:40:09,000 - INFO - bad \xff byte\n"
    + log_line("14:40:10", "INFO", "Container removed.")
)


@pytest.mark.parametrize("cut", [None, "14:40:06", "14:40:05", "14:40:02"])
def test_judge_log_parser_builds_only_kept_events(tmp_path: Path, cut) -> None:
    """The judge-log reader (JudgeLogParser) gives, of every line a submission folder keeps, the
    events the full RunAgentLogParser gives, and the same judge end (last Result: line, else last
    timed record), on a log with every kind of line (a log cut before its end, too)."""
    from edgetui.events import Kind
    from edgetui.parsers import sforge_dir as sd
    from edgetui.parsers.runlog import JUDGE_KEPT_LEVELS, JUDGE_KEPT_PREFIXES

    text = JUDGE_LOG if cut is None else JUDGE_LOG[: JUDGE_LOG.index(f"2026-07-17 {cut}")]
    raw = text.encode("utf-8", "surrogateescape").replace("\xff".encode(), b"\xff")
    entry = write(tmp_path / "submissions" / "agent-1" / "run_instance.log", raw).parent
    full = sd.parse_line_file(
        entry / "run_instance.log",
        RunAgentLogParser(
            "submissions/agent-1/run_instance.log",
            sd.file_generation(entry / "run_instance.log"),
            OFFSET,
            error_kind=Kind.LOG,
        ),
        "submissions/agent-1/run_instance.log",
        sd.file_generation(entry / "run_instance.log"),
    )

    def kept(e: Event) -> bool:
        return (
            e.kind == Kind.PARSE_ERROR
            or e.level in JUDGE_KEPT_LEVELS
            or str(e.data.get("message", "")).startswith(JUDGE_KEPT_PREFIXES)
        )

    got = sd.instance_log(entry, "submissions/agent-1", OFFSET)
    assert [e for e in got.events if kept(e)] == [e for e in full if kept(e)]
    assert any(kept(e) for e in full) and len(got.events) < len(full)
    timed = [e for e in full if e.t is not None and e.kind != Kind.PARSE_ERROR]
    results = [e for e in timed if str(e.data.get("message", "")).startswith("Result:")]
    want = (results or timed)[-1].t
    assert got.judge_end == want
    assert got.generation == sd.file_generation(entry / "run_instance.log")
