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
from waits import wait_for

from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.store.holder_socket import MAX_PENDING, WORKERS, ask_holder, check_read_only, socket_path

from conftest import copy_samples_db


def _holder_process(
    db: Path,
    env: dict | None = None,
    extra: str = "",
    then: str = "time.sleep(120)",
    cwd: Path | None = None,
    stdin=None,
) -> subprocess.Popen:
    code = (
        "import sys,time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});c.execute('CREATE TABLE IF NOT EXISTS probe(x INTEGER)');"
        "c.execute('INSERT INTO probe VALUES (1),(2),(3)');"
        f"h=holder_server(c,{str(db)!r});{extra}print('ready',h.path,flush=True);{then}"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        stdin=stdin,
    )
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
    threads = int(
        [ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("Threads:")][0].split()[1]
    )
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture
def patient_holder(tmp_path):
    """A holder whose request timeout is out of the way (600 s)."""
    db = tmp_path / "h.duckdb"
    p = _holder_process(db, extra="import edgetui.store.holder_socket as H;H.REQUEST_TIMEOUT_S=600.0;")
    yield db, p
    p.kill()
    p.wait()


def test_two_thousand_stalled_clients_stay_bounded(patient_holder):
    """2000 clients that send half a request: threads and fds stay bounded and a query is still answered.
    The request timeout is out of the way (600 s): only the bound on waiting connections (the oldest
    dropped for a new one) keeps the holder free, and a query stuck behind a stalled client would wait
    600 s, not the 10 s it is given."""
    db, p = patient_holder
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
        res = ask_holder(db, "SELECT count(*) FROM probe", timeout=10)  # ConnectionError if not answered in 10 s
        t, f = _threads_and_fds(p.pid)
        peak_threads, peak_fds = max(peak_threads, t), max(peak_fds, f)
    finally:
        for s in stalled:
            s.close()
    assert res.rows == [(3,)]
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
        reply = s.recv(4096)  # the deadline: socket.timeout after 10 s without the holder's reply
        waited = time.monotonic() - t0
    # not before its 5 s (a lower bound: a loaded machine only makes the wait longer)
    assert b"no request within 5 s" in reply and waited > 4.0, (reply, waited)
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
def test_socket_dir_made_first_by_another_user_is_not_used():
    """Without $XDG_RUNTIME_DIR the socket goes to $TMPDIR/edgetui-<uid>; another local user can
    make that directory first. It must not be used (nor silently disable the socket)."""
    other = "edgetui-other"
    if subprocess.run(["id", other], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--no-create-home", other], check=True, capture_output=True)
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix="edgetui-tmpdir-", dir="/tmp"))  # reachable by the other user
    os.chmod(tmp, 0o1777)
    request_cleanup = lambda: shutil.rmtree(tmp, ignore_errors=True)
    squat = tmp / f"edgetui-{os.getuid()}"
    subprocess.run(["su", other, "-s", "/bin/sh", "-c", f"mkdir -m 0777 {squat}"], check=True)
    assert squat.stat().st_uid == pwd.getpwnam(other).pw_uid
    env = {"TMPDIR": str(tmp), "XDG_RUNTIME_DIR": ""}
    # the database in the short directory too: the fallback socket goes beside it, and under tmp_path (with
    # xdist's popen-gwN/ in it) the socket path came within a byte of the 107-byte limit of a Unix socket
    # path, past it once pytest's numbered base directory reached pytest-100
    db = tmp / "db" / "h.duckdb"
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
    p = _holder_process(
        db, extra="import os;import edgetui.store.holder_socket as H;H.answer=lambda *a, **k: os._exit(9);"
    )
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


# ---------------------------------------------------------------------------- reads of the database only

