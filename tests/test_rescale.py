"""edgetui.replay.rescale vs SForge's score_rescale.py (sforge is a test-only dependency)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgetui.replay.rescale import KINDS, PARAMS, rescale

score_rescale = pytest.importorskip("sforge.harness.score_rescale")

MISSING = object()


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def reference(raw, spec):
    """SForge's result, or the exception type it raised."""
    try:
        return score_rescale.rescale_score(score_rescale.parse_rescale_spec(spec), raw)
    except Exception as exc:  # noqa: BLE001 - compared below
        return exc


def check(raw, spec):
    ref = reference(raw, spec)
    if isinstance(ref, AssertionError):
        # SForge asserts on missing required params; edgetui reports "no rescaled score".
        assert rescale(raw, spec) is None
    elif isinstance(ref, Exception):
        with pytest.raises(type(ref)):
            rescale(raw, spec)
    else:
        got = rescale(raw, spec)
        assert same(got, ref), f"raw={raw!r} spec={spec!r}: ours={got!r} sforge={ref!r}"
        if got is not None and not math.isnan(got):
            assert 0.0 <= got <= 100.0


# A small pool makes equal (degenerate) parameters and raw == param frequent.
POOL = [0, 0.0, 1, 1.0, 2.0, 0.05, 0.5, -1.0, -3, 10.0, 100.0, 1e-300, 1e300]
param_values = st.one_of(
    st.sampled_from(POOL),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.floats(),  # incl. NaN / inf / extremes
    st.integers(-50, 50),
)
raw_values = st.one_of(
    st.none(),
    st.sampled_from(POOL + [math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.floats(),
    st.integers(-50, 50),
)
kinds = st.one_of(st.sampled_from(sorted(KINDS)), st.sampled_from(["nope", "", None, "LINEAR"]))


@st.composite
def specs(draw):
    shape = draw(st.sampled_from(["full"] * 8 + ["sparse", "none", "empty", "nokind"]))
    if shape == "none":
        return None
    if shape == "empty":
        return {}
    spec: dict = {}
    if shape != "nokind":
        spec["kind"] = draw(kinds)
    for name in PARAMS:
        if shape == "sparse":
            v = draw(st.one_of(st.just(MISSING), st.none(), param_values))
        else:
            v = draw(param_values)
        if v is not MISSING:
            spec[name] = v
    return spec


@st.composite
def ordered_specs(draw):
    """Piecewise / two-point specs with params in a sensible order (hits every band)."""
    kind = draw(st.sampled_from(sorted(KINDS)))
    base = draw(st.lists(st.sampled_from(POOL[:10]) | st.floats(1e-3, 1e3), min_size=4, max_size=4))
    a, b, c, d = sorted(base)
    if kind in (
        "piecewise_min",
        "piecewise_log_min",
        "min_linear",
        "min_linear_positive",
        "compression_ratio_cropped_guarded",
        "log_min",
    ):
        vals = dict(baseline=d, rank30=c, rank1=b, super_anchor=a, expert=a)
    else:
        vals = dict(baseline=a, rank30=b, rank1=c, super_anchor=d, expert=d)
    spec = {
        "kind": kind,
        "lower": a,
        "upper": d,
        "anchor_raw": draw(st.sampled_from([c, d, 1.0, 0.5])),
        "anchor_score": draw(st.sampled_from([50.0, 100.0, 80, 0.0])),
        **vals,
    }
    raw = draw(st.one_of(st.sampled_from([a, b, c, d, 0.0, 1.0]), st.floats(min(a, 0) - 1, max(d, 0) * 2 + 1)))
    return raw, spec


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=raw_values, spec=specs())
def test_rescale_matches_sforge_random(raw, spec):
    check(raw, spec)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=ordered_specs())
def test_rescale_matches_sforge_ordered(case):
    raw, spec = case
    check(raw, spec)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(KINDS)), p=param_values, raw=raw_values)
def test_rescale_matches_sforge_degenerate_equal_params(kind, p, raw):
    spec = {"kind": kind, **{name: p for name in PARAMS}}
    check(raw, spec)


def test_examples():
    assert rescale(None, {"kind": "linear", "lower": 0, "upper": 10}) is None
    assert rescale(5.0, None) is None
    assert rescale(5.0, {}) is None
    assert rescale(5.0, {"lower": 0, "upper": 10}) is None
    assert rescale(math.nan, {"kind": "linear", "lower": 0, "upper": 10}) is None
    assert rescale(math.inf, {"kind": "linear", "lower": 0, "upper": 10}) is None
    assert rescale(5.0, {"kind": "linear", "lower": 0, "upper": 10}) == 50.0
    assert rescale(50.0, {"kind": "linear", "lower": 0, "upper": 10}) == 100.0
    assert math.isnan(rescale(5.0, {"kind": "linear", "lower": 3, "upper": 3}))
    assert rescale(250.0, {"kind": "unknown"}) == 100.0
    assert rescale(-2.0, {"kind": "unknown"}) == 0.0
    assert rescale(5.0, {"kind": "linear", "lower": 0}) is None  # SForge asserts
    spec = {"kind": "piecewise_max", "baseline": 0, "rank30": 10, "rank1": 20, "super_anchor": 30}
    assert [rescale(r, spec) for r in (0, 5, 10, 15, 20, 25, 30, 99)] == [
        0.0,
        10.0,
        20.0,
        50.0,
        80.0,
        90.0,
        100.0,
        100.0,
    ]
    for raw in (0, 5, 10, 15, 20, 25, 30, 99):
        check(raw, spec)


GRID_RAWS = [-1.0, 0, 0.0, 0.04999, 0.05, 0.5, 1, 1.0, 1.5, 2.0, 5.0, 10.0, 20.0, 30.0, 1e9]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rescale_matches_sforge_boundary_grid(kind):
    """Deterministic grid: every guard boundary (0, 0.05, 1, each param) and every band."""
    import itertools

    grids = [(-1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0)] * 4
    for baseline, second, third, fourth in itertools.product(*grids):
        for order in ("asc", "desc"):
            b, r30, r1, sa = (baseline, second, third, fourth)
            if order == "desc":
                b, r30, r1, sa = fourth, third, second, baseline
            spec = {
                "kind": kind,
                "lower": b,
                "upper": sa,
                "baseline": b,
                "expert": sa,
                "rank30": r30,
                "rank1": r1,
                "super_anchor": sa,
                "anchor_raw": r30,
                "anchor_score": r1,
            }
            for raw in GRID_RAWS + [b, r30, r1, sa]:
                check(raw, spec)
