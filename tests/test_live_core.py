"""Live supervisor, file-only behaviour (no Docker): tailing, generations, submissions, statuses, alarms.

Every test builds real run directories in tmp_path and a real DuckDB file;
time is an injected clock (real time + a controllable offset) so alarms that
need 15 minutes of silence fire in milliseconds.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from waits import inotify_watched, wait_for

from edgetui.store.database import open_db
from edgetui.live.alarms import AlarmSettings, evaluate, load_settings, RunFacts
from edgetui.live.judge import JudgePoller, classify_history
from edgetui.live.supervisor import Supervisor
from edgetui.parsers.detect import parser_for


# ---------------------------------------------------------------------------- builders


class Clock:
    """Real time plus an offset the test advances."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, s: float) -> None:
        self.offset += s


def j(obj) -> bytes:
    return json.dumps(obj).encode()


def init_line(session: str = "s1") -> bytes:
    return j(
        {
            "type": "system",
            "subtype": "init",
            "session_id": session,
            "model": "claude-opus-4-8",
            "cwd": "/w",
            "tools": ["Bash"],
            "uuid": f"u-{session}",
        }
    )


def text_line(i: int, session: str = "s1") -> bytes:
    return j(
        {
            "type": "assistant",
            "message": {
                "id": f"m{i}",
                "model": "claude-opus-4-8",
                "role": "assistant",
                "content": [{"type": "text", "text": f"thinking about step {i}"}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
            "parent_tool_use_id": None,
            "session_id": session,
        }
    )


def call_line(i: int, cmd: str = "ls", session: str = "s1") -> bytes:
    return j(
        {
            "type": "assistant",
            "message": {
                "id": f"c{i}",
                "model": "claude-opus-4-8",
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": cmd}}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
            "parent_tool_use_id": None,
            "session_id": session,
        }
    )


def result_line(i: int, session: str = "s1") -> bytes:
    return j(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"out {i}", "is_error": False}
                ],
            },
            "parent_tool_use_id": None,
            "session_id": session,
        }
    )


def log_line(t: float, level: str, msg: str) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t)) + f",{int((t % 1) * 1000):03d} - {level} - {msg}\n"


def make_run(
    root: Path,
    run_id: str = "run1",
    task: str = "taskA",
    *,
    log: str | None = None,
    transcript: list[bytes] | None = None,
    config: dict | None = None,
) -> Path:
    td = root / run_id / task
    td.mkdir(parents=True)
    (td / "run_agent.log").write_text(log if log is not None else log_line(time.time() - 5, "INFO", "Images ready"))
    if config is not None:
        (td / "run_config.json").write_text(json.dumps(config))
    if transcript is not None:
        (td / "agent_output.txt").write_bytes(b"".join(x + b"\n" for x in transcript))
    return td


def expected_events(lines: list[bytes]) -> int:
    p = parser_for("claude_stream", "agent_output.txt", "g", None)
    off = 0
    n = 0
    for ln in lines:
        n += len(p.feed(ln, off))
        off += len(ln) + 1
    return n


def fast_settings(**kw) -> AlarmSettings:
    base = dict(
        discovery_interval_s=0,
        finalize_min_interval_s=0,
        finalize_interval_s=0,
        stats_interval_s=0,
        grading_grace_s=0,
        container_grace_s=0,
    )
    base.update(kw)
    return AlarmSettings(**base)


@pytest.fixture
def env(tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    conn = open_db(tmp_path / "live.duckdb")
    clock = Clock()
    made: list[Supervisor] = []

    def sup(**kw) -> Supervisor:
        kw.setdefault("settings", fast_settings())
        s = Supervisor(conn, [root], docker_client=None, clock=clock, **kw)
        made.append(s)
        return s

    yield root, conn, clock, sup
    for s in made:
        s.close()
        internal = [m for _, m in s.notes if m.startswith(("could not", "refresh failed", "tail failed"))]
        assert internal == []
    conn.close()


def count(conn, sql, *params):
    return conn.execute(sql, list(params)).fetchone()[0]


def one(runs, key_part: str):
    hits = [r for r in runs if key_part in r.run_key]
    assert len(hits) == 1, [r.run_key for r in runs]
    return hits[0]


# ---------------------------------------------------------------------------- tailing


def test_growing_transcript_is_tailed_by_offset_with_observed_times(env):
    root, conn, clock, mk = env
    lines = [init_line(), text_line(1), call_line(1), result_line(1), text_line(2), call_line(2), result_line(2)]
    td = make_run(root, transcript=lines[:2])
    tpath = td / "agent_output.txt"
    with open(tpath, "ab") as f:  # a half-written third line
        f.write(lines[2][:25])
    sup = mk()
    runs = sup.poll_once()
    r = one(runs, "run1")
    key = r.run_key
    n_src = lambda: count(conn, "SELECT count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt'", key)
    assert n_src() == expected_events(lines[:2])
    cur = conn.execute(
        'SELECT "offset", generation FROM source_cursors WHERE run_key = ? AND source = ?', [key, "agent_output.txt"]
    ).fetchone()
    first_end = len(lines[0]) + len(lines[1]) + 2
    assert cur[0] == first_end  # the half line waits before the cursor
    # lines present before the supervisor started are not stamped "observed"
    assert count(conn, "SELECT count(*) FROM events WHERE run_key = ? AND t_source = 'observed'", key) == 0

    # nothing new: nothing read, nothing recorded
    sup.poll_once()
    assert sup.last_tail.bytes_read == 0
    assert n_src() == expected_events(lines[:2])

    # the newline of the half line arrives, plus two more lines (once the cursor row is due again)
    clock.advance(sup.tailer.cursor_interval_s + 1)
    rest = lines[2][25:] + b"\n" + lines[3] + b"\n" + lines[4] + b"\n"
    with open(tpath, "ab") as f:
        f.write(rest)
    t_obs = clock()
    sup.poll_once()
    assert sup.last_tail.bytes_read == len(lines[2]) + 1 + len(lines[3]) + 1 + len(lines[4]) + 1  # from the cursor only
    assert n_src() == expected_events(lines[:5])
    new = conn.execute(
        'SELECT min("offset"), count(*), min(t), max(t) FROM events WHERE run_key = ? '
        "AND source = 'agent_output.txt' AND t_source = 'observed'",
        [key],
    ).fetchone()
    assert new[0] == first_end and new[1] == expected_events(lines[:5]) - expected_events(lines[:2])
    assert abs(new[2] - t_obs) < 2 and abs(new[3] - t_obs) < 2
    cur2 = conn.execute(
        'SELECT "offset" FROM source_cursors WHERE run_key = ? AND source = ?', [key, "agent_output.txt"]
    ).fetchone()[0]
    assert cur2 == tpath.stat().st_size > cur[0]

    # a new Supervisor (restart) continues from the saved cursor, never from the start
    sup.close()  # saves the live cursors
    sup2 = mk()
    with open(tpath, "ab") as f:
        f.write(lines[5] + b"\n" + lines[6] + b"\n")
    runs = sup2.poll_once()
    assert sup2.last_tail.bytes_read == len(lines[5]) + len(lines[6]) + 2
    assert n_src() == expected_events(lines)
    assert one(runs, "run1").n_events >= expected_events(lines)


def test_a_call_read_with_its_timed_result_is_never_listed_after_it(env):
    """Claude Code writes a tool_result with its own timestamp right after the untimed tool_use:
    read together, the call's observed time (the read's) is lowered to the result's recorded one,
    so the timeline keeps the file's order; a stale recorded time (a copied line) lowers nothing."""
    from edgetui.store import queries as store

    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    sup = mk()
    key = sup.poll_once()[0].run_key
    clock.advance(5)
    iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1000):03d}Z"
    result = json.loads(result_line(1))
    result["timestamp"] = iso(clock() - 0.4)  # written 0.4 s before this read
    stale = json.loads(result_line(2))
    stale["timestamp"] = iso(clock() - 5 * 3600)
    with open(td / "agent_output.txt", "ab") as f:
        f.write(call_line(1) + b"\n" + j(result) + b"\n" + call_line(2) + b"\n" + j(stale) + b"\n")
    t_read = clock()
    sup.poll_once()
    rows = {
        (r[0], r[1]): (r[2], r[3])
        for r in conn.execute(
            "SELECT kind, tool_use_id, t, t_source FROM events WHERE run_key = ? AND tool_use_id IS NOT NULL", [key]
        ).fetchall()
    }
    call1, res1 = rows[("tool_call", "toolu_1")], rows[("tool_result", "toolu_1")]
    assert res1[1] == "recorded" and call1[1] == "observed"
    assert call1[0] <= res1[0] < t_read
    call2 = rows[("tool_call", "toolu_2")]
    assert call2[1] == "observed" and abs(call2[0] - t_read) < 2  # not 5 h back
    order = [
        (k, tid)
        for k, tid in zip(store.run_events(conn, key).kind, store.run_events(conn, key).tool_use_id)
        if tid == "toolu_1"
    ]
    assert order == [("tool_call", "toolu_1"), ("tool_result", "toolu_1")]


