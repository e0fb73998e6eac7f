"""Live supervisor against the real local Docker engine.

Images are built once per session from the host's busybox (``docker import``,
no registry); containers carry a unique token in their names and are removed
by fixture finalizers, images at the end of the session.

Without a reachable engine these tests are skipped with the reason — except
under ``CI=true``, where an unreachable engine is a failure (a CI job that
silently skips its Docker tests proves nothing).
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path

import pytest

docker = pytest.importorskip("docker")

import waits  # noqa: E402 - after pytest.importorskip("docker") above

from edgetui.store.database import open_db  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.alarms import AlarmSettings  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.supervisor import Supervisor  # noqa: E402 - after pytest.importorskip("docker") above


# the session's engine, image and a test's token: conftest.py


# ---------------------------------------------------------------------------- helpers


def log_line(t: float, level: str, msg: str) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",000 - {level} - {msg}\n"


INIT = json.dumps(
    {
        "type": "system",
        "subtype": "init",
        "session_id": "s1",
        "model": "claude-opus-4-8",
        "cwd": "/w",
        "tools": ["Bash"],
    }
)
TICK = json.dumps(
    {
        "type": "assistant",
        "message": {
            "id": "m1",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": [{"type": "text", "text": "tick"}],
        },
        "session_id": "s1",
    }
)
APPEND_LOOP = f"while true; do echo '{TICK}' >> /run/agent_output.txt; sleep 0.2; done"


def make_run(root: Path, run_id: str, task: str, *, log: str | None = None) -> Path:
    td = root / run_id / task
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text(log or log_line(time.time() - 5, "INFO", "Images ready"))
    (td / "agent_output.txt").write_text(INIT + "\n")
    os.chmod(td, 0o777)
    os.chmod(td / "agent_output.txt", 0o666)
    return td


def start_work(engine, image: str, task: str, run_id: str, td: Path | None, cmd: str, **kw):
    vols = {str(td): {"bind": "/run", "mode": "rw"}} if td is not None else None
    return engine.containers.run(
        image,
        ["sh", "-c", cmd],
        name=f"sforge.run.{task}.{run_id}",
        detach=True,
        volumes=vols,
        environment={"SFORGE_TOKEN": "f" * 32},
        **kw,
    )


def settings(**kw) -> AlarmSettings:
    base = dict(
        discovery_interval_s=0,
        finalize_min_interval_s=0,
        finalize_interval_s=0,
        docker_interval_s=0,
        stats_interval_s=1,
        container_grace_s=0,
        grading_grace_s=0,
        stall_after_s=1e9,
    )
    base.update(kw)
    return AlarmSettings(**base)


def wait_for(sup: Supervisor, pred, timeout: float = 10.0, what: str = "condition"):
    """The one wait (waits.wait_for) over the supervisor's polls: ``pred(runs)`` of each poll; returns those runs."""
    seen: dict = {"runs": []}

    def polled():
        seen["runs"] = runs = sup.poll_once()
        return pred(runs) and (runs,)

    return waits.wait_for(
        polled,
        timeout,
        what,
        0.2,
        describe=lambda: (
            f"runs: {[(r.run_key, r.status, r.flags, r.container and r.container.state) for r in seen['runs']]}; "
            f"messages: {sup.messages}"
        ),
    )[0]


@pytest.fixture
def live(tmp_path, engine):
    root = tmp_path / "runs"
    root.mkdir()
    os.chmod(tmp_path, 0o777)
    conn = open_db(tmp_path / "live.duckdb")
    sups: list[Supervisor] = []

    def make(**kw) -> Supervisor:
        kw.setdefault("settings", settings())
        kw.setdefault("docker_client", engine)
        s = Supervisor(conn, [root], **kw)
        sups.append(s)
        return s

    yield root, conn, make
    for s in sups:
        s.close()
    conn.close()


def by_key(runs, part):
    hits = [r for r in runs if part in r.run_key]
    return hits[0] if len(hits) == 1 else None


def alarm_rules(conn, key):
    return [
        r[0]
        for r in conn.execute(
            "SELECT data->>'$.rule' FROM events WHERE run_key = ? AND kind = 'alarm' ORDER BY t", [key]
        ).fetchall()
    ]


# ---------------------------------------------------------------------------- tests


