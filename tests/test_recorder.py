"""Recorder and ingest: idempotency, kill -9 resume, secrets, bad input, the DB holder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main
from edgetui.store.database import DatabaseBusy, open_db

from helpers_stream import stream_lines

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, lines: list[bytes], end: bytes = b"\n") -> Path:
    path.write_bytes(b"".join(l + end for l in lines))
    return path


def _count(db: Path, sql: str, *params):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, list(params)).fetchall()
    finally:
        c.close()


def test_reingest_same_bytes_adds_nothing(tmp_path, db_path):
    f = _write(tmp_path / "t.jsonl", stream_lines(50))
    assert main(["--db", str(db_path), "ingest", "-q", str(f)]) == 0
    n1 = _count(db_path, "SELECT count(*), count(DISTINCT event_id) FROM events")[0]
    assert n1[0] == n1[1] and n1[0] > 150
    assert main(["--db", str(db_path), "ingest", "-q", str(f)]) == 0
    # a copy of the same bytes elsewhere also maps to the same run and rows
    other = tmp_path / "copy"
    other.mkdir()
    g = other / "t.jsonl"
    g.write_bytes(f.read_bytes())
    assert main(["--db", str(db_path), "ingest", "-q", str(g)]) == 0
    assert _count(db_path, "SELECT count(*) FROM events")[0][0] == n1[0]


def test_usage_counted_once_per_message(tmp_path, db_path):
    f = _write(tmp_path / "t.jsonl", stream_lines(20))
    main(["--db", str(db_path), "ingest", "-q", str(f)])
    # 20 messages, each split over two lines repeating usage: counted once each
    ((inp, out, cr, cw, stated),) = _count(
        db_path, "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, stated_cost_usd FROM runs"
    )
    assert (inp, out, cr, cw) == (200, 100, 2000, 140)
    assert stated == pytest.approx(1.5)


def _big_transcript(path: Path, turns: int) -> Path:
    lines: list[bytes] = []
    for seg in range(3):
        lines += stream_lines(turns, tag=f"seg{seg}")
    lines.insert(5, b"WARNING: not json at all")
    return _write(path, lines)


def test_kill9_then_resume_equals_uninterrupted(tmp_path):
    f = _big_transcript(tmp_path / "big.jsonl", 6000)
    clean = tmp_path / "clean.duckdb"
    killed = tmp_path / "killed.duckdb"
    assert main(["--db", str(clean), "ingest", "-q", str(f)]) == 0
    env = dict(os.environ, EDGETUI_BATCH_EVENTS="500")
    code = f"from edgetui.cli.main import main; main(['--db', {str(killed)!r}, 'ingest', '-q', {str(f)!r}])"
    kills = 0
    for delay in (1.2, 2.0):
        p = subprocess.Popen([sys.executable, "-c", code], env=env)
        time.sleep(delay)
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            kills += 1
        p.wait()
    assert kills >= 1, "ingest finished before it could be killed; make the input bigger"
    # after the kill(s): the partial database opens, then a normal run completes it
    assert main(["--db", str(killed), "ingest", "-q", str(f)]) == 0
    c = duckdb.connect(str(killed))
    c.execute(f"ATTACH '{clean}' AS clean (READ_ONLY)")
    cols = (
        'event_id, run_key, kind, t, t_source, source, generation, "offset", sub, summary, level, segment, '
        "message_id, tool_use_id, parent_tool_use_id, round, input_tokens, output_tokens, data, raw"
    )
    a = c.execute(
        f"SELECT count(*) FROM (SELECT {cols} FROM events EXCEPT SELECT {cols} FROM clean.events)"
    ).fetchone()[0]
    b = c.execute(
        f"SELECT count(*) FROM (SELECT {cols} FROM clean.events EXCEPT SELECT {cols} FROM events)"
    ).fetchone()[0]
    n = c.execute("SELECT count(*) FROM events").fetchone()[0]
    rcols = "run_key, n_events, input_tokens, output_tokens, stated_cost_usd, status"
    r = c.execute(f"SELECT count(*) FROM (SELECT {rcols} FROM runs EXCEPT SELECT {rcols} FROM clean.runs)").fetchone()[
        0
    ]
    assert (a, b, r) == (0, 0, 0)
    assert n == c.execute("SELECT count(*) FROM clean.events").fetchone()[0] > 50000


def test_bad_input_kept_as_parse_errors(tmp_path, db_path, capsys):
    good = stream_lines(3)
    raw_bad = b"\xff\xfe not utf8 \x00"
    huge = b'{"type": "user", "x": "' + b"y" * (21 * 1024 * 1024) + b'"}'
    lines = [good[0], b"bash: warning: setlocale: LC_ALL", raw_bad, huge, *good[1:], b'{"type": "assistant", "mess']
    f = tmp_path / "bad.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines))  # BOM, CRLF, truncated last line
    rc = main(["--db", str(db_path), "ingest", "-q", str(f)])
    assert rc == 0
    err = capsys.readouterr().err
    assert "bad.jsonl @ byte" in err and "Traceback" not in err
    rows = _count(db_path, 'SELECT "offset", raw FROM events WHERE kind = \'parse_error\' ORDER BY "offset"')
    offsets = [r[0] for r in rows]
    # offsets are byte offsets in the file (BOM = 3 bytes, CRLF line ends)
    off = 3
    expect = []
    huge_off = None
    for l in lines:
        if l in (lines[1], lines[2], lines[-1]):
            expect.append(off)
        if l is huge:
            huge_off = off
        off += len(l) + 2
    assert offsets == expect
    assert rows[1][1] == raw_bad
    # the 21 MB line is parsed under the long-line rule: its payload keeps head and tail, and the
    # event says the line's full size and byte range
    data = json.loads(_count(db_path, 'SELECT data FROM events WHERE "offset" = ?', huge_off)[0][0])
    assert data["long_line"]["bytes"] == len(huge) + 2 and data["long_line"]["range"] == [
        huge_off,
        huge_off + len(huge) + 2,
    ]
    assert data["long_line"]["cut"] and len(json.dumps(data)) < 600_000
    # the good lines still loaded
    assert _count(db_path, "SELECT count(*) FROM events WHERE kind = 'tool_call'")[0][0] == 3


def test_empty_and_missing_files(tmp_path, db_path, capsys):
    e = tmp_path / "empty.jsonl"
    e.write_bytes(b"")
    assert main(["--db", str(db_path), "ingest", "-q", str(e)]) == 1  # the only path, and nothing recorded
    assert "empty.jsonl: empty file; nothing recorded" in capsys.readouterr().err
    assert main(["--db", str(db_path), "ingest", "-q", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert "nope: no such file or directory" in err and "Traceback" not in err


def _plant_run(root: Path, secret: str, admin: str) -> Path:
    td = root / "runs" / "r1" / "gitlet"
    (td / "submissions" / "agent-1").mkdir(parents=True)
    (root / ".judge-admin-secret").write_text(admin + "\n")
    cfg = {
        "task_id": "gitlet",
        "agent": "claude-code",
        "model": "claude-opus-4-8",
        "timeout": 3600,
        "api_key": secret,
        "extra_env": {"MY_API_TOKEN": secret, "PLAIN": "hello"},
    }
    (td / "run_config.json").write_text(json.dumps(cfg))
    (td.parent / "run_config.json").write_text(json.dumps({"run_id": "r1", "tasks": {"gitlet": cfg}}))
    (td / "started_at").write_text("2026-07-17T14:00:00\n1784296800.0\n")
    (td / "run_agent.log").write_text(
        "2026-07-17 14:00:01,000 - INFO - Running agent: claude -p ... (timeout=3600s)\n"
        f"2026-07-17 14:00:02,000 - INFO - using key {secret} and admin {admin}\n"
    )
    lines = stream_lines(2)
    lines.insert(
        2,
        json.dumps(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_x", "content": f"env: KEY={secret} ADMIN={admin}"}
                    ],
                },
            }
        ).encode(),
    )
    _write(td / "agent_output.txt", lines)
    (td / "submissions" / "agent-1" / "report.json").write_text(
        json.dumps(
            {
                "task_id": "gitlet",
                "submission_id": "abc",
                "total_tests": 1,
                "passed": 1,
                "failed": 0,
                "errors": 0,
                "pass_rate": 1.0,
                "score": None,
                "summary": f"ok {secret}",
                "submitted_at": 1784296900.0,
            }
        )
    )
    return root / "runs"


def test_secrets_never_stored_or_exported(tmp_path, db_path):
    secret = "sk-ant-api03-PLANTEDplantedPLANTED0123456789"
    admin = "adminSECRETvalue-9f8e7d6c5b4a"
    runs = _plant_run(tmp_path / "logs", secret, admin)
    assert main(["--db", str(db_path), "ingest", "-q", str(runs)]) == 0
    assert _count(db_path, "SELECT count(*) FROM runs")[0][0] == 1
    out = tmp_path / "export"
    assert main(["--db", str(db_path), "export", str(out)]) == 0
    blobs = [db_path.read_bytes()] + [p.read_bytes() for p in out.rglob("*") if p.is_file()]
    wal = Path(str(db_path) + ".wal")
    if wal.exists():
        blobs.append(wal.read_bytes())
    for b in blobs:
        assert secret.encode() not in b and secret[:20].encode() not in b
        assert admin.encode() not in b
    # the non-secret value is still there
    assert _count(db_path, "SELECT count(*) FROM runs WHERE config::VARCHAR LIKE '%hello%'")[0][0] == 1


def test_second_process_reads_through_holder(tmp_path, db_path, capsys):
    f = _write(tmp_path / "t.jsonl", stream_lines(5))
    assert main(["--db", str(db_path), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    holder_code = (
        "import sys,time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db_path)!r});h=holder_server(c,{str(db_path)!r});print('ready',flush=True);time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", holder_code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        with pytest.raises(DatabaseBusy) as ei:
            open_db(db_path, read_only=True)
        assert str(p.pid) in str(ei.value)
        # `edgetui sql` and `edgetui runs` still answer, through the holder
        assert main(["--db", str(db_path), "sql", "SELECT count(*) AS n FROM events", "--format", "json"]) == 0
        out = capsys.readouterr().out
        assert json.loads(out)[0]["n"] > 10
        assert main(["--db", str(db_path), "runs", "--format", "csv"]) == 0
        assert "t,transcript" in capsys.readouterr().out
        # writes are not forwarded
        assert main(["--db", str(db_path), "sql", "DELETE FROM events"]) == 2
        assert "only read-only statements" in capsys.readouterr().err
    finally:
        p.kill()
        p.wait()
    # with the holder gone without cleanup and the file free again, plain reads work
    assert main(["--db", str(db_path), "sql", "SELECT count(*) FROM runs", "--format", "csv"]) == 0


def test_busy_without_holder_names_pid_and_snapshot(tmp_path, db_path, capsys):
    f = _write(tmp_path / "t.jsonl", stream_lines(5))
    assert main(["--db", str(db_path), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    code = f"import time,duckdb;c=duckdb.connect({str(db_path)!r});print('ready',flush=True);time.sleep(60)"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert main(["--db", str(db_path), "sql", "SELECT 1"]) == 2
        err = capsys.readouterr().err
        assert f"process {p.pid}" in err and "--snapshot" in err
        assert (
            main(["--db", str(db_path), "sql", "SELECT count(*) AS n FROM runs", "--format", "json", "--snapshot"]) == 0
        )
        assert json.loads(capsys.readouterr().out)[0]["n"] == 1
    finally:
        p.kill()
        p.wait()


def _same_events(multi: Path, single: Path):
    """A connection to ``multi`` (``single`` attached as ``s``) after asserting that both hold the
    same events (EXCEPT both ways)."""
    c = duckdb.connect(str(multi))
    c.execute(f"ATTACH '{single}' AS s (READ_ONLY)")
    cols = 'event_id, kind, t, t_source, "offset", sub, summary, data, raw, input_tokens, segment'
    assert (
        c.execute(f"SELECT count(*) FROM (SELECT {cols} FROM events EXCEPT SELECT {cols} FROM s.events)").fetchone()[0]
        == 0
    )
    assert (
        c.execute(f"SELECT count(*) FROM (SELECT {cols} FROM s.events EXCEPT SELECT {cols} FROM events)").fetchone()[0]
        == 0
    )
    return c


def test_parsing_process_gives_the_same_rows(tmp_path, monkeypatch):
    """Big transcripts are parsed in a second process; the rows must be identical."""
    import edgetui.record.line_recording as ingest_mod

    f = _big_transcript(tmp_path / "mid.jsonl", 800)
    single = tmp_path / "single.duckdb"
    multi = tmp_path / "multi.duckdb"
    monkeypatch.setenv("EDGETUI_NO_MP", "1")
    assert main(["--db", str(single), "ingest", "-q", str(f)]) == 0
    monkeypatch.delenv("EDGETUI_NO_MP")
    monkeypatch.setattr(ingest_mod, "MP_MIN_BYTES", 1)
    monkeypatch.setattr(ingest_mod, "BATCH_BYTES", 64 * 1024)  # many commits ...
    monkeypatch.setattr(ingest_mod, "CHILD_BATCH_BYTES", 16 * 1024)  # ... of several batches from the queue
    commits = []
    real_commit = ingest_mod.Recorder.commit_batch
    monkeypatch.setattr(
        ingest_mod.Recorder,
        "commit_batch",
        lambda self, rk, ev, cur=None, **kw: (
            commits.append((getattr(ev, "num_rows", None), cur and cur["offset"]))
            or real_commit(self, rk, ev, cur, **kw)
        ),
    )
    called = []
    real = ingest_mod._ingest_lines_mp
    monkeypatch.setattr(ingest_mod, "_ingest_lines_mp", lambda *a, **k: called.append(1) or real(*a, **k))
    assert main(["--db", str(multi), "ingest", "-q", str(f)]) == 0
    assert called
    c = _same_events(multi, single)
    assert c.execute("SELECT count(*) FROM events").fetchone()[0] > 7000
    # several queue batches per transaction, each with the cursor after its last line; same final cursor
    offs = [o for _, o in commits if o is not None]
    assert len(offs) >= 10 and offs == sorted(offs)
    assert f.stat().st_size // len(offs) >= 64 * 1024 * 0.9  # commits of ~BATCH_BYTES, not of 16 KiB
    q = 'SELECT "offset", done, size FROM {}source_cursors'
    assert (
        c.execute(q.format("")).fetchall()
        == c.execute(q.format("s.")).fetchall()
        == [(f.stat().st_size, True, f.stat().st_size)]
    )


def test_prewarmed_parsing_process(tmp_path, monkeypatch):
    """``edgetui ingest BIG_FILE`` starts the parsing process before its imports (edgetui/parsers/spare_parsing_process.py);
    the ingest takes that one (the same rows as one process), and one left untaken (nothing to read
    this time) is stopped when the command ends."""
    import edgetui.record.line_recording as ingest_mod
    from edgetui.parsers import spare_parsing_process as prewarm

    f = _big_transcript(tmp_path / "mid.jsonl", 400)
    single, multi = tmp_path / "single.duckdb", tmp_path / "multi.duckdb"
    monkeypatch.setenv("EDGETUI_NO_MP", "1")
    assert main(["--db", str(single), "ingest", "-q", str(f)]) == 0
    monkeypatch.delenv("EDGETUI_NO_MP")
    monkeypatch.setattr(ingest_mod, "MP_MIN_BYTES", 1)
    monkeypatch.setattr(prewarm, "MP_MIN_BYTES", 1)
    started, taken = [], []
    real_start, real_take = prewarm.start, prewarm.take
    monkeypatch.setattr(prewarm, "start", lambda: (real_start(), started.append(prewarm._ready)))
    monkeypatch.setattr(prewarm, "take", lambda: taken.append(real_take()) or taken[-1])
    assert main(["--db", str(multi), "ingest", "-q", str(f)]) == 0
    assert len(started) == 1 and started[0] is not None and taken and taken[0] is started[0]
    assert started[0][0].exitcode == 0  # (it parsed the file and ended)
    c = _same_events(multi, single)
    assert c.execute("SELECT count(*) FROM events").fetchone()[0] > 3000
    c.close()
    started.clear()
    taken.clear()
    assert main(["--db", str(multi), "ingest", "-q", str(f)]) == 0  # (nothing new to read)
    assert len(started) == 1 and started[0] is not None and not started[0][0].is_alive()
    assert prewarm._ready is None


@pytest.mark.parametrize("mp", [False, True])
def test_growing_file_reingested_loses_nothing(tmp_path, monkeypatch, mp):
    """A transcript copied while it was being written ends mid-line; ingesting the complete file
    later must give exactly the rows of ingesting the complete file once."""
    import edgetui.record.line_recording as ingest_mod

    if mp:
        monkeypatch.setattr(ingest_mod, "MP_MIN_BYTES", 1)
    full = b"".join(l + b"\n" for l in stream_lines(40))
    cut = full.rfind(b"\n", 0, len(full) // 2) + 30  # 30 bytes into a line
    f = tmp_path / "grow.jsonl"
    f.write_bytes(full[:cut])
    db = tmp_path / "grow.duckdb"
    ref = tmp_path / "ref.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    assert _count(db, "SELECT count(*) FROM events WHERE kind = 'parse_error'")[0][0] == 1  # the cut line, kept
    f.write_bytes(full)
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    assert main(["--db", str(ref), "ingest", "-q", str(f)]) == 0
    cols = 'event_id, kind, "offset", sub, summary, data, raw'
    got = set(_count(db, f"SELECT {cols} FROM events"))
    want = set(_count(ref, f"SELECT {cols} FROM events"))
    assert got == want and len(want) == 40 * 3 + 2 + 1  # no parse error left, nothing lost


def test_close_when_idle_waits_for_a_cursor_mid_query_and_then_closes(tmp_path):
    """DuckDB refuses to close a connection whose cursor is mid-query; the app's quit path waits."""
    import threading

    import duckdb

    from edgetui.store.database import close_when_idle

    conn = duckdb.connect(str(tmp_path / "busy.duckdb"))
    started, result = threading.Event(), {}

    def reader() -> None:
        with conn.cursor() as cur:
            started.set()
            result["n"] = cur.execute("SELECT count(*) FROM range(400000000) t(i) WHERE i % 7 = 0").fetchall()[0][0]

    th = threading.Thread(target=reader)
    th.start()
    started.wait()
    time.sleep(0.05)
    with pytest.raises(duckdb.Error, match="busy"):  # the behaviour the helper exists for
        conn.close()
    assert close_when_idle(conn, timeout=60)
    th.join()
    assert result["n"] == 57142858  # the reader finished its query; nothing was cut off
    with pytest.raises(duckdb.Error):
        conn.execute("SELECT 1")  # and the connection is really closed
    assert close_when_idle(conn)  # closing twice is not an error


