"""The remote Docker engine through /var/run/docker.sock forwarded over the host's SSH connection: this
machine's real engine behind a real OpenSSH sshd on 127.0.0.1, driven by DockerWatch (listing,
joining by name, stop, kill) as for the local engine; the forward comes back after a reconnect."""

from __future__ import annotations

import uuid

import pytest

from docker_images import remove_containers
from waits import wait_for

from edgetui.hosts.engine import remote_docker_client
from edgetui.hosts.ssh import UP, SshHost
from edgetui.hosts.docker_watch import DockerWatch


@pytest.mark.sshd
def test_remote_engine_lists_joins_and_stops_containers_over_the_ssh_connection(engine, image, tmp_path, start_sshd):
    tok = "edt" + uuid.uuid4().hex[:8]
    s = start_sshd()
    host = SshHost(
        "box",
        f"{s.user}@127.0.0.1:{s.port}",
        config=[],
        known_hosts=str(s.known_hosts(tmp_path / "kh")),
        client_keys=[str(s.user_key)],
        backoff_min=0.1,
        backoff_max=0.5,
        connect_timeout=10,
    )
    try:
        assert host.wait_up(10).kind == UP
        work = engine.containers.run(image, ["sleep", "600"], name=f"sforge.run.tiny_stats.{tok}", detach=True)
        judge = engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.tiny_stats.{tok}abc", detach=True)
        client = remote_docker_client(host)
        watch = DockerWatch(client, host="box")
        assert watch.refresh(), watch.error
        w = watch.by_name[f"sforge.run.tiny_stats.{tok}"]
        j = watch.by_name[f"edgebench.judge.tiny_stats.{tok}abc"]
        assert (w.role, w.task_id, w.run_id, w.state, w.host) == ("work", "tiny_stats", tok, "running", "box")
        assert (j.role, j.submission_id) == ("judge", f"{tok}abc")
        # the route is the SSH connection: with sshd gone the forwarded engine is unreachable ...
        s.kill_all()
        wait_for(lambda: host.state.kind != UP, 20, "the host down with its sshd", 0.1, describe=lambda: host.state)
        assert not watch.refresh() and "docker unavailable" in (watch.error or "")
        # ... and after the reconnect it is back (the forward is set up again on the new connection)
        s.start()
        host.reconnect_now()
        wait_for(lambda: host.state.kind == UP, 20, "the host up again", 0.1, describe=lambda: host.state)
        watch.retry_s = 0
        wait_for(lambda: watch.refresh(), 20, "the forwarded engine listed again", 0.1, describe=lambda: watch.error)
        out = watch.stop_container(w.name, timeout=1)
        assert "could not" not in out, out
        work.reload()
        assert work.status == "exited"
        out = watch.kill_container(j.name)
        assert "could not" not in out, out
        judge.reload()
        assert judge.status == "exited"
        assert watch.refresh() and watch.by_name[w.name].state == "exited"
        watch.close()
        client.close()
    finally:
        remove_containers(engine, tok)
        host.close()
        s.close()
