"""Turns a Codex ``thread_rolled_back`` record undid, marked on their events (docs/transcript-formats.md
§7.3). Core: no Textual.

The record comes after the turns it takes back, so its parser can only name them
(``data.undone_turns``: the offsets of their user messages). After each ingest or live refresh
:func:`mark_rolled_back` marks every event of the same file from the first undone turn's offset up
to the rollback record: ``data.rolled_back`` = the rollback's byte offset and a ``↶ `` before the
summary, so the list shows which rows the model no longer sees. Idempotent (an event marked once
is left alone); the events stay as recorded otherwise.
"""

from __future__ import annotations

from edgetui.store.sql_in_list import in_list

__all__ = ["UNDONE_MARK", "mark_rolled_back"]

#: what an undone event's summary starts with
UNDONE_MARK = "↶ "


def mark_rolled_back(conn, run_keys: list[str]) -> int:
    """Mark the events undone by the rollbacks of the runs ``run_keys``; returns how many were
    marked now. (The ``LIKE`` is a prefilter: a string search skips parsing the JSON of the run's
    other events.)"""
    if not run_keys:
        return 0
    ranges = conn.execute(
        f"""SELECT run_key, source, generation, "offset",
                   min((u->>'$.offset')::BIGINT) AS first_undone
            FROM (SELECT run_key, source, generation, "offset",
                         unnest(CAST(data->'$.undone_turns' AS JSON[])) AS u
                  FROM events WHERE {in_list("run_key", run_keys)} AND kind = 'system'
                    AND data LIKE '%"thread_rolled_back"%' AND data->>'$.event' = 'thread_rolled_back')
            GROUP BY run_key, source, generation, "offset\"""",
        run_keys,
    ).fetchall()
    marked = 0
    for run_key, source, generation, at, first in ranges:
        if first is None or first >= at:
            continue
        marked += conn.execute(
            """UPDATE events SET summary = ? || summary,
                      data = json_merge_patch(coalesce(data, '{}'), json_object('rolled_back', ?::BIGINT))
               WHERE run_key = ? AND source = ? AND generation = ? AND "offset" >= ? AND "offset" < ?
                 AND (data->>'$.rolled_back') IS NULL""",
            [UNDONE_MARK, at, run_key, source, generation, first, at],
        ).fetchone()[0]
    return marked