#: (request, a word the one-line refusal names): every spelling that writes, changes the holder or
#: reads anything but the database
REFUSED_SPELLINGS = [
    # EXPLAIN ANALYZE runs its statement; EXPLAIN of anything but a SELECT
    ("EXPLAIN ANALYZE COPY probe TO 'out.csv'", "EXPLAIN ANALYZE"),
    ("EXPLAIN (ANALYZE) COPY probe TO 'out.csv'", "EXPLAIN ANALYZE"),
    ("explain /* a comment */ (analyse, format json) copy probe to 'out.csv'", "EXPLAIN ANALYZE"),
    ("EXPLAIN\n-- a comment\nANALYZE SELECT 1", "EXPLAIN ANALYZE"),
    ("EXPLAIN/**/ANALYZE/**/SELECT 1", "EXPLAIN ANALYZE"),
    ('EXPLAIN ("ANALYZE") SELECT 1', "EXPLAIN ANALYZE"),
    ("EXPLAIN COPY probe TO 'out.csv'", "EXPLAIN of a COPY"),
    ("EXPLAIN /* x */ COPY (SELECT 1) TO 'out.csv'", "EXPLAIN of a COPY"),
    ("EXPLAIN (FORMAT json) INSERT INTO probe VALUES (4)", "EXPLAIN of an INSERT"),
    ("EXPLAIN SELECT * FROM read_text('x')", "read_text()"),
    # table functions that change the holder
    ("SELECT * FROM enable_logging()", "enable_logging()"),
    ("FROM enable_profiling()", "enable_profiling()"),
    ("SELECT * FROM truncate_duckdb_logs()", "truncate_duckdb_logs()"),
    ("SELECT * FROM checkpoint()", "checkpoint()"),
    ("SELECT * FROM force_checkpoint()", "force_checkpoint()"),
    ("SELECT (SELECT count(*) FROM checkpoint())", "checkpoint()"),
    ("SELECT * FROM disable_logging()", "disable_logging()"),
    # functions that change state, wait, or bind a query given as text
    ("SELECT write_log('x')", "write_log()"),
    ("SELECT nextval('s')", "nextval()"),
    ("SELECT setseed(0.5)", "setseed()"),
    ("SELECT sleep_ms(100000)", "sleep_ms()"),
    ("SELECT pg_sleep(100)", "pg_sleep()"),
    ("SELECT json_serialize_plan('SELECT * FROM ''x.csv''')", "json_serialize_plan()"),
    # files, devices, directory listings, the network
    ("SELECT * FROM read_text('/dev/stdin')", "read_text()"),
    ("SELECT * FROM read_blob('/etc/hostname')", "read_blob()"),
    ("SELECT * FROM read_csv('x.csv')", "read_csv()"),
    ("SELECT * FROM read_csv_auto('x.csv')", "read_csv_auto()"),
    ("SELECT * FROM read_parquet('x.parquet')", "read_parquet()"),
    ("SELECT * FROM parquet_scan('x.parquet')", "parquet_scan()"),
    ("SELECT * FROM read_json('x.json')", "read_json()"),
    ("SELECT * FROM read_json_auto('x.json')", "read_json_auto()"),
    ("SELECT * FROM read_ndjson_objects('x.json')", "read_ndjson_objects()"),
    ("SELECT * FROM read_duckdb('other.duckdb')", "read_duckdb()"),
    ("SELECT * FROM glob('/*')", "glob()"),
    ("SELECT * FROM sniff_csv('x.csv')", "sniff_csv()"),
    ("SELECT * FROM parquet_metadata('x.parquet')", "parquet_metadata()"),
    ("SELECT * FROM parquet_schema('x.parquet')", "parquet_schema()"),
    ("SELECT * FROM query('SELECT 1')", "query()"),
    ("SELECT * FROM query_table('probe')", "query_table()"),
    ("SELECT * FROM json_execute_serialized_sql('{}')", "json_execute_serialized_sql()"),
    ("SELECT * FROM duckdb_extensions()", "duckdb_extensions()"),
    ("SELECT * FROM duckdb_secrets()", "duckdb_secrets()"),
    ("SELECT * FROM 'x.csv'", '"x.csv"'),
    ('SELECT * FROM "x.csv"', '"x.csv"'),
    ("FROM '/dev/stdin'", '"/dev/stdin"'),
    ("SELECT * FROM 'https://example.com/x.parquet'", "https://example.com/x.parquet"),
    ("SELECT * FROM 's3://bucket/x.parquet'", "s3://bucket/x.parquet"),
    ("DESCRIBE 'x.csv'", '"x.csv"'),
    ("SUMMARIZE 'x.parquet'", '"x.parquet"'),
    ('SHOW "x.csv"', '"x.csv"'),
    ("DESCRIBE SELECT * FROM 'x.csv'", '"x.csv"'),
    ("SUMMARIZE SELECT * FROM read_csv('x.csv')", "read_csv()"),
    # nested: subqueries, CTEs, lambdas, set operations, lateral joins, mixed case, comments
    ("WITH a AS (SELECT * FROM read_parquet('x')) SELECT * FROM a", "read_parquet()"),
    ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i FROM r, read_text('x')) SELECT 1", "read_text()"),
    ("SELECT * FROM probe WHERE x IN (SELECT 1 FROM read_blob('x'))", "read_blob()"),
    ("SELECT * FROM probe WHERE EXISTS (FROM 'x.csv')", '"x.csv"'),
    ("SELECT 1 UNION ALL SELECT count(*) FROM glob('*')", "glob()"),
    ("SELECT * FROM probe, LATERAL (SELECT * FROM read_text('x'))", "read_text()"),
    ("SELECT list_transform([1], lambda v: (SELECT count(*) FROM read_text('x')))", "read_text()"),
    ("SELECT x FROM probe ORDER BY (SELECT count(*) FROM sniff_csv('x'))", "sniff_csv()"),
    ("sElEcT * fRoM ReAd_TeXt('x')", "read_text()"),
    ("SELECT * FROM READ_CSV /* a comment */ ('x.csv')", "read_csv()"),
    ("SELECT 1; SELECT * FROM read_text('x')", "read_text()"),
    # types DuckDB does not know make it try to load an extension
    ("SELECT 'x'::not_a_builtin_type", "not_a_builtin_type"),
    # statements
    ("ATTACH 'other.duckdb' AS o", "an ATTACH statement"),
    ("INSTALL httpfs", "statement"),
    ("LOAD httpfs", "a LOAD statement"),
    ("COPY probe FROM 'x.csv'", "a COPY statement"),
    ("COPY probe TO 'out.csv'", "a COPY statement"),
    ("EXPORT DATABASE 'exported'", "an EXPORT statement"),
    ("CREATE VIEW v AS SELECT * FROM read_text('x')", "a CREATE statement"),
    ("CREATE MACRO m() AS TABLE SELECT * FROM read_text('x')", "a CREATE statement"),
    ("CALL enable_logging()", "a CALL statement"),
    ("PRAGMA enable_profiling", "a PRAGMA statement"),
    ("SET enable_external_access = true", "a SET statement"),
    ("PREPARE p AS SELECT * FROM read_text('x')", "a PREPARE statement"),
    ("DETACH edgetui", "a DETACH statement"),
    ("VACUUM", "a VACUUM statement"),
]


