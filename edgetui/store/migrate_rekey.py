"""Schema 4 -> 5: bare transcripts keyed by content instead of by file name.

Earlier versions keyed a bare transcript's run ``host/<file stem>/transcript``, so two different
``session.jsonl`` files in two folders became one run. Each such run is re-keyed
``host/<stem>/transcript-<content id>`` (:func:`edgetui.parsers.transcript_identity.transcript_task_id`) from its
file when the file is still there; every row of the run moves with it and event ids are
recomputed (they hash the run key). Runs whose file is gone keep their key.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from edgetui.store.one_row import one_row

from edgetui.events import event_id
from edgetui.parsers.base import file_generation
from edgetui.parsers.transcript_identity import transcript_task_id

_TABLES = ("submissions", "test_results", "source_cursors", "annotations", "run_tags", "tombstones")


def rekey_transcript_runs(conn: duckdb.DuckDBPyConnection) -> int:
    """Re-key the old-style transcript runs (the caller holds the transaction); returns how many."""
    rows = conn.execute(
        "SELECT run_key, host, run_id, run_dir FROM runs WHERE layout = 'transcript' AND task_id = 'transcript'"
    ).fetchall()
    moved = 0
    for old, host, run_id, run_dir in rows:
        if not run_dir or not Path(run_dir).is_file():
            continue
        task = transcript_task_id(Path(run_dir))
        new = f"{host}/{run_id}/{task}"
        if conn.execute("SELECT 1 FROM runs WHERE run_key = ?", [new]).fetchall():
            continue  # (already recorded under its new key: leave both for the user to forget one)
        gen = file_generation(Path(run_dir))
        # only this file's events move (two same-named files were merged into one run: the other
        # file's generations stay under the old key, and its next ingest gives it a run of its own)
        evs = [
            e
            for e in conn.execute(
                'SELECT event_id, source, generation, "offset", sub FROM events WHERE run_key = ?', [old]
            ).fetchall()
            if e[2] is None or (e[2].split(".", 1)[0] == gen) or e[1] != Path(run_dir).name
        ]
        left = one_row(conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [old]))[0] - len(evs)
        conn.execute("CREATE OR REPLACE TEMP TABLE _rekey (old_id VARCHAR, new_id VARCHAR)")
        if evs:
            conn.executemany(
                "INSERT INTO _rekey VALUES (?, ?)", [(e[0], event_id(new, e[1], e[2], e[3], e[4])) for e in evs]
            )
            conn.execute(
                "UPDATE events SET event_id = r.new_id, run_key = ? FROM _rekey r WHERE events.event_id = r.old_id",
                [new],
            )
            conn.execute(
                "UPDATE annotations SET event_id = r.new_id FROM _rekey r WHERE annotations.event_id = r.old_id"
            )
        conn.execute("DROP TABLE _rekey")
        for t in _TABLES:
            conn.execute(f"UPDATE {t} SET run_key = ? WHERE run_key = ?", [new, old])
        if left:  # the other file's events keep a run row of their own under the old key
            conn.execute("CREATE OR REPLACE TEMP TABLE _oldrun AS SELECT * FROM runs WHERE run_key = ?", [old])
        conn.execute("UPDATE runs SET run_key = ?, task_id = ? WHERE run_key = ?", [new, task, old])
        if left:
            conn.execute("INSERT INTO runs SELECT * FROM _oldrun")
            conn.execute("DROP TABLE _oldrun")
        moved += 1
    return moved
