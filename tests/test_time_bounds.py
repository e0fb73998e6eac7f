"""How each transcript time is obtained, offline, on the committed genuine SForge runs (issue 36, item 1):
nothing after the agent finished, no result before its call, an event in a gap between anchors
carries the gap's bounds (``t_lo`` / ``t_hi``), and the replay's detail pane says them.
(The comparison with what a live watcher saw is tests/test_real_harness_times.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from edgetui.record.ingest import ingest_paths
from edgetui.record.time_alignment import line_placement
from edgetui.store.database import open_db
from edgetui.views.widgets.detail import render_detail

from time_comparison import causal_faults

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
STATS = "local/real-stats-20261201180500/tiny_stats"


@pytest.fixture(scope="module")
def genuine(tmp_path_factory):
    conn = open_db(tmp_path_factory.mktemp("bounds") / "g.duckdb")
    ingest_paths(conn, [GENUINE / "runs"], tasks_dir=GENUINE / "tasks")
    yield conn
    conn.close()


def test_no_transcript_event_after_the_agent_finished_nor_a_result_before_its_call(genuine):
    keys = [
        r[0]
        for r in genuine.execute("SELECT DISTINCT run_key FROM events WHERE source = 'agent_output.txt'").fetchall()
    ]
    assert len(keys) >= 3
    for k in keys:
        assert causal_faults(genuine, k) == [], k


def test_the_idle_tail_after_the_last_result_says_its_bounds(genuine):
    fin = genuine.execute(
        "SELECT t FROM events WHERE run_key = ? AND source = 'run_agent.log' AND data->>'$.agent_finished' = 'true'",
        [STATS],
    ).fetchone()[0]
    seen = genuine.execute(
        "SELECT seen_at FROM submissions WHERE run_key = ? AND round = 'agent-5'", [STATS]
    ).fetchone()[0]
    rows = genuine.execute(
        "SELECT kind, t, t_source, t_lo, t_hi FROM events WHERE run_key = ? AND source = 'agent_output.txt' "
        'AND t > ? ORDER BY "offset", sub',
        [STATS, seen + 1],
    ).fetchall()
    # the committed copies' mtimes are the checkout's: the tail's only anchors are agent-5's result and
    # "Agent finished", so every event between them says so
    gap = [r for r in rows if r[2] == "interpolated"]
    assert len(gap) >= 14
    assert all(lo is not None and hi == pytest.approx(fin) and lo <= t <= hi for _, t, _, lo, hi in gap), gap
    assert rows[-1][1] == pytest.approx(fin) and rows[-1][2] == "anchored"
    # the sforge-submit calls and their results are anchors themselves: no bounds
    subs = genuine.execute(
        "SELECT count(*) FROM events WHERE run_key = ? AND source = 'agent_output.txt' AND round IS NOT NULL "
        "AND kind = 'tool_result' AND t_source = 'anchored' AND t_lo IS NULL",
        [STATS],
    ).fetchone()[0]
    assert subs == 5


def test_a_message_printed_with_an_anchored_line_is_pinned_to_it():
    # lines: 0 anchor, 1 new message (weight 1), 2 its next block (0), 3 instant result (0), 4 anchor
    t, lo, hi, pinned = line_placement([0.0, 1.0, 0.0, 0.0, 1.0], [(0, 100.0), (4, 110.0)])
    assert t.to_pylist() == [100.0, 105.0, 105.0, 105.0, 110.0]
    assert pinned.to_pylist() == [True, False, False, False, True]
    assert lo.to_pylist() == [None, 100.0, 100.0, 100.0, None] and hi.to_pylist()[1:4] == [110.0] * 3
    t, lo, hi, pinned = line_placement([0.0, 1.0, 0.0, 0.0], [(0, 100.0), (3, 110.0)])
    assert t.to_pylist() == [100.0, 110.0, 110.0, 110.0] and pinned.to_pylist() == [True] * 4


def test_the_detail_pane_says_how_far_a_placed_time_may_be_off():
    ev = {
        "kind": "tool_call",
        "t": 1796160000.0,
        "t_source": "interpolated",
        "t_lo": 1796159913.5,
        "t_hi": 1796160108.4,
    }
    c = Console(width=100, record=True)
    c.print(render_detail({"event": ev, "elapsed": 70}))
    out = c.export_text()
    assert "somewhere in 21:18:33Z–21:21:48Z (195 s without an anchor)" in out
