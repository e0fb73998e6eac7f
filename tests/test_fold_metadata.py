"""Metadata rows (permission-mode, mode, progress, …) fold into "N folded" rows (issue 12, item 12).

Inputs: a session file shaped like anthropics/claude-code#69013 (tests/fold_fixture.py: 78 of 92
records are ``permission-mode`` / ``mode``) and the real ``B/raze-2.1.81-hook-progress.jsonl``
(hook progress records between turns), recorded into real DuckDB files and shown through Pilot.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import Footer

from edgetui.store import queries as store
from edgetui.views.app import EdgeTUIApp
from edgetui.store.database import close_when_idle, open_db
from edgetui.record.ingest import ingest_paths
from edgetui.views.screens.live_run import LiveRunScreen
from edgetui.views.screens.replay import ReplayScreen
from edgetui.views.widgets import EventDetail, EventList
from edgetui.views.widgets.detail import render_detail
from edgetui.replay.cursor import ReplayCursor
from edgetui.replay.fold import is_metadata, metadata_mask

from fold_fixture import META_BEFORE, metadata, write_fixture
from waits import pilot_wait_for as wait_for

APP_TCSS = Path(__file__).resolve().parents[1] / "edgetui" / "views" / "app.tcss"


def record(db: Path, path: Path) -> str:
    conn = open_db(db)
    try:
        rep = ingest_paths(conn, [path])
        assert rep.recorded_anything, rep.messages
        (rk,) = [r[0] for r in conn.execute("SELECT run_key FROM runs").fetchall()]
        return rk
    finally:
        conn.close()


@pytest.fixture
def run69013(tmp_path) -> tuple[Path, str, dict, Path]:
    src = tmp_path / "session-69013.jsonl"
    shape = write_fixture(src)
    db = tmp_path / "fold.duckdb"
    return db, record(db, src), shape, src


def cursor_of(db: Path, rk: str) -> ReplayCursor:
    conn = open_db(db, read_only=True)
    try:
        head = store.run_header(conn, rk)
        return ReplayCursor(
            store.run_events(conn, rk), store.submissions(conn, rk), start=head.get("started_at") or head.get("first_t")
        )
    finally:
        conn.close()


def record_types(db: Path, rk: str) -> dict[str, str]:
    """event_id -> the source record's ``type`` (from the stored data JSON, not the summary)."""
    conn = open_db(db, read_only=True)
    try:
        rows = conn.execute("SELECT event_id, kind, data->>'$.type' FROM events WHERE run_key = ?", [rk]).fetchall()
    finally:
        conn.close()
    return {e: (t if k == "system" else k) for e, k, t in rows}


# ---------------------------------------------------------------------------- what is metadata


def test_the_69013_records_are_the_metadata_and_nothing_else(run69013):
    db, rk, shape, _src = run69013
    cur = cursor_of(db, rk)
    types = record_types(db, rk)
    meta_types = {types[e] for e, m in zip(cur.events.event_id, cur.metadata) if m}
    kept_types = {types[e] for e, m in zip(cur.events.event_id, cur.metadata) if not m}
    assert cur.n_metadata == shape["metadata"] == 78
    assert meta_types == {"permission-mode", "mode"}
    assert not kept_types & {"permission-mode", "mode"}
    assert {"user_message", "agent_message", "tool_call", "tool_result"} <= kept_types


def test_real_hook_progress_records_are_folded_conversation_kept(corpus, tmp_path):
    """raze-2.1.81: hook progress records before the first prompt and between the turns."""
    db = tmp_path / "raze.duckdb"
    rk = record(db, corpus / "B" / "raze-2.1.81-hook-progress.jsonl")
    cur = cursor_of(db, rk)
    types = record_types(db, rk)
    folded = [types[e] for e, m in zip(cur.events.event_id, cur.metadata) if m]
    n_progress = sum(1 for t in types.values() if t in ("progress", "file-history-snapshot"))
    assert n_progress > 10 and len(folded) == n_progress
    assert set(folded) == {"progress", "file-history-snapshot"}
    cur.set_folding(True)
    # the conversation is all there, each run of metadata one row
    runs = sum(1 for i, m in enumerate(cur.metadata) if m and (i == 0 or not cur.metadata[i - 1]))
    assert cur.n_rows == cur.n - n_progress + runs < cur.n


