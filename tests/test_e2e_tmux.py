"""End to end: the real app in a real terminal (tmux send-keys / capture-pane)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import waits
from prereqs import need

from conftest import copy_samples_db

EDGETUI = Path(sys.executable).parent / "edgetui"
ROOT = Path(__file__).resolve().parents[1]


def _need_tmux() -> None:
    need("tmux")  # installed when the session starts where allowed (prereqs.py); else skip / fail under CI


class Term:
    def __init__(self, cmd: str, width: int = 160, height: int = 48):
        self.name = f"edgetui-e2e-{uuid.uuid4().hex[:8]}"
        # a tmux server of its own (-L): a shared default server that exits as the previous test's
        # session ends refused the next new-session once ("server exited unexpectedly")
        self.tmux = ["tmux", "-L", self.name]
        # the app takes its size from the pane, not from COLUMNS / LINES, which it would read first
        # (shutil.get_terminal_size): an xdist worker has COLUMNS=80 LINES=24 in its environment, and a
        # 160x48 pane showed an 80x24 app
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", str(width), "-y", str(height), cmd],
            check=True,
            env={**env, "TERM": "xterm-256color"},
        )
        self.socket = subprocess.run(
            [*self.tmux, "display-message", "-p", "#{socket_path}"], capture_output=True, text=True
        ).stdout.strip()

    def screen(self) -> str:
        r = subprocess.run([*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True)
        return r.stdout

    def alive(self) -> bool:
        return subprocess.run([*self.tmux, "has-session", "-t", self.name], capture_output=True).returncode == 0

    def keys(self, *keys: str) -> None:
        for k in keys:
            subprocess.run([*self.tmux, "send-keys", "-t", self.name, k], check=True)
            time.sleep(0.15)

    def wait_for(self, text: str, timeout: float = 40.0) -> str:
        """The screen once it shows ``text`` (the one wait, waits.wait_for; the last screen when it fails)."""
        seen = {"screen": ""}

        def shown():
            seen["screen"] = s = self.screen()
            return s if text in s else None

        return waits.wait_for(shown, timeout, f"{text!r} on screen", 0.2, describe=lambda: "screen:\n" + seen["screen"])

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)
        if self.socket:
            try:
                os.unlink(self.socket)
            except OSError:
                pass


@pytest.fixture
def sample_db(tmp_path, samples_template) -> Path:
    return copy_samples_db(samples_template, tmp_path / "e2e.duckdb")


def test_replay_sample_run_in_tmux(sample_db):
    _need_tmux()
    t = Term(f"{EDGETUI} --db {sample_db} replay opus48-edge-3-20260312005800/gw_signal_search")
    try:
        s = t.wait_for("events 1/")
        assert "gw_signal_search" in s and "best 67" in s and "Traceback" not in s
        t.keys("]")  # next submission: the detail pane shows its report
        t.wait_for("graded")
        t.wait_for("Submission report")
        t.keys("G")  # last event
        s = t.wait_for("events 3,")
        line = [l for l in s.splitlines() if "events 3," in l][0]
        cur, total = line.split("events ")[1].split(" ")[0].split("/")
        assert cur == total
        t.keys("/")
        t.wait_for("search summaries and data")  # the prompt has the focus: typed keys go to it, not to the replay
        t.keys("Stepping back", "Enter")
        s = t.wait_for("Stepping back before touching another threshold")
        t.keys("q")
        waits.wait_for(lambda: not t.alive(), 10, "q to quit the directly opened replay", 0.2)
    finally:
        t.close()


def test_picker_and_corpus_transcript_in_tmux(sample_db, corpus):
    _need_tmux()
    f = corpus / "A" / "archistrator-subagent-scrubbed.jsonl"
    t = Term(f"{EDGETUI} --db {sample_db} replay {f}", width=80, height=24)
    try:
        s = t.wait_for("events 1/")
        assert "archistrator-subagent-scrubbed" in s and "Traceback" not in s
        t.keys("G")
        s = t.wait_for("events 18/18")
        t.keys("q")
    finally:
        t.close()
    # the picker lists the samples and the transcript; typing filters, Enter opens
    t = Term(f"{EDGETUI} --db {sample_db}")
    try:
        n_runs = (
            len(list((ROOT / "sample_runs" / "_truth").glob("*.json")))
            + len(list((ROOT / "sample_runs" / "genuine" / "_truth").glob("*.json")))
            + 1
        )  # + the transcript
        t.wait_for(f"runs {n_runs}")
        s = t.wait_for("archistrator-subagent-scrubbed")
        assert "gw_signal_search" in s
        t.keys("gitlet")
        s = t.wait_for("runs 2")
        t.keys("Enter")
        s = t.wait_for("events 1/")
        assert "gitlet_vcs" in s
    finally:
        t.close()


def test_picker_filter_and_enter_in_one_read_open_the_filtered_run(sample_db):
    """The filter's characters and Enter sent in one send-keys (one terminal read, as a fast typist
    or a paste gives them) open the run the filter leaves: Enter was a priority binding, handled
    before the filter had the characters, and opened the first run of the unfiltered list."""
    _need_tmux()
    t = Term(f"{EDGETUI} --db {sample_db}")
    try:
        t.wait_for("gw_signal_search")
        subprocess.run([*t.tmux, "send-keys", "-t", t.name, "opus48", "Enter"], check=True)
        s = t.wait_for("events 1/")
        assert s.splitlines()[0].lstrip(" ▍").startswith("opus48-edge-3-20260312005800"), s.splitlines()[0]
        t.keys("q")  # back to the picker, its filter kept
        s = t.wait_for("runs 1 of")
        assert "opus48" in s
    finally:
        t.close()


#: the real program with a bug planted behind Enter in the picker (opening a run divides by zero)
PLANTED_APP = """
import edgetui.views.app as a

def open_run(self, run_key):
    return len(run_key) // 0

a.EdgeTUIApp.open_run = open_run
import edgetui.cli.main as m
m.run()
"""


def test_a_bug_in_the_app_is_one_line_naming_the_log_file_after_the_terminal_is_back(sample_db, tmp_path):
    """docs/reliability-and-security.md, "Errors and exit status": the app's one handler writes the
    traceback to the log file and the line is said once the terminal is restored; status 70."""
    _need_tmux()
    script, state = tmp_path / "planted.py", tmp_path / "state"
    script.write_text(PLANTED_APP)
    # (the app draws on stderr: the line is read from the screen after the app has left it; wide
    # enough for the line not to wrap)
    t = Term(
        f"sh -c 'EDGETUI_STATE_DIR={state} {sys.executable} {script} --db {sample_db}; echo status=$?; sleep 60'",
        width=250,
        height=24,
    )
    try:
        t.wait_for("gw_signal_search")
        t.keys("Enter")
        s = t.wait_for("status=")
    finally:
        t.close()
    log = state / "errors.log"
    lines = [line.rstrip() for line in s.splitlines() if line.strip()]
    assert lines == [
        f"edgetui: internal error (ZeroDivisionError): integer division or modulo by zero; details in {log}",
        "status=70",
    ]
    text = log.read_text()
    assert "internal error in the app" in text and "in open_run" in text and "Traceback" in text
