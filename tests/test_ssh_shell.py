"""The host's long-lived sh (edgetui.hosts.shell) against a real OpenSSH sshd: commands run in one
session (not one login per call), output with NUL bytes and the exit status come back exactly,
and after the server is killed and started again a new shell serves the next call, with the
channel budget given back."""

from __future__ import annotations

import time

import pytest

from sshd_fixture import Sshd
from waits import wait_for

from edgetui.hosts.ssh import UP, SshHost


@pytest.fixture
def sshd(start_sshd):
    return start_sshd(extra="LogLevel VERBOSE\n")


def _sessions(s: Sshd) -> int:
    return s.log.read_text().count("Starting session")


def test_kept_shell_runs_each_command_in_one_session_and_survives_a_reconnect(sshd, tmp_path):
    kh = sshd.known_hosts(tmp_path / "kh")
    h = SshHost(
        "box",
        f"{sshd.user}@127.0.0.1:{sshd.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(sshd.user_key)],
        backoff_min=0.1,
        backoff_max=0.5,
        connect_timeout=10,
    )
    try:
        assert h.wait_up(10).kind == UP
        (tmp_path / "d").mkdir()
        (tmp_path / "d" / "a b").write_text("x")
        rc, out, _ = h.run_kept(["find", str(tmp_path / "d"), "-mindepth", "1", "-printf", r"%P\0"])
        assert (rc, out) == (0, b"a b\0")
        assert h.run_kept(["sh", "-c", "printf 'one\\000two'; exit 3"])[:2] == (3, b"one\0two")
        assert h.run_kept(["ls", str(tmp_path / "missing")])[0] != 0  # stderr discarded, status kept
        for i in range(20):
            assert h.run_kept(["echo", str(i)])[1] == f"{i}\n".encode()
        assert h._shell.starts == 1
        # one more session would show up in sshd's log per `run`; the kept shell adds none
        n = _sessions(sshd)
        h.run(["true"])  # an ordinary exec: one more session
        wait_for(
            lambda: _sessions(sshd) == n + 1, 5, "one more session in sshd's log", describe=lambda: (_sessions(sshd), n)
        )
        for _ in range(5):
            h.run_kept(["true"])
        time.sleep(0.3)  # part of the test: a window in which a session opened by run_kept would be logged
        assert _sessions(sshd) == n + 1
        open_before = h._open_channels
        sshd.kill_all()
        wait_for(lambda: h.state.kind != UP, 15, "the host down with its sshd", describe=lambda: h.state)
        sshd.start()
        h.reconnect_now()
        assert h.wait_up(15).kind == UP
        assert h.run_kept(["echo", "back"])[1] == b"back\n"
        assert h._shell.starts == 2 and h._open_channels == open_before
    finally:
        h.close()
