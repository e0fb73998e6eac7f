"""Read-only query helpers over an edgetui DuckDB connection (the views' only door to data).

Every function takes an open connection (read-only or read-write, see
:func:`edgetui.store.database.open_db`) and runs its statements on a fresh
``conn.cursor()``, so it is safe to call from a worker thread while the UI
thread uses the same connection (a DuckDB connection is not thread-safe, its
cursors are).

Nothing here writes. Results are plain Python values: dicts for single rows,
lists of dicts for short lists, and :class:`EventColumns` — parallel lists, not
pydantic objects — for a run's events, so a 50,000-event run loads in well
under a second.

Event order (the timeline order every view shares, see :data:`EVENT_ORDER_SQL`):

1. ``t`` ascending, events without a time (``t IS NULL``, not aligned yet) last;
2. at equal times, the earlier segment first and a segment's end after its other events (an
   auto-resume puts the log's "segment 1 started" and the transcript's last record of segment 0
   at the same anchor: segment 0 ends before segment 1 starts);
3. then the *source order*: sources ranked by their earliest ``t`` (sources
   without any time last), ties broken by source name — so at equal times the
   harness log line that started a segment comes before the transcript lines;
4. then byte ``offset`` within the source, then ``sub`` (index of the event in
   its record), then ``event_id`` so the order is total and stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence, cast

import duckdb
import orjson

from edgetui.records import sforge_runtime_s
from edgetui.store.one_row import one_row
from edgetui.store.repeated_records import REP_CTE, keep_sql, repeated_keys

__all__ = [
    "EVENT_ORDER_SQL",
    "EventColumns",
    "count_runs",
    "event_count",
    "runs_without_moments",
    "list_runs",
    "filter_runs",
    "run_header",
    "run_events",
    "run_events_since",
    "tail_start",
    "source_ranks",
    "event_detail",
    "search_events",
    "submissions",
    "submission",
    "chart_submissions",
    "new_best_rounds",
    "test_results",
    "task",
    "tool_events",
]

#: ORDER BY clause of the timeline (see the module docstring). ``source_rank``
#: comes from the ``_src`` CTE of :func:`run_events` (:func:`source_ranks` in Python).
EVENT_ORDER_SQL = (
    "ev.t ASC NULLS LAST, ev.segment ASC NULLS LAST, (ev.kind = 'segment_end'), _src.source_rank, "
    'ev."offset", ev.sub, ev.event_id'
)

#: Columns of :class:`EventColumns`, in query order.
EVENT_LIST_COLUMNS = (
    "event_id",
    "kind",
    "t",
    "source",
    "offset",
    "sub",
    "summary",
    "tool_use_id",
    "parent_tool_use_id",
    "tool_name",
    "is_error",
    "round",
    "level",
    "segment",
    "agent_format",
)

#: Columns of the runs table shown by the picker.
RUN_LIST_COLUMNS = (
    "run_key",
    "host",
    "run_id",
    "task_id",
    "agent",
    "model",
    "status",
    "started_at",
    "ended_at",
    "last_event_at",
    "timeout_s",
    "score_task",
    "score_direction",
    "best_round",
    "best_score",
    "best_pass_rate",
    "best_score_0_100",
    "agent_submissions",
    "auto_submissions",
    "game_sessions",
    "n_events",
    "cost_usd",
    "stated_cost_usd",
    "is_sample",
)


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def _one(cur: duckdb.DuckDBPyConnection) -> Optional[dict[str, Any]]:
    names = [d[0] for d in cur.description]
    r = cur.fetchone()
    return dict(zip(names, r)) if r is not None else None


def _json(v: Any) -> Any:
    if v is None or not isinstance(v, (str, bytes)):
        return v
    try:
        return orjson.loads(v)
    except orjson.JSONDecodeError:
        return v


# ---------------------------------------------------------------------------- runs


def count_runs(conn: duckdb.DuckDBPyConnection) -> int:
    """Number of runs in the database (0 for an empty or brand-new file)."""
    with conn.cursor() as cur:
        has = one_row(cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'"))[0]
        if not has:
            return 0
        return int(one_row(cur.execute("SELECT count(*) FROM runs"))[0])


def filter_runs(rows: Iterable[dict[str, Any]], text: Optional[str]) -> list[dict[str, Any]]:
    """Rows whose run key / model / agent / status contain every word of ``text`` (case-insensitive).

    The type-ahead filter of the run picker; pure, so the picker filters in
    memory on every key press after one :func:`list_runs`.
    """
    rows = list(rows)
    words = (text or "").lower().split()
    if not words:
        return rows
    out = []
    for r in rows:
        hay = " ".join(str(r.get(k) or "") for k in ("run_key", "model", "agent", "status")).lower()
        if all(w in hay for w in words):
            out.append(r)
    return out


def list_runs(conn: duckdb.DuckDBPyConnection, filter: Optional[str] = None) -> list[dict[str, Any]]:
    """Runs, most recently started first, optionally narrowed by :func:`filter_runs`."""
    if not count_runs(conn):
        return []
    cols = ", ".join(RUN_LIST_COLUMNS)
    with conn.cursor() as cur:
        cur.execute(f"SELECT {cols} FROM runs ORDER BY coalesce(started_at, last_event_at) DESC NULLS LAST, run_key")
        rows = _rows(cur)
    return filter_runs(rows, filter)


#: flags a transcript earns from its own records (the vocabulary: a run's *status* is running,
#: grading, finished, aborted, gone or transcript; these are *flags* beside it)
TRANSCRIPT_FLAGS_SQL = """nullif(concat_ws(' ',
        CASE WHEN bool_or(e.kind = 'segment_end' AND coalesce(TRY_CAST(e.data->>'$.incomplete' AS BOOLEAN), FALSE))
             THEN 'incomplete' END,
        CASE WHEN bool_or(coalesce(TRY_CAST(e.data->>'$.interrupted' AS BOOLEAN), FALSE)) THEN 'interrupted' END,
        CASE WHEN bool_or(e.kind = 'agent_result' AND coalesce(e.is_error, FALSE)) THEN 'error' END,
        CASE WHEN bool_or(e.kind = 'segment_end' AND e.data->>'$.reason' = 'api_errors_only')
             THEN 'api-errors-only' END), '')"""
#: the run's transcript flags as one space-separated string (NULL for none): a scalar subquery over
#: the events of the run named by ``{run_key}`` (``?``, or ``runs.run_key`` inside a query of runs)
TRANSCRIPT_FLAGS_SUBQUERY = (
    "(SELECT " + TRANSCRIPT_FLAGS_SQL + " FROM events e WHERE e.run_key = {run_key} "
    "AND e.kind IN ('segment_end', 'agent_result'))"
)


def transcript_flags(conn: Any, run_key: str) -> list[str]:
    """``incomplete`` (a segment ended without its result record: a cut-off stream), ``interrupted``
    ("success" after an unanswered tool call), ``error`` (a result with ``is_error``): what the run's
    transcript says of itself (the same SQL as ``edgetui runs``' flags). A stream still growing live
    is never ``incomplete`` (that event is written only when a finished file is read to its end)."""
    # the few events that can say so first (a scan of kind), then their JSON by id: reading the JSON
    # column in the same scan read it for every event of the run (0.1 s at a million events)
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT event_id FROM events WHERE run_key = ? AND kind IN ('segment_end', 'agent_result')", [run_key]
        ).fetchall()
    ]
    if not ids:
        return []
    if len(ids) > 1000:
        got = conn.execute("SELECT " + TRANSCRIPT_FLAGS_SUBQUERY.format(run_key="?"), [run_key]).fetchone()[0]
    else:
        got = conn.execute(
            "SELECT " + TRANSCRIPT_FLAGS_SQL + " FROM events e WHERE e.event_id IN (" + ", ".join("?" * len(ids)) + ")",
            ids,
        ).fetchone()[0]
    return got.split() if got else []


def with_durations(head: dict[str, Any]) -> dict[str, Any]:
    """``head`` (a ``runs`` row) with the run's two durations (docs/replay.md, "Durations"):

    * ``duration_s``: edgetui's, from its start (``started_at``, else its log's first line) to its
      end (``ended_at``: ``final_result.json`` written, so after the harness's drain and its work
      container's stop and removal, ~15 s with SForge 1.1.0's containers), else to its last event;
      ``duration_to`` says which (``"end"`` / ``"last event"``);
    * ``sforge_runtime_s``: SForge's own ``runtime_seconds`` of ``final_result.json``, the sum of
      the agent's segments (no install, drain or cleanup), when the run has it (not on SForge's
      error paths, which write 0.0).
    """
    start, end, last = head.get("started_at"), head.get("ended_at"), head.get("last_event_at")
    stop, to = (end, "end") if end is not None else (last, "last event")
    head["duration_s"] = stop - start if start is not None and stop is not None and stop >= start else None
    head["duration_to"] = to if head["duration_s"] is not None else None
    final = head.get("final")
    head["sforge_runtime_s"] = sforge_runtime_s(_json(final) if isinstance(final, str) else final)
    return head


def run_header(conn: duckdb.DuckDBPyConnection, run_key: str, *, tokens: bool = True) -> Optional[dict[str, Any]]:
    """Everything the replay header needs about one run, or ``None`` if unknown.

    ``tokens=False`` skips the token sums over the run's events (a group-by over every event:
    0.2 s at a million) and gives the ``runs`` row's recorded totals instead (``tokens_exact``
    false; 0 where the row has none): the replay's first paint, before the exact sums. When the
    row records ``started_at`` and ``n_events``, it also skips the count, ``first_t`` / ``last_t``
    (``None``) and the transcript flags (``[]``), which scan the run's events too.

    All ``runs`` columns, plus ``task_name``/``task_category`` and the task's
    ``task_selection``/``task_score_direction``/``policy_assumed_task`` from
    ``tasks``, plus from the events:

    * ``n_events``, ``first_t``, ``last_t`` (times of the first/last timed event),
    * ``duration_s``, ``duration_to``, ``sforge_runtime_s``: :func:`with_durations`,
    * ``tok_input``, ``tok_output``, ``tok_cache_read``, ``tok_cache_write`` and
      ``tokens`` (their sum) — the events' token columns summed, counting each
      model message (``message_id``) once, since a split assistant message
      repeats its usage on every part (docs/transcript-formats.md §3), and leaving out
      ``agent_result`` events whose usage is the segment total and records an earlier run
      holds too (a resumed transcript's copies: :mod:`edgetui.store.repeated_records`).
    """
    with conn.cursor() as cur:
        cur.execute(
            """SELECT r.*, tk.name AS task_name, tk.category AS task_category,
                      tk.selection AS task_selection, tk.score_direction AS task_score_direction,
                      tk.assumed AS task_assumed
               FROM runs r LEFT JOIN tasks tk ON tk.task_id = r.task_id
               WHERE r.run_key = ?""",
            [run_key],
        )
        head = _one(cur)
        if head is None:
            return None
        head["config"] = _json(head.get("config"))
        head["final"] = _json(head.get("final"))
        head["trajectory_metrics"] = _json(head.get("trajectory_metrics"))
        if not tokens and head.get("started_at") is not None and head.get("n_events") is not None:
            # the first paint's header: the recorded count, flags with the exact header (both scan the run)
            head.update(transcript_flags=[], first_t=None, last_t=None, n_events=int(head["n_events"]))
            tok4 = [
                int(head.get(c) or 0)
                for c in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
            ]
            head["tok_input"], head["tok_output"], head["tok_cache_read"], head["tok_cache_write"] = tok4
            head["tokens"] = sum(tok4)
            head["tokens_exact"] = False
            return with_durations(head)
        n, first_t, last_t = one_row(
            cur.execute("SELECT count(*), min(t), max(t) FROM events WHERE run_key = ?", [run_key])
        )
        head["transcript_flags"] = transcript_flags(cur, run_key)
        head["n_events"] = int(n)
        head["first_t"] = first_t
        head["last_t"] = last_t
        if not tokens:
            tok4 = [
                int(head.get(c) or 0)
                for c in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
            ]
            head["tok_input"], head["tok_output"], head["tok_cache_read"], head["tok_cache_write"] = tok4
            head["tokens"] = sum(tok4)
            head["tokens_exact"] = False
            return with_durations(head)
        try:  # records an earlier run's file holds too are counted there (edgetui/store/repeated_records.py)
            shared = repeated_keys(cur, run_key)[0] > 0
        except duckdb.CatalogException:  # a read-only file of an older schema: no record_keys yet
            shared = False
        tok = one_row(
            cur.execute(
                f"""WITH {REP_CTE if shared else "_none AS (SELECT 1)"}
               SELECT coalesce(sum(i), 0), coalesce(sum(o), 0), coalesce(sum(cr), 0), coalesce(sum(cw), 0)
               FROM (SELECT max(input_tokens) i, max(output_tokens) o,
                            max(cache_read_tokens) cr, max(cache_write_tokens) cw
                     FROM events
                     WHERE run_key = $rk AND kind <> 'agent_result'
                       AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL
                            OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL)
                       AND {keep_sql(shared=shared)}
                     GROUP BY coalesce(message_id, event_id))""",
                {"rk": run_key},
            )
        )
    head["tok_input"], head["tok_output"], head["tok_cache_read"], head["tok_cache_write"] = (int(x) for x in tok)
    head["tokens"] = sum(int(x) for x in tok)
    head["tokens_exact"] = True
    return with_durations(head)


def task(conn: duckdb.DuckDBPyConnection, task_id: str) -> Optional[dict[str, Any]]:
    """The ``tasks`` row of ``task_id`` (``rescale`` parsed), or ``None``."""
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM tasks WHERE task_id = ?", [task_id])
        row = _one(cur)
    if row is not None:
        row["rescale"] = _json(row.get("rescale"))
    return row


# ---------------------------------------------------------------------------- events


@dataclass
class EventColumns:
    """A run's events in timeline order as parallel lists (one per column of :data:`EVENT_LIST_COLUMNS`).

    Light on purpose: no ``data``/``raw`` payloads (see :func:`event_detail`).
    """

    event_id: list[str] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    t: list[Optional[float]] = field(default_factory=list)
    source: list[str] = field(default_factory=list)
    offset: list[Optional[int]] = field(default_factory=list)
    sub: list[Optional[int]] = field(default_factory=list)
    summary: list[Optional[str]] = field(default_factory=list)
    tool_use_id: list[Optional[str]] = field(default_factory=list)
    parent_tool_use_id: list[Optional[str]] = field(default_factory=list)
    tool_name: list[Optional[str]] = field(default_factory=list)
    is_error: list[Optional[bool]] = field(default_factory=list)
    round: list[Optional[str]] = field(default_factory=list)
    level: list[Optional[str]] = field(default_factory=list)
    segment: list[Optional[int]] = field(default_factory=list)
    agent_format: list[Optional[str]] = field(default_factory=list)
    _index: Optional[dict[str, int]] = field(default=None, repr=False, compare=False)
    _source_min: Optional[dict[str, Optional[float]]] = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.event_id)

    def source_min(self) -> dict[str, Optional[float]]:
        """Earliest ``t`` of each source (epoch seconds UTC; ``None``: the source has no timed event),
        computed once per timeline (the timeline is not changed in place)."""
        if self._source_min is None:
            self._source_min = _fold_source_min({}, zip(self.source, self.t))
        return self._source_min

    def index_of(self, event_id: str) -> Optional[int]:
        """Position of ``event_id`` in the timeline (``None`` if absent)."""
        if self._index is None:
            self._index = {e: i for i, e in enumerate(self.event_id)}
        return self._index.get(event_id)

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> "EventColumns":
        """Build from row dicts (tests, small synthetic timelines)."""
        cols = cls()
        for name in EVENT_LIST_COLUMNS:
            getattr(cols, name).extend(r.get(name) for r in rows)
        return cols


def timeline_table(conn: duckdb.DuckDBPyConnection, run_key: str, columns: Sequence[str]) -> Any:
    """``columns`` of a run's events in timeline order (module docstring), as a ``pyarrow.Table``
    (read through a cursor of ``conn``: callable from a worker thread)."""
    cols = ", ".join(f'ev."{c}"' for c in columns)
    # no CTE over the run's rows: DuckDB materializes a CTE used twice, all columns with the JSON
    # payloads (2.4x slower for a 400-event run among 60,000 events)
    sql = f"""
        WITH _src AS (SELECT source, row_number() OVER (ORDER BY min(t) ASC NULLS LAST, source) AS source_rank
                      FROM events WHERE run_key = $rk GROUP BY source)
        SELECT {cols} FROM events ev JOIN _src ON _src.source = ev.source
        WHERE ev.run_key = $rk
        ORDER BY {EVENT_ORDER_SQL}
    """
    with conn.cursor() as cur:
        return cur.sql(sql, params={"rk": run_key}).to_arrow_table()


def run_events(conn: duckdb.DuckDBPyConnection, run_key: str) -> EventColumns:
    """A run's events in timeline order (module docstring), as :class:`EventColumns`."""
    tbl = timeline_table(conn, run_key, EVENT_LIST_COLUMNS)
    out = EventColumns()
    for name in EVENT_LIST_COLUMNS:
        setattr(out, name, tbl.column(name).to_pylist())
    return out