@pytest.mark.parametrize("sql,names", REFUSED_SPELLINGS, ids=[s for s, _ in REFUSED_SPELLINGS])
def test_every_spelling_of_a_write_or_a_read_beyond_the_database_is_refused(sql, names):
    with pytest.raises(ValueError) as ei:
        check_read_only(sql)
    msg = str(ei.value)
    assert msg.startswith("refused:") and "\n" not in msg, msg
    assert names in msg, msg


#: analysis SQL that must keep working through the holder (and what its first row starts with)
ALLOWED = [
    (
        "SELECT x, sum(x) OVER (ORDER BY x ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
        "row_number() OVER (PARTITION BY x % 2 ORDER BY x DESC), lag(x) OVER w FROM probe WINDOW w AS (ORDER BY x) "
        "ORDER BY x",
        (1, 1, 2, None),
    ),
    ("WITH a AS (SELECT x FROM probe), b AS MATERIALIZED (SELECT x * 2 AS y FROM a) SELECT sum(y) FROM b", (12,)),
    ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 5) SELECT max(i) FROM r", (5,)),
    (
        """SELECT json_extract_string('{"a": {"b": 7}}', '$.a.b'), '{"k": 2}'::JSON ->> 'k', """
        """json_array_length('[1,2,3]'), to_json({'x': 1})::VARCHAR""",
        ("7", "2", 3, '{"x":1}'),
    ),
    (
        "SELECT regexp_extract('run-42', '(\\d+)', 1), regexp_matches('abc', '^a'), regexp_replace('a-b', '-', '_')",
        ("42", True, "a_b"),
    ),
    (
        "SELECT strftime(TIMESTAMP '2026-12-05 01:02:03', '%Y-%m-%d %H'), "
        "date_trunc('hour', TIMESTAMP '2026-12-05 01:02:03')::VARCHAR, epoch(TIMESTAMP '1970-01-01 00:00:10')",
        ("2026-12-05 01", "2026-12-05 01:00:00", 10.0),
    ),
    ("SELECT list_transform([1, 2], lambda v: v * 10), [v + 1 FOR v IN [1, 2]], unnest([7])", ([10, 20], [2, 3], 7)),
    (
        "SELECT count(*) FILTER (WHERE x > 1), quantile_cont(x, 0.5), arg_max(x, -x), string_agg(x::VARCHAR, ',' "
        "ORDER BY x) FROM probe",
        (2, 2.0, 1, "1,2,3"),
    ),
    ("SELECT x FROM probe QUALIFY row_number() OVER (ORDER BY x DESC) = 1", (3,)),
    ("SELECT * FROM (SELECT x, x % 2 AS odd FROM probe) PIVOT (count(*) FOR odd IN (0, 1)) ORDER BY x", (1, 0, 1)),
    ("SELECT count(*) FROM main.probe JOIN range(10) r(i) ON r.i = probe.x", (3,)),
    ("SELECT count(*) FROM information_schema.tables WHERE table_name = 'probe'", (1,)),
    ("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'probe'", (1,)),
    ("SELECT column_name FROM (DESCRIBE probe)", ("x",)),
    ("SELECT name FROM pragma_table_info('probe')", ("x",)),
    ("SELECT 1 UNION ALL SELECT 2 EXCEPT SELECT 2", (1,)),
    (
        "SELECT coalesce(NULL, 5), CASE WHEN 1 < 2 THEN 'y' END, 3 BETWEEN 1 AND 4, 'a' || 'b', "
        "CAST('1.50' AS DECIMAL(5, 2))::DOUBLE, greatest(1, 9), length('abc')",
        (5, "y", True, "ab", 1.5, 9, 3),
    ),
    ("EXPLAIN SELECT * FROM probe", None),
    ("EXPLAIN (FORMAT json) SELECT * FROM probe", None),
    ("SUMMARIZE probe", None),
    ("SHOW TABLES", None),
    ("VALUES (1, 'a')", (1, "a")),
]


