"""The ``moments`` table: detection over a recorded run (:mod:`edgetui.replay.moments`), stored and read.

Moments are derived: rebuilt on demand from the run's submissions, test results and
events, never mixed into the raw events. A moment's identity is (run, detector,
version, round of the new best), so a rebuild keeps it (and whatever refers to it).
"""

from __future__ import annotations

import json
import time
from typing import Any, Optional

import duckdb

from edgetui.replay.moments import (
    DEFAULT_PARAMS,
    DETECTOR_VERSION,
    BehaviourEvent,
    Graded,
    Moment,
    OnlineMoments,
    Params,
    detect_all,
    graded_series,
)

__all__ = [
    "load_series",
    "load_behaviour",
    "detect_run",
    "rebuild_moments",
    "list_moments",
    "run_ceiling",
    "replay_moments",
    "online_start",
    "online_step",
    "moment_row",
]


def run_ceiling(task: Optional[dict[str, Any]], score_task: bool, direction: str) -> Optional[float]:
    """The best value the task allows in plotted units: 100 (pass rate × 100) for a pass-rate
    task; for a score task the bound of a linear rescale on the improving side (``upper`` when
    maximizing, ``lower`` when minimizing), else ``None`` (no headroom test)."""
    if not score_task:
        return 100.0
    rs = (task or {}).get("rescale")
    if isinstance(rs, str):
        try:
            rs = json.loads(rs)
        except ValueError:
            rs = None
    if isinstance(rs, dict) and rs.get("kind") == "linear":
        v = rs.get("lower") if direction == "minimize" else rs.get("upper")
        return float(v) if isinstance(v, (int, float)) else None
    return None


def _run_info(conn: duckdb.DuckDBPyConnection, run_key: str) -> Optional[dict[str, Any]]:
    r = conn.execute(
        """SELECT r.selection, r.score_direction, r.score_task, r.started_at, t.rescale
           FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id WHERE r.run_key = ?""",
        [run_key],
    ).fetchall()
    if not r:
        return None
    sel, d, st, start, rs = r[0]
    return {
        "selection": sel or "pass_rate_first",
        "direction": d or "maximize",
        "score_task": bool(st) if st is not None else True,
        "started_at": start,
        "rescale": rs,
    }


def _graded_inputs(conn: Any, run_key: str) -> tuple[list[dict], dict, dict]:
    cur = conn.execute("SELECT * FROM submissions WHERE run_key = ?", [run_key])
    cols = [c[0] for c in cur.description]
    subs = [dict(zip(cols, row)) for row in cur.fetchall()]
    comps: dict[str, dict[str, float]] = {}
    for rnd, name, score in conn.execute(
        "SELECT round, name, score FROM test_results WHERE run_key = ? AND score IS NOT NULL ORDER BY idx", [run_key]
    ).fetchall():
        comps.setdefault(rnd, {})[name] = score
    ev_ids = dict(
        conn.execute(
            """SELECT round, min(event_id) FROM events WHERE run_key = ? AND kind IN ('judge_result', 'game_result')
           AND round IS NOT NULL GROUP BY round""",
            [run_key],
        ).fetchall()
    )
    return subs, comps, ev_ids


def load_series(conn: duckdb.DuckDBPyConnection, run_key: str) -> tuple[list[Graded], dict[str, Any]]:
    """A run's graded rounds in result-known order (:func:`edgetui.replay.moments.graded_series`) and its
    settings (``selection``, ``direction``, ``score_task``, ``started_at``, ``ceiling``).
    Raises ``KeyError`` when the run is not recorded."""
    info = _run_info(conn, run_key)
    if info is None:
        raise KeyError(run_key)
    subs, comps, ev_ids = _graded_inputs(conn, run_key)
    series = graded_series(
        subs,
        selection=info["selection"],
        direction=info["direction"],
        score_task=info["score_task"],
        started_at=info["started_at"],
        components=comps,
        event_ids=ev_ids,
    )
    info["ceiling"] = run_ceiling({"rescale": info.pop("rescale")}, info["score_task"], info["direction"])
    return series, info


def load_behaviour(
    conn: duckdb.DuckDBPyConnection, run_key: str, after: Optional[float] = None
) -> list[BehaviourEvent]:
    """The run's thinking, messages and tool calls reduced to :class:`BehaviourEvent` (lengths and
    paths computed by DuckDB: the texts themselves are not read into Python), in time order;
    ``after``: only those with ``t`` after it (epoch UTC)."""
    rows = conn.execute(
        """SELECT event_id, kind, t, tool_name,
                  CASE WHEN kind IN ('thinking', 'agent_message')
                       THEN length(coalesce(json_extract_string(data, '$.text'), summary, ''))
                       ELSE coalesce(length(json_extract_string(data, '$.input.new_string')), 0)
                          + coalesce(length(json_extract_string(data, '$.input.content')), 0) END,
                  coalesce(json_extract_string(data, '$.input.file_path'), json_extract_string(data, '$.input.path')),
                  left(json_extract_string(data, '$.input.command'), 300),
                  coalesce(output_tokens, 0)
           FROM events WHERE run_key = ? AND kind IN ('thinking', 'agent_message', 'tool_call') AND t IS NOT NULL
             AND t > ?
           ORDER BY t, "offset", sub""",
        [run_key, float("-inf") if after is None else after],
    ).fetchall()
    return [
        BehaviourEvent(
            event_id=r[0],
            kind=r[1],
            t=r[2],
            tool_name=r[3],
            chars=int(r[4] or 0),
            path=r[5],
            command=r[6],
            tokens=int(r[7] or 0),
        )
        for r in rows
    ]


