"""Raw task score → SForge's 0–100 rescaled score (``score_0_100``).

Source: SForge score_rescale.py semantics (``sforge.harness.score_rescale``,
``rescale_score`` / ``parse_rescale_spec``), reimplemented here so edgetui has
no runtime dependency on sforge.  See docs/sforge-run-folders.md §4.5.
"""

from __future__ import annotations

import math
from typing import Any, Optional

__all__ = ["KINDS", "PARAMS", "rescale"]

#: Parameter names a ``judge.rescale`` spec may carry (others are ignored).
PARAMS = (
    "lower",
    "upper",
    "baseline",
    "expert",
    "rank30",
    "rank1",
    "super_anchor",
    "anchor_raw",
    "anchor_score",
)

#: Known kinds and the parameters each one requires.
KINDS: dict[str, tuple[str, ...]] = {
    "linear": ("lower", "upper"),
    "min_linear": ("baseline", "expert"),
    "min_linear_positive": ("baseline", "expert"),
    "min_inverse_anchor": ("anchor_raw", "anchor_score"),
    "compression_ratio_cropped_guarded": ("baseline", "expert"),
    "log_anchor": ("anchor_raw", "anchor_score"),
    "log_max": ("baseline", "expert"),
    "log1p_max": ("baseline", "upper"),
    "log_min": ("baseline", "expert"),
    "piecewise_max": ("baseline", "rank30", "rank1", "super_anchor"),
    "piecewise_min": ("baseline", "rank30", "rank1", "super_anchor"),
    "piecewise_log_min": ("baseline", "rank30", "rank1", "super_anchor"),
}


def _clip(v: float, lo: float = 0.0, hi: float = 100.0) -> float:
    if math.isnan(v):
        return v
    return max(lo, min(hi, v))


