"""Names told apart and numbers said one way (issue 37, items 4 and 5): run ids and models cut to
the part that tells them apart, in `edgetui runs` and on the screens; nothing cut in a pipe;
tasks folded under their SForge run id; one formatter per quantity."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from textual.app import App

from conftest import copy_samples_db
from edgetui.cli.main import main
from edgetui.live.model import LiveRun
from edgetui.names import abbreviate_all, shared_ends
from edgetui.quantities import fmt_best, fmt_hours, fmt_subs, plural
from edgetui.replay.cursor import format_elapsed
from edgetui.store.database import open_db
from edgetui.views.app import EdgeTUIApp
from edgetui.views.screens.picker import PickerScreen
from edgetui.views.widgets.runs_cells import forecast_cell
from edgetui.views.widgets.runs_table import RunsTable

from test_replay_cursor import build_synthetic_run
from waits import pilot_wait_for as wait_for

CLI = [sys.executable, "-m", "edgetui.cli.main"]
SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
#: 40 runs of one root: a long shared head and tail, told apart in the middle
SUITE_IDS = [f"opus48-copilot-{t}-20260312005800" for t in ("alpha", "beta", "gamma", "delta")] + [
    f"opus48-copilot-run{i:02d}-20260312005800" for i in range(36)
]


@pytest.fixture(scope="module")
def db(tmp_path_factory, samples_template) -> Path:
    path = tmp_path_factory.mktemp("names") / "s.duckdb"
    copy_samples_db(samples_template, path)
    return path


def run_cli(db: Path, *args: str, columns=None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = str(columns)
    r = subprocess.run(
        [*CLI, "--db", str(db), *args], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


# ---------------------------------------------------------------------------- the pure parts


def test_abbreviations_keep_the_part_that_tells_names_apart():
    for width in (12, 16, 22):
        short = abbreviate_all(SUITE_IDS, width)
        assert all(len(s) <= width for s in short)
        assert len(set(short)) == len(SUITE_IDS), (width, short)  # a middle cut showed all 40 alike
    ends = shared_ends(["claude-opus-4-1", "claude-opus-4-8", "gpt-5"])
    assert ends["claude-opus-4-1"] == (14, 0)
    assert abbreviate_all(["claude-opus-4-1", "claude-opus-4-8", "gpt-5"], 11) == [
        "claud…s-4-1",
        "claud…s-4-8",
        "gpt-5",
    ]


def test_one_formatter_per_quantity():
    assert fmt_hours(0.0666667) == "4m" and fmt_hours(0.166667) == "10m"  # were @0.0666667h, 0.166667 h
    assert fmt_hours(12) == "12h" and fmt_hours(1.5) == "1.5h" and fmt_hours(1 + 5 / 60) == "1h05"
    assert format_elapsed(-0.4) == "0:00:00" and format_elapsed(-5) == "-0:00:05"  # no "-0:00:00"
    assert plural(1, "annotation") == "1 annotation" and plural(2, "annotation") == "2 annotations"
    assert fmt_best(1.0, 1.0, False) == "100%" and fmt_best(67.25, None, True) == "67.25"
    assert fmt_subs(225, 23) == "225/23" and fmt_subs(0, 0, 6) == "6 games"
    run = LiveRun(run_key="k", run_id="r", task_id="t", status="running")
    fc = {"value": 54.0, "lo": 40.0, "hi": 70.0, "baseline": 48.0, "horizon_h": 0.0666667}
    assert forecast_cell(run, fc, "w").plain.endswith("@4m")


# ---------------------------------------------------------------------------- the command line


def test_runs_in_a_pipe_is_never_cut(db):
    out = run_cli(db, "runs")
    rows = json.loads(run_cli(db, "runs", "--format", "json"))
    assert "cut to fit" not in out and "not shown" not in out
    for r in rows:  # every run id, model and reason whole
        assert r["run_id"] in out and (r["model"] or "") in out
        if r["status_reason"]:
            assert r["status_reason"] in out
    assert max(len(ln) for ln in out.splitlines()) > 250  # (the width it was cut to before)


@pytest.mark.parametrize("columns", [80, 100])
def test_a_narrow_table_tells_models_and_runs_apart(db, columns):
    out = run_cli(db, "runs", columns=columns)
    lines = out.splitlines()
    header = lines[0].split()
    assert "model" in header and "best" in header  # names first, then the numbers that fit
    model = [ln for ln in lines if "7c1e94d2a0b3" in ln]  # claude-opus-4-8
    other = [ln for ln in lines if ln.startswith("real-p")]  # real-pack: claude-opus-4-1
    m8 = next(w for w in model[0].split() if w.startswith("claud"))
    m1 = next(w for w in other[0].split() if w.startswith("claud"))
    assert m8 != m1 and m8.endswith("4-8") and m1.endswith("4-1")
    ids = [ln.split()[0] for ln in lines[1:] if ln and not ln.startswith("(")]
    assert len(set(ids)) == len(ids)


def test_runs_by_run_id_folds_tasks(tmp_path):
    root = tmp_path / "runs" / "suite-20261201"
    root.mkdir(parents=True)
    shutil.copytree(SAMPLES / "runs" / "judge-demo-001" / "judge_demo_sum", root / "judge_demo_sum")
    shutil.copytree(SAMPLES / "runs" / "7c1e94d2a0b3" / "gitlet_vcs", root / "gitlet_vcs")
    shutil.copy(SAMPLES / "runs" / "judge-demo-001" / "run_config.json", root / "run_config.json")
    db = tmp_path / "suite.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(SAMPLES / "tasks"), str(tmp_path / "runs")]) == 0
    (g,) = json.loads(run_cli(db, "runs", "--by-run-id", "--format", "json"))
    assert (g["run_id"], g["tasks"], g["done"]) == ("suite-20261201", 2, 2)
    per_task = json.loads(run_cli(db, "runs", "--format", "json"))
    scores = [100 * r["best"] if r["best_of"] == "pass_rate" else None for r in per_task]
    assert g["mean_0_100"] is not None and sorted(g["task_ids"].split()) == ["gitlet_vcs", "judge_demo_sum"]
    assert any(s is not None for s in scores)
    table = run_cli(db, "runs", "--by-run-id")
    head = table.splitlines()[0].split()
    assert "suite-20261201" in table and "tasks" in head
    # one word with the picker and the runs screen ("done"), and the mean says what it is
    assert "done" in head and "finished" not in head and "mean_0_100" in head
    assert "mean_0_100: the tasks' best on EdgeBench's 0–100 scale" in table


# ---------------------------------------------------------------------------- the screens


def _suite_db(path: Path) -> None:
    conn = open_db(path)
    for rid in SUITE_IDS[:6]:
        for task in ("task_a", "task_b"):
            build_synthetic_run(path, 30, run_id=rid, task_id=task, conn=conn)
    conn.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_picker_tells_run_ids_apart_and_folds_them(tmp_path, size):
    from textual.widgets import DataTable

    path = tmp_path / "suite.duckdb"
    _suite_db(path)
    app = EdgeTUIApp(path)
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, PickerScreen) and len(app.screen.rows) == 12)
        await pilot.pause()
        t = app.screen.query_one(DataTable)
        ids = {t.get_row_at(i)[0].plain for i in range(t.row_count)}
        assert len(ids) == 6  # six run ids, each told apart (a middle cut showed them alike at 80)
        assert t.virtual_size.width <= t.size.width
        assert "score (↓: lower is better) or pass rate (%)" in str(t.border_subtitle)  # the best column's units
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert t.row_count == 6
        labels = [str(c.label) for c in t.columns.values()]
        assert labels[:4] == ["run id", "tasks", "done", "mean 0–100"]
        # the mean is named: each task's best on the 0–100 scale, not a raw score
        assert "0–100" in str(app.screen.query_one(DataTable).border_subtitle)
        assert {t.get_row_at(i)[1].plain for i in range(t.row_count)} == {"2 tasks"}
        # ended tasks (finished or aborted) say "done", as the runs screen's "2 tasks, 2 done"
        assert all(t.get_row_at(i)[2].plain.endswith(" done") for i in range(t.row_count))
        assert len({t.get_row_at(i)[0].plain for i in range(t.row_count)}) == 6
        await pilot.press("enter")  # a run id: its tasks
        await pilot.pause()
        assert not app.screen.folded and len(app.screen.shown) == 2


class _TableApp(App):
    def compose(self):
        yield RunsTable(id="t")


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_runs_table_tells_run_ids_and_models_apart(size):
    now = time.time()
    runs = [
        LiveRun(
            run_key=f"local/{rid}/t",
            run_id=rid,
            task_id="gravitational_wave_signal_search",
            model="claude-opus-4-1" if i % 2 else "claude-opus-4-8",
            agent="claude-code",
            status="running",
            started_at=now - 3600,
            elapsed_s=3600,
            budget_s=43200,
            tokens=123456,
            cost_usd=1.5,
            last_event_at=now,
        )
        for i, rid in enumerate(SUITE_IDS)
    ]
    app = _TableApp()
    async with app.run_test(size=size) as pilot:
        t = app.query_one(RunsTable)
        t.show(runs, now, tier="auto")
        await pilot.pause()
        shown = [c.plain for c in t.get_column("run_id")]
        assert len(set(shown)) == len(SUITE_IDS), shown[:4]
        if size[0] == 160:  # names take the width before the wide tier's numbers (tokens, cpu, mem)
            assert shown == SUITE_IDS and "gravitational_wave_signal_search" in t.get_column("task")[0].plain
        if "model" in t.columns:
            models = {c.plain for c in t.get_column("model")}
            assert len(models) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_compare_x_axis_says_its_unit(db, size):
    """The compare chart's x axis was fractional hours with no unit (``0.08 0.17``): now elapsed
    time with its unit (``5m``, ``1h``)."""
    from textual.widgets import Static

    from edgetui.views.screens.compare import CompareScreen
    from runs_factory import curves

    cs = curves(db)
    keys = [next(c for k, c in cs.items() if name in k).run_key for name in ("real-stats", "real-tz")]
    app = EdgeTUIApp(db, compare={"run_keys": keys})
    async with app.run_test(size=size) as pilot:
        for _ in range(200):
            if isinstance(app.screen, CompareScreen) and app.screen.series:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        chart = app.screen.query_one("#cmp-chart", Static).render().plain
        axis = chart.rstrip().splitlines()[-1]
        assert re.search(r"\b\d+m\b", axis), axis
        assert not re.search(r"\d\.\d", axis), axis


class _RunsApp(App):
    """The live runs screen alone, on an empty database (the snapshot comes from the test)."""

    def __init__(self, db_path: Path) -> None:
        super().__init__()
        self.db_path = db_path
        self.conn = open_db(db_path)
        self.actions = None

    def on_mount(self) -> None:
        from edgetui.views.screens.runs import RunsScreen

        self.push_screen(RunsScreen(now=time.time))

    def on_unmount(self) -> None:
        self.conn.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_live_runs_screen_folds_tasks_under_their_run_id(tmp_path, size):
    from edgetui.views.screens.runs import RunsScreen, RunsUpdated

    now = time.time()
    runs = [
        LiveRun(
            run_key=f"local/{rid}/{task}",
            run_id=rid,
            task_id=task,
            model="claude-opus-4-8",
            status="running" if task == "task_a" and rid == SUITE_IDS[0] else "finished",
            started_at=now - 3600,
            elapsed_s=3600,
            budget_s=43200,
            best_score_0_100=score,
            best_display=score,
            score_task=True,
            agent_submissions=2,
            auto_submissions=1,
            last_event_at=now,
        )
        for rid in SUITE_IDS[:3]
        for task, score in (("task_a", 40.0), ("task_b", 60.0), ("task_c", None))
    ]
    app = _RunsApp(tmp_path / "live.duckdb")
    async with app.run_test(size=size) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen))
        screen = app.screen
        screen.post_message(RunsUpdated(runs, []))
        await wait_for(pilot, lambda: screen.query_one(RunsTable).row_count == 9)
        await pilot.press("g")
        await pilot.pause()
        t = screen.query_one(RunsTable)
        assert t.row_count == 3
        tasks = {c.plain for c in t.get_column("task")}
        assert tasks == {"3 tasks, 3 done", "3 tasks, 2 done"}, tasks
        assert {c.plain for c in t.get_column("best")} == {"50"}  # the mean of 40 and 60
        assert {c.plain for c in t.get_column("subs")} == {"6/3"}
        assert len({c.plain for c in t.get_column("run_id")}) == 3
        t.move_cursor(0)
        await pilot.press("enter")  # a run id: its tasks
        await pilot.pause()
        assert not screen.folded and t.row_count == 3
        assert {r.run_id for r in screen.shown} == {t.selected_run_key.split("/")[1]}
