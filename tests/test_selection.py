"""edgetui.replay.selection vs SForge's own selection.py (sforge is a test-only dependency)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgetui.records import SubmissionRecord
from edgetui.replay.selection import (
    POLICIES,
    BestResult,
    best_so_far,
    display_value,
    entry_from_submission,
    is_score_task,
    select_best,
)

sforge_selection = pytest.importorskip("sforge.harness.selection")

DIRECTIONS = ("maximize", "minimize")
MISSING = object()


# --------------------------------------------------------------------------- helpers


def same(a, b) -> bool:
    """NaN-aware, type-aware equality of scalars."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def assert_same_result(ours: BestResult, ref: dict) -> None:
    got = ours.as_dict()
    assert set(got) == set(ref)
    for key in ref:
        assert same(got[key], ref[key]), f"{key}: ours={got[key]!r} sforge={ref[key]!r}\n{got}\n{ref}"


def ref_select(entries, direction, policy) -> dict:
    # SForge takes list[dict]; give it copies so nothing can leak back.
    return sforge_selection.select_best([dict(e) for e in entries], direction, policy)


# --------------------------------------------------------------------------- strategies

pass_rates = st.one_of(
    st.sampled_from([0, 0.0, 0.5, 1.0, 1, 0.25, 0.75]),
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([None, 1.5, math.nan]),  # rare oddities: null, >1, NaN
)
scores = st.one_of(
    st.none(),
    st.just(math.nan),
    st.sampled_from([0, 0.0, 1, 1.0, 2.5, -3.0, 10, 100.0, 1e300, -1e300]),  # ties
    st.floats(allow_nan=False, allow_infinity=True, width=32),
    st.integers(min_value=-1000, max_value=1000),
)


def _opt(strategy):
    return st.one_of(st.just(MISSING), strategy)


@st.composite
def entries_strategy(draw, max_size: int = 40):
    n = draw(st.integers(min_value=0, max_value=max_size))
    out = []
    for i in range(n):
        etype = draw(_opt(st.sampled_from(["submission", "submission", "game", "other", None])))
        status = draw(_opt(st.sampled_from(["completed", "completed", "running", None, "queued"])))
        e: dict = {}
        if etype is not MISSING:
            e["type"] = etype
        if status is not MISSING:
            e["status"] = status
        rnd = draw(st.sampled_from(["unique", "unique", "unique", "missing", "dup", "none"]))
        if rnd == "unique":
            e["round"] = f"{draw(st.sampled_from(['agent', 'auto', 'game']))}-{i + 1}"
        elif rnd == "dup":
            e["round"] = "agent-1"
        elif rnd == "none":
            e["round"] = None
        is_error = draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans())
        if is_error:  # judge "grading thread raised" entry: no metrics
            e["error"] = "boom"
        else:
            pr = draw(_opt(pass_rates))
            if pr is not MISSING:
                e["pass_rate"] = pr
            sc = draw(_opt(scores))
            if sc is not MISSING:
                e["score"] = sc
            valid = draw(_opt(st.sampled_from([True, True, False, None])))
            if valid is not MISSING:
                e["valid"] = valid
            if etype == "game" or draw(st.integers(0, 9)) == 0:
                ms = draw(_opt(st.one_of(st.none(), st.integers(0, 500), st.just(math.nan))))
                if ms is not MISSING:
                    e["max_score"] = ms
        out.append(e)
    return out


PROPERTY_SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --------------------------------------------------------------------------- properties


@PROPERTY_SETTINGS
@given(entries=entries_strategy(), direction=st.sampled_from(DIRECTIONS), policy=st.sampled_from(POLICIES))
def test_select_best_matches_sforge(entries, direction, policy):
    assert_same_result(select_best(entries, direction, policy), ref_select(entries, direction, policy))