def test_a_failed_hook_or_an_error_is_never_folded():
    assert is_metadata("system", "hook_response SessionStart:startup exit 0 success")
    assert not is_metadata("system", "hook_response Stop exit 2 error")
    assert not is_metadata("system", "permission-mode", level="warning")
    assert not is_metadata("system", "progress hook_progress", is_error=True)
    assert not is_metadata("agent_message", "permission-mode")  # what the agent says is conversation
    assert not is_metadata("system", "API retry 1/10: overloaded (status 529)")
    assert not is_metadata("system", "modest")  # a whole first word, not a prefix


def test_only_claude_bookkeeping_is_folded():
    """A Codex text block whose first line happens to start with "progress" is the agent's output."""
    rows = [
        {"event_id": f"e{i}", "kind": "system", "summary": "progress: 3/10 tests pass", "agent_format": fmt}
        for i, fmt in enumerate(("codex_text", "claude_session", None, "claude_stream"))
    ]
    assert metadata_mask(store.EventColumns.from_rows(rows)) == [False, True, False, True]


# ---------------------------------------------------------------------------- cursor rows


def test_steps_move_by_rows_and_time_moves_land_inside_folds(run69013):
    db, rk, shape, _src = run69013
    cur = cursor_of(db, rk)
    n = cur.n
    cur.set_folding(True)
    assert cur.n_rows == n - shape["metadata"] + shape["folds"]
    assert [cur.row_folded(r) for r in range(cur.n_rows) if cur.row_folded(r)] == [k for k in META_BEFORE if k]
    visited = [cur.index]
    while cur.step(1):
        visited.append(cur.index)
    assert len(visited) == cur.n_rows
    assert [cur.row_of(i) for i in visited] == list(range(cur.n_rows))
    while cur.step(-1):
        pass
    assert cur.index == 0
    # a time jump into a fold selects that event; its row is the fold; j leaves the fold
    inside = next(i for i in range(1, n) if cur.metadata[i] and cur.metadata[i - 1])
    cur.jump_to(cur.position(inside))
    assert cur.metadata[cur.index] and cur.row_folded(cur.row_of()) > 1
    row = cur.row_of()
    cur.step(1)
    assert cur.row_of() == row + 1 and not cur.metadata[cur.index]
    # unfolded again: one row per event, the selection kept
    sel = cur.index
    cur.set_folding(False)
    assert cur.n_rows == n and cur.index == sel and cur.row_of() == sel


# ---------------------------------------------------------------------------- the screens


def shown(lst: EventList) -> list[str]:
    return [lst.render_line(y).text for y in range(lst.scrollable_content_region.height)]


@pytest.mark.asyncio
async def test_replay_folds_by_default_and_z_shows_them(run69013):
    db, rk, shape, _src = run69013
    conn = open_db(db, read_only=True)
    before = conn.execute("SELECT count(*), sum(hash(event_id, kind, summary, data)) FROM events").fetchall()
    conn.close()
    n_events = before[0][0]
    app = EdgeTUIApp(db, rk)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen.cursor is not None)
        await pilot.pause()
        screen = app.screen
        lst = screen.query_one(EventList)
        conversation = n_events - shape["metadata"]
        assert lst.count == conversation + shape["folds"]  # 15 conversation rows + 7 "N folded" rows
        text = shown(lst)
        assert any("12 folded" in ln and "permission-mode ×8" in ln and "mode ×4" in ln for ln in text)
        assert not any(ln.split()[1:2] == ["system"] for ln in text if len(ln.split()) > 1)
        assert "78 folded" in str(lst.border_title)
        # j walks the rows: the conversation and one stop per fold
        kinds = []
        for _ in range(lst.count - 1):
            await pilot.press("j")
            kinds.append(
                "fold" if screen.cursor.metadata[screen.cursor.index] else screen.cursor.kind[screen.cursor.index]
            )
        assert screen.cursor.row_of() == lst.count - 1 and lst.selected == lst.count - 1
        assert kinds.count("fold") == shape["folds"]
        # on a fold row the detail says what the row holds
        await pilot.press("g", "j", "j", "d")
        assert screen.cursor.row_folded(screen.cursor.row_of()) == 12
        detail = screen.query_one(EventDetail)
        await wait_for(pilot, lambda: detail.detail is not None and detail.detail.get("folded") == (1, 12))
        con = Console(width=100, record=True, file=io.StringIO())
        con.print(render_detail(detail.detail))
        assert "metadata event 1 of the 12 folded in this row (z shows them)" in con.export_text()
        await pilot.press("d", "G")
        await pilot.pause()
        # z shows every row; the selected event stays selected
        sel = screen.cursor.index
        await pilot.press("z")
        await pilot.pause()
        assert lst.count == n_events and screen.cursor.index == sel and lst.selected == sel
        assert any("permission-mode" in ln and "folded" not in ln for ln in shown(lst))
        assert "z: fold 78" in str(lst.border_title)
        await pilot.press("z")
        await pilot.pause()
        assert lst.count == conversation + shape["folds"]
        # the key is in the footer, and the footer fits 80 columns (q back included)
        keys = [k for k in screen.query_one(Footer).query("FooterKey")]
        assert any(getattr(k, "key", None) == "z" for k in keys)
        assert max(k.region.right for k in keys) <= 80
        assert any(getattr(k, "key", None) == "q" and k.region.width > 0 for k in keys)
    conn = open_db(db, read_only=True)
    after = conn.execute("SELECT count(*), sum(hash(event_id, kind, summary, data)) FROM events").fetchall()
    conn.close()
    assert after == before  # folding is a view: the events are as recorded


