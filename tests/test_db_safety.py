"""The database file is never written into when it fails the cheap checks; interrupts and full
disks stop an ingest with a clear line and a non-zero status; no orphan outlives the ingest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from processes import sigint_as_a_terminal_sends_it
from waits import wait_for

from edgetui.cli.main import main
from edgetui.store.database import DatabaseDamaged, check_database, open_db

CLI = [sys.executable, "-m", "edgetui.cli.main"]
SAMPLE_RUN = Path(__file__).resolve().parents[1] / "sample_runs" / "runs" / "judge-demo-001"


def _good_db(tmp_path) -> Path:
    db = tmp_path / "good.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(SAMPLE_RUN)]) == 0
    return db


def test_a_truncated_database_is_refused_untouched(tmp_path, capsys):
    db = _good_db(tmp_path)
    capsys.readouterr()
    data = db.read_bytes()
    cut = tmp_path / "cut.duckdb"
    cut.write_bytes(data[: len(data) // 2])
    before = cut.read_bytes()
    with pytest.raises(DatabaseDamaged, match="cut short"):
        open_db(cut)
    for argv in (["ingest", "-q", str(SAMPLE_RUN)], ["runs"], ["sql", "SELECT count(*) FROM events"]):
        assert main(["--db", str(cut), *argv]) == 2, argv
        err = capsys.readouterr().err
        assert "damaged" in err and err.count("\n") == 1, err
    assert cut.read_bytes() == before and not Path(str(cut) + ".wal").exists()
    assert main(["--db", str(cut), "check"]) == 1
    assert "cut short" in capsys.readouterr().err
    assert check_database(db) == []
    assert main(["--db", str(db), "check"]) == 0


def test_another_applications_duckdb_file_is_refused(tmp_path, capsys):
    other = tmp_path / "other.duckdb"
    c = duckdb.connect(str(other))
    c.execute("CREATE TABLE customers (id INTEGER, name VARCHAR)")
    c.execute("INSERT INTO customers VALUES (1, 'a')")
    c.close()
    before = other.read_bytes()
    assert main(["--db", str(other), "ingest", "-q", str(SAMPLE_RUN)]) == 2
    err = capsys.readouterr().err
    assert "another application" in err and "customers" in err and err.count("\n") == 1
    assert other.read_bytes() == before and not Path(str(other) + ".wal").exists()
    c = duckdb.connect(str(other), read_only=True)
    assert [r[0] for r in c.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["customers"]
    c.close()


def test_another_applications_file_with_a_wal_is_refused_untouched(tmp_path):
    """A foreign file with a WAL beside it: the catalog is checked on a read-only open (a writable one
    would replay the WAL into the file), so it is refused and neither file changes."""
    other = tmp_path / "other.duckdb"
    c = duckdb.connect(str(other))
    c.execute("CREATE TABLE customers (id INTEGER)")
    c.execute("CHECKPOINT")
    c.execute("SET wal_autocheckpoint = '1GB'")
    c.execute("INSERT INTO customers VALUES (1)")
    wal = Path(str(other) + ".wal")
    shutil.copy2(wal, tmp_path / "kept.wal")  # (the WAL as a crash left it: copied while it was open)
    c.close()
    shutil.copy2(tmp_path / "kept.wal", wal)
    before, wal_before = other.read_bytes(), wal.read_bytes()
    with pytest.raises(ValueError):  # (DatabaseDamaged is one: this WAL's checkpoint iteration is stale)
        open_db(other)
    assert other.read_bytes() == before and wal.read_bytes() == wal_before


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (not gone, not a zombie)."""
    out = []
    for k in pids:
        try:
            if Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                out.append(k)
        except OSError:
            pass
    return out


def _big_transcript(path: Path, mb: int = 60) -> None:
    line = (
        b'{"type":"assistant","message":{"id":"m%d","role":"assistant","content":[{"type":"text","text":"'
        + b"y" * 2000
        + b'"}]}}\n'
    )
    with open(path, "wb") as f:
        n = 0
        while f.tell() < mb << 20:
            f.write(line.replace(b"%d", str(n).encode()))
            n += 1