def test_events_timed_days_before_the_run_start_are_pointed_out_once(env):
    """Lines copied from another run keep their recorded timestamps (here 5 days old): the run's
    message and the supervisor's notes say so once (the timeline keeps them where they are); a
    run whose events all come after its start says nothing."""
    root, conn, clock, mk = env
    old = json.loads(result_line(1))
    old["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 5 * 86400))
    t0 = time.time() - 60
    for run_id, lines in (
        ("run1", [init_line(), call_line(1), j(old), text_line(2)]),
        ("run2", [init_line("s2"), text_line(1, "s2")]),
    ):
        td = make_run(root, run_id=run_id, transcript=lines)
        (td / "started_at").write_text(time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t0)) + f"\n{t0}\n")
    sup = mk()
    runs = sup.poll_once()
    assert all(rs.info.started_at is not None for rs in sup.runs.values())
    r1, r2 = one(runs, "run1"), one(runs, "run2")
    # the recorded line and the two untimed ones before it (interpolated up to it)
    assert r1.message and "3 events timed over a day before the run's start" in r1.message
    assert r2.message is None
    notes = [m for _, m in sup.notes if "before the run's start" in m]
    assert len(notes) == 1 and r1.run_key in notes[0]
    clock.advance(3)
    sup.poll_once()
    assert len([m for _, m in sup.notes if "before the run's start" in m]) == 1  # once


def test_views_hear_of_committed_events_before_the_refresh_ends(env):
    """``on_events`` gets the run keys whose new events were just committed (before finalizing and
    the snapshot), and is not called when nothing new was recorded."""
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    make_run(root, run_id="run2", transcript=[init_line("s2")])
    sup = mk()
    heard: list[tuple[set, int]] = []

    def on_events(keys: set) -> None:  # what a view would then read is already in the database
        heard.append((set(keys), count(conn, "SELECT count(*) FROM events WHERE source = 'agent_output.txt'")))

    sup.on_events = on_events
    runs = sup.poll_once()
    key1 = one(runs, "run1").run_key
    assert heard and {key1, one(runs, "run2").run_key} <= heard[0][0]
    heard.clear()
    sup.poll_once()
    assert heard == []  # nothing new
    with open(td / "agent_output.txt", "ab") as f:
        f.write(text_line(2) + b"\n")
    before = count(conn, "SELECT count(*) FROM events WHERE source = 'agent_output.txt'")
    sup.poll_once()
    assert [k for k, _ in heard] == [{key1}]  # only the run that grew
    assert heard[0][1] > before  # committed before the callback


def test_truncated_or_replaced_transcript_is_a_new_generation(env):
    root, conn, clock, mk = env
    lines = [init_line("s1"), text_line(1), text_line(2), text_line(3)]
    td = make_run(root, transcript=lines)
    tpath = td / "agent_output.txt"
    sup = mk()
    sup.poll_once()
    key = sup.last_runs[0].run_key
    q = "SELECT count(DISTINCT generation), count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt'"
    n_old = expected_events(lines)
    assert conn.execute(q, [key]).fetchone() == (1, n_old)

    # 1. truncated and rewritten with a different first line (a re-run in place)
    new_lines = [init_line("s2"), text_line(9, "s2")]
    tpath.write_bytes(b"".join(x + b"\n" for x in new_lines))
    sup.poll_once()
    assert conn.execute(q, [key]).fetchone() == (2, n_old + expected_events(new_lines))
    assert any("new generation" in m for m in sup.messages)
    gen2 = conn.execute(
        "SELECT generation FROM source_cursors WHERE run_key = ? AND source = ?", [key, "agent_output.txt"]
    ).fetchone()[0]

    # 2. truncated below the cursor but the same first line: a derived generation, nothing dropped
    same_first = [init_line("s2"), text_line(42, "s2")]
    with open(tpath, "r+b") as f:
        f.truncate(0)
    sup.poll_once()  # empty file: waits
    tpath.write_bytes(b"".join(x + b"\n" for x in same_first))
    sup.poll_once()
    gen3 = conn.execute(
        "SELECT generation FROM source_cursors WHERE run_key = ? AND source = ?", [key, "agent_output.txt"]
    ).fetchone()[0]
    assert gen3.startswith(gen2 + ".")
    assert conn.execute(q, [key]).fetchone() == (3, n_old + expected_events(new_lines) + expected_events(same_first))
    # the newest generation's events arrived while watching: observed
    assert count(
        conn, "SELECT count(*) FROM events WHERE run_key = ? AND generation = ? AND t_source = 'observed'", key, gen3
    ) == expected_events(same_first)

    # 3. rewritten in place to a larger size with the same first line: the bytes before the cursor changed
    grown = [init_line("s2"), text_line(77, "s2"), text_line(78, "s2"), text_line(79, "s2")]
    tmp = tpath.with_suffix(".new")
    tmp.write_bytes(b"".join(x + b"\n" for x in grown))
    tmp.replace(tpath)
    sup.poll_once()
    gen4 = conn.execute(
        "SELECT generation FROM source_cursors WHERE run_key = ? AND source = ?", [key, "agent_output.txt"]
    ).fetchone()[0]
    assert gen4 != gen3 and gen4.startswith(gen2 + ".")
    assert count(
        conn, "SELECT count(*) FROM events WHERE run_key = ? AND generation = ?", key, gen4
    ) == expected_events(grown)


