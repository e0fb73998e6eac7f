"""Each cause of a refusal gets its own one-line message and its own user-error type
(:mod:`edgetui.errors`): a holder that serves no socket, one that does not answer, no socket
directory, a read-only file or mount, another application's file, a full disk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from edgetui import errors
from edgetui.cli.main import main
from edgetui.store.database import check_database, open_db
from edgetui.store.holder_socket import ask_holder, socket_path

CLI = [sys.executable, "-m", "edgetui.cli.main"]
SAMPLE_RUN = Path(__file__).resolve().parents[1] / "sample_runs" / "runs" / "judge-demo-001"


def _good_db(path: Path) -> Path:
    assert main(["--db", str(path), "ingest", "-q", str(SAMPLE_RUN)]) == 0
    return path


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("edgetui: error: "), err
    return err


def _hold(db: Path, extra: str = "") -> subprocess.Popen:
    """A child process holding ``db`` read-write (its PID in DuckDB's lock), then ``extra`` run."""
    code = (
        f"import sys,time;from edgetui.store.database import open_db;c=open_db({str(db)!r});{extra}"
        "print('ready',flush=True);time.sleep(120)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def _end(p: subprocess.Popen) -> None:
    p.kill()
    p.wait()
    p.stdout.close()


# ---------------------------------------------------------------------------- the holder


def _has_open(pid: int, path: Path) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            pass
    return False


def test_an_ingest_holding_the_file_is_said_to_answer_no_queries(tmp_path, capsys):
    """While an ``ingest`` holds the file (it serves no socket), ``runs`` / ``sql`` / ``tag`` said
    "read it through that process": now that it answers no queries and what to do."""
    db = _good_db(tmp_path / "i.duckdb")
    tr = tmp_path / "big.jsonl"
    line = (
        b'{"type":"assistant","message":{"id":"m%d","role":"assistant","content":[{"type":"text","text":"'
        + b"y" * 2000
        + b'"}]}}\n'
    )
    with open(tr, "wb") as f:
        for n in range(40000):
            f.write(line.replace(b"%d", str(n).encode()))
    capsys.readouterr()
    p = subprocess.Popen(
        [*CLI, "--db", str(db), "ingest", "-q", str(tr)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while not _has_open(p.pid, db):  # until the ingest holds the file (no open of ours races it)
            assert p.poll() is None and time.monotonic() < deadline, "the ingest never held the file"
            time.sleep(0.02)
        codes = [main(["--db", str(db), *argv]) for argv in (["runs"], ["sql", "SELECT 1"])]
        err = capsys.readouterr().err
        assert p.poll() is None, "the ingest ended before the commands ran"
        assert codes == [2, 2], err
        for line in err.splitlines():
            assert f"held by process {p.pid} (edgetui ingest)" in line and "answers no queries" in line, line
            assert "read it through" not in line and "--snapshot" in line and str(db) in line, line
        with pytest.raises(errors.HolderNotServing):
            from edgetui.cli.output import query_read_only

            query_read_only(db, "SELECT 1")
    finally:
        p.kill()
        p.wait()


def test_a_holder_whose_socket_refuses_is_said_not_to_answer(tmp_path, capsys):
    """The holder's socket file exists but nothing listens on it (a holder whose server stopped):
    said as such, not "read it through that process"."""
    db = _good_db(tmp_path / "r.duckdb")
    sp = socket_path(db, create=True)
    p = _hold(db, extra=(f"import socket;s=socket.socket(socket.AF_UNIX);s.bind({str(sp)!r});"))
    try:
        capsys.readouterr()
        assert main(["--db", str(db), "runs"]) == 2
        err = _one_error_line(capsys)
        assert f"held by process {p.pid}" in err and "does not answer" in err and "refuses" in err, err
        assert "read it through" not in err and "--snapshot" in err
    finally:
        _end(p)
        sp.unlink(missing_ok=True)


def test_a_stopped_holder_is_said_not_to_answer(tmp_path):
    """A holder serving its socket, stopped (SIGSTOP): the kernel accepts the connection, no reply
    comes; the reader's error says it does not answer."""
    db = _good_db(tmp_path / "s.duckdb")
    p = _hold(db, extra=f"from edgetui.record.forget_and_tag import holder_server;h=holder_server(c,{str(db)!r});")
    try:
        assert ask_holder(db, "SELECT 42").rows == [(42,)]
        os.kill(p.pid, signal.SIGSTOP)
        with pytest.raises(errors.DatabaseBusy) as busy:
            open_db(db, read_only=True)
        with pytest.raises(ConnectionError) as why:
            ask_holder(db, "SELECT 42", timeout=1.0)
        from edgetui.store.database import busy_because

        err = busy_because(busy.value, why.value)
        assert isinstance(err, errors.HolderNotAnswering)
        assert "no reply within 1 s" in str(err) and f"process {p.pid}" in str(err) and "\n" not in str(err)
    finally:
        os.kill(p.pid, signal.SIGCONT)
        _end(p)


def test_no_socket_directory_is_said_as_such(tmp_path, capsys, monkeypatch):
    """No private socket directory (both candidates are symlinks): the reader says the holder cannot
    be asked and why, not "read it through that process"."""
    (tmp_path / "d").mkdir()
    db = _good_db(tmp_path / "d" / "n.duckdb")
    p = _hold(db)
    try:
        run = tmp_path / "run"
        run.mkdir()
        uid = os.getuid()
        (run / f"edgetui-{uid}").symlink_to(tmp_path)
        (db.parent / f".edgetui-{uid}").symlink_to(tmp_path)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
        capsys.readouterr()
        assert main(["--db", str(db), "runs"]) == 2
        err = _one_error_line(capsys)
        assert f"held by process {p.pid}" in err and "cannot be asked" in err and "private directory" in err, err
        assert "read it through" not in err
    finally:
        _end(p)


# ---------------------------------------------------------------------------- read-only


def _unprivileged() -> list[str]:
    """The prefix that runs a command without root's right to write any file (root keeps its uid but
    loses CAP_DAC_OVERRIDE); nothing for a user who has no such right."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def test_a_read_only_file_opens_read_only_with_a_note(tmp_path):
    """A sound database its user cannot write (chmod 444, in a directory of mode 555): ``runs`` and
    ``sql`` answer, ``ingest`` says the file is not writable (not "damaged"), the app opens it
    read-only with a note; the file is not written."""
    d = tmp_path / "ro"
    d.mkdir()
    db = _good_db(d / "ro.duckdb")
    os.chmod(db, 0o444)
    os.chmod(d, 0o555)
    before = db.read_bytes()
    kw = dict(capture_output=True, text=True, timeout=120)
    try:
        r = subprocess.run([*_unprivileged(), *CLI, "--db", str(db), "runs", "--format", "csv"], **kw)
        assert r.returncode == 0 and "judge-demo-001" in r.stdout, r.stderr
        r = subprocess.run([*_unprivileged(), *CLI, "--db", str(db), "sql", "SELECT count(*) FROM events"], **kw)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([*_unprivileged(), *CLI, "--db", str(db), "ingest", "-q", str(SAMPLE_RUN)], **kw)
        assert r.returncode == 2 and "damaged" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert "not writable" in r.stderr and "read-only" in r.stderr and str(db) in r.stderr, r.stderr
        r = subprocess.run(
            [
                *_unprivileged(),
                sys.executable,
                "-c",
                (
                    "from edgetui.views.app import EdgeTUIApp\n"
                    "import asyncio\n"
                    f"app = EdgeTUIApp({str(db)!r}, on_empty=lambda p: None)\n"
                    "async def go():\n"
                    "    async with app.run_test() as pilot:\n"
                    "        await pilot.pause()\n"
                    "        print('READONLY', app.read_only, app.startup_error)\n"
                    "        print('NOTES', [n.message for n in app._notifications])\n"
                    "asyncio.run(go())\n"
                ),
            ],
            **kw,
        )
        assert "READONLY True None" in r.stdout, (r.stdout, r.stderr[-2000:])
        assert "opened read-only" in r.stdout and "not writable" in r.stdout, r.stdout
        assert db.read_bytes() == before
    finally:
        os.chmod(d, 0o755)


def test_a_file_this_user_may_not_read_is_not_called_damaged(tmp_path):
    d = tmp_path / "nr"
    d.mkdir()
    db = _good_db(d / "nr.duckdb")
    os.chmod(db, 0o000)
    before_mode = db.stat().st_mode
    for argv in (["runs"], ["ingest", "-q", str(SAMPLE_RUN)]):
        r = subprocess.run(
            [*_unprivileged(), *CLI, "--db", str(db), *argv], capture_output=True, text=True, timeout=120
        )
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert "may not read it" in r.stderr and "damaged" not in r.stderr and "backup" not in r.stderr, r.stderr
    assert db.stat().st_mode == before_mode
    os.chmod(db, 0o644)
    assert check_database(db) == []


@pytest.fixture
def ro_mount(tmp_path):
    """A directory bind-mounted read-only onto itself (root only)."""
    if os.geteuid() != 0:
        pytest.fail("this test makes a read-only bind mount: run it as root (CI does)")
    d = tmp_path / "mnt"
    d.mkdir()
    yield d
    subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _remount_ro(d: Path) -> None:
    for cmd in (["mount", "--bind", str(d), str(d)], ["mount", "-o", "remount,ro,bind", str(d)]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_a_sound_database_on_a_read_only_mount_opens_read_only(ro_mount, capsys):
    db = _good_db(ro_mount / "m.duckdb")
    _remount_ro(ro_mount)
    capsys.readouterr()
    assert main(["--db", str(db), "ingest", "-q", str(SAMPLE_RUN)]) == 2
    err = _one_error_line(capsys)
    assert "read-only file system" in err and "damaged" not in err and str(db) in err, err
    with pytest.raises(errors.DatabaseReadOnly):
        open_db(db)
    assert main(["--db", str(db), "runs", "--format", "csv"]) == 0
    assert "judge-demo-001" in capsys.readouterr().out
    assert check_database(db) == []
    from edgetui.views.app import EdgeTUIApp
    import asyncio

    app = EdgeTUIApp(db, on_empty=lambda p: None)

    async def go():
        async with app.run_test() as pilot:
            await pilot.pause()
            return app.read_only, app.startup_error, [n.message for n in app._notifications]

    ro, startup, notes = asyncio.run(go())
    assert ro is True and startup is None, startup
    assert any("opened read-only" in n and "read-only file system" in n for n in notes), notes


def test_a_torn_database_on_a_read_only_mount_is_read_with_a_note(ro_mount, tmp_path, capsys):
    """Torn with its WAL but not writable: reads go on (DuckDB replays the WAL in memory), one note."""
    db = ro_mount / "t.duckdb"
    conn = open_db(db)
    conn.execute("CREATE TABLE load AS SELECT range AS i FROM range(100000)")
    conn.execute("CHECKPOINT")
    conn.execute("SET wal_autocheckpoint = '1GB'")
    conn.execute("INSERT INTO load VALUES (-1)")
    data, wal = db.read_bytes(), Path(str(db) + ".wal").read_bytes()
    conn.close()
    db.write_bytes(data + b"\0" * 3000)
    Path(str(db) + ".wal").write_bytes(wal)
    _remount_ro(ro_mount)
    notes: list[str] = []
    c = open_db(db, read_only=True, note=notes.append)
    try:
        assert c.execute("SELECT count(*) FROM load").fetchone()[0] == 100001
    finally:
        c.close()
    assert len(notes) == 1 and "read as is" in notes[0]
    with pytest.raises(errors.DatabaseReadOnly):
        open_db(db)


# ---------------------------------------------------------------------------- foreign and full


def test_another_applications_file_gets_one_line_for_every_command(tmp_path, capsys):
    """``runs`` and ``sql`` on another application's DuckDB file printed DuckDB's raw catalog error
    ("Table with name runs does not exist"); now the same line as ``ingest``."""
    other = tmp_path / "other.duckdb"
    c = duckdb.connect(str(other))
    c.execute("CREATE TABLE customers (id INTEGER)")
    c.close()
    for argv in (
        ["runs"],
        ["sql", "SELECT count(*) FROM events"],
        ["ingest", "-q", str(SAMPLE_RUN)],
        ["tag", "x", "y"],
    ):
        assert main(["--db", str(other), *argv]) == 2, argv
        err = _one_error_line(capsys)
        assert "another application" in err and "customers" in err and "Catalog Error" not in err, (argv, err)
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    assert main(["--db", str(empty), "runs"]) == 2
    err = _one_error_line(capsys)
    assert "empty DuckDB database" in err and "Catalog Error" not in err, err
    with pytest.raises(errors.ForeignDatabase):
        open_db(other, read_only=True)


def test_starting_on_a_full_disk_says_so_not_cannot_rollback(tmp_path, capsys):
    """A new database on a file system with 16 kB left: the schema's COMMIT fails; that was hidden
    by "cannot rollback - no transaction is active"."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs (a full disk): run it as root (CI does)")
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True)
    assert r.returncode == 0, r.stderr
    try:
        with open(mnt / "fill", "wb") as f:
            f.write(b"\0" * (3072 - 16) * 1024)
        with pytest.raises(errors.DiskFull) as info:
            open_db(mnt / "f.duckdb")
        msg = str(info.value)
        assert "no space left on device" in msg and "cannot rollback" not in msg and str(mnt) in msg, msg
        capsys.readouterr()
        assert main(["--db", str(mnt / "f.duckdb"), "ingest", "-q", str(SAMPLE_RUN)]) == 2
        err = _one_error_line(capsys)
        assert "no space left on device" in err and "cannot rollback" not in err, err
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


@pytest.mark.parametrize("free_kb", [16, 300])
def test_the_app_starting_on_a_full_disk_says_so(tmp_path, free_kb):
    """The app's first start on a nearly full disk: with 16 kB the schema's COMMIT fails ("cannot
    rollback" before); with 300 kB the bundled sample runs fill it, and the reopen's failure left a
    closed connection behind ("Connection already closed!"). Both end the app with the disk's line."""
    import asyncio

    from edgetui.views.app import EdgeTUIApp

    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs (a full disk): run it as root (CI does)")
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True)
    assert r.returncode == 0, r.stderr
    try:
        with open(mnt / "fill", "wb") as f:
            f.write(b"\0" * (3072 - free_kb) * 1024)
        app = EdgeTUIApp(mnt / "a.duckdb")

        async def go():
            async with app.run_test() as pilot:
                deadline = time.monotonic() + 60
                while app.return_code is None and time.monotonic() < deadline:
                    await pilot.pause(0.05)
                return [n.message for n in app._notifications]

        notes = asyncio.run(go())
        assert isinstance(app.startup_exc, errors.DiskFull), (app.startup_error, notes)
        assert "no space left on device" in app.startup_error and "\n" not in app.startup_error
        assert app.return_code == errors.DiskFull.exit_code
        assert not any("already closed" in n or "cannot rollback" in n for n in notes), notes
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_user_errors_carry_their_exit_code_to_the_cli(tmp_path, capsys):
    class Custom(errors.UserError):
        exit_code = 3

    import edgetui.cli.main as cli

    def boom(db, args):
        raise Custom(f"{db}: a cause\nthat spans lines;  do this")

    orig = cli.cmd_check
    cli.cmd_check = boom
    try:
        assert main(["--db", str(tmp_path / "x.duckdb"), "check"]) == 3
    finally:
        cli.cmd_check = orig
    assert capsys.readouterr().err == f"edgetui: error: {tmp_path / 'x.duckdb'}: a cause that spans lines; do this\n"


# ---------------------------------------------------------------------------- SSH


@pytest.mark.sshd
def test_a_missing_user_known_hosts_file_is_said_with_what_to_do(tmp_path, start_sshd):
    """ssh_config's ``UserKnownHostsFile`` names a file that does not exist: asyncssh's "No such
    file or directory" became "cannot connect to testbox: No such file or directory"; now the host
    is refused naming the file and the command that trusts the host (which then works)."""

    from edgetui.hosts.ssh import HOST_KEY_REFUSED, UP, HostDown, SshHost

    s = start_sshd()
    try:
        kh = tmp_path / "nowhere" / "known_hosts"
        cfg = tmp_path / "ssh_config"
        cfg.write_text(
            f"Host testbox\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  UserKnownHostsFile {kh}\n"
        )
        h = SshHost("box", "testbox", config=[str(cfg)], client_keys=[str(s.user_key)], backoff_min=30)
        try:
            st = h.wait_up(10)
            assert st.kind == HOST_KEY_REFUSED, st
            assert "No such file" not in st.message and "\n" not in st.message
            assert f"no known host keys: {kh} (UserKnownHostsFile in ssh_config) does not exist" in st.message
            scan = f"ssh-keyscan -p {s.port} 127.0.0.1 >> {kh}"
            assert scan in st.message, st.message
            with pytest.raises(HostDown, match="no known host keys"):
                h.list("/")
        finally:
            h.close()
        kh.parent.mkdir()
        out = subprocess.run(["ssh-keyscan", "-p", str(s.port), "127.0.0.1"], capture_output=True, text=True)
        kh.write_text(out.stdout)  # what the message says to do
        h = SshHost("box", "testbox", config=[str(cfg)], client_keys=[str(s.user_key)])
        try:
            assert h.wait_up(10).kind == UP
        finally:
            h.close()
    finally:
        s.close()


def test_the_holders_name_is_its_command_not_an_option_value():
    """A holder started as ``edgetui --db s.duckdb --tasks-dir tasks`` is the app ("edgetui"), not
    "edgetui tasks"; one started as ``edgetui --db x ingest DIR`` is "edgetui ingest" (read from the
    real process's /proc/PID/cmdline)."""
    import subprocess
    import sys

    from edgetui.store.database import process_name

    cases = [
        (["--db", "s.duckdb", "--tasks-dir", "tasks"], "edgetui"),
        (["--no-docker", "--db=s.duckdb", "--runs-dir", "logs/runs", "watch"], "edgetui watch"),
        (["--db", "x.duckdb", "ingest", "runs"], "edgetui ingest"),
    ]
    for args, want in cases:
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "edgetui.cli.main", *args])
        try:
            deadline = time.monotonic() + 30  # (until the child has exec'd: its cmdline is its own)
            while b"edgetui.cli.main" not in Path(f"/proc/{p.pid}/cmdline").read_bytes():
                assert time.monotonic() < deadline, "the child never exec'd"
                time.sleep(0.01)
            assert process_name(p.pid) == want, (args, process_name(p.pid))
        finally:
            p.kill()
            p.wait()
