"""Records repeated across runs: counted once, by the earliest run that holds them (core, no Textual).

After a resume, Claude Code can write a new transcript file whose first records are copies of
an earlier file's (the same ``uuid`` and ``message.id`` under a new session id; ccusage#1762).
Recorded as two runs, the copied records would be counted twice. Here every run's events keep
all their rows (the replay shows the file as it is), but a run's **totals** — tokens, dollars,
messages (``n_messages``), tool calls — leave out the records that an *earlier* run holds too;
those are counted in that run only. The run that leaves them out says so: ``runs.n_repeated``
(how many of its events) and ``runs.repeated_from`` (the run keys that count them, space
separated), shown as the ``N-repeated`` flag of ``edgetui runs``.

**Owner of a shared record**: the run ranked first by (first timestamp = ``runs.started_at``,
runs without one last; then ``runs.run_dir``, the file's path; then ``run_key``). The rank
depends only on what is recorded, never on the order of ingests: ingesting X then Y, or Y then
X, gives the same totals (the runs sharing records with a finalized run are recomputed with it).

**Record identity** (table ``record_keys``, one row per event and key): ``m:<message.id>`` and
``u:<uuid>`` of the Claude Code events (``agent_format`` ``claude_stream`` / ``claude_session``)
of the kinds that totals count (:data:`KEYED_KINDS`) or that carry usage. Other dialects' ids
(Codex ``item_0``, OpenCode part ids) are per file, not global, so they never match across runs.
An event is *repeated* when its message id or its uuid is a key of an earlier run.

Only **bare transcripts** (``runs.layout = 'transcript'``: session files, stream-json files
ingested on their own) take part. An SForge run directory holds its own agent's transcript (a
resume appends to the same ``agent_output.txt``); two of them sharing message ids are a copied
run directory or a scripted stand-in agent replaying its script, and each keeps its totals —
and the live supervisor's recomputations of such runs never pay for this.
"""

from __future__ import annotations

from typing import Any, Optional

from edgetui.store.sql_in_list import in_list

#: kinds whose repetition changes a run's totals (messages, tool calls; usage rides on them)
KEYED_KINDS = ("agent_message", "user_message", "thinking", "tool_call", "tool_result", "token_usage", "agent_error")
#: kinds counted in ``runs.n_messages`` (the same list as ingest.finalize_run's count)
MESSAGE_KINDS = ("agent_message", "user_message", "thinking", "tool_call")
_CLAUDE = "(agent_format IN ('claude_stream', 'claude_session'))"
_KINDS_SQL = "(" + ", ".join(f"'{k}'" for k in KEYED_KINDS) + ")"
#: sums of dollars that do not depend on the order of the rows (a double sum does, in its last
#: bits: a run recorded among other runs, or by the second process of edgetui.record.ingest_shard, laid
#: out in other row groups, summed to another last digit): each term rounded to 1e-12 USD
#: (DECIMAL), summed exactly, then a double again
STATED_SUM = "CAST(sum(CAST(stated_cost_usd AS DECIMAL(38, 12))) AS DOUBLE)"
#: the cost of the priced events ``e`` joined with their ``prices`` row ``p``, USD (see STATED_SUM)
PRICED_SUM = (
    "CAST(sum(CAST(coalesce(e.input_tokens,0) * p.input_per_mtok + coalesce(e.output_tokens,0) * "
    "p.output_per_mtok + coalesce(e.cache_read_tokens,0) * p.cache_read_per_mtok + "
    "coalesce(e.cache_write_tokens,0) * p.cache_write_per_mtok AS DECIMAL(38, 12))) AS DOUBLE) / 1e6"
)


def refresh_record_keys(conn: Any, run_key: str, *, layout: Optional[str] = None, fresh: bool = False) -> bool:
    """Set ``record_keys`` of ``run_key`` from its events (the run's rows replaced); none for a run
    that is not a bare transcript (module docstring). Returns whether the run has keys now.
    ``layout``: the run's ``runs.layout`` when the caller knows it (else it is read); ``fresh``:
    the run had no row before this ingest of it, so it has no keys to delete."""
    if not fresh:
        conn.execute("DELETE FROM record_keys WHERE run_key = ?", [run_key])
    if layout is None:
        row = conn.execute("SELECT layout FROM runs WHERE run_key = ?", [run_key]).fetchall()
        layout = row[0][0] if row else None
    if layout != "transcript":
        return False
    conn.execute(  # one scan of the run's events: both keys of each event
        f"""INSERT INTO record_keys
            SELECT run_key, k, event_id FROM (
              SELECT run_key, event_id, unnest(['m:' || message_id, 'u:' || (data->>'uuid')]) AS k FROM events
               WHERE run_key = $rk AND {_CLAUDE} AND (kind IN {_KINDS_SQL} OR input_tokens IS NOT NULL))
            WHERE k IS NOT NULL""",
        {"rk": run_key},
    )
    return bool(conn.execute("SELECT 1 FROM record_keys WHERE run_key = ? LIMIT 1", [run_key]).fetchall())