class LiveApp(App):
    CSS_PATH = str(APP_TCSS)

    def __init__(self, db_path: Path, rk: str) -> None:
        super().__init__()
        self.conn = open_db(db_path)
        self.rk = rk

    def on_mount(self) -> None:
        self.push_screen(LiveRunScreen(self.rk, live=None))

    def on_unmount(self) -> None:
        assert close_when_idle(self.conn)


@pytest.mark.asyncio
async def test_live_run_screen_folds_new_metadata_and_stays_pinned(run69013):
    db, rk, shape, src = run69013
    app = LiveApp(db, rk)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, LiveRunScreen) and app.screen.cursor is not None)
        screen = app.screen
        lst = screen.query_one(EventList)
        rows0 = lst.count
        assert rows0 == screen.cursor.n - shape["metadata"] + shape["folds"]
        # the session goes on: 9 more mode records, then a message (appended, recorded like the tailer does)
        with src.open("a") as f:
            for k in range(9):
                f.write(json.dumps(metadata(k)) + "\n")
            f.write(
                json.dumps(
                    {
                        "type": "assistant",
                        "sessionId": "6f0e2d1c-69013-4a5b-9c8d-000000000001",
                        "uuid": "u-999",
                        "timestamp": "2026-05-20T10:01:30.000Z",
                        "message": {
                            "id": "msg_999",
                            "role": "assistant",
                            "content": [{"type": "text", "text": "all green now"}],
                        },
                    }
                )
                + "\n"
            )
        n0 = screen.cursor.n
        ingest_paths(app.conn, [src])
        screen.refresh_live()
        await wait_for(pilot, lambda: screen.cursor.n == n0 + 10)
        assert lst.count == rows0 + 2  # one "9 folded" row and the message
        # a tail read classifies only the new events: the same flags as a full classification
        assert screen.reloads["tail"] >= 1 and screen.cursor.metadata == metadata_mask(screen.cursor.events)
        # pinned, the selection follows to the newest row once the longer list is laid out (the screen's
        # _follow, after a refresh): waited for, as one pause is not always a refresh on a loaded machine
        assert screen.pinned
        await wait_for(pilot, lambda: lst.selected == lst.count - 1, what="the selection on the newest row")
        assert "all green now" in lst.render_line(lst.selected - int(lst.scroll_y)).text
        assert any("9 folded" in ln for ln in shown(lst))
        await pilot.press("k")  # onto the fold row: unpinned
        await pilot.pause()
        assert not screen.pinned and screen.cursor.row_folded(screen.cursor.row_of()) == 9
        await pilot.press("j")  # the last row again: pinned
        await pilot.pause()
        assert screen.pinned
        await pilot.press("z")
        await pilot.pause()
        assert lst.count == screen.cursor.n
