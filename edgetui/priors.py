"""The forecast's shape prior, fitted on demand from a run's earlier recorded runs and cached.

The prior for run R is the median log-sigmoid beta of the runs recorded **before** R (started
earlier) of the same task, else of the same model, else :data:`replay.analysis.forecast.DEFAULT_BETA`.
Only runs that have ended count (a run going on has half a curve), never infra-error runs, and
sample runs feed sample runs only; R itself is never among them, so a run is never in its own prior.
Only fits without flags (:attr:`replay.analysis.fit.Fit.findings`) give a beta.

Each feeding run is fitted once: its best-so-far curve at 24 even points up to its end
(:func:`replay.analysis.curves.run_curves`), ``form`` log_sigmoid. Both levels of the cache live in
the ``fits`` table with ``source = 'prior'`` (no schema change):

* one row per feeding run (``grouping``: ``{"role": "run", "run_key", "curve_sha"}``), where
  ``curve_sha`` is the SHA-256 of the points fitted with the fit's method and version: a run whose
  curve changed (re-ingested, more rounds graded) is fitted again, an unchanged one never;
* one row per forecast run (``grouping``: ``{"role": "prior", "for_run", "level", "fed_by":
  {run key: curve_sha}}``, ``beta`` the median, ``params`` each feeding run's beta): which run keys
  fed the prior, and ``data_fp``: the hash of what their curves are made of (their status and
  times, the task's rescale and policy, every submission's graded fields; one SQL aggregate).
  While the feeding set and ``data_fp`` are the same the row is the answer without reading a curve
  (what each live update pays); else the curves are rebuilt and hashed, unchanged ones keep their
  fit, and the row is written again: a run forgotten, added before R or changed makes it stale.

Reads go through ``fetch(sql, params) -> QueryResult`` (an open connection or the holder); writes
through ``execute(sql, params)`` when given (a writable connection). Without one (a database held by
another process) the prior is computed all the same and not cached.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = ["PRIOR_SOURCE", "Prior", "shape_prior"]

#: ``fits.source`` of the prior's cache rows
PRIOR_SOURCE = "prior"
#: points of a feeding run's curve fitted (even, up to its end)
PRIOR_POINTS = 24

_RUN_SQL = "SELECT run_key, task_id, model, started_at, coalesce(is_sample, FALSE) FROM runs WHERE run_key = ?"
_FEED_SQL = """
SELECT run_key FROM runs
WHERE run_key <> ? AND {col} = ? AND started_at < ? AND coalesce(status, '') NOT IN ('running', 'grading')
  AND NOT coalesce(infra_error, FALSE) AND coalesce(is_sample, FALSE) = ?
ORDER BY run_key
"""
#: what a feeding run's curve is made of (the run's times and status, its task's rescale and policy,
#: every submission's fields the curve reads), one row per run: its hash says "unchanged" without
#: rebuilding the curves
_DATA_SQL = """
SELECT r.run_key, r.status, r.started_at, r.ended_at, r.last_event_at, r.selection, r.score_direction,
       CAST(t.rescale AS VARCHAR), count(s.round),
       CAST(sum(hash(s.round, s.kind, s.status, s.t, s.seen_at, s.runtime_s, s.pass_rate, s.score, s.score_0_100,
                     s.max_score, s.valid)) AS VARCHAR)
FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id LEFT JOIN submissions s ON s.run_key = r.run_key
WHERE r.run_key IN ({marks})
GROUP BY ALL ORDER BY r.run_key
"""
_CACHED_SQL = ("SELECT fit_id, grouping, beta, findings FROM fits WHERE source = 'prior' AND fit_id IN ({marks})")


@dataclass
class Prior:
    """``beta``: the shape prior; ``label``: where it came from (shown beside the forecast);
    ``level``: ``task``, ``model`` or ``default``; ``fed_by``: the run keys whose fits gave it
    (empty for the default); ``fitted``: run keys fitted by this call (the others came from the
    cache); ``cached``: whether the prior row itself was a cache hit."""

    beta: float
    label: str
    level: str
    fed_by: list[str] = field(default_factory=list)
    fitted: list[str] = field(default_factory=list)
    cached: bool = False


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _run_fit_id(run_key: str) -> str:
    return _sha(["prior-run", run_key])[:24]


def _prior_fit_id(run_key: str) -> str:
    return _sha(["prior-for", run_key])[:24]


def _points(curve) -> tuple[list[float], list[float]]:
    """(hours, scores) fitted for a feeding run: its cells at PRIOR_POINTS even hours to its end,
    missing ones dropped."""
    import math

    from replay.analysis.curves import run_curves

    end = curve.end_elapsed_s if curve.end_elapsed_s is not None else (curve.now_elapsed_s or 0.0)
    if end <= 0:
        return [], []
    hours = [end / 3600.0 * k / PRIOR_POINTS for k in range(1, PRIOR_POINTS + 1)]
    (c,) = run_curves([curve], hours, "run")
    keep = [(h, s) for h, s in zip(c.hours, c.scores) if math.isfinite(s)]
    return [h for h, _ in keep], [s for _, s in keep]


def _insert(execute, fit_id: str, grouping: dict, run_key: Optional[str], task_id: Optional[str],
            model: Optional[str], params: dict, beta: Optional[float], t_mid: Optional[float], n: int,
            status: Optional[int], flags: str, findings: bool, hours=None, scores=None, r2=None, rmse=None,
            smax=None, t_half=None) -> None:
    from replay.analysis.fit import FIT_METHOD, FIT_VERSION

    execute("INSERT OR REPLACE INTO fits VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
            "?, ?)",
            [fit_id, time.time(), PRIOR_SOURCE, json.dumps(grouping, sort_keys=True), run_key, task_id, model,
             "log_sigmoid", FIT_METHOD, FIT_VERSION, "wall_clock", "best-so-far of one run", json.dumps(params),
             smax, t_mid, beta, t_half, r2, rmse, n, status, flags, findings, "{}", json.dumps(hours),
             json.dumps(scores)])


def _quiet(execute: Callable[..., Any]) -> Callable[..., Any]:
    """``execute`` whose failures (a write conflict with another worker caching the same row, a
    read-only database) leave the row uncached instead of failing the forecast."""
    def run(sql, params=None):
        try:
            execute(sql, params)
        except Exception:  # noqa: BLE001 - the cache is an optimisation; the prior is computed regardless
            pass
    return run


def _fit_run(curve) -> dict[str, Any]:
    """The log-sigmoid fit of one feeding run as a cache row's fields (``beta`` None when it cannot
    be fitted: fewer than 3 points)."""
    from replay.analysis.fit import FIT_METHOD, FIT_VERSION, fit_curve

    hours, scores = _points(curve)
    sha = _sha([FIT_METHOD, FIT_VERSION, PRIOR_POINTS, hours, scores])
    row: dict[str, Any] = {"curve_sha": sha, "hours": hours, "scores": scores, "beta": None, "findings": False,
                           "params": {}, "t_mid": None, "n": len(hours), "status": None, "flags": "no_fit"}
    try:
        f = fit_curve(hours, scores, "log_sigmoid")
    except ValueError:
        return row
    row.update(beta=f.params.get("beta"), t_mid=f.params.get("t_mid"), smax=f.params.get("Smax"),
               params=dict(f.params), findings=f.findings, status=f.status, flags=" ".join(f.flags), r2=f.r2,
               rmse=f.rmse, t_half=f.t_half)
    return row


def shape_prior(fetch: Callable[..., Any], run_key: str, *,
                execute: Optional[Callable[..., Any]] = None) -> Prior:
    """The :class:`Prior` for ``run_key`` (see the module's rules). ``fetch`` reads the runs,
    submissions and fits tables; ``execute`` (optional) writes the cache rows. Raises ``LookupError``
    for a run key not recorded."""
    from replay.analysis.fit import FIT_METHOD, FIT_VERSION
    from replay.analysis.forecast import DEFAULT_BETA

    from .analysis_data import load_curves

    if execute is not None:
        execute = _quiet(execute)

    rows = fetch(_RUN_SQL, [run_key]).rows
    if not rows:
        raise LookupError(f"{run_key}: no such run recorded")
    _, task_id, model, started_at, is_sample = rows[0]
    if started_at is None:
        return Prior(DEFAULT_BETA, "default (open-51 per-task median): the run has no start time", "default")
    for level, col, val in (("task", "task_id", task_id), ("model", "model", model)):
        if val is None:
            continue
        keys = [r[0] for r in fetch(_FEED_SQL.format(col=col), [run_key, val, started_at, bool(is_sample)]).rows]
        if not keys:
            continue
        ids = {_run_fit_id(k): k for k in keys}
        pid = _prior_fit_id(run_key)
        cached: dict[str, tuple[dict, Any, Any]] = {}
        marks = ", ".join("?" for _ in range(len(ids) + 1))
        try:
            for fid, g, beta, findings in fetch(_CACHED_SQL.format(marks=marks), [*ids, pid]).rows:
                cached[fid] = (json.loads(g) if isinstance(g, str) else (g or {}), beta, findings)
        except Exception:  # noqa: BLE001 - a database without the fits table: fitted, not cached
            cached = {}
        try:
            data_fp = _sha([FIT_METHOD, FIT_VERSION, PRIOR_POINTS,
                            [list(r) for r in fetch(_DATA_SQL.format(marks=", ".join("?" for _ in keys)), keys).rows]])
        except Exception:  # noqa: BLE001 - an older database: no fast path
            data_fp = None
        hit = cached.get(pid)
        if (hit is not None and data_fp is not None and hit[0].get("data_fp") == data_fp
                and hit[0].get("level") == level and hit[1] is not None):
            # the runs that fed it are the same runs with the same data: nothing to rebuild
            fed_keys = sorted(hit[0].get("fed_by") or {})
            return Prior(float(hit[1]), f"median of {len(fed_keys)} earlier run(s) of this {level}", level,
                         fed_keys, [], True)
        fits: dict[str, tuple[str, Optional[float], bool]] = {}  # run key -> (curve_sha, beta, findings)
        fitted: list[str] = []
        curves = {c.run_key: c for c in load_curves(fetch, keys)}
        for fid, k in ids.items():
            c = curves.get(k)
            if c is None:
                continue
            hours, scores = _points(c)
            sha = _sha([FIT_METHOD, FIT_VERSION, PRIOR_POINTS, hours, scores])
            hit = cached.get(fid)
            if hit is not None and hit[0].get("curve_sha") == sha:
                fits[k] = (sha, hit[1], bool(hit[2]))
                continue
            row = _fit_run(c)
            fitted.append(k)
            fits[k] = (row["curve_sha"], row["beta"], bool(row["findings"]))
            if execute is not None:
                _insert(execute, fid, {"role": "run", "run_key": k, "curve_sha": row["curve_sha"]}, k, c.task_id,
                        c.model, row["params"], row["beta"], row["t_mid"], row["n"], row["status"], row["flags"],
                        bool(row["findings"]), row["hours"], row["scores"], row.get("r2"), row.get("rmse"),
                        row.get("smax"), row.get("t_half"))
        fed = {k: v for k, v in fits.items() if v[1] is not None and v[2]}
        if not fed:
            continue
        fed_by = {k: v[0] for k, v in sorted(fed.items())}
        beta = float(statistics.median(v[1] for v in fed.values()))
        label = f"median of {len(fed)} earlier run(s) of this {level}"
        is_hit = hit is not None and hit[0].get("fed_by") == fed_by and hit[0].get("level") == level
        if is_hit:
            beta = float(hit[1])
        if execute is not None and (not is_hit or hit[0].get("data_fp") != data_fp):
            _insert(execute, pid, {"role": "prior", "for_run": run_key, "level": level, "value": val,
                                   "fed_by": fed_by, "data_fp": data_fp}, None, task_id if level == "task" else None,
                    model if level == "model" else None, {"betas": {k: v[1] for k, v in sorted(fed.items())}},
                    beta, None, len(fed), None, "", True)
        return Prior(beta, label, level, sorted(fed), fitted, is_hit)
    return Prior(DEFAULT_BETA, "default (open-51 per-task median): no earlier run of this task or model", "default")
