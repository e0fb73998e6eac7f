"""Comparing runs and run groups (edgetui.replay.analysis.compare, `edgetui compare`): on the bundled
sample runs and on run-group siblings recorded into a real DuckDB file."""

from __future__ import annotations

import json
import re

import pytest

from runs_factory import HOUR, NOW, curves, ingest, write_run, write_task

from edgetui.cli.main import main
from edgetui.replay.analysis.compare import Series, parting_point, values_at

from conftest import copy_samples_db


@pytest.fixture(scope="module")
def samples_db(tmp_path_factory, samples_template):
    db = copy_samples_db(samples_template, tmp_path_factory.mktemp("c") / "s.duckdb")
    return db


def test_parting_point_is_the_first_time_the_curves_differ():
    a = Series("a", [(10.0, 20.0), (50.0, 40.0), (90.0, 60.0)], 200.0)
    b = Series("b", [(10.0, 20.0), (50.0, 40.0), (100.0, 60.0)], 200.0)
    assert parting_point([a, b]) == (90.0, [60.0, 40.0])
    assert parting_point([a, Series("c", list(a.steps), 200.0)]) is None
    late = Series("d", [(30.0, 20.0)], 200.0)  # no value yet differs from a value
    assert parting_point([a, late]) == (10.0, [20.0, None])
    assert values_at([a, b], 95.0) == [60.0, 40.0]


def test_compare_two_sample_runs_of_one_task(samples_db, capsys):
    assert main(["--db", str(samples_db), "compare", "real-stats", "real-tz", "--at", "2m", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    cs = curves(samples_db)
    stats = next(c for k, c in cs.items() if "real-stats" in k)
    tz = next(c for k, c in cs.items() if "real-tz" in k)
    first = min(stats.steps[0][0], tz.steps[0][0])
    assert out["parting"]["elapsed_s"] == pytest.approx(first)
    assert out["at"]["values"] == [stats.cell(120 / 3600).value, tz.cell(120 / 3600).value]
    assert [c["name"] for c in out["curves"]] == [stats.run_key, tz.run_key]
    assert all("fit" in c for c in out["curves"])
    assert main(["--db", str(samples_db), "compare", "real-stats", "real-tz", "--plot"]) == 0
    text = capsys.readouterr().out
    assert "they part at 0:00:" in text and "x: elapsed (m:ss)" in text and "\x1b" not in text
    # the values are rescaled 0-100, and a flagged fit still says what it determines (issue 37)
    assert "values are 0-100" in text and "t_half 0.0" in text and "Smax –" not in text
    # without colour the curves still tell apart: each has its own mark, in the legend and on its steps
    legend = {ln.split(" ", 1)[1]: ln.split(" ", 1)[0] for ln in text.splitlines() if ln.startswith("━")}
    assert legend == {stats.run_key: "━•━", tz.run_key: "━o━"}
    canvas = text.split("they part", 1)[1].split("━•━", 1)[0]
    assert canvas.count("•") >= 2 and canvas.count("o") >= 2
    # the x labels are elapsed times (m:ss for runs under ten minutes), not fractions of an hour
    labels = canvas.strip().splitlines()[-1].split()
    assert labels[0] == "0:00" and all(re.fullmatch(r"\d+:\d\d", x) for x in labels), labels


def test_run_group_siblings_merge(tmp_path, capsys):
    tasks, runs, db = tmp_path / "tasks", tmp_path / "runs", tmp_path / "g.duckdb"
    for t in ("ta", "tb"):
        write_task(tasks, t, selection="pass_rate_first", parser="pytest")
    s = NOW - 30 * HOUR
    # group g: two machines' siblings, one task each; group h: one run
    write_run(runs, "g-1-20261101000000", "ta", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 0.2, None)])
    write_run(runs, "g-2-20261101000000", "tb", model="M", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 0.6, None)])
    write_run(runs, "h-1-20261101000000", "ta", model="N", start=s, duration_s=12.5 * HOUR, subs=[(HOUR, 0.4, None)])
    ingest(db, [runs], tasks)
    assert main(["--db", str(db), "compare", "--groups", "g", "h", "--at", "2h", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["at"]["values"] == pytest.approx([40.0, 40.0])  # (20 + 60) / 2 and 40
    assert len(out["curves"][0]["runs"]) == 2
    assert out["parting"] is None  # both reach 40 when the first results are known
    assert main(["--db", str(db), "compare", "--groups", "g", "nope"]) == 2
    assert "no recorded run has the run group 'nope'" in capsys.readouterr().err


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_compare_screen_steps_both_together(samples_db, size):
    from textual.widgets import Static

    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.compare import CompareScreen

    cs = curves(samples_db)
    stats = next(c for k, c in cs.items() if "real-stats" in k)
    tz = next(c for k, c in cs.items() if "real-tz" in k)
    app = EdgeTUIApp(samples_db, compare={"run_keys": [stats.run_key, tz.run_key]})
    async with app.run_test(size=size) as pilot:
        for _ in range(200):
            if isinstance(app.screen, CompareScreen) and app.screen.series:
                break
            await pilot.pause(0.05)
        screen = app.screen
        assert isinstance(screen, CompareScreen) and len(screen.series) == 2

        def values() -> str:
            return screen.query_one("#cmp-values", Static).render().plain

        await pilot.pause()
        assert screen.at == pytest.approx(min(stats.steps[0][0], tz.steps[0][0]))  # opens where they part
        assert "they part at 0:00:" in values()
        await pilot.press("right_square_bracket", "right_square_bracket")
        at = screen.at
        assert at > stats.steps[0][0]
        v = f"{stats.cell(at / 3600).value:.2f}"
        w = f"{tz.cell(at / 3600).value:.2f}"
        assert v in values() and w in values()  # both stepped to the same elapsed time
        await pilot.press("G")
        assert screen.at == pytest.approx(screen.span_s)
        await pilot.press("p")
        assert screen.at == pytest.approx(min(stats.steps[0][0], tz.steps[0][0]))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_q_in_compare_view_goes_back_to_the_shell(samples_db, size):
    """``edgetui compare --view``: ``q`` ends the app (it opened a run picker the user never saw)."""
    from edgetui.cli.analysis_commands import compare_view_spec
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.compare import CompareScreen
    from edgetui.views.screens.picker import PickerScreen

    cs = curves(samples_db)
    keys = [next(c for k, c in cs.items() if name in k).run_key for name in ("real-stats", "real-tz")]
    app = EdgeTUIApp(samples_db, compare=compare_view_spec(keys, groups=False))
    async with app.run_test(size=size) as pilot:
        for _ in range(200):
            if isinstance(app.screen, CompareScreen) and app.screen.series:
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, CompareScreen)
        await pilot.press("q")
        await pilot.pause()
        assert app.return_code == 0  # the app ended
        assert not any(isinstance(s, PickerScreen) and s is app.screen for s in app.screen_stack)
