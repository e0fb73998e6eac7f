"""``--format json`` / ``csv`` give numbers as numbers and BLOBs as base64, the same directly and
through the process holding the database; the app's start-up errors exit 2 with one line
(issue 12, item 13)."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main

from conftest import copy_samples_db

CLI = [sys.executable, "-m", "edgetui.cli.main"]
GARBAGE = b'{"type": "assistant", "message": {"content": [  \x1b]52;c;cGF3bmVk\x07 cut here'


def _session_with_a_bad_line(path: Path) -> None:
    sid = "0d1e2f3a-0000-4000-8000-000000000013"
    good = [
        {
            "type": "user",
            "sessionId": sid,
            "uuid": "u1",
            "timestamp": "2026-05-20T10:00:00Z",
            "cwd": "/w",
            "version": "2.1.140",
            "message": {"role": "user", "content": "hello"},
        },
        {
            "type": "assistant",
            "sessionId": sid,
            "uuid": "u2",
            "timestamp": "2026-05-20T10:00:05Z",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        },
    ]
    path.write_bytes(json.dumps(good[0]).encode() + b"\n" + GARBAGE + b"\n" + json.dumps(good[1]).encode() + b"\n")


@pytest.fixture(scope="module")
def db(tmp_path_factory, samples_template) -> Path:
    d = tmp_path_factory.mktemp("out")
    t = d / "bad-line.jsonl"
    _session_with_a_bad_line(t)
    path = d / "o.duckdb"
    copy_samples_db(samples_template, path)
    assert main(["--db", str(path), "ingest", "-q", str(t)]) == 0
    return path


QUERY = (
    "SELECT raw, 1.5::DECIMAL(10, 2) AS dec, (SELECT sum(n_events) FROM runs) AS total, [1, 2] AS l, "
    "'nan'::DOUBLE AS nan FROM events WHERE kind = 'parse_error' AND raw IS NOT NULL "
    "AND source LIKE 'bad-line%'"
)


def cli(db: Path, *args: str) -> subprocess.CompletedProcess:
    r = subprocess.run(
        [*CLI, "--db", str(db), *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert r.returncode == 0, r.stderr
    return r


def test_json_and_csv_give_blobs_as_base64_and_numbers_as_numbers(db):
    (row,) = json.loads(cli(db, "sql", "--format", "json", QUERY).stdout)
    assert base64.b64decode(row["raw"]) == GARBAGE  # the kept bytes, whole (it was "<55 bytes>")
    assert row["dec"] == 1.5 and isinstance(row["total"], int) and row["total"] > 0  # (DECIMALs were strings)
    assert row["l"] == [1, 2] and row["nan"] is None
    (crow,) = list(csv.DictReader(io.StringIO(cli(db, "sql", "--format", "csv", QUERY).stdout)))
    assert base64.b64decode(crow["raw"]) == GARBAGE and crow["dec"] == "1.5" and crow["l"] == "[1, 2]"


def test_runs_best_is_a_number_in_csv_and_json_and_text_in_the_table(db):
    rows = json.loads(cli(db, "runs", "--format", "json").stdout)
    by_run = {r["run_id"]: r for r in rows}
    gitlet = by_run["7c1e94d2a0b3"]  # a pass-rate task: 95.3% in the table
    assert gitlet["best_of"] == "pass_rate" and gitlet["best"] == pytest.approx(0.953125)
    gw = by_run["opus48-edge-3-20260312005800"]
    assert gw["best_of"] == "score" and gw["best"] == pytest.approx(67.0)
    assert all(isinstance(r["best"], (int, float)) or r["best"] is None for r in rows)
    crows = list(csv.DictReader(io.StringIO(cli(db, "runs", "--format", "csv").stdout)))
    assert {r["run_id"]: r["best"] for r in crows}["7c1e94d2a0b3"] == "0.953125"
    table = cli(db, "runs").stdout
    assert "95.3%" in table


def _hold(db: Path) -> subprocess.Popen:
    code = (
        "import time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});h=holder_server(c,{str(db)!r});print('ready',flush=True);time.sleep(120)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().split() == ["ready"]
    return p


def test_the_same_output_through_the_process_holding_the_database(db):
    args = [
        ("sql", "--format", "json", QUERY),
        ("sql", "--format", "csv", QUERY),
        ("sql", QUERY),
        ("runs", "--format", "json"),
    ]
    direct = [cli(db, *a).stdout for a in args]
    p = _hold(db)
    try:
        with pytest.raises(duckdb.IOException):  # held: the answers below come from the holder
            duckdb.connect(str(db), read_only=True)
        held = [cli(db, *a).stdout for a in args]
    finally:
        p.kill()
        p.wait()
    assert held == direct


# ---------------------------------------------------------------------------- start-up errors


def _app_in_pty(argv: list[str], timeout: float = 60) -> tuple[int, str]:
    """Run the app with a real terminal (80x24): its exit status and what it printed."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "EDGETUI_DEBUG")}
    env["TERM"] = "xterm-256color"
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
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
    if p.poll() is None:
        p.kill()
    rc = p.wait(timeout=10)
    os.close(master)
    return rc, out.decode("utf-8", "replace").replace("\r\n", "\n")