def test_running_work_containers_are_joined_and_their_transcripts_grow(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_task"
    tds = [make_run(root, f"run{i}", task) for i in range(2)]
    for i, td in enumerate(tds):
        start_work(engine, image, task, f"run{i}", td, APPEND_LOOP)
    sup = make()
    deadline = time.monotonic() + 10  # joined and growing within 10 s, both waits together
    runs = wait_for(
        sup,
        lambda rs: (
            len(rs) == 2 and all(r.status == "running" and r.container and r.container.state == "running" for r in rs)
        ),
        what="both runs running with their containers",
    )
    first = {r.run_key: r.n_events for r in runs}

    def n_obs(key):
        return conn.execute(
            "SELECT count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt' AND t_source = 'observed'",
            [key],
        ).fetchone()[0]

    runs = wait_for(
        sup,
        lambda rs: all(r.n_events >= first[r.run_key] + 5 and n_obs(r.run_key) >= 5 for r in rs),
        timeout=max(0.0, deadline - time.monotonic()),
        what="events growing, stamped as observed",
    )
    key = runs[0].run_key
    st = conn.execute(
        "SELECT data->>'$.state', data->>'$.role' FROM events WHERE run_key = ? AND kind = 'container_state'", [key]
    ).fetchall()
    assert ("running", "work") in st
    # resource samples (stats every second in these settings)
    runs = wait_for(
        sup, lambda rs: all(r.mem_bytes and r.cpu_percent is not None for r in rs), timeout=15, what="cpu/mem samples"
    )
    assert (
        conn.execute("SELECT count(*) FROM events WHERE run_key = ? AND kind = 'resource_sample'", [key]).fetchone()[0]
        >= 1
    )
    # the background loop wakes on file changes and keeps recording
    updates: list[int] = []
    stop = threading.Event()
    th = threading.Thread(
        target=sup.run_forever, args=(1.0, stop, lambda rs: updates.append(sum(r.n_events for r in rs))), daemon=True
    )
    th.start()
    try:
        waits.wait_for(
            lambda: len(updates) >= 3 and updates[-1] > updates[0],
            10,
            "three updates of the background loop, the events growing",
            describe=lambda: updates,
        )
    finally:
        stop.set()
        th.join(10)
    assert not th.is_alive() and len(updates) >= 3 and updates[-1] > updates[0]


def test_oom_killed_container(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_oom"
    td = make_run(root, "r1", task)
    sup = make()
    sup.poll_once()
    start_work(engine, image, task, "r1", td, "sleep 1; dd if=/dev/zero of=/dev/null bs=256M count=1", mem_limit="32m")
    runs = wait_for(
        sup, lambda rs: rs[0].container is not None and rs[0].container.oom_killed, timeout=20, what="OOMKilled"
    )
    r = runs[0]
    assert "oom" in r.flags and r.status == "aborted"
    assert "oom" in r.active_alarms and any(a.rule == "oom" and a.severity == "critical" for a in r.alarms)
    assert alarm_rules(conn, r.run_key) == ["oom"]
    st = conn.execute(
        "SELECT data->>'$.oom_killed' FROM events WHERE run_key = ? AND kind = 'container_state' "
        "AND data->>'$.state' = 'exited'",
        [r.run_key],
    ).fetchall()
    assert st and st[-1][0] == "true"


def test_exit_code_alarm_and_look_alikes(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_exit"
    bad = make_run(root, "bad", task)
    done = make_run(root, "done", task)
    drain = make_run(
        root,
        "drain",
        task,
        log=log_line(time.time() - 60, "INFO", "Running agent: claude -p x")
        + log_line(time.time() - 2, "INFO", "Agent finished: runtime=58.0s, timed_out=False, resumes=0"),
    )
    sup = make()
    sup.poll_once()
    start_work(engine, image, task, "bad", bad, "sleep 1; exit 3")
    start_work(
        engine,
        image,
        task,
        "done",
        done,
        'sleep 1; echo \'{"agent": "claude-code", "task": "x", "best_pass_rate": 0.5}\' '
        "> /run/final_result.json; exit 0",
    )
    start_work(engine, image, task, "drain", drain, "sleep 1; exit 137")
    runs = wait_for(
        sup,
        lambda rs: (
            all(r.container is not None and r.container.state == "exited" for r in rs)
            and by_key(rs, "/done/").status == "finished"
        ),
        timeout=20,
        what="all three exited",
    )
    runs = sup.poll_once()
    b, d, dr = by_key(runs, "/bad/"), by_key(runs, "/done/"), by_key(runs, "/drain/")
    assert b.status == "aborted" and "exit:3" in b.flags and b.active_alarms == ["container_exit"]
    assert "code 3" in b.alarms[-1].message
    assert d.status == "finished" and d.active_alarms == [] and alarm_rules(conn, d.run_key) == []
    # the harness said "Agent finished": an exited container is the drain, not an alarm
    assert dr.status == "running" and dr.active_alarms == [] and alarm_rules(conn, dr.run_key) == []


def test_container_removed_while_running_is_gone(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_gone"
    td = make_run(root, "r1", task)
    c = start_work(engine, image, task, "r1", td, APPEND_LOOP)
    sup = make()
    wait_for(sup, lambda rs: rs and rs[0].container is not None and rs[0].container.state == "running", what="running")
    c.remove(force=True)
    runs = wait_for(sup, lambda rs: rs[0].status == "gone", what="gone")
    r = runs[0]
    assert "gone" in r.flags and r.active_alarms == ["container_gone"]
    assert (
        conn.execute(
            "SELECT count(*) FROM events WHERE run_key = ? AND kind = 'container_state' AND data->>'$.state' = 'gone'",
            [r.run_key],
        ).fetchone()[0]
        == 1
    )
    # a new supervisor (restart) still knows the container vanished
    sup2 = make()
    assert sup2.poll_once()[0].status == "gone"


def test_judge_containers_make_the_run_grading(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_judge"
    td = make_run(root, "r1", task)
    other = make_run(root, "r2", task)  # same task: a judge of r1 must not be given to r2 by its name
    start_work(engine, image, task, "r1", td, "sleep 600")
    start_work(engine, image, task, "r2", other, "sleep 600")
    sid = "a1b2c3d4e5f6"
    (td / "auto_eval_ticks.log").write_text(
        "[" + time.strftime("%Y-%m-%dT%H:%M:%S") + f"] submitted 2048 bytes -> {sid} round=auto-1\n"
    )
    sup = make()
    runs = wait_for(sup, lambda rs: len(rs) == 2 and all(r.status == "running" for r in rs), what="running")
    # 1. an auto round's judge, joined through the tick's submission id
    j1 = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.{sid}", detach=True)
    runs = wait_for(sup, lambda rs: by_key(rs, "/r1/").status == "grading", what="grading")
    r1, r2 = by_key(runs, "/r1/"), by_key(runs, "/r2/")
    assert r1.judges_running == 1 and r1.judges[0].submission_id == sid and r2.status == "running"
    j1.remove(force=True)
    runs = wait_for(sup, lambda rs: by_key(rs, "/r1/").status == "running", what="back to running")
    states = [
        r[0]
        for r in conn.execute(
            "SELECT data->>'$.state' FROM events WHERE run_key = ? AND kind = 'container_state' AND data->>'$.role' = 'judge' "
            "ORDER BY t",
            [r1.run_key],
        ).fetchall()
    ]
    assert states == ["running", "gone"]
    # 2. an agent round's judge, joined through run_instance.log; it goes away without report.json
    j2 = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.0f0f0f0f0f0f", detach=True)
    sub = td / "submissions" / "agent-1"
    sub.mkdir(parents=True)
    (sub / "run_instance.log").write_text(log_line(time.time(), "INFO", f"Judge container started: {j2.id}"))
    runs = wait_for(sup, lambda rs: by_key(rs, "/r1/").judges_running == 1, what="agent judge joined")
    assert by_key(runs, "/r1/").status == "grading" and by_key(runs, "/r1/").grading_rounds == ["agent-1"]
    # 3. a judge of the same task that no submission of any run names: not attributed by name alone
    j3 = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.999999999999", detach=True)
    runs = wait_for(sup, lambda rs: any(c.id == j3.id for c in sup.unattributed), what="unattributed judge")
    assert all(j.id != j3.id for r in runs for j in r.judges)
    j2.remove(force=True)
    runs = wait_for(sup, lambda rs: "grading_failed" in by_key(rs, "/r1/").active_alarms, what="grading_failed")
    assert by_key(runs, "/r1/").status == "running"
    assert "judge container gone" in by_key(runs, "/r1/").alarms[-1].message


def test_actions_stop_kill_and_shell(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_act"
    td = make_run(root, "r1", task)
    td2 = make_run(root, "r2", task)
    c1 = start_work(engine, image, task, "r1", td, "sleep 600")
    c2 = start_work(engine, image, task, "r2", td2, "sleep 600")
    sup = make()
    wait_for(
        sup, lambda rs: len(rs) == 2 and all(r.container and r.container.state == "running" for r in rs), what="running"
    )
    assert sup.shell_command(c1.name) == ["docker", "exec", "-it", c1.name, "sh"]  # busybox: no bash
    assert sup.stop_container(c1.name, timeout=1).startswith("stopped")
    assert sup.kill_container(c2.id).startswith("killed")
    runs = wait_for(sup, lambda rs: all(r.container.state == "exited" for r in rs), what="stopped")
    assert {r.container.name for r in runs} == {c1.name, c2.name}
    assert sup.stop_container("no-such-container-" + token).startswith("could not stop")
    # the operator's own stop/kill: aborted, flagged, recorded, but no container_exit alarm
    runs = wait_for(sup, lambda rs: all(r.status == "aborted" for r in rs), what="aborted")
    r1, r2 = by_key(runs, "/r1/"), by_key(runs, "/r2/")
    assert "stopped" in r1.flags and "killed" in r2.flags
    assert not any(f.startswith("exit:") for f in r1.flags + r2.flags)
    assert r1.active_alarms == [] and r2.active_alarms == []
    assert alarm_rules(conn, r1.run_key) == [] and alarm_rules(conn, r2.run_key) == []
    ops = conn.execute(
        "SELECT data->>'$.operator' FROM events WHERE run_key = ? AND kind = 'container_state' "
        "AND data->>'$.operator' IS NOT NULL",
        [r1.run_key],
    ).fetchall()
    assert ops == [("stop",)]
    # a restart remembers who stopped it
    sup2 = make()
    r1b = by_key(sup2.poll_once(), "/r1/")
    assert r1b.status == "aborted" and "stopped" in r1b.flags and r1b.active_alarms == []
    # look-alike: the same container exiting by itself (not asked) raises container_exit
    c3 = start_work(engine, image, task, "r3", make_run(root, "r3", task), "sleep 1; exit 0")
    runs = wait_for(
        sup,
        lambda rs: by_key(rs, "/r3/") is not None and by_key(rs, "/r3/").active_alarms,
        timeout=20,
        what="r3 exit alarm",
    )
    assert by_key(runs, "/r3/").active_alarms == ["container_exit"] and c3.name == by_key(runs, "/r3/").container.name


def test_submission_folder_whose_judge_never_appears_fails(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_nojudge"
    td = make_run(root, "r1", task)
    start_work(engine, image, task, "r1", td, "sleep 600")
    sup = make(settings=settings(grading_start_grace_s=3))
    wait_for(sup, lambda rs: rs and rs[0].status == "running", what="running")
    # a judge of this run is seen on this engine (judges run here) ...
    j1 = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.0e0e0e0e0e0e", detach=True)
    sub1 = td / "submissions" / "agent-1"
    sub1.mkdir(parents=True)
    (sub1 / "run_instance.log").write_text(log_line(time.time(), "INFO", f"Judge container started: {j1.id}"))
    wait_for(sup, lambda rs: rs[0].judges_running == 1, what="judge joined")
    # ... and a second round's folder never gets one, nor a report
    (td / "submissions" / "agent-2").mkdir(parents=True)
    runs = wait_for(sup, lambda rs: "agent-2" in rs[0].grading_rounds, what="agent-2 grading")
    assert runs[0].active_alarms == []
    runs = wait_for(sup, lambda rs: "grading_failed" in rs[0].active_alarms, timeout=15, what="grading_failed")
    r = runs[0]
    assert r.grading_rounds == ["agent-1"]  # the round whose judge is up is still grading
    assert "no judge container appeared" in r.alarms[-1].message and r.alarms[-1].data["round"] == "agent-2"


class _Flaky:
    """A DockerClient whose engine 'stops' and 'comes back' on demand."""

    def __init__(self, real):
        self.real = real
        self.down = False
        outer = self

        class Api:
            def __getattr__(self, name):
                if outer.down:
                    raise ConnectionError("Connection aborted: [Errno 111] Connection refused")
                return getattr(outer.real.api, name)

        self.api = Api()

    @property
    def containers(self):
        if self.down:
            raise ConnectionError("Connection refused")
        return self.real.containers

    def close(self):
        pass


def test_engine_stopping_and_coming_back(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_flaky"
    td = make_run(root, "r1", task)
    start_work(engine, image, task, "r1", td, APPEND_LOOP)
    flaky = _Flaky(engine)
    sup = make(docker_client=flaky, settings=settings(docker_retry_s=0))
    runs = wait_for(
        sup, lambda rs: rs and rs[0].container is not None and rs[0].container.state == "running", what="running"
    )
    n0 = runs[0].n_events
    flaky.down = True
    runs = wait_for(sup, lambda rs: rs[0].n_events > n0 + 3, what="files still tailed while the engine is down")
    assert runs[0].status == "running"  # no container information: the growth rule
    msgs = [m for m in sup.messages if m.startswith("docker unavailable")]
    assert len(msgs) == 1 and "\n" not in msgs[0] and "refused" in msgs[0]
    flaky.down = False
    runs = wait_for(
        sup,
        lambda rs: (
            not any(m.startswith("docker unavailable") for m in sup.messages) and rs[0].container.state == "running"
        ),
        what="engine back",
    )
    assert runs[0].status == "running" and runs[0].active_alarms == []


@pytest.mark.parametrize("mode", ["auto", "client"])
def test_unreachable_engine_is_a_message_not_an_error(tmp_path, monkeypatch, mode):
    """Needs no engine: DOCKER_HOST / the client point at a socket that does not exist."""
    root = tmp_path / "runs"
    td = root / "r1" / "t1"
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text(log_line(time.time(), "INFO", "Images ready"))
    conn = open_db(tmp_path / "x.duckdb")
    sock = f"unix://{tmp_path}/no-such-docker.sock"
    monkeypatch.setenv("DOCKER_HOST", sock)
    client = "auto" if mode == "auto" else docker.DockerClient(base_url=sock, version="1.41", timeout=2)
    sup = Supervisor(conn, [root], docker_client=client, settings=settings(docker_retry_s=0))
    for _ in range(2):
        runs = sup.poll_once()
        assert [r.status for r in runs] == ["running"]
        msgs = [m for m in sup.messages if m.startswith("docker unavailable")]
        assert len(msgs) == 1 and "\n" not in msgs[0] and len(msgs[0]) < 200, sup.messages
    sup.close()
    conn.close()


def test_judge_history_polled_with_the_work_container_token(live, engine, image, token, monkeypatch, tmp_path):
    """A stand-in judge (stdlib HTTP server on 127.0.0.1) answers /history; the token comes from the
    work container's environment, the admin secret from <log_dir>/.judge-admin-secret."""
    import http.server

    root, conn, make = live
    monkeypatch.delenv("SFORGE_ADMIN_SECRET", raising=False)
    (tmp_path / ".judge-admin-secret").write_text("adm1n-s3cret-value\n")
    seen: list[str] = []
    auth: list[tuple] = []
    history = {
        "run_id": "r1",
        "best_score": None,
        "best_pass_rate": 0.0,
        "best_round": "",
        "agent_submissions": 2,
        "auto_submissions": 0,
        "entries": [
            {"type": "submission", "status": "completed", "round": "agent-1", "error": "grading thread raised"},
            {
                "type": "submission",
                "status": "completed",
                "round": "agent-2",
                "pass_rate": 0.0,
                "total_tests": 0,
                "summary": None,
            },
        ],
    }

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.command + " " + self.path)
            auth.append((self.headers.get("Authorization"), self.headers.get("X-SForge-Admin-Secret")))
            body = json.dumps(history).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            seen.append(self.command + " " + self.path)
            self.send_response(405)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        task = f"{token}_hist"
        td = make_run(root, "r1", task)
        tok = uuid.uuid4().hex
        # the agent echoes its token into the transcript: it must be scrubbed
        echo = json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": "m9",
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"my token is {tok}"}],
                },
                "session_id": "s1",
            }
        )
        engine.containers.run(
            image,
            ["sh", "-c", f"sleep 1; echo '{echo}' >> /run/agent_output.txt; sleep 600"],
            name=f"sforge.run.{task}.r1",
            detach=True,
            environment={"SFORGE_TOKEN": tok},
            volumes={str(td): {"bind": "/run", "mode": "rw"}},
        )
        sup = make(judge_url=f"http://127.0.0.1:{srv.server_address[1]}", settings=settings(judge_interval_s=0.5))
        runs = wait_for(
            sup,
            lambda rs: {"judge_error", "grading_failed"} <= set(rs[0].active_alarms),
            timeout=15,
            what="history alarms",
        )
        r = runs[0]
        got = {a.data.get("round"): a.rule for a in r.alarms}
        assert got == {"agent-1": "judge_error", "agent-2": "grading_failed"}
        # the header form (tried first, accepted here): nothing secret in the request line
        assert seen and all(x == "GET /api/v1/history" for x in seen)
        assert set(auth) == {(f"Bearer {tok}", "adm1n-s3cret-value")}
        wait_for(sup, lambda rs: rs[0].n_events >= 2, what="echo line")
        time.sleep(1.5)
        sup.poll_once()
        for table in ("events", "runs", "source_cursors", "submissions"):
            hits = conn.execute(
                f"SELECT count(*) FROM {table} t WHERE CAST(t AS VARCHAR) LIKE ?", [f"%{tok}%"]
            ).fetchone()[0]
            assert hits == 0, table
            hits = conn.execute(
                f"SELECT count(*) FROM {table} t WHERE CAST(t AS VARCHAR) LIKE ?", ["%adm1n-s3cret%"]
            ).fetchone()[0]
            assert hits == 0, table
        assert (
            conn.execute(
                "SELECT count(*) FROM events WHERE run_key = ? AND CAST(data AS VARCHAR) LIKE "
                "'%my token is <redacted>%'",
                [r.run_key],
            ).fetchone()[0]
            == 1
        )
        assert all(tok not in m and "adm1n" not in m for m in sup.messages)
        # what the judge says is shown beside what the files say
        r = sup.poll_once()[0]
        assert r.judge_says and "2 agent + 0 auto graded" in r.judge_says
        # polls are rare (every 5 minutes by default) and once after each new submission folder
        sup2 = make(judge_url=f"http://127.0.0.1:{srv.server_address[1]}")
        wait_for(sup2, lambda rs: rs and rs[0].judge_says is not None, timeout=15, what="first poll")
        n = len(seen)
        for _ in range(5):
            sup2.poll_once()
            time.sleep(0.2)
        assert len(seen) == n  # nothing due within 5 minutes
        (td / "submissions" / "agent-3").mkdir(parents=True)
        wait_for(sup2, lambda rs: len(seen) > n, timeout=15, what="a poll after the new submission folder")
        assert len(seen) == n + 1
    finally:
        srv.shutdown()
        srv.server_close()


def test_game_container_joined_to_the_game_run_of_its_task(live, engine, image, token):
    root, conn, make = live
    task = f"{token}_game"
    td = make_run(root, "g1", task)
    (td / "submissions" / "game-1").mkdir(parents=True)
    (td / "submissions" / "game-1" / "steps.jsonl").write_text(
        json.dumps(
            {
                "move": 1,
                "action": "look",
                "observation": "a room",
                "score": 0,
                "peak_score": 0,
                "max_score": 10,
                "done": False,
            }
        )
        + "\n"
    )
    start_work(engine, image, task, "g1", td, "sleep 600")
    sup = make()
    wait_for(sup, lambda rs: rs and rs[0].container is not None, what="work container")
    engine.containers.run(image, ["sleep", "600"], name=f"sforge.game.{task}.5e55107a1b2c", detach=True)
    runs = wait_for(sup, lambda rs: rs[0].games_running == 1, what="game container joined")
    assert runs[0].status == "running"  # an open game session is not a grading
    assert (
        conn.execute(
            "SELECT count(*) FROM events WHERE run_key = ? AND kind = 'container_state' AND data->>'$.role' = 'game'",
            [runs[0].run_key],
        ).fetchone()[0]
        == 1
    )


def test_a_judge_whose_report_is_written_is_done_and_a_drained_work_container_is_a_normal_end(
    live, engine, image, token
):
    """SForge's containers ignore SIGTERM and are killed ~15 s later: a judge container still up
    after its submission's report.json is written is not "grading", and a work container killed
    (exit 137) after "Agent finished" is no exit / gone flag; an OOM kill is told by OOMKilled."""
    root, conn, make = live
    task = f"{token}_drain"
    td = make_run(root, "r1", task, log=log_line(time.time() - 60, "INFO", "Running agent: claude -p x"))
    start_work(engine, image, task, "r1", td, "sleep 600")
    sup = make()
    wait_for(sup, lambda rs: rs and rs[0].status == "running", what="running")
    judge = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.0d0d0d0d0d0d", detach=True)
    sub = td / "submissions" / "agent-1"
    sub.mkdir(parents=True)
    (sub / "run_instance.log").write_text(log_line(time.time(), "INFO", f"Judge container started: {judge.id}"))
    wait_for(sup, lambda rs: rs[0].status == "grading", what="grading")
    (sub / "report.json").write_text(
        json.dumps(
            {"total_tests": 2, "passed": 2, "failed": 0, "errors": 0, "pass_rate": 1.0, "submitted_at": time.time() - 5}
        )
    )
    runs = wait_for(sup, lambda rs: rs[0].status == "running", timeout=10, what="graded: done although the judge is up")
    assert judge.reload() is None and judge.status == "running" and runs[0].judges_running == 0
    # the harness ends the run: "Agent finished", then its container is killed (exit 137)
    with open(td / "run_agent.log", "a") as f:
        f.write(log_line(time.time(), "INFO", "Agent finished: runtime=60.0s, timed_out=False, resumes=0"))
    sup.poll_once()
    w = engine.containers.get(f"sforge.run.{task}.r1")
    w.kill()
    runs = wait_for(sup, lambda rs: rs[0].container is not None and rs[0].container.state == "exited", what="killed")
    r = runs[0]
    assert r.container.exit_code == 137 and not r.container.oom_killed
    assert not any(f.startswith("exit:") or f == "gone" for f in r.flags), r.flags
    assert r.active_alarms == []


def test_a_managed_sandbox_run_has_no_container_and_no_container_or_judge_alarms(live, engine, image, token):
    """A run on newer SForge's managed-sandbox (E2B) backend (docs/sforge-judge.md, "Managed
    sandboxes"): its work and judge "containers" are remote sandboxes no engine lists. Beside a Docker
    run whose judge this engine lists, its submission folder without report.json is still grading
    (not "no judge container appeared"), and a container of its work container's name that comes and
    goes (a stale one from an earlier Docker run of the same id) is never its container: no
    container_gone."""
    root, conn, make = live
    task = f"{token}_sbx"
    docker_td = make_run(root, "rd", task)
    start_work(engine, image, task, "rd", docker_td, "sleep 600")
    sid = "b1c2d3e4f5a6"
    (docker_td / "auto_eval_ticks.log").write_text(
        "[" + time.strftime("%Y-%m-%dT%H:%M:%S") + f"] submitted 2048 bytes -> {sid} round=auto-1\n"
    )
    e2b_td = make_run(
        root, "re", task, log=log_line(time.time() - 5, "INFO", "Running agent: claude -p x... (timeout=86400s)")
    )
    (e2b_td / "run_config.json").write_text(json.dumps({"task_id": task, "backend": "e2b", "timeout": 86400}))
    (e2b_td / "submissions" / "agent-1").mkdir(parents=True)
    sup = make(settings=settings(grading_start_grace_s=0))
    engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.{sid}", detach=True)
    runs = wait_for(sup, lambda rs: by_key(rs, "/rd/").status == "grading", what="the Docker run grading")
    stale = start_work(engine, image, task, "re", None, "sleep 600")
    for _ in range(3):
        runs = sup.poll_once()
    e = by_key(runs, "/re/")
    assert e.container is None and e.status == "grading" and e.grading_rounds == ["agent-1"]
    stale.remove(force=True)
    for _ in range(3):
        runs = sup.poll_once()
    e = by_key(runs, "/re/")
    assert e.status == "grading" and "gone" not in e.flags and e.active_alarms == []
    assert alarm_rules(conn, e.run_key) == []
