"""SForge's newer sforge-submit outputs, auto-eval ticks and drain lines (docs/sforge-judge.md).

Hand-made fixtures in the shapes the repository's ``sforge/harness/evolve_scripts.py`` and
``run_agent.py`` print after 1.1.0: ``sforge-submit --result <id>`` (a graded submission read
again: no new submission, no round), ``--list`` with a SUBMISSION_ID column and ``-`` in VALID,
``Valid: no``, ``ERROR: <id> evaluation failed: …``, ``HTTP 503`` (the judge's queue full), auto-eval
tick lines (``submitted N bytes -> <sid> round=auto-N``, ``error: 503 Server Error …``) and the
drain's ``Drain timed out after 15 min; some reports may be missing.`` A run folder holding all of
them is recorded live (lines appended while a Supervisor watches) and offline: the same events, the
log and tick lines at the same times.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from edgetui.store.database import open_db
from edgetui.record.ingest import ingest_paths
from edgetui.live.alarms import AlarmSettings
from edgetui.live.supervisor import Supervisor
from edgetui.parsers.claude import parse_sforge_submit_output, sforge_submit_mode

RULE = "=" * 40

RESULT_READ = f"""  Reading existing submission: 3f9c0a1b2d4e (agent-2)
{RULE}
  agent-2 Results
{RULE}
  Valid:       no

  Summary:
    result.json missing: invalid output, not a zero score

{RULE}
"""

SUBMITTED = f"""
{RULE}
  Submitting for evaluation
  Archive size: 18342 bytes
  Waiting for test results...
{RULE}

  Submission ID: 77aa00bb11cc
  If interrupted: sforge-submit --result 77aa00bb11cc
  Round: agent-3

{RULE}
  agent-3 Results
{RULE}
  Pass rate:   85.5%
  Passed:      171/200

  All tests passed!
{RULE}
"""

LIST_NEWER = f"""
{RULE}
  Submission History
  Total submissions: 3
  Best pass rate: 85.5%
{RULE}

  SUBMISSION_ID  ROUND          STATUS     VALID    PASS_RATE    SCORE      SUMMARY
  -------------  -----          ------     -----    ---------    -----      -------
  3f9c0a1b2d4e   agent-1        completed  yes      85.5%        -          171/200 tests passed. Failed: targ...
  77aa00bb11cc   agent-2        completed  no       -            -          result.json missing: invalid output
  0123456789ab   agent-3        queued     -        -            -          -

"""

FULL_503 = f"""
{RULE}
  Submitting for evaluation
  Archive size: 18342 bytes
  Waiting for test results...
{RULE}

ERROR: Failed to submit to judge server (HTTP 503)
{{"detail":"Judge queue is full"}}
"""

EVAL_FAILED = """  Submission ID: 55aa66bb77cc
  If interrupted: sforge-submit --result 55aa66bb77cc
  Round: agent-4