def _error_lines(out: str) -> list[str]:
    return [ln for ln in out.split("\n") if "edgetui: error:" in ln or "Traceback" in ln or ln.startswith("  File")]


def test_app_start_up_errors_exit_2_with_one_line(tmp_path):
    damaged = tmp_path / "damaged.duckdb"
    damaged.write_bytes(os.urandom(20000))
    foreign = tmp_path / "foreign.duckdb"
    c = duckdb.connect(str(foreign))
    c.execute("CREATE TABLE t (x INTEGER)")
    c.close()
    missing = tmp_path / "no" / "such" / "dir" / "x.duckdb"
    cases = [(missing, "no directory"), (damaged, "not a DuckDB database file"), (foreign, "another application")]
    for path, says in cases:
        rc, out = _app_in_pty([*CLI, "--db", str(path)])
        lines = _error_lines(out)
        assert rc == 2, (path, rc, out[-400:])
        assert len(lines) == 1 and says in lines[0] and str(path) in lines[0], (path, lines)
    assert not missing.parent.exists()  # no directory tree made for a mistyped --db
    r = subprocess.run(
        [*CLI, "--db", str(foreign)], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "terminal" in r.stderr


def test_a_narrow_table_cuts_run_ids_in_the_middle_and_shows_times_in_utc(db):
    """At 80 columns `runs` cut the run ids to "judge-d…" / "opus48-…" (the end tells runs apart:
    their timestamps) while keeping numbers columns; and started_at printed raw epoch seconds."""
    import datetime as dt

    env = dict(os.environ, COLUMNS="80")
    r = subprocess.run(
        [*CLI, "--db", str(db), "runs"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env
    )
    assert r.returncode == 0, r.stderr
    ids = [x[0] for x in duckdb.connect(str(db), read_only=True).execute("SELECT run_id FROM runs").fetchall()]
    lines = r.stdout.splitlines()
    shown = [ln.split()[0] for ln in lines[1:] if ln and not ln.startswith("(")]
    cut = [s for s in shown if "…" in s]
    assert cut and all(len(s) >= 14 for s in cut)
    for s in cut:  # each cut id is its own run's head and tail
        head, tail = s.split("…")
        assert sum(1 for i in ids if i.startswith(head) and i.endswith(tail)) == 1, s
    r = cli(db, "sql", "SELECT 1796160744.974::DOUBLE AS started_at, 1796160744.974::DOUBLE AS n")
    assert "2026-12-01 " in r.stdout and "1796160744.974" in r.stdout  # the time column as UTC, n as is
    want = dt.datetime.fromtimestamp(1796160744.974, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    assert want in r.stdout
    r = cli(db, "sql", "--format", "csv", "SELECT 1796160744.974::DOUBLE AS started_at")
    assert "1796160744.974" in r.stdout  # csv keeps the number
