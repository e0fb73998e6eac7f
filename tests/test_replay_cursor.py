"""Replay timeline cursor (replay/cursor.py) and the store queries it is loaded from.

Also holds :func:`build_synthetic_run`, the synthetic-run builder used by the
replay app tests and ``bench/bench_replay.py`` (a 12-hour run with tool calls,
subagents, graded agent and auto-eval rounds, new bests, token use, untimed
tail events), written through the real :class:`edgetui.record.recorder.Recorder`.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import pytest

from edgetui.store import queries as store
from edgetui.store.database import open_db
from edgetui.events import Event, Usage
from edgetui.record.recorder import Recorder
from edgetui.records import RunInfo, TaskInfo, make_run_key
from edgetui.replay.cursor import ReplayCursor, format_elapsed, parse_elapsed, subagent_depths

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
SYNTH_BEST = 67.25


def _settle(conn) -> None:
    """Finish any pending result on ``conn``.

    With DuckDB 2.0 a ``fetchone()`` leaves its result open and ``register()``
    then refuses to run; ``Recorder.__init__`` (via ``schema.current_version``)
    and ``Recorder.upsert_run`` leave one, which breaks the next
    ``insert_events`` / ``replace_submissions``. A new statement discards it.
    """
    conn.execute("SELECT 1").fetchall()


def build_synthetic_run(
    db_path: Path | str,
    n_events: int = 400,
    *,
    run_id: str = "run-synth",
    task_id: str = "gw-detect",
    hours: float = 12.0,
    seed: int = 7,
    untimed_tail: int = 3,
    conn=None,
) -> str:
    """Write one synthetic finished run of about ``n_events`` events; returns its run key.

    Rounds ``agent-N`` (every ~40 events) and ``auto-N`` (every ~60) are graded
    by ``judge_result`` events; scores climb from 42.8 to :data:`SYNTH_BEST`
    (score task, ``score_first``). Every ~25th event is a ``Task`` tool call
    followed by 3 subagent events. The last ``untimed_tail`` events have no
    time. ``started_at`` is :data:`T0`, ``timeout_s`` = ``hours`` × 3600.
    """
    rng = random.Random(seed)
    own = conn is None
    conn = conn or open_db(db_path)
    rec = Recorder(conn)
    _settle(conn)
    rk = make_run_key("local", run_id, task_id)
    span = hours * 3600.0 * 0.97
    n_timed = max(1, n_events - untimed_tail)
    events: list[Event] = []
    subs: list[dict] = []
    best: Optional[float] = None
    best_round = ""
    best_pr = 0.0
    n_agent = n_auto = 0
    off = 0
    call_n = 0

    def t_at(i: int) -> float:
        return T0 + 5.0 + span * (i / n_timed)

    def add(kind: str, summary: str, i: int, **kw) -> None:
        nonlocal off
        src = kw.pop("source", "agent_output.txt")
        events.append(
            Event(
                run_key=rk,
                kind=kind,
                source=src,
                offset=off,
                sub=0,
                t=t_at(i) if i < n_timed else None,
                summary=summary,
                **kw,
            )
        )
        off += 100

    def grade(i: int, kind: str) -> None:
        nonlocal best, best_round, best_pr, n_agent, n_auto
        if kind == "agent":
            n_agent += 1
            rnd = f"agent-{n_agent}"
        else:
            n_auto += 1
            rnd = f"auto-{n_auto}"
        frac = i / n_timed
        score = round(42.8 + (SYNTH_BEST - 42.8) * frac**0.7 * rng.uniform(0.85, 1.0), 2)
        if rnd == "agent-1":
            score = 42.8
        pr = round(min(1.0, 0.5 + 0.5 * frac), 3)
        new_best = best is None or score > best
        if new_best:
            best, best_round, best_pr = score, rnd, pr
        total = 20
        passed = int(round(pr * total))
        tests = [
            {
                "name": f"test_case_{k:02d}",
                "status": "passed" if k < passed else "failed",
                "message": None if k < passed else f"assertion failed: snr {k} below threshold",
            }
            for k in range(total)
        ]
        subs.append(
            dict(
                round=rnd,
                kind=kind,
                n=n_agent if kind == "agent" else n_auto,
                status="graded",
                t=t_at(i),
                elapsed_s=t_at(i) - T0,
                pass_rate=pr,
                score=score,
                score_0_100=score,
                valid=True,
                total_tests=total,
                passed=passed,
                failed=total - passed,
                errors=0,
                is_new_best=new_best,
                best_round=best_round,
                best_score=best,
                best_pass_rate=best_pr,
                summary=f"{passed}/{total} passed",
                tests=tests,
            )
        )
        add(
            "judge_result",
            f"{rnd} graded: score {score} · pass {pr:.0%}",
            i,
            round=rnd,
            source=f"submissions/{rnd}/report.json",
            data={"round": rnd, "score": score, "pass_rate": pr, "valid": True},
        )

    i = 0
    while i < n_events:
        call_n += 1
        if i > 0 and i % 40 == 0:
            tid = f"toolu_submit_{call_n}"
            add(
                "tool_call",
                "Bash: sforge-submit --message 'try new whitening'",
                i,
                tool_use_id=tid,
                tool_name="Bash",
                data={"input": {"command": "sforge-submit --message 'try new whitening'"}},
            )
            i += 1
            add("submission_sent", f"agent-{n_agent + 1} sent", i, round=f"agent-{n_agent + 1}", source="run_agent.log")
            i += 1
            grade(i, "agent")
            i += 1
            continue
        if i > 0 and i % 60 == 30:
            grade(i, "auto")
            i += 1
            continue
        if i % 25 == 5:
            tid = f"toolu_task_{call_n}"
            add(
                "tool_call",
                "Task: survey matched-filter literature",
                i,
                tool_use_id=tid,
                tool_name="Task",
                data={"input": {"description": "survey", "prompt": "Find matched filter tricks"}},
            )
            i += 1
            for k in range(3):
                if i >= n_events:
                    break
                sub_id = f"toolu_sub_{call_n}_{k}"
                if k == 1:
                    add(
                        "tool_call",
                        f"Grep: chirp mass {k}",
                        i,
                        tool_use_id=sub_id,
                        tool_name="Grep",
                        parent_tool_use_id=tid,
                        data={"input": {"pattern": "chirp"}},
                    )
                else:
                    add(
                        "agent_message",
                        f"subagent note {k}: whitening helps",
                        i,
                        parent_tool_use_id=tid,
                        data={"text": f"subagent note {k}"},
                    )
                i += 1
            continue
        r = i % 4
        if r == 0:
            add(
                "thinking",
                f"Consider the noise floor, iteration {i}",
                i,
                data={"text": f"The PSD estimate is biased at low frequency (step {i}).\nTry Welch."},
            )
        elif r == 1:
            tid = f"toolu_{call_n}"
            add(
                "tool_call",
                f"Bash: python train.py --epoch {i}",
                i,
                tool_use_id=tid,
                tool_name="Bash",
                data={"input": {"command": f"python train.py --epoch {i}"}},
            )
        elif r == 2:
            add(
                "tool_result",
                f"loss {1.0 / (i + 1):.4f}" + (" ERROR: nan detected" if i % 46 == 2 else ""),
                i,
                tool_use_id=f"toolu_{call_n - 1}",
                is_error=(i % 46 == 2),
                data={
                    "content": f"epoch {i}\nloss {1.0 / (i + 1):.4f}\n" + ("needle-in-output\n" if i % 50 == 2 else "")
                },
            )
        else:
            add(
                "agent_message",
                f"Plan step {i}: tune the band-pass filter",
                i,
                message_id=f"msg_{i}",
                model="claude-opus-4",
                usage=Usage(input_tokens=1200, output_tokens=300, cache_read_tokens=5000, cache_write_tokens=100),
                data={"text": f"Plan step {i}"},
            )
        i += 1

    # the last agent round reaches exactly SYNTH_BEST; recompute the running best
    last_agent = max((s for s in subs if s["kind"] == "agent"), key=lambda s: s["t"], default=None)
    if last_agent is not None:
        last_agent["score"] = last_agent["score_0_100"] = SYNTH_BEST
        for e in events:
            if e.kind == "judge_result" and e.round == last_agent["round"]:
                e.summary = f"{e.round} graded: score {SYNTH_BEST} · pass {last_agent['pass_rate']:.0%}"
                e.data = {**e.data, "score": SYNTH_BEST}
    best, best_round, best_pr = None, "", 0.0
    for s in subs:
        s["is_new_best"] = best is None or s["score"] > best
        if s["is_new_best"]:
            best, best_round, best_pr = s["score"], s["round"], s["pass_rate"]
        s["best_score"], s["best_round"], s["best_pass_rate"] = best, best_round, best_pr

    for k in range(0, len(events), 5000):
        rec.insert_events(rk, events[k : k + 5000])
    rec.upsert_task(
        TaskInfo(
            task_id=task_id,
            name="Gravitational-wave detection",
            category="science",
            selection="score_first",
            score_direction="maximize",
            parser="score_sum",
            assumed=False,
        )
    )
    rec.upsert_run(
        rk,
        RunInfo(
            host="local",
            run_id=run_id,
            task_id=task_id,
            agent="claude",
            model="claude-opus-4",
            timeout_s=hours * 3600.0,
            started_at=T0,
            ended_at=T0 + span + 60,
            layout="flat",
        ),
        status="completed",
        score_task=True,
        selection="score_first",
        score_direction="maximize",
        best_round=best_round,
        best_score=best,
        best_pass_rate=best_pr,
        best_score_0_100=best,
        agent_submissions=n_agent,
        auto_submissions=n_auto,
        n_events=len(events),
        cost_usd=412.5,
        stated_cost_usd=398.1,
    )
    _settle(conn)
    rec.replace_submissions(rk, subs)
    if own:
        conn.close()
    return rk


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    path = tmp_path_factory.mktemp("cursor") / "r.duckdb"
    rk = build_synthetic_run(path, 400)
    conn = open_db(path, read_only=True)
    yield conn, rk
    conn.close()


@pytest.fixture()
def cur(synth) -> ReplayCursor:
    conn, rk = synth
    head = store.run_header(conn, rk)
    return ReplayCursor(store.run_events(conn, rk), store.submissions(conn, rk), start=head["started_at"])


# ---------------------------------------------------------------------------- elapsed text


@pytest.mark.parametrize(
    "text,seconds",
    [
        ("3h20m", 12000),
        ("2:15:00", 8100),
        ("95m", 5700),
        ("5400", 5400),
        ("1.5h", 5400),
        ("2h 5m 10s", 7510),
        ("45s", 45),
        ("2:15", 8100),
        ("0:00:30", 30),
        ("1d", 86400),
    ],
)
def test_parse_elapsed(text, seconds):
    assert parse_elapsed(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "abc", "3x", "1:2:3:4", "h3", ":5"])
def test_parse_elapsed_rejects(bad):
    with pytest.raises(ValueError):
        parse_elapsed(bad)


def test_format_elapsed():
    assert format_elapsed(0) == "0:00:00"
    assert format_elapsed(12 * 3600 + 5 * 60 + 9.9) == "12:05:09"
    assert format_elapsed(None) == "-"
    assert format_elapsed(-5) == "-0:00:05"


# ---------------------------------------------------------------------------- store


def test_store_order_and_header(synth):
    conn, rk = synth
    ev = store.run_events(conn, rk)
    assert len(ev) == 400
    ts = [t for t in ev.t if t is not None]
    assert ts == sorted(ts)
    assert ev.t[-3:] == [None, None, None]  # untimed last
    head = store.run_header(conn, rk)
    assert head["run_id"] == "run-synth" and head["task_name"] == "Gravitational-wave detection"
    assert head["tokens"] > 0 and head["tok_cache_read"] > head["tok_input"]
    assert head["best_score"] == SYNTH_BEST
    assert store.list_runs(conn, "synth opus")[0]["run_key"] == rk
    assert store.list_runs(conn, "no-such-thing") == []
    subs = store.submissions(conn, rk)
    assert subs and any(s["is_new_best"] for s in subs)
    fails = store.test_results(conn, rk, subs[0]["round"])
    assert any(t["status"] == "failed" for t in fails)
    d = store.event_detail(conn, ev.event_id[1])
    assert isinstance(d["data"], dict)
    assert store.task(conn, "gw-detect")["selection"] == "score_first"


def test_store_order_ties_by_source_then_offset(tmp_path):
    conn = open_db(tmp_path / "o.duckdb")
    rec = Recorder(conn)
    _settle(conn)
    rk = "h/r/t"
    evs = [
        Event(kind="log", source="run_agent.log", offset=0, t=T0),
        Event(kind="agent_message", source="agent_output.txt", offset=50, t=T0 + 1),
        Event(kind="agent_message", source="agent_output.txt", offset=10, t=T0 + 1),
        Event(kind="log", source="run_agent.log", offset=90, t=T0 + 1),
        Event(kind="agent_message", source="agent_output.txt", offset=5, sub=1, t=None),
        Event(kind="agent_message", source="agent_output.txt", offset=5, sub=0, t=None),
    ]
    rec.insert_events(rk, evs)
    ev = store.run_events(conn, rk)
    # run_agent.log has the earliest time, so it ranks first at equal t
    assert list(zip(ev.source, ev.offset, ev.sub)) == [
        ("run_agent.log", 0, 0),
        ("run_agent.log", 90, 0),
        ("agent_output.txt", 10, 0),
        ("agent_output.txt", 50, 0),
        ("agent_output.txt", 5, 0),
        ("agent_output.txt", 5, 1),
    ]


# ---------------------------------------------------------------------------- cursor moves


def test_steps_and_ends(cur):
    assert cur.index == 0 and cur.position() == pytest.approx(5.0)
    assert cur.step() and cur.index == 1
    assert cur.step(-1) and cur.index == 0
    assert not cur.step(-1) and cur.index == 0
    assert cur.last() and cur.index == cur.n - 1
    assert not cur.step() and cur.index == cur.n - 1
    assert cur.selected_elapsed is None  # untimed tail...
    assert cur.position() == cur.end_elapsed  # ...sits at the last known time
    assert cur.first() and cur.index == 0


def test_submission_and_new_best_moves(cur, synth):
    conn, rk = synth
    subs = store.submissions(conn, rk)
    best_rounds = [s["round"] for s in subs if s["is_new_best"]]
    seen = []
    while cur.next_submission():
        assert cur.kind[cur.index] == "judge_result"
        seen.append(cur.round[cur.index])
    assert seen == [s["round"] for s in subs]
    assert not cur.next_submission()
    assert cur.prev_submission() and cur.round[cur.index] == seen[-2]
    cur.first()
    got = []
    while cur.next_new_best():
        got.append(cur.round[cur.index])
    assert got == best_rounds
    assert cur.prev_new_best() and cur.round[cur.index] == best_rounds[-2]


def test_jump_to_elapsed(cur):
    assert cur.jump_to(parse_elapsed("6h"))
    assert cur.position() <= 6 * 3600 < cur.position(cur.index + 1)
    assert cur.play_head == 6 * 3600
    cur.jump_to(-10)
    assert cur.index == 0
    cur.jump_to(10**9)
    assert cur.index == cur.n - 1


def test_play_with_clock(cur):
    cur.set_speed(600)
    cur.play()
    h0 = cur.play_head
    for _ in range(7):
        cur.advance(1.0)
    assert cur.play_head == pytest.approx(h0 + 7 * 600)
    assert cur.position() <= cur.play_head < cur.position(cur.index + 1)
    assert cur.playing
    cur.advance(10**6)
    assert not cur.playing and cur.at_end
    assert cur.cycle_speed() == 1 and cur.cycle_speed(-1) == 600
    assert cur.cycle_speed(-1, wrap=False) == 60 and cur.set_speed(1) is None
    assert cur.cycle_speed(-1, wrap=False) == 1


def test_search_cycles(cur):
    n = cur.search("ERROR: NAN")
    assert n >= 2
    first = cur.index
    assert "nan detected" in cur.summary[first].lower()
    assert cur.match_number == 1
    cur.next_match()
    assert cur.index > first and cur.match_number == 2
    for _ in range(n - 1):
        cur.next_match()
    assert cur.index == first  # wrapped around
    cur.prev_match()
    assert cur.match_number == n
    assert cur.search("zzz-not-there") == 0 and not cur.next_match()


def test_search_in_data_through_store(cur, synth):
    conn, rk = synth
    ids = store.search_events(conn, rk, "Needle-In-Output")
    assert ids
    idx = [cur.events.index_of(e) for e in ids]
    assert cur.search("needle-in-output", idx) == len(ids)
    assert cur.index == min(idx)
    # the in-memory matcher with texts gives the same answer
    texts = [None] * cur.n
    for i in idx:
        texts[i] = "...needle-in-output..."
    c2 = ReplayCursor(cur.events, start=cur.start, texts=texts)
    assert c2.search("NEEDLE-in") == len(ids)


def test_subagent_depths():
    kinds = ["tool_call", "agent_message", "tool_call", "tool_result", "agent_message", "agent_message"]
    tu = ["a", None, "b", "b", None, None]
    pu = [None, "a", "a", "a", "b", None]
    assert subagent_depths(kinds, tu, pu) == [0, 1, 1, 1, 2, 0]


def test_empty_cursor():
    c = ReplayCursor(store.EventColumns())
    assert not c.step() and not c.next_submission() and not c.advance(10, 600)
    assert c.search("x") == 0 and c.position() == 0.0


def test_detail_shows_a_one_line_text_once_and_a_long_text_in_full():
    from rich.console import Console

    from edgetui.views.widgets.detail import render_detail

    def plain(ev):
        con = Console(width=100, record=True, file=__import__("io").StringIO())
        con.print(render_detail({"event": ev, "elapsed": 5.0}))
        return con.export_text()

    short = plain(
        {
            "kind": "log",
            "summary": "Images ready",
            "data": {"message": "Images ready"},
            "source": "run_agent.log",
            "offset": 0,
            "t": 1.0,
        }
    )
    assert short.count("Images ready") == 1
    long_text = "line one of a longer message\nline two with more detail"
    full = plain(
        {
            "kind": "agent_message",
            "summary": "line one of a longer message …",
            "data": {"text": long_text},
            "source": "agent_output.txt",
            "offset": 9,
            "t": 1.0,
        }
    )
    assert "line two with more detail" in full and "── Message" in full


def test_event_marks_errors_alarms_but_not_acknowledgements():
    from edgetui.views.widgets.event_list import event_mark

    assert event_mark("judge_result", False, None, True)[0] == "★"
    assert event_mark("judge_result", False, None, False)[0] == "◆"
    assert event_mark("judge_result", True, None, False)[0] == "✗"  # failed grading
    assert event_mark("alarm", False, "critical", False)[0] == "✗"
    assert event_mark("infra_error", False, "ERROR", False)[0] == "✗"
    assert event_mark("alarm", False, "info", False)[0] == " "  # an acknowledgement is not an error
    assert event_mark("tool_result", True, None, False)[0] == "✗"
    assert event_mark("agent_message", False, None, False)[0] == " "


def test_report_detail_gives_failing_test_names_the_width_and_says_manual_rounds_are_not_counted():
    """Failing tests without messages get the pane's width for their names (a trial saw them cut at
    19 characters beside an empty column); a manual round's "best so far" says it is not counted
    instead of dashes; a NaN score is no score in the result's summary."""
    from rich.console import Console

    from edgetui.parsers.sforge_dir import SubmissionRecord, result_summary
    from edgetui.views.widgets.detail import render_detail

    def plain(detail):
        con = Console(width=100, record=True, file=__import__("io").StringIO())
        con.print(render_detail(detail))
        return con.export_text()

    name = "tests/test_checkout_restores_the_working_tree.py::test_detached"
    ev = {
        "kind": "judge_result",
        "summary": "manual-1 graded",
        "data": {"round": "manual-1"},
        "source": "submissions/manual-1/report.json",
        "offset": 0,
        "t": 1.0,
        "round": "manual-1",
    }
    sub = {
        "round": "manual-1",
        "kind": "manual",
        "status": "graded",
        "pass_rate": 0.5,
        "best_score": None,
        "best_pass_rate": None,
        "best_round": None,
        "is_new_best": False,
    }
    out = plain(
        {
            "event": ev,
            "elapsed": 5.0,
            "submission": sub,
            "tests": [{"name": name, "status": "FAILED", "message": None}, {"name": "ok", "status": "PASSED"}],
        }
    )
    assert name in out
    assert "not counted (a manual submission)" in out and "– · pass –" not in out
    rec = SubmissionRecord(round="agent-36", kind="agent", status="graded", pass_rate=0.893, score=float("nan"))
    assert result_summary(rec) == "agent-36 graded, pass 89.3%, score –"
