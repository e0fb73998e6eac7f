"""Judge history polling against the REAL SForge judge (``sforge serve`` from the sforge package).

Set-up, all local: a tasks dir with ``BENCHMARK.yaml`` and one task JSON whose
``judge.image_tag`` names a judge image built here from busybox (plus a tar
and a bash stand-in, see ``docker_images.JUDGE_EXTRAS``); ``sforge serve`` on
127.0.0.1 with a free port and its own log dir; a run registered through the
HTTP API; a work container ``sforge.run.<task>.<run>`` carrying the token in
its environment, as ``sforge run`` would. Two archives are submitted: one that
grades, one that is not a tar.gz (grading fails: the judge writes no
report.json and its history entry is "completed" with 0 tests and no
summary). The Supervisor must see the rounds through /history, the judge
containers while they grade, and raise ``grading_failed``.

Skipped (with the reason) without Docker or the sforge package; under
``CI=true`` a missing engine fails instead.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path

import pytest

docker = pytest.importorskip("docker")
requests = pytest.importorskip("requests")

from docker_images import JUDGE_EXTRAS, build_busybox_image, remove_containers, remove_image  # noqa: E402 - after pytest.importorskip("docker") above
from waits import wait_for  # noqa: E402 - after pytest.importorskip("docker") above

from edgetui.store.database import open_db  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.alarms import AlarmSettings  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.supervisor import Supervisor  # noqa: E402 - after pytest.importorskip("docker") above


def _sforge_cli() -> str | None:
    exe = Path(sys.executable).with_name("sforge")
    if exe.exists():
        return str(exe)
    return shutil.which("sforge")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _targz(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o644
            tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture
def judge(tmp_path, engine, request):
    """``sforge serve`` with its own tasks dir, log dir and judge image; yields a dict of facts.
    Indirect parameters (a dict) may set the task's ``selection`` and ``score_direction``."""
    policy = {"selection": "score_first", "score_direction": "maximize", **getattr(request, "param", {})}
    cli = _sforge_cli()
    if cli is None:
        pytest.skip("the sforge package (test dependency sforge==1.1.0) is not installed")
    token = "edj" + uuid.uuid4().hex[:8]
    bench = f"{token}bench"
    task = f"{token}_task"
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "BENCHMARK.yaml").write_text(f"name: {bench}\nbase_images:\n  bb: {{}}\n")
    (tasks / f"{task}.json").write_text(
        json.dumps(
            {
                "task_id": task,
                "name": "live judge test",
                "base_image": "bb",
                "platform": "linux/amd64",
                "cwd": "/work",
                "submit_paths": ["."],
                "submit_exclude": [],
                "work": {"agent_query": "write answer.json", "image_tag": "unused"},
                "judge": {
                    "eval_cmd": "cat answer.json",
                    "eval_timeout": 60,
                    "parser": "structured_json",
                    "image_tag": "t1",
                    "score_direction": policy["score_direction"],
                    "selection": policy["selection"],
                },
            }
        )
    )
    image = build_busybox_image(engine, f"{bench}.judge.{task}:t1", extra_files=JUDGE_EXTRAS)
    work_image = build_busybox_image(engine)
    logs = tmp_path / "logs"
    logs.mkdir()
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "SFORGE_ADMIN_SECRET"}
    env.update(SFORGE_LOG_DIR=str(logs), SFORGE_TASKS_DIR=str(tasks), PYTHONUNBUFFERED="1")
    out = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen(
        [cli, "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                if requests.get(url + "/openapi.json", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail("sforge serve did not start: " + (tmp_path / "serve.log").read_text()[-2000:])
            time.sleep(0.3)
        secret = (logs / ".judge-admin-secret").read_text().strip()
        yield {
            "url": url,
            "logs": logs,
            "task": task,
            "bench": bench,
            "secret": secret,
            "token": token,
            "work_image": work_image,
            "log": tmp_path / "serve.log",
        }
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()
        remove_containers(engine, token)
        remove_image(engine, image)
        remove_image(engine, work_image)


# two judge images built and sforge serve started per test, then real gradings (deadlines of 90 s each)
@pytest.mark.timeout(600)
def test_supervisor_polls_the_real_judge_history(judge, engine, tmp_path):
    url, logs, task = judge["url"], judge["logs"], judge["task"]
    run_id = f"{judge['token']}run"
    tok = _register_run(judge, engine, run_id)
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        [logs / "runs"],
        docker_client=engine,
        judge_url=url,
        settings=AlarmSettings(
            discovery_interval_s=0,
            docker_interval_s=0,
            finalize_min_interval_s=0,
            finalize_interval_s=0,
            judge_interval_s=0.5,
            grading_grace_s=0,
            stats_interval_s=0,
            stall_after_s=1e9,
        ),
    )
    try:
        runs = sup.poll_once()
        assert [x.run_key for x in runs] == [f"local/{run_id}/{task}"]
        key = runs[0].run_key
        # 1. a good submission: graded by a real judge container
        good = _targz(
            {
                "answer.json": json.dumps(
                    {"score": 42.0, "passed": 3, "total_tests": 4, "valid": True, "summary": "3/4 checks"}
                ).encode()
            }
        )
        r = requests.post(
            url + "/api/v1/submit",
            data={"token": tok, "kind": "agent"},
            files={"archive": ("s.tar.gz", good)},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        sid = r.json()["submission_id"]
        saw_grading = False
        deadline = time.time() + 90
        while time.time() < deadline:
            run = sup.poll_once()[0]
            if run.status == "grading" or run.judges_running:
                saw_grading = True
            hist = sup.runs[key].history
            if hist is not None and hist.n_entries == 1 and not hist.running and run.best_round == "agent-1":
                break
            time.sleep(0.3)
        else:
            raise AssertionError(
                f"no graded history; messages {sup.messages}; serve log {judge['log'].read_text()[-1500:]}"
            )
        assert saw_grading, "the judge container / submission folder was never seen grading"
        assert hist.best_round == "agent-1" and hist.agent_submissions == 1 and hist.judge_errors == {}
        assert run.best_score == pytest.approx(42.0) and run.status == "running"
        states = conn.execute(
            "SELECT data->>'$.state' FROM events WHERE run_key = ? AND kind = 'container_state' "
            "AND data->>'$.role' = 'judge' ORDER BY t",
            [key],
        ).fetchall()
        assert ("running",) in states, states
        assert (
            conn.execute(
                "SELECT submission_id FROM submissions WHERE run_key = ? AND round = 'agent-1'", [key]
            ).fetchone()[0]
            == sid
        )
        # 2. an archive that is not a tar.gz: the judge's listing fails, no report.json
        r = requests.post(
            url + "/api/v1/submit",
            data={"token": tok, "kind": "agent"},
            files={"archive": ("s.tar.gz", b"this is not a tarball")},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        deadline = time.time() + 90
        while time.time() < deadline:
            run = sup.poll_once()[0]
            if (
                "grading_failed" in run.active_alarms
                and sup.runs[key].history.n_entries == 2
                and not sup.runs[key].history.running
            ):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"no grading_failed; {run.active_alarms}, {sup.messages}")
        hist = sup.runs[key].history
        assert "agent-2" in hist.failed
        assert [a.data.get("round") for a in run.alarms if a.rule == "grading_failed"] == ["agent-2"]
        # never registered, never submitted: the judge still counts two agent submissions
        assert hist.agent_submissions == 2
        # no secret in the database
        for value in (tok, judge["secret"]):
            for table in ("events", "runs", "source_cursors", "submissions"):
                n = conn.execute(
                    f"SELECT count(*) FROM {table} t WHERE CAST(t AS VARCHAR) LIKE ?", [f"%{value}%"]
                ).fetchone()[0]
                assert n == 0, table
    finally:
        sup.close()
        conn.close()


def _register_run(judge, engine, run_id):
    """A run as ``sforge run`` lays it out, registered with the judge, and its work container with the
    token in its environment; returns the token."""
    url, logs, task = judge["url"], judge["logs"], judge["task"]
    r = requests.post(
        url + "/api/v1/register", json={"task_id": task, "run_id": run_id, "admin_secret": judge["secret"]}, timeout=10
    )
    assert r.status_code == 200, r.text
    tok = r.json()["token"]
    td = logs / "runs" / run_id / task
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text(
        time.strftime("%Y-%m-%d %H:%M:%S") + ",000 - INFO - Registered session with judge server\n"
    )
    (td / "agent_output.txt").write_text(
        json.dumps({"type": "system", "subtype": "init", "session_id": "s", "model": "m", "tools": []}) + "\n"
    )
    engine.containers.run(
        judge["work_image"],
        ["sleep", "600"],
        name=f"sforge.run.{task}.{run_id}",
        detach=True,
        environment={"SFORGE_TOKEN": tok, "SFORGE_JUDGE_URL": url},
    )
    return tok


@pytest.mark.timeout(600)  # as above
@pytest.mark.parametrize("judge", [{"selection": "score_first", "score_direction": "minimize"}], indirect=True)
def test_the_judges_best_checks_an_assumed_policy(judge, engine, tmp_path):
    """No task JSON for edgetui (policy assumed: SForge's default pass_rate_first / maximize), a judge
    whose task is score_first / minimize: the judge's best (agent-2, the lower score) corrects the
    assumption during the run, and the judge line says the assumed policy now agrees with it."""
    url = judge["url"]
    run_id = f"{judge['token']}pol"
    tok = _register_run(judge, engine, run_id)
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        [judge["logs"] / "runs"],
        docker_client=engine,
        judge_url=url,
        settings=AlarmSettings(
            discovery_interval_s=0,
            docker_interval_s=0,
            finalize_min_interval_s=0,
            finalize_interval_s=0,
            judge_interval_s=0.5,
            grading_grace_s=0,
            stats_interval_s=0,
            stall_after_s=1e9,
        ),
    )
    try:
        key = sup.poll_once()[0].run_key
        for score in (42.0, 30.0):  # equal pass rates: pass_rate_first keeps agent-1, minimize picks agent-2
            arc = _targz(
                {
                    "answer.json": json.dumps(
                        {"score": score, "passed": 3, "total_tests": 4, "valid": True, "summary": "3/4 checks"}
                    ).encode()
                }
            )
            r = requests.post(
                url + "/api/v1/submit",
                data={"token": tok, "kind": "agent"},
                files={"archive": ("s.tar.gz", arc)},
                timeout=30,
            )
            assert r.status_code == 200, r.text
            n = 1 if score == 42.0 else 2
            deadline = time.time() + 90
            while time.time() < deadline:
                run = sup.poll_once()[0]
                hist = sup.runs[key].history
                if (
                    hist is not None
                    and hist.n_entries == n
                    and not hist.running
                    and conn.execute(
                        "SELECT count(*) FROM submissions WHERE run_key = ? AND score IS NOT NULL", [key]
                    ).fetchone()[0]
                    == n
                ):
                    break
                time.sleep(0.3)
            else:
                raise AssertionError(f"round {n} not graded; {sup.messages}")
        assert hist.best_round == "agent-2"

        def best_is_agent_2():
            r = sup.poll_once()[0]
            return r if r.best_round == "agent-2" else None

        if run.best_round != "agent-2":
            run = wait_for(best_is_agent_2, 10, "agent-2 as the run's best", 0.2)
        row = conn.execute(
            "SELECT best_round, best_score, selection, score_direction, policy_assumed FROM runs WHERE run_key = ?",
            [key],
        ).fetchone()
        assert row == ("agent-2", pytest.approx(30.0), "score_first", "minimize", True)
        assert run.best_round == "agent-2"
        assert "assumed policy score_first/minimize agrees with the judge" in run.judge_says, run.judge_says
        # the ★ (is_new_best) follows the same best-so-far
        assert (
            conn.execute(
                "SELECT round FROM submissions WHERE run_key = ? AND is_new_best ORDER BY t DESC LIMIT 1", [key]
            ).fetchone()[0]
            == "agent-2"
        )
    finally:
        sup.close()
        conn.close()


def test_judge_line_says_when_an_assumed_policy_disagrees():
    from edgetui.live.judge import HistoryView
    from edgetui.live.supervisor import judge_line

    v = HistoryView(fetched_at=100.0, best_round="agent-3", agent_submissions=3)
    line = judge_line(v, "agent-1", 130.0, assumed_policy="pass_rate_first/maximize")
    assert "best agent-3" in line and "(the files say agent-1)" in line
    assert "assumed policy pass_rate_first/maximize does NOT reproduce the judge's best" in line
    assert "assumed" not in judge_line(v, "agent-3", 130.0)
