"""Remote roots and hosts files as bad luck makes them (issue 31, item 12), over a real OpenSSH sshd
and the real ``edgetui`` command: a FIFO in a remote runs root, a FIFO as the hosts file, a root
listed 5,000 times, ``roots = ["/"]``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from sshd_fixture import Sshd
from waits import wait_for

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
TZ = "real-tz-20261201182000"
TASKS = GENUINE / "tasks"
EXE = [str(Path(sys.executable).parent / "edgetui")]


def _env(s: Sshd, tmp_path: Path, hosts: Path) -> dict:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    s.known_hosts(home / ".ssh" / "known_hosts")
    (home / ".ssh" / "config").write_text(
        f"Host devbox\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.user_key}\n"
    )
    env = {**os.environ, "HOME": str(home), "EDGETUI_HOSTS_FILE": str(hosts), "XDG_CACHE_HOME": str(tmp_path / "xc")}
    env.pop("SSH_AUTH_SOCK", None)
    return env


def _stuck_on_a_fifo(s: Sshd) -> list[int]:
    """This sshd's sftp-server processes blocked opening a FIFO (waiting for a writer)."""
    out = []
    for p in s.sftp_server_pids():
        try:
            if Path(f"/proc/{p}/wchan").read_text().strip() == "wait_for_partner":
                out.append(p)
        except OSError:
            pass
    return out


