"""Nothing a run holds reaches the terminal as a control sequence, and nothing it holds is read as markup.

A run is planted with OSC 52 (clipboard), OSC 0 (title), OSC 8 (link), ESC[2J, cursor moves, C1
controls (8-bit CSI / OSC / NEL), bidi overrides, isolates and marks, and other C0 controls and
DEL, in its run folder's name, its task folder's name, the transcript's text, a tool's output, a
tool's name and command, the model, a log line and a line that is not JSON (see hostile_run.py).
Each sink is then read as the terminal receives it: the CLI under a pty (and through a pipe,
where the bytes are kept), the app in tmux with its raw output stream captured by ``pipe-pane``,
the pager's copy through ``less`` with ``LESS=-R``.
"""

from __future__ import annotations

import json

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

import pytest

import hostile_run as h
from prereqs import need
from test_e2e_tmux import EDGETUI, Term
from waits import pilot_wait_for

from edgetui.control_chars import make_file_visible, strip_sequences, visible, visible_lines

#: what a terminal must never receive from run content (Textual and Rich send SGR colours and
#: cursor moves of their own: the payload is recognised by its own bytes)
NEEDLES = {
    "OSC 52 clipboard write": b"\x1b]52;",
    "OSC 0 title": b"\x1b]0;PWNED",
    "OSC 8 link": b"\x1b]8;;http",
    "clear + cursor moves": b"\x1b[2J\x1b[5;5H",
    "cursor up": b"\x1b[3A\xc2\x9b",
    **{f"C1 U+{cp:04X}": chr(cp).encode() for cp in range(0x80, 0xA0)},
    **{
        f"bidi U+{cp:04X}": chr(cp).encode()
        for cp in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C]
    },
    **{f"C0 {c!r}": c.encode() for c in "\x0b\x0c\x0e\x7f"},
    "C0 BEL BS": b"\x07\x08",  # (less writes a lone backspace of its own after a wrapped line's last cell)
}
#: what the payload looks like once shown escaped
SHOWN = b"\\x1b]52;c;SGVsbG8="


def leaks(data: bytes) -> list[str]:
    return [name for name, needle in NEEDLES.items() if needle in data]


def strict_leaks(data: bytes) -> list[str]:
    """For the CLI: any ESC that does not start an SGR colour (or the progress bar's hide / show cursor,
    erase line, cursor up: the payload's own are caught by :data:`NEEDLES`), any other C0 but CR LF TAB, any C1 or
    bidi control."""
    out = [name for name, needle in NEEDLES.items() if needle in data]
    out += [f"ESC {m.group()!r}" for m in re.finditer(rb"\x1b(?!\[(?:[0-9;]*m|\?25[lh]|2K|[0-9]*A)).{0,6}", data)]
    out += [f"C0 {m.group()!r}" for m in re.finditer(rb"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]", data)]
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, Path]:
    """(runs root, database) with the payload planted in two runs: every field, and the markup names."""
    base = tmp_path_factory.mktemp("hostile")
    root = base / "runs"
    root.mkdir()
    h.build(root, h.hostile_folder(), h.planted("task").replace("/", "_"))
    h.build(root, h.RUN_FOLDER, h.TASK_FOLDER)
    h.build(root, "[b]x[", "b]")  # the run key "[b]x[/b]"
    db = base / "hostile.duckdb"
    r = subprocess.run([str(EDGETUI), "--db", str(db), "ingest", str(root)], capture_output=True)
    assert r.returncode == 0, r.stderr
    return root, db


# ---------------------------------------------------------------------------- the escaper


def test_every_control_shown_escaped_and_newline_kept_only_in_the_lines_variant():
    for text in [h.PAYLOAD, "a\nb\tc\r\x00\x1b\x7f\x85\x9b\x9d\u202e\u2066\u200f\u061c\u2028"]:
        one, lines = visible(text), visible_lines(text)
        for shown in (one, lines):
            assert not re.search(
                r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]", shown
            ), repr(shown)
        assert "\n" not in one and "\t" not in one
    assert visible("a\x1b]52;c;x\x07") == "a\\x1b]52;c;x\\x07"
    assert visible("\x9b2J\u202e") == "\\x9b2J\\u202e"
    assert visible_lines("one\n\ttwo\r\n") == "one\n\ttwo\\r\n"
    assert visible("plain text, ünïcödé ✓") == "plain text, ünïcödé ✓"