@PROPERTY_SETTINGS
@given(entries=entries_strategy(), direction=st.sampled_from(DIRECTIONS), policy=st.sampled_from(POLICIES))
def test_best_so_far_agrees_with_sforge_on_every_prefix(entries, direction, policy):
    steps = best_so_far(entries, direction, policy)
    assert len(steps) == len(entries)
    if not entries:
        return
    assert_same_result(steps[-1].result(), ref_select(entries, direction, policy))
    assert_same_result(steps[-1].result(), select_best(entries, direction, policy).as_dict())

    rounds = [e.get("round") for e in entries]
    prev = BestResult().as_dict() if policy != "valid_then_score" else ref_select([], direction, policy)
    for k, step in enumerate(steps):
        assert step.index == k
        assert step.round == entries[k].get("round")
        ref = ref_select(entries[: k + 1], direction, policy)
        assert_same_result(step.result(), ref)
        if not step.considered:
            assert not step.is_new_best
            # an ignored entry changes nothing
            for key in ("best_score", "best_pass_rate", "best_round", "best_valid"):
                assert same(ref[key], prev[key])
        r = rounds[k]
        if isinstance(r, str) and rounds.count(r) == 1:
            # unique round: "became the best" <=> SForge's best_round is this round now
            assert step.is_new_best == (ref["best_round"] == r)
        if step.is_new_best:
            assert step.best_round == entries[k].get("round", "")
        prev = ref


@settings(max_examples=200, deadline=None)
@given(entries=entries_strategy(max_size=10), policy=st.text(max_size=12))
def test_unknown_policy_raises_like_sforge(entries, policy):
    if policy in POLICIES:
        return
    with pytest.raises(ValueError) as ours:
        select_best(entries, "maximize", policy)
    with pytest.raises(ValueError) as ref:
        sforge_selection.select_best(entries, "maximize", policy)
    assert str(ours.value) == str(ref.value)
    with pytest.raises(ValueError):
        best_so_far(entries, "maximize", policy)


# --------------------------------------------------------------------------- examples


def _sub(rnd, pr, score=None, **kw):
    return {"type": "submission", "status": "completed", "round": rnd, "pass_rate": pr, "score": score, **kw}


def _check_all(entries):
    for policy in POLICIES:
        for direction in DIRECTIONS:
            assert_same_result(select_best(entries, direction, policy), ref_select(entries, direction, policy))
            steps = best_so_far(entries, direction, policy)
            for k, step in enumerate(steps):
                assert_same_result(step.result(), ref_select(entries[: k + 1], direction, policy))


def test_unscored_full_pass_then_scored_rounds_quirk():
    entries = [
        _sub("agent-1", 0.5, 40.0),
        _sub("agent-2", 1.0, None),  # first 100 %: no score -> best_score = 1.0
        _sub("agent-3", 1.0, 0.5),  # 0.5 < 1.0 -> not better (maximize)
        _sub("agent-4", 1.0, 7.0),  # 7.0 > 1.0 -> new best
    ]
    res = select_best(entries, "maximize", "pass_rate_first")
    assert res == BestResult(7.0, 1.0, "agent-4", True)
    steps = best_so_far(entries, "maximize", "pass_rate_first")
    assert [s.is_new_best for s in steps] == [True, True, False, True]
    assert [s.best_score for s in steps] == [40.0, 1.0, 1.0, 7.0]
    # minimize: 0.5 < 1.0 wins, 7.0 does not
    res = select_best(entries, "minimize", "pass_rate_first")
    assert res == BestResult(0.5, 1.0, "agent-3", True)
    _check_all(entries)


def test_ties_keep_earliest():
    entries = [_sub("agent-1", 1.0, 5.0), _sub("auto-1", 1.0, 5.0), _sub("agent-2", 1.0, 5)]
    for policy in POLICIES:
        for direction in DIRECTIONS:
            assert select_best(entries, direction, policy).best_round == "agent-1"
            assert [s.is_new_best for s in best_so_far(entries, direction, policy)] == [True, False, False]
    # equal pass rates below 100 % also keep the earliest
    entries = [_sub("agent-1", 0.5, 1.0), _sub("agent-2", 0.5, 99.0)]
    assert select_best(entries, "maximize", "pass_rate_first").best_round == "agent-1"
    _check_all(entries)


def test_nan_first_is_never_replaced():
    entries = [_sub("agent-1", 1.0, math.nan), _sub("agent-2", 1.0, 10.0), _sub("agent-3", 1.0, -10.0)]
    for policy in POLICIES:
        for direction in DIRECTIONS:
            res = select_best(entries, direction, policy)
            assert math.isnan(res.best_score) and res.best_round == "agent-1"
            steps = best_so_far(entries, direction, policy)
            assert [s.is_new_best for s in steps] == [True, False, False]
    _check_all(entries)


