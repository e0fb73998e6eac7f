"""The newer judge's queue on the live screens (docs/sforge-judge.md, "The judge queue").

A hand-made log dir: ``<log_dir>/judge-pending/`` with spooled archives (the judge's whole queue), a
run under ``<log_dir>/runs``, and a real HTTP judge on 127.0.0.1 whose ``/history`` (header auth)
has a ``queued`` entry and a ``status: "error"`` entry. The run's snapshot must count both queues,
the screens must say them beside "grading", and the failed evaluation must be a judge error.
"""

from __future__ import annotations

import http.server
import json
import threading
import time

from rich.console import Console

from edgetui.store.database import open_db
from edgetui.live.alarms import AlarmSettings
from edgetui.live.model import LiveRun
from edgetui.live.supervisor import Supervisor
from edgetui.views.screens.live_parts import grading_text, live_status_text
from edgetui.views.widgets.runs_cells import status_text

TOKEN = "q" * 32

HISTORY = {
    "run_id": "run1",
    "best_score": None,
    "best_pass_rate": 0.5,
    "best_round": "agent-1",
    "agent_submissions": 2,
    "auto_submissions": 2,
    "entries": [
        {"type": "submission", "status": "completed", "round": "agent-1", "pass_rate": 0.5, "total_tests": 2},
        {"type": "submission", "status": "error", "round": "agent-2", "submission_id": "e" * 12},
        {"type": "submission", "status": "running", "round": "auto-1"},
        {"type": "submission", "status": "queued", "round": "auto-2"},
    ],
}


class _Judge(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # http.server's name
        ok = self.headers.get("Authorization") == f"Bearer {TOKEN}"
        data = json.dumps(HISTORY if ok else {"detail": "no"}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def _text(t) -> str:
    c = Console(width=200, record=True, color_system=None)
    c.print(t)
    return c.export_text()


def test_queued_rounds_and_the_judges_pending_archives_beside_grading(tmp_path):
    logs = tmp_path / "logs"
    td = logs / "runs" / "run1" / "taskA"
    td.mkdir(parents=True)
    t0 = time.time() - 600
    (td / "started_at").write_text(time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t0)) + f"\n{t0}\n")
    (td / "run_agent.log").write_text(
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0)) + ",000 - INFO - Running agent: claude -p x\n"
    )
    pending = logs / "judge-pending"
    pending.mkdir()
    for i in range(3):
        (pending / f"{i:012x}.tar.gz").write_bytes(b"archive")
    (pending / "sub").mkdir()  # not an archive
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    conn = open_db(tmp_path / "live.duckdb")
    st = AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0, stats_interval_s=0)
    sup = Supervisor(
        conn, [logs / "runs"], docker_client=None, settings=st, judge_url=f"http://127.0.0.1:{srv.server_address[1]}"
    )
    try:
        r = sup.poll_once()[0]
        assert r.judge_pending == 3 and r.queued_rounds == []
        sup.runs[r.run_key].token = TOKEN  # (what the work container's SFORGE_TOKEN gives)
        sup.judge.poll({r.run_key: TOKEN})
        sup.judge.wait()
        sup.judge._next.clear()
        r = sup.poll_once()[0]
        assert r.queued_rounds == ["auto-2"] and r.status == "grading"
        assert "judge_error" in r.active_alarms  # the evaluation that ended as status "error"
        assert any("agent-2" in a.message for a in r.alarms if a.rule == "judge_error")
        assert "queued auto-2" in r.judge_says and "grading auto-1" in r.judge_says
        line = _text(live_status_text(r, time.time(), 200))
        assert "● grading 1 queued" in line and "judge queue 3" in line and line.count("queued") == 2
    finally:
        sup.close()
        conn.close()
        srv.shutdown()
        srv.server_close()


def test_grading_text_says_judges_queued_and_the_judges_queue():
    base = dict(run_key="local/r/t", run_id="r", task_id="t")
    assert grading_text(LiveRun(**base)) is None
    assert grading_text(LiveRun(**base, judges_running=1)).plain == "1 judge grading"
    full = LiveRun(**base, judges_running=2, queued_rounds=["auto-3", "agent-4"], judge_pending=5)
    assert grading_text(full).plain == "2 judges grading · judge queue 5"
    full.status = "grading"
    assert status_text(full).plain == "● grading 2 queued" and status_text(full, compact=True).plain == "● grading q2"
