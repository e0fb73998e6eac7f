"""Best-submission selection: SForge's policies, final and as a running best.

Source: SForge selection.py semantics (``sforge.harness.selection``),
reimplemented so edgetui has no runtime dependency on sforge.  See
docs/sforge-run-folders.md §4.4 and §4.6.

Entries are plain mappings shaped like judge ``/history`` entries
(docs/sforge-run-folders.md §3.4.6): keys ``type``, ``status``, ``round``,
``pass_rate`` (0–1), ``score`` (raw task score), ``max_score`` (games),
``valid``, ``error``.  :func:`entry_from_submission` builds one from an
edgetui :class:`~edgetui.records.SubmissionRecord`.

Units everywhere: ``best_pass_rate`` is a fraction in 0–1, ``best_score`` a
raw task score (task units, direction per ``judge.score_direction``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Optional, Protocol, Sequence

import bisect

__all__ = [
    "POLICIES",
    "BestResult",
    "BestStep",
    "select_best",
    "best_so_far",
    "display_value",
    "is_score_task",
    "entry_from_submission",
]

#: Selection policy names accepted by SForge (``judge.selection``).
POLICIES = ("pass_rate_first", "score_first", "valid_then_score")

#: Parsers whose tasks are "score tasks" (SForge visualizer).
SCORE_PARSERS = ("score_sum", "structured_json")


@dataclass(frozen=True)
class BestResult:
    """What SForge's ``select_best`` returns.

    ``best_score``: raw score of the selected entry (task units), ``None`` if
    none; under ``pass_rate_first`` it can be the entry's ``max_score`` (games)
    or its pass rate (0–1) when the entry had no score (SForge quirk).
    ``best_pass_rate``: 0–1.  ``best_round``: e.g. ``"auto-7"``, ``""`` if
    none.  ``best_valid``: false only under ``valid_then_score`` when no
    considered entry is valid.
    """

    best_score: Any = None
    best_pass_rate: Any = 0.0
    best_round: Any = ""
    best_valid: bool = True

    def as_dict(self) -> dict[str, Any]:
        """The same dict SForge's ``select_best`` returns."""
        return asdict(self)


@dataclass(frozen=True)
class BestStep:
    """Running best after one history entry (see :func:`best_so_far`).

    ``index``: position of the entry in the input.  ``round``: the entry's
    round (``None`` if absent).  ``considered``: the policy looked at the
    entry (type submission/game, status missing/completed, and for
    ``valid_then_score`` not ``valid == false``).  ``is_new_best``: this entry
    became the selected one at this point.  The ``best_*`` fields are as in
    :class:`BestResult` for the prefix ending at this entry.
    """

    index: int
    round: Any
    considered: bool
    is_new_best: bool
    best_score: Any
    best_pass_rate: Any
    best_round: Any
    best_valid: bool

    def result(self) -> BestResult:
        """The :class:`BestResult` of the prefix ending at this entry."""
        return BestResult(self.best_score, self.best_pass_rate, self.best_round, self.best_valid)


def _is_completed_submission(e: Mapping) -> bool:
    return e.get("type", "submission") in ("submission", "game") and e.get("status") in (
        None,
        "completed",
    )


def _is_better_score(new: Any, old: Any, direction: str) -> bool:
    # Strict comparison: ties keep the earliest; a NaN ``old`` is never beaten.
    if old is None:
        return True
    return new < old if direction == "minimize" else new > old


class Selector:
    """Incremental state machine equivalent to SForge's policy loops."""

    __slots__ = ("policy", "direction", "best_score", "best_pass_rate", "best_round", "best_valid")

    def __init__(self, score_direction: str, policy: str) -> None:
        if policy not in POLICIES:
            raise ValueError(f"Unknown selection policy: {policy}. Available: {list(POLICIES)}")
        self.policy = policy
        self.direction = score_direction
        self.best_score: Any = None
        self.best_pass_rate: Any = 0.0
        self.best_round: Any = ""
        # pass_rate_first / score_first always report valid; valid_then_score
        # reports valid once at least one valid entry was considered.
        self.best_valid = policy != "valid_then_score"

    def feed(self, e: Mapping) -> tuple[bool, bool]:
        """Process one entry; return ``(considered, is_new_best)``."""
        if not _is_completed_submission(e):
            return False, False
        if self.policy == "pass_rate_first":
            return True, self._feed_pass_rate_first(e)
        if self.policy == "valid_then_score":
            if not e.get("valid", True):
                return False, False
            self.best_valid = True
        return True, self._feed_score_first(e)

    def _feed_pass_rate_first(self, e: Mapping) -> bool:
        pr = e.get("pass_rate", 0.0) or 0.0
        s = e.get("score") if e.get("score") is not None else e.get("max_score")
        is_new_best = False
        if pr < 1.0 or self.best_pass_rate < 1.0:
            if pr > self.best_pass_rate:
                self.best_pass_rate = pr
                self.best_score = s if s is not None else pr
                is_new_best = True
        else:
            if s is not None and _is_better_score(s, self.best_score, self.direction):
                self.best_score = s
                is_new_best = True
        if is_new_best:
            self.best_round = e.get("round", "")
        return is_new_best

    def _feed_score_first(self, e: Mapping) -> bool:
        s = e.get("score")
        if s is None:
            return False
        if _is_better_score(s, self.best_score, self.direction):
            self.best_score = s
            self.best_pass_rate = e.get("pass_rate", 0.0) or 0.0
            self.best_round = e.get("round", "")
            return True
        return False

    def result(self) -> BestResult:
        return BestResult(self.best_score, self.best_pass_rate, self.best_round, self.best_valid)

    def copy(self) -> "Selector":
        """A selector in the same state (feeding it leaves this one as it is)."""
        other = Selector.__new__(Selector)
        for a in Selector.__slots__:
            setattr(other, a, getattr(self, a))
        return other


