"""The why view and its milestone-to-milestone diff stepping on runs with real submission
archives: the bundled 12-hour sample (its generator writes the workspace as the transcript's
edits left it) and two genuine SForge runs. What the view shows is checked against the archives
themselves, read here with :mod:`tarfile` (not through edgetui), and against the transcript's
own Write and Edit calls."""

from __future__ import annotations

import json
import re
import textwrap
import tarfile
from pathlib import Path

import pytest

from edgetui.views.app import EdgeTUIApp
from edgetui.store.database import open_db
from edgetui.views.screens.moments import WhyScreen
from edgetui.analysis.why_new_best import why_of

from test_replay_app import loaded, wait_for

from conftest import copy_samples_db

ROOT = Path(__file__).resolve().parents[1]
GW_DIR = ROOT / "sample_runs" / "runs" / "opus48-edge-3-20260312005800" / "gw_signal_search"
GW_TRUTH = json.loads(
    (ROOT / "sample_runs" / "_truth" / "opus48-edge-3-20260312005800__gw_signal_search.json").read_text()
)
GW_KEY = "local/opus48-edge-3-20260312005800/gw_signal_search"
GENUINE = ROOT / "sample_runs" / "genuine"
GENUINE_RUNS = {
    "local/real-tz-20261201182000/tiny_stats": GENUINE / "runs" / "real-tz-20261201182000" / "tiny_stats",
    "local/real-pack-20261201181500/tiny_pack": GENUINE / "runs" / "real-pack-20261201181500" / "tiny_pack",
}


def _members(arc: Path) -> dict[str, str]:
    with tarfile.open(arc) as t:
        return {m.name.removeprefix("./"): t.extractfile(m).read().decode() for m in t.getmembers() if m.isreg()}


