"""Score at h hours of one run: best-so-far at elapsed h under the task's selection policy.

A run's **curve** is the step function of its per-task value against the elapsed time at which
each graded submission's result was known: ``submissions.t``, as the replay draws it
(``evolve_state.json`` ``at``, else the judge's ``Result:`` line, else the report's time). At each known time the best is SForge's selection (:func:`edgetui.replay.selection.select_best`)
over the submissions known by then, taken in submission (creation) order, as the judge does.

**Per-task value** (0–100): the best round's rescaled score (``score_0_100`` as SForge wrote it,
else :func:`edgetui.replay.rescale.rescale` of its raw score) where the task defines a ``judge.rescale``;
else the best pass rate × 100.

**Cells** (:class:`Cell`, ``state``):

* ``value``: the run was at or past h (or ended exactly at h) with a valid best: that best.
* ``carried``: the run ended before h; its last best carries to h (a run that stops early keeps
  its score, as SForge's final result does).
* ``not_yet``: a run still going that has not reached h: no value yet.
* ``no_valid``: the run reached h (or ended before it) without a valid submission known by h
  (nothing graded, all grading failed, or none valid under ``valid_then_score``): no value; the
  leaderboard leaves it out of the mean as EdgeBench leaves out a missing cell.
* ``infra_error``: the run has an infra error (an ``ERROR`` line in ``run_agent.log``): no value
  unless the caller asks for infra-error runs (``include_infra=True``), then one of the above.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Mapping, Optional, Sequence

from edgetui.replay.rescale import rescale
from edgetui.replay.selection import best_so_far, entry_from_submission, select_best
from edgetui.replay.analysis.task_variants import variant_of
from edgetui.replay.invalid_rounds import is_invalid

__all__ = ["CELL_STATES", "Cell", "RunCurve", "run_curve", "known_elapsed", "is_retry", "run_group_key"]

#: Every state a cell can have (see the module docstring).
CELL_STATES = ("value", "carried", "not_yet", "no_valid", "infra_error")

_RECORD_FIELDS = (
    "round",
    "kind",
    "n",
    "submission_id",
    "status",
    "pass_rate",
    "score",
    "score_flag",
    "score_0_100",
    "max_score",
    "valid",
    "error",
)


@dataclass(frozen=True)
class Cell:
    """One run's (or one group's) value at one hour. ``value``: 0–100 or ``None``; ``state``: one of
    :data:`CELL_STATES`; ``round``: the best round behind the value (``None`` without one)."""

    value: Optional[float]
    state: str
    round: Optional[str] = None


@dataclass
class RunCurve:
    """A run's best-so-far curve in per-task values.

    ``steps``: ``(known_elapsed_s, value or None, best_round)`` in time order, one per change of
    the selected best (seconds since the run's start; value 0–100). ``end_elapsed_s``: when the run
    ended (``None`` while it goes on); ``now_elapsed_s``: how far a run going on has got (seconds).
    ``first_value``: the value of the first graded submission on its own (the starting score used by
    learning speed), with ``first_elapsed_s`` its known time.
    """

    run_key: str
    task_id: str
    run_id: str = ""
    model: Optional[str] = None
    category: Optional[str] = None
    infra_error: bool = False
    is_sample: bool = False
    live: bool = False
    end_elapsed_s: Optional[float] = None
    now_elapsed_s: Optional[float] = None
    steps: list[tuple[float, Optional[float], Optional[str]]] = field(default_factory=list)
    first_value: Optional[float] = None
    first_elapsed_s: Optional[float] = None
    time_basis: str = "wall_clock"
    #: the run's task variant (:func:`edgetui.replay.analysis.task_variants.variant_of`; None: digests unknown)
    variant: Optional[str] = None

    @property
    def retry(self) -> bool:
        return is_retry(self.run_id)

    def cell(self, hours: float, include_infra: bool = False) -> Cell:
        """The :class:`Cell` at ``hours`` elapsed (hours, not seconds)."""
        if self.infra_error and not include_infra:
            return Cell(None, "infra_error")
        h_s = hours * 3600.0
        if self.live and (self.now_elapsed_s is None or self.now_elapsed_s < h_s):
            return Cell(None, "not_yet")
        ended_before = self.end_elapsed_s is not None and self.end_elapsed_s < h_s and not self.live
        best: tuple[Optional[float], Optional[str]] = (None, None)
        for t, v, rnd in self.steps:
            if t > h_s:
                break
            best = (v, rnd)
        if best[0] is None:
            return Cell(None, "no_valid")
        return Cell(best[0], "carried" if ended_before else "value", best[1])


def is_retry(run_id: str) -> bool:
    """``-retry`` in a run id marks a single-task re-run (SForge's visualizer leaves it out of group
    aggregates; docs/sforge-run-folders.md §8.1)."""
    return "-retry" in (run_id or "")


#: SForge's visualizer (sforge/visualizer/scanner.py, 1.1.0): a trailing ``-<machine>-<14-digit
#: timestamp>``, else a trailing ``-<14-digit timestamp>``
_GROUP_MACHINE_TS = re.compile(r"-\d+-\d{14}$")
_GROUP_TS = re.compile(r"-\d{14}$")


def run_group_key(run_id: str) -> str:
    """SForge's run group (the rule of ``sforge.visualizer.scanner.run_group_key``, checked against
    it by tests/test_run_group_key.py): the run id without a trailing ``-<machine digits>-<14-digit
    timestamp>``, else without a trailing ``-<14 digits>``, else unchanged
    (``glm51-n35-160-152-20260528172933`` → ``glm51-n35-160``; ``0530-glm51-new-env`` unchanged).
    ``None`` or empty gives ``""``."""
    run_id = run_id or ""
    stripped = _GROUP_MACHINE_TS.sub("", run_id)
    if stripped != run_id:
        return stripped
    return _GROUP_TS.sub("", run_id)


def _num(v: Any) -> Optional[float]:
    try:
        f = float(v)
    except (TypeError, ValueError):  # not a number: no score
        return None
    return f if math.isfinite(f) else None


def known_elapsed(sub: Mapping[str, Any], started_at: Optional[float]) -> Optional[float]:
    """Seconds from the run's start to when a submission's result was known: ``submissions.t``,
    which the ingest sets to that moment (``evolve_state.json`` ``at``, else the judge's
    ``Result:`` line, else the report's time: :func:`edgetui.parsers.sforge_dir.result_known_time`);
    a row without ``submitted_at`` (an older record, whose ``t`` was the grading start) adds its
    ``runtime_s``. ``None`` without a start or time."""
    t = _num(sub.get("t"))
    if started_at is None or t is None:
        return None
    if sub.get("submitted_at", 0) is None and sub.get("kind") != "game":
        rt = _num(sub.get("runtime_s"))
        if rt is not None:
            return t + rt - started_at
    return t - started_at


def _sent(sub: Mapping[str, Any]) -> Optional[float]:
    """When a submission was sent (its judge history's creation order): ``submitted_at``, else ``t``."""
    v = _num(sub.get("submitted_at"))
    return v if v is not None else _num(sub.get("t"))


def _value_of(row: Mapping[str, Any], best_pass_rate: Any, spec: Optional[dict]) -> Optional[float]:
    if spec and spec.get("kind"):
        v = _num(row.get("score_0_100"))
        if v is None:
            v = rescale(_num(row.get("score")), spec)
        return _num(v)
    pr = _num(best_pass_rate)
    return None if pr is None else pr * 100.0


def run_curve(
    run: Mapping[str, Any],
    subs: Sequence[Mapping[str, Any]],
    rescale_spec: Optional[dict] = None,
    *,
    now: Optional[float] = None,
    clock=None,
) -> RunCurve:
    """The :class:`RunCurve` of one run.

    ``run``: a ``runs`` row (``run_key``, ``run_id``, ``task_id``, ``model``, ``status``,
    ``started_at``, ``ended_at``, ``last_event_at``, ``infra_error``, ``is_sample``, ``selection``,
    ``score_direction``; ``category`` when joined with ``tasks``). ``subs``: its ``submissions``
    rows (any order; ``manual`` rounds and games in flight are left out as the ingest does).
    ``rescale_spec``: the task's ``judge.rescale`` (``None``: values are pass rate × 100).
    ``now``: epoch UTC for a run going on (default: its last event). A run is going on while its
    status is ``running`` or ``grading``. ``clock``: maps wall elapsed seconds to the curve's time
    basis (:class:`edgetui.replay.analysis.timebasis.ActiveClock`; default: wall clock).
    """
    start = _num(run.get("started_at"))
    live = run.get("status") in ("running", "grading")
    end = _num(run.get("ended_at")) or _num(run.get("last_event_at"))
    curve = RunCurve(
        run_key=str(run.get("run_key")),
        task_id=str(run.get("task_id")),
        run_id=str(run.get("run_id") or ""),
        model=run.get("model"),
        category=run.get("category"),
        infra_error=bool(run.get("infra_error")),
        is_sample=bool(run.get("is_sample")),
        live=live,
        variant=variant_of(run.get("work_image"), run.get("judge_image")),
    )
    if start is not None:
        curve.end_elapsed_s = None if live or end is None else end - start
        ref = now if now is not None else (_num(run.get("last_event_at")) or end)
        curve.now_elapsed_s = None if ref is None else ref - start
        if clock is not None:
            curve.end_elapsed_s, curve.now_elapsed_s = clock(curve.end_elapsed_s), clock(curve.now_elapsed_s)
    # invalid rounds are no input (docs/sforge-formats.md, "Invalid rounds"): never a value at h
    counted = [s for s in subs if s.get("kind") != "manual" and s.get("status") != "in_flight" and not is_invalid(s)]
    # creation order: the judge's history order (submission time, as the ingest orders them)
    order = sorted(counted, key=lambda s: (_sent(s) is None, _sent(s) or 0.0, s.get("n") or 0, str(s.get("round"))))
    entries = [entry_from_submission(SimpleNamespace(**{k: s.get(k) for k in _RECORD_FIELDS})) for s in order]
    known = [known_elapsed(s, start) for s in order]
    if clock is not None:
        known = [clock(k) for k in known]
        curve.time_basis = "active"
    by_round = {s.get("round"): s for s in order}
    policy = run.get("selection") or "pass_rate_first"
    direction = run.get("score_direction") or "maximize"
    times = sorted({k for k in known if k is not None})
    last: tuple[Optional[float], Optional[str]] = (None, None)
    ks = [k for k in known if k is not None]
    if all(a <= b for a, b in zip(ks, ks[1:])):  # results known in submission order: one O(n) pass
        bests = {}
        for _e, k, st in zip(entries, known, best_so_far(entries, direction, policy)):
            if k is not None:
                bests[k] = st.result()
    else:
        bests = None
    for kt in times:
        if bests is not None:
            best = bests[kt]
        else:
            subset = [e for e, k in zip(entries, known) if k is not None and k <= kt]
            best = select_best(subset, direction, policy)
        val = None
        if best.best_round and best.best_valid:
            val = _value_of(by_round.get(best.best_round, {}), best.best_pass_rate, rescale_spec)
        cur = (val, best.best_round or None)
        if cur != last:
            curve.steps.append((kt, val, cur[1]))
            last = cur
    # the first graded submission's own value (starting score for learning speed)
    for s, e, k in sorted(((s, e, k) for s, e, k in zip(order, entries, known) if k is not None), key=lambda x: x[2]):
        if e.get("status", "completed") == "completed" and s.get("status") == "graded":
            b = select_best([e], direction, policy)
            if b.best_round and b.best_valid:
                curve.first_value = _value_of(s, b.best_pass_rate, rescale_spec)
                curve.first_elapsed_s = k
            break
    return curve
