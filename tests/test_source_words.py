"""What a source says is shown in its own words, not behind a label (the agent CLI's error line,
the judge's timed-out evaluation)."""

from __future__ import annotations

import time

from edgetui.live.judge import classify_history
from edgetui.parsers.claude import ClaudeStreamParser


def test_the_agent_clis_own_error_line_is_in_the_summary():
    p = ClaudeStreamParser("agent_output.txt", "g")
    ev = p.feed(b'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 0)[0]
    assert ev.kind == "parse_error"
    assert "API Error: 529" in ev.summary and "Overloaded" in ev.summary
    assert ev.raw.startswith(b"API Error: 529")
    broken = p.feed(b'{"type": "assistant", "mess', 100)[0]
    assert "not JSON" in broken.summary  # a cut JSON record keeps the decoder's reason


def test_a_timed_out_evaluation_says_timed_out():
    now = time.time()
    h = {
        "entries": [
            {
                "round": "agent-3",
                "status": "completed",
                "type": "submission",
                "total_tests": 0,
                "summary": None,
                "timed_out": True,
                "runtime": 61.2,
            },
            {
                "round": "agent-4",
                "status": "completed",
                "type": "submission",
                "total_tests": 0,
                "summary": None,
                "message": "eval_cmd exited 2: grade.sh: not found",
            },
            {"round": "agent-5", "status": "completed", "type": "submission", "total_tests": 0, "summary": None},
        ]
    }
    v = classify_history(h, now)
    # an evaluation that ran out of time is not a failed grading: said as eval_timeout
    assert v.timed_out["agent-3"] == "evaluation timed out after 61 s (the judge's history)"
    assert "agent-3" not in v.failed
    assert v.failed["agent-4"] == "judge: eval_cmd exited 2: grade.sh: not found"
    assert v.failed["agent-5"] == "judge reported 0 tests and no summary"
