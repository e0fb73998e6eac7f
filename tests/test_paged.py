"""The paged timeline (edgetui/paged.py) against the whole-run Arrow timeline (edgetui/timeline.py),
through ReplayCursor, on real DuckDB files: the same order, marks, folds, depths, moves and search
matches, while holding only times and marks (pages read on demand)."""

from __future__ import annotations

import duckdb
import pytest

from edgetui import store
from edgetui.paged import PAGE, PagedTimeline, first_page, load_index
from edgetui.timeline import run_timeline, search_light
from replay.cursor import ReplayCursor
from test_replay_cursor import build_synthetic_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = tmp_path_factory.mktemp("pg") / "pg.duckdb"
    rk = build_synthetic_run(db, 3000, untimed_tail=700)  # the untimed tail spans two pages
    conn = duckdb.connect(str(db), read_only=True)
    yield conn, rk
    conn.close()


def _both(conn, rk):
    subs = store.submissions(conn, rk)
    start = store.run_header(conn, rk).get("started_at")
    whole = ReplayCursor(run_timeline(conn, rk), subs, start=start)
    paged = ReplayCursor(load_index(conn, rk), subs, start=start)
    return whole, paged


def _read_all(conn, tl: PagedTimeline) -> None:
    tl.add_pages(tl.fetch_pages(conn, tl.missing(0, tl.n - 1)))