def test_valid_then_score_all_invalid():
    entries = [_sub("agent-1", 1.0, 3.0, valid=False), _sub("agent-2", 0.5, 9.0, valid=False)]
    res = select_best(entries, "maximize", "valid_then_score")
    assert res == BestResult(None, 0.0, "", False)
    steps = best_so_far(entries, "maximize", "valid_then_score")
    assert all(not s.considered and not s.is_new_best and not s.best_valid for s in steps)
    # an error entry (no valid key) counts as valid but never wins
    entries.append({"type": "submission", "status": "completed", "round": "agent-3", "error": "x"})
    assert select_best(entries, "maximize", "valid_then_score") == BestResult(None, 0.0, "", True)
    _check_all(entries)


def test_error_and_running_entries():
    entries = [
        {"type": "submission", "status": "completed", "round": "agent-1", "error": "boom"},
        {"type": "submission", "status": "running", "round": "agent-2"},
        {"type": "game", "round": "game-1", "score": None, "max_score": 50, "pass_rate": 0.2},
        {"type": "other", "status": "completed", "round": "x", "pass_rate": 1.0, "score": 99.0},
    ]
    res = select_best(entries, "maximize", "pass_rate_first")
    assert res == BestResult(50, 0.2, "game-1", True)
    steps = best_so_far(entries, "maximize", "pass_rate_first")
    assert [s.considered for s in steps] == [True, False, True, False]
    _check_all(entries)


def test_empty_history():
    for policy in POLICIES:
        assert best_so_far([], "maximize", policy) == []
        assert_same_result(select_best([], "maximize", policy), ref_select([], "maximize", policy))


def test_defaults_and_unknown_policy_message():
    assert select_best([_sub("agent-1", 0.5)]) == BestResult(0.5, 0.5, "agent-1", True)
    with pytest.raises(ValueError, match="pass_rate_first.*score_first.*valid_then_score"):
        select_best([], policy="best_of")


# --------------------------------------------------------------------------- display / score task


def test_display_value():
    assert display_value(12.5, 0.5, True) == 12.5
    assert display_value(12.5, 0.5, False) == 50.0
    assert display_value(None, 0.0, False) == 0.0
    assert display_value(None, 1.0, True) is None
    assert display_value(math.nan, 1.0, True) is None
    assert display_value(math.inf, 1.0, True) is None
    assert display_value(3.0, None, False) is None


def test_is_score_task():
    assert is_score_task("score_sum", False, False)
    assert is_score_task("structured_json", False, False)
    assert not is_score_task("pytest_v", False, False)
    assert not is_score_task(None, False, False)
    assert is_score_task("pytest_v", True, False)
    assert is_score_task(None, False, True)
    assert is_score_task(None, False, 1) is True


# --------------------------------------------------------------------------- SubmissionRecord mapping


def test_entry_from_submission_graded_and_failed():
    g = SubmissionRecord(round="agent-1", kind="agent", status="graded", pass_rate=0.75, score=3.5, valid=False)
    assert entry_from_submission(g) == {
        "type": "submission",
        "round": "agent-1",
        "status": "completed",
        "pass_rate": 0.75,
        "score": 3.5,
        "valid": False,
    }
    f = SubmissionRecord(round="auto-2", kind="auto", status="failed_grading", error="container died")
    e = entry_from_submission(f)
    assert e["status"] == "completed" and e["pass_rate"] == 0.0 and e["score"] is None
    assert e["error"] == "container died" and "valid" not in e
    b = SubmissionRecord(round="auto-3", kind="auto", status="bad_report")
    assert entry_from_submission(b)["status"] == "completed"


def test_entry_from_submission_nan_flag_maps_back():
    recs = [
        SubmissionRecord(round="agent-1", kind="agent", pass_rate=1.0, score=None, score_flag="nan"),
        SubmissionRecord(round="agent-2", kind="agent", pass_rate=1.0, score=5.0),
    ]
    entries = [entry_from_submission(r) for r in recs]
    assert math.isnan(entries[0]["score"])
    res = select_best(entries, "maximize", "score_first")
    assert math.isnan(res.best_score) and res.best_round == "agent-1"
    _check_all(entries)
    inf = SubmissionRecord(round="agent-3", kind="agent", pass_rate=1.0, score=None, score_flag="-inf")
    assert entry_from_submission(inf)["score"] == -math.inf
    odd = SubmissionRecord(round="agent-4", kind="agent", pass_rate=1.0, score=None, score_flag="non_numeric")
    assert entry_from_submission(odd)["score"] is None


