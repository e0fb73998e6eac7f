"""Moments of a run: where the best-so-far jumped, and which jumps were *reframing moments*.

No Textual and no database here: the inputs are plain rows (the loader is
:mod:`edgetui.record.moments_table`), the outputs :class:`Moment` values, so the detectors are
tested on their own and shared by the CLI, the replay screen and the report. In a view, moments
are placed on the paged cursor, the interface they build on (:mod:`replay`): by round, through
:meth:`edgetui.replay.cursor.ReplayCursor.set_moments`, which finds the rounds' graded positions in the
cursor's index; no event column is read for it.

**Signals.**

* :func:`graded_series`: every graded round in *result-known order* (``submissions.t``, the
  time the judge's result was known; else submission time + the judge's ``runtime_s``), with the
  running best from the one best-so-far function, :func:`edgetui.replay.selection.best_so_far`,
  under the task's selection policy and score direction. Values are what the chart
  plots (:func:`edgetui.replay.selection.display_value`): raw task units for a score task,
  the pass rate × 100 (0–100) otherwise. ``gain`` is always counted in the improving
  direction (positive = better, also for ``minimize`` tasks).
* :func:`behaviour_cycles`: the agent's behaviour between two agent submissions (a
  *cycle*): thinking and message characters, new files written, files touched that the
  recent cycles did not touch, size of edits, test / eval / build runs, the cycle's
  length (submit rate, idle gaps), the tool-call mix and output tokens.

**Detectors** (``DETECTOR_VERSION`` is part of each moment's identity):

* ``gain``: a new best whose gain is at least ``gain_k`` × the recent noise (robust
  spread, 1.4826 × MAD, of the last ``noise_window`` non-improving graded values, each
  taken as its distance from the best-so-far at its time) or at
  least ``headroom_frac`` of the remaining headroom (to the task's ceiling, 100 for pass
  rates; none known for a score task without one).
* ``changepoint``: change points of the best-so-far over log elapsed time (a uniform grid
  in log time), found with the ``ruptures`` library's Pelt (``model="l2"``,
  ``jump=1``: its default of 5 only tests every 5th point) over a penalty sweep; the
  number of change points kept is the one stable over the widest range of penalties.
  Each change point is reported at the new best with the largest gain between the grid
  point before it and its own. (The ``l2`` cost is computed from prefix sums, the same cost
  as ruptures' ``CostL2`` in O(1) per segment.)
* ``reframe``: a ``gain`` moment preceded, within ``lead_cycles`` cycles (one more for an
  auto-eval round, whose snapshot lands inside a cycle) and
  ``lead_max_s`` seconds, by a cycle whose behaviour score (mean of the features'
  robust z-scores against the ``base_cycles`` cycles before it, each clipped to
  0…``z_cap``) is at least ``behaviour_min``. Its lead time is the new best's submission
  time minus the start of that cycle; its confidence (0–1) is
  ``(1 − e^(−b / behaviour_min)) · (1 − e^(−r / gain_k))`` with ``b`` the behaviour
  score and ``r`` the gain over the noise.

Parameters are frozen in :data:`DEFAULT_PARAMS` (the acceptance test in
``tests/test_moments_acceptance.py`` checks them on generated runs never used for
tuning; see docs/moments.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field, replace
from types import SimpleNamespace
from typing import Any, Iterable, Mapping, Optional, Sequence, cast

# (Selector: best_so_far's own fold, kept between live updates so a series resumes where it ended)
from edgetui.replay.invalid_rounds import is_invalid
from edgetui.replay.selection import Selector, display_value, entry_from_submission

__all__ = [
    "DETECTOR_VERSION",
    "DETECTORS",
    "Params",
    "DEFAULT_PARAMS",
    "Graded",
    "BehaviourEvent",
    "Cycle",
    "Moment",
    "graded_series",
    "behaviour_cycles",
    "CycleBuilder",
    "OnlineMoments",
    "detect_gain",
    "detect_changepoints",
    "detect_reframing",
    "detect_all",
]

#: Version of the detectors' logic; bumped when a detector's output for the same input changes.
DETECTOR_VERSION = 1
DETECTORS = ("reframe", "gain", "changepoint")


@dataclass(frozen=True)
class Params:
    """Detector parameters (frozen: see :data:`DEFAULT_PARAMS`). Times in seconds."""

    noise_window: int = 20  # non-improving graded values the noise is measured on
    noise_min: int = 4  # fewer than this: the noise is unknown (headroom test only)
    gain_k: float = 0.7  # gain ≥ gain_k × noise
    headroom_frac: float = 0.2  # or gain ≥ headroom_frac × (ceiling − best before)
    base_cycles: int = 12  # cycles a behaviour cycle is compared with
    base_min: int = 4  # fewer than this before it: no behaviour score
    lead_cycles: int = 2  # the behaviour change is in the cycle of the new best or the one before
    lead_max_s: float = 5400.0  # ... and starts at most this long before the new best was submitted
    z_cap: float = 6.0  # a feature's z-score is clipped to 0…z_cap
    behaviour_min: float = 0.75  # mean clipped z over the features
    provisional_after: int = 3  # a moment with fewer graded rounds after it is provisional
    cp_grid: int = 64  # points of the log-time grid of the change-point detector
    cp_penalties: tuple = (0.5, 1, 2, 4, 8, 16, 32, 64, 128)  # × the series' variance

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cp_penalties"] = list(self.cp_penalties)
        return d


DEFAULT_PARAMS = Params()


@dataclass(frozen=True)
class Graded:
    """One graded round in result-known order.

    ``t_submit`` / ``t_result``: epoch UTC seconds (submission, result known);
    ``elapsed_s``: ``t_result`` − the run's start (where the chart draws the round). ``value``: the round's own plotted value
    (``None`` when ungraded, failed or non-finite), ``best``: the running best's plotted value
    after this round, ``best_before`` the one before it. ``components``: sub-score name →
    score (the report's per-test scores, task units). ``event_id``: the round's
    ``judge_result`` event, when known.
    """

    index: int
    round: str
    kind: str
    t_submit: Optional[float]
    t_result: Optional[float]
    elapsed_s: Optional[float]
    value: Optional[float]
    considered: bool
    is_new_best: bool
    best: Optional[float]
    best_before: Optional[float]
    components: Mapping[str, float] = field(default_factory=dict)
    event_id: Optional[str] = None


@dataclass(frozen=True)
class BehaviourEvent:
    """One agent action, reduced to what the behaviour features need.

    ``kind``: ``thinking`` / ``agent_message`` / ``tool_call``; ``t`` epoch UTC;
    ``chars``: characters of the thinking / message text, or of the edit (new text of an
    Edit, content of a Write); ``path``: the file a tool call read or wrote; ``command``: a
    shell command (first 300 characters); ``tokens``: output tokens of the model message.
    """

    event_id: str
    kind: str
    t: float
    tool_name: Optional[str] = None
    chars: int = 0
    path: Optional[str] = None
    command: Optional[str] = None
    tokens: int = 0


@dataclass
class Cycle:
    """The agent's behaviour between two agent submissions (``start`` < t ≤ ``end``, epoch UTC)."""

    start: float
    end: float
    features: dict[str, float]
    evidence: list[str]  # event ids most telling of the cycle (notes, new files)
    score: Optional[float] = None  # behaviour score against the cycles before (None: too few)
    z: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Moment:
    """One detected moment. Identity: (run, ``detector``, ``version``, ``round``).

    ``before`` → ``after``: the best-so-far's plotted values around the new best (task units,
    or pass rate 0–100); ``gain`` in the improving direction; ``noise``: the robust spread
    the gain was compared with (``None`` when unknown); ``headroom``: ceiling − before
    (``None`` when no ceiling); ``lead_time_s``: seconds from the behaviour change's start to
    the new best's submission (reframe only); ``confidence`` 0–1; ``components``: sub-scores
    that moved, name → [before, after]; ``evidence``: event ids (the judge result first);
    ``provisional``: fewer than ``provisional_after`` graded rounds came after it.
    """

    detector: str
    version: int
    round: str
    index: int
    t: Optional[float]
    elapsed_s: Optional[float]
    before: Optional[float]
    after: Optional[float]
    gain: Optional[float]
    noise: Optional[float]
    headroom: Optional[float]
    lead_time_s: Optional[float]
    confidence: float
    components: dict[str, list]
    evidence: list[str]
    behaviour: dict[str, float]
    provisional: bool
    params: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- signals


def _row_get(row: Any, key: str) -> Any:
    # (dict rows first: an isinstance check against typing.Mapping costs more than the rest of a
    # graded series put together)
    get = getattr(row, "get", None)
    return get(key) if get is not None else getattr(row, key, None)


def graded_series(
    subs: Sequence[Mapping[str, Any]],
    *,
    selection: str = "pass_rate_first",
    direction: str = "maximize",
    score_task: bool = True,
    started_at: Optional[float] = None,
    components: Optional[Mapping[str, Mapping[str, float]]] = None,
    event_ids: Optional[Mapping[str, str]] = None,
) -> list[Graded]:
    """The graded rounds of a run in result-known order, with the running best.

    ``subs``: ``submissions`` rows (keys of :class:`edgetui.records.SubmissionRecord`:
    ``round``, ``kind``, ``status``, ``t``, ``submitted_at``, ``runtime_s``, ``pass_rate``,
    ``score``, ``score_flag``, ``valid``, ``max_score``, ``submission_id``, ``error``, ``n``).
    Manual rounds and rounds still in flight are left out (SForge does not count them).
    ``components``: round → {sub-score name: score}; ``event_ids``: round → its
    ``judge_result`` event id. Raises ``ValueError`` for an unknown ``selection``.
    """
    sel = Selector(direction, selection)
    return list(
        _graded_from(
            _known_rows(subs),
            0,
            sel,
            None,
            score_task=score_task,
            started_at=started_at,
            components=components,
            event_ids=event_ids,
        )
    )


#: the submission fields a graded round is made of (its signature in :class:`OnlineMoments`)
_SUB_FIELDS = (
    "kind",
    "round",
    "submission_id",
    "status",
    "score",
    "score_flag",
    "pass_rate",
    "max_score",
    "valid",
    "error",
    "t",
    "submitted_at",
    "runtime_s",
)


def _t_submit(r: Any) -> Optional[float]:
    v = _row_get(r, "submitted_at")
    return v if v is not None else _row_get(r, "t")


def _t_result(r: Any) -> Optional[float]:
    # ``submissions.t`` is when the round's result was known (edgetui.record.ingest.finalize_run);
    # without it, the submission plus the judge's runtime
    v = _row_get(r, "t")
    if v is not None:
        return v
    t = _row_get(r, "submitted_at")
    return None if t is None else t + float(_row_get(r, "runtime_s") or 0.0)


def _known_rows(subs: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The rows a moment can come from: those SForge counts (no manual round, none in flight) less
    the invalid rounds (:mod:`edgetui.replay.invalid_rounds`), in result-known order."""
    rows = [
        r
        for r in subs
        if _row_get(r, "kind") != "manual" and _row_get(r, "status") != "in_flight" and not is_invalid(r)
    ]
    rows.sort(key=lambda r: (_t_result(r) is None, _t_result(r) or 0.0, _row_get(r, "round") or ""))
    return rows


def _graded_from(
    rows: Sequence[Any],
    start: int,
    sel: Selector,
    prev_best: Optional[float],
    *,
    score_task: bool,
    started_at: Optional[float],
    components: Optional[Mapping[str, Mapping[str, float]]],
    event_ids: Optional[Mapping[str, str]],
) -> Iterable[Graded]:
    """The :class:`Graded` of ``rows[start:]``, ``sel`` holding the selection over ``rows[:start]``
    and ``prev_best`` the plotted best after them (what :func:`edgetui.replay.selection.best_so_far`
    computes, one row at a time, so a series can be resumed)."""
    for i in range(start, len(rows)):
        r = rows[i]
        rec = SimpleNamespace(
            **{
                k: _row_get(r, k)
                for k in (
                    "kind",
                    "round",
                    "submission_id",
                    "status",
                    "score",
                    "score_flag",
                    "pass_rate",
                    "max_score",
                    "valid",
                    "error",
                )
            }
        )
        considered, is_new = sel.feed(entry_from_submission(rec))
        status = rec.status
        value = display_value(rec.score, rec.pass_rate, score_task) if status == "graded" else None
        best = display_value(sel.best_score, sel.best_pass_rate, score_task) if sel.best_round else None
        ts, tr = _t_submit(r), _t_result(r)
        rnd = rec.round
        yield Graded(
            index=i,
            round=rnd,
            kind=rec.kind or "",
            t_submit=ts,
            t_result=tr,
            elapsed_s=(tr - started_at) if (tr is not None and started_at is not None) else None,
            value=value,
            considered=considered,
            is_new_best=is_new,
            best=best,
            best_before=prev_best,
            components=dict((components or {}).get(rnd, {})),
            event_id=(event_ids or {}).get(rnd),
        )
        prev_best = best


_TEST_RE = re.compile(r"\b(pytest|unittest|local_eval|evaluate|make|cargo\s+test|npm\s+test|go\s+test|ctest|tox)\b")
_TOOL_GROUPS = {
    "Read": "read",
    "Grep": "read",
    "Glob": "read",
    "Edit": "edit",
    "Write": "edit",
    "MultiEdit": "edit",
    "NotebookEdit": "edit",
    "Bash": "shell",
    "Task": "delegate",
    "TodoWrite": "plan",
    "apply_patch": "edit",
    "shell": "shell",
    "exec_command": "shell",
}
_GROUPS = ("read", "edit", "shell", "delegate", "plan", "other")
FEATURES = ("notes", "new_files", "novel_files", "edit_size", "test_runs", "duration", "tool_mix", "tokens")


def _mad_sigma(xs: Sequence[float]) -> Optional[float]:
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    dev = sorted(abs(x - med) for x in s)
    mad = dev[n // 2] if n % 2 else (dev[n // 2 - 1] + dev[n // 2]) / 2
    return 1.4826 * mad


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def behaviour_cycles(
    events: Sequence[BehaviourEvent], boundaries: Sequence[float], params: Params = DEFAULT_PARAMS
) -> list[Cycle]:
    """The behaviour of each cycle between consecutive ``boundaries`` (epoch UTC, the agent's
    submission times, ascending), each scored against the ``base_cycles`` cycles before it.

    ``events`` in time order. Cycle ``i`` holds the events with
    ``boundaries[i-1] < t <= boundaries[i]`` (the first cycle starts at the first event).
    Features (:data:`FEATURES`): ``notes`` log(1 + thinking and message characters);
    ``new_files`` files written that no earlier event of the run touched; ``novel_files`` files
    touched that none of the previous ``base_cycles`` cycles touched; ``edit_size`` log(1 +
    characters edited or written); ``test_runs`` shell commands running tests, an evaluation
    or a build; ``duration`` log(1 + the cycle's seconds); ``tool_mix`` L1 distance of the
    cycle's tool-call mix (read / edit / shell / delegate / plan / other) from the mean mix of
    the previous cycles; ``tokens`` log(1 + output tokens). (:class:`CycleBuilder` does the
    same one cycle at a time, for a run that grows.)
    """
    b = CycleBuilder(params)
    b.add_events(events)
    for end in sorted(x for x in boundaries if x is not None):
        b.close(end)
    return b.cycles


class CycleBuilder:
    """Behaviour cycles built as a run grows: :meth:`add_events` (in time order), then
    :meth:`close` at each agent submission's time. Each cycle is scored when it closes, against
    the cycles before it, so the result equals :func:`behaviour_cycles` over the same input; an
    event that arrives after the cycle its time falls in was closed counts in the open one."""

    def __init__(self, params: Params = DEFAULT_PARAMS) -> None:
        self.params = params
        self.cycles: list[Cycle] = []
        self._pending: list[BehaviourEvent] = []
        self._pos = 0  # events before it are consumed
        self._mixes: list[dict[str, float]] = []
        self._touched: list[set[str]] = []
        self._seen: set[str] = set()
        self._last_end: Optional[float] = None
        self.last_event_t: Optional[float] = None

    def add_events(self, events: Iterable[BehaviourEvent]) -> None:
        for e in events:
            self._pending.append(e)
            if self.last_event_t is None or e.t > self.last_event_t:
                self.last_event_t = e.t

    def close(self, end: float) -> Cycle:
        """Close the cycle ending at ``end`` (epoch UTC) and return it, scored."""
        params = self.params
        pend, pos = self._pending, self._pos
        if self._last_end is None:
            t0 = pend[pos].t if pos < len(pend) else end
            start = min(t0, end) - 1e-9
        else:
            start = self._last_end
        k = pos
        while k < len(pend) and pend[k].t <= end:
            k += 1
        take = pend[pos:k]
        self._pos = k
        if k > 4096 and k * 2 > len(pend):  # drop what is consumed, now and then
            self._pending, self._pos = pend[k:], 0
        notes = edit = tests = toks = 0
        new_files = 0
        touched: set[str] = set()
        mix = dict.fromkeys(_GROUPS, 0.0)
        ev_notes: list[tuple[int, str]] = []
        ev_new: list[str] = []
        for e in take:
            toks += e.tokens or 0
            if e.kind in ("thinking", "agent_message"):
                notes += e.chars
                ev_notes.append((e.chars, e.event_id))
                continue
            if e.kind != "tool_call":
                continue
            g = _TOOL_GROUPS.get(e.tool_name or "", "other")
            mix[g] += 1
            if g == "edit":
                edit += e.chars
            if e.command and _TEST_RE.search(e.command):
                tests += 1
            if e.path:
                if e.path not in self._seen and g == "edit":
                    new_files += 1
                    ev_new.append(e.event_id)
                self._seen.add(e.path)
                touched.add(e.path)
        recent = set().union(*self._touched[-params.base_cycles :]) if self._touched else set()
        tot = sum(mix.values()) or 1.0
        mixn = {k2: v / tot for k2, v in mix.items()}
        prev = self._mixes[-params.base_cycles :]
        if prev:
            mean = {k2: sum(m[k2] for m in prev) / len(prev) for k2 in _GROUPS}
            dist = sum(abs(mixn[k2] - mean[k2]) for k2 in _GROUPS)
        else:
            dist = 0.0
        feats = {
            "notes": math.log1p(notes),
            "new_files": float(new_files),
            "novel_files": float(len(touched - recent)) if self._touched else 0.0,
            "edit_size": math.log1p(edit),
            "test_runs": float(tests),
            "duration": math.log1p(max(0.0, end - start)),
            "tool_mix": dist,
            "tokens": math.log1p(toks),
        }
        ev_notes.sort(reverse=True)
        c = Cycle(start=start, end=end, features=feats, evidence=[eid for _, eid in ev_notes[:3]] + ev_new[:5])
        base = self.cycles[-params.base_cycles :]
        if len(base) >= params.base_min:
            z: dict[str, float] = {}
            for f in FEATURES:
                xs = [b.features[f] for b in base]
                med = _median(xs)
                sig = _mad_sigma(xs) or 0.0
                # a floor on the spread: a feature constant over the baseline (e.g. no new files)
                # counts one unit (one file, e-fold of characters) as one sigma
                sig = max(sig, 1.0 if f in ("new_files", "novel_files", "test_runs") else 0.5)
                z[f] = max(0.0, min(params.z_cap, (c.features[f] - med) / sig))
            c.z = z
            c.score = sum(z.values()) / len(FEATURES)
        self.cycles.append(c)
        self._mixes.append(mixn)
        self._touched.append(touched)
        self._last_end = end
        return c


# ---------------------------------------------------------------------------- detectors


def _gain(before: Optional[float], after: Optional[float], improving_up: bool) -> Optional[float]:
    if before is None or after is None:
        return None
    return (after - before) if improving_up else (before - after)


def _components_moved(series: Sequence[Graded], i: int) -> dict[str, list]:
    """Sub-scores that moved from the previous best round to round ``i``: name → [before, after]
    (those whose move is at least a quarter of the largest move)."""
    g = series[i]
    prev = next((s for s in reversed(series[:i]) if s.is_new_best), None)
    if prev is None or not g.components or not prev.components:
        return {}
    moves = {k: (a, v) for k, v in g.components.items() if (a := prev.components.get(k)) is not None and v is not None}
    if not moves:
        return {}
    top = max(abs(b - a) for a, b in moves.values())
    if top <= 0:
        return {}
    return {
        k: [a, b]
        for k, (a, b) in sorted(moves.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]))
        if abs(b - a) >= 0.25 * top
    }


def _noise_before(series: Sequence[Graded], i: int, params: Params) -> Optional[float]:
    # the shortfall of each non-improving value from the best at its time: a jump in between
    # moves the level of the raw values, not their spread
    vals: list[float] = []
    for s in reversed(series[:i]):
        if s.considered and not s.is_new_best and s.value is not None and s.best is not None:
            vals.append(s.best - s.value)
            if len(vals) >= params.noise_window:
                break
    if len(vals) < params.noise_min:
        return None
    return _mad_sigma(vals)


def _provisional(series: Sequence[Graded], i: int, params: Params) -> bool:
    later = sum(1 for s in series[i + 1 :] if s.value is not None or s.considered)
    return later < params.provisional_after


def detect_gain(
    series: Sequence[Graded],
    *,
    improving_up: bool = True,
    ceiling: Optional[float] = None,
    params: Params = DEFAULT_PARAMS,
) -> list[Moment]:
    """New bests whose gain is large against the recent noise or the remaining headroom.

    The first best of a run is no moment (there is nothing before it). ``ceiling``: the best
    value the task allows in plotted units (100 for pass rates; ``None`` when unknown).
    """
    out = []
    pdict = params.as_dict()
    for i, g in enumerate(series):
        if not g.is_new_best or g.best_before is None:
            continue
        gain = _gain(g.best_before, g.best, improving_up)
        if gain is None or gain <= 0:
            continue
        noise = _noise_before(series, i, params)
        headroom = _gain(g.best_before, ceiling, improving_up) if ceiling is not None else None
        by_noise = noise is not None and noise > 0 and gain >= params.gain_k * noise
        by_head = headroom is not None and headroom > 0 and gain >= params.headroom_frac * headroom
        if not (by_noise or by_head):
            continue
        # without noise, by_head held: headroom is a float
        r = gain / noise if noise else (gain / (params.headroom_frac * cast(float, headroom)) * params.gain_k)
        out.append(
            Moment(
                detector="gain",
                version=DETECTOR_VERSION,
                round=g.round,
                index=i,
                t=g.t_result,
                elapsed_s=g.elapsed_s,
                before=g.best_before,
                after=g.best,
                gain=gain,
                noise=noise,
                headroom=headroom,
                lead_time_s=None,
                confidence=round(1 - math.exp(-r / params.gain_k), 4),
                components=_components_moved(series, i),
                evidence=[g.event_id] if g.event_id else [],
                behaviour={},
                provisional=_provisional(series, i, params),
                params=pdict,
            )
        )
    return out


def _prefix_l2_cost(rpt: Any) -> Any:
    """ruptures' ``l2`` cost (a segment's squared deviation from its mean, ``CostL2``) from prefix
    sums: O(1) per segment instead of a variance over its points (the same values to rounding)."""
    # lazy: numpy loads with the first computation that needs it, not with the module
    import numpy as np

    class PrefixL2(rpt.base.BaseCost):
        model = "l2"
        min_size = 1

        def fit(self, signal):
            x = np.asarray(signal, dtype=float).reshape(len(signal), -1)
            self.signal = x
            self.s1 = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
            self.s2 = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x * x, axis=0)])
            return self

        def error(self, start, end):
            if end - start < self.min_size:
                raise rpt.costs.NotEnoughPoints
            n = end - start
            a = self.s1[end] - self.s1[start]
            return float(((self.s2[end] - self.s2[start]) - a * a / n).sum())

    return PrefixL2()


def detect_changepoints(
    series: Sequence[Graded], *, improving_up: bool = True, params: Params = DEFAULT_PARAMS
) -> list[Moment]:
    """Change points of the best-so-far step curve over log elapsed time (``ruptures`` Pelt,
    ``model="l2"``, ``jump=1``, ``min_size=2``, penalties ``cp_penalties`` × the curve's variance;
    the number of change points kept is the one found over the most penalties of the sweep,
    ties to the larger penalty). Each is reported at the new best with the largest gain between
    the grid point before the change and the change's own."""
    # lazy: numpy loads with the first computation that needs it, not with the module
    import numpy as np
    import ruptures as rpt

    pts = [
        (g.elapsed_s, g.best, i)
        for i, g in enumerate(series)
        if g.best is not None and g.elapsed_s is not None and g.elapsed_s > 0
    ]
    if len(pts) < 4:
        return []
    lo, hi = math.log(pts[0][0]), math.log(pts[-1][0])
    if hi - lo <= 0:
        return []
    n = params.cp_grid
    grid = [lo + (hi - lo) * k / (n - 1) for k in range(n)]
    sig = np.empty(n)
    j = 0
    for k, x in enumerate(grid):
        while j + 1 < len(pts) and math.log(pts[j + 1][0]) <= x + 1e-12:
            j += 1
        sig[k] = pts[j][1]
    var = float(np.var(sig))
    if var <= 0:
        return []
    algo = rpt.Pelt(custom_cost=_prefix_l2_cost(rpt), jump=1, min_size=2).fit(sig.reshape(-1, 1))
    found: dict[int, list] = {}
    for p in params.cp_penalties:
        bkps = tuple(algo.predict(pen=p * var * 1.0)[:-1])
        found.setdefault(len(bkps), []).append((p, bkps))
    counts = {k: v for k, v in found.items() if k > 0}
    if not counts:
        return []
    k_best = max(counts, key=lambda k: (len(counts[k]), max(p for p, _ in counts[k])))
    bkps = counts[k_best][-1][1]
    out = []
    used: set[int] = set()
    for b in bkps:
        # the step happened after grid point b-1 and by grid point b: the largest new best in between
        lo_el, hi_el = math.exp(grid[b - 1]), math.exp(grid[b])
        inside = [i for el, _, i in pts if lo_el < el <= hi_el + 1e-6 and series[i].is_new_best]
        if not inside:
            continue
        i = max(inside, key=lambda i: _gain(series[i].best_before, series[i].best, improving_up) or 0.0)
        if i in used:
            continue
        used.add(i)
        g = series[i]
        gain = _gain(g.best_before, g.best, improving_up)
        out.append(
            Moment(
                detector="changepoint",
                version=DETECTOR_VERSION,
                round=g.round,
                index=i,
                t=g.t_result,
                elapsed_s=g.elapsed_s,
                before=g.best_before,
                after=g.best,
                gain=gain,
                noise=_noise_before(series, i, params),
                headroom=None,
                lead_time_s=None,
                confidence=round(len(counts[k_best]) / len(params.cp_penalties), 4),
                components=_components_moved(series, i),
                evidence=[g.event_id] if g.event_id else [],
                behaviour={},
                provisional=_provisional(series, i, params),
                params=params.as_dict(),
            )
        )
    return out


def detect_reframing(
    series: Sequence[Graded],
    cycles: Sequence[Cycle],
    *,
    improving_up: bool = True,
    ceiling: Optional[float] = None,
    params: Params = DEFAULT_PARAMS,
    gains: Optional[Sequence[Moment]] = None,
) -> list[Moment]:
    """``gain`` moments (``gains`` when already detected) shortly preceded by a behaviour change
    (see the module docstring)."""
    out = []
    ends = [c.end for c in cycles]
    if gains is None:
        gains = detect_gain(series, improving_up=improving_up, ceiling=ceiling, params=params)
    for m in gains:
        g = series[m.index]
        t = g.t_submit
        if t is None:
            continue
        # the cycle holding the new best's submission (an auto round: the cycle it fell in)
        k = next((k for k, e in enumerate(ends) if e >= t - 1e-6), None)
        if k is None:
            continue
        # an auto-eval snapshot lands inside a cycle: its partial cycle holds less than a cycle's
        # work, so the window reaches one cycle further back
        lo = k - params.lead_cycles + 1 - (0 if g.kind == "agent" else 1)
        best_c: Optional[Cycle] = None
        best_c_score = 0.0
        for c in cycles[max(0, lo) : k + 1]:
            if c.score is None or c.score < params.behaviour_min or t - c.start > params.lead_max_s:
                continue
            if best_c is None or c.score > best_c_score:
                best_c, best_c_score = c, c.score
        if best_c is None:
            continue
        r = (m.gain or 0) / m.noise if m.noise else params.gain_k
        conf = (1 - math.exp(-best_c_score / params.behaviour_min)) * (1 - math.exp(-r / params.gain_k))
        out.append(
            replace(
                m,
                detector="reframe",
                lead_time_s=max(0.0, t - best_c.start),
                confidence=round(conf, 4),
                evidence=m.evidence + best_c.evidence,
                behaviour={k2: round(v, 3) for k2, v in best_c.z.items() if v > 0},
            )
        )
    return out


def detect_all(
    series: Sequence[Graded],
    events: Sequence[BehaviourEvent],
    *,
    improving_up: bool = True,
    ceiling: Optional[float] = None,
    params: Params = DEFAULT_PARAMS,
) -> list[Moment]:
    """Every detector's moments (``reframe``, ``gain``, ``changepoint``), by round index."""
    bounds = [g.t_submit for g in series if g.kind == "agent" and g.t_submit is not None]
    cycles = behaviour_cycles(events, bounds, params)
    gains = detect_gain(series, improving_up=improving_up, ceiling=ceiling, params=params)
    out = detect_reframing(series, cycles, improving_up=improving_up, ceiling=ceiling, params=params, gains=gains)
    out += gains
    out += detect_changepoints(series, improving_up=improving_up, params=params)
    return sorted(out, key=lambda m: (m.index, DETECTORS.index(m.detector)))


def moments_of(moments: Iterable[Moment], detector: str) -> list[Moment]:
    return [m for m in moments if m.detector == detector]


class OnlineMoments:
    """The ``reframe`` and ``gain`` moments of a run that grows (live), updated per change in its
    graded rounds without reading the run again: events are added as they are recorded
    (:meth:`add_events`), each new agent submission closes its behaviour cycle, and
    :meth:`update` returns the moments so far. A moment with fewer than ``provisional_after``
    graded rounds after it is ``provisional``. Change points need the whole curve: they are left
    to the batch detection (:func:`detect_all`)."""

    def __init__(
        self,
        *,
        selection: str = "pass_rate_first",
        direction: str = "maximize",
        score_task: bool = True,
        started_at: Optional[float] = None,
        ceiling: Optional[float] = None,
        params: Params = DEFAULT_PARAMS,
    ) -> None:
        self.selection, self.direction, self.score_task, self.started_at = selection, direction, score_task, started_at
        self.improving_up = not (score_task and direction == "minimize")
        self.ceiling, self.params = ceiling, params
        self.builder = CycleBuilder(params)
        self._closed: list[float] = []
        # the last series, with each row's signature and the selection's state after it: an update
        # recomputes only the rows from the first one that changed (a new result, a late one
        # sorting in before others, a row regraded)
        self._series: list[Graded] = []
        self._sigs: list[tuple] = []
        self._states: list[tuple] = []

    @property
    def last_event_t(self) -> Optional[float]:
        return self.builder.last_event_t

    def add_events(self, events: Iterable[BehaviourEvent]) -> None:
        self.builder.add_events(events)

    def update(
        self,
        subs: Sequence[Mapping[str, Any]],
        *,
        components: Optional[Mapping[str, Mapping[str, float]]] = None,
        event_ids: Optional[Mapping[str, str]] = None,
    ) -> list[Moment]:
        """The moments over ``subs`` (all the run's submission rows so far, as for
        :func:`graded_series`), ``reframe`` and ``gain``, by round index."""
        series = self._graded(subs, components or {}, event_ids or {})
        bounds = sorted(g.t_submit for g in series if g.kind == "agent" and g.t_submit is not None)
        for b in bounds[len(self._closed) :]:
            self.builder.close(b)
            self._closed.append(b)
        gains = detect_gain(series, improving_up=self.improving_up, ceiling=self.ceiling, params=self.params)
        out = detect_reframing(
            series,
            self.builder.cycles,
            improving_up=self.improving_up,
            ceiling=self.ceiling,
            params=self.params,
            gains=gains,
        )
        out += gains
        return sorted(out, key=lambda m: (m.index, DETECTORS.index(m.detector)))

    def _graded(
        self,
        subs: Sequence[Mapping[str, Any]],
        components: Mapping[str, Mapping[str, float]],
        event_ids: Mapping[str, str],
    ) -> list[Graded]:
        """:func:`graded_series` of ``subs`` (the same list), recomputed from the first row whose
        signature (its :data:`_SUB_FIELDS`, components and event id) or place changed."""
        rows = _known_rows(subs)
        sigs = []
        for r in rows:
            get = getattr(r, "get", None)
            sig: tuple[Any, ...] = (
                tuple(map(get, _SUB_FIELDS)) if get is not None else tuple(getattr(r, k, None) for k in _SUB_FIELDS)
            )
            sigs.append((sig, components.get(sig[1]), event_ids.get(sig[1])))
        old, p, n = self._sigs, 0, min(len(sigs), len(self._sigs))
        while p < n and sigs[p] == old[p]:
            p += 1
        sel = Selector(self.direction, self.selection)
        if p:
            sel.best_score, sel.best_pass_rate, sel.best_round, sel.best_valid = self._states[p - 1]
        series, states = self._series[:p], self._states[:p]
        for g in _graded_from(
            rows,
            p,
            sel,
            series[-1].best if p else None,
            score_task=self.score_task,
            started_at=self.started_at,
            components=components,
            event_ids=event_ids,
        ):
            series.append(g)
            states.append((sel.best_score, sel.best_pass_rate, sel.best_round, sel.best_valid))
        self._series, self._sigs, self._states = series, sigs, states
        return series
