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
