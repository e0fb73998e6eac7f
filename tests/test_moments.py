"""Moments: the detectors of replay/moments.py on hand-made series, and the moments table and
`edgetui moments` on recorded runs (the bundled 12-hour sample's truth names its reframing moments)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.record.moments_table import list_moments, load_series, rebuild_moments
from edgetui.replay.moments import (
    DEFAULT_PARAMS,
    BehaviourEvent,
    behaviour_cycles,
    detect_changepoints,
    detect_gain,
    detect_reframing,
    graded_series,
)
from edgetui.replay.selection import best_so_far, entry_from_submission

from conftest import copy_samples_db

ROOT = Path(__file__).resolve().parents[1]
GW_TRUTH = ROOT / "sample_runs" / "_truth" / "opus48-edge-3-20260312005800__gw_signal_search.json"


def _sub(rnd, t, score, *, kind="agent", runtime=60.0, status="graded", pass_rate=None):
    # as edgetui.record.ingest writes it: submitted at t, the result known (submissions.t) a runtime later
    return {
        "round": rnd,
        "kind": kind,
        "submitted_at": t,
        "t": t + runtime,
        "runtime_s": runtime,
        "status": status,
        "score": score,
        "pass_rate": pass_rate,
        "score_flag": None,
        "valid": None,
        "max_score": None,
        "submission_id": None,
        "error": None,
    }


def _series(scores, *, t0=1000.0, step=600.0, direction="maximize"):
    subs = [_sub(f"agent-{i + 1}", t0 + step * (i + 1), s) for i, s in enumerate(scores)]
    return graded_series(subs, selection="score_first", direction=direction, score_task=True, started_at=t0)


def test_graded_series_is_in_result_known_order_with_selections_best():
    # agent-2 was submitted after auto-1 but its result came first (auto-1's judge ran 30 minutes)
    subs = [
        _sub("agent-1", 100.0, 10.0),
        _sub("auto-1", 200.0, 30.0, kind="auto", runtime=1800.0),
        _sub("agent-2", 300.0, 20.0),
        _sub("manual-1", 50.0, 99.0, kind="manual"),
        _sub("agent-3", 400.0, None, status="in_flight"),
    ]
    s = graded_series(subs, selection="score_first", direction="maximize", score_task=True, started_at=0.0)
    assert [g.round for g in s] == ["agent-1", "agent-2", "auto-1"]
    assert [g.best for g in s] == [10.0, 20.0, 30.0] and [g.best_before for g in s] == [None, 10.0, 20.0]
    assert [g.is_new_best for g in s] == [True, True, True]
    # the running best is selection.best_so_far's over the same entries in the same order
    steps = best_so_far(
        [entry_from_submission(type("R", (), r)) for r in (subs[0], subs[2], subs[1])], "maximize", "score_first"
    )
    assert [st.best_score for st in steps] == [g.best for g in s]
    # a pass-rate task plots the pass rate x 100
    p = graded_series([_sub("agent-1", 1.0, None, pass_rate=0.25)], selection="pass_rate_first", score_task=False)
    assert p[0].value == 25.0 and p[0].best == 25.0


def test_gain_against_noise_not_lucky_noise_and_minimize_counts_down():
    R = random.Random(5)
    scores, best = [50.0], 50.0
    for i in range(60):
        if i == 30:
            best += 6.0  # a jump of ~4x the spread of the non-improving scores
            scores.append(best)
        elif i == 45:
            best += 0.05  # lucky noise: a new best by a hair
            scores.append(best)
        else:
            scores.append(best - R.uniform(0.0, 4.0))
    s = _series(scores)
    found = detect_gain(s, params=DEFAULT_PARAMS)
    assert [m.round for m in found] == ["agent-32"]
    m = found[0]
    assert m.before == 50.0 and m.after == 56.0 and m.gain == pytest.approx(6.0)
    assert 0.8 < m.noise < 2.2 and 0 < m.confidence <= 1
    # the same curve minimised (scores negated): the gain is still positive
    sm = _series([-x for x in scores], direction="minimize")
    fm = detect_gain(sm, improving_up=False)
    assert [x.round for x in fm] == ["agent-32"] and fm[0].gain == pytest.approx(6.0)
    # headroom: a run too short to know its noise still reports a gain of a fifth of what is left
    short = _series([10.0, 30.0])
    assert detect_gain(short) == []
    assert [x.round for x in detect_gain(short, ceiling=100.0)] == ["agent-2"]


def test_changepoint_with_jump_1_finds_a_step_that_is_not_on_a_multiple_of_five():
    # best-so-far flat, then a step at submission 37 of 80 (elapsed grows linearly: the step is
    # placed in log time)
    scores = [40.0 + (10.0 if i >= 37 else 0.0) + (0.0 if i % 7 else 0.01 * i) for i in range(80)]
    s = _series(scores)
    cps = detect_changepoints(s)
    assert [m.round for m in cps] == ["agent-38"]
    assert cps[0].before < 41 and cps[0].after >= 50


def _ev(eid, kind, t, **kw):
    return BehaviourEvent(event_id=eid, kind=kind, t=t, **kw)


def test_behaviour_cycles_count_new_files_once_and_score_a_change_against_the_cycles_before():
    evs, bounds, t = [], [], 0.0
    for c in range(10):  # ten ordinary cycles: read, a small edit, submit
        evs += [
            _ev(f"r{c}", "tool_call", t + 10, tool_name="Read", path="a.py"),
            _ev(f"e{c}", "tool_call", t + 20, tool_name="Edit", path="a.py", chars=40),
            _ev(f"k{c}", "thinking", t + 5, chars=200),
        ]
        t += 300
        bounds.append(t)
    evs += [
        _ev("think", "thinking", t + 5, chars=4000),
        _ev("msg", "agent_message", t + 6, chars=900),
        _ev("new", "tool_call", t + 30, tool_name="Write", path="b.py", chars=2000),
        _ev("test", "tool_call", t + 60, tool_name="Bash", command="python -m pytest -q"),
        _ev("e2", "tool_call", t + 90, tool_name="Edit", path="b.py", chars=800),
    ]
    t += 1500
    bounds.append(t)
    evs.sort(key=lambda e: e.t)
    cyc = behaviour_cycles(evs, bounds)
    assert len(cyc) == 11
    # a.py was read before it was edited: never a new file
    assert all(c.features["new_files"] == 0 for c in cyc[:10])
    last = cyc[-1]
    assert last.features["new_files"] == 1 and last.features["test_runs"] == 1 and last.features["novel_files"] == 1
    assert last.score > DEFAULT_PARAMS.behaviour_min > max(c.score for c in cyc[4:10])
    assert "think" in last.evidence and "new" in last.evidence
    assert cyc[0].score is None  # nothing to compare the first cycles with


def test_a_jump_is_a_reframing_only_after_a_behaviour_change():
    R = random.Random(11)
    scores, best = [], 50.0
    for i in range(40):
        if i in (20, 30):
            best += 6.0
            scores.append(best)
        else:
            scores.append(best - R.uniform(0.0, 4.0) if i else best)
    s = _series(scores, t0=0.0, step=300.0)
    evs = []
    for i, g in enumerate(s):  # ordinary cycles, except before agent-21
        t = g.t_submit - 250
        big = g.round == "agent-21"
        evs += [
            _ev(f"th{i}", "thinking", t, chars=5000 if big else 150),
            _ev(
                f"ed{i}",
                "tool_call",
                t + 20,
                tool_name="Edit",
                path=f"n{i}.py" if big else "a.py",
                chars=3000 if big else 30,
            ),
        ]
    cyc = behaviour_cycles(evs, [g.t_submit for g in s])
    gains = detect_gain(s)
    assert {m.round for m in gains} == {"agent-21", "agent-31"}
    ref = detect_reframing(s, cyc)
    assert [m.round for m in ref] == ["agent-21"]
    assert ref[0].lead_time_s == pytest.approx(300.0) and 0 < ref[0].confidence <= 1
    assert "th20" in ref[0].evidence and ref[0].behaviour["notes"] > 0


def test_bundled_12_hour_sample_finds_its_three_reframing_moments_and_rebuilds_keep_identity(
    tmp_path, capsys, samples_template
):
    db = tmp_path / "m.duckdb"
    copy_samples_db(samples_template, db)
    truth = json.loads(GW_TRUTH.read_text())
    capsys.readouterr()
    assert main(["--db", str(db), "moments", "opus48", "--detector", "reframe", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["round"] for m in out["moments"]] == [m["round"] for m in truth["reframing_moments"]]
    for m, tm in zip(out["moments"], truth["reframing_moments"]):
        assert m["score_before"] == pytest.approx(tm["score_before"]) and m["score_after"] == pytest.approx(
            tm["score_after"]
        )
        assert m["lead_time_s"] > 0 and len(m["evidence"]) > 1
    conn = open_db(db)
    try:
        key = out["run_key"]
        first = {(m["detector"], m["version"], m["round"]): m["built_at"] for m in list_moments(conn, key)}
        rebuild_moments(conn, key, now=first[next(iter(first))] + 100)
        again = {(m["detector"], m["version"], m["round"]): m["built_at"] for m in list_moments(conn, key)}
        assert again.keys() == first.keys() and all(again[k] > first[k] for k in first)
        # the evidence names recorded events; the first is the new best's judge result
        for m in list_moments(conn, key, "reframe"):
            kinds = [
                conn.execute("SELECT kind FROM events WHERE event_id = ?", [e]).fetchone()[0] for e in m["evidence"]
            ]
            assert kinds[0] == "judge_result" and set(kinds[1:]) <= {"thinking", "agent_message", "tool_call"}
        series, _ = load_series(conn, key)
        assert sum(g.is_new_best for g in series) == truth["expected"]["new_bests"]
    finally:
        conn.close()
    capsys.readouterr()
    assert main(["--db", str(db), "moments", "opus48"]) == 0
    table = capsys.readouterr().out
    assert "reframe" in table and "changepoint" in table and "agent-167" in table
    assert main(["--db", str(db), "moments", "no-such-run"]) == 2
    assert "no recorded run matches" in capsys.readouterr().err
    assert main(["--db", str(db), "forget", "opus48", "--yes"]) == 0
    c = duckdb.connect(str(db), read_only=True)
    assert c.execute("SELECT count(*) FROM moments").fetchone()[0] == 0
    c.close()


def test_moments_work_while_another_process_holds_the_database(tmp_path, capsys, samples_template):
    db = tmp_path / "h.duckdb"
    copy_samples_db(samples_template, db)
    code = (
        "import sys,time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});h=holder_server(c,{str(db)!r});print('ready',flush=True);time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        capsys.readouterr()
        assert main(["--db", str(db), "moments", "judge-demo", "--format", "json"]) == 0
        rows = json.loads(capsys.readouterr().out)["moments"]
        assert {m["detector"] for m in rows} >= {"gain"} and all(m["version"] == 1 for m in rows)
    finally:
        p.kill()
        p.wait()
    c = duckdb.connect(str(db), read_only=True)
    assert c.execute("SELECT count(*) FROM moments WHERE run_key LIKE '%judge-demo%'").fetchone()[0] == len(rows)
    c.close()


def test_a_database_of_version_5_gains_the_moments_table_and_the_annotation_columns(tmp_path):
    from edgetui.store.schema import MIGRATIONS, SCHEMA_VERSION

    assert SCHEMA_VERSION >= 6
    c = duckdb.connect(str(tmp_path / "v5.duckdb"))
    for v in range(1, 6):
        for stmt in MIGRATIONS[v]:
            c.execute(stmt)
    c.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    c.close()
    conn = open_db(tmp_path / "v5.duckdb")
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        cols = [r[0] for r in conn.execute("DESCRIBE moments").fetchall()]
        assert cols[:4] == ["run_key", "detector", "version", "round"] and "lead_time_s" in cols
        ann = [r[0] for r in conn.execute("DESCRIBE annotations").fetchall()]
        assert {"label", "round", "updated_at"} <= set(ann)
    finally:
        conn.close()


def test_online_moments_grow_with_the_run_and_end_where_the_batch_detection_does(tmp_path, samples_template):
    from edgetui.record.moments_table import _graded_inputs, detect_run, load_behaviour, online_start, online_step
    from edgetui.replay.moments import OnlineMoments

    db = tmp_path / "o.duckdb"
    copy_samples_db(samples_template, db)
    conn = open_db(db, read_only=True)
    try:
        key = "local/opus48-edge-3-20260312005800/gw_signal_search"
        subs, comps, ev_ids = _graded_inputs(conn, key)
        events = load_behaviour(conn, key)
        batch = [
            (m.detector, m.round, m.before, m.after, m.lead_time_s)
            for m in detect_run(conn, key)
            if m.detector in ("reframe", "gain")
        ]
        full = online_start(conn, key)
        om = OnlineMoments(
            selection="score_first",
            direction="maximize",
            score_task=True,
            started_at=full.started_at,
            ceiling=full.ceiling,
        )
        subs.sort(key=lambda r: r["t"])
        seen: dict[str, list[bool]] = {}
        j = 0
        for i in range(1, len(subs) + 1):  # one graded submission at a time
            t = subs[i - 1]["t"]
            k = j
            while k < len(events) and events[k].t <= t:
                k += 1
            om.add_events(events[j:k])
            j = k
            for m in om.update(subs[:i], components=comps, event_ids=ev_ids):
                if m.detector == "reframe":
                    seen.setdefault(m.round, []).append(m.provisional)
        om.add_events(events[j:])
        final = [
            (m.detector, m.round, m.before, m.after, m.lead_time_s)
            for m in om.update(subs, components=comps, event_ids=ev_ids)
        ]
        assert final == batch
        # each reframing moment appeared provisional, then firm once three more rounds were graded
        assert sorted(seen) == ["agent-167", "agent-52", "agent-85"]
        assert all(v[0] and not v[-1] and v.count(True) == 3 for v in seen.values())
        # the database-facing step: the same reframing moments as the batch
        assert [r["round"] for r in online_step(conn, key, full)] == [b[1] for b in batch if b[0] == "reframe"]
    finally:
        conn.close()


def test_online_series_resumed_from_the_first_changed_row_equals_the_whole_series_recomputed():
    """OnlineMoments keeps its graded series between updates and recomputes it only from the first
    row that changed; after every kind of change (a new result, a late result sorting in before
    others, a regrade, a row's components or judge event arriving, pass-rate-first ties) it must be
    graded_series of the same rows."""
    from edgetui.replay.moments import OnlineMoments

    rng = random.Random(7)
    for selection, direction in (
        ("pass_rate_first", "maximize"),
        ("score_first", "minimize"),
        ("valid_then_score", "maximize"),
    ):
        kw = dict(selection=selection, direction=direction, score_task=True, started_at=0.0)
        om = OnlineMoments(**kw)
        subs: list[dict] = []
        comps: dict[str, dict[str, float]] = {}
        ids: dict[str, str] = {}
        reused = 0
        for i in range(120):
            before = list(om._series)
            change = rng.random()
            if change < 0.6 or not subs:  # a new result
                subs.append(
                    _sub(f"agent-{i}", 100.0 * i, round(rng.uniform(0, 10), 1), pass_rate=rng.choice([0.5, 1.0, 1.0]))
                )
            elif change < 0.75:  # a late result: known before the last few
                r = _sub(f"auto-{i}", 100.0 * i - 350, rng.uniform(0, 10), kind="auto", pass_rate=1.0)
                subs.append(r)
            elif change < 0.85:  # a regrade of an earlier round
                r = subs[rng.randrange(len(subs))]
                subs[subs.index(r)] = {**r, "score": rng.uniform(0, 10), "valid": rng.choice([None, False])}
            elif change < 0.95:  # components / the judge event of a round arrive
                rnd = subs[rng.randrange(len(subs))]["round"]
                comps[rnd] = {"snr": rng.random()}
                ids[rnd] = f"ev-{rnd}"
            else:  # nothing changed
                pass
            got = om._graded(subs, comps, ids)
            assert got == graded_series(subs, components=comps, event_ids=ids, **kw), (selection, i)
            if change < 0.6 and before:  # appended last: the rows before are kept, not rebuilt
                assert all(a is b for a, b in zip(before, got)) and len(got) == len(before) + 1
                reused += 1
        assert reused > 50
        # and the moments from a series built in steps equal those of one built at once
        once = OnlineMoments(**kw)
        assert om.update(subs, components=comps, event_ids=ids) == once.update(subs, components=comps, event_ids=ids)


def test_a_file_stamped_8_without_the_moments_table_gets_it(tmp_path):
    """A build in which schema version 6 was still empty stamped files 7 / 8 without the moments
    table: version 9 applies version 6's statements again (idempotent)."""
    from edgetui.store.database import open_db
    from edgetui.store.schema import SCHEMA_VERSION

    p = tmp_path / "old.duckdb"
    c = open_db(p)
    c.execute("DROP TABLE moments")
    c.execute("ALTER TABLE annotations DROP COLUMN label")
    c.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    c.close()
    c = open_db(p)
    try:
        assert c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert c.execute("SELECT count(*) FROM moments").fetchone()[0] == 0
        assert "label" in [r[0] for r in c.execute("DESCRIBE annotations").fetchall()]
    finally:
        c.close()
