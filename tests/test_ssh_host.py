"""SshHost against a real OpenSSH sshd on 127.0.0.1 (tests/sshd_fixture.py), and asyncssh's own
in-process server for faults sshd cannot be made to show on cue (a host key changed between
reconnects)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import os
import subprocess
import time
from pathlib import Path

import pytest

from sshd_fixture import Sshd, free_port, keygen
from waits import wait_for

from edgetui.hosts import Host
from edgetui.hosts.local import LocalHost
from edgetui.hosts.ssh import AUTH_FAILED, DEGRADED, DOWN, HOST_KEY_REFUSED, UP, HostDown, SshHost, SshTarget


def host_for(s: Sshd, tmp_path: Path, **kw) -> SshHost:
    kh = tmp_path / "known_hosts"
    if not kh.exists():
        s.known_hosts(kh)
    kw.setdefault("client_keys", [str(s.user_key)])
    return SshHost("box", f"{s.user}@127.0.0.1:{s.port}", config=[], known_hosts=str(kh), **kw)


def test_target_specs():
    assert SshTarget.parse("me@example.org:2222") == SshTarget("example.org", 2222, "me")
    assert SshTarget.parse("build-7") == SshTarget("build-7", None, None)
    assert SshTarget.parse("[::1]:22") == SshTarget("::1", 22, None)
    assert str(SshTarget.parse("me@[::1]:2200")) == "me@[::1]:2200"
    with pytest.raises(ValueError, match="not user@host"):
        SshTarget.parse("me@host:/path")
    with pytest.raises(ValueError, match="out of range"):
        SshTarget.parse("host:70000")


def test_list_stat_read_match_the_local_host(sshd, tmp_path):
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    data = os.urandom(300_000)
    (tree / "blob.bin").write_bytes(data)
    (tree / "small.txt").write_text("hello\n")
    (tree / "link").symlink_to(tree / "sub")
    h = host_for(sshd, tmp_path)
    try:
        assert isinstance(h, Host)
        assert h.wait_up(10).kind == UP, h.state
        local = LocalHost()
        got = {e.name: e for e in h.list(str(tree))}
        want = {e.name: e for e in local.list(str(tree))}
        assert set(got) == set(want) == {"sub", "blob.bin", "small.txt", "link"}
        for n, e in want.items():
            assert got[n].is_dir == e.is_dir and got[n].size == e.size, n
            assert got[n].mtime_ns == e.mtime_ns // 1_000_000_000 * 1_000_000_000  # SFTP v3: whole seconds
        assert h.read_at(str(tree / "blob.bin"), 123_456, 100_000) == data[123_456:223_456]
        assert h.read_at(str(tree / "blob.bin"), 299_990, 100) == data[299_990:]
        assert h.read_at(str(tree / "blob.bin"), 400_000, 10) == b""
        assert h.stat(str(tree / "small.txt")).size == 6
        assert h.stat(str(tree / "nope")) is None
        with pytest.raises(OSError) as ei:
            h.read_at(str(tree / "nope"), 0, 1)
        assert ei.value.errno == errno.ENOENT and ei.value.filename == str(tree / "nope")
        with pytest.raises(OSError):
            h.list(str(tree / "small.txt"))
        assert h.stats["connects"] == 1  # everything over one connection
        assert h.state.rtt_s is not None and h.state.rtt_s < 1
    finally:
        h.close()


def test_unknown_host_key_refused_with_the_command_that_trusts_it(sshd, tmp_path):
    kh = tmp_path / "known_hosts"
    kh.write_text("")
    h = SshHost(
        "box",
        f"{sshd.user}@127.0.0.1:{sshd.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(sshd.user_key)],
        backoff_min=30,
    )
    try:
        st = h.wait_up(10)
        assert st.kind == HOST_KEY_REFUSED
        assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {kh}" in st.message and "unknown" in st.message
        with pytest.raises(HostDown, match="host key refused"):
            h.list("/")
    finally:
        h.close()
    # the command it names really trusts the host
    out = subprocess.run(["ssh-keyscan", "-p", str(sshd.port), "127.0.0.1"], capture_output=True, text=True)
    kh.write_text(out.stdout)
    h = SshHost(
        "box", f"{sshd.user}@127.0.0.1:{sshd.port}", config=[], known_hosts=str(kh), client_keys=[str(sshd.user_key)]
    )
    try:
        assert h.wait_up(10).kind == UP
    finally:
        h.close()


def test_encrypted_key_without_agent_is_refused_with_add_to_agent(sshd, tmp_path):
    enc = keygen(tmp_path / "enc_key", passphrase="secret words")
    (sshd.tmp / "authorized_keys").write_text((tmp_path / "enc_key.pub").read_text())
    h = host_for(sshd, tmp_path, client_keys=[str(enc)], backoff_min=30)
    try:
        st = h.wait_up(10)
        assert st.kind == AUTH_FAILED and "add the key to ssh-agent" in st.message, st
    finally:
        h.close()


def test_keys_from_ssh_agent_and_options_from_ssh_config(sshd, tmp_path, monkeypatch):
    """An ssh_config alias gives HostName, Port, User; the only key is in a real ssh-agent."""
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        wait_for(sock.exists, 5, "ssh-agent's socket")
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(sshd.user_key)], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        cfg = tmp_path / "ssh_config"
        cfg.write_text(
            f"Host testbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
            f"  UserKnownHostsFile {sshd.known_hosts(tmp_path / 'kh2')}\n"
        )
        h = SshHost("box", "testbox", config=[str(cfg)])
        try:
            assert h.wait_up(10).kind == UP, h.state
            assert h.stat(str(tmp_path)).is_dir
        finally:
            h.close()
    finally:
        agent.kill()
        agent.wait()


@pytest.mark.sshd
def test_channel_budget_queues_beyond_max_sessions(tmp_path, start_sshd):
    """15 exec channels at once against MaxSessions 10: none refused, never more than 10 open."""
    s = start_sshd(max_sessions=10)
    h = host_for(s, tmp_path, max_channels=10)
    try:
        assert h.wait_up(10).kind == UP
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(15) as ex:
            res = list(ex.map(lambda i: h.run(["sh", "-c", f"sleep 0.3; echo {i}"]), range(15)))
        assert [r[1].strip() for r in res] == [str(i).encode() for i in range(15)]
        assert all(r[0] == 0 for r in res)
        assert h.stats["max_channels_open"] == 10  # 9 exec + the SFTP session
        assert h.stats["connects"] == 1
    finally:
        h.close()
        s.close()


def _within(timeout: float, fn, *args):
    """``fn(*args)`` in a thread: its result or its exception, or AssertionError after ``timeout`` s."""
    ex = concurrent.futures.ThreadPoolExecutor(1)
    try:
        fut = ex.submit(fn, *args)
        if not concurrent.futures.wait([fut], timeout).done:  # (its own TimeoutError is its result)
            raise AssertionError(f"{getattr(fn, '__name__', fn)} still blocked after {timeout} s")
        return fut.result()
    finally:
        ex.shutdown(wait=False)


def test_stopped_server_degrades_then_goes_down_and_comes_back(sshd, tmp_path):
    """SIGSTOP of sshd and its sessions: a call times out (degraded) without blocking long, the
    missed keepalives drop the connection (down, with the next retry), SIGCONT brings it back."""
    h = host_for(
        sshd,
        tmp_path,
        op_timeout=1.0,
        keepalive_interval=0.5,
        keepalive_count_max=2,
        connect_timeout=3.0,
        backoff_min=0.2,
        backoff_max=1.0,
        probe_interval=0.3,
    )
    other = tmp_path / "f"
    other.write_text("x")
    try:
        assert h.wait_up(10).kind == UP
        sshd.stop_all()
        # ended by the 1 s call timeout (or the keepalives dropping the connection), not by an answer:
        # within 10 s (the call runs in a thread: a blocked one fails here, loudly, instead of hanging)
        with pytest.raises(OSError) as e:
            _within(10, h.read_at, str(other), 0, 1)
        assert e.value.errno in (errno.ETIMEDOUT, errno.EHOSTDOWN), e.value
        seen = set()
        end = time.monotonic() + 25
        while time.monotonic() < end and DOWN not in seen:
            seen.add(h.state.kind)
            time.sleep(0.05)
        assert DEGRADED in seen or DOWN in seen
        assert h.state.kind in (DOWN, "connecting"), h.state
        # a down host fails at once: with the call timeout out of the way (600 s), a call that waited for
        # an answer would block; this one returns HostDown within 10 s
        h.op_timeout = 600.0
        with pytest.raises(HostDown):
            _within(10, h.list, str(tmp_path))
        h.op_timeout = 1.0
        sshd.cont_all()
        wait_for(lambda: h.state.kind == UP, 30, "the host up again after SIGCONT", describe=lambda: h.state)
        assert h.read_at(str(other), 0, 1) == b"x"
        assert h.stats["connects"] == 2
    finally:
        sshd.cont_all()
        h.close()


def test_changed_host_key_between_reconnects_is_refused(tmp_path, monkeypatch):
    """asyncssh's server in-process: trusted with key A; restarted with key B on the same port."""
    import asyncssh

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    port = free_port()
    ka, kb = keygen(tmp_path / "ka"), keygen(tmp_path / "kb")
    user_key = keygen(tmp_path / "user")
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{port} " + " ".join((tmp_path / "ka.pub").read_text().split()[:2]) + "\n")

    class Server(asyncssh.SSHServer):
        def begin_auth(self, username):
            return True

        def public_key_auth_supported(self):
            return True

        def validate_public_key(self, username, key):
            return True

    async def listen(key):
        return await asyncssh.listen(
            "127.0.0.1", port, server_host_keys=[str(key)], server_factory=Server, sftp_factory=True
        )

    loop = asyncio.new_event_loop()
    import threading

    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()

    def on_loop(coro, timeout=5):
        return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)

    srv = on_loop(listen(ka))
    h = SshHost(
        "box",
        f"me@127.0.0.1:{port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(user_key)],
        backoff_min=0.2,
        backoff_max=0.5,
    )
    try:
        assert h.wait_up(10).kind == UP, h.state

        async def swap():
            srv.close()
            await srv.wait_closed()
            return await listen(kb)

        new = on_loop(swap())
        h.call(lambda: _close_conn(h), "drop")  # the live connection goes: the client reconnects, meets key B
        wait_for(lambda: h.state.kind == HOST_KEY_REFUSED, 10, "the changed host key refused", describe=lambda: h.state)
        assert "CHANGED" in h.state.message and f"ssh-keygen -f {kh} -R '[127.0.0.1]:{port}'" in h.state.message
        assert f"ssh-keyscan -p {port} 127.0.0.1" in h.state.message
        new.close()
        on_loop(new.wait_closed())
    finally:
        h.close()
        loop.call_soon_threadsafe(loop.stop)
        t.join(5)


