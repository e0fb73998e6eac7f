"""A host that drops, stalls or half-answers is never read as "files deleted" (issue 36 item 9).

A real OpenSSH sshd serves a finished genuine run; a live supervisor watches its image through a
:class:`~edgetui.hosts.feed.RemoteFeed`. Then faults are injected at each step of a sync, on the
server's side, again and again: the remote ``find`` (a wrapper first on the session's ``PATH``,
set by sshd's ``SetEnv``) answers a listing cut mid-record, a listing of half the records with
exit 1 (a directory unreadable), kills its own connection's sshd halfway through its output, or
stalls while the whole sshd is stopped (SIGSTOP: no answer at all); the sshd is killed outright
between syncs; a server with ``MaxSessions 1`` refuses every exec channel. The reads of a grown
file meet an sshd killed just before them (the one step a server-side trigger cannot reach: a
monkeypatched ``read_files`` kills the sshd, then reads). After every fault: nothing removed from
the image, the run never marked deleted, never shown running, no alarm raised.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

import prereqs
from sshd_fixture import Sshd
from waits import wait_for

from edgetui.store.database import open_db
from edgetui.hosts.config import HostConfig
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.mirror import Mirror
from edgetui.hosts.ssh import UP, SshHost

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
TZ = "real-tz-20261201182000"
SRC = GENUINE / "runs" / TZ / "tiny_stats"
TASKS = GENUINE / "tasks"

#: the remote ``find``: the real one unless the control file names a fault (read once: the next
#: listing only). ``stall`` says so in a file, then waits for the test to stop the server.
FAKE_FIND = """#!{python}
import os, signal, subprocess, sys, time
ctl = {ctl!r}
try:
    with open(ctl) as f:
        mode = f.read().strip()
    os.unlink(ctl)
except OSError:
    mode = ""
real = subprocess.run(["/usr/bin/find", *sys.argv[1:]], stdout=subprocess.PIPE)
out, out_fd = real.stdout, sys.stdout.buffer
if not mode:
    out_fd.write(out); out_fd.flush(); sys.exit(real.returncode)
