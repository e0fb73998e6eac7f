"""Live tailing under hostile files: nothing lost, nothing recorded twice, nothing stuck.

Real files and a real DuckDB database; the supervisor is driven refresh by refresh.
Each case failed before its fix (issue: reliability, live items): a line over the
per-refresh read limit, a 200 MB line without a newline (sparse), a FIFO named
agent_output.txt, lines written just before a rename-replace, a mid-file truncation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import duckdb

from edgetui.parsers.base import LINE_WHOLE_MAX, PAYLOAD_HEAD, PAYLOAD_TAIL
from test_live_core import env, fast_settings, init_line, make_run, result_line, text_line  # noqa: F401 (fixture)


def _big_result_line(i: int, size: int) -> bytes:
    return json.dumps(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i}",
                        "content": "x" * (size - 10) + "END-OF-IT",
                        "is_error": False,
                    }
                ],
            },
            "parent_tool_use_id": None,
            "session_id": "s1",
        }
    ).encode()


def _events(conn, key, source="agent_output.txt"):
    return conn.execute(
        'SELECT kind, "offset", sub, summary FROM events WHERE run_key = ? AND source = ? ORDER BY "offset", sub',
        [key, source],
    ).fetchall()


def _offline(tmp_path, td) -> list[tuple]:
    db = tmp_path / "offline.duckdb"
    r = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(db), "ingest", "-q", str(td)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(
            'SELECT kind, "offset", sub, summary FROM events WHERE source = ? ORDER BY "offset", sub',
            ["agent_output.txt"],
        ).fetchall()
    finally:
        c.close()


def test_a_6_mb_tool_result_and_the_lines_after_it_are_recorded_live_as_offline(env, tmp_path):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    sup = mk()
    sup.poll_once()
    key = sup.last_runs[0].run_key
    tpath = td / "agent_output.txt"
    big = _big_result_line(1, 6 << 20)
    with open(tpath, "ab") as f:
        f.write(big + b"\n" + b"".join(text_line(i) + b"\n" for i in range(2, 12)))
    for _ in range(4):  # the long line needs a read of its own, then the rest
        sup.poll_once()
    live = _events(conn, key)
    assert len([e for e in live if e[0] == "agent_message"]) == 11
    res = conn.execute("SELECT data FROM events WHERE run_key = ? AND kind = 'tool_result'", [key]).fetchone()[0]
    data = json.loads(res)
    # the long-line rule: head and tail kept, the line's size and byte range said
    ll = data["long_line"]  # bytes: the line with its newline, range [start, end) in the file
    assert ll["bytes"] == len(big) + 1 == ll["range"][1] - ll["range"][0]
    assert len(big) > LINE_WHOLE_MAX and len(res) < 2 * (PAYLOAD_HEAD + PAYLOAD_TAIL) + 4096
    assert "END-OF-IT" in res and "characters cut" in res
    # offline ingest of the same files records the same events
    assert _offline(tmp_path, td) == live


def test_a_line_without_end_costs_nothing_once_scanned_then_is_recorded_when_it_ends(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    tpath = td / "agent_output.txt"
    sup = mk()
    sup.poll_once()
    key = sup.last_runs[0].run_key
    start = tpath.stat().st_size
    with open(tpath, "r+b") as f:  # a 200 MB sparse run of zero bytes, no newline
        f.truncate(start + (200 << 20))
    reads = []
    for _ in range(8):
        sup.poll_once()
        reads.append(sup.last_tail.bytes_read)
    # scanned once, to the end of the file: a refresh with nothing new does not read it again (its search for
    # the line's end starts where the last one stopped, the file's end: nothing left to read)
    src = sup.runs[key].sources["agent_output.txt"]
    size = tpath.stat().st_size
    assert src.skip is not None and src.skip[1] == size, (src.skip and src.skip[:2], size, reads)
    for _ in range(3):
        sup.poll_once()
        assert src.skip is not None and src.skip[1] == size and sup.last_tail.bytes_read == 0
    with open(tpath, "ab") as f:
        f.write(b"\n" + text_line(2) + b"\n")
    for _ in range(3):
        sup.poll_once()
    ev = _events(conn, key)
    perr = [e for e in ev if e[0] == "parse_error" and e[1] == start]
    assert len(perr) == 1 and "over the 64 MiB parsed" in perr[0][3]
    data = json.loads(
        conn.execute("SELECT data FROM events WHERE run_key = ? AND kind = 'parse_error'", [key]).fetchone()[0]
    )
    assert data["long_line"] == {"bytes": (200 << 20) + 1, "range": [start, start + (200 << 20) + 1]}
    assert len([e for e in ev if e[0] == "agent_message"]) == 2  # the line after it too


def test_a_fifo_named_agent_output_never_hangs_the_supervisor_nor_the_ingest(env, tmp_path):
    root, conn, clock, mk = env
    td = make_run(root, run_id="fifo", transcript=None)
    os.mkfifo(td / "agent_output.txt")
    ok = make_run(root, run_id="ok", transcript=[init_line(), text_line(1)])
    sup = mk()
    done = threading.Event()
    t = threading.Thread(target=lambda: (sup.poll_once(), sup.poll_once(), done.set()), daemon=True)
    t.start()
    assert done.wait(20), "the supervisor hung on a FIFO"
    keys = {r.run_key: r for r in sup.last_runs}
    ok_key = [k for k in keys if "/ok/" in k][0]
    assert (
        conn.execute("SELECT count(*) FROM events WHERE run_key = ? AND kind = 'agent_message'", [ok_key]).fetchone()[0]
        == 1
    )
    assert sum("not a regular file" in m for _, m in sup.notes) == 1
    r = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(tmp_path / "o.duckdb"), "ingest", "-q", str(td)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "FIFO" in r.stderr and "Traceback" not in r.stderr
    assert ok.exists()


def test_lines_written_just_before_a_rename_replace_are_recorded(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1), text_line(2)])
    tpath = td / "agent_output.txt"
    sup = mk()
    sup.poll_once()
    key = sup.last_runs[0].run_key
    with open(tpath, "ab") as f:  # five more lines, then the file is replaced by another one
        f.write(b"".join(text_line(i) + b"\n" for i in range(3, 8)))
    new = tpath.with_suffix(".new")
    new.write_bytes(init_line("s2") + b"\n" + text_line(100, "s2") + b"\n")
    os.replace(new, tpath)
    sup.poll_once()
    sup.poll_once()
    texts = {e[3] for e in _events(conn, key) if e[0] == "agent_message"}
    for i in range(1, 8):
        assert any(f"step {i}" in s for s in texts), i
    assert any("step 100" in s for s in texts)


def test_a_mid_file_truncation_keeps_the_lines_before_the_cut_recorded_once(env):
    root, conn, clock, mk = env
    lines = [init_line()] + [text_line(i) for i in range(1, 11)] + [result_line(1)]
    td = make_run(root, transcript=lines)
    tpath = td / "agent_output.txt"
    sup = mk()
    sup.poll_once()
    key = sup.last_runs[0].run_key
    before = conn.execute(
        "SELECT count(*), sum(output_tokens) FROM events WHERE run_key = ? AND kind = 'agent_message'", [key]
    ).fetchone()
    assert before == (10, 50)
    cut = sum(len(x) + 1 for x in lines[:6]) + 7  # in the middle of the 7th line
    with open(tpath, "r+b") as f:
        f.truncate(cut)
    sup.poll_once()
    with open(tpath, "ab") as f:
        f.write(b"\n" + text_line(50) + b"\n")
    sup.poll_once()
    sup.poll_once()
    rows = conn.execute("SELECT summary FROM events WHERE run_key = ? AND kind = 'agent_message'", [key]).fetchall()
    summaries = [r[0] for r in rows]
    for i in range(1, 6):  # the surviving messages: once each
        assert summaries.count(f"thinking about step {i}") == 1, (i, summaries)
    assert summaries.count("thinking about step 50") == 1
    assert summaries.count("thinking about step 9") == 1  # the cut-away ones stay from before
    assert any("truncated at byte" in m for _, m in sup.notes), list(sup.notes)


def _ist_line(t: float, level: str, msg: str) -> str:
    """A run_agent.log line as a runner in Asia/Kolkata (+05:30) writes it."""
    import datetime as _dt

    local = _dt.datetime.fromtimestamp(t, _dt.timezone(_dt.timedelta(hours=5, minutes=30)))
    return local.strftime("%Y-%m-%d %H:%M:%S") + f",{int((t % 1) * 1000):03d} - {level} - {msg}\n"


def test_live_times_use_the_runs_own_offset_and_agree_with_offline(env, tmp_path):
    """Runner at +05:30, edgetui in UTC: lines tailed before started_at exists, and after, get the
    run's offset (from its own files), never the process's; live and offline agree by SQL."""
    import datetime as _dt

    root, conn, clock, mk = env
    t0 = time.time() - 120
    td = make_run(root, run_id="tz", log=_ist_line(t0, "INFO", "Images ready"), transcript=[init_line()])
    log = td / "run_agent.log"
    sup = mk()
    sup.poll_once()
    keys = [r.run_key for r in sup.last_runs if "/tz/" in r.run_key]
    assert keys, (sup.last_runs, list(sup.notes))
    key = keys[0]
    with open(log, "a") as f:
        f.write(_ist_line(t0 + 30, "INFO", "Container started: sforge.run.taskA.tz"))
    sup.poll_once()
    # started_at: local ISO time (the runner's) + epoch (docs/sforge-run-folders.md §3.4.3)
    local = _dt.datetime.fromtimestamp(t0 + 40, _dt.timezone(_dt.timedelta(hours=5, minutes=30)))
    (td / "started_at").write_text(local.strftime("%Y-%m-%dT%H:%M:%S") + "\n" + f"{t0 + 40:.3f}\n")
    with open(log, "a") as f:
        f.write(_ist_line(t0 + 45, "INFO", "Running agent: claude-code... (timeout=3600s)"))
    for _ in range(3):
        sup.poll_once()
    live = conn.execute(
        "SELECT \"offset\", t FROM events WHERE run_key = ? AND source = 'run_agent.log' "
        "AND t_source = 'recorded' ORDER BY \"offset\"",
        [key],
    ).fetchall()
    assert len(live) == 3
    for (off, t), want in zip(live, (t0, t0 + 30, t0 + 45)):
        assert abs(t - want) < 1.0, (off, t - want)  # not 5.5 h in the future
    sup.close()
    db = tmp_path / "offline.duckdb"
    r = subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(db), "ingest", "-q", str(td)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    c = duckdb.connect(str(db), read_only=True)
    offline = c.execute(
        "SELECT \"offset\", t FROM events WHERE source = 'run_agent.log' AND t_source = 'recorded' ORDER BY \"offset\""
    ).fetchall()
    c.close()
    assert [o for o, _ in offline] == [o for o, _ in live]
    assert all(abs(a[1] - b[1]) < 1e-3 for a, b in zip(offline, live))


def test_last_event_age_of_a_plus_0530_run_comes_from_the_watchers_clock(env):
    """Issue 36, item 3: a runner at +05:30 wrote run_agent.log lines before its started_at (read
    as UTC until then: 5.5 h ahead). The ``last`` column's age must come from one clock: it
    grows while the run is quiet, during the run and after it, never stuck at 0 s; the runs
    row's live ``last_event_at`` is never after the watcher's now."""
    import datetime as _dt

    root, conn, clock, mk = env
    t0 = time.time() - 60
    td = make_run(root, run_id="tz", log=_ist_line(t0, "INFO", "Images ready"), transcript=[init_line()])
    log = td / "run_agent.log"
    sup = mk(settings=fast_settings(finalize_interval_s=3600, row_refresh_s=0))
    sup.poll_once()
    key = next(r.run_key for r in sup.last_runs if "/tz/" in r.run_key)

    def age() -> float:
        run = next(r for r in sup.last_runs if r.run_key == key)
        assert run.last_event_at is not None
        return clock() - run.last_event_at

    with open(log, "a") as f:  # tailed live, before started_at tells the run's offset
        f.write(_ist_line(time.time(), "INFO", "Container started: sforge.run.taskA.tz"))
    sup.poll_once()
    assert 0 <= age() < 30, age()
    clock.advance(50)  # the agent installs: quiet for 50 s
    sup.poll_once()
    assert 45 <= age() < 80, age()
    local = _dt.datetime.fromtimestamp(t0 + 40, _dt.timezone(_dt.timedelta(hours=5, minutes=30)))
    (td / "started_at").write_text(local.strftime("%Y-%m-%dT%H:%M:%S") + "\n" + f"{t0 + 40:.3f}\n")
    with open(log, "a") as f:
        f.write(_ist_line(time.time(), "INFO", "Running agent: claude-code... (timeout=3600s)"))
    for _ in range(3):
        sup.poll_once()
    assert 0 <= age() < 30, age()
    clock.advance(100)  # nothing happens for 100 s: the age follows the watcher's clock
    sup.poll_once()
    assert 95 <= age() < 130, age()
    row = conn.execute("SELECT last_event_at FROM runs WHERE run_key = ?", [key]).fetchone()
    assert row is not None and row[0] is not None and row[0] <= clock(), (row, clock())