def test_a_fifo_in_a_remote_root_is_skipped_with_a_note_and_the_rest_recorded(sshd, tmp_path):
    runs = tmp_path / "remote" / "logs" / "runs"
    shutil.copytree(GENUINE / "runs" / TZ, runs / TZ, copy_function=shutil.copy2)
    td = runs / TZ / "tiny_stats"
    os.mkfifo(td / "notes.pipe")
    os.mkfifo(runs / "stray.pipe")
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[hosts.lab]\nssh = "devbox"\nroots = ["{runs}"]\n')
    env = _env(sshd, tmp_path, hosts)
    db = tmp_path / "cli.duckdb"
    for _attempt in range(2):  # (a second try: no session left behind by the first either)
        r = subprocess.run(
            [*EXE, "--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), "--host", "lab"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        said = [ln for ln in r.stderr.splitlines() if "notes.pipe" in ln]
        assert (
            len(said) == 1
            and said[0].startswith(f"edgetui: lab:{td / 'notes.pipe'}: ")
            and "not a regular file (FIFO)" in said[0]
        ), r.stderr
        assert any("stray.pipe" in ln and "not a regular file" in ln for ln in r.stderr.splitlines()), r.stderr
        c = duckdb.connect(str(db), read_only=True)
        try:
            keys = [k for (k,) in c.execute("SELECT run_key FROM runs").fetchall()]
            n = c.execute("SELECT count(*) FROM events").fetchone()[0]
        finally:
            c.close()
        assert keys == [f"lab/{TZ}/tiny_stats"] and n > 0
        # no SFTP session stuck on the FIFO: every sftp-server of this sshd ends with the command
        wait_for(
            lambda: not sshd.sftp_server_pids(),
            20,
            "no sftp-server left running",
            0.1,
            describe=lambda: f"sftp-server pids: {sshd.sftp_server_pids()}",
        )


def test_a_fifo_as_the_hosts_file_is_refused_in_one_line(tmp_path):
    fifo = tmp_path / "hosts.toml"
    os.mkfifo(fifo)
    env = {**os.environ, "EDGETUI_HOSTS_FILE": str(fifo), "XDG_CACHE_HOME": str(tmp_path / "xc")}
    for cmd in (["ingest", "--host", "lab"], ["watch", "--no-docker"]):
        r = subprocess.run(
            [*EXE, "--db", str(tmp_path / "x.duckdb"), *cmd], env=env, capture_output=True, text=True, timeout=60
        )  # (a hang fails here, loudly)
        assert r.returncode != 0, (cmd, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and str(fifo) in lines[0] and "a FIFO, not a regular file" in lines[0], (cmd, r.stderr)


def test_roots_that_cannot_be_runs_roots_are_refused_naming_the_file_and_host(tmp_path):
    hosts = tmp_path / "hosts.toml"
    env = {**os.environ, "EDGETUI_HOSTS_FILE": str(hosts), "XDG_CACHE_HOME": str(tmp_path / "xc")}
    for bad in ('"/"', '"//"', '"/srv/.."', '"srv/runs"', '"/srv/\\u0000x"', '"/srv/\\u001b]52;c;eA==\\u0007"'):
        hosts.write_text(f'[hosts.lab]\nssh = "me@127.0.0.1:1"\nroots = ["/ok/runs", {bad}]\n')
        r = subprocess.run(
            [*EXE, "--db", str(tmp_path / "x.duckdb"), "ingest", "--host", "lab"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1, (bad, r.stderr)
        assert str(hosts) in lines[0] and "[hosts.lab]" in lines[0] and "roots" in lines[0], (bad, r.stderr)
        assert "\x1b" not in r.stderr and "\x00" not in r.stderr
    hosts.unlink()
    r = subprocess.run(
        [*EXE, "--db", str(tmp_path / "x.duckdb"), "ingest", "--host", "me@127.0.0.1:1:/"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode != 0 and "whole file system" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_root_listed_5000_times_is_read_once_with_a_note(sshd, tmp_path):
    runs = tmp_path / "remote" / "logs" / "runs"
    shutil.copytree(GENUINE / "runs" / TZ, runs / TZ, copy_function=shutil.copy2)
    spellings = [str(runs), str(runs) + "/", str(runs).replace("/logs/", "//logs/./")]
    roots = ", ".join(f'"{spellings[i % 3]}"' for i in range(5000))
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[hosts.lab]\nssh = "devbox"\nroots = [{roots}]\n')
    env = _env(sshd, tmp_path, hosts)
    db = tmp_path / "cli.duckdb"
    r = subprocess.run(
        [*EXE, "--db", str(db), "ingest", "--tasks-dir", str(TASKS), "--host", "lab"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    synced = [ln for ln in r.stderr.splitlines() if ln.startswith(f"lab:{runs}: ") and "read over SSH" in ln]
    assert len(synced) == 1, r.stderr[-2000:]
    notes = [ln for ln in r.stderr.splitlines() if "repeated root" in ln]
    assert len(notes) == 1 and str(hosts) in notes[0] and "[hosts.lab]" in notes[0] and "4999" in notes[0], r.stderr


def test_a_file_larger_than_a_chunk_is_mirrored_whole_new_rewritten_or_touched(sshd, tmp_path):
    """The mirror's whole-file path (a file new to the image, one rewritten in place at the same
    size, one only touched) goes a CHUNK at a time (bench/bench_ssh_sparse.py: its memory) and
    gives the host's bytes exactly."""
    from edgetui.hosts.mirror import CHUNK, Mirror
    from edgetui.hosts.ssh import UP, SshHost

    runs = tmp_path / "remote" / "runs"
    td = runs / "r1" / "t1"
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text("x\n")
    host = SshHost(
        "box",
        f"{sshd.user}@127.0.0.1:{sshd.port}",
        config=[],
        known_hosts=str(sshd.known_hosts(tmp_path / "kh")),
        client_keys=[str(sshd.user_key)],
    )
    try:
        assert host.wait_up(10).kind == UP, host.state
        m = Mirror(host, str(runs), tmp_path / "image")
        m.sync()
        big = td / "scratch.img"
        data = os.urandom(2 * CHUNK + 123)
        big.write_bytes(data)
        rep = m.sync()
        assert not rep.errors, rep.errors
        img = tmp_path / "image" / "r1" / "t1" / "scratch.img"
        assert img.read_bytes() == data and img.stat().st_mtime_ns == big.stat().st_mtime_ns
        ino = img.stat().st_ino
        t = time.time() + 10  # touched: the same bytes, another mtime -> compared, kept
        os.utime(big, (t, t))
        m.sync()
        assert img.stat().st_ino == ino and img.stat().st_mtime_ns == big.stat().st_mtime_ns
        changed = bytearray(data)
        changed[CHUNK + 7] ^= 0xFF  # rewritten in place, the same size: replaced
        with open(big, "r+b") as f:
            f.write(changed)
        os.utime(big, (t + 10, t + 10))
        m.sync()
        assert img.read_bytes() == bytes(changed) and img.stat().st_ino != ino
        assert not list(img.parent.glob(".*edgetui-part"))
    finally:
        host.close()


def test_a_watched_remote_root_with_a_fifo_is_kept_in_step_and_says_it_once(sshd, tmp_path):
    """The live path (RemoteFeed: full syncs and syncs of reported paths) skips the FIFO with one
    note, and keeps the run's files in step."""
    from edgetui.hosts.config import HostConfig
    from edgetui.hosts.feed import RemoteFeed
    from edgetui.hosts.ssh import UP, SshHost, SshTarget

    runs = tmp_path / "remote" / "runs"
    shutil.copytree(GENUINE / "runs" / TZ, runs / TZ, copy_function=shutil.copy2)
    td = runs / TZ / "tiny_stats"
    os.mkfifo(td / "notes.pipe")
    host = SshHost(
        "lab",
        f"{sshd.user}@127.0.0.1:{sshd.port}",
        config=[],
        known_hosts=str(sshd.known_hosts(tmp_path / "kh")),
        client_keys=[str(sshd.user_key)],
    )
    cfg = HostConfig("lab", SshTarget("127.0.0.1", sshd.port, sshd.user), (str(runs),))
    feed = RemoteFeed(cfg, host=host, cache=tmp_path / "cache", use_inotify=False)
    notes: list[str] = []
    feed.on_note = notes.append
    try:
        assert host.wait_up(10).kind == UP, host.state
        assert feed.sync_once() is not None, feed.last_error
        with open(td / "run_agent.log", "a") as f:
            f.write("2026-12-01 18:30:00,000 - INFO - one more line\n")
        rep = feed.sync_paths({str(td / "notes.pipe"), str(td / "run_agent.log")})
        assert rep is not None, feed.last_error
        assert feed.sync_once() is not None, feed.last_error
        image = feed.mirrors[0].local_root
        assert (image / TZ / "tiny_stats" / "run_agent.log").read_bytes() == (td / "run_agent.log").read_bytes()
        assert not (image / TZ / "tiny_stats" / "notes.pipe").exists()
        assert notes == [f"lab:{td / 'notes.pipe'}: skipped, not a regular file (FIFO)"], notes
        assert not _stuck_on_a_fifo(sshd)  # no SFTP session blocked opening the FIFO
    finally:
        host.close()
