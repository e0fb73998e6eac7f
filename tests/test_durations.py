"""Which duration is shown (issue 36, item 7): edgetui's (start to the run's end, with the harness's
drain and its container's stop and removal) and SForge's own ``runtime_seconds`` (the agent's
segments), side by side in the replay header, ``edgetui runs`` and the live run screen; read from
the genuine SForge 1.1.0 runs (sample_runs/genuine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgetui.cli.main import main
from edgetui.live.model import LiveRun
from edgetui.store import queries as store
from edgetui.store.database import open_db
from edgetui.views.screens.live_parts import live_status_text
from edgetui.views.widgets.header import header_text

GENUINE = Path(__file__).resolve().parents[1] / "sample_runs" / "genuine"
CLEAN, INSTALL_FAIL = "real-stats-20261201180500", "real-installfail-20261201181800"


@pytest.fixture(scope="module")
def gdb(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("durations") / "g.duckdb"
    assert main(["--db", str(db), "ingest", "-q", "--tasks-dir", str(GENUINE / "tasks"), str(GENUINE / "runs")]) == 0
    return db


def _final(run_id: str, task: str = "tiny_stats") -> dict:
    return json.loads((GENUINE / "runs" / run_id / task / "final_result.json").read_text())


@pytest.mark.parametrize("tokens", [True, False])  # the exact header and the first paint's
def test_the_replay_header_shows_the_runs_duration_and_sforges_runtime(gdb, tokens):
    conn = open_db(gdb, read_only=True)
    try:
        head = store.run_header(conn, f"local/{CLEAN}/tiny_stats", tokens=tokens)
    finally:
        conn.close()
    runtime = _final(CLEAN)["runtime_seconds"]
    assert head["duration_to"] == "end"
    assert head["duration_s"] == pytest.approx(head["ended_at"] - head["started_at"])
    assert head["sforge_runtime_s"] == pytest.approx(runtime)
    # the harness's end after the agent's (the container's stop and removal): seconds, not minutes
    assert 5 < head["duration_s"] - runtime < 60, (head["duration_s"], runtime)
    wide, narrow = header_text(head, 160).plain, header_text(head, 80).plain
    d, r = int(head["duration_s"]), int(runtime)
    assert f"ran 0:{d // 60:02d}:{d % 60:02d} start→end · SForge runtime 0:{r // 60:02d}:{r % 60:02d}" in wide
    assert f"ran {d // 60}:{d % 60:02d} · agent {r // 60}:{r % 60:02d}" in narrow


def test_a_run_without_an_end_says_to_its_last_event_and_has_no_sforge_runtime(gdb):
    conn = open_db(gdb, read_only=True)
    try:
        head = store.run_header(conn, f"local/{INSTALL_FAIL}/tiny_stats")
    finally:
        conn.close()
    assert head["duration_to"] == "last event" and head["sforge_runtime_s"] is None
    assert head["duration_s"] == pytest.approx(head["last_event_at"] - head["started_at"])
    assert "ran 0:00:00 to last event" in header_text(head, 160).plain
    assert "SForge runtime" not in header_text(head, 160).plain


def test_sforge_runtime_is_not_its_error_paths_zero():
    assert (
        store.with_durations({"started_at": 1.0, "ended_at": 2.0, "final": {"runtime_seconds": 0.0}})[
            "sforge_runtime_s"
        ]
        is None
    )
    assert store.with_durations({"final": '{"runtime_seconds": 12.5}'})["sforge_runtime_s"] == 12.5


def test_edgetui_runs_gives_sforges_runtime_beside_the_elapsed_time(gdb, capsys):
    capsys.readouterr()
    assert main(["--db", str(gdb), "runs", "--format", "json"]) == 0
    rows = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows[CLEAN]["sforge_runtime_h"] == pytest.approx(_final(CLEAN)["runtime_seconds"] / 3600, abs=0.005)
    assert rows[INSTALL_FAIL]["sforge_runtime_h"] is None


def test_the_live_status_line_says_which_duration_is_which():
    run = LiveRun(
        run_key="local/r/t",
        run_id="r",
        task_id="t",
        status="finished",
        elapsed_s=435.4,
        budget_s=420.0,
        sforge_runtime_s=419.9,
    )
    assert "start→end · SForge runtime 0:06" in live_status_text(run, 0.0, 160).plain
    running = run.model_copy(update={"status": "running", "sforge_runtime_s": None})
    assert "SForge runtime" not in live_status_text(running, 0.0, 160).plain
