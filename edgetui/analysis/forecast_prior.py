"""The forecast's shape prior, from stored per-run fits of a run's earlier recorded runs.

The prior for run R is the median log-sigmoid beta of the runs recorded **before** R (started
earlier) of the same task, else of the same model, else :data:`edgetui.replay.analysis.forecast.DEFAULT_BETA`.
Only runs that have ended count (a run going on has half a curve), never infra-error runs, and
sample runs feed sample runs only; R itself is never among them, so a run is never in its own prior.
Only fits without flags (:attr:`edgetui.replay.analysis.fit.Fit.findings`) give a beta.

**Stored per-run fits.** Each feeding run is fitted once (:func:`fit_runs`): its best-so-far curve
at 24 even points up to its end (:func:`edgetui.replay.analysis.curves.run_curves`), ``form`` log_sigmoid,
one row of the ``fits`` table with ``source = 'prior'`` and ``grouping`` ``{"role": "run",
"run_key", "data_fp"}``. ``data_fp`` is the SHA-256 of what the run's curve is made of (its status
and times, its task's rescale and policy, every submission's graded fields: one SQL aggregate,
:data:`_DATA_SQL`) with the fit's method and version: a run re-recorded with other rounds, or
whose task changed, no longer matches its row and is fitted again; a forgotten run no longer feeds.

Each row also keeps ``run_sig``: the hash of the run's ``runs`` row as :data:`_SIG_SQL` reads it
(``ingested_at``, which every ingest of the run sets, status, times, counts, best, the task's rescale),
which needs no read of submissions.

**The live update only reads.** :func:`shape_prior` with ``fit=False`` (what each live forecast
update calls, :func:`edgetui.analysis.forecast_prior.header_forecast`) reads the feeding runs' signatures and
their stored rows in one query and takes the median of the stored betas; feeding runs whose
row is missing or whose ``run_sig`` moved are returned as :attr:`Prior.pending` (a missing one is
left out, a moved one keeps its stored beta until re-checked, so an app restart that reads every run
again does not flip the prior to the default; the default beta while no row is stored, and the label
says so). The app passes those to :func:`fit_runs` in a background worker (which refits a run only
when its full data hash changed) and the forecast is read again
(:func:`edgetui.views.screens.live_common.request_prior_fits`). An ended run's data changes only through
an ingest, which sets ``ingested_at``; a live run's graded submissions move its counts, best or last
event time: so the signature moves whenever the curve can have. With ``fit=True`` (``edgetui
forecast``, the default) the pending runs are fitted first, in the call.

Reads go through ``fetch(sql, params) -> QueryResult`` (an open connection or the holder); writes
through ``execute(sql, params)`` when given (a writable connection). Without one (a database held by
another process) fits are computed all the same and not stored.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from edgetui.error_log import note_swallowed
from edgetui.analysis.recorded_curves import fetch_from, load_curves
from edgetui.store import queries as store

from edgetui.replay.analysis.fit import FIT_METHOD, FIT_VERSION, fit_curve
from edgetui.replay.analysis.curves import run_curves
from edgetui.replay.analysis.forecast import DEFAULT_BETA
from edgetui.replay.analysis.forecast import forecast_run
from edgetui.replay.analysis.score_at import run_curve

__all__ = ["PRIOR_SOURCE", "Prior", "shape_prior", "fit_runs", "header_forecast"]

#: ``fits.source`` of the per-run prior rows
PRIOR_SOURCE = "prior"
#: points of a feeding run's curve fitted (even, up to its end)
PRIOR_POINTS = 24

_RUN_SQL = "SELECT run_key, task_id, model, started_at, coalesce(is_sample, FALSE) FROM runs WHERE run_key = ?"
#: what a run's curve is made of (the run's times and status, its task's rescale and policy, every
#: submission's fields the curve reads), one row per run: its hash says "unchanged" without
#: rebuilding the curve. ``{where}`` selects the runs (over ``r``).
_DATA_SQL = """
SELECT r.run_key, r.status, r.started_at, r.ended_at, r.last_event_at, r.selection, r.score_direction,
       CAST(t.rescale AS VARCHAR), count(s.round),
       CAST(sum(hash(s.round, s.kind, s.status, s.t, s.seen_at, s.runtime_s, s.pass_rate, s.score, s.score_0_100,
                     s.max_score, s.valid)) AS VARCHAR)
FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id LEFT JOIN submissions s ON s.run_key = r.run_key
WHERE {where}
GROUP BY ALL ORDER BY r.run_key
"""
#: a run's row as the live update checks it (no submission read): the runs columns every re-recording
#: or graded submission moves (``ingested_at`` is set by each ingest of the run) and its task's
#: rescale. ``{where}`` selects the runs (over ``r``).
_SIG_SQL = """
SELECT r.run_key, r.ingested_at, r.status, r.started_at, r.ended_at, r.last_event_at, r.selection,
       r.score_direction, r.agent_submissions, r.auto_submissions, r.best_round, r.best_score, r.best_pass_rate,
       r.best_score_0_100, CAST(t.rescale AS VARCHAR)
FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id
WHERE {where}
ORDER BY r.run_key
"""
#: the runs that may feed run R's prior at one level (``{col}``: task_id or model): started before R,
#: ended, not infra errors, samples only for samples, never R
_FEED_WHERE = """r.run_key <> ? AND r.{col} = ? AND r.started_at < ?
  AND coalesce(r.status, '') NOT IN ('running', 'grading') AND NOT coalesce(r.infra_error, FALSE)
  AND coalesce(r.is_sample, FALSE) = ?"""
#: the feeding runs' signature rows (:data:`_SIG_SQL`'s columns) with their stored row's grouping, beta
#: and findings (NULL when none): what a live update reads, one query
_FEED_SQL = """
SELECT r.run_key, r.ingested_at, r.status, r.started_at, r.ended_at, r.last_event_at, r.selection,
       r.score_direction, r.agent_submissions, r.auto_submissions, r.best_round, r.best_score, r.best_pass_rate,
       r.best_score_0_100, CAST(t.rescale AS VARCHAR), f.grouping, f.beta, f.findings
FROM runs r LEFT JOIN tasks t ON t.task_id = r.task_id
     LEFT JOIN fits f ON f.source = 'prior' AND f.run_key = r.run_key