def sharing_runs(conn: Any, run_key: str) -> list[str]:
    """The other runs holding at least one record key of ``run_key`` (sorted)."""
    rows = conn.execute(
        """SELECT DISTINCT o.run_key FROM record_keys o
           WHERE o.run_key <> $rk AND o.rkey IN (SELECT rkey FROM record_keys WHERE run_key = $rk)
           ORDER BY 1""",
        {"rk": run_key},
    ).fetchall()
    return [r[0] for r in rows]


#: CTE ``_rep(rkey, run_key)``: the record keys of run ``$rk`` that an earlier-ranked run holds too
REP_CTE = """_mine AS (SELECT DISTINCT rkey FROM record_keys WHERE run_key = $rk),
_other AS (SELECT DISTINCT o.run_key, o.rkey FROM record_keys o JOIN _mine USING (rkey) WHERE o.run_key <> $rk),
_ranked AS (SELECT run_key, row_number() OVER (ORDER BY started_at ASC NULLS LAST, coalesce(run_dir, ''), run_key)
                   AS rnk
            FROM runs WHERE run_key = $rk OR run_key IN (SELECT run_key FROM _other)),
_rep AS (SELECT _other.rkey, _other.run_key FROM _other JOIN _ranked USING (run_key)
         WHERE _ranked.rnk < (SELECT rnk FROM _ranked WHERE run_key = $rk))"""


def repeated_keys(conn: Any, run_key: str) -> tuple[int, list[str]]:
    """``(n_keys, owners)``: how many record keys of ``run_key`` an earlier-ranked run (module
    docstring) holds too, and those runs' keys (sorted). ``(0, [])`` for a run sharing nothing."""
    rows = conn.execute(
        f"WITH {REP_CTE} SELECT count(DISTINCT rkey), list(DISTINCT run_key ORDER BY run_key) FROM _rep",
        {"rk": run_key},
    ).fetchall()
    n, owners = rows[0]
    return int(n or 0), list(owners or [])


def keep_sql(alias: str = "", shared: bool = True) -> str:
    """SQL condition "this event is not a repeated record" for a query ``WITH {REP_CTE}`` and
    parameter ``$rk``; ``alias`` qualifies the events columns (``"e."``). ``shared=False`` (the
    run shares nothing: :func:`repeated_keys` said 0): ``TRUE``. Reads the narrow
    ``record_keys`` (its ``event_id``s), never the events' JSON."""
    if not shared:
        return "TRUE"
    return (
        f"{alias}event_id NOT IN (SELECT k.event_id FROM record_keys k "
        "WHERE k.run_key = $rk AND k.rkey IN (SELECT rkey FROM _rep))"
    )


def record_totals(conn: Any, run_key: str, has_keys: bool = True) -> dict[str, Any]:
    """The run's totals with repeated records left out: ``input_tokens``, ``output_tokens``,
    ``cache_read_tokens``, ``cache_write_tokens`` (sums; None when no event has usage),
    ``cost_usd`` (USD from the ``prices`` table; None without a priced event), ``n_messages``,
    ``n_tool_calls``, plus ``n_repeated`` (events left out) and ``repeated_from`` (the runs that
    count them, space separated, or None). ``record_keys`` of the run must be current
    (:func:`refresh_record_keys`; ``has_keys=False``: it said the run has none, so nothing of it
    can be repeated and the shared keys are not looked up)."""
    n_keys, owners = repeated_keys(conn, run_key) if has_keys else (0, [])
    # one flag per event (a semi-join with the repeated keys, computed once), then plain aggregates
    agg = conn.execute(
        f"""WITH {REP_CTE},
                 _ev AS MATERIALIZED (SELECT kind, model, input_tokens, output_tokens, cache_read_tokens,
                                            cache_write_tokens, {keep_sql(shared=n_keys > 0)} AS keep
                                     FROM events WHERE run_key = $rk)
            SELECT sum(input_tokens) FILTER (keep), sum(output_tokens) FILTER (keep),
                   sum(cache_read_tokens) FILTER (keep), sum(cache_write_tokens) FILTER (keep),
                   count(*) FILTER (kind IN ('agent_message', 'user_message', 'thinking', 'tool_call') AND keep),
                   count(*) FILTER (kind = 'tool_call' AND keep), count(*) FILTER (NOT keep),
                   (SELECT {PRICED_SUM}
                    FROM _ev e
                    JOIN LATERAL (SELECT * FROM prices WHERE e.model LIKE prices.model_pattern
                                  ORDER BY length(model_pattern) DESC LIMIT 1) p ON TRUE
                    WHERE e.input_tokens IS NOT NULL AND e.keep)
            FROM _ev""",
        {"rk": run_key},
    ).fetchall()[0]
    cost = agg[7]
    return dict(
        input_tokens=agg[0],
        output_tokens=agg[1],
        cache_read_tokens=agg[2],
        cache_write_tokens=agg[3],
        cost_usd=cost,
        n_messages=agg[4],
        n_tool_calls=agg[5],
        n_repeated=agg[6],
        repeated_from=" ".join(owners) or None,
    )


