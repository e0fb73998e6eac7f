"""How the live side authenticates to the judge's ``/history`` (docs/sforge-judge.md, "Authentication").

Real HTTP servers on 127.0.0.1: one that implements the newer judge's header auth
(``Authorization: Bearer <token>``, ``X-SForge-Admin-Secret``) and refuses the query form with 401,
one that implements SForge 1.1.0's query form only (422 without the ``token`` query parameter, as
FastAPI answers), and the real SForge 1.1.0 judge (``sforge serve``) when the sforge package is
installed. The poller must try the headers first, fall back to the query form, remember what worked,
and never put the token or the admin secret in a message.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from waits import wait_for

from edgetui.live.judge import JudgePoller

TOKEN = "tok0123456789abcdef0123456789abcd"
SECRET = "adm1n-s3cret-value-XYZ"

HISTORY = {
    "run_id": "r",
    "best_score": None,
    "best_pass_rate": 0.5,
    "best_round": "agent-1",
    "agent_submissions": 1,
    "auto_submissions": 1,
    "entries": [
        {"type": "submission", "status": "completed", "round": "agent-1", "pass_rate": 0.5, "total_tests": 2},
        {"type": "submission", "status": "queued", "round": "auto-1"},
    ],
}


class _Judge(http.server.BaseHTTPRequestHandler):
    """Records each request (path and auth headers); ``accepts`` = "header" or "query"."""

    accepts = "header"
    seen: list[dict] = []

    def do_GET(self):  # http.server's name
        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        auth = self.headers.get("Authorization") or ""
        admin = self.headers.get("X-SForge-Admin-Secret")
        type(self).seen.append({"path": self.path, "auth": auth, "admin": admin})
        if type(self).accepts == "header":
            ok = auth == f"Bearer {TOKEN}"
            code, body = (200, self._view(admin)) if ok else (401, {"detail": "Missing or invalid bearer token"})
        else:
            if "token" not in q:
                code, body = 422, {"detail": [{"type": "missing", "loc": ["query", "token"], "msg": "Field required"}]}
            elif q["token"] != [TOKEN]:
                code, body = 401, {"detail": "Invalid token"}
            else:
                code, body = 200, self._view((q.get("admin_secret") or [None])[0])
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _view(admin):
        if admin == SECRET:
            return HISTORY
        return {**HISTORY, "entries": [e for e in HISTORY["entries"] if not e["round"].startswith("auto-")]}

    def log_message(self, *a):
        pass


def _serve(accepts: str):
    handler = type(f"Judge_{accepts}", (_Judge,), {"accepts": accepts, "seen": []})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, handler


def _poll_once(p: JudgePoller, tokens: dict) -> dict:
    p.poll(tokens)
    p.wait()
    return p.poll({})


@pytest.mark.parametrize("accepts", ["header", "query"])
def test_headers_first_then_the_1_1_0_query_form_and_the_form_is_kept(accepts):
    srv, h = _serve(accepts)
    try:
        p = JudgePoller(f"http://127.0.0.1:{srv.server_address[1]}", SECRET, interval_s=0)
        v = _poll_once(p, {"k": TOKEN})["k"]
        assert v.ok, v.message
        assert v.queued == ["auto-1"] and v.running == ["auto-1"]  # the admin view: auto rounds seen
        first = h.seen[0]
        assert first["path"] == "/api/v1/history" and first["auth"] == f"Bearer {TOKEN}" and first["admin"] == SECRET
        if accepts == "header":
            assert len(h.seen) == 1 and p.auth_form == "header"
        else:
            assert [urllib.parse.urlsplit(s["path"]).path for s in h.seen] == ["/api/v1/history"] * 2
            assert h.seen[1]["path"] == f"/api/v1/history?token={TOKEN}&admin_secret={SECRET}"
            assert p.auth_form == "query"
        n = len(h.seen)
        _poll_once(p, {"k": TOKEN})
        assert len(h.seen) == n + 1  # the form that worked, alone
        assert (h.seen[-1]["path"] == "/api/v1/history") == (accepts == "header")
        p.close()
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("accepts", ["header", "query"])
def test_a_refused_token_says_the_status_and_never_the_secrets(accepts):
    srv, h = _serve(accepts)
    try:
        p = JudgePoller(f"http://127.0.0.1:{srv.server_address[1]}", SECRET, interval_s=0)
        bad = "badtoken-ffffffffffffffffffffffff"
        v = _poll_once(p, {"k": bad})["k"]
        assert not v.ok and p.error is not None and "HTTP 401" in p.error
        for text in (p.error, v.message):
            assert bad not in text and SECRET not in text
        assert len(h.seen) == 2  # both forms tried, then the error
        assert p.auth_form is None
        p.close()
    finally:
        srv.shutdown()
        srv.server_close()


def _sforge_cli() -> str | None:
    exe = Path(sys.executable).with_name("sforge")
    return str(exe) if exe.exists() else shutil.which("sforge")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def judge(tmp_path):
    """The real SForge 1.1.0 judge (``sforge serve`` on 127.0.0.1) with one task; yields (url, secret)."""
    cli = _sforge_cli()
    if cli is None:
        pytest.skip("the sforge package (test dependency sforge==1.1.0) is not installed")
    tasks, logs = tmp_path / "tasks", tmp_path / "logs"
    tasks.mkdir()
    logs.mkdir()
    (tasks / "BENCHMARK.yaml").write_text("name: authbench\nbase_images:\n  bb: {}\n")
    task = {
        "task_id": "auth_task",
        "name": "auth",
        "base_image": "bb",
        "platform": "linux/amd64",
        "cwd": "/work",
        "submit_paths": ["."],
        "submit_exclude": [],
        "work": {"agent_query": "x", "image_tag": "unused"},
        "judge": {"eval_cmd": "cat a", "eval_timeout": 60, "parser": "structured_json", "image_tag": "t1"},
    }
    (tasks / "auth_task.json").write_text(json.dumps(task))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "SFORGE_ADMIN_SECRET"}
    env.update(SFORGE_LOG_DIR=str(logs), SFORGE_TASKS_DIR=str(tasks), PYTHONUNBUFFERED="1")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [cli, "serve", "--host", "127.0.0.1", "--port", str(port)], cwd=tmp_path, env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if proc.poll() is not None:
            pytest.fail("sforge serve ended: " + log.read_text()[-2000:])
        try:
            with urllib.request.urlopen(url + "/openapi.json", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_for(up, timeout=60, what="sforge serve answering")
        yield url, (logs / ".judge-admin-secret").read_text().strip(), log
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_the_real_1_1_0_judge_is_read_in_its_query_form(judge):
    url, secret, log = judge
    body = json.dumps({"task_id": "auth_task", "run_id": "authrun", "admin_secret": secret}).encode()
    req = urllib.request.Request(
        url + "/api/v1/register", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        token = json.loads(r.read())["token"]
    p = JudgePoller(url, secret, interval_s=0)
    v = _poll_once(p, {"k": token})["k"]
    assert v.ok, v.message
    assert p.auth_form == "query"  # 1.1.0 answers 422 to the header form
    p.close()
    lines = [ln for ln in log.read_text().splitlines() if "/api/v1/history" in ln]
    assert lines[0].rstrip().endswith("422 Unprocessable Entity") and "?" not in lines[0]


class _EchoJudge(_Judge):
    """A header judge whose failed evaluation's error text echoes the request's credentials."""

    accepts = "header"
    seen: list[dict] = []

    @staticmethod
    def _view(admin):
        err = f"evaluator failed: token={TOKEN} admin={SECRET}"
        return {
            **HISTORY,
            "entries": [{"type": "submission", "status": "error", "round": "agent-2", "error": err}],
        }


def test_credentials_echoed_by_the_judge_reach_no_message_database_or_screen(tmp_path):
    from edgetui.store.database import open_db
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor
    from edgetui.views.screens.live_parts import alarm_line, live_status_text

    logs = tmp_path / "logs"
    td = logs / "runs" / "run1" / "taskA"
    td.mkdir(parents=True)
    (logs / ".judge-admin-secret").write_text(SECRET + "\n")
    (td / "run_agent.log").write_text(
        time.strftime("%Y-%m-%d %H:%M:%S") + ",000 - INFO - Running agent: claude -p x... (timeout=3600s)\n"
    )
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _EchoJudge)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    conn = open_db(tmp_path / "live.duckdb")
    st = AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0, stats_interval_s=0)
    sup = Supervisor(
        conn, [logs / "runs"], docker_client=None, settings=st, judge_url=f"http://127.0.0.1:{srv.server_address[1]}"
    )
    try:
        r = sup.poll_once()[0]
        rs = sup.runs[r.run_key]
        rs.token = TOKEN  # what the container join does with the work container's SFORGE_TOKEN
        sup.rec.add_secret(TOKEN)
        sup.judge.poll({r.run_key: TOKEN})
        sup.judge.wait()
        sup.judge._next.clear()
        r = sup.poll_once()[0]
        assert "judge_error" in r.active_alarms
        assert _EchoJudge.seen and all(s["path"] == "/api/v1/history" for s in _EchoJudge.seen)
        shown = [r.judge_says or "", *sup.messages, *(a.message for a in r.alarms)]
        shown.append(live_status_text(r, time.time(), 200).plain)
        shown += [alarm_line(a, time.time()).plain for a in r.alarms]
        sup.close()
        rows = conn.execute("SELECT summary, CAST(data AS VARCHAR) FROM events").fetchall()
        texts = shown + [x or "" for row in rows for x in row]
        assert any("evaluator failed" in t for t in texts)
        for t in texts:
            assert TOKEN not in t and SECRET not in t
    finally:
        conn.close()
        srv.shutdown()
        srv.server_close()
