"""The meaning of every column of the database's tables and ready-made views, written as DuckDB's own
``COMMENT ON COLUMN`` (schema version 13): the SQL screen's schema tree shows them, and so does
``SELECT table_name, column_name, comment FROM duckdb_columns()``.

A column's meaning is :data:`BY_TABLE`'s for that table (or view), else :data:`SHARED`'s for its
name (a name that means the same wherever it appears), else the ready-made views' own
(:data:`edgetui.store.ready_views.COLUMN_MEANINGS`). ``tests/test_column_meanings.py`` checks that
no column of a new database is left without one.
"""

from __future__ import annotations

from typing import Optional

import duckdb

from edgetui.store.ready_views import COLUMN_MEANINGS as VIEW_COLUMN_MEANINGS

__all__ = ["SHARED", "BY_TABLE", "meaning_of", "column_comment_statements"]

#: column name -> meaning, wherever the name appears
SHARED: dict[str, str] = {
    "run_key": "the run: host/run_id/task_id",
    "event_id": "the event (events.event_id), stable across ingests",
    "round": "the graded round's name (agent-1, auto-3, ...)",
    "host": "the machine the run ran on (local, or a host's name)",
    "run_id": "SForge's run id (the runs root's folder: many tasks share it)",
    "task_id": "the task's id (its folder under the run id)",
    "model": "the model's name as the run gives it",
    "agent_format": "the transcript format the agent wrote (claude-code, codex, ...)",
    "kind": "what kind of row it is (see the table's meaning)",
    "summary": "a one-line summary",
    "status": "the status, in the source's words",
    "t": "when, epoch seconds UTC",
    "elapsed_s": "seconds from the run's start",
    "started_at": "when it started, epoch seconds UTC",
    "ended_at": "when it ended, epoch seconds UTC",
    "created_at": "when the row was made, epoch seconds UTC",
    "updated_at": "when the row last changed, epoch seconds UTC",
    "submitted_at": "when the submission was sent, epoch seconds UTC",
    "score": "the task's raw score (its own units)",
    "pass_rate": "tests passed ÷ tests, 0–1",
    "score_0_100": "SForge's rescaled score, 0–100",
    "best_round": "the round that was best so far (by the task's selection policy)",
    "best_score": "the best score so far (by the task's selection policy)",
    "best_pass_rate": "the pass rate of the best round so far",
    "is_new_best": "this round became the best so far",
    "valid": "the judge found the submission valid",
    "passed": "tests passed",
    "total_tests": "tests run",
    "input_tokens": "input tokens (not cached)",
    "output_tokens": "output tokens",
    "cache_read_tokens": "input tokens read from the prompt cache",
    "cache_write_tokens": "input tokens written to the prompt cache",
    "stated_cost_usd": "dollars as the transcript itself states them (total_cost_usd)",
    "cost_usd": "dollars by the price table",
    "tool_name": "the tool's name",
    "tool_use_id": "the tool call's id in the transcript",
    "message": "the message, as written",
    "level": "info, warning or error",
    "n": "the count (see the table's meaning)",
    "idx": "the position (see the table's meaning)",
    "source": "where the row came from",
    "offset": 'byte offset in the source file (quote it: "offset")',
    "generation": "the source file's generation: inode and a hash of its first 4 KiB (a rewritten file is new)",
    "params": "parameters, as JSON",
    "evidence": "the event ids of the evidence, as JSON",
    "detector": "the detector that found the moment (new_best, change_point, reframe, ...)",
    "score_before": "the score before the moment, in the chart's units",
    "score_after": "the score after the moment, in the chart's units",
    "gain": "score_after minus score_before",
    "lead_time_s": "seconds from the behaviour change to the score moving",
    "confidence": "how sure the detector is, 0–1",
    "provisional": "found while the run was live: may change when it is rebuilt",
    "known_at": "when the result was known, epoch seconds UTC",
    "test": "the test's name",
    "selection": "the task's selection policy (pass_rate_first, score_first, valid_then_score)",
    "score_direction": "maximize or minimize",
    "run_dir": "the run's folder on its host",
    "tag": "a name given with `edgetui tag`",
    "tags": "tags, comma-separated",
    "text": "the note's text",
    "label": "a short label",
    "version": "the version of the method that made the row",
}

