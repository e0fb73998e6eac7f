"""The batched finalize (edgetui.record.derived_rows.finalize_runs: a fixed number of statements for N runs)
records what finalizing the same runs one by one records: every table of two real DuckDB files,
compared with EXCEPT ALL both ways. The runs: the bundled sample runs, the genuine SForge runs of
sample_runs/genuine, and two bare transcripts holding the same records (the repeated-records path,
which stays per run inside a batch)."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import duckdb
import pytest

import edgetui.record.run_recording as ingest_mod
from edgetui.store.database import open_db
from edgetui.record.derived_rows import FinalizeJob, finalize_run, finalize_runs
from edgetui.record.ingest import ingest_paths
from edgetui.record.recorder import Recorder

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs" / "runs"
TASKS = ROOT / "sample_runs" / "tasks"
GENUINE = ROOT / "sample_runs" / "genuine" / "runs"
GENUINE_TASKS = ROOT / "sample_runs" / "genuine" / "tasks"
JOB_FIELDS = ("fallback_end", "live_end", "align", "aggregates", "judge_best", "log_end", "submissions_kept")


@pytest.fixture(scope="module")
def unfinalized(tmp_path_factory):
    """A database holding every run's files but no finalize (what each ingest's finalize would have
    been given, captured instead), and those calls in ingest order."""
    tmp = tmp_path_factory.mktemp("finalize-batch")
    transcript = next(p for p in sorted(GENUINE.rglob("agent_output.txt")) if p.stat().st_size > 10_000)
    for name in ("resumed-a.jsonl", "resumed-b.jsonl"):  # (same records: the second repeats the first)
        shutil.copy2(transcript, tmp / name)
    calls: list[tuple[tuple, dict, bool]] = []
    mp = pytest.MonkeyPatch()

    def capture(rec, run_key, *a, **kw):
        calls.append(((run_key, *a), kw, rec.fresh_run == run_key))

    mp.setattr(ingest_mod, "finalize_run", capture)
    # (a group's new runs are finalized together at its end: edgetui/record/group_writes.py)
    for mod in (ingest_mod, importlib.import_module("edgetui.record.group_writes")):
        if hasattr(mod, "finalize_runs"):
            mp.setattr(
                mod,
                "finalize_runs",
                lambda rec, jobs: [
                    calls.append(
                        (
                            (j.run_key, j.info, j.task, j.subs, j.transcript_source),
                            {f: getattr(j, f) for f in JOB_FIELDS},
                            rec.fresh_run == j.run_key if j.fresh is None else j.fresh,
                        )
                    )
                    for j in jobs
                ],
            )
    db = tmp / "files.duckdb"
    conn = open_db(db)
    try:
        for runs, tasks in ((SAMPLES, TASKS), (GENUINE, GENUINE_TASKS)):
            rep = ingest_paths(conn, [runs], tasks_dir=tasks)
            assert not rep.failed, rep.messages
        rep = ingest_paths(conn, [tmp / "resumed-a.jsonl", tmp / "resumed-b.jsonl"])
        assert not rep.failed, rep.messages
    finally:
        conn.close()
        mp.undo()
    assert len(calls) >= 10 and len({c[0][0] for c in calls}) == len(calls)
    return tmp, db, calls


def _finalize_copy(tmp: Path, db: Path, calls, name: str, batched: bool, batch_mode: bool) -> Path:
    out = tmp / f"{name}.duckdb"
    shutil.copy2(db, out)
    conn = open_db(out)
    try:
        rec = Recorder(conn)
        rec.batch_mode = batch_mode
        with rec.transaction():
            if batched:
                finalize_runs(rec, [FinalizeJob(*a, **kw, fresh=fresh) for a, kw, fresh in calls])
            else:
                for a, kw, fresh in calls:
                    rec.fresh_run = a[0] if fresh else None
                    finalize_run(rec, *a, **kw)
                    rec.fresh_run = None
    finally:
        conn.close()
    return out


def _differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Rows of each table of ``a`` not in ``b`` and of ``b`` not in ``a`` (EXCEPT ALL), by table."""
    c = duckdb.connect()
    try:
        c.execute(f"ATTACH '{a}' AS a (READ_ONLY)")
        c.execute(f"ATTACH '{b}' AS b (READ_ONLY)")
        tables = [
            r[0]
            for r in c.execute("SELECT table_name FROM duckdb_tables() WHERE database_name = 'a' ORDER BY 1").fetchall()
        ]
        assert {"events", "runs", "submissions", "test_results", "record_keys"} <= set(tables)
        out = {}
        for t in tables:
            ab = c.execute(f"SELECT count(*) FROM (FROM a.{t} EXCEPT ALL FROM b.{t})").fetchone()[0]
            ba = c.execute(f"SELECT count(*) FROM (FROM b.{t} EXCEPT ALL FROM a.{t})").fetchone()[0]
            out[t] = (ab, ba)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("batch_mode", [False, True], ids=["live", "offline-batch-mode"])
def test_batch_finalize_records_what_one_by_one_records(unfinalized, batch_mode):
    tmp, db, calls = unfinalized
    one = _finalize_copy(tmp, db, calls, f"one-{batch_mode}", batched=False, batch_mode=batch_mode)
    many = _finalize_copy(tmp, db, calls, f"many-{batch_mode}", batched=True, batch_mode=batch_mode)
    # the finalize did its work (the comparison below could fail): times, submissions, aggregates, keys
    changed = _differences(db, one)
    assert changed["events"][0] > 0 and changed["submissions"][1] > 0 and changed["runs"][1] > 0, changed
    assert changed["record_keys"][1] > 0, changed
    c = duckdb.connect(str(many), read_only=True)
    try:
        assert c.execute("SELECT count(*) FROM events WHERE t_source = 'interpolated'").fetchone()[0] > 0
        assert c.execute("SELECT count(*) FROM runs WHERE n_repeated > 0").fetchone()[0] == 1
        assert c.execute("SELECT count(*) FROM runs WHERE n_events IS NULL").fetchone()[0] == 0
    finally:
        c.close()
    assert {t: d for t, d in _differences(one, many).items() if d != (0, 0)} == {}


def test_batch_finalize_refuses_a_run_twice(tmp_path):
    conn = open_db(tmp_path / "x.duckdb")
    try:
        rec = Recorder(conn)
        from edgetui.records import RunInfo, TaskInfo

        job = FinalizeJob("h/r/t", RunInfo(host="h", run_id="r", task_id="t"), TaskInfo(task_id="t"), [], None)
        with pytest.raises(ValueError, match="twice"):
            finalize_runs(rec, [job, FinalizeJob(**{**job.__dict__})])
    finally:
        conn.close()
