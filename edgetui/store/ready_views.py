"""Ready-made views over the tables: the questions users ask of runs, answered by one ``SELECT``.

Each view is created by the schema's migration (version 12, :mod:`edgetui.store.schema`) with
``CREATE OR REPLACE VIEW`` and carries its meaning as DuckDB's own ``COMMENT ON VIEW`` (read back by
``duckdb_views().comment``, which the SQL screen's schema tree shows). docs/database.md lists them
with the example questions; ``tests/test_ready_views.py`` checks each against the bundled samples.

Every view that names one event has ``run_key`` and ``event_id`` columns, so a result row leads to
the replay at that event.
"""

from __future__ import annotations

__all__ = ["READY_VIEWS", "COLUMN_MEANINGS", "IDLE_GAP_S", "AGENT_KINDS", "view_statements"]

#: the shortest pause between two of the agent's own events that ``idle_gaps`` lists (seconds)
IDLE_GAP_S = 60

#: the events the agent's transcript gives (its activity): a pause between two of them is the agent idle
AGENT_KINDS = (
    "session_init",
    "agent_message",
    "user_message",
    "thinking",
    "tool_call",
    "tool_result",
    "stop_hook_block",
    "compaction",
    "token_usage",
    "agent_result",
    "agent_error",
)

_AGENT_KINDS_SQL = ", ".join(f"'{k}'" for k in AGENT_KINDS)