def _fold_source_min(
    mins: dict[str, Optional[float]], pairs: Iterable[tuple[str, Optional[float]]]
) -> dict[str, Optional[float]]:
    """``mins`` updated with (source, t) pairs: each source's earliest t (``None`` while untimed)."""
    for s, t in pairs:
        m = mins.get(s)
        if t is not None and (m is None or t < m):
            mins[s] = t
        elif s not in mins:
            mins[s] = None
    return mins


def source_ranks(source_min: dict[str, Optional[float]]) -> dict[str, int]:
    """Rank (1-based) of each source in the timeline's source order: by earliest ``t``, sources
    without a timed event last, ties by name — the ``_src`` CTE of :func:`run_events` in Python."""
    order = sorted(source_min, key=lambda s: (source_min[s] is None, source_min[s] or 0.0, s))
    return {s: i for i, s in enumerate(order, 1)}


def _timeline_key(ranks: dict[str, int]):
    """Sort key of one row (a tuple in :data:`EVENT_LIST_COLUMNS` order) in the timeline order of
    :data:`EVENT_ORDER_SQL` (DuckDB sorts NULLs last; VARCHARs by bytes = Python's code points)."""
    i_id, i_t, i_src, i_off, i_sub, i_seg, i_kind = (
        EVENT_LIST_COLUMNS.index(c) for c in ("event_id", "t", "source", "offset", "sub", "segment", "kind")
    )

    def key(r: tuple) -> tuple:
        t, off, sub, seg = r[i_t], r[i_off], r[i_sub], r[i_seg]
        return (
            t is None,
            t or 0.0,
            seg is None,
            seg or 0,
            r[i_kind] == "segment_end",
            ranks[r[i_src]],
            off is None,
            off or 0,
            sub is None,
            sub or 0,
            r[i_id],
        )

    return key