ERROR: 55aa66bb77cc evaluation failed: synthetic evaluator failure
"""


def test_result_mode_is_a_read_not_a_submission():
    assert sforge_submit_mode("sforge-submit --result 3f9c0a1b2d4e") == "result"
    assert sforge_submit_mode("sforge-submit --result 3f9c0a1b2d4e --details") == "result"
    assert sforge_submit_mode("sforge-submit --result x; sforge-submit") == "submit"  # a real one wins
    r = parse_sforge_submit_output(RESULT_READ)
    assert r["mode"] == "result" and r["submission_id"] == "3f9c0a1b2d4e" and r["round"] == "agent-2"
    assert r["status"] == "completed" and r["valid"] is False and "invalid output" in r["summary"]


def test_submission_id_list_table_503_and_evaluation_errors_are_read():
    r = parse_sforge_submit_output(SUBMITTED)
    assert (r["mode"], r["round"], r["submission_id"], r["status"]) == (
        "submit",
        "agent-3",
        "77aa00bb11cc",
        "completed",
    )
    lst = parse_sforge_submit_output(LIST_NEWER)
    assert lst["mode"] == "list" and lst["total_submissions"] == 3
    assert [(e["submission_id"], e["round"], e["status"], e["valid"]) for e in lst["entries"]] == [
        ("3f9c0a1b2d4e", "agent-1", "completed", True),
        ("77aa00bb11cc", "agent-2", "completed", False),
        ("0123456789ab", "agent-3", "queued", None),
    ]
    assert lst["entries"][0]["pass_rate"] == pytest.approx(0.855) and lst["entries"][1]["pass_rate"] is None
    full = parse_sforge_submit_output(FULL_503)
    assert full["status"] == "rejected" and full["rejected"] == "judge_full" and full["http_status"] == 503
    assert "round" not in full
    err = parse_sforge_submit_output(EVAL_FAILED)
    assert err["status"] == "error" and err["round"] == "agent-4" and err["submission_id"] == "55aa66bb77cc"
    assert err["error"] == "synthetic evaluator failure"


# ---------------------------------------------------------------------------- a run folder, live and offline


def _j(obj) -> bytes:
    return json.dumps(obj).encode()


def _call(i: int, cmd: str) -> bytes:
    return _j(
        {
            "type": "assistant",
            "message": {
                "id": f"c{i}",
                "model": "claude-opus-4-8",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": cmd}}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
            "parent_tool_use_id": None,
            "session_id": "s1",
        }
    )


def _result(i: int, text: str) -> bytes:
    return _j(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": text, "is_error": False}],
            },
            "parent_tool_use_id": None,
            "session_id": "s1",
        }
    )


INIT = _j({"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-opus-4-8", "cwd": "/w"})


def _stamp(t: float, fmt: str) -> str:
    return time.strftime(fmt, time.localtime(t))


def _log(t: float, level: str, msg: str) -> str:
    return _stamp(t, "%Y-%m-%d %H:%M:%S") + f",000 - {level} - {msg}\n"


def _tick(t: float, text: str) -> str:
    return "[" + _stamp(t, "%Y-%m-%dT%H:%M:%S") + "] " + text + "\n"


def _started_at(td: Path, t0: float) -> None:
    (td / "started_at").write_text(_stamp(t0, "%Y-%m-%dT%H:%M:%S") + f"\n{t0}\n")


@pytest.fixture
def run_dir(tmp_path):
    root = tmp_path / "logs" / "runs"
    td = root / "run1" / "taskA"
    td.mkdir(parents=True)
    t0 = float(int(time.time()) - 3600)
    _started_at(td, t0)
    return root, td, t0


def _supervisor(conn, root, **kw) -> Supervisor:
    st = AlarmSettings(
        discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0, stats_interval_s=0, **kw
    )
    return Supervisor(conn, [root], docker_client=None, settings=st)


def test_new_lines_recorded_live_as_offline_and_a_result_read_makes_no_round(tmp_path, run_dir):
    root, td, t0 = run_dir
    log = [
        _log(t0 - 4, "INFO", "Images ready"),
        _log(t0 + 1, "INFO", "Running agent: claude -p ... (timeout=3600s)"),
        _log(t0 + 3000, "INFO", "Agent finished: runtime=2999.0s, timed_out=True, resumes=0"),
        _log(t0 + 3010, "INFO", "Draining 2 pending judge evals..."),
        _log(t0 + 3910, "WARNING", "Drain timed out after 15 min; some reports may be missing."),
    ]
    ticks = [
        _tick(t0 + 300, "submitted 514 bytes -> 3abbd1c5140d round=auto-1"),
        _tick(t0 + 600, "error: 503 Server Error: Service Unavailable for url: http://127.0.0.1:8080/api/v1/submit"),
        _tick(t0 + 900, "error: Could not create the submission archive: tar: x: Cannot stat"),
        _tick(t0 + 1200, "submitted 611 bytes -> b91986dad326 round=auto-2"),
    ]
    transcript = [
        INIT,
        _call(1, "sforge-submit"),
        _result(1, SUBMITTED),
        _call(2, "sforge-submit --result 3f9c0a1b2d4e"),
        _result(2, RESULT_READ),
        _call(3, "sforge-submit --list"),
        _result(3, LIST_NEWER),
        _call(4, "sforge-submit"),
        _result(4, FULL_503),
    ]
    # live: the first half of each file, a refresh, then the rest appended, a refresh
    (td / "run_agent.log").write_text("".join(log[:2]))
    (td / "auto_eval_ticks.log").write_text("".join(ticks[:1]))
    (td / "agent_output.txt").write_bytes(b"".join(x + b"\n" for x in transcript[:3]))
    live = open_db(tmp_path / "live.duckdb")
    sup = _supervisor(live, root)
    sup.poll_once()
    with open(td / "run_agent.log", "a") as f:
        f.write("".join(log[2:]))
    with open(td / "auto_eval_ticks.log", "a") as f:
        f.write("".join(ticks[1:]))
    with open(td / "agent_output.txt", "ab") as f:
        f.write(b"".join(x + b"\n" for x in transcript[3:]))
    sup.poll_once()
    sup.close()
    off = open_db(tmp_path / "offline.duckdb")
    ingest_paths(off, [root])
    timed = (
        "SELECT event_id, kind, round, t, summary, data FROM events WHERE source IN "
        "('run_agent.log', 'auto_eval_ticks.log') ORDER BY event_id"
    )
    got, want = live.execute(timed).fetchall(), off.execute(timed).fetchall()
    assert got == want
    kinds = {(r[1], r[4]) for r in want}
    assert ("log", "judge drain timed out after 15 min: some reports may be missing") in kinds
    assert ("auto_eval_error", "auto-eval refused: judge full (HTTP 503), no round spent") in kinds
    drain = [json.loads(r[5]) for r in want if r[1] == "log" and "drain" in r[4]]
    assert drain == [{"drain_timed_out": True, "drain_min": 15, "message": drain[0]["message"]}]
    sent = off.execute(
        "SELECT round, data->>'$.submission_id' FROM events WHERE kind = 'submission_sent' ORDER BY t"
    ).fetchall()
    assert sent == [("auto-1", "3abbd1c5140d"), ("auto-2", "b91986dad326")]
    results = (
        "SELECT event_id, round, summary, data->>'$.submit_result.mode', data->>'$.submit_result.rejected' "
        "FROM events WHERE kind = 'tool_result' ORDER BY \"offset\", sub"
    )
    got, want = live.execute(results).fetchall(), off.execute(results).fetchall()
    assert got == want
    assert [r[3] for r in want] == ["submit", "result", "list", "submit"]
    assert [r[1] for r in want] == ["agent-3", None, None, None]  # the --result read names agent-2: no round
    assert "read again" in want[1][2]
    assert want[3][4] == "judge_full" and "judge full (HTTP 503)" in want[3][2]
    live.close()
    off.close()


def test_repeated_503s_raise_one_judge_saturated_alarm_and_no_auto_eval_error(tmp_path, run_dir):
    root, td, t0 = run_dir
    now = time.time()
    (td / "run_agent.log").write_text(_log(t0 + 1, "INFO", "Running agent: claude -p ... (timeout=86400s)"))
    (td / "agent_output.txt").write_bytes(INIT + b"\n")
    err = "error: 503 Server Error: Service Unavailable for url: http://127.0.0.1:8080/api/v1/submit"
    (td / "auto_eval_ticks.log").write_text(_tick(now - 500, err) + _tick(now - 300, err))
    conn = open_db(tmp_path / "live.duckdb")
    sup = _supervisor(conn, root)
    r = sup.poll_once()[0]
    assert "judge_saturated" not in r.active_alarms  # two refusals: not yet
    with open(td / "agent_output.txt", "ab") as f:  # a third: the agent's own sforge-submit
        f.write(_call(1, "sforge-submit") + b"\n" + _result(1, FULL_503) + b"\n")
    sup.poll_once()
    r = sup.poll_once()[0]
    assert "judge_saturated" in r.active_alarms
    assert "judge_error" not in r.active_alarms  # a full queue is not a grading error
    sat = [a for a in r.alarms if a.rule == "judge_saturated"]
    assert len(sat) == 1 and "3 submissions refused with HTTP 503" in sat[0].message
    sup.close()
    # a restart on the same database: the same episode (its refusals read back), not a second alarm
    sup2 = _supervisor(conn, root)
    r = sup2.poll_once()[0]
    assert "judge_saturated" in r.active_alarms
    sup2.close()
    n = conn.execute("SELECT count(*) FROM events WHERE kind = 'alarm' AND summary LIKE '%judge_saturated%'")
    assert n.fetchone()[0] == 1
    conn.close()


def test_codex_and_opencode_results_of_a_result_read_carry_no_round():
    from edgetui.parsers.codex_common import submit_fields, submit_mode

    data: dict = {}
    mode = submit_mode(["bash", "-lc", "sforge-submit --result 3f9c0a1b2d4e"])
    rnd, summ = submit_fields(RESULT_READ, mode, data)
    assert mode == "result" and rnd is None and "read again" in summ
    assert data["submit_result"]["round"] == "agent-2" and data["submit_mode"] == "result"
    rnd, _ = submit_fields(SUBMITTED, submit_mode("sforge-submit"), {})
    assert rnd == "agent-3"