def test_entry_from_submission_games():
    done = SubmissionRecord(round="game-1", kind="game", status="graded", pass_rate=0.4, score=None, max_score=50)
    e = entry_from_submission(done)
    assert e["type"] == "game" and "status" not in e and e["max_score"] == 50
    live = SubmissionRecord(round="game-2", kind="game", status="in_flight", max_score=50)
    assert entry_from_submission(live)["status"] == "running"
    entries = [entry_from_submission(done), entry_from_submission(live)]
    assert select_best(entries, "maximize", "pass_rate_first") == BestResult(50, 0.4, "game-1", True)
    _check_all(entries)


record_strategy = st.builds(
    SubmissionRecord,
    round=st.sampled_from(["agent-1", "agent-2", "auto-1", "game-1", "auto-9"]),
    kind=st.sampled_from(["agent", "auto", "game", "manual"]),
    status=st.sampled_from(["graded", "graded", "failed_grading", "bad_report", "in_flight"]),
    pass_rate=st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0]), st.floats(0, 1)),
    score=st.one_of(st.none(), st.sampled_from([1.0, 2.0, -1.0]), st.floats(-1e6, 1e6)),
    score_flag=st.sampled_from([None, None, "nan", "inf", "-inf", "non_numeric"]),
    max_score=st.one_of(st.none(), st.integers(0, 100).map(float)),
    valid=st.sampled_from([None, True, False]),
)


@settings(max_examples=300, deadline=None)
@given(
    recs=st.lists(record_strategy, max_size=20), direction=st.sampled_from(DIRECTIONS), policy=st.sampled_from(POLICIES)
)
def test_mapped_records_select_like_sforge(recs, direction, policy):
    entries = [entry_from_submission(r) for r in recs]
    assert_same_result(select_best(entries, direction, policy), ref_select(entries, direction, policy))


def test_best_as_known_is_sforges_selection_over_the_results_known_at_each_moment():
    """Results known out of submission order: at every step the best is select_best over the known
    entries in creation order (so ties keep the earliest SUBMITTED, as SForge's judge does), and the
    last step is SForge's answer over the whole history; in order it is best_so_far itself."""
    import itertools
    import random

    from edgetui.replay.selection import best_as_known, best_so_far, select_best

    rng = random.Random(7)
    for trial in range(300):
        n = rng.randint(1, 9)
        entries = [
            {
                "round": f"agent-{i + 1}",
                "score": rng.choice([None, 1.0, 2.0, 2.0, 3.0]),
                "pass_rate": rng.choice([0.0, 0.5, 1.0, 1.0]),
                "valid": rng.random() > 0.2,
                "status": "completed",
            }
            for i in range(n)
        ]
        order = list(range(n))
        rng.shuffle(order)
        for policy, direction in itertools.product(
            ("pass_rate_first", "score_first", "valid_then_score"), ("maximize", "minimize")
        ):
            steps = best_as_known(entries, order, direction, policy)
            assert [st.index for st in steps] == order
            for k, step in enumerate(steps):
                known = sorted(order[: k + 1])
                want = select_best([entries[i] for i in known], direction, policy)
                assert (step.best_round, step.best_score, step.best_pass_rate) == (
                    want.best_round,
                    want.best_score,
                    want.best_pass_rate,
                ), (trial, policy, k)
                prev = steps[k - 1].best_round if k else ""
                assert step.is_new_best == (step.best_round == entries[step.index]["round"] and step.best_round != prev)
    # in submission order: exactly best_so_far
    entries = [{"round": "a", "score": 1.0}, {"round": "b", "score": 3.0}, {"round": "c", "score": 2.0}]
    assert best_as_known(entries, [0, 1, 2], "maximize", "score_first") == best_so_far(
        entries, "maximize", "score_first"
    )
    # a tie known in reverse order: SForge keeps the earlier submission
    tie = [{"round": "a", "score": 2.0}, {"round": "b", "score": 2.0}]
    assert [s.best_round for s in best_as_known(tie, [1, 0], "maximize", "score_first")] == ["b", "a"]
