"""The holder socket under hostile use: real processes, real files, real sockets.

* only read-only statements run (every statement checked, EXPLAIN ANALYZE refused), in a
  transaction that is rolled back;
* 2,000 stalled half-requests leave threads and descriptors bounded and a legitimate
  client is still answered within a second;
* the socket directory is checked (a directory another user made first is not used);
* a holder that dies mid-query gives a one-line message.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgetui.cli import main
from edgetui.db import open_db
from edgetui.holder import MAX_PENDING, WORKERS, HolderServer, ask_holder, check_read_only, socket_path


def _holder_process(db: Path, env: dict | None = None, extra: str = "") -> subprocess.Popen:
    code = (
        "import sys,time;from edgetui.db import open_db,HolderServer;"
        f"c=open_db({str(db)!r});c.execute('CREATE TABLE IF NOT EXISTS probe(x INTEGER)');"
        "c.execute('INSERT INTO probe VALUES (1),(2),(3)');"
        f"h=HolderServer(c,{str(db)!r});{extra}print('ready',h.path,flush=True);time.sleep(120)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, **(env or {})})
    line = p.stdout.readline().split()
    assert line and line[0] == "ready", line
    return p


@pytest.fixture
def holder(tmp_path):
    db = tmp_path / "h.duckdb"
    p = _holder_process(db)
    yield db, p
    p.kill()
    p.wait()


def test_only_read_only_statements_run(holder, capsys):
    db, _ = holder
    assert ask_holder(db, "SELECT count(*) FROM probe").rows == [(3,)]
    assert ask_holder(db, "DESCRIBE probe").rows[0][0] == "x"
    assert ask_holder(db, "SUMMARIZE probe").rows
    assert ask_holder(db, "EXPLAIN SELECT * FROM probe").rows
    refused = [
        "SELECT 1; DELETE FROM probe",
        "DELETE FROM probe",
        "CREATE TABLE evil(x INTEGER)",
        f"COPY probe TO '{db.parent / 'out.csv'}'",
        f"ATTACH '{db.parent / 'other.duckdb'}' AS o; CREATE TABLE o.t(x INTEGER)",
        "SET threads = 1",
        "RESET threads",
        "PRAGMA enable_profiling",
        "CALL pragma_version()",
        "EXPLAIN ANALYZE DELETE FROM probe",
        "INSTALL httpfs",
        "CHECKPOINT",
    ]
    for sql in refused:
        with pytest.raises(RuntimeError) as ei:
            ask_holder(db, sql)
        msg = str(ei.value)
        assert msg.startswith("refused:") and "\n" not in msg, (sql, msg)
    # nothing happened
    assert ask_holder(db, "SELECT count(*) FROM probe").rows == [(3,)]
    assert not (db.parent / "out.csv").exists() and not (db.parent / "other.duckdb").exists()
    assert ask_holder(db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'evil'").rows == [(0,)]
    # the CLI says it in one line, exit status 2
    assert main(["--db", str(db), "sql", "SELECT 1; DELETE FROM probe"]) == 2
    err = capsys.readouterr().err
    assert "refused: a DELETE statement" in err and err.count("\n") == 1


def test_check_read_only_uses_duckdb_statement_types():
    check_read_only("WITH a AS (SELECT 1) SELECT * FROM a")
    check_read_only("FROM (VALUES (1)) t")
    for bad in ("SELECT 1;\nUPDATE t SET x = 1", "explain   analyze select 1", "select 1; pragma version"):
        with pytest.raises(ValueError):
            check_read_only(bad)


def _threads_and_fds(pid: int) -> tuple[int, int]:
    threads = int([ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if ln.startswith("Threads:")][0].split()[1])
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


def test_two_thousand_stalled_clients_stay_bounded(holder):
    db, p = holder
    path = str(socket_path(db))
    assert ask_holder(db, "SELECT count(*) FROM probe").rows == [(3,)]  # DuckDB's own threads start now
    base_threads, base_fds = _threads_and_fds(p.pid)
    stalled = []
    peak_threads, peak_fds = base_threads, base_fds
    try:
        for i in range(2000):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(path)
            except (BlockingIOError, ConnectionRefusedError, OSError):
                pass
            try:
                s.send(b'{"sql": "SELECT')  # half a request, never finished
            except OSError:
                pass
            stalled.append(s)
            if i % 200 == 199:
                t, f = _threads_and_fds(p.pid)
                peak_threads, peak_fds = max(peak_threads, t), max(peak_fds, f)
        t0 = time.monotonic()
        res = ask_holder(db, "SELECT count(*) FROM probe", timeout=5)
        answered_in = time.monotonic() - t0
        t, f = _threads_and_fds(p.pid)
        peak_threads, peak_fds = max(peak_threads, t), max(peak_fds, f)
    finally:
        for s in stalled:
            s.close()
    assert res.rows == [(3,)]
    assert answered_in < 1.0, answered_in
    assert peak_threads <= base_threads + 2, (base_threads, peak_threads)  # no thread per connection
    # waiting connections are bounded (+ the listen backlog the kernel holds, which the process does not)
    assert peak_fds <= base_fds + MAX_PENDING + 4, (base_fds, peak_fds)
    assert WORKERS <= 4


def test_slow_request_times_out_and_oversized_request_is_refused(holder):
    db, _ = holder
    path = str(socket_path(db))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        s.sendall(b'{"sql": "SEL')
        t0 = time.monotonic()
        reply = s.recv(4096)
        waited = time.monotonic() - t0
    assert b"no request within" in reply and 4.0 < waited < 8.0
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        try:
            s.sendall(b'{"sql": "' + b"x" * (2 << 20))
        except OSError:
            pass  # the holder may close before everything is sent
        reply = s.recv(4096)
    assert b"request over 1 MiB" in reply


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create a second real user for the test")
def test_socket_dir_made_first_by_another_user_is_not_used(tmp_path):
    """Without $XDG_RUNTIME_DIR the socket goes to $TMPDIR/edgetui-<uid>; another local user can
    make that directory first. It must not be used (nor silently disable the socket)."""
    other = "edgetui-other"
    if subprocess.run(["id", other], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--no-create-home", other], check=True, capture_output=True)
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="edgetui-tmpdir-", dir="/tmp"))  # reachable by the other user
    os.chmod(tmp, 0o1777)
    request_cleanup = lambda: shutil.rmtree(tmp, ignore_errors=True)  # noqa: E731
    squat = tmp / f"edgetui-{os.getuid()}"
    subprocess.run(["su", other, "-s", "/bin/sh", "-c", f"mkdir -m 0777 {squat}"], check=True)
    assert squat.stat().st_uid == pwd.getpwnam(other).pw_uid
    env = {"TMPDIR": str(tmp), "XDG_RUNTIME_DIR": ""}
    db = tmp_path / "db" / "h.duckdb"
    db.parent.mkdir()
    p = _holder_process(db, env)
    try:
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            sp = socket_path(db)
            assert sp.parent != squat and sp.parent == db.parent / f".edgetui-{os.getuid()}"
            assert (sp.parent.stat().st_mode & 0o777) == 0o700
            assert ask_holder(db, "SELECT count(*) FROM probe").rows == [(3,)]
            assert os.listdir(squat) == []  # nothing of ours went into the other user's directory
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        p.kill()
        p.wait()
        request_cleanup()


def test_holder_dying_mid_query_is_one_clear_line(tmp_path, capsys):
    db = tmp_path / "h.duckdb"
    # the holder answers nothing: its worker kills the process when a request arrives
    p = _holder_process(db, extra="import os;"
                        "import edgetui.holder as H;H.answer=lambda *a, **k: os._exit(9);")
    try:
        rc = main(["--db", str(db), "sql", "SELECT count(*) FROM probe"])
        err = capsys.readouterr().err
        assert rc == 2 and "ended before answering" in err and "Expecting value" not in err
        assert err.count("\n") == 1
    finally:
        p.kill()
        p.wait()


def test_non_numeric_schema_version_is_a_clear_error(tmp_path, capsys):
    import duckdb

    db = tmp_path / "v.duckdb"
    c = duckdb.connect(str(db))
    c.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    c.execute("INSERT INTO meta VALUES ('schema_version', 'two')")
    c.close()
    with pytest.raises(ValueError, match="not a number"):
        open_db(db)
    assert main(["--db", str(db), "runs"]) == 2
    err = capsys.readouterr().err
    assert "schema version 'two' is not a number" in err and err.count("\n") == 1
    json.dumps(err)  # one plain line