@pytest.fixture(scope="module")
def shared_holder(tmp_path_factory):
    db = tmp_path_factory.mktemp("shared") / "h.duckdb"
    p = _holder_process(db)
    yield db
    p.kill()
    p.wait()


@pytest.mark.parametrize("sql,first", ALLOWED, ids=[s[:60] for s, _ in ALLOWED])
def test_analysis_sql_still_runs_through_the_holder(shared_holder, sql, first):
    db = shared_holder
    res = ask_holder(db, sql, timeout=30)
    assert res.rows, sql
    if first is not None:
        assert tuple(res.rows[0]) == first


def test_refused_requests_change_nothing_in_the_holder(tmp_path):
    """Item 7: EXPLAIN ANALYZE COPY and the side-effect table functions are refused by a real holder, and
    nothing was written, logged or checkpointed."""
    db = tmp_path / "h.duckdb"
    p = _holder_process(db, cwd=tmp_path)
    try:
        before = ask_holder(
            db, "SELECT value FROM duckdb_settings() WHERE name IN ('enable_logging', 'enable_profiling') ORDER BY name"
        ).rows
        out = tmp_path / "out.csv"
        for sql in (
            f"EXPLAIN (ANALYZE) COPY probe TO '{out}'",
            f"EXPLAIN /*x*/ ANALYZE COPY probe TO '{out}'",
            f"explain\n--c\n(analyze) copy probe to '{out}'",
            f"EXPLAIN COPY probe TO '{out}'",
            "SELECT * FROM enable_logging()",
            "SELECT * FROM enable_profiling()",
            "SELECT * FROM truncate_duckdb_logs()",
            "SELECT * FROM checkpoint()",
        ):
            with pytest.raises(RuntimeError, match="^refused: ") as ei:
                ask_holder(db, sql, timeout=10)
            assert "\n" not in str(ei.value)
        assert not out.exists()
        assert {f for f in os.listdir(tmp_path) if not f.startswith(".")} <= {"h.duckdb", "h.duckdb.wal"}
        assert (
            ask_holder(
                db,
                "SELECT value FROM duckdb_settings() WHERE name IN ('enable_logging', "
                "'enable_profiling') ORDER BY name",
            ).rows
            == before
        )
    finally:
        p.kill()
        p.wait()