def select_best(
    entries: Sequence[Mapping],
    score_direction: str = "maximize",
    policy: str = "pass_rate_first",
) -> BestResult:
    """Select the best entry of a history, exactly as SForge's judge does.

    ``entries`` in creation (= submission) order.  Considered: ``type`` in
    {submission, game} (missing = submission) and ``status`` missing or
    ``"completed"`` — so judge error entries count, with pass rate 0.
    ``score_direction``: ``"minimize"``; anything else means maximize.

    Policies (``POLICIES``):

    * ``pass_rate_first``: higher pass rate wins (strictly); once both the
      best and the candidate are at ≥ 1.0 a candidate wins only with a
      strictly better score (``score``, else ``max_score``).  Quirk: if the
      first 100 % entry had no score, ``best_score`` is 1.0 and later scores
      are compared against 1.0.
    * ``score_first``: entries without score are skipped; strictly better
      score wins; ``best_pass_rate`` is the winner's pass rate.
    * ``valid_then_score``: drop ``valid`` falsy entries (missing = valid),
      then ``score_first``; none left → ``best_valid`` false.

    Ties keep the earliest entry; a NaN score that became best is never
    replaced.  Raises ``ValueError`` naming the allowed policies for an
    unknown ``policy``.
    """
    sel = Selector(score_direction, policy)
    for e in entries:
        sel.feed(e)
    return sel.result()


def best_so_far(
    entries: Sequence[Mapping],
    score_direction: str = "maximize",
    policy: str = "pass_rate_first",
) -> list[BestStep]:
    """Running best after each entry, in one O(n) pass.

    ``result[i]`` describes the prefix ``entries[: i + 1]``: its ``best_*``
    fields equal ``select_best(entries[: i + 1], ...)`` and ``is_new_best``
    says whether ``entries[i]`` became the selected entry at that point.
    An empty input gives an empty list (use ``select_best([])`` for the
    initial state).  Raises ``ValueError`` for an unknown ``policy``.
    """
    sel = Selector(score_direction, policy)
    steps: list[BestStep] = []
    for i, e in enumerate(entries):
        considered, new = sel.feed(e)
        steps.append(
            BestStep(
                index=i,
                round=e.get("round"),
                considered=considered,
                is_new_best=new,
                best_score=sel.best_score,
                best_pass_rate=sel.best_pass_rate,
                best_round=sel.best_round,
                best_valid=sel.best_valid,
            )
        )
    return steps


def best_as_known(
    entries: Sequence[Mapping],
    known_order: Sequence[int],
    score_direction: str = "maximize",
    policy: str = "pass_rate_first",
) -> list[BestStep]:
    """Best-so-far as the results became known, SForge's selection at every moment.

    ``entries`` in creation (= submission) order, the order SForge's judge selects over
    (selection.py semantics); ``known_order``: the indices of ``entries`` in the order their
    results were known (a later submission graded first comes first). ``result[k]`` is
    :func:`select_best` over the entries known after ``k + 1`` results, taken in creation order,
    so the last step is SForge's own answer whatever order the results came in (ties keep the
    earliest *submitted*). ``result[k].index`` is the entry's index in ``entries``;
    ``is_new_best`` says whether that entry became the selected one. One O(n) pass when
    results came in submission order; otherwise each step re-feeds only the known entries past
    the longest fully known prefix. Raises ``ValueError`` for an unknown ``policy`` or a
    ``known_order`` that is not a permutation of some of the indices.
    """

    n = len(entries)
    order = list(known_order)
    if len(set(order)) != len(order) or any(not (0 <= i < n) for i in order):
        raise ValueError("known_order must name each entry index at most once")
    if order == list(range(len(order))):
        return best_so_far([entries[i] for i in order], score_direction, policy)
    base = Selector(score_direction, policy)
    known = [False] * n
    pending: list[int] = []  # known indices past the fully known prefix, sorted
    p = 0
    steps: list[BestStep] = []
    for i in order:
        known[i] = True
        bisect.insort(pending, i)
        while p < n and known[p]:
            base.feed(entries[p])
            p += 1
        while pending and pending[0] < p:
            pending.pop(0)
        sel = base.copy()
        for j in pending:
            sel.feed(entries[j])
        e = entries[i]
        steps.append(
            BestStep(
                index=i,
                round=e.get("round"),
                considered=Selector(score_direction, policy).feed(e)[0],
                is_new_best=sel.best_round == e.get("round", "")
                and (not steps or steps[-1].best_round != sel.best_round),
                best_score=sel.best_score,
                best_pass_rate=sel.best_pass_rate,
                best_round=sel.best_round,
                best_valid=sel.best_valid,
            )
        )
    return steps