def tail_start(ev: EventColumns) -> tuple[int, Optional[float]]:
    """``(k, t0)`` of a timeline: events ``[k:]`` are those at or after its newest timed event's
    time ``t0`` (epoch seconds UTC) plus the untimed ones; ``(0, None)`` when no event has a time."""
    t = ev.t
    last = len(t) - 1
    while last >= 0 and t[last] is None:
        last -= 1
    if last < 0:
        return 0, None
    t0 = cast(float, t[last])  # (the newest timed event's: not None)
    k = last
    while k > 0 and (tk := t[k - 1]) is not None and tk >= t0:
        k -= 1
    return k, t0


def run_events_since(
    conn: duckdb.DuckDBPyConnection, run_key: str, base: EventColumns, total: Optional[int] = None
) -> Optional[tuple[EventColumns, int]]:
    """The timeline of a run that only grew since ``base`` (an earlier :func:`run_events` of it, or
    one of this function's results): ``(timeline, n_events)``, or ``None`` when it did not only grow.

    "Only grew": every event before ``base``'s newest time ``t0`` (epoch seconds UTC) is still the
    same number of events (``count(*)`` of the run's events with ``t < t0``), so they are kept as
    they are and the events at or after ``t0`` (and the untimed ones) are read again — two index
    lookups on ``run_key`` instead of a sort of the whole run. Their order is
    :data:`EVENT_ORDER_SQL`'s, with the source ranks of the whole run (the kept events' earliest
    times and the re-read ones'). ``None`` also when no event of ``base`` has a time. Same result as
    :func:`run_events` (tested); ``n_events`` is the run's event count (``total``: the caller's
    ``count(*)`` of them, read just before).
    """
    k, t0 = tail_start(base)
    if t0 is None:
        return None
    bare = ", ".join(f'"{c}"' for c in EVENT_LIST_COLUMNS)
    with conn.cursor() as cur:
        if total is None:
            total = cur.execute("SELECT count(*) FROM events WHERE run_key = ?", [run_key]).fetchall()[0][0]
        rows = cur.execute(
            f"SELECT {bare} FROM events WHERE run_key = ? AND (t >= ? OR t IS NULL)", [run_key, t0]
        ).fetchall()
    if total - len(rows) != k:
        return None  # events were added (or removed) before t0: not a plain append
    mins: dict[str, Optional[float]] = {
        s: m for s, m in base.source_min().items() if m is not None and m < t0
    }  # the kept events'
    i_t, i_src = EVENT_LIST_COLUMNS.index("t"), EVENT_LIST_COLUMNS.index("source")
    _fold_source_min(mins, ((r[i_src], r[i_t]) for r in rows))
    rows.sort(key=_timeline_key(source_ranks(mins)))
    out = EventColumns()
    for j, name in enumerate(EVENT_LIST_COLUMNS):
        col = getattr(base, name)[:k]
        col.extend(r[j] for r in rows)
        setattr(out, name, col)
    out._source_min = mins
    return out, total


