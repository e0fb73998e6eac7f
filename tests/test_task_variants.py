"""Task variants (issue 33 item 11): the live supervisor records the image digests a run's work and
judge containers ran (the real Docker engine's image ids); a leaderboard cell, a comparison and a fit
over runs of one task that ran different digests say so. Reference: docs/sforge-formats.md,
"Task variants"."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from docker_images import build_busybox_image, remove_image
from runs_factory import write_run, write_task

from test_live_docker import make_run, settings, start_work, wait_for

from edgetui.cli.main import main
from edgetui.store.database import open_db
from edgetui.live.supervisor import Supervisor
from edgetui.replay.analysis.task_variants import mixed_tasks, variant_of

HOUR = 3600.0


def test_a_variant_is_its_pair_of_digests_and_unknown_mixes_nothing():
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    assert variant_of(a, b) == "work aaaaaaaaaaaa judge bbbbbbbbbbbb"
    assert variant_of(None, None) is None
    assert mixed_tasks([("t", variant_of(a, b)), ("t", variant_of(a, None)), ("u", None)]) == []
    assert mixed_tasks([("t", variant_of(a, b)), ("t", variant_of(a, a)), ("u", variant_of(a, b))]) == ["t"]


@pytest.fixture
def mixed_db(tmp_path) -> tuple[Path, list[str]]:
    """Three finished runs of one task by one model, two of them on one judge image and the third
    on a repaired judge (their digests as the live supervisor records them), and a run of another
    task whose digests are unknown."""
    runs, tasks = tmp_path / "runs", tmp_path / "tasks"
    write_task(tasks, "tv_task")
    write_task(tasks, "other_task")
    start = time.time() - 20 * HOUR
    for i in range(3):
        write_run(runs, f"tv-{i}", "tv_task", model="m-1", start=start, subs=[(HOUR, 0.5, 40 + i)], duration_s=3 * HOUR)
    write_run(runs, "tv-o", "other_task", model="m-1", start=start, subs=[(HOUR, 0.5, 10)], duration_s=3 * HOUR)
    db = tmp_path / "v.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(tasks), str(runs)]) == 0
    conn = open_db(db)
    try:
        for run_id, judge in (("tv-0", "a"), ("tv-1", "a"), ("tv-2", "b")):
            conn.execute(
                "UPDATE runs SET work_image = ?, judge_image = ? WHERE run_id = ?",
                ["sha256:" + "c" * 64, "sha256:" + judge * 64, run_id],
            )
    finally:
        conn.close()
    return db, ["tv-0", "tv-1", "tv-2"]


def test_leaderboard_compare_and_fit_say_they_mix_task_variants(mixed_db, capsys):
    db, _ = mixed_db
    assert main(["--db", str(db), "leaderboard", "--hours", "2", "--format", "json"]) == 0
    cells = json.loads(capsys.readouterr().out)
    overall = next(c for c in cells if c["category"] == "overall" and c["hours"] == 2)
    assert overall["mixed_variants"] == "tv_task"
    assert main(["--db", str(db), "leaderboard", "--hours", "2"]) == 0
    out = capsys.readouterr().out
    assert " !" in out and "mixes task variants (different work/judge image digests) of tv_task" in out
    assert main(["--db", str(db), "compare", "tv-0", "tv-2", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixed_variants"] == ["tv_task"]
    assert main(["--db", str(db), "compare", "tv-0", "tv-1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixed_variants"] == []  # the same variant: nothing to say
    assert main(["--db", str(db), "fit", "--by", "task", "--format", "json"]) == 0
    fits = {r["group"]["task_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert fits["tv_task"]["mixed_variants"] == ["tv_task"] and fits["other_task"]["mixed_variants"] == []


def test_the_live_supervisor_records_the_images_a_run_ran(tmp_path, engine, image, token):
    """Two runs of one task whose work containers run two images (a task variant): each run's
    ``runs.work_image`` is its container's image id as the engine gives it, and a judge container
    joined to a run records ``runs.judge_image``."""
    repaired = build_busybox_image(engine, extra_files={"etc/variant": (b"repaired\n", 0o644)})
    root = tmp_path / "runs"
    root.mkdir()
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], settings=settings(), docker_client=engine)
    try:
        task = f"{token}_variant"
        td1, td2 = make_run(root, "r1", task), make_run(root, "r2", task)
        start_work(engine, image, task, "r1", td1, "sleep 600")
        start_work(engine, repaired, task, "r2", td2, "sleep 600")
        sid = "0a1b2c3d4e5f"
        (td1 / "auto_eval_ticks.log").write_text(
            "[" + time.strftime("%Y-%m-%dT%H:%M:%S") + f"] submitted 2048 bytes -> {sid} round=auto-1\n"
        )
        engine.containers.run(image, ["sleep", "600"], name=f"edgebench.judge.{task}.{sid}", detach=True)

        def recorded(_runs):
            rows = dict(
                (r[0], r[1:])
                for r in conn.execute(
                    "SELECT run_id, work_image, judge_image FROM runs WHERE task_id = ?", [task]
                ).fetchall()
            )
            return len(rows) == 2 and rows["r1"][0] and rows["r1"][1] and rows["r2"][0] and rows

        wait_for(sup, recorded, timeout=30, what="images recorded")
        rows = recorded(None)
        assert rows["r1"] == (engine.images.get(image).id, engine.images.get(image).id)
        assert rows["r2"][0] == engine.images.get(repaired).id != rows["r1"][0]
        assert rows["r2"][1] is None  # no judge container of r2 was seen
    finally:
        sup.close()
        conn.close()
        remove_image(engine, repaired)


@pytest.mark.asyncio
async def test_the_leaderboard_screen_marks_a_cell_that_mixes_variants(mixed_db):
    from textual.widgets import DataTable, Static
    from waits import pilot_wait_for

    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.leaderboard import LeaderboardScreen

    db, _ = mixed_db
    app = EdgeTUIApp(db)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.action_leaderboard()
        await pilot_wait_for(pilot, lambda: isinstance(app.screen, LeaderboardScreen), 20, "the leaderboard screen")
        screen = app.screen
        await pilot_wait_for(
            pilot, lambda: screen.query(DataTable) and screen.query_one(DataTable).row_count > 0, 20, "rows"
        )
        t = screen.query_one(DataTable)
        row = [str(c) for c in t.get_row_at(0)]
        assert row[0] == "m-1" and row[1] == "50.0! ²"  # @2h: both tasks at pass 50 %; tv_task's runs mix
        assert "! mixes task variants (different work/judge image digests) of tv_task" in (
            screen.query_one("#lb-title", Static).render().plain
        )
