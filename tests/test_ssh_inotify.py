"""The SSH feed's fast path: the host's ``inotifywait`` (over one exec channel of the one
connection, against a real OpenSSH sshd on 127.0.0.1) kicks a sync as soon as a run file
changes, long before the stat intervals would; without it the intervals alone decide."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import prereqs
from sshd_fixture import Sshd

from edgetui.hosts.config import HostConfig
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.ssh import SshHost

INTERVAL_S = 60.0  # the stat intervals: far beyond the test's waits, so only inotifywait can be quick


@pytest.fixture
def sshd(tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    prereqs.need("inotifywait")
    s = Sshd(prereqs.need("sshd"), tmp_path / "sshd").start()
    yield s
    s.close()


def _feed(s: Sshd, tmp_path: Path, runs: Path, use_inotify: bool) -> RemoteFeed:
    kh = tmp_path / "known_hosts"
    s.known_hosts(kh)
    host = SshHost(
        "box",
        f"{s.user}@127.0.0.1:{s.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(s.user_key)],
        connect_timeout=10,
        backoff_min=0.1,
        backoff_max=0.5,
    )
    return RemoteFeed(
        HostConfig("box", host.target, (str(runs),)),
        host=host,
        cache=tmp_path / "cache",
        min_interval_s=INTERVAL_S,
        max_interval_s=INTERVAL_S,
        use_inotify=use_inotify,
    )


def _wait(pred, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def _append_and_time(feed: RemoteFeed, remote: Path, image: Path, timeout: float) -> float | None:
    """Append a line to the remote transcript; seconds until the image holds it (None: not in time)."""
    with open(remote, "ab") as f:
        f.write(b'{"type":"assistant","n":2}\n')
    t0 = time.monotonic()
    ok = _wait(lambda: image.exists() and image.read_bytes().endswith(b'"n":2}\n'), timeout)
    return time.monotonic() - t0 if ok else None


@pytest.mark.parametrize("use_inotify", [True, False], ids=["inotifywait", "intervals-only"])
def test_a_change_on_the_host_reaches_the_image_through_inotifywait(sshd, tmp_path, use_inotify):
    runs = tmp_path / "remote" / "logs" / "runs"
    td = runs / "run-1" / "task_a"
    td.mkdir(parents=True)
    remote = td / "agent_output.txt"
    remote.write_bytes(b'{"type":"assistant","n":1}\n')
    feed = _feed(sshd, tmp_path, runs, use_inotify)
    image = feed.mirrors[0].local_root / "run-1" / "task_a" / "agent_output.txt"
    feed.start()
    try:
        assert _wait(lambda: feed.syncs >= 1 and image.exists(), 20), feed.last_error  # the first sync
        if use_inotify:
            assert _wait(lambda: feed.inotify, 10)
            time.sleep(1.0)  # inotifywait sets up its watches (it is quiet under -q)
            took = _append_and_time(feed, remote, image, timeout=8)
            assert took is not None and took < 5, took
            assert feed.inotify  # still watching: it was the notice, not an error fallback
        else:
            took = _append_and_time(feed, remote, image, timeout=3)
            assert took is None  # the intervals (60 s) have not come round: nothing else syncs
            assert not feed.inotify and feed.syncs == 1
    finally:
        feed.close()