def rescale(raw: Optional[float], spec: Optional[dict[str, Any]]) -> Optional[float]:
    """Map a raw task score to SForge's rescaled score.

    Units: ``raw`` is the task's raw score (any unit, any direction — e.g. a
    latency in ms for a ``min_*`` kind); the result is a score in ``[0, 100]``,
    **higher is better** regardless of ``judge.score_direction``.

    ``spec`` is the task JSON's ``judge.rescale`` object:
    ``{"kind": ..., <params among lower, upper, baseline, expert, rank30,
    rank1, super_anchor, anchor_raw, anchor_score>}``.

    Returns:

    * ``None`` when ``spec`` is ``None``/empty or has no ``kind`` key, when
      ``raw`` is ``None``, or when ``raw`` is non-finite (NaN, ±inf);
    * ``float('nan')`` for degenerate parameters (e.g. ``linear`` with
      ``upper == lower``); NaN passes through the final clip;
    * for an unknown ``kind``: ``clip(raw, 0, 100)``;
    * otherwise the kind's formula clipped to ``[0, 100]`` (piecewise kinds
      clip each band to its own range), with the guards that return ``0.0``
      (docs/sforge-run-folders.md §4.5 lists them).

    Source: SForge score_rescale.py semantics, reproduced operation by
    operation so float results are bit-identical (including the exceptions
    plain float maths can raise, e.g. ``ValueError`` from ``math.log`` of an
    underflowed ratio).  One deliberate difference: when a parameter that the
    kind requires is missing or ``None``, SForge fails an ``assert`` (grading
    then errors and no ``score_0_100`` is written); here the result is
    ``None`` ("no rescaled score") instead of an exception.
    """
    if not spec or "kind" not in spec:
        return None
    if raw is None:
        return None
    if not math.isfinite(raw):
        return None

    k = spec["kind"]
    required = KINDS.get(k) if isinstance(k, str) else None
    if required is None:
        return _clip(raw)
    if any(spec.get(name) is None for name in required):
        return None  # SForge: AssertionError (see docstring)

    # JSON values (Any): the kind's required ones were checked not None just above
    lower: Any = spec.get("lower")
    upper: Any = spec.get("upper")
    baseline: Any = spec.get("baseline")
    expert: Any = spec.get("expert")
    rank30: Any = spec.get("rank30")
    rank1: Any = spec.get("rank1")
    super_anchor: Any = spec.get("super_anchor")
    anchor_raw: Any = spec.get("anchor_raw")
    anchor_score: Any = spec.get("anchor_score")

    if k == "linear":
        if upper == lower:
            return math.nan
        return _clip(100.0 * (raw - lower) / (upper - lower))

    if k == "min_linear":
        if baseline == expert:
            return math.nan
        return _clip(100.0 * (baseline - raw) / (baseline - expert))

    if k == "min_linear_positive":
        if raw <= 0 or baseline == expert:
            return 0.0
        return _clip(100.0 * (baseline - raw) / (baseline - expert))

    if k == "min_inverse_anchor":
        if raw <= 0 or anchor_raw <= 0:
            return 0.0
        return _clip(anchor_score * anchor_raw / raw)

    if k == "compression_ratio_cropped_guarded":
        if raw < 0.05 or baseline == expert:
            return 0.0
        return _clip(100.0 * (baseline - raw) / (baseline - expert))

    if k == "log_anchor":
        if raw <= 1.0 or anchor_raw <= 1.0:
            return 0.0
        return _clip(anchor_score * math.log(raw) / math.log(anchor_raw))

    if k == "log_max":
        if raw <= 0 or baseline <= 0 or expert <= 0 or baseline == expert:
            return 0.0
        return _clip(100.0 * math.log(raw / baseline) / math.log(expert / baseline))

    if k == "log1p_max":
        if raw <= 0 or baseline <= 0 or upper <= 0:
            return 0.0
        denom = math.log1p(upper / baseline)
        if denom == 0.0:
            return math.nan
        return _clip(100.0 * math.log1p(raw / baseline) / denom)

    if k == "log_min":
        if raw <= 0 or baseline <= 0 or expert <= 0 or baseline == expert:
            return 0.0
        return _clip(100.0 * math.log(baseline / raw) / math.log(baseline / expert))

    if k == "piecewise_max":
        if raw <= baseline:
            return 0.0
        if raw <= rank30:
            if rank30 == baseline:
                return math.nan
            return _clip(20.0 * (raw - baseline) / (rank30 - baseline), 0.0, 20.0)
        if raw <= rank1:
            if rank1 == rank30:
                return math.nan
            return _clip(20.0 + 60.0 * (raw - rank30) / (rank1 - rank30), 20.0, 80.0)
        if raw <= super_anchor:
            if super_anchor == rank1:
                return math.nan
            return _clip(80.0 + 20.0 * (raw - rank1) / (super_anchor - rank1), 80.0, 100.0)
        return 100.0

    if k == "piecewise_min":
        if raw <= 0 or raw >= baseline:
            return 0.0
        if raw >= rank30:
            if baseline == rank30:
                return math.nan
            return _clip(20.0 * (baseline - raw) / (baseline - rank30), 0.0, 20.0)
        if raw >= rank1:
            if rank30 == rank1:
                return math.nan
            return _clip(20.0 + 60.0 * (rank30 - raw) / (rank30 - rank1), 20.0, 80.0)
        if raw >= super_anchor:
            if rank1 == super_anchor:
                return math.nan
            return _clip(80.0 + 20.0 * (rank1 - raw) / (rank1 - super_anchor), 80.0, 100.0)
        return 100.0

    # k == "piecewise_log_min"
    if raw <= 0 or baseline <= 0 or rank30 <= 0 or rank1 <= 0 or super_anchor <= 0:
        return 0.0
    if raw >= baseline:
        return 0.0
    if raw >= rank30:
        denom = math.log(baseline / rank30)
        if denom == 0.0:
            return math.nan
        return _clip(20.0 * math.log(baseline / raw) / denom, 0.0, 20.0)
    if raw >= rank1:
        denom = math.log(rank30 / rank1)
        if denom == 0.0:
            return math.nan
        return _clip(20.0 + 60.0 * math.log(rank30 / raw) / denom, 20.0, 80.0)
    if raw >= super_anchor:
        denom = math.log(rank1 / super_anchor)
        if denom == 0.0:
            return math.nan
        return _clip(80.0 + 20.0 * math.log(rank1 / raw) / denom, 80.0, 100.0)
    return 100.0
