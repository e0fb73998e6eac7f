"""Remote runs live over a real OpenSSH sshd: the hosts file and --host, a run written line by line
on the server while the supervisor follows it through the SSH feed, the server killed mid-stream
and started again (same event set as the offline ingest of the final files: no gap, no duplicate),
and one host down leaving the other host's runs live."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sshd_fixture import Sshd

# at import time, not inside the async test: pytest's assertion rewrite of a module imported
# that deep in the event loop's stack raised CPython 3.11's 'AST constructor recursion depth mismatch'
from test_live_app_docker import _rows, _until
from waits import wait_for

from edgetui.store.database import open_db
from edgetui.hosts.config import HostConfig, is_host_arg, load_hosts, parse_host_arg
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.ssh import UP, SshHost, SshTarget
from edgetui.record.ingest import ingest_paths

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
TZ = "real-tz-20261201182000"
SRC = GENUINE / "runs" / TZ / "tiny_stats"
TASKS = GENUINE / "tasks"
SOURCES = ("run_agent.log", "agent_output.txt")
COLS = 'source, generation, "offset", sub, kind, summary, tool_name, tool_use_id'


# ------------------------------------------------------------------------------------------ config


def test_host_arg_and_hosts_file(tmp_path):
    h = parse_host_arg("me@10.1.2.3:2222:/srv/logs/runs/")
    assert h == HostConfig("10.1.2.3:2222", SshTarget("10.1.2.3", 2222, "me"), ("/srv/logs/runs",), None, "--host")
    assert parse_host_arg("gpu-box:/data/runs").name == "gpu-box"
    assert is_host_arg("me@h:/x") and not is_host_arg("box") and not is_host_arg("/abs/path")
    with pytest.raises(ValueError, match="expected user@host"):
        parse_host_arg("me@h")
    f = tmp_path / "hosts.toml"
    assert load_hosts(f) == []
    f.write_text(
        '[hosts.gpu-1]\nssh = "me@10.0.0.9"\nroots = ["/srv/runs"]\njudge_url = "http://127.0.0.1:8000"\n'
        'jump = "me@bastion"\n\n[hosts.alias-only]\nroots = ["/a", "/b/"]\n'
    )
    hs = load_hosts(f)
    assert [h.name for h in hs] == ["gpu-1", "alias-only"]
    assert (
        hs[0].target == SshTarget("10.0.0.9", None, "me", "me@bastion") and hs[0].judge_url == "http://127.0.0.1:8000"
    )
    assert hs[1].target.host == "alias-only" and hs[1].roots == ("/a", "/b")
    f.write_text('[hosts.x]\nroots = "/srv"\n')
    with pytest.raises(ValueError, match=r"hosts.toml: \[hosts.x\]: roots must be a list of absolute paths"):
        load_hosts(f)
    f.write_text('[hosts.x]\nroots = ["/a"]\nport = 22\n')
    with pytest.raises(ValueError, match="unknown key 'port'"):
        load_hosts(f)
    f.write_text('[hosts.x\nroots = ["/a"]\n')
    with pytest.raises(ValueError, match=r"hosts.toml: .*line 1"):
        load_hosts(f)


def test_a_host_of_the_hosts_file_keeps_its_name_when_given_as_user_at_host(tmp_path):
    """``--host root@127.0.0.1:2299:/runs`` for a machine the hosts file names ``gpu16`` records its
    runs under ``gpu16`` (one run, not two with different keys); another port or user is another host.
    A --host that names no host and is not a remote root says what a remote root looks like."""
    from edgetui.hosts.config import host_name_error

    f = tmp_path / "hosts.toml"
    f.write_text(
        '[hosts.gpu16]\nssh = "root@127.0.0.1:2299"\nroots = ["/tmp/remote_runs"]\n'
        '[hosts.far]\nssh = "me@10.0.0.9"\njump = "me@bastion"\nroots = ["/r"]\n'
    )
    known = load_hosts(f)
    assert parse_host_arg("root@127.0.0.1:2299:/tmp/remote_runs", known).name == "gpu16"
    assert parse_host_arg("127.0.0.1:2299:/elsewhere", known).name == "gpu16"  # (no user given: the same)
    assert parse_host_arg("other@127.0.0.1:2299:/tmp/remote_runs", known).name == "127.0.0.1:2299"
    assert parse_host_arg("root@127.0.0.1:2300:/tmp/remote_runs", known).name == "127.0.0.1:2300"
    assert parse_host_arg("me@10.0.0.9:/r", known).name == "10.0.0.9"  # far goes through its jump host
    assert host_name_error("gpu16:relative/path", f).startswith(
        "--host gpu16:relative/path: a remote root needs its absolute path after the host"
    )
    assert host_name_error("root@127.0.0.1:2299", f).startswith("--host root@127.0.0.1:2299: a remote root needs")
    assert host_name_error("nosuch", f) == (
        f"--host nosuch: no such host in {f} (a remote root is user@host[:port]:/path/to/logs/runs)"
    )


# ------------------------------------------------------------------------------------------ servers


@pytest.fixture
def two_sshd(start_sshd):
    return [start_sshd(f"sshd{i}") for i in range(2)]


def _host(s: Sshd, tmp_path: Path, name: str) -> SshHost:
    kh = tmp_path / f"kh-{name}"
    if not kh.exists():
        s.known_hosts(kh)
    return SshHost(
        name,
        f"{s.user}@127.0.0.1:{s.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(s.user_key)],
        connect_timeout=10,
        backoff_min=0.1,
        backoff_max=0.5,
        keepalive_interval=1,
        keepalive_count_max=2,
    )


def _start_run(runs: Path) -> Path:
    dst = runs / TZ / "tiny_stats"
    dst.mkdir(parents=True)
    for name in ("run_config.json", "_claude_settings.json", "install_output.txt", "started_at"):
        shutil.copy2(SRC / name, dst / name)
    return dst


def _finish_run(dst: Path) -> None:
    for name in ("auto_eval_ticks.log", "evolve_state.json", "run_history.json", "final_result.json"):
        shutil.copy2(SRC / name, dst / name)
    shutil.copytree(SRC / "submissions", dst / "submissions")


def test_killing_sshd_mid_stream_resumes_with_exactly_the_offline_event_set(two_sshd, tmp_path):
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    s = two_sshd[0]
    runs = tmp_path / "remote" / "logs" / "runs"
    dst = _start_run(runs)
    host = _host(s, tmp_path, "box")
    feed = RemoteFeed(HostConfig("box", host.target, (str(runs),)), host=host, cache=tmp_path / "cache")
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        feed.roots(),
        docker_client=None,
        tasks_dir=TASKS,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
    )
    sup.host_lines = lambda: [feed.state_line()]
    host.start()
    assert host.wait_up(10).kind == UP
    out_lines = (SRC / "agent_output.txt").read_bytes().splitlines(keepends=True)
    log_lines = (SRC / "run_agent.log").read_bytes().splitlines(keepends=True)
    assert len(out_lines) > 40
    kill_at, back_at = len(out_lines) // 3, len(out_lines) * 2 // 3
    seen_down = False
    try:
        with open(dst / "agent_output.txt", "wb") as out, open(dst / "run_agent.log", "wb") as log:
            for i, line in enumerate(out_lines):
                out.write(line[: len(line) // 2])  # half a line first: it must wait for its newline
                out.flush()
                if i % 5 == 0:
                    feed.sync_once()
                    sup.poll_once()
                    if i == 0:  # the first sync staged the image in tmpfs: the next one writes it to
                        assert feed.mirrors[0].staged  # disk under the tailer (other inodes, same bytes)
                out.write(line[len(line) // 2 :])
                out.flush()
                if i < len(log_lines):
                    log.write(log_lines[i])
                    log.flush()
                if i == kill_at:
                    s.kill_all()  # mid-stream: the connection goes, writing goes on
                    wait_for(
                        lambda: host.state.kind not in (UP, "degraded"),
                        15,
                        "the host down with its sshd",
                        describe=lambda: host.state,
                    )
                if kill_at < i < back_at and i % 5 == 0:
                    assert feed.sync_once() is None  # down: nothing synced, nothing lost
                    sup.poll_once()
                    seen_down = seen_down or any(
                        m.startswith("box: ") and ("down" in m or "connecting" in m) for m in sup.messages
                    )
                if i == back_at:
                    s.start()
                    host.reconnect_now()
                    wait_for(lambda: host.state.kind == UP, 15, "the host up again", describe=lambda: host.state)
            log.writelines(log_lines[len(out_lines) :])
        _finish_run(dst)
        for _ in range(3):
            assert feed.sync_once() is not None
            sup.poll_once()
            time.sleep(0.05)
        # once back, the latest note says so (the runs screen's bottom line shows the latest one)
        assert feed.state_line() is not None and feed.state_line().startswith("box: up again since ")
        assert any(m.startswith("box: up again since ") for m in sup.messages), sup.messages
        assert not any("Errno" in m for m in sup.messages), sup.messages  # no Python errno text
    finally:
        sup.close()
        host.close()
    assert seen_down
    assert host.stats["connects"] == 2
    offline_db = tmp_path / "offline.duckdb"
    oc = open_db(offline_db)
    ingest_paths(oc, [runs], tasks_dir=TASKS, host="box")
    oc.close()
    conn.execute(f"ATTACH '{offline_db}' AS o (READ_ONLY)")
    src = ", ".join(f"'{x}'" for x in SOURCES)
    live_q = f"SELECT {COLS} FROM events WHERE source IN ({src})"
    off_q = f"SELECT {COLS} FROM o.events WHERE source IN ({src})"
    n = conn.execute(f"SELECT count(*) FROM ({live_q})").fetchone()[0]
    assert n > 40
    assert conn.execute(f"SELECT count(*) FROM ({live_q} EXCEPT ALL {off_q})").fetchone()[0] == 0  # no duplicate
    assert conn.execute(f"SELECT count(*) FROM ({off_q} EXCEPT ALL {live_q})").fetchone()[0] == 0  # no gap
    assert (
        conn.execute("SELECT count(*) FROM events WHERE kind = 'parse_error'").fetchone()[0]
        == conn.execute("SELECT count(*) FROM o.events WHERE kind = 'parse_error'").fetchone()[0]
    )
    keys = {r[0] for r in conn.execute("SELECT run_key FROM runs").fetchall()}
    assert keys == {f"box/{TZ}/tiny_stats"}
    conn.close()


def test_one_host_down_leaves_the_other_hosts_runs_live(two_sshd, tmp_path):
    """Two hosts, two feeds on their own threads (inotifywait where installed, else adaptive intervals); one
    sshd killed: the other host's run keeps growing in the database."""
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    feeds, dsts = [], []
    for i, s in enumerate(two_sshd):
        runs = tmp_path / f"remote{i}" / "logs" / "runs"
        dsts.append(_start_run(runs))
        host = _host(s, tmp_path, f"box{i}")
        feeds.append(
            RemoteFeed(
                HostConfig(f"box{i}", host.target, (str(runs),)),
                host=host,
                cache=tmp_path / f"cache{i}",
                min_interval_s=0.1,
                max_interval_s=0.3,
            )
        )
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        [r for f in feeds for r in f.roots()],
        docker_client=None,
        tasks_dir=TASKS,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
    )
    sup.host_lines = lambda: [f.state_line() for f in feeds]
    for f in feeds:
        f.start()
    lines = (SRC / "agent_output.txt").read_bytes().splitlines(keepends=True)

    def n_events(host: str) -> int:
        return conn.execute(
            "SELECT count(*) FROM events WHERE run_key LIKE ? AND source = 'agent_output.txt'", [f"{host}/%"]
        ).fetchone()[0]

    try:
        outs = [open(d / "agent_output.txt", "wb") for d in dsts]
        for ln in lines[:10]:
            for o in outs:
                o.write(ln)
                o.flush()

        def both_seen():
            sup.poll_once()
            return n_events("box0") > 0 and n_events("box1") > 0

        wait_for(both_seen, 20, "both hosts' runs recorded", describe=lambda: (n_events("box0"), n_events("box1")))
        two_sshd[0].kill_all()
        wait_for(
            lambda: feeds[0].host.state.kind not in (UP, "degraded"),
            15,
            "box0 down with its sshd",
            describe=lambda: feeds[0].host.state,
        )
        before = n_events("box1"), n_events("box0")
        for ln in lines[10:30]:
            for o in outs:
                o.write(ln)
                o.flush()

        def other_grew():
            sup.poll_once()
            return n_events("box1") > before[0]

        # within box0's connect timeout (10 s): box1's run does not wait for the down host's reconnects
        wait_for(
            other_grew,
            10,
            "box1's run growing while box0 is down",
            describe=lambda: (n_events("box1"), before, sup.messages[-5:]),
        )
        assert n_events("box0") == before[1]  # the down host's run stands still, nothing invented
        assert any(m.startswith("box0: ") and ("down" in m or "connecting" in m) for m in sup.messages), sup.messages
        # up: its only line says so (after the "connecting" line of its first connection, not left standing)
        assert all(m.startswith("box1: up since ") for m in sup.messages if m.startswith("box1:")), sup.messages
        assert feeds[1].host.state.kind == UP
        for o in outs:
            o.close()
    finally:
        for f in feeds:
            f.close()
        sup.close()
        conn.close()