if mode == "cut":  # the answer cut mid-record, status 0
    cut = out[: len(out) // 2]
    out_fd.write(cut.rstrip(b"\\0")[:-1] if cut.endswith(b"\\0") else cut); out_fd.flush(); sys.exit(0)
if mode == "half":  # half the records, status 1: some directories could not be read
    recs = out.split(b"\\0")[:-1]
    out_fd.write(b"".join(r + b"\\0" for r in recs[: len(recs) // 2])); out_fd.flush(); sys.exit(1)
if mode == "drop":  # half the answer, then the connection's own sshd killed
    out_fd.write(out[: len(out) // 2]); out_fd.flush()
    pid = os.getppid()
    while pid > 1:
        with open(f"/proc/{{pid}}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        if os.path.basename(os.readlink(f"/proc/{{pid}}/exe")) == "sshd":
            os.kill(pid, signal.SIGKILL)
            break
        pid = ppid
    time.sleep(5)
    sys.exit(0)
if mode == "stall":  # no answer: the test stops the whole server now
    open(ctl + ".stalled", "w").close()
    time.sleep(30)
    sys.exit(0)
"""


@pytest.fixture
def server(tmp_path, monkeypatch):
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    fb = tmp_path / "fakebin"
    fb.mkdir()
    ctl = tmp_path / "fault"
    (fb / "find").write_text(FAKE_FIND.format(python=sys.executable, ctl=str(ctl)))
    (fb / "find").chmod(0o755)
    path = f"{fb}:/usr/local/bin:/usr/bin:/bin"
    s = Sshd(prereqs.need("sshd"), tmp_path / "sshd", extra=f"SetEnv PATH={path}\n").start()
    runs = tmp_path / "remote" / "logs" / "runs"
    shutil.copytree(SRC, runs / TZ / "tiny_stats", copy_function=shutil.copy2)
    yield s, runs, ctl
    s.close()


def _host(s: Sshd, tmp_path: Path, **kw) -> SshHost:
    kh = tmp_path / "kh"
    if not kh.exists():
        s.known_hosts(kh)
    opts = dict(connect_timeout=10, op_timeout=3, backoff_min=0.1, backoff_max=0.5, keepalive_interval=1)
    opts.update(kw)
    return SshHost(
        "box", f"{s.user}@127.0.0.1:{s.port}", config=[], known_hosts=str(kh), client_keys=[str(s.user_key)], **opts
    )


def _image(m: Mirror) -> set[str]:
    root = m.local_root
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_faults_at_every_step_of_a_sync_delete_nothing(server, tmp_path, monkeypatch):
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    s, runs, ctl = server
    host = _host(s, tmp_path)
    feed = RemoteFeed(HostConfig("box", host.target, (str(runs),)), host=host, cache=tmp_path / "cache")
    m = feed.mirrors[0]
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        feed.roots(),
        docker_client=None,
        tasks_dir=TASKS,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
    )
    key = f"box/{TZ}/tiny_stats"

    def check(what: str) -> None:
        sup.poll_once()
        runs_now = {r.run_key: r for r in sup.last_runs}
        assert key in runs_now, (what, list(runs_now))
        r = runs_now[key]
        assert not r.deleted, what
        assert r.status == "finished", (what, r.status)
        assert not r.alarms, (what, [(a.rule, a.message) for a in r.alarms])

    def up() -> None:
        host.reconnect_now()
        wait_for(lambda: host.state.kind == UP, 20, "the host up", describe=lambda: host.state)

    try:
        assert host.wait_up(10).kind == UP
        first = feed.sync_once()
        assert first is not None and not first.errors, feed.last_error
        m.settle()  # (on disk: a later fault cannot touch a stage)
        full = _image(m)
        assert len(full) > 10 and f"{TZ}/tiny_stats/final_result.json" in full
        check("after the first sync")
        for round_ in range(2):
            # the listing cut mid-record, and half a listing with exit 1: a sync that removes nothing
            for mode in ("cut", "half"):
                ctl.write_text(mode)
                rep = feed.sync_once()
                assert not ctl.exists(), mode  # the fault was met
                assert rep is not None and rep.removed == [], (mode, rep and rep.removed)
                assert "listing was incomplete" in (feed.last_error or ""), (mode, feed.last_error)
                assert _image(m) == full, mode
                check(f"{mode} #{round_}")
            # the connection's sshd killed halfway through the listing
            ctl.write_text("drop")
            assert feed.sync_once() is None, feed.last
            assert _image(m) == full
            check(f"drop #{round_}")
            up()
            # the listing stalls and the whole server stops answering (SIGSTOP), then comes back
            ctl.write_text("stall")
            box: dict = {}
            t = threading.Thread(target=lambda box=box: box.setdefault("rep", feed.sync_once()))
            t.start()
            wait_for(lambda: Path(str(ctl) + ".stalled").exists(), 20, "the listing stalled")
            s.stop_all()
            try:
                t.join(60)
                assert not t.is_alive() and box["rep"] is None, box
            finally:
                s.cont_all()
            Path(str(ctl) + ".stalled").unlink()
            assert _image(m) == full
            check(f"stall #{round_}")
            up()
            # sshd killed outright between syncs: a sync of a host down fails, removes nothing
            s.kill_all()
            wait_for(lambda: host.state.kind not in (UP, "degraded"), 20, "down", describe=lambda: host.state)
            assert feed.sync_once() is None
            assert _image(m) == full
            check(f"killed #{round_}")
            s.start()
            up()
            # the reads of a grown file meet an sshd killed just before them (monkeypatched: no
            # server-side trigger sits between a listing and its reads)
            with open(runs / "notes.txt", "ab") as f:
                f.write(b"one more line\n")
            real = host.read_files

            def reads_after_a_kill(*a, real=real, **kw):
                s.kill_all()
                return real(*a, **kw)

            monkeypatch.setattr(host, "read_files", reads_after_a_kill)
            rep = feed.sync_once()
            monkeypatch.setattr(host, "read_files", real)
            assert rep is None or rep.removed == [], rep
            assert _image(m) >= full
            check(f"reads #{round_}")
            s.start()
            up()
        rep = feed.sync_once()  # all well again: the whole listing, nothing lost
        assert rep is not None and not rep.errors and not rep.incomplete, feed.last_error
        assert _image(m) == full | {"notes.txt"}
        check("at the end")
    finally:
        sup.close()
        feed.close()
        conn.close()


def test_a_server_refusing_every_exec_channel_is_listed_over_sftp_and_loses_nothing(server, tmp_path):
    """``MaxSessions 1``: the SFTP session is the only channel, ``find`` and the tar streams are
    refused; the listing comes over SFTP, complete, and a file deleted on the host is removed."""
    s0, runs, _ctl = server
    s0.close()
    s = Sshd(prereqs.need("sshd"), tmp_path / "sshd1", max_sessions=1).start()
    try:
        host = _host(s, tmp_path / "sshd1")
        try:
            assert host.wait_up(10).kind == UP
            m = Mirror(host, str(runs), tmp_path / "cache1", use_stage=False)
            rep = m.sync()
            assert not rep.errors and not rep.incomplete and rep.bulk_bytes == 0, rep.errors
            full = _image(m)
            assert f"{TZ}/tiny_stats/final_result.json" in full
            for _ in range(3):
                rep = m.sync()
                assert rep.removed == [] and _image(m) == full
            os.unlink(runs / TZ / "tiny_stats" / "started_at")
            rep = m.sync()
            assert rep.removed == [f"{TZ}/tiny_stats/started_at"]
        finally:
            host.close()
    finally:
        s.close()


def test_a_path_sync_believes_a_deletion_only_from_the_hosts_listing_of_its_directory(server, tmp_path):
    """inotifywait's reported paths are stat'ed with one ``find``: one that answers for half of
    them (exit 1, as for an unreadable directory) is no proof the others are gone; a path really
    deleted is removed."""
    s, runs, ctl = server
    host = _host(s, tmp_path)
    try:
        assert host.wait_up(10).kind == UP
        m = Mirror(host, str(runs), tmp_path / "cache", use_stage=False)
        assert not m.sync().errors
        full = _image(m)
        reported = {r for r in full if r.startswith(f"{TZ}/tiny_stats/") and r.count("/") == 2}
        assert len(reported) > 6
        for _ in range(2):
            ctl.write_text("half")
            rep = m.sync_changed(reported)
            assert not ctl.exists()
            assert rep is not None and rep.removed == [] and _image(m) == full, rep
        os.unlink(runs / TZ / "tiny_stats" / "started_at")
        rep = m.sync_changed(reported)
        assert rep is not None and rep.removed == [f"{TZ}/tiny_stats/started_at"]
    finally:
        host.close()


def test_the_connecting_line_gives_way_once_the_host_is_up(server, tmp_path):
    """The runs screen's bottom line shows the newest of the supervisor's lines: a host's
    "connecting … since" line must be followed by one saying it is up once it is (issue 36 item
    11: it said connecting for four minutes after the host was up). The server is stopped while
    the first connection waits for its banner, then let go."""
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    s, runs, _ctl = server
    host = _host(s, tmp_path)
    feed = RemoteFeed(HostConfig("box", host.target, (str(runs),)), host=host, cache=tmp_path / "cache")
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, feed.roots(), docker_client=None, tasks_dir=TASKS, settings=AlarmSettings())
    sup.host_lines = lambda: [line for line in [feed.state_line()] if line]
    shown: list[str] = []  # as the runs screen keeps them (each distinct line once, the newest last)

    def poll() -> None:
        sup.poll_once()
        for m in sup.messages:
            if m not in shown[-50:]:
                shown.append(m)

    s.stop_all()
    try:
        host.start()
        poll()
        assert host.state.kind == "connecting"
        assert shown and shown[-1].startswith("box: connecting"), shown
        s.cont_all()
        wait_for(lambda: host.state.kind == UP, 20, "the host up", describe=lambda: host.state)
        poll()
        assert shown[-1].startswith("box: up since "), shown
    finally:
        s.cont_all()
        sup.close()
        host.close()
        conn.close()
