"""The replay screen's Arrow-backed timeline (edgetui/store/timeline_columns.py) against the list-backed one
(store.run_events), through ReplayCursor, on a real DuckDB file."""

from __future__ import annotations

import duckdb
import pytest

from edgetui.store import queries as store
from edgetui.store.timeline_columns import ArrowTimeline, run_timeline, search_light
from edgetui.replay.cursor import ReplayCursor
from test_replay_cursor import build_synthetic_run


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    db = tmp_path_factory.mktemp("tl") / "tl.duckdb"
    rk = build_synthetic_run(db, 3000, untimed_tail=4)
    conn = duckdb.connect(str(db), read_only=True)
    yield conn, rk
    conn.close()


def _both(conn, rk):
    subs = store.submissions(conn, rk)
    start = store.run_header(conn, rk).get("started_at")
    lists = ReplayCursor(store.run_events(conn, rk), subs, start=start)
    arrow = ReplayCursor(run_timeline(conn, rk), subs, start=start)
    return lists, arrow


def test_same_timeline_as_the_lists(run):
    conn, rk = run
    a, b = _both(conn, rk)
    assert isinstance(b.events, ArrowTimeline)
    assert b.n == a.n == 3000
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
        assert list(getattr(b.events, name)) == getattr(a.events, name), name
    assert list(b.elapsed) == a.elapsed and b.elapsed[-1] is None  # the untimed tail
    assert list(b._pos) == a._pos and b.end_elapsed == a.end_elapsed
    assert b.submission_idx == a.submission_idx and b.new_best_idx == a.new_best_idx and a.new_best_idx
    assert list(b.depth) == a.depth and max(a.depth) >= 1
    assert b.metadata == a.metadata and b.n_metadata == a.n_metadata
    assert b.events.index_of(a.events.event_id[1234]) == 1234 and b.events.index_of("nope") is None
    ids = [a.events.event_id[i] for i in (5, 77, 2999)]
    assert b.events.indices_of(ids + ["nope"]) == [5, 77, 2999]


def test_same_folds_on_a_real_transcript(tmp_path):
    """Metadata rows (replay/fold.py) of a real Claude session transcript: the same events folded,
    the same rows, whichever timeline the cursor walks."""
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
        assert b.metadata == a.metadata, rk
        for c in (a, b):
            c.set_folding(True)
        assert [a.row_event(r) for r in range(a.n_rows)] == [b.row_event(r) for r in range(b.n_rows)]
        folded += a.n_metadata
    conn.close()
    assert folded > 0  # the corpus has metadata records: the comparison is not of empty sets


def test_same_moves(run):
    conn, rk = run
    a, b = _both(conn, rk)
    for move in ("next_submission", "next_new_best", "last", "prev_submission", "prev_new_best", "first"):
        assert getattr(a, move)() == getattr(b, move)()
        assert (a.index, a.play_head) == (b.index, b.play_head), move
    for at in (0.0, 3600.0, 7 * 3600.5, 1e9):
        a.jump_to(at)
        b.jump_to(at)
        assert a.index == b.index
    a.first(), b.first()
    a.play(), b.play()
    for _ in range(30):
        assert a.advance(1.0, 600) == b.advance(1.0, 600)
        assert a.index == b.index
    q = "task"
    ids = search_light(conn, rk, q)
    want = sorted(
        i for i in range(a.n) if q in (a.summary[i] or "").lower() or q in (a.events.tool_name[i] or "").lower()
    )
    assert ids and b.events.indices_of(ids) == want
    assert b.events.find("TASK") == want  # in memory, case-insensitive, the same events
    assert b.events.find("no such text anywhere") == [] and b.events.find("") == []
    assert b.search(q, b.events.indices_of(ids)) == len(want)