WHERE {where}
ORDER BY r.run_key
"""


@dataclass
class Prior:
    """``beta``: the shape prior; ``label``: where it came from (shown beside the forecast);
    ``level``: ``task``, ``model`` or ``default``; ``fed_by``: the run keys whose stored fits gave it
    (empty for the default); ``fitted``: run keys fitted or re-checked by this call; ``pending``: feeding runs of
    its level without a current stored fit (only with ``fit=False``): left out when none is stored, else
    counted with their stored beta until re-checked."""

    beta: float
    label: str
    level: str
    fed_by: list[str] = field(default_factory=list)
    fitted: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)


def _sha(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _run_fit_id(run_key: str) -> str:
    return _sha(["prior-run", run_key])[:24]


def _data_fps(rows: Sequence[Sequence[Any]]) -> dict[str, str]:
    """run key -> hash of its row (:data:`_DATA_SQL` or :data:`_SIG_SQL`), salted with the fit's
    method and version."""

    return {r[0]: _sha([FIT_METHOD, FIT_VERSION, PRIOR_POINTS, list(r)]) for r in rows}


def _points(curve) -> tuple[list[float], list[float]]:
    """(hours, scores) fitted for a feeding run: its cells at PRIOR_POINTS even hours to its end,
    missing ones dropped."""

    end = curve.end_elapsed_s if curve.end_elapsed_s is not None else (curve.now_elapsed_s or 0.0)
    if end <= 0:
        return [], []
    hours = [end / 3600.0 * k / PRIOR_POINTS for k in range(1, PRIOR_POINTS + 1)]
    (c,) = run_curves([curve], hours, "run")
    keep = [(h, s) for h, s in zip(c.hours, c.scores) if math.isfinite(s)]
    return [h for h, _ in keep], [s for _, s in keep]


def _fit_row(curve, data_fp: str, run_sig: str) -> list[Any]:
    """One feeding run's log-sigmoid fit as a ``fits`` row (beta None when it cannot be fitted:
    fewer than 3 points; flags ``no_fit``)."""

    hours, scores = _points(curve)
    params: dict[str, float] = {}
    smax = t_mid = beta = t_half = r2 = rmse = status = None
    flags, findings = "no_fit", False
    try:
        f = fit_curve(hours, scores, "log_sigmoid")
    except ValueError:
        pass
    else:
        params = dict(f.params)
        smax, t_mid, beta = params.get("Smax"), params.get("t_mid"), params.get("beta")
        t_half, r2, rmse, status, flags, findings = f.t_half, f.r2, f.rmse, f.status, " ".join(f.flags), f.findings
    grouping = {"role": "run", "run_key": curve.run_key, "data_fp": data_fp, "run_sig": run_sig}
    return [
        _run_fit_id(curve.run_key),
        time.time(),
        PRIOR_SOURCE,
        json.dumps(grouping, sort_keys=True),
        curve.run_key,
        curve.task_id,
        curve.model,
        "log_sigmoid",
        FIT_METHOD,
        FIT_VERSION,
        "wall_clock",
        "best-so-far of one run",
        json.dumps(params),
        smax,
        t_mid,
        beta,
        t_half,
        r2,
        rmse,
        len(hours),
        status,
        flags,
        bool(findings),
        "{}",
        json.dumps(hours),
        json.dumps(scores),
    ]


_INSERT_SQL = "INSERT OR REPLACE INTO fits VALUES (" + ", ".join("?" for _ in range(26)) + ")"


def _write(execute: Callable[..., Any], rows: Sequence[tuple[str, list[Any]]]) -> bool:
    """Run the ``(sql, params)`` ``rows`` in one transaction; a failure (a read-only database, a write
    conflict) rolls back and leaves them unstored (computed again next time). Returns whether they were."""
    if not rows:
        return True
    try:
        execute("BEGIN TRANSACTION")
    except Exception:  # noqa: BLE001 - already in a transaction: the statements join it
        began = False
    else:
        began = True
    try:
        for sql, params in rows:
            execute(sql, params)
        if began:
            execute("COMMIT")
        return True
    except Exception:  # noqa: BLE001 - the store is an optimisation; the prior is computed regardless
        if began:
            try:
                execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - rolling back after a failure: that failure is the one said
                note_swallowed("rolling back after a failure: that failure is the one said")
        return False


def _keys_sql(keys: Sequence[str]) -> str:
    return "r.run_key IN (" + ", ".join("?" for _ in keys) + ")"


def fit_runs(
    fetch: Callable[..., Any], run_keys: Sequence[str], *, execute: Optional[Callable[..., Any]] = None
) -> dict[str, tuple[Optional[float], bool]]:
    """Make the stored prior fit of each of ``run_keys`` (recorded runs; unknown keys are skipped)
    current: a run whose data hash (:data:`_DATA_SQL`) is its stored row's keeps its fit (only the
    row's run signature is written again); the others are fitted. Rows are written through
    ``execute`` when given, in one transaction. Returns run key -> (beta, findings) of every run
    (beta None: fewer than 3 points)."""
    keys = sorted(set(run_keys))
    if not keys:
        return {}
    fps = _data_fps(fetch(_DATA_SQL.format(where=_keys_sql(keys)), keys).rows)
    sigs, have = _feeders(fetch, _keys_sql(keys), keys)
    rows, out, refit = [], {}, []
    for k in keys:
        if k not in fps:
            continue
        hit = have.get(k)
        if hit is not None and hit[0].get("data_fp") == fps[k]:
            out[k] = (hit[1], hit[2])
            if hit[0].get("run_sig") != sigs.get(k):
                g = {**hit[0], "run_sig": sigs.get(k)}
                rows.append(
                    ("UPDATE fits SET grouping = ? WHERE fit_id = ?", [json.dumps(g, sort_keys=True), _run_fit_id(k)])
                )
        else:
            refit.append(k)
    for c in load_curves(fetch, refit) if refit else []:
        row = _fit_row(c, fps[c.run_key], sigs.get(c.run_key, ""))
        rows.append((_INSERT_SQL, row))
        out[c.run_key] = (row[15], bool(row[22]))
    if execute is not None:
        _write(execute, rows)
    return out


def _feeders(fetch: Callable[..., Any], where: str, params: list) -> tuple[dict[str, str], dict]:
    """(run key -> run signature, run key -> (grouping, beta, findings) of its stored row) of the
    runs ``where`` selects, in one query (two on a database without the fits table)."""
    try:
        rows = fetch(_FEED_SQL.format(where=where), params).rows
    except Exception:  # noqa: BLE001 - no fits table (a database the holder serves unmigrated)
        note_swallowed("no fits table (a database the holder serves unmigrated")
        return _data_fps(fetch(_SIG_SQL.format(where=where), params).rows), {}
    sigs = _data_fps([r[:15] for r in rows])
    stored = {}
    for r in rows:
        g, beta, findings = r[15:]
        if g is not None:
            stored[r[0]] = (json.loads(g) if isinstance(g, str) else g, beta, bool(findings))
    return sigs, stored


def shape_prior(
    fetch: Callable[..., Any],
    run_key: str,
    *,
    execute: Optional[Callable[..., Any]] = None,
    fit: bool = True,
    run: Optional[tuple] = None,
) -> Prior:
    """The :class:`Prior` for ``run_key`` (see the module's rules). ``fetch`` reads the runs,
    submissions and fits tables; ``execute`` (optional) stores the fits made. ``fit``: fit the feeding
    runs without a current stored fit now (else they are :attr:`Prior.pending` and the prior is what
    the stored fits give, or the default while none is stored). Raises ``LookupError`` for a run key
    not recorded. ``run``: the run's ``(task_id, model, started_at, is_sample)`` when the caller has
    them (a live update's header), which saves a query."""

    if run is None:
        rows = fetch(_RUN_SQL, [run_key]).rows
        if not rows:
            raise LookupError(f"{run_key}: no such run recorded")
        run = tuple(rows[0][1:])
    task_id, model, started_at, is_sample = run
    if started_at is None:
        return Prior(DEFAULT_BETA, "default (open-51 per-task median): the run has no start time", "default")
    for level, col, val in (("task", "task_id", task_id), ("model", "model", model)):
        if val is None:
            continue
        sigs, stored = _feeders(fetch, _FEED_WHERE.format(col=col), [run_key, val, started_at, bool(is_sample)])
        if not sigs:
            continue
        # a row whose run signature moved (the run read again) still gives its beta until re-checked
        have = {k: (b, ok) for k, (g, b, ok) in stored.items()}
        pending = sorted(k for k in sigs if k not in stored or stored[k][0].get("run_sig") != sigs[k])
        fitted: list[str] = []
        if fit and pending:
            have.update(fit_runs(fetch, pending, execute=execute))
            fitted, pending = pending, []
        fed = {k: b for k, (b, ok) in have.items() if ok and b is not None and math.isfinite(b)}
        if fed:
            label = f"median of {len(fed)} earlier run(s) of this {level}"
            if pending:
                label += f" ({len(pending)} being fitted)"
            return Prior(float(statistics.median(fed.values())), label, level, sorted(fed), fitted, pending)
        if pending:  # nothing stored yet: the default until they are fitted, and say so
            return Prior(
                DEFAULT_BETA,
                f"default (open-51 per-task median) until {len(pending)} earlier run(s) of this {level} are fitted",
                "default",
                [],
                fitted,
                pending,
            )
    return Prior(DEFAULT_BETA, "default (open-51 per-task median): no earlier run of this task or model", "default")


def header_forecast(
    conn, head: dict[str, Any], subs: Sequence[dict[str, Any]], *, now: Optional[float] = None
) -> Optional[dict[str, Any]]:
    """The forecast a live run's header shows (:class:`edgetui.replay.analysis.forecast.Forecast` as a dict),
    for a run going on (status ``running`` / ``grading``) with a valid best; else ``None``.
    ``head``: :func:`edgetui.store.queries.run_header`; ``subs``: :func:`edgetui.store.queries.submissions`; ``now``
    (epoch UTC) defaults to the run's newest event. The
    horizon is the run's budget (``timeout_s``), else 12 h; the prior is :func:`edgetui.analysis.forecast_prior.shape_prior`
    from the stored fits of the run's earlier runs of the same task or model, read only (no fit, no
    write: a few ms). The dict adds ``prior_level`` (task / model / default) and ``prior_pending``: the
    feeding runs without a current stored fit, left out of the prior until fitted
    (:func:`edgetui.analysis.forecast_prior.fit_runs`). Reads through ``conn`` (a worker's, never the UI's)."""
    # lazy: the forecast imports the fitting stack (scipy), which a listing need not load

    if head.get("status") not in ("running", "grading"):
        return None
    conn = conn.cursor()  # this thread's own connection to the database (a worker's, never the UI's)
    task_id = head.get("task_id")
    t = store.task(conn, task_id) if task_id else None
    spec = t.get("rescale") if t else None
    # "now" of the curve: the run's newest event (what the screen shows), else the clock
    now = now or head.get("last_t") or head.get("last_event_at") or time.time()
    curve = run_curve(head, subs, spec if isinstance(spec, dict) else None, now=now)
    budget = head.get("timeout_s")
    horizon = budget / 3600.0 if budget else 12.0
    # reads only: the feeding runs' stored fits; those without one come back as pending, for the
    # app's background fitter (edgetui.views.screens.live_common.request_prior_fits)
    p = shape_prior(
        fetch_from(conn),
        curve.run_key,
        fit=False,
        run=(head.get("task_id"), head.get("model"), head.get("started_at"), bool(head.get("is_sample"))),
    )
    f = forecast_run(curve, horizon, p.beta, p.label)
    if f is None:
        return None
    return {**f.as_dict(), "prior_level": p.level, "prior_pending": list(p.pending)}