def test_a_qualified_name_that_is_a_file_is_refused(tmp_path):
    """DuckDB reads ``x.csv`` (schema x, table csv) as the file when no such table exists: the holder
    checks qualified names against its catalog."""
    (tmp_path / "x.csv").write_text("secret,value\n1,2\n")
    (tmp_path / "main.csv").write_text("secret,value\n1,2\n")
    db = tmp_path / "h.duckdb"
    p = _holder_process(db, cwd=tmp_path)
    try:
        for sql in (
            "SELECT * FROM x.csv",
            "SHOW x.csv",
            "DESCRIBE x.csv",
            "SUMMARIZE x.csv",
            "SELECT * FROM main.csv",
            "SELECT * FROM probe, (SELECT * FROM x.csv)",
        ):
            with pytest.raises(RuntimeError, match="^refused: ") as ei:
                ask_holder(db, sql, timeout=10)
            assert "x.csv" in str(ei.value) or "main.csv" in str(ei.value), str(ei.value)
        assert ask_holder(db, "SELECT count(*) FROM main.probe").rows == [(3,)]
    finally:
        p.kill()
        p.wait()


def test_a_fifo_read_twice_leaves_the_holder_answering(tmp_path):
    """Item 8: a read of a FIFO (no writer: open() blocks for good) used to hold a worker each; two took
    both and every later query went unanswered."""
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    db = tmp_path / "h.duckdb"
    p = _holder_process(db, cwd=tmp_path)
    try:
        for sql in (
            f"SELECT * FROM read_text('{fifo}')",
            f"SELECT * FROM read_csv('{fifo}')",
            f"SELECT * FROM '{fifo}'",
            "SELECT * FROM pipe.csv",
        ):
            with pytest.raises(RuntimeError, match="^refused: "):
                ask_holder(db, sql, timeout=10)
        assert ask_holder(db, "SELECT count(*) FROM probe", timeout=10).rows == [(3,)]
    finally:
        p.kill()
        p.wait()


def test_dev_stdin_is_not_read_by_a_query(tmp_path):
    """Item 8: the holder's standard input (the app's keypresses) is never read by a query."""
    db = tmp_path / "h.duckdb"
    p = _holder_process(
        db, stdin=subprocess.PIPE, then="print('got', sys.stdin.readline().strip(), flush=True);time.sleep(60)"
    )
    try:
        for sql in (
            "SELECT * FROM read_text('/dev/stdin')",
            "SELECT * FROM read_csv('/dev/stdin')",
            "FROM '/dev/stdin'",
            "SELECT * FROM read_blob('/proc/self/fd/0')",
        ):
            with pytest.raises(RuntimeError, match="^refused: "):
                ask_holder(db, sql, timeout=10)
        p.stdin.write("key-q\n")
        p.stdin.flush()
        assert p.stdout.readline().split() == ["got", "key-q"]  # the keypress reached its reader
    finally:
        p.kill()
        p.wait()