def _fds_on(path: Path) -> int:
    """Open descriptors of this process on ``path`` (also a deleted one: '<path> (deleted)')."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target == str(path) or target == f"{path} (deleted)":
            n += 1
    return n


def test_tail_keeps_one_handle_per_file_and_the_bytes_before_the_cursor(env):
    """Between refreshes a growing file keeps one open handle and the bytes just before the cursor
    (what tells a rewrite) are kept in memory: they equal the file's. A file rewritten in place (same
    inode, larger) is a new generation; a replaced file gets a new handle (the old one is closed);
    a deleted run directory and closing the supervisor leave no handle."""
    from edgetui.live.tail import FINGERPRINT_BYTES

    root, conn, clock, mk = env
    lines = [init_line("s1")] + [text_line(i) for i in range(1, 40)]
    td = make_run(root, transcript=lines)
    tpath = td / "agent_output.txt"
    sup = mk()
    sup.poll_once()
    rs = next(iter(sup.runs.values()))
    src = rs.sources["agent_output.txt"]
    q = "SELECT count(DISTINCT generation), count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt'"
    n = expected_events(lines)
    for i in range(40, 46):  # a line per refresh, then a half-written one that waits for its newline
        with open(tpath, "ab") as f:
            f.write(text_line(i) + (b"\n" if i < 45 else b""))
        n += expected_events([text_line(i)]) if i < 45 else 0
        sup.poll_once()
        data = tpath.read_bytes()
        assert src.offset == (len(data) if i < 45 else data.rindex(b"\n") + 1)
        assert src.fingerprint == data[max(0, src.offset - FINGERPRINT_BYTES) : src.offset]
        assert _fds_on(tpath) == 1
    assert conn.execute(q, [rs.key]).fetchone() == (1, n)
    with open(tpath, "ab") as f:
        f.write(b"\n")  # the half-written line completes
    sup.poll_once()
    n += expected_events([text_line(45)])
    assert conn.execute(q, [rs.key]).fetchone() == (1, n)
    # rewritten in place: same inode, larger, same first line, other bytes before the cursor
    ino = tpath.stat().st_ino
    rewritten = [init_line("s1")] + [text_line(100 + i) for i in range(60)]
    tpath.write_bytes(b"".join(x + b"\n" for x in rewritten))
    assert tpath.stat().st_ino == ino and tpath.stat().st_size > src.offset
    sup.poll_once()
    # (its first line, the same bytes at the same place, stays the old generation's: recorded once;
    # the derived generation starts where the file differs from what was read)
    assert conn.execute(q, [rs.key]).fetchone() == (2, n + expected_events(rewritten[1:]))
    assert any("new generation" in m for m in sup.messages)
    # replaced (a rename over it): a new handle on the new file, the old one closed
    tmp = tpath.with_suffix(".new")
    tmp.write_bytes(b"".join(x + b"\n" for x in [init_line("s3"), text_line(1, "s3")]))
    tmp.replace(tpath)
    sup.poll_once()
    assert _fds_on(tpath) == 1
    assert conn.execute(q, [rs.key]).fetchone()[0] == 3
    shutil.rmtree(td.parent)
    sup.poll_once()
    assert rs.deleted and _fds_on(tpath) == 0


def test_tail_closes_the_least_recently_read_handle_beyond_max_open(tmp_path):
    from edgetui.live.tail import Tailer, TailSource
    from edgetui.record.recorder import Recorder

    conn = open_db(tmp_path / "h.duckdb")
    tailer = Tailer(Recorder(conn), max_open=2)
    srcs = []
    for i in range(3):
        p = tmp_path / f"f{i}.jsonl"
        p.write_bytes(init_line(f"s{i}") + b"\n")
        srcs.append(
            TailSource(
                run_key=f"local/r{i}/t",
                source="agent_output.txt",
                path=p,
                make_parser=lambda source, gen, state: parser_for("claude_stream", source, gen, state),
            )
        )
    tailer.poll(srcs, 1.0e9)
    assert [s.fp is not None for s in srcs] == [False, True, True]
    assert sum(_fds_on(s.path) for s in srcs) == 2
    with open(srcs[0].path, "ab") as f:
        f.write(text_line(1, "s0") + b"\n")
    tailer.poll(srcs, 1.0e9 + 1)  # f0 read again: f1 is now the least recently read
    assert [s.fp is not None for s in srcs] == [True, False, True]
    assert conn.execute("SELECT count(*) FROM events WHERE run_key = 'local/r0/t'").fetchone()[0] == expected_events(
        [init_line("s0"), text_line(1, "s0")]
    )
    tailer.close()
    assert sum(_fds_on(s.path) for s in srcs) == 0
    conn.close()


def test_discovery_flat_and_grouped_layouts_and_new_run_dirs(env):
    root, conn, clock, mk = env
    make_run(root, "flat1", "t1", transcript=[init_line()])
    make_run(root / "10.0.0.7", "grp1", "t2", transcript=[init_line()])
    sup = mk()
    keys = {r.run_key for r in sup.poll_once()}
    assert keys == {"local/flat1/t1", "10.0.0.7/grp1/t2"}
    make_run(root, "later", "t3", transcript=[init_line()])
    keys = {r.run_key for r in sup.poll_once()}
    assert "local/later/t3" in keys


# ---------------------------------------------------------------------------- submissions, final, deletion


def _report(path: Path, **kw) -> None:
    rep = {
        "task_id": "taskA",
        "submission_id": "a1b2c3d4e5f6",
        "total_tests": 10,
        "passed": 7,
        "failed": 3,
        "errors": 0,
        "pass_rate": 0.7,
        "score": None,
        "score_0_100": None,
        "timed_out": False,
        "runtime_seconds": 3.0,
        "test_details": [],
        "valid": True,
        "summary": "7/10 tests passed",
        "details": [],
        "metrics": {},
        "submitted_at": time.time() - 30,
    }
    rep.update(kw)
    path.write_text(json.dumps(rep))


def test_submission_folder_then_report_gives_best_so_far(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    sup = mk()
    r = sup.poll_once()[0]
    assert r.best_display is None and r.status == "running"
    sub = td / "submissions" / "agent-1"
    sub.mkdir(parents=True)
    (sub / "run_instance.log").write_text(log_line(time.time(), "INFO", "Judge container started: " + "ab" * 32))
    r = sup.poll_once()[0]
    assert r.status == "grading" and r.grading_rounds == ["agent-1"]
    assert r.alarms == []  # a folder being graded is not a failed grading
    _report(sub / "report.json")
    r = sup.poll_once()[0]
    assert r.status == "running" and r.grading_rounds == []
    assert r.best_display == pytest.approx(70.0) and r.best_round == "agent-1" and r.agent_submissions == 1
    row = conn.execute(
        "SELECT status, pass_rate, is_new_best FROM submissions WHERE run_key = ?", [r.run_key]
    ).fetchone()
    assert row == ("graded", 0.7, True)
    assert count(conn, "SELECT count(*) FROM events WHERE run_key = ? AND kind = 'judge_result'", r.run_key) == 1


def test_final_result_makes_the_run_finished(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    sup = mk()
    assert sup.poll_once()[0].status == "running"
    (td / "final_result.json").write_text('{"agent": "claude-code", "task": "ta')  # mid-write: not yet
    assert sup.poll_once()[0].status == "running"
    (td / "final_result.json").write_text(
        json.dumps(
            {
                "agent": "claude-code",
                "task": "taskA",
                "run_id": "run1",
                "model": "claude-opus-4-8",
                "best_pass_rate": 0.5,
                "best_round": "",
                "total_rounds": 0,
                "agent_submissions": 0,
                "auto_submissions": 0,
                "timed_out": True,
                "runtime_seconds": 100.0,
                "archive_size_bytes": 0,
                "resume_count": 0,
            }
        )
    )
    r = sup.poll_once()[0]
    assert r.status == "finished"
    assert conn.execute("SELECT status FROM runs WHERE run_key = ?", [r.run_key]).fetchone()[0] == "finished"


def test_run_directory_deleted_keeps_status_and_records(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1), text_line(2)])
    sup = mk()
    r = sup.poll_once()[0]
    n = count(conn, "SELECT count(*) FROM events WHERE run_key = ?", r.run_key)
    assert r.status == "running" and n > 0
    shutil.rmtree(td.parent)
    r2 = sup.poll_once()[0]
    assert r2.status == "running" and r2.deleted and r2.message == "run directory deleted"
    assert "deleted" in r2.flags
    assert count(conn, "SELECT count(*) FROM events WHERE run_key = ?", r.run_key) == n
    clock.advance(100000)  # no alarms for a deleted run, however long
    r3 = sup.poll_once()[0]
    assert r3.status == "running" and r3.active_alarms == []


def test_aborted_after_abort_threshold_without_container_information(env):
    root, conn, clock, mk = env
    make_run(root, transcript=[init_line(), text_line(1)])
    sup = mk(settings=fast_settings(abort_after_s=600))
    assert sup.poll_once()[0].status == "running"
    clock.advance(601)
    assert sup.poll_once()[0].status == "aborted"


# ---------------------------------------------------------------------------- alarms


def _alarm_rules(conn, key):
    return [
        r[0]
        for r in conn.execute(
            "SELECT data->>'$.rule' FROM events WHERE run_key = ? AND kind = 'alarm' ORDER BY t", [key]
        ).fetchall()
    ]


def test_stall_alarm_fires_once_and_not_while_a_tool_call_is_pending(env, tmp_path):
    root, conn, clock, mk = env
    out = tmp_path / "alarms.jsonl"
    make_run(root, "quiet", transcript=[init_line(), call_line(1), result_line(1), text_line(2)])
    busy = make_run(
        root,
        "busy",
        transcript=[
            init_line(),
            call_line(1, "sforge-submit"),
        ],
    )  # waiting for grading
    sup = mk(settings=fast_settings(stall_after_s=900), on_alarm_cmd=f"cat >> {out}")
    runs = sup.poll_once()
    assert one(runs, "busy").pending_tool_calls == 1 and one(runs, "quiet").pending_tool_calls == 0
    clock.advance(899)
    assert all(not r.active_alarms for r in sup.poll_once())
    clock.advance(2)
    runs = sup.poll_once()
    quiet, b = one(runs, "quiet"), one(runs, "busy")
    assert quiet.active_alarms == ["stall"] and "alarm:stall" in quiet.flags
    assert b.active_alarms == []
    assert [a.rule for a in sup.last_alarms] == ["stall"]
    # raised once per episode, not at every refresh
    clock.advance(60)
    sup.poll_once()
    assert sup.last_alarms == []
    assert _alarm_rules(conn, quiet.run_key) == ["stall"]
    sup.alarm_cmd.wait()
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(got) == 1 and got[0]["rule"] == "stall" and got[0]["run_id"] == "quiet"
    assert got[0]["severity"] == "warning" and "no transcript growth" in got[0]["message"]
    # growth ends the episode; another silence is a new episode
    with open(root / "quiet" / "taskA" / "agent_output.txt", "ab") as f:
        f.write(text_line(3) + b"\n")
    assert one(sup.poll_once(), "quiet").active_alarms == []
    clock.advance(901)
    sup.poll_once()
    assert _alarm_rules(conn, quiet.run_key) == ["stall", "stall"]
    # the busy run: its result arrives, then silence -> stall
    with open(busy / "agent_output.txt", "ab") as f:
        f.write(result_line(1) + b"\n")
    sup.poll_once()
    clock.advance(901)
    assert one(sup.poll_once(), "busy").active_alarms == ["stall"]


def test_no_new_best_alarm_and_look_alike(env):
    root, conn, clock, mk = env
    now = time.time()
    old = make_run(root, "old", transcript=[init_line(), text_line(1)])
    (old / "started_at").write_text(
        time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now - 4 * 3600)) + f"\n{now - 4 * 3600}\n"
    )
    (old / "submissions" / "agent-1").mkdir(parents=True)
    _report(old / "submissions" / "agent-1" / "report.json", submitted_at=now - 3 * 3600)
    fresh = make_run(root, "fresh", transcript=[init_line(), text_line(1)])
    (fresh / "started_at").write_text(
        time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now - 4 * 3600)) + f"\n{now - 4 * 3600}\n"
    )
    for i, (age, pr) in enumerate([(3 * 3600, 0.5), (600, 0.9)], start=1):
        (fresh / "submissions" / f"agent-{i}").mkdir(parents=True)
        _report(fresh / "submissions" / f"agent-{i}" / "report.json", submitted_at=now - age, pass_rate=pr)
    sup = mk(settings=fast_settings(no_new_best_after_s=7200, stall_after_s=1e9))
    runs = sup.poll_once()
    assert one(runs, "old").active_alarms == ["no_new_best"]
    assert one(runs, "fresh").active_alarms == []
    assert one(runs, "fresh").best_display == pytest.approx(90.0)


def test_infra_error_alarm_and_look_alikes(env):
    root, conn, clock, mk = env
    t = time.time() - 60
    make_run(
        root,
        "bad",
        log=log_line(t, "INFO", "Images ready")
        + log_line(t + 1, "ERROR", "Error: image missing")
        + "Traceback (most recent call last):\n  File x\n",
        transcript=[init_line()],
    )
    make_run(
        root,
        "ok",
        log=log_line(t, "INFO", "Images ready")
        + log_line(t + 1, "WARNING", "Register attempt 1/5 failed: ERROR - connection refused")
        + log_line(t + 2, "INFO", "payload mentions ' - ERROR - ' in text"),
        transcript=[
            init_line(),
            j(
                {
                    "type": "assistant",
                    "message": {
                        "id": "x",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "2026-01-01 10:00:00,000 - ERROR - quoted log line"}],
                    },
                    "session_id": "s1",
                }
            ),
        ],
    )
    sup = mk()
    runs = sup.poll_once()
    bad, ok = one(runs, "bad"), one(runs, "ok")
    assert bad.active_alarms == ["infra_error"] and bad.infra_error and "infra" in bad.flags
    assert "image missing" in bad.alarms[0].message and bad.alarms[0].severity == "critical"
    assert ok.active_alarms == [] and not ok.infra_error
    # one alarm per burst of errors: a second ERROR shortly after does not raise again
    with open(root / "bad" / "taskA" / "run_agent.log", "a") as f:
        f.write(log_line(t + 30, "ERROR", "Failed to stop container"))
    sup.poll_once()
    assert _alarm_rules(conn, bad.run_key) == ["infra_error"]


def _resume(t: float, k: int) -> str:
    return log_line(t, "INFO", f"Resuming agent (attempt {k}/100, 3000s left): claude --continue -p ...")


def test_resume_loop_alarm_and_spread_out_resumes(env):
    root, conn, clock, mk = env
    now = time.time()
    loop_log = log_line(now - 900, "INFO", "Running agent: claude -p ... (timeout=43200s)")
    for k, age in enumerate([600, 400, 200], start=1):
        loop_log += log_line(now - age - 5, "INFO", "Agent exited after 30.0s, will resume") + _resume(now - age, k)
    spread_log = log_line(now - 9000, "INFO", "Running agent: claude -p ... (timeout=43200s)")
    for k, age in enumerate([7200, 4800, 2400], start=1):
        spread_log += _resume(now - age, k)
    make_run(root, "loop", log=loop_log, transcript=[init_line()])
    make_run(root, "spread", log=spread_log, transcript=[init_line()])
    sup = mk(
        settings=fast_settings(
            resume_loop_count=3, resume_loop_window_s=1800, stall_after_s=1e9, no_new_best_after_s=1e9
        )
    )
    runs = sup.poll_once()
    assert one(runs, "loop").active_alarms == ["resume_loop"]
    assert one(runs, "spread").active_alarms == []
    assert one(runs, "loop").resume_count == 3
    # the loop ends once no resume happened for the window
    clock.advance(1801)
    assert one(sup.poll_once(), "loop").active_alarms == []


def test_grading_failed_when_judge_log_ends_without_report(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line()])
    t = time.time()
    failed = td / "submissions" / "agent-1"
    failed.mkdir(parents=True)
    (failed / "run_instance.log").write_text(
        log_line(t - 20, "INFO", "Judge container started: " + "cd" * 32)
        + log_line(t - 10, "ERROR", "Archive extraction failed: tar: bad")
        + "Traceback...\n"
        + log_line(t - 9, "INFO", "Stopping container edgebench.judge.taskA.aaaaaaaaaaaa...")
        + log_line(t - 8, "INFO", "Container edgebench.judge.taskA.aaaaaaaaaaaa removed.")
    )
    pending = td / "submissions" / "auto-1"
    pending.mkdir(parents=True)
    (pending / "run_instance.log").write_text(log_line(t - 5, "INFO", "Judge container started: " + "ef" * 32))
    sup = mk(settings=fast_settings(stall_after_s=1e9))
    r = sup.poll_once()[0]
    assert r.active_alarms == ["grading_failed"]
    assert "Archive extraction failed" in r.alarms[0].message and r.alarms[0].data["round"] == "agent-1"
    assert r.status == "grading" and r.grading_rounds == ["auto-1"]
    row = conn.execute("SELECT status FROM submissions WHERE run_key = ? AND round = 'agent-1'", [r.run_key]).fetchone()
    assert row[0] == "failed_grading"
    row = conn.execute("SELECT status FROM submissions WHERE run_key = ? AND round = 'auto-1'", [r.run_key]).fetchone()
    assert row[0] == "in_flight"


def test_on_alarm_command_failure_is_a_note_not_an_exception(env):
    root, conn, clock, mk = env
    make_run(root, log=log_line(time.time(), "ERROR", "Error: boom"), transcript=[init_line()])
    sup = mk(on_alarm_cmd="cat > /dev/null; exit 3")
    sup.poll_once()
    seen = list(sup.messages)
    sup.alarm_cmd.wait()
    sup.poll_once()
    seen += sup.messages
    assert [m for m in seen if "exited with status 3" in m] == [
        "--on-alarm command exited with status 3 (alarm infra_error)"
    ]
    bad = mk(on_alarm_cmd="/nonexistent/cmd")
    bad.alarm_cmd.fire({"rule": "x"})  # a shell that cannot find the command: exit 127, noted
    bad.alarm_cmd.wait()
    assert any("status 127" in n for n in bad.alarm_cmd.notes)


def test_alarm_episodes_survive_a_restart(env):
    root, conn, clock, mk = env
    make_run(root, log=log_line(time.time(), "ERROR", "Error: boom"), transcript=[init_line()])
    sup = mk()
    key = sup.poll_once()[0].run_key
    sup2 = mk()
    r = sup2.poll_once()[0]
    assert r.active_alarms == ["infra_error"] and sup2.last_alarms == []
    assert _alarm_rules(conn, key) == ["infra_error"]
    assert [a.rule for a in r.alarms] == ["infra_error"]  # history reloaded from the database


# ---------------------------------------------------------------------------- settings, rules, judge client


def test_settings_from_toml_and_json_and_bad_files(tmp_path):
    p = tmp_path / "alarms.toml"
    p.write_text("stall_after_s = 60\n[alarms]\nresume_loop_count = 5\n")
    s = load_settings(p)
    assert s.stall_after_s == 60 and s.resume_loop_count == 5 and s.no_new_best_after_s == 7200
    q = tmp_path / "alarms.json"
    q.write_text('{"no_new_best_after_s": 10}')
    assert load_settings(q).no_new_best_after_s == 10
    bad = tmp_path / "bad.toml"
    bad.write_text("stall_after_s = 'soon'\n")
    msgs: list[str] = []
    assert load_settings(bad, msgs) == AlarmSettings() and len(msgs) == 1 and "stall_after_s" in msgs[0]
    typo = tmp_path / "typo.json"
    typo.write_text('{"stal_after_s": 1}')
    msgs = []
    load_settings(typo, msgs)
    assert "stal_after_s" in msgs[0]


def test_container_rules_wait_for_the_grace_and_the_harness_ending():
    s = AlarmSettings(container_grace_s=60, finish_grace_s=1500)
    base = dict(
        run_key="h/r/t",
        status="running",
        container_id="c" * 64,
        container_name="sforge.run.t.r",
        container_state="exited",
        container_exit_code=3,
    )
    assert evaluate(RunFacts(**base, container_ended_t=1000.0), s, 1030.0) == []
    conds = evaluate(RunFacts(**base, container_ended_t=1000.0), s, 1061.0)
    assert [c.rule for c in conds] == ["container_exit"] and conds[0].severity == "critical"
    # the harness said "Agent finished": the exit is the drain, no alarm until the drain allowance is over
    assert evaluate(RunFacts(**base, container_ended_t=1000.0, ending_since=990.0), s, 1100.0) == []
    assert evaluate(RunFacts(**base, container_ended_t=1000.0, finished=True), s, 5000.0) == []
    oom = evaluate(
        RunFacts(
            **{**base, "container_exit_code": 137, "status": "aborted"}, container_oom=True, container_ended_t=1000.0
        ),
        s,
        1001.0,
    )
    assert [c.rule for c in oom] == ["oom"]


class _History(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []
    body: dict = {}

    def do_GET(self):  # http.server's name
        type(self).seen.append(self.path)
        data = json.dumps(type(self).body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # http.server's name
        type(self).seen.append("POST " + self.path)
        self.send_response(405)
        self.end_headers()

    def log_message(self, *a):
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_judge_poller_reads_history_and_survives_an_unreachable_judge():
    _History.seen = []
    _History.body = {
        "run_id": "r",
        "best_score": None,
        "best_pass_rate": 0.5,
        "best_round": "agent-1",
        "agent_submissions": 3,
        "auto_submissions": 1,
        "entries": [
            {
                "type": "submission",
                "status": "completed",
                "round": "agent-1",
                "pass_rate": 0.5,
                "total_tests": 4,
                "summary": "2/4",
            },
            {"type": "submission", "status": "completed", "round": "agent-2", "error": "boom"},
            {
                "type": "submission",
                "status": "completed",
                "round": "auto-1",
                "pass_rate": 0.0,
                "total_tests": 0,
                "summary": None,
            },
            {"type": "submission", "status": "running", "round": "agent-3"},
        ],
    }
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _History)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        p = JudgePoller(f"http://127.0.0.1:{srv.server_address[1]}", "s3cret-admin", interval_s=0)
        assert p.poll({"k": "tok123456"}) == {}
        p.wait()
        views = p.poll({})
        v = views["k"]
        assert v.ok and v.judge_errors == {"agent-2": "boom"} and list(v.failed) == ["auto-1"]
        assert v.running == ["agent-3"] and v.best_round == "agent-1"
        # (the header form, tried first, is accepted here: nothing secret in the request line)
        assert _History.seen and all(s == "/api/v1/history" for s in _History.seen)
        p.close()
    finally:
        srv.shutdown()
        srv.server_close()
    dead = JudgePoller(f"http://127.0.0.1:{_free_port()}", "s3cret-admin", interval_s=0, timeout_s=1)
    dead.poll({"k": "tok123456"})
    dead.wait()
    views = dead.poll({})
    assert not views["k"].ok and dead.error and "tok123456" not in dead.error and "s3cret" not in dead.error
    assert "\n" not in dead.error
    dead.close()
    assert classify_history({"entries": [{"type": "game", "round": "game-1", "score": 3}]}, 0).failed == {}


def test_run_file_path_stays_inside_the_task_dir(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line()])
    sup = mk()
    key = sup.poll_once()[0].run_key
    assert sup.run_file_path(key, "agent_output.txt") == td / "agent_output.txt"
    assert sup.run_file_path(key, "../../../etc/passwd") is None
    assert sup.run_file_path("nope/x/y", "agent_output.txt") is None


@pytest.mark.parametrize("poll", [False, True])
def test_run_forever_wakes_on_file_changes_and_survives_errors(env, poll):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    sup = mk()
    updates: list[tuple[float, int]] = []
    boom = {"n": 1}
    orig = sup._poll

    def flaky(now):
        if boom["n"]:
            boom["n"] -= 1
            raise RuntimeError("disk on fire\nsecond line")
        return orig(now)

    sup._poll = flaky
    stop = threading.Event()
    th = threading.Thread(
        target=sup.run_forever,
        args=(30.0, stop, lambda rs: updates.append((time.monotonic(), rs[0].n_events if rs else 0))),
        kwargs={"poll": poll},
        daemon=True,
    )
    th.start()
    try:
        wait_for(lambda: len(updates) >= 2, 10, "the failed refresh, then a good one", describe=lambda: updates)
        assert any(m == "refresh failed: RuntimeError: disk on fire second line" for _, m in sup.notes)
        sup.notes.clear()  # expected here (the fixture checks that no other test has internal failures)
        if poll:
            wait_for(lambda: sup.watch_mode.startswith("polling"), 10, "stat polling", describe=lambda: sup.watch_mode)
        else:  # the watcher's watch on the task folder is in place (seen in this process's inotify fds)
            wait_for(lambda: inotify_watched(td), 10, "an inotify watch on the task folder")
        n_before = len(updates)
        t_append = time.monotonic()
        with open(td / "agent_output.txt", "ab") as f:
            f.write(text_line(2) + b"\n")
        # far sooner than the 30 s interval: a file change woke it (or the stat polling saw it)
        wait_for(
            lambda: any(t > t_append and n >= 3 for t, n in updates[n_before:]),
            15,
            "a refresh with the appended line",
            describe=lambda: updates,
        )
    finally:
        stop.set()
        th.join(10)
    assert not th.is_alive()


def test_restart_after_a_crash_rereads_a_little_but_records_and_counts_nothing_twice(env):
    """Cursors are saved every few seconds; a supervisor killed in between leaves an older cursor.
    The next one re-reads those lines: same event ids (nothing duplicated), not handed to the
    alarm rules again (a resume counted twice would fake a resume loop)."""
    root, conn, clock, mk = env
    now = time.time()
    td = make_run(
        root,
        log=log_line(now - 100, "INFO", "Running agent: claude -p x (timeout=43200s)"),
        transcript=[init_line(), text_line(1)],
    )
    sup = mk(settings=fast_settings(resume_loop_count=3, stall_after_s=1e9, no_new_best_after_s=1e9))
    sup.poll_once()
    key = sup.last_runs[0].run_key
    clock.advance(1)
    with open(td / "run_agent.log", "a") as f:
        f.write(_resume(now - 50, 1) + _resume(now - 40, 2))
    with open(td / "agent_output.txt", "ab") as f:
        f.write(text_line(2) + b"\n" + call_line(3) + b"\n")
    sup.poll_once()  # events committed, cursors not yet due (saved every 5 s)
    saved = conn.execute(
        'SELECT "offset" FROM source_cursors WHERE run_key = ? AND source = ?', [key, "agent_output.txt"]
    ).fetchone()[0]
    assert saved < (td / "agent_output.txt").stat().st_size
    n_events = count(conn, "SELECT count(*) FROM events WHERE run_key = ?", key)
    # "crash": a new supervisor without closing the first one
    sup2 = mk(settings=fast_settings(resume_loop_count=3, stall_after_s=1e9, no_new_best_after_s=1e9))
    r = sup2.poll_once()[0]
    assert count(conn, "SELECT count(*) FROM events WHERE run_key = ?", key) == n_events
    assert r.resume_count == 2 and r.active_alarms == [] and r.pending_tool_calls == 1
    with open(td / "run_agent.log", "a") as f:
        f.write(_resume(now - 30, 3))
    r = sup2.poll_once()[0]
    assert r.resume_count == 3 and r.active_alarms == ["resume_loop"]
    sup2.close()
    sup2.close()  # idempotent


def test_rerun_in_place_truncating_run_agent_log_forgets_the_old_facts(env):
    root, conn, clock, mk = env
    now = time.time()
    log = log_line(now - 900, "INFO", "Running agent: claude -p x (timeout=43200s)")
    for k, age in enumerate([300, 200, 100], start=1):
        log += _resume(now - age, k)
    log += log_line(now - 50, "ERROR", "Error: boom")
    td = make_run(root, log=log, transcript=[init_line()])
    sup = mk(settings=fast_settings(stall_after_s=1e9, no_new_best_after_s=1e9))
    r = sup.poll_once()[0]
    assert sorted(r.active_alarms) == ["infra_error", "resume_loop"] and r.infra_error
    # `sforge run` again with the same run id: run_agent.log opened with "w"
    (td / "run_agent.log").write_text(log_line(now, "INFO", "Images ready (second attempt)"))
    r = sup.poll_once()[0]
    assert r.active_alarms == [] and not r.infra_error and r.resume_count == 0
    assert "run_agent.log truncated or replaced" in (r.message or "")


# ---------------------------------------------------------------------------- session 2: ack, budget, rows, gradings


def test_acknowledged_alarm_stops_counting_is_recorded_and_survives_a_restart(env):
    root, conn, clock, mk = env
    make_run(root, "quiet", transcript=[init_line(), text_line(1)])
    make_run(root, "other", transcript=[init_line(), text_line(1)])
    settings = fast_settings(stall_after_s=900, no_new_best_after_s=1e9)
    sup = mk(settings=settings)
    sup.poll_once()
    clock.advance(901)
    runs = sup.poll_once()
    q, o = one(runs, "quiet"), one(runs, "other")
    assert [a.rule for a in q.current_alarms] == ["stall"] and [a.rule for a in o.current_alarms] == ["stall"]
    assert sup.acknowledge_alarms(q.run_key) == 1
    assert sup.acknowledge_alarms(q.run_key) == 0  # nothing left to acknowledge
    runs = sup.poll_once()
    q, o = one(runs, "quiet"), one(runs, "other")
    assert q.current_alarms == [] and [a.rule for a in q.acked_alarms] == ["stall"]
    assert "ack:stall" in q.flags and "alarm:stall" not in q.flags
    assert q.active_alarms == ["stall"]  # the condition still holds
    assert [a.rule for a in o.current_alarms] == ["stall"]  # the other run is untouched
    acks = conn.execute(
        "SELECT data->>'$.rule', data->>'$.key' FROM events WHERE run_key = ? AND kind = 'alarm' "
        "AND data->>'$.ack' = 'true'",
        [q.run_key],
    ).fetchall()
    assert acks == [("stall", "stall")]
    # a restart keeps the acknowledgement of the episode that is still going on
    sup.close()
    sup2 = mk(settings=settings)
    runs = sup2.poll_once()
    q = one(runs, "quiet")
    assert q.current_alarms == [] and [a.rule for a in q.acked_alarms] == ["stall"]
    # the condition clears, then a new silence is a new episode: loud again
    with open(root / "quiet" / "taskA" / "agent_output.txt", "ab") as f:
        f.write(text_line(2) + b"\n")
    assert one(sup2.poll_once(), "quiet").active_alarms == []
    clock.advance(901)
    q = one(sup2.poll_once(), "quiet")
    assert [a.rule for a in q.current_alarms] == ["stall"] and q.acked_alarms == []
    # acknowledging every run at once
    assert sup2.acknowledge_alarms() == 2
    assert all(r.current_alarms == [] for r in sup2.poll_once())


def test_over_budget_flag_only_while_running_past_the_timeout(env):
    root, conn, clock, mk = env
    now = time.time()
    for name, age in (("late", 7300), ("early", 1800)):
        td = make_run(root, name, transcript=[init_line(), text_line(1)], config={"timeout": 7200})
        (td / "started_at").write_text(
            time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now - age)) + f"\n{now - age}\n"
        )
    sup = mk(settings=fast_settings(stall_after_s=1e9, no_new_best_after_s=1e9))
    runs = sup.poll_once()
    late, early = one(runs, "late"), one(runs, "early")
    assert late.budget_s == 7200 and late.elapsed_s > 7200 and "over_budget" in late.flags
    assert early.elapsed_s < 7200 and "over_budget" not in early.flags
    # a finished run past its budget is not flagged (it ended)
    (root / "late" / "taskA" / "final_result.json").write_text(json.dumps({"runtime_seconds": 7300}))
    assert "over_budget" not in one(sup.poll_once(), "late").flags


def test_runs_row_gets_live_figures_between_full_recomputations(env):
    root, conn, clock, mk = env
    td = make_run(root, "grow", transcript=[init_line(), text_line(1)])
    sup = mk(
        settings=fast_settings(finalize_interval_s=1e9, row_refresh_s=10, stall_after_s=1e9, no_new_best_after_s=1e9)
    )
    r = sup.poll_once()[0]

    def row():
        return conn.execute(
            "SELECT n_events, input_tokens, output_tokens, last_event_at FROM runs WHERE run_key = ?", [r.run_key]
        ).fetchall()[0]

    base = row()
    with open(td / "agent_output.txt", "ab") as f:
        for i in range(2, 7):
            f.write(text_line(i) + b"\n")
    clock.advance(11)
    r = sup.poll_once()[0]
    n, inp, out, last = row()
    assert n == base[0] + 5 == r.n_events
    assert inp == (base[1] or 0) + 50 and out == (base[2] or 0) + 25
    assert last is not None and last >= (base[3] or 0)
    # the same figures as a full recomputation (close of the supervisor)
    sup.close()
    assert row()[:3] == (n, inp, out)


def test_graded_submission_between_full_recomputations_updates_the_best_at_once(env, monkeypatch):
    """A new graded round of a run going on gets a submissions-only finalize (the event counts,
    tokens and cost recomputation waits for its schedule), yet the row's best-so-far and
    submission count are current at once and its event count matches the events table."""
    import edgetui.live.run_files as sup_mod  # the finalize lives in the run-files part

    root, conn, clock, mk = env
    td = make_run(root, "grow", transcript=[init_line(), text_line(1)])
    sup = mk(
        settings=fast_settings(finalize_interval_s=1e9, row_refresh_s=0, stall_after_s=1e9, no_new_best_after_s=1e9)
    )
    r = sup.poll_once()[0]
    calls: list[bool] = []
    real = sup_mod.finalize_runs
    monkeypatch.setattr(
        sup_mod,
        "finalize_runs",
        lambda rec, jobs, *rest: (calls.extend(j.aggregates for j in jobs), real(rec, jobs, *rest))[1],
    )
    with open(td / "agent_output.txt", "ab") as f:
        f.write(text_line(2) + b"\n")
    sub = td / "submissions" / "agent-1"
    sub.mkdir(parents=True)
    _report(sub / "report.json")
    clock.advance(3)
    r = sup.poll_once()[0]
    assert calls == [False]
    assert r.best_display == pytest.approx(70.0) and r.agent_submissions == 1
    row = conn.execute(
        "SELECT best_round, agent_submissions, n_events FROM runs WHERE run_key = ?", [r.run_key]
    ).fetchone()
    n = count(conn, "SELECT count(*) FROM events WHERE run_key = ?", r.run_key)
    assert row == ("agent-1", 1, n) and r.n_events == n
    # the full recomputation still comes (here: on close) and agrees
    sup.close()
    assert calls == [False, True]
    assert count(conn, "SELECT n_events FROM runs WHERE run_key = ?", r.run_key) == n


def test_submission_folder_with_nothing_in_it_fails_after_the_eval_timeout(env):
    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line()])
    (td / "submissions" / "agent-1").mkdir(parents=True)  # no run_instance.log, no report, no judge
    sup = mk(settings=fast_settings(stall_after_s=1e9, no_new_best_after_s=1e9))
    r = sup.poll_once()[0]
    assert r.status == "grading" and r.grading_rounds == ["agent-1"] and r.active_alarms == []
    clock.advance(600 + 900 + 5)  # default eval timeout 600 s + 15 min
    r = sup.poll_once()[0]
    assert r.status == "running" and r.grading_rounds == []
    assert r.active_alarms == ["grading_failed"] and "no report.json after" in r.alarms[-1].message


def test_error_as_the_last_log_line_is_recorded_at_once_then_completed(env):
    root, conn, clock, mk = env
    t = time.time() - 30
    td = make_run(
        root,
        "err",
        log=log_line(t, "INFO", "Images ready") + log_line(t + 1, "ERROR", "Error: judge down"),
        transcript=[init_line()],
    )
    sup = mk(settings=fast_settings(stall_after_s=1e9, no_new_best_after_s=1e9))
    r = sup.poll_once()[0]
    assert r.active_alarms == ["infra_error"]
    q = (
        "SELECT summary, sub, data->>'$.traceback', data->>'$.provisional' FROM events WHERE run_key = ? "
        "AND kind = 'infra_error' ORDER BY sub"
    )
    clock.advance(3)  # the log stays quiet: the held ERROR record is recorded as it stands
    sup.poll_once()
    rows = conn.execute(q, [r.run_key]).fetchall()
    assert len(rows) == 1 and "judge down" in rows[0][0] and rows[0][2] is None and rows[0][3] == "true"
    assert conn.execute("SELECT infra_error FROM runs WHERE run_key = ?", [r.run_key]).fetchall() == [(True,)]
    # its traceback arrives, then the next record: the complete event replaces the provisional one
    with open(td / "run_agent.log", "a") as f:
        f.write('Traceback (most recent call last):\n  File "x.py", line 1\nConnectionError: refused\n')
        f.write(log_line(t + 5, "INFO", "Agent exited after 4.0s, will resume"))
    sup.poll_once()
    rows = conn.execute(q, [r.run_key]).fetchall()
    assert len(rows) == 1 and rows[0][3] is None and "ConnectionError: refused" in rows[0][2]


def test_lines_present_at_first_sight_spread_up_to_the_transcripts_last_write(env):
    root, conn, clock, mk = env
    now = time.time()
    start, last_write = now - 3600, now - 600
    td = make_run(
        root,
        "seen",
        log=log_line(start, "INFO", "Running agent: claude -p ... (timeout=43200s)"),
        transcript=[init_line()] + [text_line(i) for i in range(1, 10)],
    )
    (td / "started_at").write_text(time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start)) + f"\n{start}\n")
    os.utime(td / "agent_output.txt", (last_write, last_write))
    sup = mk(settings=fast_settings(stall_after_s=1e9, no_new_best_after_s=1e9))
    r = sup.poll_once()[0]
    ts = [
        t
        for (t,) in conn.execute(
            "SELECT t FROM events WHERE run_key = ? AND source = 'agent_output.txt' ORDER BY \"offset\", sub",
            [r.run_key],
        ).fetchall()
    ]
    assert ts[0] == pytest.approx(start, abs=1) and ts[-1] == pytest.approx(last_write, abs=1)
    assert ts == sorted(ts) and start + 1000 < ts[len(ts) // 2] < last_write - 1000  # spread, not piled up
    assert r.last_event_at == pytest.approx(last_write, abs=1)


def test_live_refresh_rereads_only_changed_submission_folders_and_matches_an_offline_ingest(env, tmp_path, monkeypatch):
    from edgetui.record.ingest import ingest_paths
    from edgetui.parsers import sforge_dir as sd

    root, conn, clock, mk = env
    td = make_run(root, transcript=[init_line(), text_line(1)])
    for i in range(1, 6):
        sub = td / "submissions" / f"agent-{i}"
        sub.mkdir(parents=True)
        _report(
            sub / "report.json",
            submission_id=f"{i:012x}",
            pass_rate=i / 10,
            passed=i,
            failed=10 - i,
            summary=f"{i}/10 tests passed",
            submitted_at=time.time() - 600 + i,
        )
    read: list[str] = []
    from edgetui.parsers import sforge_submissions as subs_mod

    real = subs_mod.folder_events  # what reads a folder's files into events (the cache skips it)
    monkeypatch.setattr(
        subs_mod, "folder_events", lambda d, recs, off: read.extend(r.round for r in recs) or real(d, recs, off)
    )
    sup = mk()
    sup.poll_once()
    assert sorted(read) == [f"agent-{i}" for i in range(1, 6)]
    # a new folder and a re-graded one: only those two are read again
    read.clear()
    sub6 = td / "submissions" / "agent-6"
    sub6.mkdir()
    _report(
        sub6 / "report.json", submission_id="6" * 12, pass_rate=0.9, passed=9, failed=1, summary="9/10 tests passed"
    )
    time.sleep(0.01)
    _report(
        td / "submissions" / "agent-2" / "report.json",
        submission_id="2" * 12,
        pass_rate=0.8,
        passed=8,
        failed=2,
        summary="8/10 tests passed",
    )
    clock.advance(5)
    r = sup.poll_once()[0]
    assert sorted(read) == ["agent-2", "agent-6"]
    assert r.best_display == pytest.approx(90.0)
    # the same submission events as recording the directory offline
    monkeypatch.setattr(sd, "folder_events", real)
    off = open_db(tmp_path / "offline.duckdb")
    ingest_paths(off, [root])
    q = (
        "SELECT event_id, kind, round, summary, data FROM events WHERE source LIKE 'submissions/%' "
        "AND run_key = ? ORDER BY event_id"
    )
    assert conn.execute(q, [r.run_key]).fetchall() == off.execute(q, [r.run_key]).fetchall()
    off.close()


def test_quitting_brings_only_changed_runs_rows_up_to_date(env):
    """close() re-finalizes the runs that changed since their last full refresh, not every run
    (quitting with 150 watched runs took seconds), and their rows are complete afterwards."""
    root, conn, clock, mk = env
    make_run(root, transcript=[init_line(), text_line(1)])
    td2 = make_run(root, run_id="run2", transcript=[init_line("s2"), text_line(1, "s2")])
    sup = mk(settings=fast_settings(finalize_interval_s=3600, finalize_min_interval_s=3600))
    for _ in range(3):
        runs = sup.poll_once()
    key2 = one(runs, "run2").run_key
    done: list[str] = []
    orig = sup._finalize
    sup._finalize = lambda rs: (done.append(rs.key), orig(rs))[1]
    with open(td2 / "agent_output.txt", "ab") as f:
        f.write(text_line(2, "s2") + b"\n")
    sup.poll_once()  # tailed; its full refresh waits (finalize interval of an hour)
    assert done == []
    sup.close()
    assert done == [key2]  # only the run that grew
    n = count(conn, "SELECT n_events FROM runs WHERE run_key = ?", key2)
    assert n == count(conn, "SELECT count(*) FROM events WHERE run_key = ?", key2)


def test_tail_commit_plain_insert_then_or_ignore_on_a_key_conflict(tmp_path):
    """Tailed lines are committed with a plain INSERT; a batch holding an event recorded already (a
    restart from an older cursor) is redone with INSERT OR IGNORE: the new rows land, none twice."""
    from edgetui.events import Event
    from edgetui.live.tail import Tailer
    from edgetui.record.recorder import Recorder

    conn = open_db(tmp_path / "t.duckdb")
    tailer = Tailer(Recorder(conn))

    def evs(lo: int, hi: int) -> list[Event]:
        return [
            Event(
                run_key="local/r/t",
                kind="agent_message",
                source="agent_output.txt",
                generation="g1",
                offset=100 * i,
                sub=0,
                t=1.0e9 + i,
                summary=f"line {i}",
            )
            for i in range(lo, hi)
        ]

    tailer._commit(evs(0, 5), [])
    assert tailer.redone == 0
    tailer._commit(evs(3, 8), [])  # 3 and 4 are recorded already
    assert tailer.redone == 1
    rows = conn.execute('SELECT summary, count(*) FROM events GROUP BY summary ORDER BY min("offset")').fetchall()
    assert rows == [(f"line {i}", 1) for i in range(8)]
    tailer._commit(evs(8, 9), [])
    assert tailer.redone == 1 and conn.execute("SELECT count(*) FROM events").fetchone()[0] == 9


def test_supervisor_sets_duckdb_threads_from_its_settings(tmp_path):
    """The setting's thread count goes to the database (shared with the views' cursors); 0, the
    default, keeps DuckDB's own."""
    conn = open_db(tmp_path / "th.duckdb")
    default = conn.execute("SELECT current_setting('threads')").fetchone()[0]
    Supervisor(conn, [tmp_path / "runs"], docker_client=None).close()
    assert conn.execute("SELECT current_setting('threads')").fetchone()[0] == default
    Supervisor(conn, [tmp_path / "runs"], docker_client=None, settings=AlarmSettings(duckdb_threads=1)).close()
    assert conn.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    assert conn.cursor().execute("SELECT current_setting('threads')").fetchone()[0] == 1  # the views' cursors too


