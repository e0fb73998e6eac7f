"""The SSH feed's fast path: the host's ``inotifywait`` (over one exec channel of the one
connection, against a real OpenSSH sshd on 127.0.0.1) kicks a sync as soon as a run file
changes, long before the stat intervals would; without it the intervals alone decide."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import prereqs
from sshd_fixture import Sshd
from waits import wait_for

from edgetui.hosts.config import HostConfig
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.ssh import SshHost

INTERVAL_S = 60.0  # the stat intervals: far beyond the test's waits, so only inotifywait can be quick


@pytest.fixture
def sshd(start_sshd):
    prereqs.need("inotifywait")
    return start_sshd()


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


LINE = b'{"type":"assistant","n":2}\n'


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
        wait_for(lambda: feed.syncs >= 1 and image.exists(), 20, "the first sync", describe=lambda: feed.last_error)
        if use_inotify:
            # inotifywait running, its watches set up (it is quiet under -q: the feed's on_ready says so) and
            # the full sync that follows them requested: from then on its reports are complete
            wait_for(
                lambda: feed.inotify and feed._watch_ready and not feed._need_full,
                10,
                "inotifywait's watches set up",
                describe=lambda: feed.last_error,
            )
            path0 = feed.path_syncs
            with open(remote, "ab") as f:
                f.write(LINE)
            # brought by a sync of the reported path (only inotifywait's reports make those), well within
            # the stat intervals (60 s): not by the intervals
            wait_for(
                lambda: feed.path_syncs > path0 and image.read_bytes().endswith(LINE),
                INTERVAL_S / 2,
                "the appended line synced by its reported path",
                describe=lambda: (feed.path_syncs, feed.full_syncs, feed.last_error),
            )
            assert feed.inotify  # still watching: it was the notice, not an error fallback
        else:
            with open(remote, "ab") as f:
                f.write(LINE)
            time.sleep(3.0)  # part of the test: a window in which nothing may bring the line
            assert not image.read_bytes().endswith(LINE)  # the intervals (60 s) have not come round
            assert not feed.inotify and feed.syncs == 1
    finally:
        feed.close()


def _inotifywaits(path: Path) -> list[int]:
    """The host's inotifywait processes watching ``path`` (any parent: one left behind has parent 1)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"inotifywait") and str(path).encode() in argv:
            try:
                if (d / "stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
                    continue
            except (OSError, IndexError):
                continue
            out.append(int(d.name))
    return out


def test_the_hosts_inotifywait_ends_with_its_session_on_quit_and_on_reconnects(sshd, tmp_path):
    """``inotifywait -m`` writes only when something changes: a session that ends (sshd killed, a
    reconnect, the feed closed) must take it along, not leave it with parent 1 (issue 36 item 10).
    Counted on the host before and after two reconnects and the quit."""
    runs = tmp_path / "remote" / "logs" / "runs"
    (runs / "run-1" / "task_a").mkdir(parents=True)
    (runs / "run-1" / "task_a" / "agent_output.txt").write_bytes(LINE)
    assert _inotifywaits(runs) == []
    feed = _feed(sshd, tmp_path, runs, True)
    feed.start()

    def watching() -> bool:
        return feed.inotify and feed._watch_ready

    try:
        wait_for(watching, 20, "inotifywait's watches set up", describe=lambda: feed.last_error)
        first = _inotifywaits(runs)
        assert len(first) == 1
        for _ in range(2):
            sshd.kill_all()  # the connection and its session gone at once
            wait_for(lambda: not watching(), 15, "the watch ended with the connection")
            sshd.start()
            feed.host.reconnect_now()
            wait_for(watching, 20, "watching again after the reconnect", describe=lambda: feed.host.state)
            wait_for(
                lambda: len(_inotifywaits(runs)) == 1,
                15,
                "one inotifywait on the host, the old session's gone",
                describe=lambda: _inotifywaits(runs),
            )
        assert _inotifywaits(runs) != first
    finally:
        feed.close()
    wait_for(
        lambda: _inotifywaits(runs) == [],
        15,
        "no inotifywait left after the quit",
        describe=lambda: _inotifywaits(runs),
    )
