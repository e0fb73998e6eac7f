"""DuckDB schema of the edgetui database, versioned and migrated on open.

Tables (all times epoch seconds UTC, DOUBLE; pass rates 0–1; scores raw task
units unless named ``*_0_100``):

* ``meta(key, value)`` — ``schema_version`` among others.
* ``runs`` — one row per run (host + run id + task id); aggregates are
  recomputed by the recorder after every ingest of that run.
* ``tasks`` — task settings (selection policy, score direction, rescale...).
* ``events`` — every event (see :mod:`edgetui.events`); ``event_id`` is stable.
* ``submissions`` / ``test_results`` — graded rounds and their per-test rows,
  with best-so-far under the task's selection policy.
* ``annotations`` — user labels and notes on an event or a moment (``label``, ``text``; a
  moment's annotation is on its round's judge-result event and keeps the ``round``).
* ``source_cursors`` — how far each source file of each run has been recorded
  (generation + byte offset + parser state), committed with the events.
* ``prices`` — the editable price table (USD per million tokens).
* ``tombstones`` — runs forgotten with ``edgetui forget`` (their raw files untouched; a scan of a
  watched root skips them until ``edgetui ingest --unforget``).
* ``run_tags`` — names given to runs with ``edgetui tag``.
* ``record_keys(run_key, rkey, event_id)`` — the Claude Code message ids (``m:…``) and uuids (``u:…``)
  of each run's transcript events, to count records repeated across runs once (:mod:`edgetui.store.repeated_records`).
* ``fits`` — fitted curves stored by ``edgetui fit --store`` (derived, rebuildable: method,
  version, unrounded parameters, optimiser status, flags, intervals, the points fitted).
* ``team_sync`` / ``team_annotations`` — what ``edgetui sync`` pushed and pulled (docs/team.md).
* ``moments`` — detected moments (:mod:`edgetui.record.moments_table`, :mod:`edgetui.replay.moments`): derived, rebuilt on
  demand, keyed by (run, detector, version, round of the new best); ``score_before`` /
  ``score_after`` / ``gain`` / ``noise`` / ``headroom`` in the chart's units (task units, or the
  pass rate × 100), ``lead_time_s`` seconds, ``confidence`` 0–1, ``idx`` the round's position
  among the graded rounds in result-known order.
"""

from __future__ import annotations

import duckdb

from edgetui.store.column_meanings import column_comment_statements
from edgetui.store.ready_views import view_statements
from edgetui.store.repeated_records import recount_transcript_runs

SCHEMA_VERSION = 14