def test_analysis_commands_answer_the_same_through_the_holder(tmp_path, capsys, samples_template):
    """The SQL edgetui's own read commands send passes the check: their output through the holder is
    the output they print with the file free."""
    db = tmp_path / "s.duckdb"
    copy_samples_db(samples_template, db)
    commands = [
        ["runs", "--format", "json"],
        ["sql", "SELECT count(*) FROM events"],
        ["leaderboard", "--format", "json", "--include-samples", "--include-infra"],
        ["forecast", "judge-demo-001", "--format", "json"],
        ["compare", "judge-demo-001", "glm51", "--format", "json"],
        ["annotations"],
        ["report", "judge-demo-001"],
    ]
    capsys.readouterr()

    def outputs():
        got = []
        for c in commands:
            rc = main(["--db", str(db), *c])
            got.append((rc, capsys.readouterr()))
        return got

    direct = outputs()
    assert all(rc == 0 for rc, _ in direct), direct
    code = (
        "import time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});h=holder_server(c,{str(db)!r});print('ready',flush=True);time.sleep(120)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().split() == ["ready"]
        held = outputs()
    finally:
        p.kill()
        p.wait()
    assert held == direct


# ---------------------------------------------------------------------------- clients that do not read

BIG_REPLY = "SELECT repeat('x', 1000) AS pad FROM range(20000)"  # ~20 MB of JSON


def _stalled_clients(path: str, n: int) -> list[socket.socket]:
    """``n`` clients that each ask for a 20 MB reply and never read it."""
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(path)
        s.sendall(json.dumps({"sql": BIG_REPLY}).encode() + b"\n")
        out.append(s)
    return out


def _reply_started(s: socket.socket) -> bool:
    try:
        return bool(s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


def _wait_reply_started(s: socket.socket, timeout: float = 60) -> None:
    wait_for(lambda: _reply_started(s), timeout, "the holder replying to a stalled client", 0.02)


def test_clients_that_never_read_do_not_delay_others(holder):
    """Item 8: 8 clients that never read their 20 MB reply; a 9th client's SELECT 42 is answered while
    they are still stalled (before: the workers blocked up to 10 s on each stalled send, 40 s)."""
    db, p = holder
    path = str(socket_path(db))
    stalled = _stalled_clients(path, 8)
    try:
        for s in stalled[:WORKERS]:  # both workers have taken a stalled client's query
            _wait_reply_started(s)
        res = ask_holder(db, "SELECT 42", timeout=10)  # ConnectionError if not answered within 10 s
        assert res.rows == [(42,)]
        # the stalled clients were still connected and are given their whole reply once they read
        s = stalled[-1]
        s.settimeout(30)
        buf = bytearray()
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            assert chunk, "the reply ended early"
            buf += chunk
        reply = json.loads(buf)
        assert reply["columns"] == ["pad"] and len(reply["rows"]) == 20000 and reply["rows"][0] == ["x" * 1000]
    finally:
        for s in stalled:
            s.close()


def _server_side_connections(path: str) -> int:
    """Connected sockets bound to ``path`` (the holder's accepted ones) in /proc/net/unix."""
    n = 0
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        f = line.split()
        n += len(f) >= 8 and f[7] == path and f[5] == "03"
    return n


def test_a_client_that_never_reads_is_dropped(tmp_path):
    db = tmp_path / "h.duckdb"
    p = _holder_process(db, extra="import edgetui.store.holder_socket as H;H.SEND_STALL_S=1.0;")
    try:
        path = str(socket_path(db))
        assert ask_holder(db, "SELECT 1").rows == [(1,)]
        [s] = _stalled_clients(path, 1)
        _wait_reply_started(s)
        assert _server_side_connections(path) >= 1
        # the holder closes its side once it gives up
        wait_for(lambda: not _server_side_connections(path), 30, "the holder dropping a client that reads nothing", 0.1)
        s.settimeout(10)
        got = 0
        while True:
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got += len(chunk)
        assert 0 < got < 20_000_000  # part of the reply, then the end: given up
        s.close()
        assert ask_holder(db, "SELECT count(*) FROM probe").rows == [(3,)]
    finally:
        p.kill()
        p.wait()


def test_replies_waiting_for_readers_are_bounded(tmp_path):
    """At most MAX_SENDING replies wait for their readers: beyond, the one stalled longest is dropped
    (here 2; the stall timeout is out of the way)."""
    db = tmp_path / "h.duckdb"
    p = _holder_process(db, extra="import edgetui.store.holder_socket as H;H.SEND_STALL_S=600.0;H.MAX_SENDING=2;")
    try:
        path = str(socket_path(db))
        first = _stalled_clients(path, 1)[0]
        _wait_reply_started(first)
        later = _stalled_clients(path, 2)
        for s in later:
            _wait_reply_started(s)

        def read_all(s: socket.socket) -> bytes:
            s.settimeout(30)
            buf = bytearray()
            while True:
                chunk = s.recv(1 << 20)
                if not chunk:
                    return bytes(buf)
                buf += chunk

        cut = read_all(first)
        assert cut and not cut.endswith(b"\n")  # the most stalled one was given up
        whole = read_all(later[-1])
        assert len(json.loads(whole)["rows"]) == 20000
        for s in [first, *later]:
            s.close()
        assert ask_holder(db, "SELECT count(*) FROM probe").rows == [(3,)]
    finally:
        p.kill()
        p.wait()


def test_oversized_or_too_deep_sql_is_refused_in_one_line():
    from edgetui.store.read_only_sql import MAX_SQL_BYTES

    for sql in ("SELECT " + ", ".join(["1"] * (MAX_SQL_BYTES // 3 + 10)), "SELECT " + "abs(" * 600 + "1" + ")" * 600):
        with pytest.raises(ValueError) as ei:
            check_read_only(sql)
        assert str(ei.value).startswith("refused: ") and "\n" not in str(ei.value)
    check_read_only("SELECT " + "abs(" * 100 + "1" + ")" * 100)  # ordinary nesting passes