def test_parsers_strip_osc_strings_not_only_csi_colours():
    """The codex text parser and the format sniffer stored OSC 52 / 0 / 8 (they removed CSI only)."""
    assert strip_sequences("\x1b[32mok\x1b[0m") == "ok"
    assert strip_sequences("a\x1b]52;c;SGVsbG8=\x07b\x1b]0;T\x1b\\c\x1b]8;;http://x\x1b\\l\x1b]8;;\x1b\\d") == "abcld"
    assert strip_sequences("\x9b2Jx\x9d0;t\x9cy") == "xy"
    from edgetui.parsers.codex import CodexTextParser

    p = CodexTextParser("t.txt", "g")
    evs, off = [], 0
    for line in (
        b"[2026-01-01T00:00:00] OpenAI Codex v0.1\n",
        b"codex\n",
        b"\x1b]52;c;SGVsbG8=\x07\x1b]0;T\x07hello\x1b[1m!\x1b]8;;http://x\x1b\\\n",
    ):
        evs += p.feed(line, off)
        off += len(line)
    evs += p.finish()
    blob = repr(evs)
    assert "hello!" in blob
    assert "]52;" not in blob and "]0;" not in blob


def test_the_pagers_copy_shows_escapes_and_keeps_line_ends(tmp_path):
    f = tmp_path / "run_agent.log"
    f.write_bytes(b"ok line\r\n" + h.PAYLOAD.encode() + b"\n\xff\xfe not utf-8\nlast")
    make_file_visible(f)
    data = f.read_bytes()
    assert not strict_leaks(data.replace(b"\r\n", b"\n")), strict_leaks(data)
    assert data.startswith(b"ok line\r\n") and SHOWN in data and b"\\xff\\xfe not utf-8\n" in data
    assert data.endswith(b"\nlast") and oct(f.stat().st_mode & 0o777) == "0o600"


def _drawn(renderable, width: int = 120) -> bytes:
    """What Rich sends to a terminal for ``renderable`` (the widgets' texts reach Textual as these)."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, force_terminal=True, color_system=None, width=width).print(renderable)
    return buf.getvalue().encode()


def test_the_widgets_texts_hold_no_sequence():
    """The builders behind the detail pane, the header, the why view, the moments lists, the live rows,
    status lines and alarm lines, fed the payload in every field they show."""
    from edgetui.live.model import Alarm, LiveRun
    from edgetui.views.screens.live_parts import alarm_line, live_status_text
    from edgetui.views.screens.moments import moment_line, why_diff_text, why_head_text
    from edgetui.views.widgets.detail import render_detail
    from edgetui.views.widgets.header import header_text
    from edgetui.views.widgets.runs_cells import row_cells

    p = h.PAYLOAD + "\nline two\t[b]x[/b]"
    call = {
        "kind": "tool_call",
        "tool_name": p,
        "model": p,
        "summary": p,
        "source": p,
        "offset": 0,
        "t": 1.0,
        "t_source": p,
        "data": {"input": {"command": p, "content": p + "\n" + p, "other": p}},
        "raw": p.encode(),
    }
    result = {"kind": "tool_result", "data": {"content": p}, "is_error": True}
    graded = {
        "kind": "judge_result",
        "data": {"round": p, "error": p, "summary": p, "failing": [p]},
        "summary": p,
        "source": "s",
        "offset": 0,
    }
    sub = {"round": p, "kind": p, "status": p, "score_flag": p, "best_round": p, "t": 2.0, "submitted_at": 1.0}
    tests = [{"name": p, "status": p, "message": p}]
    head = {
        "run_id": p,
        "task_id": p,
        "task_name": p,
        "model": p,
        "agent": p,
        "host": p,
        "status": p,
        "transcript_flags": [p],
        "selection": p,
    }
    why = {
        "round": p,
        "prev_round": p,
        "before": 1.0,
        "after": 2.0,
        "actions": {"edit": {"n": 1, "examples": [p]}},
        "notes": {
            "analysis": p,
            "thinking": [{"text": p}],
            "messages": [{"text": p}],
            "files": [{"path": p, "text": p}],
        },
        "diff": {"against": p, "files": [{"status": "M", "path": p, "lines": ["+" + p, "-" + p]}], "unchanged": 0},
    }
    live = LiveRun(
        run_key=p,
        host=p,
        run_id=p,
        task_id=p,
        agent=p,
        model=p,
        message=p,
        best_round=p,
        alarms=[Alarm(run_key=p, rule=p, t=1.0, message=p)],
    )
    drawn = [
        render_detail({"event": call, "pair": [result], "annotations": [{"label": p, "text": p, "author": p}]}),
        render_detail({"event": graded, "submission": sub, "tests": tests}),
        header_text(head, 120),
        why_head_text(why, 80),
        why_diff_text(why, 80),
        moment_line({"round": p, "elapsed_s": 1.0, "components": {p: (1.0, 2.0)}}),
        *row_cells(live, 10.0, host_column=True).values(),
        live_status_text(live, 10.0, 120),
        alarm_line(live.alarms[0], 10.0),
    ]
    for r in drawn:
        out = _drawn(r)
        assert not strict_leaks(out), (strict_leaks(out)[:5], out[:600])
    assert SHOWN in b"".join(_drawn(r, 400) for r in drawn)
    for cell in row_cells(live, 10.0, host_column=True).values():  # one row stays one line
        assert "\n" not in cell.plain


# ---------------------------------------------------------------------------- the CLI


def _pty_run(argv: list[str], timeout: float = 60.0) -> tuple[int, bytes]:
    """``argv`` with stdout and stderr on a pty (a terminal): its exit status and every byte it wrote."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "TERM": "xterm-256color", "COLUMNS": "200"},
    )
    os.close(slave)
    out = b""
    end = time.monotonic() + timeout
    while True:
        if time.monotonic() > end:
            proc.kill()
            raise AssertionError(f"{argv} did not end in {timeout}s: {out[-500:]!r}")
        r, _, _ = select.select([master], [], [], 0.2)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed its side
                chunk = b""
            if not chunk and proc.poll() is not None:
                break
            out += chunk
        elif proc.poll() is not None:
            r, _, _ = select.select([master], [], [], 0.2)
            if not r:
                break
    os.close(master)
    return proc.wait(), out