_V1 = [
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_key VARCHAR PRIMARY KEY,
        host VARCHAR NOT NULL, run_id VARCHAR NOT NULL, task_id VARCHAR NOT NULL,
        run_dir VARCHAR, layout VARCHAR, agent VARCHAR, model VARCHAR, agent_format VARCHAR,
        timeout_s DOUBLE, eval_interval_s DOUBLE,
        started_at DOUBLE, ended_at DOUBLE, last_event_at DOUBLE, utc_offset_s DOUBLE,
        status VARCHAR, infra_error BOOLEAN, resume_count INTEGER, is_sample BOOLEAN DEFAULT FALSE,
        selection VARCHAR, score_direction VARCHAR, policy_assumed BOOLEAN, score_task BOOLEAN,
        best_round VARCHAR, best_score DOUBLE, best_pass_rate DOUBLE, best_score_0_100 DOUBLE,
        agent_submissions INTEGER, auto_submissions INTEGER, game_sessions INTEGER,
        n_events BIGINT, n_parse_errors BIGINT, n_tool_calls BIGINT,
        input_tokens BIGINT, output_tokens BIGINT, cache_read_tokens BIGINT, cache_write_tokens BIGINT,
        cost_usd DOUBLE, stated_cost_usd DOUBLE,
        config JSON, final JSON, ingested_at DOUBLE
    )""",
    """CREATE TABLE IF NOT EXISTS tasks (
        task_id VARCHAR PRIMARY KEY, name VARCHAR, category VARCHAR,
        selection VARCHAR, score_direction VARCHAR, rescale JSON, parser VARCHAR,
        game_mode BOOLEAN, eval_timeout INTEGER, source_path VARCHAR, assumed BOOLEAN
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        event_id VARCHAR PRIMARY KEY,
        run_key VARCHAR NOT NULL, kind VARCHAR NOT NULL,
        t DOUBLE, t_source VARCHAR,
        source VARCHAR NOT NULL, generation VARCHAR, "offset" BIGINT, sub INTEGER,
        summary VARCHAR, level VARCHAR, segment INTEGER, agent_format VARCHAR,
        message_id VARCHAR, tool_use_id VARCHAR, parent_tool_use_id VARCHAR, tool_name VARCHAR,
        is_error BOOLEAN, round VARCHAR, model VARCHAR,
        input_tokens BIGINT, output_tokens BIGINT, cache_read_tokens BIGINT, cache_write_tokens BIGINT,
        stated_cost_usd DOUBLE,
        data JSON, raw BLOB
    )""",
    """CREATE TABLE IF NOT EXISTS submissions (
        run_key VARCHAR NOT NULL, round VARCHAR NOT NULL, kind VARCHAR, n INTEGER,
        submission_id VARCHAR, status VARCHAR,
        t DOUBLE, elapsed_s DOUBLE,
        submitted_at DOUBLE, graded_at DOUBLE, seen_at DOUBLE,
        pass_rate DOUBLE, score DOUBLE, score_flag VARCHAR, score_0_100 DOUBLE, max_score DOUBLE,
        valid BOOLEAN, total_tests INTEGER, passed INTEGER, failed INTEGER, errors INTEGER,
        timed_out BOOLEAN, runtime_s DOUBLE, summary VARCHAR, metrics JSON, error VARCHAR,
        is_new_best BOOLEAN, best_round VARCHAR, best_score DOUBLE, best_pass_rate DOUBLE,
        PRIMARY KEY (run_key, round)
    )""",
    """CREATE TABLE IF NOT EXISTS test_results (
        run_key VARCHAR NOT NULL, round VARCHAR NOT NULL, idx INTEGER NOT NULL,
        name VARCHAR, status VARCHAR, message VARCHAR, score DOUBLE, weight DOUBLE, origin VARCHAR,
        PRIMARY KEY (run_key, round, idx)
    )""",
    """CREATE TABLE IF NOT EXISTS annotations (
        annotation_id VARCHAR PRIMARY KEY, run_key VARCHAR NOT NULL, event_id VARCHAR,
        t DOUBLE, text VARCHAR, tags VARCHAR, created_at DOUBLE
    )""",
    """CREATE TABLE IF NOT EXISTS source_cursors (
        run_key VARCHAR NOT NULL, source VARCHAR NOT NULL, path VARCHAR,
        generation VARCHAR, "offset" BIGINT, state JSON, size BIGINT, mtime DOUBLE, inode BIGINT,
        done BOOLEAN, updated_at DOUBLE,
        PRIMARY KEY (run_key, source)
    )""",
    """CREATE TABLE IF NOT EXISTS prices (
        model_pattern VARCHAR PRIMARY KEY, input_per_mtok DOUBLE, output_per_mtok DOUBLE,
        cache_read_per_mtok DOUBLE, cache_write_per_mtok DOUBLE
    )""",
    """CREATE INDEX IF NOT EXISTS events_run ON events(run_key)""",
]

#: version 6 (moments, annotation columns), also applied again as version 9 (all idempotent)
_V6 = [
    """CREATE TABLE IF NOT EXISTS moments (
       run_key VARCHAR NOT NULL, detector VARCHAR NOT NULL, version INTEGER NOT NULL, round VARCHAR NOT NULL,
       idx INTEGER, t DOUBLE, elapsed_s DOUBLE, score_before DOUBLE, score_after DOUBLE, gain DOUBLE,
       noise DOUBLE, headroom DOUBLE, lead_time_s DOUBLE, confidence DOUBLE, provisional BOOLEAN,
       components JSON, evidence JSON, behaviour JSON, params JSON, built_at DOUBLE,
       PRIMARY KEY (run_key, detector, version, round))""",
    # annotations (edgetui/record/annotations.py): a label, the round of a moment's judge result, edits
    "ALTER TABLE annotations ADD COLUMN IF NOT EXISTS label VARCHAR",
    "ALTER TABLE annotations ADD COLUMN IF NOT EXISTS round VARCHAR",
    "ALTER TABLE annotations ADD COLUMN IF NOT EXISTS updated_at DOUBLE",
]

#: version -> statements bringing the schema from version-1 to version.
#: 2: secrets re-scrubbed with the rules of :mod:`edgetui.redact` (the data step is
#: :func:`edgetui.store.migrate_rescrub.rescrub_database`, run by :func:`migrate` in the same transaction,
#: then the file is rewritten by :func:`edgetui.store.database.open_db`)
#: 3: forgotten runs (tombstones: a scan of a watched root does not bring them back) and run tags
MIGRATIONS: dict[int, list[str]] = {
    1: _V1,
    2: [],  # the data step, for files of version 1 only: see migrate()
    3: [
        """CREATE TABLE IF NOT EXISTS tombstones (run_key VARCHAR PRIMARY KEY, run_dir VARCHAR, forgotten_at DOUBLE)""",
        """CREATE TABLE IF NOT EXISTS run_tags (run_key VARCHAR NOT NULL, tag VARCHAR NOT NULL, created_at DOUBLE,
           PRIMARY KEY (run_key, tag))""",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS n_messages BIGINT",
    ],
    #: 4: why a run ended as it did, in its source's words (a harness that crashed before the agent)
    4: [
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS n_messages BIGINT",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS status_reason VARCHAR",
    ],
    #: 5: a bare transcript's run is keyed by its content, not its file name (``.../transcript-<id>``):
    #: runs keyed ``host/<stem>/transcript`` are re-keyed from their file (the data step in migrate())
    5: [],
    #: 6: detected moments, their own table (never mixed into events)
    6: _V6,
    #: 7: records repeated across runs (a resumed transcript copying an earlier file's records) are
    #: counted once, by the earliest run (edgetui/store/repeated_records.py): their keys, and what a run leaves out
    #: (the data step in migrate(): the transcript runs already recorded are counted again)
    7: [
        "CREATE TABLE IF NOT EXISTS record_keys (run_key VARCHAR NOT NULL, rkey VARCHAR NOT NULL, event_id VARCHAR)",
        "CREATE INDEX IF NOT EXISTS record_keys_run ON record_keys(run_key)",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS n_repeated BIGINT",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS repeated_from VARCHAR",
    ],
    #: 8: fitted curves (``edgetui fit --store``): method, version, unrounded parameters, status, flags;
    #: the forecast's shape prior is read from them
    8: [
        """CREATE TABLE IF NOT EXISTS fits (
        fit_id VARCHAR PRIMARY KEY, created_at DOUBLE, source VARCHAR, grouping JSON,
        run_key VARCHAR, task_id VARCHAR, model VARCHAR,
        form VARCHAR NOT NULL, method VARCHAR NOT NULL, version INTEGER NOT NULL,
        time_basis VARCHAR, aggregation VARCHAR,
        params JSON, smax DOUBLE, t_mid DOUBLE, beta DOUBLE, t_half DOUBLE,
        r2 DOUBLE, rmse DOUBLE, n INTEGER, status INTEGER, flags VARCHAR, findings BOOLEAN,
        intervals JSON, hours JSON, scores JSON
    )"""
    ],
    #: 9: version 6's statements again (all idempotent), for files stamped 7 or 8 by a build in which
    #: version 6 was still empty: they get the moments table and the annotation columns too
    9: _V6,
    #: 10: SForge's formats after 1.1.0 (docs/sforge-formats.md): the format a run used, whether the
    #: round SForge selects is invalid, the trajectory metrics, the work and judge images
    10: [
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS format VARCHAR",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS best_invalid BOOLEAN",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS trajectory_metrics JSON",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS work_image VARCHAR",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS judge_image VARCHAR",
    ],
    #: 11: how far a transcript event placed between two anchors may be off (docs/transcript-formats.md
    #: §9): the times of the anchors around it (null when its time is an anchor's or was seen)
    11: [
        "ALTER TABLE events ADD COLUMN IF NOT EXISTS t_lo DOUBLE",
        "ALTER TABLE events ADD COLUMN IF NOT EXISTS t_hi DOUBLE",
    ],
    #: 12: the ready-made views (edgetui/store/ready_views.py, docs/database.md): best so far, tool calls,
    #: idle gaps, spend over time, alarms, moments' why, the test matrix, a run id's tasks. A change to a
    #: view is a new version that runs view_statements() again (CREATE OR REPLACE)
    12: view_statements(),
    #: 13: every column of every table and ready-made view has its meaning as a DuckDB comment
    #: (edgetui/store/column_meanings.py; the statements depend on the columns there: see migrate())
    13: [],
    #: 14: the team record's local bookkeeping (edgetui/record/team_record.py, docs/team.md): who recorded
    #: each run (machine, person), the signature last pushed, the push number pulled; each annotation's
    #: team version and what was last synced of it
    14: [
        """CREATE TABLE IF NOT EXISTS team_sync (run_key VARCHAR PRIMARY KEY, machine VARCHAR, person VARCHAR,
           pushed VARCHAR, seq BIGINT)""",
        """CREATE TABLE IF NOT EXISTS team_annotations (annotation_id VARCHAR PRIMARY KEY, version BIGINT,
           synced VARCHAR)""",
    ],
}


def current_version(conn: duckdb.DuckDBPyConnection) -> int:
    has_meta = conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'").fetchall()[0][0]
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    if not row:
        return 0
    try:
        return int(row[0][0])
    except (TypeError, ValueError):
        raise ValueError(
            f"the database's schema version {row[0][0]!r} is not a number: not a database "
            "edgetui wrote, or a damaged one"
        ) from None


def rewrite_pending(conn: duckdb.DuckDBPyConnection) -> bool:
    """Does the file still need the rewrite of the version-2 migration (:mod:`edgetui.store.migrate_rescrub`)?"""
    if current_version(conn) < 2:
        return False
    return bool(conn.execute("SELECT count(*) FROM meta WHERE key = 'rewrite_pending'").fetchall()[0][0])


def data_steps():
    """The module of the migrations' data steps (``rekey_transcript_runs``, ``rescrub_database``,
    ``rewrite_file``): loaded only for a file of an earlier version."""
    # lazy: the data steps load the parsers and pyarrow, which opening a current file (`edgetui runs`) never needs
    from edgetui.store import migrate_data

    return migrate_data


def migrate(conn: duckdb.DuckDBPyConnection) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; returns the version found before.

    Raises ``RuntimeError`` if the file was written by a newer edgetui, ``ValueError``
    when its version is not a number.
    """
    found = current_version(conn)
    if found > SCHEMA_VERSION:
        raise RuntimeError(
            f"database schema version {found} is newer than this edgetui ({SCHEMA_VERSION}); upgrade edgetui"
        )
    for v in range(found + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN TRANSACTION")
        try:
            for stmt in MIGRATIONS.get(v, []):
                conn.execute(stmt)
            if v >= 13 and v == SCHEMA_VERSION:  # every column's meaning, once its table exists (the last step)
                for stmt in column_comment_statements(conn):
                    conn.execute(stmt)
            if v == 7 and found >= 1:  # transcript runs recorded before: their keys and totals now
                recount_transcript_runs(conn)
            if v == 5 and found >= 1:
                data_steps().rekey_transcript_runs(conn)
            if v == 2 and found == 1:  # rows written by an earlier version: scrub them again
                data_steps().rescrub_database(conn)
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('rewrite_pending', '1')")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(v)])
            conn.execute("COMMIT")
        except Exception:
            try:  # a COMMIT that failed (a full disk) has ended the transaction already
                conn.execute("ROLLBACK")
            except duckdb.Error:  # the transaction ended already (a failed COMMIT): the error is raised below
                pass
            raise
    return found