def _expected(run_dir: Path, rnd: str, prev: str | None) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The changed files of ``rnd``'s archive against ``prev``'s (status by path) and, per file, the
    lines its new text has that the old one has not."""
    new = _members(run_dir / "submissions" / rnd / "submission.tar.gz")
    old = _members(run_dir / "submissions" / prev / "submission.tar.gz") if prev else {}
    status, fresh = {}, {}
    for p in sorted(set(old) | set(new)):
        if old.get(p) == new.get(p):
            continue
        status[p] = "added" if p not in old else "removed" if p not in new else "changed"
        fresh[p] = [x for x in (new.get(p) or "").splitlines() if x not in set((old.get(p) or "").splitlines())]
    return status, fresh


def _check_view(body: str, run_dir: Path, rnd: str, prev: str | None, width: int = 155) -> int:
    """The view's text says the diff of ``rnd`` against ``prev``, every changed file with its
    status and at least one of its new lines as an added line (a line longer than the view's
    ``width`` cells goes on under its indent: its first part is checked); returns the number of files."""
    status, fresh = _expected(run_dir, rnd, prev)
    against = prev or "nothing (first archive)"
    assert f"submission.tar.gz against {against}: {len(status)} file(s) changed" in body, (rnd, body[-2000:])
    for p, st in status.items():
        assert re.search(rf"^\s+{st}\s+{re.escape(p)}$", body, re.M), (rnd, p, st)
        if fresh[p]:
            assert any(f"    +{x[: width - 5]}" in body for x in fresh[p]), (rnd, p)
    return len(status)


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory, samples_template) -> Path:
    db = tmp_path_factory.mktemp("whys") / "s.duckdb"
    copy_samples_db(samples_template, db)
    return db


def test_the_bundled_sample_has_an_archive_per_graded_round_with_its_logged_size():
    rounds = [r["round"] for r in GW_TRUTH["rounds"]]
    assert len(rounds) == GW_TRUTH["expected"]["total_rounds"] == 248
    for rnd in rounds:
        d = GW_DIR / "submissions" / rnd
        arc = d / "submission.tar.gz"
        size = int(re.search(r"Archive saved \((\d+) bytes\)", (d / "run_instance.log").read_text()).group(1))
        assert arc.stat().st_size == size, rnd
        # the archive holds the files the judge allowed, no more, no fewer
        assert sorted(_members(arc)) == (d / "allowed_files.txt").read_text().split(), rnd


def test_the_why_of_each_bundled_reframing_moment_diffs_what_the_transcript_edited(sample_db):
    conn = open_db(sample_db, read_only=True)
    n_added = 0
    try:
        for m in GW_TRUTH["reframing_moments"]:
            w = why_of(conn, GW_KEY, m["round"])
            d = w["diff"]
            assert d["error"] is None and d["against"] == w["prev_round"] is not None
            edits = conn.execute(
                """SELECT tool_name, json_extract_string(data, '$.input.file_path'),
                          json_extract_string(data, '$.input.new_string')
                   FROM events WHERE run_key = ? AND kind = 'tool_call' AND tool_name IN ('Write', 'Edit')
                     AND t > ? AND t <= ? AND parent_tool_use_id IS NULL""",
                [GW_KEY, w["t_from"], w["t_to"]],
            ).fetchall()
            status, _ = _expected(GW_DIR, m["round"], w["prev_round"])
            assert {f["path"]: f["status"] for f in d["files"]} == status
            # a module the agent wrote since the previous best is an added file
            written = {p.split("/gw_search/", 1)[1] for tool, p, _ in edits if tool == "Write"}
            assert written == {p for p, s in status.items() if s == "added"}
            # the reframing's edits ("  # reworked") are added lines of the files they edited
            reworked = {
                p.split("/gw_search/", 1)[1] for tool, p, new in edits if tool == "Edit" and "# reworked" in new
            }
            assert reworked
            for f in d["files"]:
                if f["path"] in reworked:
                    assert any(x.startswith("+") and "# reworked" in x for x in f["lines"]), f["path"]
            n_added += len(written)
    finally:
        conn.close()
    assert len(GW_TRUTH["reframing_moments"]) == 3 and n_added == 2  # two wrote a module (coherent, refine)


@pytest.mark.asyncio
async def test_w_on_a_bundled_moment_then_stepping_every_milestone_shows_each_archive_diff(sample_db):
    moments = [m["round"] for m in GW_TRUTH["reframing_moments"]]
    app = EdgeTUIApp(sample_db, GW_KEY)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: [m["round"] for m in screen.moments_part.moments] == moments)
        await pilot.press("right_parenthesis", "right_parenthesis", "w")  # the second reframing moment
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen))
        why = app.screen
        await wait_for(pilot, lambda: why.diff_shown is not None)
        assert why.why["round"] == moments[1]
        body = why.body_text()
        assert "added    search/coherent.py" in body and "# reworked" in body
        _check_view(body, GW_DIR, moments[1], why.why["prev_round"], why._text_width())
        rounds = why.rounds
        assert (
            len(rounds) == GW_TRUTH["expected"]["new_bests"] == 27 and rounds[-1] == GW_TRUTH["expected"]["best_round"]
        )
        # step back to the first milestone, then forward through all of them
        for _ in range(rounds.index(moments[1])):
            await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: why.diff_shown is not None and why.diff_shown["round"] == rounds[0])
        allowed = (GW_DIR / "submissions" / rounds[0] / "allowed_files.txt").read_text().split()
        assert _check_view(why.body_text(), GW_DIR, rounds[0], None, why._text_width()) == len(
            allowed
        )  # everything added
        for prev, rnd in zip(rounds, rounds[1:]):
            await pilot.press("right_square_bracket")
            await wait_for(pilot, lambda rnd=rnd: why.diff_shown is not None and why.diff_shown["round"] == rnd)
            assert why.why["prev_round"] == prev
            assert _check_view(why.body_text(), GW_DIR, rnd, prev, why._text_width()) > 0, rnd
            c = screen.cursor  # the replay follows
            assert (c.kind[c.index], c.round[c.index]) == ("judge_result", rnd)


@pytest.mark.asyncio
@pytest.mark.parametrize("key", sorted(GENUINE_RUNS))
async def test_stepping_the_milestones_of_a_genuine_run_shows_each_archive_diff(tmp_path, key):
    from edgetui.record.ingest import ingest_paths

    db = tmp_path / "g.duckdb"
    conn = open_db(db)
    ingest_paths(conn, [GENUINE_RUNS[key].parent], tasks_dir=GENUINE / "tasks")
    conn.close()
    app = EdgeTUIApp(db, key)
    async with app.run_test(size=(160, 48)) as pilot:
        await loaded(pilot)
        await pilot.press("g", "right_curly_bracket", "w")  # the first new best
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen))
        why = app.screen
        rounds = why.rounds
        assert len(rounds) >= 2 and why.why["round"] == rounds[0]
        await wait_for(pilot, lambda: why.diff_shown is not None)
        assert _check_view(why.body_text(), GENUINE_RUNS[key], rounds[0], None, why._text_width()) > 0
        changed = 0
        for prev, rnd in zip(rounds, rounds[1:]):
            await pilot.press("right_square_bracket")
            await wait_for(pilot, lambda rnd=rnd: why.diff_shown is not None and why.diff_shown["round"] == rnd)
            changed += _check_view(why.body_text(), GENUINE_RUNS[key], rnd, prev, why._text_width())
        assert changed > 0  # real edits between the bests


@pytest.mark.asyncio
async def test_why_at_80_columns_wraps_under_its_indents_and_cuts_samples_at_a_word(sample_db):
    """At 80 columns the action samples were cut mid-word at 70 characters and every wrapped line
    (notes, thinking, a long diff line) went on at column 1. Now: samples end at a word (…), and a
    line too long for the view goes on under its own indent, every character of a diff line kept."""
    moments = [m["round"] for m in GW_TRUTH["reframing_moments"]]
    app = EdgeTUIApp(sample_db, GW_KEY)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await loaded(pilot)
        await wait_for(pilot, lambda: [m["round"] for m in screen.moments_part.moments] == moments)
        await pilot.press("right_parenthesis", "w")
        await wait_for(pilot, lambda: isinstance(app.screen, WhyScreen))
        why = app.screen
        await wait_for(pilot, lambda: why.diff_shown is not None)
        width = why._text_width()
        lines = why.body_text().split("\n")
        assert all(len(x) <= width for x in lines)
        # the view's own lines as drawn: nothing wrapped by the widget past what we wrapped
        assert why.query_one("#why-body").region.width >= width
        diff = why.diff_shown["diff"]
        long = [x for f in diff["files"] for x in f["lines"] if len(x) + 4 > width]
        assert long, "the sample's diff has a line longer than 80 columns"
        body = why.body_text()
        for x in long[:5]:  # each long diff line is all there: first part, then the rest indented
            room = width - 5
            parts = [x[1:][i : i + room] for i in range(0, len(x) - 1, room)]
            assert "    " + x[0] + parts[0] + "\n" + "".join(f"    ↪{p}\n" for p in parts[1:]) in body, x
        flat_body = " ".join(body.split())  # a sample may go on under its indent at 80 columns
        actions = why.why["actions"]
        for a in actions.values():
            for ex in a["examples"][-2:]:
                flat = " ".join(ex.split())
                room = min(70, width - 18)  # "  kind      n  " before it (18 cells)
                if len(flat) > room:
                    shown = textwrap.shorten(flat, room, placeholder=" …", break_on_hyphens=False)
                    assert shown.endswith(" …") and shown in flat_body
                    assert flat.startswith(shown[:-2]) and flat[len(shown) - 2] == " "  # cut at a word