def test_same_timeline_marks_and_pages(run):
    conn, rk = run
    a, b = _both(conn, rk)
    tl = b.events
    assert isinstance(tl, PagedTimeline) and b.n == a.n == 3000 and tl.n_timed == 2300
    assert tl.summary[5] is None and tl.kind[b.submission_idx[3]] == "judge_result"  # nothing read yet but marks
    assert b.submission_idx == a.submission_idx and b.new_best_idx == a.new_best_idx and a.new_best_idx
    assert list(b.elapsed) == list(a.elapsed) and list(b._pos) == list(a._pos) and b.end_elapsed == a.end_elapsed
    assert list(b.depth) == list(a.depth) and max(a.depth) >= 1
    assert list(b.metadata) == list(a.metadata)
    assert [tl.round[i] for i in b.submission_idx] == [a.round[i] for i in a.submission_idx]
    assert len(tl.missing(0, tl.n - 1)) == -(-3000 // PAGE)
    _read_all(conn, tl)
    for name in ("event_id", "kind", "summary", "tool_use_id", "parent_tool_use_id", "tool_name", "is_error",
                 "round", "level", "t", "agent_format"):
        assert [getattr(tl, name)[i] for i in range(tl.n)] == list(getattr(a.events, name)), name
    fp = first_page(conn, rk)
    assert fp.event_id == list(a.events.event_id)[:PAGE]


def test_same_moves_and_search(run):
    conn, rk = run
    a, b = _both(conn, rk)
    for move in ("next_submission", "next_new_best", "last", "prev_submission", "prev_new_best", "first"):
        assert getattr(a, move)() == getattr(b, move)()
        assert (a.index, a.play_head) == (b.index, b.play_head), move
    for at in (0.0, 3600.0, 7 * 3600.5, 1e9):
        a.jump_to(at), b.jump_to(at)
        assert a.index == b.index
    for q in ("task", "GREP", "loss", "no such text anywhere"):
        want = a.events.find(q)
        got = b.events.find(conn, q)
        assert got.tolist() == want, q
    assert b.events.find(conn, "task").tolist()[-1] >= 2300  # matches in the untimed tail are placed too
    ids = store.search_events(conn, rk, "needle-in-output")
    assert ids and b.events.find_in_data(conn, "needle-in-output").tolist() == a.events.indices_of(ids)
    assert b.search("task", b.events.find(conn, "task"), presorted=True) == len(a.events.find("task"))
    assert b.next_match() and b.index == a.events.find("task")[1] or b.index in a.events.find("task")
    eid = a.events.event_id[1234]
    assert b.events.index_of_id(conn, eid) == 1234 and b.events.index_of_id(conn, "nope") is None


def test_tied_times_are_ordered_by_the_full_key(tmp_path):
    """Events sharing a time (a record's content blocks, a log line and a transcript line at the same
    anchor) are placed by segment, source rank, offset and sub, as the whole-run read orders them."""
    from edgetui.db import open_db
    from edgetui.events import Event
    from edgetui.recorder import Recorder

    db = tmp_path / "tie.duckdb"
    conn = open_db(db)
    rec = Recorder(conn)
    rk = "local/tie/task"
    evs = []
    for i in range(1500):
        t = 1000.0 + (i // 7)  # groups of 7 events at one time
        src = "b.jsonl" if i % 3 else "a.log"
        kind = "judge_result" if i % 50 == 0 else "agent_message"
        evs.append(Event(run_key=rk, kind=kind, source=src, offset=(1500 - i) * 10, sub=i % 2, t=t,
                         summary=f"msg {i} {'hit' if i % 11 == 0 else ''}", round=f"agent-{i}" if kind == "judge_result" else None))
    rec.insert_events(rk, evs)
    conn.close()
    conn = duckdb.connect(str(db), read_only=True)
    whole = run_timeline(conn, rk)
    a = ReplayCursor(whole, [], start=1000.0)
    b = ReplayCursor(load_index(conn, rk), [], start=1000.0)
    assert b.submission_idx == a.submission_idx
    assert b.events.find(conn, "hit").tolist() == whole.find("hit")
    _read_all(conn, b.events)
    assert [b.events.event_id[i] for i in range(b.n)] == list(whole.event_id)
    assert first_page(conn, rk).event_id == list(whole.event_id)[:PAGE]
    conn.close()


def test_same_folds_on_a_real_transcript(tmp_path):
    from conftest import need_corpus
    from edgetui.db import open_db
    from edgetui.ingest import ingest_paths

    files = sorted(need_corpus().rglob("*.jsonl"))
    db = tmp_path / "f.duckdb"
    conn = open_db(db)
    ingest_paths(conn, files[:12])
    keys = [r[0] for r in conn.execute("SELECT run_key FROM runs ORDER BY run_key").fetchall()]
    folded = 0
    for rk in keys:
        a, b = _both(conn, rk)
        assert list(b.metadata) == list(a.metadata), rk
        assert list(b.depth) == list(a.depth), rk
        for c in (a, b):
            c.set_folding(True)
        assert [a.row_event(r) for r in range(a.n_rows)] == [b.row_event(r) for r in range(b.n_rows)]
        for r in range(a.n_rows):
            if a.row_folded(r):
                i = a.row_event(r)
                heads: dict = {}
                from replay.fold import fold_head
                for j in range(i, i + a.row_folded(r)):
                    h = fold_head(a.summary[j] or "")
                    heads[h] = heads.get(h, 0) + 1
                assert b.events.fold_heads(i, b.row_folded(r)) == heads
        _read_all(conn, b.events)
        assert [b.events.event_id[i] for i in range(b.n)] == list(a.events.event_id), rk
        folded += a.n_metadata
    conn.close()
    assert folded > 0


def test_chart_submissions_keep_every_new_best_and_the_extremes(tmp_path):
    """Past ``max_rows`` the chart's submissions keep every new best (the best-so-far line is whole)
    and each bucket's lowest and highest score: the same line and the same y extremes."""
    db = tmp_path / "c.duckdb"
    rk = build_synthetic_run(db, 20000)
    conn = duckdb.connect(str(db), read_only=True)
    full = store.submissions(conn, rk)
    few = store.chart_submissions(conn, rk, max_rows=100, buckets=40)
    conn.close()
    assert len(full) > 100 and len(few) < len(full)
    assert [s["round"] for s in few if s["is_new_best"]] == [s["round"] for s in full if s["is_new_best"]]
    for kind in ("agent", "auto"):
        fs = [s["score"] for s in full if s["kind"] == kind]
        ks = [s["score"] for s in few if s["kind"] == kind]
        assert min(ks) == min(fs) and max(ks) == max(fs)
    order = [s["round"] for s in full]
    assert [s["round"] for s in few] == [r for r in order if r in {s["round"] for s in few}]  # same order