@pytest.mark.parametrize(
    "args",
    [
        ["runs"],
        ["sql", "SELECT e.run_key, r.model, e.summary FROM events e JOIN runs r USING (run_key)", "--format", "csv"],
        ["sql", "SELECT e.run_key, r.model, e.summary FROM events e JOIN runs r USING (run_key)", "--format", "table"],
        ["sql", "SELECT run_key, summary FROM events", "--format", "json"],
        ["report", "[@click=app.quit]run[/]", "--format", "md"],
        ["report", "[@click=app.quit]run[/]", "--format", "json"],
        ["forecast", "[@click=app.quit]run[/]"],
        ["sql", "SELECT * FROM nowhere_" + h.PAYLOAD.replace("'", "")],
    ],
    ids=["runs", "sql-csv", "sql-table", "sql-json", "report-md", "report-json", "forecast", "error-line"],
)
def test_cli_on_a_terminal_sends_no_sequence(hostile, args):
    _root, db = hostile
    rc, out = _pty_run([str(EDGETUI), "--db", str(db), *args])
    assert "Traceback" not in out.decode("utf-8", "replace")
    assert not strict_leaks(out), (strict_leaks(out)[:5], out[:3000])
    if args[0] in ("runs", "sql", "report") and args[-1] != "json" and "nowhere_" not in " ".join(args):
        assert b"ZQX" in out and b"\\x1b" in out, out[:2000]  # the content is there, shown escaped


def test_ingest_error_lines_on_a_terminal_send_no_sequence(hostile, tmp_path):
    root, _db = hostile
    rc, out = _pty_run([str(EDGETUI), "--db", str(tmp_path / "again.duckdb"), "ingest", str(root)], timeout=120)
    assert rc == 0 and b"not JSON" in out and b"ZQXrawline" in out, out[-2000:]
    assert not strict_leaks(out), (strict_leaks(out)[:5], out[:3000])


