"""The why of a new best on the genuine runs (real SForge submission archives): the actions since
the previous best by kind, the agent's notes, the diff of the two submissions; a hostile archive
in a run folder is refused in the view, with nothing written outside; the replay's `w`."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from edgetui.views.app import EdgeTUIApp
from edgetui.store.database import open_db
from edgetui.record.ingest import ingest_paths
from edgetui.views.screens.moments import WhyScreen
from edgetui.analysis.why_new_best import why_of

from test_archive import HOSTILE, _tar
from test_replay_app import loaded, wait_for

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
RUN = GENUINE / "runs" / "real-stats-20261201180500"
KEY = "local/real-stats-20261201180500/tiny_stats"


def _members(arc: Path) -> dict[str, list[str]]:
    with tarfile.open(arc) as t:
        return {m.name: t.extractfile(m).read().decode().splitlines() for m in t.getmembers() if m.isreg()}


@pytest.fixture(scope="module")
def genuine_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("why") / "g.duckdb"
    conn = open_db(db)
    ingest_paths(conn, [RUN], tasks_dir=GENUINE / "tasks")
    conn.close()
    return db


def test_why_of_a_genuine_new_best_collapses_actions_and_diffs_the_submissions(genuine_db):
    conn = open_db(genuine_db, read_only=True)
    try:
        w = why_of(conn, KEY, "agent-4")
        n_edits = conn.execute(
            """SELECT count(*) FROM events WHERE run_key = ? AND kind = 'tool_call' AND tool_name = 'Edit'
               AND t > ? AND t <= ?""",
            [KEY, w["t_from"], w["t_to"]],
        ).fetchone()[0]
    finally:
        conn.close()
    assert w["prev_round"] == "agent-2" and (w["before"], w["after"]) == (70.0, 90.0)
    assert w["actions"]["edits"]["n"] == n_edits > 0
    assert any("percentile" in m["text"] for m in w["notes"]["messages"])
    d = w["diff"]
    assert d["error"] is None and d["against"] == "agent-2"
    old = _members(RUN / "tiny_stats" / "submissions" / "agent-2" / "submission.tar.gz")
    new = _members(RUN / "tiny_stats" / "submissions" / "agent-4" / "submission.tar.gz")
    changed = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
    assert [f["path"] for f in d["files"]] == changed and d["unchanged"] == len(set(old) & set(new)) - len(
        [p for p in changed if p in old and p in new]
    )
    for f in d["files"]:
        plus = [x[1:] for x in f["lines"] if x.startswith("+") and not x.startswith("+++")]
        minus = [x[1:] for x in f["lines"] if x.startswith("-") and not x.startswith("---")]
        assert plus and set(plus) <= set(new[f["path"]]) and set(minus) <= set(old.get(f["path"], []))
        assert not set(plus) <= set(old.get(f["path"], []))  # the diff says what is new
    # the first new best has nothing before it: the whole archive is added
    conn = open_db(genuine_db, read_only=True)
    try:
        first = why_of(conn, KEY, "agent-1")
        with pytest.raises(KeyError):
            why_of(conn, KEY, "agent-99")
    finally:
        conn.close()
    assert first["prev_round"] is None and first["diff"]["against"] is None
    assert {f["status"] for f in first["diff"]["files"]} == {"added"}


def test_a_hostile_archive_in_a_run_folder_is_refused_in_the_why_view(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(RUN, runs / RUN.name)
    sub = runs / RUN.name / "tiny_stats" / "submissions" / "agent-4"
    _tar(sub / "submission.tar.gz", HOSTILE["dotdot"])
    (sub / "analysis.md").write_text("Median fix and linear percentile: the reviewer's note.\n")
    conn = open_db(tmp_path / "h.duckdb")
    try:
        ingest_paths(conn, [runs], tasks_dir=GENUINE / "tasks")
        before = sorted(runs.rglob("*"))
        w = why_of(conn, KEY, "agent-4")
    finally:
        conn.close()
    assert "refused" in w["diff"]["error"] and "../escaped.py" in w["diff"]["error"] and w["diff"]["files"] == []
    assert w["notes"]["analysis"].startswith("Median fix")
    assert sorted(runs.rglob("*")) == before and not list(tmp_path.rglob("escaped.py"))


@pytest.mark.asyncio
async def test_w_in_the_replay_shows_the_why_of_the_selected_new_best(genuine_db):
    app = EdgeTUIApp(genuine_db, KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("G", "left_curly_bracket")  # the last new best: agent-5
        assert screen.moments_part.why_round() == "agent-5"
        await pilot.press("w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen))
        why = app.screen
        await wait_for(pilot, lambda: why.diff_shown is not None)  # the diff comes in the frame after
        body = why.body_text()
        assert "submission.tar.gz against agent-4" in body and "m, sd = mean(xs), stdev(xs)" in body
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, WhyScreen))
        await pilot.press("g", "w")  # nothing at or before the first event
        await pilot.pause()
        assert not isinstance(app.screen, WhyScreen)


@pytest.mark.asyncio
async def test_the_why_view_steps_milestone_to_milestone_along_the_curve(genuine_db):
    app = EdgeTUIApp(genuine_db, KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await pilot.press("g", "right_curly_bracket", "w")  # the first new best: agent-1
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen))
        why = app.screen
        assert why.why["round"] == "agent-1" and why.rounds == ["agent-1", "agent-2", "agent-4", "agent-5"]
        for expect, against in (("agent-2", "agent-1"), ("agent-4", "agent-2"), ("agent-5", "agent-4")):
            await pilot.press("right_square_bracket")
            await wait_for(
                pilot, lambda expect=expect: why.diff_shown is not None and why.diff_shown["round"] == expect
            )
            assert f"submission.tar.gz against {against}" in why.body_text()
            c = screen.cursor  # the replay follows along the curve
            assert (c.kind[c.index], c.round[c.index]) == ("judge_result", expect)
        await pilot.press("right_square_bracket")  # the last one: it stays
        await pilot.pause(0.2)
        assert why.why["round"] == "agent-5"
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: why.why["round"] == "agent-4")
        assert app.screen is why