def event_detail(conn: duckdb.DuckDBPyConnection, event_id: str) -> Optional[dict[str, Any]]:
    """All columns of one event; ``data`` parsed from JSON into a dict, ``raw`` as bytes."""
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM events WHERE event_id = ?", [event_id])
        row = _one(cur)
    if row is not None:
        d = _json(row.get("data"))
        row["data"] = d if d is not None else {}
    return row


def search_events(conn: duckdb.DuckDBPyConnection, run_key: str, query: str) -> list[str]:
    """Ids of the run's events whose summary or data JSON text contains ``query`` (case-insensitive).

    The data is matched as stored JSON text, so a match inside a string value
    containing quotes or newlines must be typed as JSON escapes them.
    """
    q = (query or "").lower()
    if not q:
        return []
    with conn.cursor() as cur:
        rows = cur.execute(
            """SELECT event_id FROM events
               WHERE run_key = ?
                 AND (contains(lower(coalesce(summary, '')), ?)
                      OR contains(lower(coalesce(CAST(data AS VARCHAR), '')), ?))""",
            [run_key, q, q],
        ).fetchall()
    return [r[0] for r in rows]


# ---------------------------------------------------------------------------- submissions


def submissions(conn: duckdb.DuckDBPyConnection, run_key: str) -> list[dict[str, Any]]:
    """A run's submissions in time order (``metrics`` parsed from JSON)."""
    with conn.cursor() as cur:
        cur.execute(
            """SELECT * FROM submissions WHERE run_key = ?
               ORDER BY coalesce(t, submitted_at, graded_at, seen_at) ASC NULLS LAST, elapsed_s NULLS LAST,
                        n NULLS LAST, round""",
            [run_key],
        )
        rows = _rows(cur)
    for r in rows:
        r["metrics"] = _json(r.get("metrics"))
    return rows