def test_live_run_from_is_model_construct_and_names_a_missing_field(env):
    """The snapshot builder gives what LiveRun.model_construct gives for the supervisor's own
    snapshots (same fields, fields set, dump), and refuses values without every field."""
    from edgetui.live.model import LiveRun, live_run_from

    root, conn, clock, mk = env
    make_run(root, transcript=[init_line(), call_line(1)])
    sup = mk()
    r = sup.poll_once()[0]
    ref = LiveRun.model_construct(**dict(r.__dict__))
    assert r == ref and r.model_fields_set == ref.model_fields_set and r.model_dump() == ref.model_dump()
    assert r.pending_tool_calls == 1 and r.status == "running"
    values = dict(r.__dict__)
    del values["flags"]
    with pytest.raises(ValueError, match="flags"):
        live_run_from(values)
    with pytest.raises(ValueError, match="nonsense"):
        live_run_from({**r.__dict__, "nonsense": 1})


def test_a_work_container_killed_before_the_agents_end_is_an_alarm_even_on_a_normal_looking_finish():
    """SForge 1.1.0 may take a container killed from outside for an agent that exited at once and end
    the run as if normally (no ERROR): the engine's FinishedAt before the logged agent end tells it.
    The harness's own stop after "Agent finished" (exit 137 too) and an OOM kill are not this alarm."""
    from edgetui.live.alarms import AlarmSettings, RunFacts, evaluate

    base = dict(
        run_key="k",
        status="finished",
        finished=True,
        container_id="c" * 12,
        container_name="sforge.run.t.r",
        container_state="gone",
        container_exit_code=137,
        ended_t=1000.0,
    )
    killed = evaluate(RunFacts(**base, container_finished_at=990.0, ending_since=990.2), AlarmSettings(), 1001.0)
    assert [(c.rule, c.key) for c in killed] == [("container_exit", "container_killed:cccccccccccc")]
    assert "killed (exit 137) before the agent's end" in killed[0].message
    normal = evaluate(RunFacts(**base, container_finished_at=1005.0, ending_since=990.2), AlarmSettings(), 1006.0)
    assert normal == []
    oom = evaluate(
        RunFacts(**base, container_finished_at=990.0, ending_since=990.2, container_oom=True), AlarmSettings(), 1001.0
    )
    assert oom == []
    clean_exit = evaluate(
        RunFacts(**{**base, "container_exit_code": 0}, container_finished_at=990.0, ending_since=990.2),
        AlarmSettings(),
        1001.0,
    )
    assert clean_exit == []
    # the ERROR path already says it: one alarm, not two
    both = evaluate(
        RunFacts(
            **base,
            container_finished_at=990.0,
            ending_since=990.2,
            error_times=[990.1],
            last_error_msg="409 … is not running",
        ),
        AlarmSettings(),
        1001.0,
    )
    assert [c.key for c in both] == ["infra_error@990"]  # the ERROR burst's key: the alarm raised while running