def display_value(best_score: Optional[float], best_pass_rate: Optional[float], score_task: bool) -> Optional[float]:
    """The value a chart plots for a (running) best.

    * score task: ``best_score`` in the task's raw units (not rescaled);
    * otherwise: ``best_pass_rate × 100``, i.e. a percentage in 0–100.

    Returns ``None`` when there is nothing plottable: the relevant value is
    ``None`` or non-finite (NaN/±inf).
    """
    if score_task:
        v = best_score
    else:
        v = None if best_pass_rate is None else best_pass_rate * 100.0
    if v is None:
        return None
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def is_score_task(parser: Optional[str], score_direction_present: bool, game_mode: Any) -> bool:
    """SForge visualizer's "score task" notion (docs/sforge-run-folders.md §4.4).

    True when the task's ``judge.parser`` is ``score_sum`` or
    ``structured_json``, or its ``judge`` object has a ``score_direction`` key
    (whatever its value), or the task is a game (``game_mode`` truthy).
    """
    return bool(parser in SCORE_PARSERS or score_direction_present or game_mode)


_FLAG_VALUES = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class SubmissionFields(Protocol):
    """What :func:`entry_from_submission` reads of a submission: a
    :class:`~edgetui.records.SubmissionRecord`, or a row's fields (a namespace of them)."""

    @property
    def kind(self) -> Optional[str]: ...
    @property
    def round(self) -> Optional[str]: ...
    @property
    def submission_id(self) -> Optional[str]: ...
    @property
    def status(self) -> Optional[str]: ...
    @property
    def score(self) -> Optional[float]: ...
    @property
    def score_flag(self) -> Optional[str]: ...
    @property
    def pass_rate(self) -> Optional[float]: ...
    @property
    def max_score(self) -> Optional[float]: ...
    @property
    def valid(self) -> Optional[bool]: ...
    @property
    def error(self) -> Optional[str]: ...


def entry_from_submission(rec: SubmissionFields) -> dict[str, Any]:
    """Map an edgetui ``SubmissionRecord`` to a judge-history-shaped entry.

    The mapping reproduces what the judge holds in memory, so that
    :func:`select_best` over these entries matches the judge's choice:

    * ``graded`` → ``status: "completed"`` with ``pass_rate``, ``score``,
      ``valid`` (omitted when unknown: missing means valid).
    * ``failed_grading`` (grading raised / no report.json) and ``bad_report``
      (metrics unreadable) → the judge's "completed" failure entry:
      ``status: "completed"``, ``pass_rate`` 0.0, ``score`` None, ``error``,
      no ``valid`` key.  Such an entry can never become best, but it does
      count as "valid" for ``valid_then_score``'s ``best_valid``.
    * games (``kind == "game"``): ``type: "game"`` without a ``status`` key
      (like the judge's archived game entry), plus ``max_score``; an
      ``in_flight`` game is not in the judge history yet and maps to
      ``status: "running"`` (ignored by selection).
    * any other status (e.g. ``in_flight``, ``running``) → ``"running"``.
    * Non-finite raw scores: edgetui stores them as ``score=None`` with
      ``score_flag`` ``nan``/``inf``/``-inf``; they map back to
      ``float('nan')``/``±inf`` because the judge compares the real float (a
      NaN best is never replaced).  ``non_numeric`` maps to ``None``.
    """
    is_game = rec.kind == "game"
    entry: dict[str, Any] = {"type": "game" if is_game else "submission", "round": rec.round}
    if rec.submission_id is not None:
        entry["submission_id"] = rec.submission_id

    if rec.status == "graded":
        if not is_game:
            entry["status"] = "completed"
        score = rec.score
        if score is None and rec.score_flag in _FLAG_VALUES:
            score = _FLAG_VALUES[rec.score_flag]
        entry["pass_rate"] = rec.pass_rate if rec.pass_rate is not None else 0.0
        entry["score"] = score
        if is_game:
            entry["max_score"] = rec.max_score
        elif rec.valid is not None:
            entry["valid"] = rec.valid
    elif rec.status in ("failed_grading", "bad_report"):
        entry["status"] = "completed"
        entry["pass_rate"] = 0.0
        entry["score"] = None
        entry["error"] = rec.error or rec.status
    else:
        entry["status"] = "running"
    return entry