#: columns of :func:`chart_submissions` (what :func:`edgetui.views.widgets.chart.chart_data` reads)
CHART_SUBMISSION_COLUMNS = (
    "round",
    "kind",
    "n",
    "status",
    "t",
    "submitted_at",
    "graded_at",
    "elapsed_s",
    "score",
    "pass_rate",
    "score_0_100",
    "valid",
    "is_new_best",
    "best_round",
    "best_score",
    "best_pass_rate",
)


def chart_submissions(
    conn: duckdb.DuckDBPyConnection, run_key: str, max_rows: int = 1500, buckets: int = 320
) -> list[dict[str, Any]]:
    """A run's submissions for its score chart, in the order of :func:`submissions`, with only
    :data:`CHART_SUBMISSION_COLUMNS`. A run with more than ``max_rows`` of them keeps, per kind
    (agent / auto) and per ``buckets``-th of the run's submission span (by
    ``coalesce(t, submitted_at, graded_at, seen_at)``, epoch seconds), the submissions with the lowest
    and highest score, pass rate and rescaled score, and of the new bests, per ``4 × buckets``-th of
    that span (the best-so-far line's parts, :data:`edgetui.views.widgets.chart.LINE_COLUMNS_PER_CELL`), the
    first, the last and the lowest and highest of each quantity: the points a chart of ``buckets``
    columns can show (within a part the line's points lie on the vertical from its lowest to its
    highest). So the rows returned are bounded by ``buckets``, not by the run's size; ``buckets``
    should be at least the chart's canvas width. Marks drawn for the rest are the same; the raw scores'
    quartiles that fit the y range are those of the rows kept. Every new best's round, for the
    cursor's ``[`` / ``]``: :func:`new_best_rounds`."""
    cols = ", ".join(f'"{c}"' for c in CHART_SUBMISSION_COLUMNS)
    order = (
        "ORDER BY coalesce(t, submitted_at, graded_at, seen_at) ASC NULLS LAST, elapsed_s NULLS LAST, "
        "n NULLS LAST, round"
    )
    with conn.cursor() as cur:
        n = cur.execute("SELECT count(*) FROM submissions WHERE run_key = ?", [run_key]).fetchall()[0][0]
        if n <= max_rows:
            cur.execute(f"SELECT {cols} FROM submissions WHERE run_key = ? {order}", [run_key])
            return _rows(cur)
        qs = ("score", "pass_rate", "score_0_100")
        # (+ per bucket the first invalid round: its grey tick; replay/invalid_rounds.py)
        picks = ", ".join(
            [f"arg_{d}(round, {q})" for q in qs for d in ("min", "max")] + ["arg_min(round, _x) FILTER (inv)"]
        )
        best_picks = ", ".join(
            ["arg_min(round, _x)", "arg_max(round, _x)"]
            + [f"arg_{d}(round, {q})" for q in (*qs, "best_score", "best_pass_rate") for d in ("min", "max")]
        )
        cur.execute(
            f"""WITH s AS (SELECT kind, round, score, pass_rate, score_0_100, best_score, best_pass_rate,
                                          coalesce(is_new_best, FALSE) AS nb,
                                          (status IN ('failed_grading', 'bad_report')
                                           OR (status = 'graded' AND valid = FALSE AND kind <> 'game')) AS inv,
                                          coalesce(t, submitted_at, graded_at, seen_at) AS _x
                                   FROM submissions WHERE run_key = $rk),
                            r AS (SELECT min(_x) AS x0, greatest(max(_x) - min(_x), 1e-9) AS span FROM s),
                            p AS (SELECT unnest([{picks}]) AS round FROM s, r
                                  GROUP BY s.kind = 'auto', least($nb - 1, floor((s._x - r.x0) / r.span * $nb))),
                            b AS (SELECT unnest([{best_picks}]) AS round FROM s, r WHERE s.nb
                                  GROUP BY least(4 * $nb - 1, floor((s._x - r.x0) / r.span * 4 * $nb)))
                        SELECT {cols} FROM submissions
                        WHERE run_key = $rk AND (coalesce(t, submitted_at, graded_at, seen_at) IS NULL
                              OR round IN (SELECT round FROM p WHERE round IS NOT NULL
                                           UNION SELECT round FROM b WHERE round IS NOT NULL))
                        {order}""",
            {"rk": run_key, "nb": buckets},
        )
        return _rows(cur)