def run_aggregates(conn: Any, run_key: str, totals: bool) -> tuple[tuple, dict[str, Any]]:
    """One scan of the run's events: ``(n_events, n_parse_errors, last_event_at, first_t,
    stated_cost_usd)`` (last_event_at: the latest ``t`` of a non-database-only kind; times epoch
    UTC, cost USD), and with ``totals`` (a run that shares no record key with another:
    :func:`refresh_record_keys` said it has none) the :func:`record_totals` of such a run, else ``{}``."""
    return runs_aggregates(conn, [run_key], totals)[run_key]


def runs_aggregates(conn: Any, run_keys: list[str], totals: bool) -> dict[str, tuple[tuple, dict[str, Any]]]:
    """:func:`run_aggregates` of several runs, by run key, in two statements whatever their
    number (one grouped scan, one grouped price join for the runs with usage)."""

    out: dict[str, tuple[tuple, dict[str, Any]]] = {}
    if not run_keys:
        return out
    where = in_list("run_key", run_keys)
    if not totals:
        for row in conn.execute(
            f"""SELECT run_key, count(*), count(*) FILTER (kind = 'parse_error'),
                          max(t) FILTER (kind NOT IN ('resource_sample', 'container_state', 'alarm', 'annotation')),
                          min(t), {STATED_SUM}
                   FROM events WHERE {where} GROUP BY run_key""",
            run_keys,
        ).fetchall():
            out[row[0]] = (row[1:], {})
        for k in run_keys:  # (a run without events: the aggregates of an empty set)
            out.setdefault(k, ((0, 0, None, None, None), {}))
        return out
    rows = {
        r[0]: r[1:]
        for r in conn.execute(
            f"""SELECT run_key, count(*), count(*) FILTER (kind = 'parse_error'),
                  max(t) FILTER (kind NOT IN ('resource_sample', 'container_state', 'alarm', 'annotation')),
                  min(t), {STATED_SUM},
                  sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
                  count(*) FILTER (kind IN ('agent_message', 'user_message', 'thinking', 'tool_call')),
                  count(*) FILTER (kind = 'tool_call'), count(input_tokens)
           FROM events WHERE {where} GROUP BY run_key""",
            run_keys,
        ).fetchall()
    }
    priced = [k for k in run_keys if k in rows and rows[k][11]]
    costs: dict[str, Any] = {}
    if priced:  # priced only when some event carries usage (the price join costs a few ms a run)
        costs = dict(
            conn.execute(
                f"""WITH _ev AS MATERIALIZED (SELECT run_key, model, input_tokens, output_tokens, cache_read_tokens,
                                                 cache_write_tokens FROM events WHERE {in_list("run_key", priced)})
                SELECT e.run_key, {PRICED_SUM}
                FROM _ev e
                JOIN LATERAL (SELECT * FROM prices WHERE e.model LIKE prices.model_pattern
                              ORDER BY length(model_pattern) DESC LIMIT 1) p ON TRUE
                WHERE e.input_tokens IS NOT NULL GROUP BY e.run_key""",
                priced,
            ).fetchall()
        )
    for k in run_keys:
        row = rows.get(k) or (0, 0, None, None, None, None, None, None, None, 0, 0, 0)
        out[k] = (
            row[:5],
            dict(
                input_tokens=row[5],
                output_tokens=row[6],
                cache_read_tokens=row[7],
                cache_write_tokens=row[8],
                cost_usd=costs.get(k),
                n_messages=row[9],
                n_tool_calls=row[10],
                n_repeated=0,
                repeated_from=None,
            ),
        )
    return out


def recount(conn: Any, run_key: str) -> None:
    """Write :func:`record_totals` of ``run_key`` into its ``runs`` row."""
    vals = record_totals(conn, run_key)
    conn.execute(f"UPDATE runs SET {', '.join(f'{c} = ?' for c in vals)} WHERE run_key = ?", [*vals.values(), run_key])


def recount_sharing_runs(conn: Any, run_key: str) -> list[str]:
    """:func:`recount` the runs sharing records with ``run_key`` (their owner may have changed:
    ``run_key`` was just recorded or changed). Returns those runs' keys."""
    others = sharing_runs(conn, run_key)
    for o in others:
        recount(conn, o)
    return others


def recount_transcript_runs(conn: Any) -> int:
    """Keys and totals of every bare-transcript run (the schema-7 migration of a database recorded
    before: its resumed files were counted twice). Returns the number of runs recounted."""
    keys = [r[0] for r in conn.execute("SELECT run_key FROM runs WHERE layout = 'transcript' ORDER BY 1").fetchall()]
    for k in keys:
        refresh_record_keys(conn, k)
    for k in keys:
        recount(conn, k)
    return len(keys)
