"""A ctrl+c or a kill -9 of ``edgetui ingest`` (edgetui/helper_process.py): a ctrl+c in a terminal
signals the whole foreground process group, the ingest's parsing process and shard too; at any
moment the ingest says one line (running it again resumes) and exits 130, no traceback, and the
rerun completes. A kill -9 of the whole group (the ingest, its helpers and multiprocessing's
resource tracker) leaves no POSIX semaphore in /dev/shm."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgetui.db import open_db

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_runs" / "runs" / "judge-demo-001"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_db_safety import _big_transcript, _children  # noqa: E402 - after sys.path is set above

SCRIPT = Path(sys.executable).with_name("edgetui")  # the console script (edgetui.cli:run)


def _root(tmp_path: Path, runs: int = 60, mb: int = 40) -> Path:
    """A runs root big enough for both helpers: ``runs`` copies of a sample run (the shard starts
    at 48 new runs) and one run whose transcript is ``mb`` MB (parsed in the parsing process)."""
    root = tmp_path / "runs"
    root.mkdir()
    for i in range(runs):
        shutil.copytree(SAMPLE, root / f"run-{i:03d}", ignore=shutil.ignore_patterns("*.tar.gz"))
    _big_transcript(root / "run-000" / "judge_demo_sum" / "agent_output.txt", mb)
    return root


def _sem_inodes() -> dict[int, str]:
    """The POSIX semaphores in /dev/shm by inode."""
    out = {}
    for n in os.listdir("/dev/shm"):
        if n.startswith("sem."):
            try:
                out[os.stat(f"/dev/shm/{n}").st_ino] = n
            except OSError:
                pass
    return out


def _mapped_sems(pids: list[int]) -> set[int]:
    """Inodes of the semaphores the processes ``pids`` have open (mapped: glibc maps each, under
    the name it was made with)."""
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                out |= {int(ln.split()[4]) for ln in f if "/dev/shm/sem." in ln}
        except OSError:
            pass
    return out


def _start(db: Path, root: Path, script: bool) -> subprocess.Popen:
    cmd = [str(SCRIPT)] if script else [sys.executable, "-m", "edgetui.cli"]
    return subprocess.Popen(
        [*cmd, "--db", str(db), "ingest", "-q", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow
def test_ctrl_c_at_any_moment_says_one_line_exits_130_and_a_rerun_resumes(tmp_path):
    from edgetui.cli import INTERRUPTED_INGEST

    assert SCRIPT.exists(), SCRIPT
    root = _root(tmp_path)
    interrupted = 0
    for k in range(20):
        delay = 0.15 * k  # spread over the ingest (about 3 s of work here)
        db = tmp_path / f"c{k}.duckdb"
        p = _start(db, root, script=k % 2 == 0)
        deadline = time.monotonic() + 60
        while not db.exists() and time.monotonic() < deadline:  # (past Python's start)
            time.sleep(0.01)
        time.sleep(delay)
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's ctrl+c: the whole process group
        out, err = p.communicate(timeout=120)
        if p.returncode == 0 and "recorded" in out:
            continue  # done before the signal
        interrupted += 1
        assert p.returncode == 130, (k, p.returncode, err)
        assert err.splitlines() == [INTERRUPTED_INGEST], (k, err)
        again = subprocess.run(
            [sys.executable, "-m", "edgetui.cli", "--db", str(db), "ingest", "-q", str(root)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0, (k, again.stderr)
        assert "Traceback" not in again.stderr and "could not record" not in again.stderr, again.stderr
        conn = open_db(db)
        try:
            (n_runs,) = conn.execute("SELECT count(*) FROM runs").fetchone()
            (big,) = conn.execute(
                "SELECT count(*) FROM events WHERE run_key LIKE '%run-000%' AND source = 'agent_output.txt'"
            ).fetchone()
        finally:
            conn.close()
        assert n_runs == 60 and big > 1000, (k, n_runs, big)
    assert interrupted >= 10  # most delays landed inside the ingest


def test_kill_9_of_the_ingest_and_its_helpers_leaves_no_semaphore(tmp_path):
    root = _root(tmp_path, runs=50, mb=60)
    for k in range(2):
        db = tmp_path / f"k{k}.duckdb"
        n_before = len(_sem_inodes())
        p = _start(db, root, script=False)
        kids: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(kids) < 2:  # the parsing process and the shard
            time.sleep(0.05)
            kids = [c for c in _children(p.pid) if b"resource_tracker" not in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(kids) >= 2, kids
        time.sleep(0.3)  # (both at work)
        mapped = _mapped_sems([p.pid, *kids])
        os.killpg(p.pid, signal.SIGKILL)  # the ingest, its helpers and the resource tracker
        p.communicate()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(Path(f"/proc/{c}").exists() for c in kids):
            time.sleep(0.05)
        now = _sem_inodes()
        left = [now[i] for i in mapped if i in now]
        # (the count of all of /dev/shm's semaphores is shown, not asserted: other programs make theirs)
        assert left == [], f"{len(left)} semaphores left by the ingest ({n_before} -> {len(now)} in /dev/shm)"
        assert mapped == set()  # none made at all: nothing a kill could leave


def test_kill_9_of_the_ingest_alone_ends_its_helpers(tmp_path):
    root = _root(tmp_path, runs=50, mb=60)
    db = tmp_path / "k.duckdb"
    p = _start(db, root, script=False)
    kids: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(kids) < 3:  # parsing process, shard, resource tracker
        time.sleep(0.05)
        kids = _children(p.pid)
    assert len(kids) >= 2, kids
    p.send_signal(signal.SIGKILL)
    p.communicate()
    deadline = time.monotonic() + 15
    alive = kids
    while time.monotonic() < deadline and alive:
        time.sleep(0.1)
        alive = [
            k
            for k in kids
            if Path(f"/proc/{k}").exists() and Path(f"/proc/{k}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        ]
    assert alive == [], "helpers outlived the ingest"
