"""Read-only query helpers over an edgetui DuckDB connection (the views' only door to data).

Every function takes an open connection (read-only or read-write, see
:func:`edgetui.db.open_db`) and runs its statements on a fresh
``conn.cursor()``, so it is safe to call from a worker thread while the UI
thread uses the same connection (a DuckDB connection is not thread-safe, its
cursors are).

Nothing here writes. Results are plain Python values: dicts for single rows,
lists of dicts for short lists, and :class:`EventColumns` — parallel lists, not
pydantic objects — for a run's events, so a 50,000-event run loads in well
under a second.

Event order (the timeline order every view shares, see :data:`EVENT_ORDER_SQL`):

1. ``t`` ascending, events without a time (``t IS NULL``, not aligned yet) last;
2. then the *source order*: sources ranked by their earliest ``t`` (sources
   without any time last), ties broken by source name — so at equal times the
   harness log line that started a segment comes before the transcript lines;
3. then byte ``offset`` within the source, then ``sub`` (index of the event in
   its record), then ``event_id`` so the order is total and stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

import duckdb
import orjson

__all__ = [
    "EVENT_ORDER_SQL",
    "EventColumns",
    "count_runs",
    "list_runs",
    "filter_runs",
    "run_header",
    "run_events",
    "event_detail",
    "search_events",
    "submissions",
    "submission",
    "test_results",
    "task",
    "tool_events",
]

#: ORDER BY clause of the timeline (see the module docstring). ``source_rank``
#: comes from the ``_src`` CTE of :func:`run_events`.
EVENT_ORDER_SQL = 'ev.t ASC NULLS LAST, _src.source_rank, ev."offset", ev.sub, ev.event_id'

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
        has = cur.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'runs'"
        ).fetchone()[0]
        if not has:
            return 0
        return int(cur.execute("SELECT count(*) FROM runs").fetchone()[0])


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
        hay = " ".join(
            str(r.get(k) or "") for k in ("run_key", "model", "agent", "status")
        ).lower()
        if all(w in hay for w in words):
            out.append(r)
    return out


def list_runs(conn: duckdb.DuckDBPyConnection, filter: Optional[str] = None) -> list[dict[str, Any]]:
    """Runs, most recently started first, optionally narrowed by :func:`filter_runs`."""
    if not count_runs(conn):
        return []
    cols = ", ".join(RUN_LIST_COLUMNS)
    with conn.cursor() as cur:
        cur.execute(
            f"SELECT {cols} FROM runs ORDER BY coalesce(started_at, last_event_at) DESC NULLS LAST, run_key"
        )
        rows = _rows(cur)
    return filter_runs(rows, filter)


def run_header(conn: duckdb.DuckDBPyConnection, run_key: str) -> Optional[dict[str, Any]]:
    """Everything the replay header needs about one run, or ``None`` if unknown.

    All ``runs`` columns, plus ``task_name``/``task_category`` and the task's
    ``task_selection``/``task_score_direction``/``policy_assumed_task`` from
    ``tasks``, plus from the events:

    * ``n_events``, ``first_t``, ``last_t`` (times of the first/last timed event),
    * ``tok_input``, ``tok_output``, ``tok_cache_read``, ``tok_cache_write`` and
      ``tokens`` (their sum) — the events' token columns summed, counting each
      model message (``message_id``) once, since a split assistant message
      repeats its usage on every part (sforge-format.md §6.2), and leaving out
      ``agent_result`` events whose usage is the segment total.
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
        n, first_t, last_t = cur.execute(
            "SELECT count(*), min(t), max(t) FROM events WHERE run_key = ?", [run_key]
        ).fetchone()
        head["n_events"] = int(n)
        head["first_t"] = first_t
        head["last_t"] = last_t
        tok = cur.execute(
            """SELECT coalesce(sum(i), 0), coalesce(sum(o), 0), coalesce(sum(cr), 0), coalesce(sum(cw), 0)
               FROM (SELECT max(input_tokens) i, max(output_tokens) o,
                            max(cache_read_tokens) cr, max(cache_write_tokens) cw
                     FROM events
                     WHERE run_key = ? AND kind <> 'agent_result'
                       AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL
                            OR cache_read_tokens IS NOT NULL OR cache_write_tokens IS NOT NULL)
                     GROUP BY coalesce(message_id, event_id))""",
            [run_key],
        ).fetchone()
    head["tok_input"], head["tok_output"], head["tok_cache_read"], head["tok_cache_write"] = (int(x) for x in tok)
    head["tokens"] = sum(int(x) for x in tok)
    return head


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
    _index: Optional[dict[str, int]] = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.event_id)

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


def run_events(conn: duckdb.DuckDBPyConnection, run_key: str) -> EventColumns:
    """A run's events in timeline order (module docstring), as :class:`EventColumns`."""
    cols = ", ".join(f'ev."{c}"' for c in EVENT_LIST_COLUMNS)
    sql = f"""
        WITH ev AS (SELECT * FROM events WHERE run_key = $rk),
             _src AS (SELECT source, row_number() OVER (ORDER BY min(t) ASC NULLS LAST, source) AS source_rank
                      FROM ev GROUP BY source)
        SELECT {cols} FROM ev JOIN _src ON _src.source = ev.source
        ORDER BY {EVENT_ORDER_SQL}
    """
    with conn.cursor() as cur:
        tbl = cur.sql(sql, params={"rk": run_key}).to_arrow_table()
    out = EventColumns()
    for name in EVENT_LIST_COLUMNS:
        setattr(out, name, tbl.column(name).to_pylist())
    return out


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
        cur.execute(
            "SELECT * FROM test_results WHERE run_key = ? AND round = ? ORDER BY idx", [run_key, round]
        )
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