def new_best_rounds(conn: duckdb.DuckDBPyConnection, run_key: str) -> list[str]:
    """The rounds of a run's new bests (``submissions.is_new_best``), in no particular order: the
    replay cursor's ``[`` / ``]`` marks (:class:`edgetui.replay.cursor.ReplayCursor` reads ``round`` and
    ``is_new_best`` of its submissions). One short column; the chart's rows are
    :func:`chart_submissions`."""
    with conn.cursor() as cur:
        cur.execute("SELECT round FROM submissions WHERE run_key = ? AND is_new_best", [run_key])
        return [r[0] for r in cur.fetchall()]


def submission(conn: duckdb.DuckDBPyConnection, run_key: str, round: str) -> Optional[dict[str, Any]]:
    """One submission row, or ``None``."""
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM submissions WHERE run_key = ? AND round = ?", [run_key, round])
        row = _one(cur)
    if row is not None:
        row["metrics"] = _json(row.get("metrics"))
    return row


def test_results(conn: duckdb.DuckDBPyConnection, run_key: str, round: str) -> list[dict[str, Any]]:
    """Per-test results of one graded round, in report order."""
    with conn.cursor() as cur:
        cur.execute("SELECT * FROM test_results WHERE run_key = ? AND round = ? ORDER BY idx", [run_key, round])
        return _rows(cur)


