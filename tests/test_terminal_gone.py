"""`edgetui watch` whose terminal goes away without a SIGHUP ends and lets go of its database
(issue 31, item 13).

A real pty: the app runs on its slave side in a session of its own (so the pty is not its
controlling terminal and closing the master sends no SIGHUP), the test holds the master, lets the
app draw and its supervisor record a run, then closes the master. Before the fix the app stayed
for good at ~70 % of a core (Textual's input thread reading end of file in a loop).
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import duckdb

from edgetui.views.terminal_gone import TERMINAL_GONE_STATUS
from test_live_core import init_line, make_run, text_line

EXE = str(Path(sys.executable).parent / "edgetui")


def _read_until(fd: int, deadline_s: float, cond) -> bytes:
    got = b""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and not cond(got):
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                got += os.read(fd, 65536)
            except OSError:
                break
    return got


def test_watch_ends_when_its_terminal_goes_away_without_sighup(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    make_run(runs, transcript=[init_line(), text_line(1), text_line(2)])
    db = tmp_path / "w.duckdb"
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    env = {
        **os.environ,
        "TERM": "xterm-256color",
        "XDG_CACHE_HOME": str(tmp_path / "xc"),
        "XDG_CONFIG_HOME": str(tmp_path / "xcfg"),
        "EDGETUI_HOSTS_FILE": str(tmp_path / "none.toml"),
    }
    p = subprocess.Popen(
        [EXE, "--db", str(db), "watch", "--runs-dir", str(runs), "--no-docker"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    try:
        # the app drew its runs screen with the run (the supervisor holds the database)
        got = _read_until(master, 60, lambda b: b"taskA" in b)
        assert b"taskA" in got, got[-2000:]
        assert p.poll() is None, p.returncode
        os.close(master)  # the terminal goes away; no SIGHUP (another session, not its controlling tty)
        master = -1
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            raise AssertionError("edgetui watch still running 60 s after its terminal went away") from None
        assert p.returncode == TERMINAL_GONE_STATUS, p.returncode
    finally:
        if master >= 0:
            os.close(master)
        if p.poll() is None:
            p.kill()
            p.wait()
    c = duckdb.connect(str(db))  # free again: opened read-write
    try:
        n = c.execute("SELECT count(*) FROM events WHERE kind = 'agent_message'").fetchone()[0]
    finally:
        c.close()
    assert n == 2