def test_kill_9_of_the_ingest_leaves_no_parsing_process(tmp_path):
    tr = tmp_path / "big.jsonl"
    _big_transcript(tr)
    p = subprocess.Popen(
        [*CLI, "--db", str(tmp_path / "k.duckdb"), "ingest", "-q", str(tr)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    kids = wait_for(lambda: _children(p.pid), 30, "the parsing process started", 0.1)
    p.send_signal(signal.SIGKILL)
    p.wait()
    wait_for(lambda: not _alive(kids), 10, "no orphan outliving the ingest", 0.1, describe=lambda: _alive(kids))


def test_ctrl_c_during_the_ingest_exits_130(tmp_path):
    tr = tmp_path / "big.jsonl"
    _big_transcript(tr, 40)
    for delay in (0.0, 0.3, 0.8):
        db = tmp_path / f"c{delay}.duckdb"
        p = subprocess.Popen(
            [*CLI, "--db", str(db), "ingest", "-q", str(tr), str(tr)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=sigint_as_a_terminal_sends_it,
        )
        deadline = time.monotonic() + 30
        while not db.exists() and time.monotonic() < deadline:  # the ingest is under way (not Python's start)
            time.sleep(0.02)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        if p.returncode == 0 and "recorded" in out:
            continue  # finished before the signal (a fast machine): nothing to test at this delay
        assert p.returncode == 130, (delay, p.returncode, err)
        assert "could not record" not in err and "Traceback" not in err


def test_a_full_disk_is_said_and_exits_non_zero(tmp_path):
    if os.geteuid() != 0 or subprocess.run(["which", "mount"], capture_output=True).returncode != 0:
        pytest.skip("needs root to mount a small tmpfs as a full disk")
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        tr = tmp_path / "big.jsonl"
        _big_transcript(tr, 40)
        p = subprocess.run(
            [*CLI, "--db", str(mnt / "full.duckdb"), "ingest", "-q", str(tr)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode != 0, p.stdout
        assert "no space left" in p.stderr and "cannot rollback" not in p.stderr, p.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_damaged_block_is_said_with_the_file_by_read_commands(tmp_path, capsys):
    """A database with a corrupted first block: ``runs`` printed DuckDB's "Corrupt database file:
    computed checksum … in block at location 12288" without saying which file; now the message
    names it and says it is left untouched (as ``check`` and the app do)."""
    from edgetui.cli.main import main

    f = tmp_path / "t.jsonl"
    f.write_text('{"type":"system","subtype":"init","session_id":"s"}\n')
    db = tmp_path / "dmg.duckdb"
    assert main(["--db", str(db), "ingest", "-q", str(f)]) == 0
    capsys.readouterr()
    with open(db, "r+b") as fh:
        fh.seek(12288 + 64)
        fh.write(b"\xff" * 256)
    before = db.read_bytes()
    assert main(["--db", str(db), "runs"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"edgetui: error: {db}: damaged, cannot be opened (") and "left untouched" in err, err
    assert "\n" not in err and db.read_bytes() == before


def test_a_second_writable_open_in_one_process_says_so_not_damaged(tmp_path):
    """DuckDB refuses a second writable attach of a file open in this process: that is reported as
    the file being in use here (DatabaseBusy naming this process), never as a damaged file, and the
    file stays usable through the first connection."""
    import os

    from edgetui.store.database import DatabaseBusy, DatabaseDamaged, open_db

    path = tmp_path / "twice.duckdb"
    first = open_db(path)
    try:
        with pytest.raises(DatabaseBusy) as info:
            open_db(path)
        assert not isinstance(info.value, DatabaseDamaged)
        msg = str(info.value)
        assert f"process {os.getpid()}" in msg and "same process" in msg and "damaged" not in msg
        assert first.execute("SELECT count(*) FROM runs").fetchone()[0] == 0  # the first still works
    finally:
        first.close()
    open_db(path).close()  # and once it is closed, the file opens again