#: (table or view, column) -> meaning, where the table gives the name a meaning of its own
BY_TABLE: dict[tuple[str, str], str] = {
    # the team record's local bookkeeping (edgetui/record/team_record.py, docs/team.md)
    ("team_sync", "machine"): "the machine that recorded the run (the team record's host part for a local run)",
    ("team_sync", "person"): "who recorded the run (the member's name in the team record)",
    ("team_sync", "pushed"): "the run's signature when it was last pushed (unchanged: not pushed again)",
    ("team_sync", "seq"): "the team record's push number this run was last pulled at",
    ("team_annotations", "annotation_id"): "the annotation (annotations.annotation_id)",
    ("team_annotations", "version"): "the annotation's version in the team record (the server's commit order)",
    ("team_annotations", "synced"): "what was last synced of the annotation (its content's digest, or deleted)",
    # meta
    ("meta", "key"): "a setting's name (schema_version, ...)",
    ("meta", "value"): "its value, as text",
    # runs
    ("runs", "layout"): "how the run was found: an SForge run folder, a bare transcript, ...",
    ("runs", "agent"): "the agent (claude-code, codex, ...)",
    ("runs", "timeout_s"): "the run's time limit in seconds",
    ("runs", "eval_interval_s"): "seconds between automatic evaluations",
    ("runs", "last_event_at"): "the time of its last event, epoch seconds UTC",
    ("runs", "utc_offset_s"): "the run's clock's offset from UTC, seconds",
    ("runs", "status"): "running, finished, aborted, stalled, ...",
    ("runs", "infra_error"): "the harness failed (not the agent)",
    ("runs", "resume_count"): "how many times the run was resumed",
    ("runs", "is_sample"): "one of the bundled sample runs",
    ("runs", "policy_assumed"): "no task JSON: SForge's default policy was assumed",
    ("runs", "score_task"): "the task is ranked by score (else by pass rate)",
    ("runs", "agent_submissions"): "rounds the agent submitted",
    ("runs", "auto_submissions"): "rounds the automatic evaluation submitted",
    ("runs", "game_sessions"): "game sessions played (game tasks)",
    ("runs", "n_events"): "events recorded",
    ("runs", "n_parse_errors"): "records that did not parse (kept as parse_error events)",
    ("runs", "n_tool_calls"): "tool calls (records another run holds left out)",
    ("runs", "input_tokens"): "the run's input tokens (records another run holds left out)",
    ("runs", "output_tokens"): "the run's output tokens (records another run holds left out)",
    ("runs", "cache_read_tokens"): "the run's cache-read tokens",
    ("runs", "cache_write_tokens"): "the run's cache-write tokens",
    ("runs", "cost_usd"): "the run's dollars by the price table",
    ("runs", "stated_cost_usd"): "the run's dollars as its transcript states them",
    ("runs", "config"): "the run's configuration, as JSON",
    ("runs", "final"): "SForge's final result, as JSON",
    ("runs", "ingested_at"): "when it was last recorded, epoch seconds UTC",
    ("runs", "n_messages"): "model messages (records another run holds left out)",
    ("runs", "status_reason"): "why the run ended as it did, in its source's words",
    ("runs", "n_repeated"): "records left out because an earlier run holds them",
    ("runs", "repeated_from"): "the runs that count the records left out",
    ("runs", "format"): "the SForge format the run was written in",
    ("runs", "best_invalid"): "the round SForge selects is invalid",
    ("runs", "trajectory_metrics"): "SForge's trajectory metrics, as JSON",
    ("runs", "work_image"): "the agent's container image",
    ("runs", "judge_image"): "the judge's container image",
    ("runs", "best_score"): "the best score (by the task's selection policy)",
    ("runs", "best_pass_rate"): "the best round's pass rate",
    ("runs", "best_round"): "the best round (by the task's selection policy)",
    ("runs", "started_at"): "when the run started, epoch seconds UTC",
    ("runs", "ended_at"): "when the run ended, epoch seconds UTC (null while running)",
    # tasks
    ("tasks", "name"): "the task's name",
    ("tasks", "category"): "the task's category",
    ("tasks", "rescale"): "how its score maps to 0–100, as JSON",
    ("tasks", "parser"): "the judge's result parser",
    ("tasks", "game_mode"): "a game task (scored by sessions played)",
    ("tasks", "eval_timeout"): "the judge's time limit, seconds",
    ("tasks", "source_path"): "the task JSON it was read from",
    ("tasks", "assumed"): "no task JSON: SForge's defaults",
    # events
    ("events", "kind"): "the event's kind (message, tool_call, tool_result, judge_result, ...)",
    ("events", "source"): "the file it was read from (its name in the run, or a transcript's path)",
    ("events", "sub"): "the event's place within its record",
    ("events", "summary"): "a one-line summary of the event",
    ("events", "segment"): "the transcript segment (a resumed session starts a new one)",
    ("events", "message_id"): "the model message's id",
    ("events", "parent_tool_use_id"): "the tool call a sub-agent's event belongs to",
    ("events", "is_error"): "a tool result that is an error",
    ("events", "round"): "the round of a submission or judge event",
    ("events", "model"): "the model of a model message",
    ("events", "level"): "info, warning or error (log lines, alarms)",
    # submissions
    ("submissions", "kind"): "agent, auto, game, manual",
    ("submissions", "n"): "the round's number within its kind",
    ("submissions", "submission_id"): "SForge's submission id",
    ("submissions", "status"): "graded, pending, failed, ...",
    ("submissions", "graded_at"): "when the judge finished, epoch seconds UTC",
    ("submissions", "seen_at"): "evolve_state.json's at: when the agent saw the result",
    ("submissions", "score_flag"): "a raw score that was not a finite number: nan, inf, -inf, non_numeric",
    ("submissions", "max_score"): "the highest score the task allows",
    ("submissions", "failed"): "tests failed",
    ("submissions", "errors"): "tests that errored",
    ("submissions", "timed_out"): "the judge ran out of time",
    ("submissions", "runtime_s"): "the judge's run time, seconds",
    ("submissions", "summary"): "the judge's summary line",
    ("submissions", "metrics"): "the judge's metrics, as JSON",
    ("submissions", "error"): "the judge's error, if any",
    ("submissions", "is_new_best"): "this round became the best so far",
    ("submissions", "best_round"): "the best round so far, this one included",
    # test_results
    ("test_results", "idx"): "the test's place in the round's report",
    ("test_results", "name"): "the test's name",
    ("test_results", "status"): "passed, failed, error, skipped",
    ("test_results", "message"): "the test's message",
    ("test_results", "score"): "the test's own score",
    ("test_results", "weight"): "the test's weight in the round's score",
    ("test_results", "origin"): "the report the test came from",
    # annotations
    ("annotations", "annotation_id"): "the annotation's id",
    ("annotations", "event_id"): "the event it is on (a moment's: its round's judge_result)",
    ("annotations", "t"): "the time of the event it is on",
    ("annotations", "round"): "a moment's round (a moment's annotation)",
    # source_cursors
    ("source_cursors", "source"): "the source file's name in the run",
    ("source_cursors", "path"): "the file's path",
    ("source_cursors", "offset"): 'bytes of it recorded (quote it: "offset")',
    ("source_cursors", "state"): "the parser's state at that offset, as JSON",
    ("source_cursors", "size"): "the file's size when last read, bytes",
    ("source_cursors", "mtime"): "the file's mtime when last read, epoch seconds",
    ("source_cursors", "inode"): "the file's inode when last read",
    ("source_cursors", "done"): "the file is read to its end and will not grow",
    # prices
    ("prices", "model_pattern"): "a pattern of model names (the longest match applies)",
    ("prices", "input_per_mtok"): "USD per million input tokens",
    ("prices", "output_per_mtok"): "USD per million output tokens",
    ("prices", "cache_read_per_mtok"): "USD per million cache-read tokens",
    ("prices", "cache_write_per_mtok"): "USD per million cache-write tokens",
    # tombstones
    ("tombstones", "run_dir"): "the forgotten run's folder (its files are untouched)",
    ("tombstones", "forgotten_at"): "when it was forgotten, epoch seconds UTC",
    # record_keys
    ("record_keys", "rkey"): "a Claude Code message id (m:…) or uuid (u:…)",
    ("record_keys", "event_id"): "the event carrying it",
    # fits
    ("fits", "fit_id"): "the fit's id",
    ("fits", "source"): "recorded, or the file the fits table was read from",
    ("fits", "grouping"): "what was fitted together, as JSON",
    ("fits", "run_key"): "the run fitted (null for a group)",
    ("fits", "task_id"): "the task fitted",
    ("fits", "model"): "the model fitted",
    ("fits", "form"): "the curve's form (logistic, log, ...)",
    ("fits", "method"): "the fitting method",
    ("fits", "time_basis"): "wall_clock or active time",
    ("fits", "aggregation"): "how several runs' points were combined",
    ("fits", "smax"): "the curve's ceiling",
    ("fits", "t_mid"): "hours to half the ceiling",
    ("fits", "beta"): "the curve's steepness",
    ("fits", "t_half"): "hours to half the gain",
    ("fits", "r2"): "R² of the fit",
    ("fits", "rmse"): "root mean square error of the fit",
    ("fits", "n"): "points fitted",
    ("fits", "status"): "the optimiser's status code",
    ("fits", "flags"): "what makes the fit doubtful, space-separated",
    ("fits", "findings"): "the fit is reported (not withheld)",
    ("fits", "intervals"): "the bootstrap's 80 % ranges, as JSON",
    ("fits", "hours"): "the points' hours, as JSON",
    ("fits", "scores"): "the points' scores, as JSON",
    # moments
    ("moments", "idx"): "the round's place among the graded rounds, result-known order",
    ("moments", "t"): "when the round's result was known, epoch seconds UTC",
    ("moments", "noise"): "the score's noise around the moment, chart units",
    ("moments", "headroom"): "how far the score could still rise, chart units",
    ("moments", "components"): "the sub-scores that moved, as JSON",
    ("moments", "behaviour"): "the behaviour change found before it, as JSON",
    ("moments", "built_at"): "when the moment was built, epoch seconds UTC",
    # run_tags
    ("run_tags", "created_at"): "when the tag was given, epoch seconds UTC",
    # ready-made views: the columns the views' own COLUMN_MEANINGS leave to the name
    ("best_so_far", "kind"): "agent, auto, game, manual",
    ("best_so_far", "n"): "the round's number within its kind",
    ("best_so_far", "status"): "graded, pending, failed, ...",
    ("best_so_far", "elapsed_s"): "seconds from the run's start to the result known",
    ("tool_calls", "called_at"): "when the tool was called, epoch seconds UTC",
    ("tool_calls", "answered_at"): "when its result came, epoch seconds UTC",
    ("tool_calls", "exit_code"): "the command's exit code (shell tools)",
    ("tool_calls", "call"): "the call's summary",
    ("tool_calls", "result"): "the result's summary",
    ("tool_calls", "round"): "the round the call was made in",
    ("tool_calls", "result_event_id"): "the result's event",
    ("idle_gaps", "started_at"): "when the pause began (the event before it)",
    ("idle_gaps", "ended_at"): "when the pause ended (the event after it)",
    ("idle_gaps", "before_kind"): "the kind of the event before the pause",
    ("idle_gaps", "before_summary"): "the summary of the event before the pause",
    ("idle_gaps", "after_kind"): "the kind of the event after the pause",
    ("idle_gaps", "after_summary"): "the summary of the event after the pause",
    ("spend_over_time", "t"): "the event's time, epoch seconds UTC",
    ("spend_over_time", "tokens"): "this event's tokens, all four kinds",
    ("alarms", "t"): "when the row was written, epoch seconds UTC",
    ("alarms", "rule"): "the rule that raised the alarm",
    ("alarms", "message"): "what the alarm said",
    ("alarms", "raised_at"): "when the alarm was raised, epoch seconds UTC",
    ("alarms", "alarm_key"): "the alarm's key (an acknowledgement names it)",
    ("alarms", "summary"): "the event's summary line",
    ("moment_why", "t"): "when the round's result was known, epoch seconds UTC",
    ("moment_why", "annotation_label"): "the label of a user's annotation on the moment",
    ("moment_why", "annotation"): "the text of a user's annotation on the moment",
    ("test_matrix", "status"): "passed, failed, error, skipped",
    ("test_matrix", "passed"): "the test passed in this round",
    ("test_matrix", "score"): "the test's own score",
    ("test_matrix", "message"): "the test's message",
    ("test_matrix", "idx"): "the test's place in the round's report",
    ("run_id_tasks", "status"): "the task's run's status",
    ("run_id_tasks", "started_at"): "when the task's run started, epoch seconds UTC",
    ("run_id_tasks", "n_tasks"): "tasks under the run id",
    ("run_id_tasks", "mean_best_0_100"): "the mean of the tasks' best_0_100",
    ("run_id_tasks", "group_started_at"): "when the run id's first task started, epoch seconds UTC",
}


def meaning_of(table: str, column: str) -> Optional[str]:
    """The meaning of ``table``.``column`` (``None`` when none is written down)."""
    return VIEW_COLUMN_MEANINGS.get((table, column)) or BY_TABLE.get((table, column)) or SHARED.get(column)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def column_comment_statements(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """``COMMENT ON COLUMN`` for every column of the database's tables and views that has a meaning."""
    cols = conn.execute(
        "SELECT table_name, column_name FROM duckdb_columns() "
        "WHERE database_name = current_database() AND schema_name = 'main' ORDER BY table_name, column_index"
    ).fetchall()
    out = []
    for table, column in cols:
        meaning = meaning_of(table, column)
        if meaning:
            out.append(f'COMMENT ON COLUMN "{table}"."{column}" IS {_quoted(meaning)}')
    return out