def test_a_harness_error_tailed_after_the_run_was_read_makes_it_aborted(env):
    """The harness's crash before the agent (run_agent.log ends on an ERROR, no started_at) arrives
    after the run's files were read: the ERROR line tailed makes the run's facts be read again, so
    after 60 s of quiet it is aborted with the harness's words (seen on the real harness under load:
    without it the run stayed 'running' until its container went)."""
    root, conn, clock, mk = env
    td = make_run(root)
    sup = mk()
    r = sup.poll_once()[0]
    assert r.status == "running"
    with open(td / "run_agent.log", "a") as f:
        f.write(log_line(clock(), "ERROR", "Error: Install command failed (exit 2): curl …"))
    assert sup.poll_once()[0].status == "running"  # the harness may still be writing its traceback
    clock.advance(61)
    r = sup.poll_once()[0]
    assert r.status == "aborted"
    reason = conn.execute("SELECT status_reason FROM runs WHERE run_key = ?", [r.run_key]).fetchone()[0]
    assert reason and "Install command failed" in reason


def test_an_aborted_runs_elapsed_ends_at_its_last_record_not_at_its_files_mtimes(tmp_path):
    """A genuine SForge run whose install failed (aborted 0.5 s after it started), copied the way
    a clone or ``cp -r`` does (every mtime = now): its elapsed is its own records' span, not the
    time since it started (the runs screen read 10:19 for a 7-minute budget)."""
    import shutil as _sh

    src = Path(__file__).resolve().parents[1] / "sample_runs" / "genuine" / "runs" / "real-installfail-20261201181800"
    root = tmp_path / "runs"
    _sh.copytree(src, root / src.name, copy_function=_sh.copy)  # new mtimes, as a fresh checkout has
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], docker_client=None, settings=fast_settings())
    try:
        (r,) = sup.poll_once()
        first, last = conn.execute(
            "SELECT min(t), max(t) FROM events WHERE run_key = ? AND t IS NOT NULL", [r.run_key]
        ).fetchone()
        assert r.status == "aborted" and r.started_at is not None
        assert time.time() - r.started_at > 3600  # it started long before the files' mtimes
        assert r.elapsed_s is not None and 0 <= r.elapsed_s <= (last - r.started_at) + 1.0, r.elapsed_s
    finally:
        sup.close()
        conn.close()


