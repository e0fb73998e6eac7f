"""The paged timeline (edgetui/store/timeline_pages.py) against the whole-run Arrow timeline (edgetui/store/timeline_columns.py),
through ReplayCursor, on real DuckDB files: the same order, marks, folds, depths, moves and search
matches, while holding only times and marks (pages read on demand)."""

from __future__ import annotations

import duckdb
import pytest

from edgetui.store import queries as store
from edgetui.store.timeline_pages import PAGE, PagedTimeline, first_page, load_index
from edgetui.store.timeline_columns import run_timeline
from edgetui.replay.cursor import ReplayCursor
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
    for name in (
        "event_id",
        "kind",
        "summary",
        "tool_use_id",
        "parent_tool_use_id",
        "tool_name",
        "is_error",
        "round",
        "level",
        "t",
        "agent_format",
    ):
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
    from edgetui.store.database import open_db
    from edgetui.events import Event
    from edgetui.record.recorder import Recorder

    db = tmp_path / "tie.duckdb"
    conn = open_db(db)
    rec = Recorder(conn)
    rk = "local/tie/task"
    evs = []
    for i in range(1500):
        t = 1000.0 + (i // 7)  # groups of 7 events at one time
        src = "b.jsonl" if i % 3 else "a.log"
        kind = "judge_result" if i % 50 == 0 else "agent_message"
        evs.append(
            Event(
                run_key=rk,
                kind=kind,
                source=src,
                offset=(1500 - i) * 10,
                sub=i % 2,
                t=t,
                summary=f"msg {i} {'hit' if i % 11 == 0 else ''}",
                round=f"agent-{i}" if kind == "judge_result" else None,
            )
        )
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
    from edgetui.store.database import open_db
    from edgetui.record.ingest import ingest_paths

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
                from edgetui.replay.fold import fold_head

                for j in range(i, i + a.row_folded(r)):
                    h = fold_head(a.summary[j] or "")
                    heads[h] = heads.get(h, 0) + 1
                assert b.events.fold_heads(i, b.row_folded(r)) == heads
        _read_all(conn, b.events)
        assert [b.events.event_id[i] for i in range(b.n)] == list(a.events.event_id), rk
        folded += a.n_metadata
    conn.close()
    assert folded > 0


def test_chart_submissions_keep_each_parts_new_bests_and_the_extremes(tmp_path):
    """Past ``max_rows`` the chart's submissions keep, of each of ``4 × buckets`` parts of the span, the
    first, last, lowest and highest new best (the points the best-so-far line is drawn through) and
    each bucket's lowest and highest score: the same line and the same y extremes. Every new best's
    round is in :func:`store.new_best_rounds`."""
    db = tmp_path / "c.duckdb"
    rk = build_synthetic_run(db, 20000)
    conn = duckdb.connect(str(db), read_only=True)
    full = store.submissions(conn, rk)
    few = store.chart_submissions(conn, rk, max_rows=100, buckets=10)
    marks = store.new_best_rounds(conn, rk)
    conn.close()
    assert len(full) > 100 and len(few) < len(full)
    bests = [s for s in full if s["is_new_best"]]
    assert sorted(marks) == sorted(s["round"] for s in bests)
    kept = {s["round"] for s in few}
    assert len([s for s in few if s["is_new_best"]]) < len(bests)  # (thinned: this run has more than 40 parts' worth)

    def x(s):
        return next(s[k] for k in ("t", "submitted_at", "graded_at", "seen_at") if s.get(k) is not None)

    x0 = min(x(s) for s in full)
    span = max(x(s) for s in full) - x0
    parts: dict[int, list] = {}
    for s in bests:
        parts.setdefault(min(39, int((x(s) - x0) / span * 40)), []).append(s)
    for group in parts.values():
        ordered = sorted(group, key=x)
        assert ordered[0]["round"] in kept and ordered[-1]["round"] in kept
        for q in ("best_score", "best_pass_rate"):
            vs = [s[q] for s in group if s[q] is not None]
            if vs:
                assert {s[q] for s in few if s["round"] in {g["round"] for g in group}} >= {min(vs), max(vs)}
    for kind in ("agent", "auto"):
        fs = [s["score"] for s in full if s["kind"] == kind]
        ks = [s["score"] for s in few if s["kind"] == kind]
        assert min(ks) == min(fs) and max(ks) == max(fs)
    order = [s["round"] for s in full]
    assert [s["round"] for s in few] == [r for r in order if r in {s["round"] for s in few}]  # same order


@pytest.mark.parametrize("data", [False, True])
def test_first_page_of_matches_then_the_rest_are_every_match(run, data):
    """``find_from`` gives the matches of the first ``limit`` times from an event's time on, complete
    over its ``cover``; ``find_rest`` then gives exactly what ``find`` (``find_in_data``) gives: from the
    first event, the middle, the last timed event and the untimed tail, with pages full or not."""
    conn, rk = run
    tl = load_index(conn, rk)
    for q in ("task", "loss", "needle-in-output", "no such text anywhere"):
        every = (tl.find_in_data if data else tl.find)(conn, q).tolist()
        for start in (0, 1, 1234, tl.n_timed - 1, tl.n_timed + 10):
            for limit in (1, 7, PAGE, 100_000):
                page, cover = tl.find_from(conn, q, start, data=data, limit=limit)
                if cover is None:  # every match at once
                    assert page.tolist() == every, (q, start, limit)
                    continue
                lo, hi = cover
                assert lo <= start <= hi or not page.tolist()
                assert page.tolist() == [i for i in every if lo <= i <= hi], (q, start, limit)
                if limit < len(every):
                    assert len(page) >= min(limit, len([i for i in every if i >= lo and i < tl.n_timed]))
                rest = tl.find_rest(conn, q, page, cover, data=data)
                assert rest.tolist() == every, (q, start, limit)


def test_first_page_of_matches_with_tied_times(tmp_path):
    """A page cut inside a group of events sharing a time holds every match of that time (its cover
    ends after the group), in the full key's order."""
    from edgetui.store.database import open_db
    from edgetui.events import Event
    from edgetui.record.recorder import Recorder

    db = tmp_path / "tie.duckdb"
    conn = open_db(db)
    rk = "local/tie/task"
    evs = [
        Event(
            run_key=rk,
            kind="agent_message",
            source="b.jsonl" if i % 3 else "a.log",
            offset=(900 - i) * 10,
            sub=i % 2,
            t=1000.0 + (i // 7),
            summary=f"msg {i} {'hit' if i % 2 == 0 else ''}",
        )
        for i in range(900)
    ]
    Recorder(conn).insert_events(rk, evs)
    conn.close()
    conn = duckdb.connect(str(db), read_only=True)
    whole = run_timeline(conn, rk)
    tl = load_index(conn, rk)
    every = whole.find("hit")
    for start in (0, 50, 400):
        for limit in (1, 3, 10, 60):
            page, cover = tl.find_from(conn, "hit", start, limit=limit)
            assert cover is not None
            lo, hi = cover
            assert whole.t[lo] == whole.t[start] and (lo == 0 or whole.t[lo - 1] < whole.t[lo])
            assert hi == tl.n - 1 or whole.t[hi + 1] > whole.t[hi]  # a group is never cut
            assert page.tolist() == [i for i in every if lo <= i <= hi]
            assert tl.find_rest(conn, "hit", page, cover).tolist() == every
    conn.close()


def test_cursor_over_a_first_page_of_matches_waits_at_its_edges(run):
    """Over a first page of matches the cursor selects the page's first match at or after the
    selection, steps within the page, and says when the next / previous match lies outside it;
    given every match afterwards (``select=False``) the selection stays and the moves wrap."""
    conn, rk = run
    _, b = _both(conn, rk)
    tl = b.events
    every = tl.find(conn, "task").tolist()
    b.select(1000)
    page, cover = tl.find_from(conn, "task", b.index, limit=5)
    assert cover is not None and len(page) == 5
    assert b.search("task", page, presorted=True, cover=cover) == 5
    first = next(i for i in every if i >= 1000)
    assert b.index == first and b.match_cover == cover and b.match_number is None
    assert not b.match_needs_more(1) and b.match_needs_more(-1)  # the previous match is before the page
    for _ in range(4):
        assert b.next_match()
    assert b.index == page.tolist()[-1] and b.match_needs_more(1)
    b.search("task", tl.find_rest(conn, "task", page, cover), presorted=True, select=False)
    assert b.index == page.tolist()[-1] and b.match_cover is None and not b.match_needs_more(1)
    assert b.match_number == every.index(b.index) + 1
    assert b.next_match() and b.index == every[every.index(page.tolist()[-1]) + 1]
    b.last()
    assert b.next_match() and b.index == every[0]  # wraps, every match known
