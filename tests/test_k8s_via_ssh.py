"""A cluster reached through an SSH host (``[clusters.X] via = "host"``): its kubeconfig read over
the host's SFTP, the API server's address (as the host sees it) forwarded over the host's one
connection, the pods watched through the real lightkube client. A real OpenSSH sshd on 127.0.0.1
and the fake API server (tests/fake_kube_api.py: no real one can run here)."""

from __future__ import annotations

import pytest

from fake_kube_api import FakeKubeApi, sforge_pod
from test_ssh_host import host_for
from waits import wait_for

from edgetui.hosts.cluster_config import ClusterConfig
from edgetui.hosts.pod_watch import PodEngine
from edgetui.hosts.ssh import UP


@pytest.mark.sshd
def test_a_cluster_via_an_ssh_host_is_watched_through_its_connection(sshd, tmp_path):
    api = FakeKubeApi().start()
    remote_kc = api.kubeconfig(tmp_path / "on-the-host-kubeconfig", context="host-ctx")  # a path on the host
    api.put(sforge_pod("run-gitlet-v1"))
    h = host_for(sshd, tmp_path).start()
    eng = PodEngine(
        [ClusterConfig("pool", str(remote_kc), None, ("sforge",), "hosts.toml", via="box")],
        hosts={"box": h},
        backoff_first_s=0.1,
        events_interval_s=0,
    ).start()
    try:
        wait_for(lambda: h.state.kind == UP, 30, "the host up")
        wait_for(lambda: eng.refresh() and "run-gitlet-v1" in eng.by_name, 30, "the pod through the host")
        key = "pool/sforge"
        server = eng._configs[key].cluster.server
        assert server.startswith("http://127.0.0.1:") and server != api.url  # a local forward, not the API itself
        assert eng.by_name["run-gitlet-v1"].host == key
        api.delete("sforge", "run-gitlet-v1")
        wait_for(lambda: eng.refresh() and "run-gitlet-v1" not in eng.by_name, 30, "the deletion through the host")
        api.put(sforge_pod("run-gitlet-v2"))
        wait_for(lambda: eng.refresh() and "run-gitlet-v2" in eng.by_name, 30, "a new pod")
        argv = eng.shell_command("run-gitlet-v2")
        assert (
            argv[0] == "ssh"
            and "kubectl" in argv
            and argv[-7:] == ["exec", "-it", "run-gitlet-v2", "-c", "work", "--", "sh"]
        )
        assert ["--context", "host-ctx"] == argv[argv.index("--context") : argv.index("--context") + 2]
    finally:
        eng.close()
        h.close()
        api.close()


@pytest.mark.sshd
def test_a_via_host_without_the_kubeconfig_is_down_with_the_reason(sshd, tmp_path):
    h = host_for(sshd, tmp_path).start()
    eng = PodEngine(
        [ClusterConfig("pool", str(tmp_path / "missing"), None, ("sforge",), "hosts.toml", via="box")],
        hosts={"box": h},
        backoff_first_s=0.1,
        events_interval_s=0,
    ).start()
    try:
        wait_for(lambda: eng.host_rows()[0][1] == "down" and "missing" in eng.host_rows()[0][4], 30, "down, said")
        assert eng.refresh() is False
    finally:
        eng.close()
        h.close()
