"""The CLI and the app as a newcomer meets them: help, typos, fitting tables, literal cells,
prefixes, --at, terminals that are not terminals, and small honest messages."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

import duckdb

from edgetui.cli.main import build_parser, main
from edgetui.cli.run_arguments import resolve_run
from edgetui.store.database import open_db

from conftest import copy_samples_db

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs"
CLI = [sys.executable, "-m", "edgetui.cli.main"]


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template) -> Path:
    db = tmp_path_factory.mktemp("fc") / "s.duckdb"
    copy_samples_db(samples_template, db)
    return db


def _in_pty(argv: list[str], cols: int, env: dict | None = None, timeout: float = 60) -> str:
    """Run ``argv`` with a real terminal of ``cols`` columns as stdout; returns what it printed."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    full_env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    full_env.update({"TERM": "xterm-256color", **(env or {})})
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=full_env, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        elif p.poll() is not None:
            break
    p.wait(timeout=10)
    os.close(master)
    return out.decode("utf-8", "replace").replace("\r\n", "\n")


def test_every_command_has_a_description_help_on_its_arguments_and_an_example(capsys):
    ap = build_parser()
    sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        text = p.format_help()
        assert p.description and len(p.description) > 10, name
        assert "example:" in text and "edgetui" in text.split("example:")[1], name
        for a in p._actions:
            if a.dest not in ("help",) and a.help is None:
                pytest.fail(f"{name}: argument {a.dest} has no help")
    # a typo names the command meant, with exit status 2
    with pytest.raises(SystemExit) as e:
        main(["ingets", "x"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    # one line (no usage block before it: the top level's is four lines) with the hint where the usage is
    assert (
        err == "edgetui: error: unknown command 'ingets'; did you mean 'ingest'? (edgetui --help lists the commands)\n"
    )
    # an error inside a command: one line naming that command, and where its usage is
    with pytest.raises(SystemExit):
        main(["sql"])
    assert capsys.readouterr().err == (
        "edgetui sql: error: the following arguments are required: QUERY (edgetui sql --help shows the usage)\n"
    )
    # a mistyped option is said by its command's parser, with the option meant
    with pytest.raises(SystemExit) as e:
        main(["runs", "--frmat", "csv"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("edgetui runs: error: unrecognized arguments: --frmat csv")
    assert "did you mean '--format'?" in err and "edgetui runs --help" in err
    # every live option works after the command too
    args = build_parser().parse_args(["watch", "--tasks-dir", "/tmp", "--no-docker"])
    assert args.tasks_dir == Path("/tmp") and args.no_docker


@pytest.mark.parametrize("cols", [80, 160])
def test_runs_and_sql_fit_the_terminal(samples_db, cols):
    out = _in_pty([*CLI, "--db", str(samples_db), "runs"], cols)
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) >= 7, out
    import re

    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", ln) for ln in lines]
    assert max(len(ln) for ln in plain) <= cols, plain
    assert "run_id" in plain[0] and "best" in plain[0]
    if cols == 80:
        note = " ".join(plain[-6:])
        assert "not shown" in note and "--format" in note and "cut to fit" in note
    csv_out = subprocess.run(
        [*CLI, "--db", str(samples_db), "runs", "--format", "csv"], capture_output=True, text=True
    ).stdout
    assert "stated_usd" in csv_out.splitlines()[0]  # piped: complete
    out = _in_pty([*CLI, "--db", str(samples_db), "sql", "SELECT summary, data FROM events LIMIT 20"], cols)
    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", ln) for ln in out.splitlines() if ln.strip()]
    assert max(len(ln) for ln in plain) <= cols


def test_cells_are_literal_and_control_characters_escaped(samples_db):
    q = (
        "SELECT '[bold]x[/bold]' AS a, '[image]' AS b, 'x' || chr(27) || ']0;owned' || chr(7) AS c, "
        "'[/tmp/sforge-stop-hook.sh]' AS d, 'two' || chr(10) || 'lines' AS e"
    )
    out = _in_pty([*CLI, "--db", str(samples_db), "sql", q], 160)
    assert "[bold]x[/bold]" in out and "[image]" in out and "[/tmp/sforge-stop-hook.sh]" in out
    assert "\\x1b]0;owned\\x07" in out and "\x1b]0;" not in out
    assert "two\\nlines" in out
    # the whole sample events table prints (it held markup-like text that failed before)
    r = subprocess.run([*CLI, "--db", str(samples_db), "sql", "SELECT * FROM events"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_no_color_is_honoured_in_tables(samples_db):
    coloured = _in_pty([*CLI, "--db", str(samples_db), "runs"], 160)
    plain = _in_pty([*CLI, "--db", str(samples_db), "runs"], 160, env={"NO_COLOR": "1"})
    import re

    colour = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38;5;\d+)m")  # foreground colours
    assert colour.search(coloured), coloured[:300]
    assert not colour.search(plain) and "run_id" in plain
    dumb = _in_pty([*CLI, "--db", str(samples_db), "runs"], 160, env={"TERM": "dumb"})
    assert "\x1b[" not in dumb and "run_id" in dumb


def test_the_app_refuses_a_pipe_and_a_dumb_terminal(samples_db):
    r = subprocess.run(
        [*CLI, "--db", str(samples_db)], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )
    assert r.returncode == 2 and "needs a terminal" in r.stderr and "\x1b" not in r.stdout
    assert r.stderr.count("\n") == 1
    out = _in_pty([*CLI, "--db", str(samples_db)], 100, env={"TERM": "dumb"}, timeout=30)
    assert "TERM=dumb" in out and "\x1b[?1049h" not in out  # never switched to the alternate screen


def test_replay_takes_a_unique_prefix_and_lists_an_ambiguous_one(samples_db):
    conn = open_db(samples_db, read_only=True)
    try:
        assert resolve_run(conn, "opus48").endswith("/gw_signal_search")
        assert resolve_run(conn, "gw_sig").endswith("/gw_signal_search")  # a task name's prefix
        assert "vrp_route_planner" in resolve_run(conn, "gpt55-codex")
        with pytest.raises(LookupError) as e:
            resolve_run(conn, "gitlet")  # two runs of that task
        assert "ambiguous" in str(e.value) and str(e.value).count("gitlet_vcs") == 2
        with pytest.raises(LookupError):
            resolve_run(conn, "zzz-nothing")
    finally:
        conn.close()


@pytest.mark.asyncio
async def test_replay_at_a_time_and_past_the_end(samples_db):
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.replay import ReplayScreen

    conn = open_db(samples_db, read_only=True)
    rk = resolve_run(conn, "opus48")
    conn.close()
    for at, expect_note in ((3 * 3600 + 20 * 60, False), (99 * 3600, True)):
        app = EdgeTUIApp(samples_db, rk, start_at=at)
        async with app.run_test(size=(120, 40)) as pilot:
            for _ in range(300):
                if isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None:
                    break
                await pilot.pause(0.02)
            await pilot.pause(0.1)
            cur = app.screen.cursor
            pos = cur.position()
            if expect_note:
                assert cur.index == cur.n - 1
                assert any(
                    "past the run's end: the run ended at 12:01:51; at its last event" in n.message
                    for n in app._notifications
                ), [n.message for n in app._notifications]
            else:
                assert pos <= at and (cur.index + 1 == cur.n or cur.position(cur.index + 1) > at)
                assert at - pos < 1800


@pytest.mark.asyncio
async def test_a_single_search_match_stays_selected(samples_db):
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.replay import ReplayScreen

    conn = open_db(samples_db, read_only=True)
    rk = resolve_run(conn, "judge-demo")
    conn.close()
    app = EdgeTUIApp(samples_db, rk)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(300):
            if isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None:
                break
            await pilot.pause(0.02)
        cur = app.screen.cursor
        cur.search("Final archive")
        assert len(cur.matches) == 1
        app.screen.moved(True)
        where = cur.index
        await pilot.press("n")
        await pilot.pause(0.05)
        assert cur.index == where
        assert any("the only match" in n.message for n in app._notifications)
        assert not any(n.message == "no match" for n in app._notifications)


def test_alarm_list_marks_cleared_alarms():
    from edgetui.live.model import Alarm
    from edgetui.views.screens.live_common import AlarmsScreen

    now = time.time()
    a1 = Alarm(run_key="h/r/t", rule="stall", t=now - 600, message="no growth for 15 min")
    a2 = Alarm(run_key="h/r/t", rule="oom", t=now - 60, message="killed", severity="critical")
    s = AlarmsScreen([a1, a2], now, states={id(a1): "cleared", id(a2): "holding"})
    by_rule = {ln.split()[2]: ln for ln in s.lines}
    assert "cleared" in by_rule["stall"] and "holding" in by_rule["oom"]


def test_a_no_op_re_ingest_says_nothing_new(tmp_path, capsys):
    db = tmp_path / "n.duckdb"
    run = SAMPLES / "runs" / "judge-demo-001"
    assert main(["--db", str(db), "ingest", "-q", str(run)]) == 0
    first = capsys.readouterr().out
    assert "new event(s)" in first and "nothing new" not in first
    assert main(["--db", str(db), "ingest", "-q", str(run)]) == 0
    again = capsys.readouterr().out
    assert again.startswith("nothing new: 1 run(s) already recorded")


def test_binary_and_empty_files_are_not_runs_and_zero_turns_is_said(tmp_path, capsys):
    db = tmp_path / "b.duckdb"
    png = tmp_path / "pic.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40)
    assert main(["--db", str(db), "ingest", "-q", str(png)]) == 1
    err = capsys.readouterr().err
    assert "pic.png: skipped, not an agent transcript" in err
    empty1, empty2 = tmp_path / "a" / "x.jsonl", tmp_path / "b" / "x.jsonl"
    for e in (empty1, empty2):
        e.parent.mkdir()
        e.write_bytes(b"")
    assert main(["--db", str(db), "ingest", "-q", str(empty1), str(empty2)]) == 1
    assert capsys.readouterr().err.count("empty file; nothing recorded") == 2
    # in a folder: the binary file is skipped with a note, the transcripts are recorded
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "pic.json").write_bytes(b"\x00\x01\x02binary")
    (folder / "t.jsonl").write_text(
        '{"type":"system","subtype":"init","session_id":"s"}\n'
        '{"type":"assistant","message":{"id":"m1","role":"assistant",'
        '"content":[{"type":"text","text":"hi"}]}}\n'
    )
    init_only = tmp_path / "init-only.jsonl"
    init_only.write_text('{"type":"system","subtype":"init","session_id":"s2","model":"m"}\n')
    assert main(["--db", str(db), "ingest", "-q", str(folder), str(init_only)]) == 0
    err = capsys.readouterr().err
    assert (
        "pic.json: skipped" in err
        and "init-only.jsonl: no agent or user message, thinking or tool call recognised" in err
    )
    c = open_db(db, read_only=True)
    try:
        runs = dict(c.execute("SELECT run_id, n_messages FROM runs").fetchall())
    finally:
        c.close()
    assert runs == {"t": 1, "init-only": 0}
    assert main(["--db", str(db), "runs", "--format", "json"]) == 0
    import json

    flags = {r["run_id"]: r["flags"] for r in json.loads(capsys.readouterr().out)}
    assert "no-turns" in flags["init-only"] and "no-turns" not in flags["t"]


def test_pass_rate_tasks_show_a_pass_rate_not_a_score(samples_db):
    """SForge stores the pass rate as best_score when a task has no score: a pass-rate task's
    header and a round's "best so far" show the pass rate only (a score task shows both)."""
    from rich.console import Console

    from edgetui.store import queries as store
    from edgetui.views.widgets.detail import _report
    from edgetui.views.widgets.header import header_text

    conn = open_db(samples_db, read_only=True)
    try:
        rk = resolve_run(conn, "7c1e94d2a0b3")  # gitlet_vcs: pass_rate_first, no score
        head = store.run_header(conn, rk)
        sub = [s for s in store.submissions(conn, rk) if s.get("kind") == "agent"][-1]
        gw = store.run_header(conn, resolve_run(conn, "opus48"))
    finally:
        conn.close()
    assert not head["score_task"] and head["best_score"] == head["best_pass_rate"]
    text = header_text(head, 160).plain
    assert "best 95.3%" in text and " score " not in text
    assert "pass 50%" in header_text(gw, 160).plain and "best 67" in header_text(gw, 160).plain
    con = Console(width=120, record=True)
    for part in _report(sub, [], {}):
        con.print(part)
    shown = con.export_text()
    line = next(ln for ln in shown.splitlines() if "best so far" in ln)
    assert "pass " in line and "·" not in line, line


def test_an_assumed_policy_is_said_in_the_header_at_any_width_and_in_the_chart(tmp_path):
    from edgetui.store import queries as store
    from edgetui.views.widgets.header import header_text

    db = tmp_path / "a.duckdb"
    assert (
        main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(tmp_path), str(SAMPLES / "runs" / "judge-demo-001")])
        == 0
    )
    conn = open_db(db, read_only=True)
    try:
        head = store.run_header(conn, resolve_run(conn, "judge-demo"))
    finally:
        conn.close()
    assert head["policy_assumed"]
    for width in (60, 80, 160):
        assert "policy assumed" in header_text(head, width).plain, width


def test_without_the_task_json_one_best_so_far_everywhere(tmp_path):
    """No task JSON: the policy under which SForge's selection reproduces final_result.json's best
    round is used, so the header (runs), the ★ (submissions) and the chart (best_score per round)
    tell the same best as with the task JSON."""
    run = SAMPLES / "runs" / "opus48-edge-3-20260312005800"
    with_json, without = tmp_path / "with.duckdb", tmp_path / "without.duckdb"
    assert main(["--db", str(with_json), "ingest", "-q", "--tasks-dir", str(SAMPLES / "tasks"), str(run)]) == 0
    assert main(["--db", str(without), "ingest", "-q", "--tasks-dir", str(tmp_path), str(run)]) == 0
    q_subs = "SELECT round, is_new_best, best_round, best_score FROM submissions ORDER BY round"
    q_run = "SELECT best_round, best_score, selection, score_direction FROM runs"
    a, b = open_db(with_json, read_only=True), open_db(without, read_only=True)
    try:
        assert a.execute(q_subs).fetchall() == b.execute(q_subs).fetchall()
        assert a.execute(q_run).fetchall() == b.execute(q_run).fetchall()
        assert b.execute("SELECT policy_assumed FROM runs").fetchone()[0] is True
    finally:
        a.close()
        b.close()


def test_same_named_transcripts_are_two_runs_and_a_moved_file_is_the_same_run(tmp_path, capsys):
    import json as _json
    import shutil as _shutil

    for sub, sess in (("a", "s-one"), ("b", "s-two")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "session.jsonl").write_text(
            _json.dumps({"type": "system", "subtype": "init", "session_id": sess})
            + "\n"
            + _json.dumps(
                {
                    "type": "assistant",
                    "message": {"id": "m-" + sess, "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
                }
            )
            + "\n"
            + _json.dumps({"type": "result", "subtype": "success", "result": "done", "num_turns": 1})
            + "\n"
        )
    db = tmp_path / "s.duckdb"
    assert (
        main(
            [
                "--db",
                str(db),
                "ingest",
                "-q",
                str(tmp_path / "a" / "session.jsonl"),
                str(tmp_path / "b" / "session.jsonl"),
            ]
        )
        == 0
    )
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    _shutil.copy(tmp_path / "a" / "session.jsonl", moved / "session.jsonl")
    capsys.readouterr()
    assert main(["--db", str(db), "ingest", "-q", str(moved / "session.jsonl")]) == 0
    assert capsys.readouterr().out.startswith("nothing new")
    c = open_db(db, read_only=True)
    try:
        rows = c.execute("SELECT run_key, n_events FROM runs ORDER BY run_key").fetchall()
    finally:
        c.close()
    assert len(rows) == 2 and all(n == 4 for _, n in rows), rows  # init, message, result, segment end
    assert all(k.startswith("local/session/transcript-") for k, _ in rows)


def test_old_transcript_keys_are_migrated_by_content(tmp_path):
    """A schema-4 database keyed a bare transcript by its file stem: opening it re-keys the run by
    content, event ids recomputed, so a re-ingest of the file adds nothing."""
    import json as _json

    import duckdb as _duckdb

    from edgetui.events import event_id

    f = tmp_path / "a" / "session.jsonl"
    f.parent.mkdir()
    f.write_text(
        _json.dumps({"type": "system", "subtype": "init", "session_id": "s1"})
        + "\n"
        + _json.dumps(
            {
                "type": "assistant",
                "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            }
        )
        + "\n"
        + _json.dumps({"type": "result", "subtype": "success", "result": "done", "num_turns": 1})
        + "\n"
    )
    db = tmp_path / "old.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    c = _duckdb.connect(str(db))
    new = c.execute("SELECT run_key FROM runs").fetchone()[0]
    old = "local/session/transcript"
    for eid, src, gen, off, sub in c.execute(
        'SELECT event_id, source, generation, "offset", sub FROM events'
    ).fetchall():
        c.execute(
            "UPDATE events SET event_id = ?, run_key = ? WHERE event_id = ?",
            [event_id(old, src, gen, off, sub), old, eid],
        )
    for t in ("runs", "source_cursors"):
        c.execute(f"UPDATE {t} SET run_key = ? WHERE run_key = ?", [old, new])
    c.execute("UPDATE runs SET task_id = 'transcript'")
    c.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    c.close()
    conn = open_db(db)
    try:
        assert conn.execute("SELECT run_key FROM runs").fetchall() == [(new,)]
        assert conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [new]).fetchone()[0] == 4
    finally:
        conn.close()
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    c = _duckdb.connect(str(db), read_only=True)
    assert c.execute("SELECT count(*), count(DISTINCT run_key) FROM events").fetchone() == (4, 1)
    c.close()


def test_a_newline_in_a_run_id_does_not_garble_the_runs_table(tmp_path):
    src = SAMPLES / "runs" / "judge-demo-001" / "judge_demo_sum"
    import shutil as _shutil

    odd = tmp_path / "runs" / "bad\nid" / "judge_demo_sum"
    _shutil.copytree(src, odd)
    db = tmp_path / "n.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(SAMPLES / "tasks"), str(tmp_path / "runs")]) == 0
    out = _in_pty([*CLI, "--db", str(db), "runs"], 160)
    rows = [ln for ln in out.splitlines() if "judge_demo" in ln]
    assert len(rows) == 1 and "bad\\nid" in rows[0], out


def test_a_db_in_a_missing_directory_is_refused_by_every_command(tmp_path, capsys):
    """``ingest --db /nonexistent/dir/x.duckdb`` made the whole directory tree (as root: under /)
    and said "recorded 1 run(s)"; the app refused the same path. Every command now refuses it in
    one line naming the directory, and makes nothing."""
    f = tmp_path / "t.jsonl"
    f.write_text('{"type":"system","subtype":"init","session_id":"s"}\n')
    db = tmp_path / "no" / "such" / "x.duckdb"
    for argv in (["ingest", "-q", str(f)], ["runs"], ["sql", "SELECT 1"]):
        assert main(["--db", str(db), *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"edgetui: error: cannot open {db}: no directory {db.parent} (create it, or choose another --db)"
    assert not (tmp_path / "no").exists()


def test_replay_of_a_missing_file_says_no_such_file(samples_db, capsys):
    assert main(["--db", str(samples_db), "replay", "/nonexistent/t.jsonl"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "edgetui: error: /nonexistent/t.jsonl: no such file, and no recorded run matches it; see `edgetui runs`"
    )
    assert main(["--db", str(samples_db), "replay", "no-such-run"]) == 2  # a run name: as before
    assert "no recorded run matches 'no-such-run'" in capsys.readouterr().err


def test_a_text_file_in_no_known_format_is_not_a_run(tmp_path, capsys):
    """Issue 37, item 8: `edgetui ingest README.md` recorded a run of 177 parse errors; a file in no
    format edgetui reads is refused in one line, nothing is recorded, and the exit status is 1."""
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nSome prose, a list:\n\n* one\n* two\n" * 20)
    db = tmp_path / "t.duckdb"
    rc = main(["--db", str(db), "ingest", str(notes)])
    err = capsys.readouterr().err
    assert rc == 1
    assert f"{notes}: skipped, not an agent transcript" in err
    conn = duckdb.connect(str(db), read_only=True)
    try:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    finally:
        conn.close()


def test_export_refuses_a_non_empty_directory_unless_forced(tmp_path, db_path, capsys):
    open_db(db_path).close()
    out = tmp_path / "exp"
    assert main(["--db", str(db_path), "export", str(out)]) == 0  # a new directory
    written = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert "runs.parquet" in written
    (out / "mine.txt").write_text("keep me")
    capsys.readouterr()
    # a second export into it: refused in one line, exit status 2 (an input problem), nothing touched
    assert main(["--db", str(db_path), "export", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not empty" in err and "--force" in err, err
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir() if p.name != "mine.txt"} == written
    # --force writes into it (the user's own file stays)
    time.sleep(0.01)
    assert main(["--db", str(db_path), "export", "--force", str(out)]) == 0
    assert (out / "mine.txt").read_text() == "keep me"
    assert (out / "runs.parquet").stat().st_mtime_ns != written["runs.parquet"]
    # a file where the directory should be: one line, status 2
    f = tmp_path / "a-file"
    f.write_text("x")
    capsys.readouterr()
    assert main(["--db", str(db_path), "export", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err
    # a quote in the path is a character of the path, not the end of the SQL string
    q = tmp_path / "it's here"
    assert main(["--db", str(db_path), "export", str(q)]) == 0
    assert (q / "runs.parquet").is_file()


@pytest.mark.asyncio
async def test_try_it_uses_the_default_database_and_the_readme_commands_work_on_it(tmp_path, monkeypatch, capsys):
    """The README's "Try it" opens the app without --db (the commands after it have none: a
    demo.duckdb left `edgetui runs` finding "no database"); its first start records the samples,
    tagged as samples, into the default database, and the README's next commands read them there."""
    import json
    import re

    from waits import pilot_wait_for

    from edgetui.store.database import default_db_path
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.picker import PickerScreen

    readme = (ROOT / "README.md").read_text()
    try_it = readme.split("## Try it", 1)[1].split("\n## ", 1)[0]
    command = re.search(r"```sh\n(.*?)\n```", try_it, re.S).group(1).strip()
    assert command.endswith(".venv/bin/edgetui") and "--db" not in command, command
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("EDGETUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("EDGETUI_DB", raising=False)
    db = default_db_path()
    assert str(db).startswith(str(tmp_path)) and not db.exists()
    db.parent.mkdir(parents=True)  # (run_app makes it; the test drives the app itself)
    app = EdgeTUIApp(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot_wait_for(
            pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) >= 11, 120, "the samples"
        )
    capsys.readouterr()
    # the commands the README names after it, as written there (no --db)
    assert "`edgetui runs`" in try_it and "`edgetui moments opus48`" in try_it
    assert main(["runs", "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert len(runs) == 11 and all("sample" in (r.get("flags") or "") for r in runs)
    assert main(["moments", "opus48"]) == 0 and "agent-52" in capsys.readouterr().out
    out = tmp_path / "report.html"
    assert main(["report", "opus48", "-o", str(out)]) == 0 and out.stat().st_size > 1000
    assert main(["sql", "SELECT count(*) AS n FROM runs WHERE is_sample"]) == 0
    assert "11" in capsys.readouterr().out