def detect_run(conn: duckdb.DuckDBPyConnection, run_key: str, params: Params = DEFAULT_PARAMS) -> list[Moment]:
    """Every detector's moments of one recorded run (nothing written). ``KeyError``: no such run."""
    series, info = load_series(conn, run_key)
    events = load_behaviour(conn, run_key)
    return detect_all(
        series,
        events,
        improving_up=not (info["score_task"] and info["direction"] == "minimize"),
        ceiling=info["ceiling"],
        params=params,
    )


_COLS = (
    "run_key",
    "detector",
    "version",
    "round",
    "idx",
    "t",
    "elapsed_s",
    "score_before",
    "score_after",
    "gain",
    "noise",
    "headroom",
    "lead_time_s",
    "confidence",
    "provisional",
    "components",
    "evidence",
    "behaviour",
    "params",
    "built_at",
)


def rebuild_moments(
    conn: duckdb.DuckDBPyConnection, run_key: str, params: Params = DEFAULT_PARAMS, now: Optional[float] = None
) -> list[Moment]:
    """Detect the run's moments and replace this detector version's rows of the run in the
    ``moments`` table (one transaction). Rows of other versions stay. Returns the moments."""
    moments = detect_run(conn, run_key, params)
    built = time.time() if now is None else now
    rows = [
        (
            run_key,
            m.detector,
            m.version,
            m.round,
            m.index,
            m.t,
            m.elapsed_s,
            m.before,
            m.after,
            m.gain,
            m.noise,
            m.headroom,
            m.lead_time_s,
            m.confidence,
            m.provisional,
            json.dumps(m.components),
            json.dumps(m.evidence),
            json.dumps(m.behaviour),
            json.dumps(m.params),
            built,
        )
        for m in moments
    ]
    conn.execute("BEGIN TRANSACTION")
    try:
        conn.execute("DELETE FROM moments WHERE run_key = ? AND version = ?", [run_key, DETECTOR_VERSION])
        if rows:
            conn.executemany(f"INSERT INTO moments ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})", rows)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise
    return moments


def list_moments(conn: Any, run_key: str, detector: Optional[str] = None) -> list[dict[str, Any]]:
    """The stored moments of a run (latest detector version), in round order; JSON columns parsed."""
    sql = (
        "SELECT * FROM moments WHERE run_key = ? AND version = ?"
        + (" AND detector = ?" if detector else "")
        + " ORDER BY idx, detector"
    )
    args: list[Any] = [run_key, DETECTOR_VERSION] + ([detector] if detector else [])
    cur = conn.execute(sql, args)
    cols = [c[0] for c in cur.description]
    out = []
    for row in cur.fetchall():
        d = dict(zip(cols, row))
        for k in ("components", "evidence", "behaviour", "params"):
            if isinstance(d.get(k), str):
                d[k] = json.loads(d[k])
        out.append(d)
    return out


def moment_row(run_key: str, m: Moment) -> dict[str, Any]:
    """A :class:`Moment` shaped like a ``moments`` row (:func:`list_moments`)."""
    return {
        "run_key": run_key,
        "detector": m.detector,
        "version": m.version,
        "round": m.round,
        "idx": m.index,
        "t": m.t,
        "elapsed_s": m.elapsed_s,
        "score_before": m.before,
        "score_after": m.after,
        "gain": m.gain,
        "noise": m.noise,
        "headroom": m.headroom,
        "lead_time_s": m.lead_time_s,
        "confidence": m.confidence,
        "provisional": m.provisional,
        "components": m.components,
        "evidence": m.evidence,
        "behaviour": m.behaviour,
        "params": m.params,
        "built_at": None,
    }


def online_start(conn: Any, run_key: str, params: Params = DEFAULT_PARAMS) -> OnlineMoments:
    """An :class:`edgetui.replay.moments.OnlineMoments` for a run that grows, holding its behaviour events so
    far (one read). ``KeyError``: no such run."""
    info = _run_info(conn, run_key)
    if info is None:
        raise KeyError(run_key)
    om = OnlineMoments(
        selection=info["selection"],
        direction=info["direction"],
        score_task=info["score_task"],
        started_at=info["started_at"],
        ceiling=run_ceiling({"rescale": info["rescale"]}, info["score_task"], info["direction"]),
        params=params,
    )
    om.add_events(load_behaviour(conn, run_key))
    return om


def online_step(conn: Any, run_key: str, om: OnlineMoments, detector: str = "reframe") -> list[dict[str, Any]]:
    """Bring ``om`` up to date (the behaviour events recorded since its last one, the submissions)
    and return its moments of ``detector`` as rows (nothing is written: live moments are
    provisional until the run is rebuilt with ``edgetui moments``)."""
    om.add_events(load_behaviour(conn, run_key, after=om.last_event_t))
    subs, comps, ev_ids = _graded_inputs(conn, run_key)
    return [
        moment_row(run_key, m) for m in om.update(subs, components=comps, event_ids=ev_ids) if m.detector == detector
    ]


def replay_moments(conn: Any, run_key: str, detector: str = "reframe") -> list[dict[str, Any]]:
    """The moments the replay screen marks: the stored ones of ``detector`` (latest version) when
    the run's moments were built, else detected now without writing (a read-only database, a run
    never asked about). Rows shaped like :func:`list_moments`'s."""
    rows = list_moments(conn, run_key)
    if rows:
        return [r for r in rows if r["detector"] == detector]
    return [moment_row(run_key, m) for m in detect_run(conn, run_key) if m.detector == detector]