def test_machine_formats_through_a_pipe_keep_the_bytes(hostile):
    _root, db = hostile
    r = subprocess.run(
        [str(EDGETUI), "--db", str(db), "sql", "SELECT model FROM runs", "--format", "csv"],
        capture_output=True,
        check=True,
    )
    assert h.planted("model").encode() in r.stdout  # every byte, as recorded
    r = subprocess.run(
        [str(EDGETUI), "--db", str(db), "report", "[@click=app.quit]run[/]", "--format", "json"],
        capture_output=True,
        check=True,
    )
    assert json.loads(r.stdout)["run"]["model"] == h.planted("model")  # every character, as recorded
    # a Markdown or HTML report is a page to share, not a machine format: its text shows the sequences
    # escaped (issue 37), whatever reads it
    r = subprocess.run(
        [str(EDGETUI), "--db", str(db), "report", "[@click=app.quit]run[/]", "--format", "md"],
        capture_output=True,
        check=True,
    )
    assert b"\x1b" not in r.stdout and b"\\x1b]52;c;SGVsbG8=" in r.stdout


# ---------------------------------------------------------------------------- the app in a real terminal


def own_copy(db: Path, tmp_path: Path) -> Path:
    """A copy of the database for one app (an app still closing from the test before holds its file)."""
    import shutil

    out = tmp_path / db.name
    shutil.copyfile(db, out)
    return out