def test_batch_new_run_row_written_once_with_its_final_columns(tmp_path):
    """Batch mode: new runs' upserts and the updates after them are one INSERT of their runs rows
    (at the commit), with every column as the separate statements would have left it; a rollback
    leaves no row and the run is new again afterwards."""
    from edgetui.records import RunInfo
    from edgetui.record.recorder import Recorder

    conn = open_db(tmp_path / "b.duckdb")
    rec = Recorder(conn)
    rec.batch_mode = True
    runs_sql: list[str] = []

    class Counting:  # the Recorder's connection, counting the statements that write runs
        def __getattr__(self, name):
            return getattr(conn, name)

        def execute(self, sql, *a):
            if sql.startswith(("INSERT INTO runs", "UPDATE runs")):
                runs_sql.append(sql.split(" (")[0].split(" SET")[0])
            return conn.execute(sql, *a)

    rec.conn = Counting()
    info = RunInfo(run_id="r1", task_id="t1", run_dir="/x/r1/t1", layout="flat", agent="a", started_at=10.0)
    with rec.transaction():
        assert rec.upsert_run("local/r1/t1", info) is False
        rec.update_run("local/r1/t1", model="m1")
        rec.update_run("local/r1/t1", status="finished", model="m2", n_events=3)
        rec.flush_run()
        info3 = RunInfo(run_id="r3", task_id="t1", run_dir="/x/r3/t1", layout="flat", agent="b")
        assert rec.upsert_run("local/r3/t1", info3) is False
        rec.update_run("local/r1/t1", n_messages=0)  # a held row still takes updates
        rec.update_run("local/r3/t1", status="running", n_events=None, n_messages=None)
        assert rec.held_run("local/r1/t1")["model"] == "m2" and rec.held_run("local/r3/t1")["agent"] == "b"
    assert runs_sql == ["INSERT INTO runs"]  # both rows (the same columns set), one statement
    row = conn.execute(
        "SELECT run_id, agent, model, status, n_events, n_messages, started_at FROM runs ORDER BY run_id"
    ).fetchall()
    assert row == [("r1", "a", "m2", "finished", 3, 0, 10.0), ("r3", "b", None, "running", None, None, None)]
    assert rec.held_run("local/r1/t1") is None
    info2 = RunInfo(run_id="r2", task_id="t1", run_dir="/x/r2/t1", layout="flat")
    with pytest.raises(RuntimeError):
        with rec.transaction():
            rec.upsert_run("local/r2/t1", info2)
            raise RuntimeError("boom")
    assert conn.execute("SELECT count(*) FROM runs WHERE run_key = 'local/r2/t1'").fetchall() == [(0,)]
    with rec.transaction():
        assert rec.upsert_run("local/r2/t1", info2) is False  # new again: no row
    assert conn.execute("SELECT count(*) FROM runs WHERE run_key = 'local/r2/t1'").fetchall() == [(1,)]
    conn.close()