async def _close_conn(h: SshHost):
    h._conn.close()


def _cipher(h: SshHost) -> str:
    return h.connection.get_extra_info("send_cipher")


def test_aes_gcm_preferred_unless_the_users_ssh_config_names_ciphers(sshd, tmp_path):
    """Without a ``Ciphers`` line AES-GCM is negotiated (edgetui's preference, asyncssh's default
    would be chacha20-poly1305); a user's own ``Ciphers`` in ssh_config (read by asyncssh) wins."""
    kh = sshd.known_hosts(tmp_path / "kh")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host plainbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  UserKnownHostsFile {kh}\n"
        f"Host ctrbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  UserKnownHostsFile {kh}\n  Ciphers aes256-ctr,aes192-ctr\n"
    )
    got = {}
    for alias in ("plainbox", "ctrbox"):
        h = SshHost("box", alias, config=[str(cfg)], client_keys=[str(sshd.user_key)])
        try:
            assert h.wait_up(10).kind == UP, h.state
            got[alias] = _cipher(h)
            assert h.stat(str(tmp_path)).is_dir  # the connection works with that cipher
        finally:
            h.close()
    assert got == {"plainbox": "aes128-gcm@openssh.com", "ctrbox": "aes256-ctr"}


@pytest.mark.sshd
def test_channel_budget_stays_bounded_by_max_sessions_across_reconnects(tmp_path, start_sshd):
    """MaxSessions 10, 15 users of channels (inotify watches holding theirs, their change callbacks
    busy past the reconnect, commands queued behind them), the server killed and started again
    twice: after each reconnect, 15 commands at once all succeed, never more than 10 channels open
    on the connection, and the budget is back to its size (9 beside the SFTP session): the
    channels of the lost connection, given back after the reconnect, do not grow it."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    s = start_sshd(max_sessions=10)
    h = host_for(s, tmp_path, max_channels=10, backoff_min=0.1, backoff_max=0.5, connect_timeout=10)
    watched = tmp_path / "w"
    watched.mkdir()
    try:
        assert h.wait_up(10).kind == UP
        for cycle in range(2):
            stop = threading.Event()
            ready = threading.Semaphore(0)
            changes = threading.Semaphore(0)

            def slow_change(paths, changes=changes):  # a feed's sync of the changed paths outlasting the connection
                changes.release()
                time.sleep(4.0)

            def watch(stop=stop, ready=ready, slow_change=slow_change):
                try:
                    h.watch([str(watched)], slow_change, stop, on_ready=ready.release)
                except OSError:
                    pass  # the connection went: what a feed sees, then it watches again

            watchers = [threading.Thread(target=watch, daemon=True) for _ in range(6)]
            for t in watchers:
                t.start()
            for _ in watchers:
                assert ready.acquire(timeout=20)
            assert h._open_channels == 6
            # 9 commands: 3 run beside the watches, 6 queue for the budget; then the server dies
            ex = ThreadPoolExecutor(9)
            futs = [ex.submit(h.run, ["sleep", "30"]) for _ in range(9)]
            wait_for(lambda: h._open_channels >= 9, 10, "9 channels open", describe=lambda: h._open_channels)
            assert h._open_channels == 9 and h._channels._value == 0
            (watched / f"f{cycle}").write_text("x")
            for _ in watchers:
                assert changes.acquire(timeout=10)
            s.kill_all()
            for f in futs:  # each ends: a lost connection (OSError) or a command without exit status
                try:
                    assert f.result(timeout=40)[0] != 0
                except OSError:
                    pass
            ex.shutdown()
            s.start()
            h.reconnect_now()
            assert h.wait_up(20).kind == UP
            for t in watchers:
                t.join(20)
                assert not t.is_alive()
            stop.set()
            end = time.monotonic() + 5
            while h._open_channels and time.monotonic() < end:
                time.sleep(0.05)
            assert h._open_channels == 0
            assert h._channels._value == 9  # the new connection's budget: not grown by the old channels
            h.stats["max_channels_open"] = 0
            with ThreadPoolExecutor(15) as ex2:
                res = list(ex2.map(lambda i: h.run(["sh", "-c", f"sleep 0.3; echo {i}"]), range(15)))
            assert [r[1].strip() for r in res] == [str(i).encode() for i in range(15)]
            assert h.stats["max_channels_open"] == 10  # 9 exec + the SFTP session
            assert h._channels._value == 9
        assert h.stats["connects"] == 3
    finally:
        h.close()
        s.close()


def _established_to(port: int) -> int:
    """Established TCP connections to 127.0.0.1:``port`` (from /proc/net/tcp: state 01)."""
    n = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[3] == "01" and int(f[2].split(":")[1], 16) == port:
            n += 1
    return n


def test_encrypted_key_refusal_names_the_key_it_offered(sshd, tmp_path):
    """The advice names the identity file the login offered (not a fixed ~/.ssh/id_ed25519) and also
    asks whether the key is authorised on the host at all."""
    enc = keygen(tmp_path / "enc_key", passphrase="secret words")
    (sshd.tmp / "authorized_keys").write_text((tmp_path / "enc_key.pub").read_text())
    h = host_for(sshd, tmp_path, client_keys=[str(enc)], backoff_min=30)
    try:
        st = h.wait_up(10)
        assert st.kind == AUTH_FAILED and f"ssh-add {enc}" in st.message and "authorized_keys" in st.message, st
    finally:
        h.close()


def test_a_closed_port_says_connection_refused_and_what_to_check(tmp_path):
    port = free_port()
    h = SshHost("box", f"me@127.0.0.1:{port}", config=[], known_hosts=str(tmp_path / "kh"), backoff_min=30)
    try:
        st = h.wait_up(10)
        assert st.kind == DOWN and st.message == (
            f"connection refused by 127.0.0.1 port {port}: is sshd running there, on that port?"
        ), st
        assert "Errno" not in st.message
    finally:
        h.close()


@pytest.mark.sshd
def test_a_host_without_sftp_says_so_and_leaves_no_connection_open(tmp_path, start_sshd):
    """sshd without a ``Subsystem sftp`` line: logged in, but no SFTP channel. The state says what the
    host's sshd_config needs, and the failed login's connection is closed (not kept until exit)."""
    s = start_sshd(start=False)
    s.config.write_text(s.config.read_text().replace("Subsystem sftp /usr/lib/openssh/sftp-server\n", ""))
    s.start()
    h = host_for(s, tmp_path, backoff_min=0.2, backoff_max=0.2)
    try:
        h.wait_up(10)
        wait_for(
            lambda: "Subsystem sftp" in h.state.message,
            10,
            "the state saying what sshd_config needs",
            0.1,
            describe=lambda: h.state,
        )
        assert h.state.kind == DOWN and "Subsystem sftp" in h.state.message, h.state
        time.sleep(1.5)  # part of the test: several more attempts (every 0.2 s), each failing the same way
        assert h.state.kind == DOWN
        assert _established_to(s.port) <= 1  # (at most the attempt in flight), not one per attempt
    finally:
        h.close()
        s.close()


def test_a_cancelled_keeper_ends_during_the_first_probe(sshd, tmp_path):
    """The keeper cancelled (close, the loop ending) while its first probe waits on a stopped server
    ends there: the cancellation is not swallowed by the probe's error handling (issue 36), which
    would go on to set the host up, probe and reconnect for good."""
    import threading

    h = host_for(sshd, tmp_path, op_timeout=30.0, keepalive_interval=0.5, keepalive_count_max=2, backoff_min=0.1)
    box: dict = {}
    hooked = threading.Event()

    async def stop_the_server(conn):
        box["task"] = asyncio.current_task()
        sshd.stop_all()  # the first probe, next, gets no answer
        hooked.set()

    h.on_connect.append(stop_the_server)
    try:
        h.start()
        assert hooked.wait(20)
        from edgetui.hosts.ssh_loop import ssh_loop as _loop

        _loop().call_soon_threadsafe(box["task"].cancel)
        wait_for(lambda: box["task"].done(), 10, "the keeper ended by its cancellation", describe=lambda: h.state)
        assert box["task"].cancelled()
        assert h.stats["connects"] == 1 and not h._up.is_set()
    finally:
        sshd.cont_all()
        h.close()


def _tcp_received(h: SshHost) -> int:
    """TCP payload bytes the host's connection has received (``tcpi_bytes_received``, Linux)."""
    import socket
    import struct

    sock = h.connection.get_extra_info("socket")
    return struct.unpack_from("<Q", sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), 128)[0]


def test_the_connection_is_compressed_unless_ssh_config_says_no(sshd, tmp_path):
    """Run files are text: read over a compressed connection (zlib@openssh.com, the default) they
    take a fraction of their size on the wire; ``Compression no`` in the user's ssh_config for the
    host turns it off (issue 36 item 12: 1.005 bytes on the wire per byte appended before)."""
    lines = b"".join(
        b'{"seq":%d,"type":"assistant","text":"line %d of a transcript"}\n' % (i, i * 7) for i in range(20000)
    )
    f = tmp_path / "agent_output.txt"
    f.write_bytes(lines)
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host 127.0.0.1\n  Compression no\n")
    got = {}
    for label, config in (("default", []), ("config no", [str(cfg)])):
        h = host_for(sshd, tmp_path)
        h.config = config  # (the user's ssh_config files, as asyncssh reads them)
        try:
            assert h.wait_up(10).kind == UP
            before = _tcp_received(h)
            assert h.read_at(str(f), 0, len(lines)) == lines
            got[label] = (_tcp_received(h) - before) / len(lines)
        finally:
            h.close()
    assert got["default"] < 0.3, got
    assert got["config no"] > 0.99, got
