"""A run whose transcript is all that changed since it was recorded: its whole-file events are kept
instead of re-read (edgetui.record.ingest: the tree signature with the transcript's recorded entry put
back), and what is recorded is the same as a full re-read records. Real copies of the sample
runs, real DuckDB files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

import edgetui.record.run_recording as ingest_mod
from edgetui.store.database import open_db
from edgetui.hosts.signature import TREE_SOURCE
from edgetui.record.ingest import ingest_paths

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs" / "runs"
TASKS = ROOT / "sample_runs" / "tasks"
GENUINE = ROOT / "sample_runs" / "genuine" / "runs"
GENUINE_TASKS = ROOT / "sample_runs" / "genuine" / "tasks"


def _copy_without_transcripts(src: Path, dst: Path) -> list[tuple[Path, Path]]:
    """Copy ``src`` to ``dst`` (mtimes kept) without its agent_output.txt files; returns the held
    (original, destination) pairs."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("agent_output.txt"))
    return [(p, dst / p.relative_to(src)) for p in sorted(src.rglob("agent_output.txt"))]


def _ingest(db: Path, runs: Path, tasks: Path, **kw):
    conn = open_db(db)
    try:
        return ingest_paths(conn, [runs], tasks_dir=tasks, **kw)
    finally:
        conn.close()


def _rows(db: Path) -> dict[str, list]:
    c = duckdb.connect(str(db), read_only=True)
    try:
        return {
            t: sorted(c.execute(q).fetchall(), key=repr)
            for t, q in (
                ("events", "SELECT * FROM events"),
                ("submissions", "SELECT * FROM submissions"),
                ("test_results", "SELECT * FROM test_results"),
                ("runs", "SELECT * EXCLUDE (ingested_at) FROM runs"),
                # (a copy's inodes differ: so do the tree digests, which hold them)
                (
                    "source_cursors",
                    (
                        "SELECT * EXCLUDE (updated_at, state, inode, generation), CASE WHEN source = '<tree>' "
                        "THEN NULL ELSE state END, CASE WHEN source = '<tree>' THEN NULL ELSE generation END "
                        "FROM source_cursors"
                    ),
                ),
            )
        }
    finally:
        c.close()


@pytest.fixture
def spy(monkeypatch):
    """Counts the calls of whole_file_events (the re-read the fast path skips)."""
    calls = []
    real = ingest_mod.whole_file_events

    def counted(task_dir, *a, **k):
        calls.append(Path(task_dir))
        return real(task_dir, *a, **k)

    monkeypatch.setattr(ingest_mod, "whole_file_events", counted)
    return calls


@pytest.mark.parametrize("src,tasks", [(SAMPLES, TASKS), (GENUINE, GENUINE_TASKS)], ids=["samples", "genuine"])
def test_transcripts_added_later_record_what_a_full_reread_records(tmp_path, spy, src, tasks):
    a, b = tmp_path / "a", tmp_path / "b"
    held = _copy_without_transcripts(src, a / "runs")
    assert held, "the bundled runs have transcripts"
    _ingest(a / "db.duckdb", a / "runs", tasks)
    for orig, dst in held:
        shutil.copy2(orig, dst)
    spy.clear()
    rep = _ingest(a / "db.duckdb", a / "runs", tasks)
    assert not rep.failed
    n_runs = len(rep.runs)
    # every run that got its transcript back was recorded without re-reading its other files
    reread = {p.resolve() for p in spy}
    for _, dst in held:
        assert dst.parent.resolve() not in reread, dst
    # the same tree, the second ingest forced to re-read everything (--full)
    shutil.copytree(a / "runs", b / "runs", ignore=shutil.ignore_patterns("agent_output.txt"))
    _ingest(b / "db.duckdb", b / "runs", tasks)
    for orig, dst in held:
        shutil.copy2(orig, b / "runs" / dst.relative_to(a / "runs"))
    spy.clear()
    rep_b = _ingest(b / "db.duckdb", b / "runs", tasks, full=True)
    assert len(spy) == len(rep_b.runs) == n_runs  # (the full path did re-read)
    ra, rb = _rows(a / "db.duckdb"), _rows(b / "db.duckdb")
    for t in ra:  # paths differ between a and b: compare with them taken out
        fa = [repr(r).replace(str(a), "<root>") for r in ra[t]]
        fb = [repr(r).replace(str(b), "<root>") for r in rb[t]]
        assert sorted(fa) == sorted(fb), t
    assert ra["events"], "something was recorded"


def test_a_changed_submission_beside_the_transcript_is_reread(tmp_path, spy):
    held = _copy_without_transcripts(SAMPLES, tmp_path / "runs")
    db = tmp_path / "db.duckdb"
    _ingest(db, tmp_path / "runs", TASKS)
    orig, dst = next((o, d) for o, d in held if (d.parent / "submissions").is_dir())
    shutil.copy2(orig, dst)
    report = next((dst.parent / "submissions").glob("*/report.json"))
    st = report.stat()
    report.write_bytes(report.read_bytes())  # same bytes, a new mtime: the tree changed beside the transcript
    os.utime(report, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    spy.clear()
    _ingest(db, tmp_path / "runs", TASKS)
    assert dst.parent.resolve() in {p.resolve() for p in spy}


def test_a_tree_cursor_without_the_transcript_entry_means_a_full_reread(tmp_path, spy):
    """A tree cursor written by the live supervisor (or an older edgetui) does not say what the
    transcript was: the run is re-read as before."""
    held = _copy_without_transcripts(SAMPLES, tmp_path / "runs")
    db = tmp_path / "db.duckdb"
    _ingest(db, tmp_path / "runs", TASKS)
    c = duckdb.connect(str(db))
    states = c.execute("SELECT state FROM source_cursors WHERE source = ?", [TREE_SOURCE]).fetchall()
    assert states and all(json.loads(s)["transcript"] is None for (s,) in states)  # no transcript when recorded
    c.execute("UPDATE source_cursors SET state = NULL WHERE source = ?", [TREE_SOURCE])
    c.close()
    orig, dst = held[0]
    shutil.copy2(orig, dst)
    spy.clear()
    _ingest(db, tmp_path / "runs", TASKS)
    assert dst.parent.resolve() in {p.resolve() for p in spy}


@pytest.mark.parametrize("src,tasks", [(SAMPLES, TASKS), (GENUINE, GENUINE_TASKS)], ids=["samples", "genuine"])
def test_new_runs_submissions_deferred_to_the_commit_record_the_same(tmp_path, monkeypatch, src, tasks):
    """A new run's submission rows are inserted at its transaction's commit and the alignment gets
    them from finalize; with both turned off (rows inserted at once, the alignment reading the
    table) the same rows are recorded."""
    import edgetui.record.derived_rows as fin
    from edgetui.record.recorder import Recorder

    shutil.copytree(src, tmp_path / "runs")
    _ingest(tmp_path / "a.duckdb", tmp_path / "runs", tasks)
    real_align = fin.align_runs

    def align_reading_the_table(conn, jobs):
        for j in jobs:
            j.submissions = None
        return real_align(conn, jobs)

    monkeypatch.setattr(Recorder, "defer_new_submissions", False)
    monkeypatch.setattr(fin, "align_runs", align_reading_the_table)
    _ingest(tmp_path / "b.duckdb", tmp_path / "runs", tasks)
    ra, rb = _rows(tmp_path / "a.duckdb"), _rows(tmp_path / "b.duckdb")
    assert ra["submissions"] and ra["test_results"]
    assert any(r[4] == "interpolated" for r in ra["events"])  # (t_source: the alignment ran)
    for t in ra:
        assert ra[t] == rb[t], t
