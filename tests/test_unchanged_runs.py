"""Re-ingest with nothing changed: runs recognised from their recorded tree signature, through the
host interface (edgetui/hosts), on real copies of the sample runs and real DuckDB files."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import duckdb
import pytest
from waits import inotify_watched, wait_for

from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.hosts import Entry, Host
from edgetui.hosts.local import LocalHost
from edgetui.hosts.signature import TREE_SOURCE, tree_signature
from edgetui.record.ingest import ingest_paths

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs" / "runs"
TASKS = ROOT / "sample_runs" / "tasks"
GW = "opus48-edge-3-20260312005800/gw_signal_search"


@pytest.fixture
def runs(tmp_path) -> Path:
    dst = tmp_path / "runs"
    shutil.copytree(SAMPLES, dst)  # copy2: mtimes kept, fresh inodes
    return dst


def _ingest(db: Path, runs: Path, **kw):
    conn = open_db(db)
    try:
        return ingest_paths(conn, [runs], tasks_dir=TASKS, **kw)
    finally:
        conn.close()


def _q(db: Path, sql: str, params=()):
    c = duckdb.connect(str(db), read_only=True)
    try:
        return c.execute(sql, list(params)).fetchall()
    finally:
        c.close()


def _tables(db: Path) -> dict[str, set]:
    return {
        t: set(_q(db, f"SELECT * EXCLUDE (ingested_at) FROM {t}" if t == "runs" else f"SELECT * FROM {t}"))
        for t in ("events", "submissions", "test_results", "runs")
    }


def test_local_host_lists_stats_and_reads_at_an_offset(tmp_path):
    f = tmp_path / "a.log"
    f.write_bytes(b"0123456789")
    (tmp_path / "d").mkdir()
    h = LocalHost()
    assert isinstance(h, Host)
    got = {e.name: e for e in h.list(str(tmp_path))}
    st = f.stat()
    assert got["a.log"] == Entry("a.log", False, 10, st.st_mtime_ns, st.st_ino)
    assert got["d"].is_dir
    assert h.read_at(str(f), 3, 4) == b"3456"
    assert h.read_at(str(f), 8, 100) == b"89"
    assert h.stat(str(tmp_path / "missing")) is None
    with pytest.raises(OSError):
        h.list(str(tmp_path / "missing"))


def test_local_host_watch_reports_a_new_file(tmp_path):
    seen: list[set] = []
    stop = threading.Event()
    th = threading.Thread(target=LocalHost().watch, args=([str(tmp_path)], seen.append, stop), daemon=True)
    th.start()
    try:
        wait_for(lambda: inotify_watched(tmp_path), 10, "the watch on the folder in place")
        (tmp_path / "new.txt").write_text("x")
        wait_for(lambda: seen, 10, "a report of the new file")
    finally:
        stop.set()
        th.join(5)
    assert any(str(tmp_path / "new.txt") in s for s in seen)


def test_signature_changes_with_any_file_of_the_run(runs):
    task = runs / GW
    h = LocalHost()
    base = tree_signature(h, str(task)).digest
    assert tree_signature(h, str(task)).digest == base
    assert tree_signature(h, str(task), salt="other task settings").digest != base
    rep = task / "submissions" / "agent-3" / "report.json"
    st = rep.stat()
    os.utime(rep, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # rewritten in place, same size
    assert tree_signature(h, str(task)).digest != base
    base = tree_signature(h, str(task)).digest
    (task / "submissions" / "agent-999").mkdir()  # a new submission folder, empty so far
    assert tree_signature(h, str(task)).digest != base
    base = tree_signature(h, str(task)).digest
    cfg = task.parent / "run_config.json"
    cfg.write_bytes(cfg.read_bytes() + b" ")
    assert tree_signature(h, str(task)).digest != base
    assert tree_signature(h, str(runs / "missing")) is None


def test_nothing_changed_reads_nothing_and_changes_nothing(runs, tmp_path):
    db = tmp_path / "e.duckdb"
    first = _ingest(db, runs)
    assert first.unchanged == 0 and len(first.runs) == 6
    before = _tables(db)
    assert len(_q(db, "SELECT * FROM source_cursors WHERE source = ?", [TREE_SOURCE])) == 6
    again = _ingest(db, runs)
    assert again.unchanged == 6 and again.events_offered == 0 and again.bytes_read == 0
    assert sorted(again.runs) == sorted(first.runs)
    assert _tables(db) == before


def test_a_changed_run_alone_is_read_again(runs, tmp_path):
    db = tmp_path / "e.duckdb"
    _ingest(db, runs)
    task = runs / GW
    n_before = _q(db, "SELECT count(*) FROM events WHERE run_key = ?", [f"local/{GW}"])[0][0]
    with open(task / "run_agent.log", "ab") as f:
        f.write(b"2026-03-12 14:00:00,000 - INFO - a line appended after the ingest\n")
    rep = _ingest(db, runs)
    assert rep.unchanged == 5
    assert _q(db, "SELECT count(*) FROM events WHERE run_key = ?", [f"local/{GW}"])[0][0] == n_before + 1
    assert _q(db, "SELECT count(*) FROM events WHERE summary LIKE '%appended after the ingest%'")[0][0] == 1
    # a new graded round is found too
    src = task / "submissions" / "agent-3"
    new = task / "submissions" / "agent-900"
    shutil.copytree(src, new)
    rj = json.loads((new / "report.json").read_text())
    rj["submission_id"] = "agent-900"
    (new / "report.json").write_text(json.dumps(rj))
    n_subs = _q(db, "SELECT count(*) FROM submissions WHERE run_key = ?", [f"local/{GW}"])[0][0]
    rep = _ingest(db, runs)
    assert rep.unchanged == 5
    assert _q(db, "SELECT count(*) FROM submissions WHERE run_key = ?", [f"local/{GW}"])[0][0] == n_subs + 1
    assert _ingest(db, runs).unchanged == 6


def test_full_rereads_and_a_running_run_is_never_skipped(runs, tmp_path):
    db = tmp_path / "e.duckdb"
    _ingest(db, runs)
    before = _tables(db)
    rep = _ingest(db, runs, full=True)
    assert rep.unchanged == 0 and rep.events_offered > 0
    assert _tables(db) == before
    c = duckdb.connect(str(db))
    c.execute("UPDATE runs SET status = 'running' WHERE run_key = ?", [f"local/{GW}"])
    c.close()
    rep = _ingest(db, runs)
    assert rep.unchanged == 5  # its status depends on the clock: read again, and finished again
    assert _q(db, "SELECT status FROM runs WHERE run_key = ?", [f"local/{GW}"])[0][0] == "finished"


def test_cli_says_unchanged_and_full_reads_again(runs, tmp_path, capsys):
    db = tmp_path / "e.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(runs)]) == 0
    capsys.readouterr()
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(TASKS), str(runs)]) == 0
    out = capsys.readouterr().out
    assert "6 unchanged since recorded" in out and "0 event(s) read" in out
    assert main(["--db", str(db), "ingest", "-q", "--full", "--tasks-dir", str(TASKS), str(runs)]) == 0
    out = capsys.readouterr().out
    assert "unchanged" not in out and "0 event(s) read" not in out


def test_runs_recorded_together_fail_alone(runs, tmp_path, monkeypatch):
    """Small runs share a transaction; one that fails is rolled back with them, then each is
    recorded alone: the failure is said for that run only and the others are as a clean ingest."""
    import edgetui.parsers.sforge_dir as sd

    clean = tmp_path / "clean.duckdb"
    _ingest(clean, runs)
    real = sd.read_submissions

    def failing(task_dir, *a, **k):
        if Path(task_dir).name == "judge_demo_sum":
            raise OSError(5, "Input/output error (injected)")
        return real(task_dir, *a, **k)

    monkeypatch.setattr(sd, "read_submissions", failing)
    db = tmp_path / "e.duckdb"
    rep = _ingest(db, runs)
    assert rep.failed == [str(runs / "judge-demo-001" / "judge_demo_sum")]
    assert [m for m in rep.messages if "could not record" in m] == [
        f"{runs / 'judge-demo-001' / 'judge_demo_sum'}: could not record: [Errno 5] Input/output error (injected)"
    ]
    assert len(rep.runs) == 5 and "local/judge-demo-001/judge_demo_sum" not in rep.runs
    cols = "event_id, kind, t, t_source, summary, data"
    c = duckdb.connect(str(db))
    c.execute(f"ATTACH '{clean}' AS c (READ_ONLY)")
    other = "run_key <> 'local/judge-demo-001/judge_demo_sum'"
    for a, b in (("events", "c.events"), ("c.events", "events")):
        assert (
            c.execute(
                f"SELECT count(*) FROM (SELECT {cols} FROM {a} WHERE {other} "
                f"EXCEPT SELECT {cols} FROM {b} WHERE {other})"
            ).fetchone()[0]
            == 0
        )
    # a run's small files are one transaction: the failed run left nothing half-recorded
    assert c.execute("SELECT count(*) FROM events WHERE NOT (" + other + ")").fetchone()[0] == 0
    assert c.execute("SELECT count(*) FROM runs").fetchone()[0] == 5
    c.close()
    monkeypatch.setattr(sd, "read_submissions", real)
    rep = _ingest(db, runs)  # the failed run has no signature yet: read again, now recorded
    assert rep.unchanged == 5 and not rep.failed and len(rep.runs) == 6