test_results.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported into one


def tool_events(conn: duckdb.DuckDBPyConnection, run_key: str, tool_use_id: str) -> list[dict[str, Any]]:
    """The tool call and tool result(s) sharing ``tool_use_id`` (``data`` parsed), call first."""
    with conn.cursor() as cur:
        cur.execute(
            """SELECT event_id, kind, t, tool_name, is_error, round, summary, data FROM events
               WHERE run_key = ? AND tool_use_id = ? AND kind IN ('tool_call', 'tool_result')
               ORDER BY kind = 'tool_result', t NULLS LAST, "offset", sub""",
            [run_key, tool_use_id],
        )
        rows = _rows(cur)
    for r in rows:
        d = _json(r.get("data"))
        r["data"] = d if isinstance(d, dict) else {}
    return rows


def event_count(conn, run_key: str) -> int:
    """How many events the run has recorded."""
    with conn.cursor() as cur:
        return cur.execute("SELECT count(*) FROM events WHERE run_key = ?", [run_key]).fetchall()[0][0]


def runs_without_moments(conn, min_graded: int = 5) -> list[str]:
    """The runs with at least ``min_graded`` submissions and no stored moment (the moments queue's
    runs still to detect)."""
    return [
        r[0]
        for r in conn.execute(
            """SELECT run_key FROM runs r WHERE NOT EXISTS (SELECT 1 FROM moments m WHERE m.run_key = r.run_key)
               AND (SELECT count(*) FROM submissions s WHERE s.run_key = r.run_key) >= ?""",
            [min_graded],
        ).fetchall()
    ]