class Capture:
    """The app in tmux, every byte it sends to its terminal appended to a file (``pipe-pane``)."""

    def __init__(self, cmd: str, out: Path, width: int = 160, height: int = 48):
        self.out = out
        self.t = Term(cmd, width=width, height=height)
        subprocess.run([*self.t.tmux, "pipe-pane", "-o", "-t", self.t.name, f"cat >> {out}"], check=True)

    def bytes(self) -> bytes:
        return self.out.read_bytes() if self.out.exists() else b""

    def search(self, query: str, tries: int = 4) -> None:
        """``/`` then ``query`` in the replay's search prompt, then Enter; again if what was typed did not
        land in the prompt (the prompt opens over the run's first page: the whole run's arrival may take
        the focus back to the events)."""
        for _ in range(tries):
            self.t.keys("/")
            self.t.keys("C-u")  # (the prompt holds the last query)
            end = time.monotonic() + 5
            while "search summaries and data" not in self.t.screen() and time.monotonic() < end:
                time.sleep(0.1)
            self.t.keys(query)
            end = time.monotonic() + 3
            while time.monotonic() < end:
                if re.search(rf"▊\s*{query}\s", self.t.screen()):
                    self.t.keys("Enter")
                    return
                time.sleep(0.1)
            self.t.keys("Escape")
            if "search summaries" not in self.t.screen():
                self.t.keys("Escape")  # (a maximized detail back)
        raise AssertionError(f"could not search {query!r}:\n{self.t.screen()}")

    def wait_bytes(self, needle: bytes, timeout: float = 40.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in self.bytes():
                return
            time.sleep(0.2)
        raise AssertionError(f"{needle!r} never sent; screen:\n{self.t.screen()}")


@pytest.mark.timeout(300)  # the real app in a real terminal
@pytest.mark.slow
def test_picker_and_replay_header_in_a_terminal_send_no_sequence(hostile, tmp_path):
    """The planted run and task folder names in the picker's rows and the replay's header."""
    need("tmux")
    db = own_copy(hostile[1], tmp_path)
    c = Capture(f"{EDGETUI} --db {db}", tmp_path / "picker.out")
    try:
        c.t.wait_for("runs 3")
        c.t.wait_for("ZQXrun")
        c.t.keys("ZQXrun", "Enter")  # filter to the run with the planted folder names, open it
        c.t.wait_for("events 1/")
        c.t.wait_for("ZQXtask")
        c.wait_bytes(b"ZQXrun\\x1b]52;")  # the header's run id, escaped
    finally:
        c.t.close()
    data = c.bytes()
    assert b"ZQXtask\\x1b]52;" in data and b"\\nsecond-line" in data
    assert not leaks(data), leaks(data)


@pytest.mark.timeout(300)  # the real app in a real terminal
@pytest.mark.slow
def test_replay_events_and_details_in_a_terminal_send_no_sequence(hostile, tmp_path):
    """The transcript's text, tool name, command and output, the model, a log line and a line that is
    not JSON: in the events list and each one's detail."""
    need("tmux")
    db = own_copy(hostile[1], tmp_path)
    c = Capture(f"{EDGETUI} --db {db} replay '{h.MARKUP_KEY}'", tmp_path / "replay.out")
    try:
        c.t.wait_for("events 1/")
        c.t.wait_for("ZQXtool")  # the events listed
        for q in ("ZQXrawline", "ZQXlog", "ZQXcmd", "ZQXoutput", "ZQXtext", "ZQXmodel"):  # each one's detail
            c.search(q)
            c.t.wait_for(f"/{q} ")
            c.wait_bytes(q.encode() + b"\\x1b]52;")
        c.t.keys("q")
    finally:
        c.t.close()
    data = c.bytes()
    assert SHOWN in data
    assert not leaks(data), leaks(data)


@pytest.mark.timeout(300)  # the real app in a real terminal
@pytest.mark.slow
def test_live_runs_screen_and_pager_copy_in_a_terminal(hostile, tmp_path):
    need("tmux")
    root, _db = hostile
    c = Capture(
        f"env LESS=-R PAGER=less {EDGETUI} --db {tmp_path / 'live.duckdb'} watch --no-docker --runs-dir {root}",
        tmp_path / "live.out",
    )
    try:
        s = c.t.wait_for("runs 3")
        s = c.t.wait_for("second-line")
        row = [line for line in s.splitlines() if line.startswith("│ ZQXrun")]
        assert len(row) == 1 and "second-line" in row[0] and "finished" in row[0], s  # one row, one line
        c.t.keys("/")
        c.t.keys("ZQXrun", "Enter")
        c.t.keys("o")  # open a run file in the pager: run_agent.log first
        c.t.wait_for("run_agent.log")
        c.t.keys("Enter")
        s = c.t.wait_for("ZQXlog")
        assert "ZQXlog\\x1b]52;c;SGVsbG8=" in s, s  # less shows the escapes
        c.t.keys("q")
        c.t.wait_for("runs 1 of 3")  # the pager ended, the runs screen back
    finally:
        c.t.close()
    data = c.bytes()
    assert SHOWN in data
    assert not leaks(data), leaks(data)


# ---------------------------------------------------------------------------- markup


async def _until(pilot, pred, timeout: float = 20.0, what: str = "condition") -> None:
    """The one wait (waits.pilot_wait_for) with this module's defaults: an exception (widgets not mounted
    yet) counts as not yet."""
    await pilot_wait_for(pilot, pred, timeout, what, 0.2, ignore=(Exception,))


@pytest.mark.asyncio
async def test_run_names_are_never_read_as_markup(hostile, tmp_path, monkeypatch):
    """A run folder named ``[@click=app.quit]run[/]``: its toast, modal title and rows show the brackets
    as typed, and clicking them does not quit."""
    from textual.widgets._toast import Toast

    from edgetui.views.app import EdgeTUIApp, LiveConfig
    from edgetui.views.screens.confirm import ChoiceScreen
    from edgetui.views.screens.runs import RunsScreen

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    root, _db = hostile
    app = EdgeTUIApp(
        tmp_path / "m.duckdb", live=LiveConfig([root], home=True, interval=0.5, docker=False), on_empty=lambda p: None
    )
    async with app.run_test(size=(160, 48), notifications=True) as pilot:  # (toasts are off by default in tests)
        await _until(
            pilot,
            lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 3,
            what="runs screen with 3 runs",
        )
        screen = app.screen
        for key in (h.MARKUP_KEY, "[b]x[/b]"):
            for _ in range(4):  # the cursor onto that run
                if (screen.selected_run_key or "").endswith(key):
                    break
                await pilot.press("down")
                await pilot.pause(0.1)
            else:
                await pilot.press("home")
            await _until(pilot, lambda key=key: (screen.selected_run_key or "").endswith(key), what=f"{key} selected")
            await pilot.press("x")  # no container to stop: a toast names the run
            await _until(
                pilot,
                lambda key=key: any(key in t.render().plain for t in app.screen.query(Toast)),
                what=f"toast naming {key} as typed",
            )
            toast = next(t for t in app.screen.query(Toast) if key in t.render().plain)
            content = toast.render()
            assert not any("click" in str(s.style) or "link" in str(s.style) for s in content.spans), content.spans
            for x in range(0, 40, 2):  # click along the toast's text: nothing quits the app
                await pilot.click(toast, offset=(x, 0))
                await pilot.click(toast, offset=(x, 1))
            await pilot.pause(0.3)
            assert app.is_running and app.return_code is None
            await pilot.press("escape")
        await pilot.press("o")  # the file chooser's title names the run
        await _until(pilot, lambda: isinstance(app.screen, ChoiceScreen), what="file chooser")
        title = app.screen.query_one("Vertical")._border_title
        assert "[b]x[/b]" in title.plain, title
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert app.is_running