def test_cli_ingest_over_ssh_config_alias_and_hosts_file(two_sshd, tmp_path):
    """`edgetui ingest --host alias:/path` and `--host NAME` of hosts.toml, with HOME's ~/.ssh/config
    (alias, port, user, identity file, known_hosts) read by asyncssh itself."""
    s = two_sshd[0]
    runs = tmp_path / "remote" / "logs" / "runs"
    shutil.copytree(GENUINE / "runs" / TZ, runs / TZ, copy_function=shutil.copy2)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    s.known_hosts(home / ".ssh" / "known_hosts")
    (home / ".ssh" / "config").write_text(
        f"Host devbox\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.user_key}\n"
    )
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[hosts.lab]\nssh = "devbox"\nroots = ["{runs}"]\n')
    env = {**os.environ, "HOME": str(home), "EDGETUI_HOSTS_FILE": str(hosts), "XDG_CACHE_HOME": str(tmp_path / "xc")}
    env.pop("SSH_AUTH_SOCK", None)
    db = tmp_path / "cli.duckdb"
    exe = [str(Path(sys.executable).parent / "edgetui")]
    r = subprocess.run(
        [*exe, "--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), "--host", f"devbox:{runs}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [*exe, "--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), "--host", "lab"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    import duckdb

    c = duckdb.connect(str(db), read_only=True)
    keys = sorted(k for (k,) in c.execute("SELECT run_key FROM runs").fetchall())
    c.close()
    assert keys == [f"lab/{TZ}/tiny_stats"]  # devbox is lab's ssh target: one machine, one run
    # a bad file of the remote run is named where it lives (host:remote path and its byte), not
    # by the local image the ingest read it from
    bad = runs / TZ / "tiny_stats" / "final_result.json"
    bad.write_bytes(bad.read_bytes()[:20])
    r = subprocess.run(
        [*exe, "--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), "--host", "lab"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "final_result.json" in ln]
    assert len(said) == 1 and said[0].startswith(f"edgetui: lab:{bad}: ") and "byte " in said[0], r.stderr
    assert str(tmp_path / "xc") not in r.stderr, r.stderr
    # an unknown host key: exit 1 and the command that trusts it
    (home / ".ssh" / "known_hosts").write_text("")
    r = subprocess.run(
        [*exe, "--db", str(db), "ingest", "-q", "--host", f"devbox:{runs}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 1 and f"ssh-keyscan -p {s.port} 127.0.0.1" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.asyncio
async def test_the_app_shows_a_remote_hosts_runs_beside_local_ones_with_its_state(two_sshd, tmp_path, monkeypatch):
    """EdgeTUIApp (Pilot) with a local runs root and a host of hosts.toml reached through an
    ~/.ssh/config alias: both runs in one runs screen, the host column marking the host up, then
    down once its sshd is killed (the local run still listed)."""
    from edgetui.views.app import EdgeTUIApp, LiveConfig
    from edgetui.views.screens.runs import RunsScreen

    s = two_sshd[0]
    remote = tmp_path / "remote" / "logs" / "runs"
    shutil.copytree(GENUINE / "runs" / TZ, remote / TZ, copy_function=shutil.copy2)
    local = tmp_path / "local" / "runs"
    shutil.copytree(GENUINE / "runs" / TZ, local / TZ, copy_function=shutil.copy2)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    s.known_hosts(home / ".ssh" / "known_hosts")
    (home / ".ssh" / "config").write_text(
        f"Host devbox\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.user_key}\n"
    )
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(f'[hosts.lab]\nssh = "devbox"\nroots = ["{remote}"]\n')
    for k, v in (("HOME", home), ("XDG_CACHE_HOME", tmp_path / "xc"), ("XDG_CONFIG_HOME", tmp_path / "xcfg")):
        monkeypatch.setenv(k, str(v))
    hs = load_hosts(hosts)
    app = EdgeTUIApp(
        tmp_path / "app.duckdb",
        live=LiveConfig([local], home=True, interval=0.5, docker=False, hosts=hs),
        on_empty=lambda p: None,
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: isinstance(app.screen, RunsScreen), what="runs screen")
        screen = app.screen
        await _until(pilot, lambda: len(screen.runs) == 2, timeout=30, what="the local and the remote run")
        assert {r.run_key for r in screen.runs} == {f"local/{TZ}/tiny_stats", f"lab/{TZ}/tiny_stats"}
        await _until(pilot, lambda: any(r.startswith("● lab") for r in _rows(screen)), what="lab up")
        assert any(r.startswith("local ") for r in _rows(screen))
        s.kill_all()
        await _until(pilot, lambda: any(r.startswith("✗ lab") for r in _rows(screen)), timeout=20, what="lab down")
        await _until(pilot, lambda: any(m.startswith("lab: down") for m in screen.messages), what="a down line")
        assert len(screen.runs) == 2