def test_a_run_already_over_when_the_watch_begins_is_shown_not_alarmed(env):
    """Issue 36, item 6: a run that had ended by an infrastructure error ten minutes before the first
    watch shows its infra flag, and raises no alarm; one that ends so while watched raises one."""
    root, conn, clock, mk = env
    t = time.time() - 900
    over = make_run(
        root,
        "over",
        log=log_line(t, "INFO", "Images ready") + log_line(t + 290, "ERROR", "Error: image missing"),
        transcript=[init_line()],
    )
    (over / "final_result.json").write_text(json.dumps({"task_id": "taskA", "status": "error"}))
    os.utime(over / "final_result.json", (t + 300, t + 300))
    live = make_run(root, "live", log=log_line(time.time() - 5, "INFO", "Images ready"), transcript=[init_line()])
    sup = mk()
    runs = sup.poll_once()
    assert one(runs, "over").infra_error and "infra" in one(runs, "over").flags
    assert one(runs, "over").active_alarms == []
    assert _alarm_rules(conn, one(runs, "over").run_key) == []
    # the control: a run ended by an infrastructure error while watched raises its alarm
    now = time.time()
    with open(live / "run_agent.log", "a") as f:
        f.write(log_line(now, "ERROR", "Error: judge gone"))
    (live / "final_result.json").write_text(json.dumps({"task_id": "taskA", "status": "error"}))
    runs = sup.poll_once()
    assert one(runs, "live").active_alarms == ["infra_error"]
