"""The one error path (edgetui/error_log.py; docs/reliability-and-security.md, "Errors and exit
status"): a bug planted in a command is one stderr line naming the log file, exit status 70, and
the traceback in that file; a user's error stays one line with its own status."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from textual.binding import Binding

import edgetui.parsers.detect
import edgetui.views.app
from edgetui import error_log
from edgetui.error_log import EXIT_INPUT, EXIT_INTERNAL, log_to_file
from edgetui.errors import UserError
from edgetui.parsers.detect import detect_format
from edgetui.views.app import EdgeTUIApp
from waits import pilot_wait_for as wait_for

#: the real CLI (``run()``, the console script's entry) with ``cmd_runs`` replaced by a bug
PLANTED = textwrap.dedent(
    """
    import edgetui.cli.main as m

    def cmd_runs(db, args):
        secret = "sk-ant-api03-" + "Q" * 40
        return len(secret) // 0

    m.cmd_runs = cmd_runs
    m.run()
    """
)


@pytest.fixture(autouse=True)
def own_log_handlers():
    """The ``edgetui`` logger as it was after each test (a test's log file is its own)."""
    log = error_log.log
    before = (list(log.handlers), log.level, log.propagate)
    yield
    for h in log.handlers:
        if h not in before[0]:
            h.close()
    log.handlers[:] = before[0]
    log.setLevel(before[1])
    log.propagate = before[2]


def _run(code: str, args: list[str], state, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "EDGETUI_DEBUG"}
    env["EDGETUI_STATE_DIR"] = str(state)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )


def test_planted_bug_in_a_command_is_one_line_naming_the_log_file(tmp_path):
    state = tmp_path / "state"
    p = _run(PLANTED, ["--db", str(tmp_path / "x.duckdb"), "runs"], state, tmp_path)
    log = state / "errors.log"
    lines = p.stderr.splitlines()
    assert lines == [
        f"edgetui: internal error (ZeroDivisionError): integer division or modulo by zero; details in {log}"
    ]
    assert p.returncode == EXIT_INTERNAL == 70
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "ZeroDivisionError" in text
    assert "line 6, in cmd_runs" in text  # the planted function, in the traceback
    assert oct(state.stat().st_mode & 0o777) == oct(0o700)
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)  # the user's alone, whatever the umask


def test_a_user_error_stays_one_line_with_its_status_and_no_log(tmp_path):
    state = tmp_path / "state"
    p = _run(
        "import edgetui.cli.main as m; m.run()",
        ["--db", str(tmp_path / "nodir" / "x.duckdb"), "runs"],
        state,
        tmp_path,
    )
    assert p.stderr.splitlines() == [
        f"edgetui: error: cannot open {tmp_path / 'nodir' / 'x.duckdb'}: no directory {tmp_path / 'nodir'} "
        "(create it, or choose another --db)"
    ]
    assert p.returncode == EXIT_INPUT == 2
    assert not (state / "errors.log").exists()


def test_a_key_error_is_a_bug_not_an_unknown_run_and_its_secret_is_redacted(tmp_path):
    """LookupError stands for an unknown run; its subclass KeyError is a bug (a dict's missing key).
    A secret in the message reaches neither the line nor the log file."""
    state = tmp_path / "state"
    code = PLANTED.replace("return len(secret) // 0", "return {}[secret]")
    p = _run(code, ["--db", str(tmp_path / "x.duckdb"), "runs"], state, tmp_path)
    assert p.stderr.splitlines() == [
        f"edgetui: internal error (KeyError): '<redacted>'; details in {state / 'errors.log'}"
    ]
    assert p.returncode == EXIT_INTERNAL
    text = (state / "errors.log").read_text()
    assert "KeyError" in text and "sk-ant-api03-QQQQ" not in text and "<redacted>" in text