#: name -> (meaning, SELECT)
READY_VIEWS: dict[str, tuple[str, str]] = {
    "best_so_far": (
        "each graded round with the best so far under the task's selection policy, when it was sent, "
        "when its result was known (known_at, and what said so: known_by) and its judge_result event",
        """SELECT s.run_key, s.round, s.kind, s.n, s.status,
       s.submitted_at, s.t AS known_at, s.t - s.submitted_at AS known_after_s, s.elapsed_s,
       e.data->>'known_by' AS known_by,
       s.score, s.pass_rate, s.score_0_100, s.valid, s.passed, s.total_tests,
       s.is_new_best, s.best_round, s.best_score, s.best_pass_rate,
       e.event_id
FROM submissions s
LEFT JOIN (SELECT run_key, round, arg_max(event_id, t) AS event_id, arg_max(data, t) AS data
           FROM events WHERE kind = 'judge_result' GROUP BY run_key, round) e
  ON e.run_key = s.run_key AND e.round = s.round""",
    ),
    "tool_calls": (
        "each tool call with its result: when it was called and answered, how long it took "
        "(the tool's own duration_ms when it gives one, else result time minus call time), its exit code "
        "and whether it failed (an error result or a non-zero exit)",
        """SELECT c.run_key, c.event_id, c.tool_name, c.tool_use_id, c.t AS called_at, r.t AS answered_at,
       coalesce(TRY_CAST(r.data->>'duration_ms' AS DOUBLE) / 1000.0, r.t - c.t) AS duration_s,
       TRY_CAST(r.data->>'exit_code' AS INTEGER) AS exit_code,
       coalesce(r.is_error, FALSE) OR coalesce(TRY_CAST(r.data->>'exit_code' AS INTEGER), 0) <> 0 AS failed,
       r.event_id IS NULL AS unanswered,
       c.summary AS call, r.summary AS result, c.round, r.event_id AS result_event_id
FROM events c
LEFT JOIN (SELECT run_key, tool_use_id, arg_min(event_id, t) AS event_id, min(t) AS t,
                  arg_min(is_error, t) AS is_error, arg_min(data, t) AS data, arg_min(summary, t) AS summary
           FROM events WHERE kind = 'tool_result' AND tool_use_id IS NOT NULL GROUP BY run_key, tool_use_id) r
  ON r.run_key = c.run_key AND r.tool_use_id = c.tool_use_id
WHERE c.kind = 'tool_call'""",
    ),
    "idle_gaps": (
        f"pauses of {IDLE_GAP_S} s or more between two of the agent's own events (messages, thinking, tool "
        "calls and results): where the agent stalled, what came before (a tool call still waiting: "
        "waiting_on_tool) and after; event_id is the event that ended the pause; approximate is true when "
        "either time was interpolated between anchors",
        f"""SELECT run_key, event_id, t - gap_s AS started_at, t AS ended_at, gap_s,
       before_kind, before_summary, kind AS after_kind, summary AS after_summary,
       before_kind = 'tool_call' AS waiting_on_tool,
       t_source = 'interpolated' OR before_t_source = 'interpolated' AS approximate
FROM (SELECT run_key, event_id, t, kind, summary, t_source,
             t - lag(t) OVER w AS gap_s, lag(kind) OVER w AS before_kind,
             lag(summary) OVER w AS before_summary, lag(t_source) OVER w AS before_t_source
      FROM events WHERE kind IN ({_AGENT_KINDS_SQL}) AND t IS NOT NULL
      WINDOW w AS (PARTITION BY run_key ORDER BY t, event_id))
WHERE gap_s >= {IDLE_GAP_S}""",
    ),
    "spend_over_time": (
        "every event that carries token use, in time order per run, with its dollars (the price table's "
        "longest matching model pattern), the round it went toward (the next submission sent: toward_round) "
        "and the run's running totals (cum_tokens, cum_cost_usd); "
        "counts every record, where runs' totals leave out records an earlier run holds",
        """SELECT run_key, event_id, t, t - min(t) OVER (PARTITION BY run_key) AS elapsed_s, toward_round, model,
       input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, tokens, cost_usd,
       sum(tokens) OVER w AS cum_tokens, sum(cost_usd) OVER w AS cum_cost_usd
FROM (SELECT e.run_key, e.event_id, e.t, nx.round AS toward_round, e.model,
             e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens,
             coalesce(e.input_tokens, 0) + coalesce(e.output_tokens, 0) + coalesce(e.cache_read_tokens, 0)
               + coalesce(e.cache_write_tokens, 0) AS tokens,
             (coalesce(e.input_tokens, 0) * p.input_per_mtok + coalesce(e.output_tokens, 0) * p.output_per_mtok
               + coalesce(e.cache_read_tokens, 0) * p.cache_read_per_mtok
               + coalesce(e.cache_write_tokens, 0) * p.cache_write_per_mtok) / 1e6 AS cost_usd
      FROM events e
      LEFT JOIN LATERAL (SELECT * FROM prices WHERE e.model LIKE prices.model_pattern
                         ORDER BY length(model_pattern) DESC LIMIT 1) p ON TRUE
      ASOF LEFT JOIN (SELECT run_key, round, submitted_at FROM submissions WHERE submitted_at IS NOT NULL) nx
        ON nx.run_key = e.run_key AND e.t <= nx.submitted_at
      WHERE e.input_tokens IS NOT NULL OR e.output_tokens IS NOT NULL)
WINDOW w AS (PARTITION BY run_key ORDER BY t, event_id ROWS UNBOUNDED PRECEDING)""",
    ),
    "alarms": (
        "the alarms raised while runs were watched (stalls, errors, budgets) and their acknowledgements: "
        "rule, level, message; acked is true for the row saying an operator acknowledged one",
        """SELECT run_key, event_id, t, level, data->>'rule' AS rule, data->>'message' AS message,
       coalesce(TRY_CAST(data->>'ack' AS BOOLEAN), FALSE) AS acked,
       TRY_CAST(data->>'raised_at' AS DOUBLE) AS raised_at, data->>'key' AS alarm_key, summary
FROM events WHERE kind = 'alarm'""",
    ),
    "moment_why": (
        "the detected moments (built by `edgetui moments` or the replay) with their why: the sub-scores that "
        "moved, the behaviour change's notes, the evidence events, the lead time and confidence, and a user's "
        "annotation on it; event_id is the round's judge_result",
        """SELECT m.run_key, m.detector, m.round, m.t, m.elapsed_s, m.score_before, m.score_after, m.gain,
       m.lead_time_s, m.confidence, m.provisional,
       m.components AS moved, m.behaviour->'notes' AS why, m.evidence,
       j.event_id, a.label AS annotation_label, a.text AS annotation
FROM moments m
LEFT JOIN (SELECT run_key, round, arg_max(event_id, t) AS event_id
           FROM events WHERE kind = 'judge_result' GROUP BY run_key, round) j
  ON j.run_key = m.run_key AND j.round = m.round
LEFT JOIN (SELECT event_id, arg_max(label, coalesce(updated_at, created_at)) AS label,
                  arg_max(text, coalesce(updated_at, created_at)) AS text
           FROM annotations WHERE event_id IS NOT NULL GROUP BY event_id) a ON a.event_id = j.event_id""",
    ),
    "test_matrix": (
        "each test's result in each graded round (one row per run, test and round; PIVOT it for the "
        "pass/fail matrix): round_no is the round's place in result-known order, passed whether the test passed",
        """SELECT t.run_key, t.name AS test, t.round, s.round_no, t.status,
       lower(t.status) IN ('passed', 'pass', 'ok', 'success') AS passed,
       t.score, t.message, s.t AS known_at, t.idx
FROM test_results t
JOIN (SELECT run_key, round, t, row_number() OVER (PARTITION BY run_key ORDER BY t, round) AS round_no
      FROM submissions) s ON s.run_key = t.run_key AND s.round = t.round""",
    ),
    "run_id_tasks": (
        "the runs of one SForge run id across its tasks (one row per task, grouped by host and run id as "
        "the picker folds them): how many tasks, how many ended, their mean best on the 0-100 scale",
        """SELECT host, run_id, run_key, task_id, status, model, started_at,
       coalesce(best_score_0_100, 100.0 * best_pass_rate) AS best_0_100,
       count(*) OVER g AS n_tasks,
       count(*) FILTER (status IN ('finished', 'aborted', 'transcript')) OVER g AS n_ended,
       avg(coalesce(best_score_0_100, 100.0 * best_pass_rate)) OVER g AS mean_best_0_100,
       min(started_at) OVER g AS group_started_at
FROM runs
WINDOW g AS (PARTITION BY host, run_id)""",
    ),
}


