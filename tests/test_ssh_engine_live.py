"""Remote engines joined to remote runs in the live supervisor: two real OpenSSH sshd on 127.0.0.1,
each a "host" whose runs root is followed through its feed and whose Docker engine (this machine's
real engine, the only one here) is reached through /var/run/docker.sock forwarded over that host's
SSH connection, or through the host's docker CLI over exec channels when sshd forbids the
forward. The supervisor has no local engine (``docker_client=None``): every container it joins,
samples, stops or kills came over SSH. Also: the shell through the system ``ssh -t`` in a real
tmux terminal, a file opened from the local image, one host down leaving the other host's runs
live, and the judge URL forwarded over the connection."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

docker = pytest.importorskip("docker")

import waits  # noqa: E402 - after pytest.importorskip("docker") above
from sshd_fixture import Sshd  # noqa: E402 - after pytest.importorskip("docker") above

from edgetui.store.database import open_db  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.remote_hosts import HostLinks  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.hosts.config import HostConfig, load_hosts  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.hosts.feed import RemoteFeed  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.hosts.remote_engine import parse_size  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.hosts.ssh import UP, SshHost  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.alarms import AlarmSettings  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.live.supervisor import Supervisor  # noqa: E402 - after pytest.importorskip("docker") above
from edgetui.views.screens.live_common import SupervisorActions  # noqa: E402 - after pytest.importorskip("docker") above

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
APPEND_LOOP = f"while true; do echo '{TICK}' >> /run/agent_output.txt; sleep 0.3; done"


def _log_line(t: float, msg: str) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",000 - INFO - {msg}\n"


def make_run(root: Path, run_id: str, task: str) -> Path:
    td = root / run_id / task
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text(_log_line(time.time() - 5, "Images ready"))
    (td / "agent_output.txt").write_text(INIT + "\n")
    os.chmod(td, 0o777)
    os.chmod(td / "agent_output.txt", 0o666)
    return td


def start_work(engine, image, task, run_id, td, cmd, tok="f" * 32):
    return engine.containers.run(
        image,
        ["sh", "-c", cmd],
        name=f"sforge.run.{task}.{run_id}",
        detach=True,
        volumes={str(td): {"bind": "/run", "mode": "rw"}},
        environment={"SFORGE_TOKEN": tok},
    )


def _settings(**kw) -> AlarmSettings:
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


def _host(s: Sshd, tmp: Path, name: str) -> SshHost:
    kh = tmp / f"kh-{name}"
    s.known_hosts(kh)
    return SshHost(
        name,
        f"{s.user}@127.0.0.1:{s.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(s.user_key)],
        connect_timeout=10,
        backoff_min=0.1,
        backoff_max=0.5,
        keepalive_interval=1,
        keepalive_count_max=2,
        op_timeout=10,
    )


def wait_for(sup, pred, timeout=30.0, what="condition"):
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
            f"runs: {[(r.run_key, r.status, r.container and (r.container.host, r.container.state)) for r in seen['runs']]}"
            f"; messages: {sup.messages}"
        ),
    )[0]


def by_task(runs, task):
    return next((r for r in runs if r.run_key.endswith("/" + task)), None)


@pytest.fixture
def rig(tmp_path, monkeypatch, start_sshd):
    """make(n, **sshd options) -> (servers, hosts, supervisor, links, roots); everything closed after."""
    monkeypatch.delenv("SFORGE_ADMIN_SECRET", raising=False)
    os.chmod(tmp_path, 0o777)
    made: list = []

    def make(n=2, *, judge_urls=None, engine_mode="auto", settings=None, **sshd_kw):
        servers = [start_sshd(f"sshd{i}", **sshd_kw) for i in range(n)]
        hosts = [_host(s, tmp_path, f"box{i + 1}") for i, s in enumerate(servers)]
        roots = []
        feeds = []
        for i, h in enumerate(hosts):
            root = tmp_path / f"remote{i + 1}" / "logs" / "runs"
            root.mkdir(parents=True)
            roots.append(root)
            cfg = HostConfig(h.name, h.target, (str(root),), (judge_urls or {}).get(h.name), "test", engine_mode)
            feeds.append(
                RemoteFeed(
                    cfg,
                    host=h,
                    cache=tmp_path / f"cache{i + 1}",
                    min_interval_s=0.2,
                    max_interval_s=0.5,
                    use_inotify=False,
                )
            )
        conn = open_db(tmp_path / "live.duckdb")
        sup = Supervisor(
            conn, [r for f in feeds for r in f.roots()], docker_client=None, settings=settings or _settings()
        )
        links = HostLinks(feeds, engine_options=dict(interval_s=0.3, stats_interval_s=1)).attach(sup)
        made.append((servers, links, sup, conn))
        return servers, hosts, sup, links, roots

    yield make
    for servers, links, sup, conn in made:
        links.close()
        sup.close()
        conn.close()
        for s in servers:
            s.close()


def test_remote_work_and_judge_containers_joined_stopped_and_killed_over_ssh(rig, engine, image, token, tmp_path):
    servers, (h1, h2), sup, links, (root1, root2) = rig(2)
    ta, tb = f"{token}_a", f"{token}_b"
    td_a = make_run(root1, "r1", ta)
    td_b = make_run(root2, "r1", tb)
    sid = "a1b2c3d4e5f6"
    (td_a / "auto_eval_ticks.log").write_text(
        "[" + time.strftime("%Y-%m-%dT%H:%M:%S") + f"] submitted 2048 bytes -> {sid} round=auto-1\n"
    )
    wa = start_work(engine, image, ta, "r1", td_a, APPEND_LOOP)
    wb = start_work(engine, image, tb, "r1", td_b, APPEND_LOOP)
    judge = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{ta}.{sid}", detach=True)
    links.start()
    assert h1.wait_up(10).kind == UP and h2.wait_up(10).kind == UP
    runs = wait_for(
        sup,
        lambda rs: (
            len(rs) == 2
            and all(r.container and r.container.state == "running" for r in rs)
            and by_task(rs, ta).judges_running == 1
        ),
        what="both work containers and the judge joined",
    )
    a, b = by_task(runs, ta), by_task(runs, tb)
    # joined from the engine of the run's own host (the container says which engine listed it)
    assert (a.run_key.split("/")[0], a.container.host, a.container.id) == ("box1", "box1", wa.id)
    assert (b.run_key.split("/")[0], b.container.host, b.container.id) == ("box2", "box2", wb.id)
    assert a.status == "grading" and [j.id for j in a.judges] == [judge.id] and a.judges[0].host == "box1"
    assert b.status == "running" and b.judges == []
    # CPU and memory samples of remote work containers (one-shot stats through the forwarded socket)
    runs = wait_for(sup, lambda rs: all(r.container.mem_bytes for r in rs), what="resource samples")
    assert all(0 < r.container.mem_bytes < 2**30 for r in runs)
    assert links.engines["box1"].route == "socket" and links.engines["box2"].route == "socket"
    # the file a pager would open is the local image's copy of the remote file
    acts = SupervisorActions(sup)
    p = acts.file_path(a.run_key, "agent_output.txt")
    assert p is not None and str(tmp_path / "cache1") in str(p) and p.read_bytes().startswith(INIT.encode())

    # one host down: the other host's run stays live (grows, its container still listed and sampled)
    servers[1].kill_all()
    waits.wait_for(lambda: h2.state.kind != UP, 15, "box2 down with its sshd", describe=lambda: h2.state)
    n0 = by_task(sup.poll_once(), ta).n_events
    listed0 = links.engines["box1"].listings
    runs = wait_for(
        sup,
        lambda rs: by_task(rs, ta).n_events > n0 + 3 and links.engines["box1"].listings > listed0 + 3,
        what="box1 still live while box2 is down",
    )
    a, b = by_task(runs, ta), by_task(runs, tb)
    assert a.status == "grading" and a.container.state == "running"
    assert b.status == "running" and b.host_state not in (UP, None)  # quiet for now, not "gone" or "aborted"
    assert any(m.startswith("box2: engine unreachable") for m in sup.messages), sup.messages

    # actions go through the host's connection: box2's container (on the one real engine here,
    # which a local route would reach) cannot be stopped while box2's sshd is gone
    out = sup.stop_container(wb.name, timeout=1)
    assert out.startswith("could not stop"), out
    wb.reload()
    assert wb.status == "running"
    # stop and kill through box1's SSH connection (the supervisor has no other engine): the
    # engine's client talks to the Unix socket box1's connection forwards to /var/run/docker.sock
    eng1 = links.engines["box1"]
    fwd = {local for local, remote in h1._forwards.items() if remote == "/var/run/docker.sock"}
    assert len(fwd) == 1 and eng1._client.api.base_url.startswith("http+docker://")
    assert eng1._client.api._custom_adapter.socket_path == next(iter(fwd))
    assert acts.stop(a.run_key).startswith("stopped")
    wa.reload()
    assert wa.status == "exited"
    assert sup.kill_container(judge.id).startswith("killed")
    judge.reload()
    assert judge.status == "exited"
    runs = wait_for(sup, lambda rs: by_task(rs, ta).status == "aborted", what="box1 run aborted by the operator")
    a = by_task(runs, ta)
    assert "stopped" in a.flags and a.active_alarms == []
    ops = sup.conn.execute(
        "SELECT data->>'$.operator', data->>'$.host' FROM events WHERE run_key = ? AND "
        "kind = 'container_state' AND data->>'$.operator' IS NOT NULL",
        [a.run_key],
    ).fetchall()
    assert ops == [("stop", "box1")]
    # box2 comes back: its run's container is joined again from its own engine
    servers[1].start()
    h2.reconnect_now()
    runs = wait_for(
        sup,
        lambda rs: by_task(rs, tb).container.state == "running" and by_task(rs, tb).host_state == UP,
        what="box2 back",
    )
    assert by_task(runs, tb).container.host == "box2"


def test_shell_is_ssh_t_docker_exec_in_a_real_terminal(rig, engine, image, token, tmp_path):
    servers, (h1,), sup, links, (root1,) = rig(1)
    task = f"{token}_sh"
    td = make_run(root1, "r1", task)
    w = start_work(engine, image, task, "r1", td, "sleep 600")
    links.start()
    runs = wait_for(sup, lambda rs: rs and rs[0].container and rs[0].container.state == "running", what="joined")
    argv = SupervisorActions(sup).shell_argv(runs[0].run_key)
    assert argv[:2] == ["ssh", "-t"] and argv[-1] == f"docker exec -it {w.id} sh"  # busybox: no bash
    assert f"{servers[0].user}@127.0.0.1" in argv and str(servers[0].port) in argv
    # a real terminal: the operator types in the container's shell through the second login
    sock = f"edgetui-ssh-{token}"
    mark = f"shell-{token}"
    import shlex

    subprocess.run(
        ["tmux", "-L", sock, "new-session", "-d", "-x", "80", "-y", "24", " ".join(shlex.quote(a) for a in argv)],
        check=True,
    )
    try:
        pane = {"text": ""}

        def prompt() -> bool:
            pane["text"] = subprocess.run(
                ["tmux", "-L", sock, "capture-pane", "-p"], capture_output=True, text=True
            ).stdout
            return "#" in pane["text"] or "$" in pane["text"]

        waits.wait_for(prompt, 10, "the container shell's prompt", 0.1, describe=lambda: pane["text"])
        subprocess.run(["tmux", "-L", sock, "send-keys", f"echo {mark} > /tmp/mark; exit", "Enter"], check=True)
        waits.wait_for(
            lambda: w.exec_run(["cat", "/tmp/mark"]).output.strip() == mark.encode(),
            15,
            "the mark written by the shell in the container",
            describe=lambda: pane["text"],
        )
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)


def test_docker_cli_fallback_when_sshd_forbids_the_socket_forward(rig, engine, image, token, tmp_path):
    servers, (h1,), sup, links, (root1,) = rig(1, stream_local=False)
    task = f"{token}_cli"
    td = make_run(root1, "r1", task)
    w = start_work(engine, image, task, "r1", td, APPEND_LOOP)
    links.start()
    runs = wait_for(
        sup,
        lambda rs: rs and rs[0].container and rs[0].container.state == "running" and rs[0].container.mem_bytes,
        what="joined and sampled through the docker CLI",
    )
    eng = links.engines["box1"]
    assert eng.route == "cli" and eng.state_text() == "up (cli)"
    r = runs[0]
    assert (r.container.id, r.container.host, r.container.role) == (w.id, "box1", "work")
    assert r.container.started_at and abs(r.container.started_at - time.time()) < 120  # from docker inspect
    assert 0 < r.container.mem_bytes < 2**30
    assert eng.token_of(w.id) == "f" * 32  # the token, from the inspect's environment
    assert sup.kill_container(w.name).startswith("killed")
    w.reload()
    assert w.status == "exited"
    runs = wait_for(sup, lambda rs: rs[0].container.state == "exited", what="exit seen through the CLI")
    assert "killed" in runs[0].flags
    assert sup.stop_container("no-such-" + token).startswith("could not stop")


def test_engine_mode_from_the_hosts_file_and_docker_sizes(tmp_path):
    f = tmp_path / "hosts.toml"
    f.write_text('[hosts.a]\nroots = ["/r"]\nengine = "cli"\n[hosts.b]\nroots = ["/r"]\n')
    assert [h.engine for h in load_hosts(f)] == ["cli", "auto"]
    f.write_text('[hosts.a]\nroots = ["/r"]\nengine = "ssh"\n')
    with pytest.raises(ValueError, match=r"\[hosts.a\]: engine must be one of auto, socket, cli, none"):
        load_hosts(f)
    assert parse_size("1.5MiB") == 1572864 and parse_size("12kB") == 12000 and parse_size("0B") == 0
    assert parse_size("--") is None


def test_judge_url_only_reachable_from_the_host_is_forwarded(rig, engine, image, token, tmp_path):
    """The judge listens on 127.0.0.1 "of the host"; the poller of that host's runs reaches it through
    a local port forwarded over the host's connection (no route once sshd is gone), with the admin
    secret read over SFTP beside the host's runs root."""
    seen: list[str] = []
    auth: list[tuple] = []
    history = {
        "run_id": "r1",
        "best_score": None,
        "best_pass_rate": 0.5,
        "best_round": "agent-1",
        "agent_submissions": 1,
        "auto_submissions": 0,
        "entries": [
            {
                "type": "submission",
                "status": "completed",
                "round": "agent-1",
                "pass_rate": 0.5,
                "total_tests": 2,
                "summary": {"passed": 1},
            }
        ],
    }

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            auth.append((self.headers.get("Authorization"), self.headers.get("X-SForge-Admin-Secret")))
            body = json.dumps(history).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    judge_url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        servers, (h1,), sup, links, (root1,) = rig(
            1, judge_urls={"box1": judge_url}, settings=_settings(judge_interval_s=0.5)
        )
        (root1.parent / ".judge-admin-secret").write_text("rem0te-adm1n-secret\n")
        task = f"{token}_judge"
        td = make_run(root1, "r1", task)
        tok = uuid.uuid4().hex
        start_work(engine, image, task, "r1", td, "sleep 600", tok=tok)
        poller = links.judges["box1"]
        assert poller.url != judge_url and poller.url.startswith("http://127.0.0.1:")
        links.start()
        runs = wait_for(
            sup,
            lambda rs: rs and rs[0].judge_says and "1 agent + 0 auto graded" in rs[0].judge_says,
            what="the judge's history through the forward",
        )
        # the header form (tried first, accepted here), with the secret read over SFTP
        assert seen and seen[0] == "/api/v1/history" and auth[0] == (f"Bearer {tok}", "rem0te-adm1n-secret")
        assert "best agent-1" in runs[0].judge_says
        # the route is the SSH connection: with sshd gone the poller's URL leads nowhere
        servers[0].kill_all()
        waits.wait_for(lambda: h1.state.kind != UP, 15, "box1 down with its sshd", describe=lambda: h1.state)
        import urllib.request

        with pytest.raises(OSError):
            urllib.request.urlopen(poller.url + "/api/v1/history", timeout=3)
        urllib.request.urlopen(judge_url + "/api/v1/history", timeout=3).read()  # the judge itself is up
    finally:
        srv.shutdown()