class PlantedBugApp(EdgeTUIApp):
    """The real app with one planted bug: a key whose action divides by zero."""

    BINDINGS = [Binding("f9", "boom", "boom")]
    CSS_PATH = str(Path(edgetui.views.app.__file__).with_name(EdgeTUIApp.CSS_PATH))

    def action_boom(self) -> None:
        print(1 // 0)


@pytest.mark.asyncio
async def test_planted_bug_in_the_app_is_one_line_and_the_log_file(tmp_path, monkeypatch):
    state = tmp_path / "state"
    monkeypatch.setenv("EDGETUI_STATE_DIR", str(state))
    monkeypatch.delenv("EDGETUI_DEBUG", raising=False)
    app = PlantedBugApp(tmp_path / "x.duckdb", on_empty=lambda path: None)
    with pytest.raises(ZeroDivisionError):  # Textual's pilot re-raises the app's exception at its end
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("f9")
            await wait_for(pilot, lambda: app.internal_error, what="the app's one line")
    log = state / "errors.log"
    assert app.internal_error == (
        f"edgetui: internal error (ZeroDivisionError): integer division or modulo by zero; details in {log}"
    )
    assert app.return_code == EXIT_INTERNAL
    text = log.read_text()
    assert "internal error in the app" in text and "in action_boom" in text and "print(1 // 0)" in text


def test_a_swallowed_bug_leaves_a_warning_in_the_log_file(tmp_path, monkeypatch):
    """A handler that recovers (format detection must not raise) logs what it swallowed: a bug
    (a renamed function: AttributeError) as a warning with its traceback, in the same file."""
    state = tmp_path / "state"
    monkeypatch.setenv("EDGETUI_STATE_DIR", str(state))
    log_to_file(logging.WARNING)

    def renamed(head):
        return edgetui.parsers.detect.no_such_function(head)  # the planted bug

    monkeypatch.setattr(edgetui.parsers.detect, "detect_claude_format", renamed)
    line = b'{"type": "system", "subtype": "init", "session_id": "s1"}\n'
    assert detect_format(line) == "claude_stream"  # the detection's answer stands
    for h in error_log.log.handlers:
        h.flush()
    text = (state / "errors.log").read_text()
    assert "WARNING edgetui: recovered from AttributeError: detection must not raise" in text
    assert "no_such_function" in text and "Traceback" in text


def test_a_user_errors_status_is_the_tables():
    assert UserError.exit_code == EXIT_INPUT


def test_an_unreadable_run_config_is_logged_a_missing_one_is_not(tmp_path, monkeypatch):
    """run_secrets gives nothing for a run_config.json it cannot read, so its secret values are
    unknown to the redaction: that is logged (debug level). A run without one logs nothing."""
    from edgetui.parsers.run_secrets import run_secrets

    state = tmp_path / "state"
    monkeypatch.setenv("EDGETUI_STATE_DIR", str(state))
    log_to_file(logging.DEBUG)
    task = tmp_path / "logs" / "run" / "task"
    task.mkdir(parents=True)
    assert run_secrets(task) == set()  # none there: nothing to say
    (task / "run_config.json").mkdir()  # there, but not a file that can be read
    assert run_secrets(task) == set()
    for h in error_log.log.handlers:
        h.flush()
    text = (state / "errors.log").read_text()
    assert text.count("recovered from") == 1
    assert "a run_config.json not read: its secrets are unknown to the redaction" in text


def test_a_ctrl_c_that_passed_through_exec_still_exits_130_under_python_m(tmp_path):
    """CPython 3.11 keeps a KeyboardInterrupt raised inside ``exec`` of a string (dataclasses does
    that while a module imports) as "unhandled" even once caught, and ``python -m`` then ends by
    SIGINT (-2) whatever status was asked: the ingest's ctrl+c test met it 1 time in ~20. Here the
    command's own work is the real ``run()`` around a ``main`` that takes such a ctrl+c, as the
    ingest's does when the signal lands in an import."""
    probe = tmp_path / "ki_probe.py"
    probe.write_text(
        "import sys\n"
        "import edgetui.cli.main as m\n"
        "def taken_ctrl_c(argv=None):\n"
        "    try:\n"
        "        exec('raise KeyboardInterrupt')\n"
        "    except KeyboardInterrupt:\n"
        "        print(m._interrupted_line[0], file=sys.stderr)\n"
        "        return m.EXIT_INTERRUPTED\n"
        "m.main = taken_ctrl_c\n"
        "if __name__ == '__main__':\n"
        "    m.run()\n"
    )
    p = subprocess.run([sys.executable, "-m", "ki_probe"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 130, (p.returncode, p.stderr)
    assert p.stderr.splitlines() == ["edgetui: interrupted"], p.stderr