#: (table or view, column) -> meaning: DuckDB comments on the columns whose meaning is not in their name
COLUMN_MEANINGS: dict[tuple[str, str], str] = {
    ("events", "t"): "when it happened, epoch seconds UTC",
    ("events", "t_source"): "recorded by the source, observed live, anchored, or interpolated between anchors",
    ("events", "t_lo"): "an interpolated time's earliest possible value",
    ("events", "t_hi"): "an interpolated time's latest possible value",
    ("events", "offset"): 'byte offset in its source file (quote it: "offset")',
    ("events", "data"): "the kind's payload as JSON (tool input, result, usage…)",
    ("events", "raw"): "the source bytes of a record that did not parse (decode(raw) shows it)",
    ("submissions", "t"): "when the result was known (not when it was sent)",
    ("submissions", "elapsed_s"): "seconds from the run's start to t",
    ("submissions", "score_0_100"): "SForge's rescaled score",
    ("runs", "run_key"): "host/run_id/task_id",
    ("runs", "best_score_0_100"): "the best on SForge's 0-100 scale",
    ("best_so_far", "known_at"): "when the result was known (evolve_state at, the judge's Result: line, ...)",
    ("best_so_far", "known_by"): "what gave known_at: evolve_state, judge_log, report_mtime, submitted_at+runtime",
    ("best_so_far", "known_after_s"): "seconds from sending to the result known",
    ("best_so_far", "event_id"): "the round's judge_result event",
    ("tool_calls", "duration_s"): "the tool's own duration_ms, else result time minus call time",
    ("tool_calls", "failed"): "an error result or a non-zero exit code",
    ("tool_calls", "unanswered"): "no result recorded for the call",
    ("tool_calls", "event_id"): "the call's event",
    ("idle_gaps", "gap_s"): "seconds without an event of the agent",
    ("idle_gaps", "event_id"): "the event that ended the pause",
    ("idle_gaps", "waiting_on_tool"): "the event before the pause was a tool call",
    ("idle_gaps", "approximate"): "a time interpolated between anchors",
    ("spend_over_time", "cost_usd"): "this event's dollars by the price table",
    ("spend_over_time", "toward_round"): "the next submission sent at or after this event (null after the last)",
    ("spend_over_time", "cum_cost_usd"): "the run's dollars up to this event",
    ("spend_over_time", "cum_tokens"): "the run's tokens up to this event",
    ("alarms", "acked"): "this row acknowledges an alarm",
    ("moment_why", "moved"): "the sub-scores that moved, before and after",
    ("moment_why", "why"): "the behaviour change's notes",
    ("moment_why", "evidence"): "the event ids of the evidence",
    ("moment_why", "event_id"): "the round's judge_result event",
    ("test_matrix", "round_no"): "the round's place in result-known order",
    ("run_id_tasks", "best_0_100"): "the task's best on the 0-100 scale (pass rate x 100)",
    ("run_id_tasks", "n_ended"): "tasks of the run id finished or aborted",
}


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def view_statements() -> list[str]:
    """The statements creating (or replacing) every ready-made view, each followed by its comment,
    then the comments of :data:`COLUMN_MEANINGS`."""
    out: list[str] = []
    for name, (meaning, select) in READY_VIEWS.items():
        out.append(f"CREATE OR REPLACE VIEW {name} AS {select}")
        out.append(f"COMMENT ON VIEW {name} IS {_quoted(meaning)}")
    for (table, column), meaning in COLUMN_MEANINGS.items():
        out.append(f'COMMENT ON COLUMN {table}."{column}" IS {_quoted(meaning)}')
    return out
