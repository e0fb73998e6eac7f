"""A first ingest of many new run directories on two processes (edgetui.record.ingest_shard) records what
the one-process ingest records: every table of two real DuckDB files compared with EXCEPT ALL both
ways, the report's lines in the same order, the progress bytes summed the same. The root: copies of
the bundled sample runs and the genuine SForge runs (hard links, as bench/bench_scale.py builds
its 750-run root), one of them naming a secret in its run_config.json that a later run's transcript
(recorded by the second process) echoes. A second process that dies leaves its runs to this one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from waits import wait_for

import edgetui.record.ingest_shard as shard_mod
from edgetui.store.database import open_db
from edgetui.record.ingest import ingest_paths
from edgetui.parsers.sforge_dir import discover

ROOT = Path(__file__).resolve().parents[1]
SETS = [
    (ROOT / "sample_runs" / "runs", ROOT / "sample_runs" / "tasks"),
    (ROOT / "sample_runs" / "genuine" / "runs", ROOT / "sample_runs" / "genuine" / "tasks"),
]
SECRET = "plain-secret-value-7781"
TIME_COLUMNS = {"ingested_at", "updated_at", "created_at", "built_at"}


def _link_tree(src: Path, dst: Path) -> None:
    for d, _, files in os.walk(src):
        out = dst / Path(d).relative_to(src)
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            os.link(Path(d) / f, out / f)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """(runs root, tasks dir, number of runs): 3 copies of every sample and genuine run, the first
    run's run_config.json naming :data:`SECRET`, the last run's transcript echoing it."""
    return _build(tmp_path_factory.mktemp("shard"), 3)


def _build(tmp: Path, copies: int):
    root, tasks = tmp / "root", tmp / "tasks"
    root.mkdir()
    tasks.mkdir()
    for runs, tdir in SETS:
        for f in tdir.glob("*.json"):
            if not (tasks / f.name).exists():
                shutil.copy2(f, tasks / f.name)
        for c in range(copies):
            for loc in discover(runs):
                task_dir = Path(loc.task_dir)
                run_dir = root / f"{task_dir.parent.name}-c{c}"
                _link_tree(task_dir, run_dir / task_dir.name)
                cfg = task_dir.parent / "run_config.json"
                if cfg.is_file() and not (run_dir / "run_config.json").exists():
                    os.link(cfg, run_dir / "run_config.json")
    locs = discover(root)
    first, last = Path(locs[0].task_dir), Path(locs[-1].task_dir)
    cfg = first.parent / "run_config.json"
    data = json.loads(cfg.read_text()) if cfg.is_file() else {}
    cfg.unlink(missing_ok=True)
    cfg.write_text(json.dumps({**data, "api_key": SECRET}))
    tr = last / "agent_output.txt"
    body = tr.read_bytes() if tr.is_file() else b""
    tr.unlink(missing_ok=True)
    line = {
        "type": "assistant",
        "message": {
            "id": "msg_shard_echo",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": f"the key is {SECRET} ok"}],
        },
    }
    tr.write_bytes(body + json.dumps(line).encode() + b"\n")
    return root, tasks, len(locs)


def _ingest(db: Path, root: Path, tasks: Path) -> tuple[object, int]:
    got = [0]

    def progress(n: int) -> None:
        got[0] += n

    conn = open_db(db)
    try:
        rep = ingest_paths(conn, [root], tasks_dir=tasks, progress=progress)
    finally:
        conn.close()
    return rep, got[0]


def _differences(a: Path, b: Path) -> dict[str, tuple[int, int, int, int]]:
    """table -> (rows in a, rows in b, a EXCEPT ALL b, b EXCEPT ALL a), time columns left out."""
    c = duckdb.connect()
    c.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
    c.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
    out = {}
    for (t,) in c.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'a'").fetchall():
        cols = [
            r[0]
            for r in c.execute(
                "SELECT column_name FROM duckdb_columns() WHERE database_name = 'a' "
                "AND table_name = ? ORDER BY column_index",
                [t],
            ).fetchall()
            if r[0] not in TIME_COLUMNS
        ]
        lst = ", ".join(f'"{x}"' for x in cols)
        n_a = c.execute(f"SELECT count(*) FROM a.{t}").fetchone()[0]
        n_b = c.execute(f"SELECT count(*) FROM b.{t}").fetchone()[0]
        d1 = c.execute(f"SELECT count(*) FROM (SELECT {lst} FROM a.{t} EXCEPT ALL SELECT {lst} FROM b.{t})").fetchone()[
            0
        ]
        d2 = c.execute(f"SELECT count(*) FROM (SELECT {lst} FROM b.{t} EXCEPT ALL SELECT {lst} FROM a.{t})").fetchone()[
            0
        ]
        out[t] = (n_a, n_b, d1, d2)
    c.close()
    return out


def _holds_secret(db: Path) -> int:
    c = duckdb.connect(str(db), read_only=True)
    try:
        n = 0
        for t, col in c.execute(
            "SELECT table_name, column_name FROM duckdb_columns() WHERE data_type IN "
            "('VARCHAR', 'JSON', 'BLOB') AND NOT internal AND database_name = current_database()"
        ).fetchall():
            n += c.execute(
                f'SELECT count(*) FROM "{t}" WHERE CAST("{col}" AS VARCHAR) LIKE ?', [f"%{SECRET}%"]
            ).fetchone()[0]
        return n
    finally:
        c.close()


@pytest.fixture(scope="module")
def one_process(root, tmp_path_factory):
    r, tasks, _ = root
    db = tmp_path_factory.mktemp("one") / "one.duckdb"
    mp = pytest.MonkeyPatch()
    mp.setenv("EDGETUI_NO_MP", "1")
    try:
        rep, nbytes = _ingest(db, r, tasks)
    finally:
        mp.undo()
    return db, rep, nbytes


def test_sharded_ingest_records_the_same_rows(root, one_process, tmp_path, monkeypatch):
    r, tasks, n_runs = root
    monkeypatch.setattr(shard_mod, "SHARD_MIN_RUNS", 4)
    copied = []
    real_copy = shard_mod.copy_shard
    monkeypatch.setattr(shard_mod, "copy_shard", lambda rec, path: (copied.append(path), real_copy(rec, path)))
    db = tmp_path / "sharded.duckdb"
    rep, nbytes = _ingest(db, r, tasks)
    assert copied, "the second process did not record any run"
    one_db, one_rep, one_bytes = one_process
    assert not one_rep.failed and not rep.failed, rep.messages
    assert rep.runs == one_rep.runs and len(rep.runs) == n_runs
    assert rep.messages == one_rep.messages
    assert (rep.events_offered, rep.bytes_read, nbytes) == (one_rep.events_offered, one_rep.bytes_read, one_bytes)
    diffs = _differences(one_db, db)
    assert diffs["events"][0] > 1000 and diffs["submissions"][0] > 100
    assert {t: d for t, d in diffs.items() if d[0] != d[1] or d[2] or d[3]} == {}
    # the secret named by the first run (this process) is out of the last run (the second process)
    assert _holds_secret(one_db) == 0 and _holds_secret(db) == 0
    c = duckdb.connect(str(db), read_only=True)
    try:
        assert (
            c.execute(
                "SELECT count(*) FROM events WHERE message_id = 'msg_shard_echo' AND summary LIKE '%<redacted>%'"
            ).fetchone()[0]
            == 1
        )
    finally:
        c.close()
    assert not [p.name for p in tmp_path.iterdir() if ".shard-" in p.name]


def _die(*args) -> None:  # a second process that dies at once (started by reference: spawn)
    os._exit(3)


def test_a_dead_shard_leaves_its_runs_to_this_process(root, one_process, tmp_path, monkeypatch):
    r, tasks, n_runs = root
    monkeypatch.setattr(shard_mod, "SHARD_MIN_RUNS", 4)
    monkeypatch.setattr(shard_mod, "shard_main", _die)
    copied = []
    monkeypatch.setattr(shard_mod, "copy_shard", lambda rec, path: copied.append(path))
    db = tmp_path / "fallback.duckdb"
    rep, _ = _ingest(db, r, tasks)
    assert not copied
    one_db, one_rep, _ = one_process
    assert rep.runs == one_rep.runs and len(rep.runs) == n_runs and rep.messages == one_rep.messages
    assert {t: d for t, d in _differences(one_db, db).items() if d[0] != d[1] or d[2] or d[3]} == {}
    assert not [p.name for p in tmp_path.iterdir() if ".shard-" in p.name]


def _holders(path: Path) -> list[int]:
    """Pids of the processes holding ``path`` open."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if any(os.readlink(f) == str(path) for f in (d / "fd").iterdir()):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_kill9_during_a_sharded_ingest_then_resume(tmp_path):
    """``kill -9`` of ``edgetui ingest`` while its second process records: that process ends too, the
    database opens, the next ingest records every run (its shard file of the killed one removed)
    and the rows are those of an uninterrupted one-process ingest."""
    (tmp_path / "big").mkdir()
    r, tasks, n_runs = _build(tmp_path / "big", 6)
    assert n_runs >= 60
    clean, killed = tmp_path / "clean.duckdb", tmp_path / "killed.duckdb"

    def cmd(db: Path) -> list[str]:
        return [
            sys.executable,
            "-c",
            "import sys; from edgetui.cli.main import main; sys.exit(main(sys.argv[1:]))",
            "--db",
            str(db),
            "ingest",
            "-q",
            "--tasks-dir",
            str(tasks),
            str(r),
        ]

    assert subprocess.run(cmd(clean), env=dict(os.environ, EDGETUI_NO_MP="1"), capture_output=True).returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "EDGETUI_NO_MP"}
    p = subprocess.Popen(cmd(killed), env=env)

    def shards() -> list[Path]:
        return [f for f in tmp_path.iterdir() if ".shard-" in f.name and f.suffix == ".duckdb"]

    shard_files = wait_for(lambda: shards() or p.poll() is not None, 60, "a shard file (or the ingest's end)", 0.02)
    assert shard_files is not True and shard_files, "the ingest made no shard file (or ended before one was seen)"
    time.sleep(0.3)  # part of the test: the kill lands while the shard records
    assert p.poll() is None, "the ingest ended before it could be killed"
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    # the second process ends with it: nothing holds the shard file open any more
    wait_for(
        lambda: not _holders(shard_files[0]),
        10,
        "nothing holding the shard file",
        0.1,
        describe=lambda: _holders(shard_files[0]),
    )
    assert shard_files[0].exists()  # (left by the killed ingest: the next one removes it)
    cmd = cmd(killed)
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    assert not [f.name for f in tmp_path.iterdir() if ".shard-" in f.name]
    diffs = _differences(clean, killed)
    assert diffs["runs"][0] == n_runs
    assert {t: d for t, d in diffs.items() if d[0] != d[1] or d[2] or d[3]} == {}


def test_a_recorded_runs_secret_scrubs_a_later_ingest(root, tmp_path, monkeypatch):
    """The secret of a run recorded by an earlier ingest (not read again: unchanged) still scrubs
    the runs this ingest reads (the resumed ingest after a kill relies on it)."""
    r, tasks, _ = root
    monkeypatch.setenv("EDGETUI_NO_MP", "1")
    first = Path(discover(r)[0].task_dir)
    db = tmp_path / "two-steps.duckdb"
    conn = open_db(db)
    try:
        rep = ingest_paths(conn, [first.parent], tasks_dir=tasks)
        assert len(rep.runs) == 1 and rep.unchanged == 0
        rep = ingest_paths(conn, [r], tasks_dir=tasks)
        assert rep.unchanged == 1
    finally:
        conn.close()
    assert _holds_secret(db) == 0
