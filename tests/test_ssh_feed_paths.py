"""Syncs that cost what changed: while the host's ``inotifywait`` reports (a real OpenSSH sshd on
127.0.0.1, the host's real inotify), the feed syncs only the reported paths. Counted at the
server: the bytes OpenSSH's ``sftp-server`` read from disk (``rchar`` of its ``/proc/<pid>/io``)
for one appended line are that line and the overlap, not the tree's other files; the feed did no
full listing for it. New submission folders and removed files reach the image the same way, and
an inotify queue overflow falls back to one full listing."""

from __future__ import annotations

import time

import pytest

import prereqs
from sshd_fixture import rchar as _rchar
from waits import wait_for

from edgetui.hosts.config import HostConfig
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.mirror import OVERLAP
from edgetui.hosts.ssh import OVERFLOW, SshHost

RUNS = 12
BIG = 40_000  # bytes of every other transcript: reading any one of them again would show


@pytest.fixture
def sshd(start_sshd):
    prereqs.need("inotifywait")
    return start_sshd()


@pytest.fixture
def feed(sshd, tmp_path):
    runs = tmp_path / "remote" / "runs"
    for i in range(RUNS):
        td = runs / f"run-{i}" / f"task_{i}"
        td.mkdir(parents=True)
        (td / "agent_output.txt").write_bytes(b'{"type":"assistant","n":0}\n' + b"x" * BIG + b"\n")
        (td / "run_agent.log").write_text("started\n")
    kh = tmp_path / "known_hosts"
    sshd.known_hosts(kh)
    host = SshHost(
        "box",
        f"{sshd.user}@127.0.0.1:{sshd.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(sshd.user_key)],
        connect_timeout=10,
    )
    # intervals far beyond the waits: only a report can bring a change in time
    f = RemoteFeed(
        HostConfig("box", host.target, (str(runs),)),
        host=host,
        cache=tmp_path / "cache",
        min_interval_s=60,
        max_interval_s=60,
        full_every_s=600,
    )
    f.start()
    try:
        wait_for(
            lambda: f._watch_ready and f.full_syncs >= 2 and not f._need_full,
            30,
            "the first sync, then the one once the watches were set up",
            describe=lambda: (f.full_syncs, f.last_error),
        )
        time.sleep(0.5)
        f.remote_runs = runs
        yield f
    finally:
        f.close()


def test_an_appended_line_is_read_alone_at_the_server(feed, sshd):
    image = feed.mirrors[0].local_root / "run-3" / "task_3" / "agent_output.txt"
    remote = feed.remote_runs / "run-3" / "task_3" / "agent_output.txt"
    line = b'{"type":"assistant","n":1}\n'
    full0, path0 = feed.full_syncs, feed.path_syncs
    pids = sshd.sftp_server_pids()
    assert pids, "the SFTP subsystem runs as OpenSSH's sftp-server"
    before = _rchar(pids)
    with open(remote, "ab") as f:
        f.write(line)
    wait_for(lambda: image.read_bytes().endswith(line), 10, "the report to bring the line")
    read = _rchar(pids) - before
    assert image.read_bytes() == remote.read_bytes()
    assert feed.full_syncs == full0, "a full listing ran for one appended line"
    assert feed.path_syncs > path0
    # the line and the overlap before it, plus sftp-server's request packets (open/read/close):
    # far below one other transcript (BIG), which a full re-read of any file would cost
    assert len(line) + OVERLAP <= read < len(line) + OVERLAP + 2048, read


def test_a_new_submission_folder_and_a_removal_arrive_by_path(feed):
    td = feed.remote_runs / "run-5" / "task_5"
    sub = td / "submissions" / "1"
    sub.mkdir(parents=True)
    (sub / "report.json").write_text('{"score": 0.5}')
    (sub / "submission.tar.gz").write_bytes(b"\x1f\x8b" + b"z" * 1000)  # never copied
    (td / "run_agent.log").unlink()
    full0 = feed.full_syncs
    img = feed.mirrors[0].local_root / "run-5" / "task_5"
    wait_for(
        lambda: (img / "submissions" / "1" / "report.json").exists() and not (img / "run_agent.log").exists(),
        10,
        "the new report and the removal in the image",
    )
    assert (img / "submissions" / "1" / "report.json").read_text() == '{"score": 0.5}'
    assert not (img / "submissions" / "1" / "submission.tar.gz").exists()
    assert feed.full_syncs == full0
    # the image's mtimes are the host's (nanoseconds, as a full listing would set them)
    assert (img / "submissions" / "1" / "report.json").stat().st_mtime_ns == (sub / "report.json").stat().st_mtime_ns
    assert img.stat().st_mtime_ns == td.stat().st_mtime_ns


def test_an_overflow_falls_back_to_one_full_listing(feed):
    # the kernel's queue overflow cannot be provoked without root (max_queued_events): its notice is handed in
    full0 = feed.full_syncs
    remote = feed.remote_runs / "run-7" / "task_7" / "agent_output.txt"
    feed._reported({OVERFLOW})
    wait_for(lambda: feed.full_syncs > full0, 10, "a full listing after the overflow")
    assert feed._watch_ready  # still reporting: the next change goes by path again
    path0 = feed.path_syncs
    with open(remote, "ab") as f:
        f.write(b'{"n":2}\n')
    wait_for(lambda: feed.path_syncs > path0, 10, "a sync by path of the appended file")
    assert feed.full_syncs == full0 + 1
