"""Recorded runs as analysis inputs: each run's best-so-far curve (:class:`edgetui.replay.analysis.score_at.RunCurve`).

Reads through a ``fetch(sql, params) -> QueryResult`` callable (the CLI's read path, which also
answers through the process holding the database), so the same code serves an open connection
(:func:`fetch_from`) and the holder.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Optional, Sequence

from edgetui.store.holder_socket import run_query
import hashlib
import time

from edgetui.replay.analysis.score_at import run_curve
from edgetui.replay.analysis.timebasis import COOLDOWN_SQL
from edgetui.replay.analysis.timebasis import ActiveClock, wait_intervals

__all__ = ["RUNS_SQL", "SUBS_SQL", "load_curves", "fetch_from", "store_fits", "recorded_by"]

RUNS_SQL = """
SELECT r.run_key, r.run_id, r.task_id, r.host, r.model, r.status, r.started_at, r.ended_at, r.last_event_at,
       r.timeout_s, coalesce(r.infra_error, FALSE) AS infra_error, coalesce(r.is_sample, FALSE) AS is_sample,
       r.selection, r.score_direction, r.work_image, r.judge_image, t.category, t.rescale
FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id
{where}
ORDER BY r.run_key
"""

SUBS_SQL = """
SELECT run_key, round, kind, n, submission_id, status, t, submitted_at, seen_at, runtime_s, pass_rate, score, score_flag,
       score_0_100, max_score, valid, error
FROM submissions {where}
"""


def fetch_from(conn) -> Callable[..., Any]:
    """A ``fetch`` over an open DuckDB connection."""

    return lambda sql, params=None: run_query(conn, sql, params)


def _dicts(res) -> list[dict[str, Any]]:
    return [dict(zip(res.columns, r)) for r in res.rows]


def load_curves(
    fetch: Callable[..., Any],
    run_keys: Optional[Sequence[str]] = None,
    *,
    now: Optional[float] = None,
    time_basis: str = "wall_clock",
    team: bool = False,
) -> list:
    """Every recorded run's :class:`~edgetui.replay.analysis.score_at.RunCurve` (``run_keys``: only those),
    in run-key order. ``now`` (epoch UTC): how far runs going on have got (default: their last
    event). Category and rescale come from the run's task JSON (``tasks``). ``time_basis``:
    ``wall_clock`` or ``active`` (:mod:`edgetui.replay.analysis.timebasis`: grading and cooldown waits left out)."""

    where, params = "", None
    if run_keys is not None:
        if not run_keys:
            return []
        where = "WHERE r.run_key IN (" + ", ".join("?" for _ in run_keys) + ")"
        params = list(run_keys)
    elif not team and _has_team_sync(fetch):  # this machine's runs only: not those pulled from the team
        where = "WHERE r.run_key NOT IN (SELECT run_key FROM team_sync WHERE seq IS NOT NULL)"
    runs = _dicts(fetch(RUNS_SQL.format(where=where), params))
    sub_where = "" if run_keys is None else "WHERE run_key IN (" + ", ".join("?" for _ in run_keys) + ")"
    subs: dict[str, list[dict[str, Any]]] = {}
    for s in _dicts(fetch(SUBS_SQL.format(where=sub_where), params)):
        subs.setdefault(s["run_key"], []).append(s)
    cool: dict[str, list[dict[str, Any]]] = {}
    if time_basis == "active":
        for e in _dicts(fetch(COOLDOWN_SQL)):
            cool.setdefault(e["run_key"], []).append(e)
    elif time_basis != "wall_clock":
        raise ValueError(f"time basis {time_basis!r}: use wall_clock or active")
    out = []
    for r in runs:
        spec = r.pop("rescale", None)
        if isinstance(spec, str):
            try:
                spec = json.loads(spec)
            except ValueError:
                spec = None
        clock = None
        if time_basis == "active":
            clock = ActiveClock(
                wait_intervals(subs.get(r["run_key"], []), cool.get(r["run_key"], []), r.get("started_at"))
            )
        out.append(
            run_curve(r, subs.get(r["run_key"], []), spec if isinstance(spec, dict) else None, now=now, clock=clock)
        )
    return out


def _has_team_sync(fetch: Callable[..., Any]) -> bool:
    res = fetch("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'team_sync' AND schema_name = 'main'")
    return bool(res.rows and res.rows[0][0])


def recorded_by(fetch: Callable[..., Any], run_keys: Sequence[str]) -> dict[str, str]:
    """Who recorded each of ``run_keys``, as ``machine (person)``: the team record's word for runs
    pushed or pulled by ``edgetui sync`` (docs/team.md), ``this machine`` for the others."""
    out = {k: "this machine" for k in run_keys}
    if run_keys and _has_team_sync(fetch):
        for k, machine, person in fetch("SELECT run_key, machine, person FROM team_sync").rows:
            if k in out:
                out[k] = f"{machine} ({person})" if person else str(machine)
    return out


def _fit_id(rec: dict, source: str) -> str:

    key = json.dumps(
        [
            source,
            rec.get("group"),
            rec.get("fit", {}).get("form"),
            rec.get("method"),
            rec.get("version"),
            rec.get("time_basis"),
            rec.get("aggregation"),
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def store_fits(conn, recs: Sequence[dict], source: str) -> int:
    """Write fit records (``edgetui fit --format json`` objects) into the ``fits`` table, one row
    per curve (a later fit of the same source, group, form, method, version, time basis and
    aggregation replaces it). ``source``: ``recorded`` or the table's file name. Returns the count."""

    n = 0
    now = time.time()
    for rec in recs:
        f = rec.get("fit")
        if not f:
            continue
        g = rec.get("group") or {}
        raw = f.get("raw") or {}
        conn.execute(
            "INSERT OR REPLACE INTO fits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                _fit_id(rec, source),
                now,
                source,
                json.dumps(g, default=str),
                g.get("run_key"),
                g.get("task_id") or g.get("task"),
                g.get("model"),
                f["form"],
                rec["method"],
                rec["version"],
                rec.get("time_basis"),
                rec.get("aggregation"),
                json.dumps(raw),
                raw.get("Smax"),
                raw.get("t_mid"),
                raw.get("beta"),
                f.get("t_half"),
                f.get("r2"),
                f.get("rmse"),
                f.get("n"),
                f.get("status"),
                " ".join(f.get("flags") or []),
                bool(f.get("findings")),
                json.dumps(f.get("intervals") or {}),
                json.dumps(f.get("hours")),
                json.dumps(f.get("scores")),
            ],
        )
        n += 1
    return n
