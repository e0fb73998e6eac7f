"""The replay screen over a paged timeline (edgetui/store/timeline_pages.py), through Textual's Pilot on a real
DuckDB file: the first page painted before the whole run's index, keys pressed meanwhile done in
order once it is there, pages read as moves reach them, the placeholder rows filled in."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from edgetui.store import queries as store
from edgetui.views.app import EdgeTUIApp
from edgetui.store.database import open_db
from edgetui.store.timeline_pages import PAGE, PagedTimeline
from edgetui.views.screens import replay as replay_screen
from edgetui.views.widgets import EventList
from edgetui.replay.cursor import ReplayCursor
from test_replay_app import wait_for
from test_replay_cursor import build_synthetic_run


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("paged") / "paged.duckdb"
    rk = build_synthetic_run(path, 6000, run_id="run-paged", untimed_tail=5)
    return path, rk


@pytest.fixture(scope="module")
def ref(db):
    path, rk = db
    conn = open_db(path, read_only=True)
    head = store.run_header(conn, rk)
    ev = store.run_events(conn, rk)
    cur = ReplayCursor(ev, store.submissions(conn, rk), start=head["started_at"])
    conn.close()
    return ev, cur


@pytest.mark.asyncio
async def test_first_page_paints_before_the_index_and_queued_keys_follow(db, ref, monkeypatch):
    path, rk = db
    ev, want = ref
    gate = threading.Event()
    real = replay_screen.load_index

    def held_index(conn, run_key):  # the real index, held back until the test has pressed its keys
        gate.wait(10)
        return real(conn, run_key)

    monkeypatch.setattr(replay_screen, "load_index", held_index)
    async with EdgeTUIApp(path, rk).run_test(size=(120, 40)) as pilot:
        screen = None

        def preview_shown() -> bool:
            nonlocal screen
            s = pilot.app.screen
            if isinstance(s, replay_screen.ReplayScreen) and s.preview is not None:
                screen = s
                return True
            return False

        await wait_for(pilot, preview_shown)
        el = screen.query_one(EventList)
        assert screen.cursor is None and el.count == PAGE  # the first page only, its rows drawn
        assert screen.preview.events.event_id == ev.event_id[:PAGE]
        assert "events 1/6,000" in str(el.border_title)
        await pilot.press("G")  # waits: the last event is not known yet
        await pilot.press("t", *"3h", "enter")  # typed into the prompt at once, done later
        await pilot.pause(0.1)
        assert screen.cursor is None and screen.preview.index == 0
        gate.set()
        await wait_for(pilot, lambda: screen.cursor is not None)
        await pilot.pause(0.2)
        cur = screen.cursor
        assert isinstance(cur.events, PagedTimeline)
        want.last()
        want.jump_to(3 * 3600.0)
        assert cur.index == want.index  # G, then the jump: in the order pressed
        await wait_for(pilot, lambda: cur.events.event_id[cur.index] is not None)  # its page read
        assert cur.events.event_id[cur.index] == ev.event_id[want.index]
        assert el.row_in_view(cur.index)
        await pilot.press("G")
        await wait_for(pilot, lambda: cur.events.event_id[cur.n - 1] is not None)
        await pilot.pause(0.1)
        lines = [el.render_line(y).text for y in range(el.scrollable_content_region.height)]
        assert not [ln for ln in lines if re.fullmatch(r"\s*-?[\d:]+ …\s*", ln)]  # no placeholder row left
        assert ev.summary[cur.n - 1][:20] in "\n".join(lines)
        detail = screen.query_one("#detail")
        await wait_for(
            pilot, lambda: detail.detail is not None and detail.detail["event"]["event_id"] == ev.event_id[cur.n - 1]
        )


@pytest.mark.asyncio
async def test_scrolling_the_list_asks_for_its_pages(db, ref):
    path, rk = db
    ev, _ = ref
    async with EdgeTUIApp(path, rk).run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "cursor", None) is not None)
        screen = pilot.app.screen
        # the exact header and the moments come after the cursor: a header of another height lays the
        # list out again, which scrolls it back to the selection; scroll once they are in
        await wait_for(
            pilot, lambda: screen.moments_part.read and (screen.header or {}).get("tokens_exact"), timeout=30
        )
        await pilot.pause(0.2)
        el = screen.query_one(EventList)
        tl = screen.cursor.events
        far = 4100
        assert not tl.has(far)
        el.scroll_to(y=far, animate=False, immediate=True)  # a scroll with no move of the cursor (mouse wheel)
        await wait_for(pilot, lambda: tl.has(far), timeout=30)
        await pilot.pause(0.1)
        assert ev.summary[far + 1][:20] in "\n".join(el.render_line(y).text for y in range(5))


@pytest.mark.asyncio
async def test_search_shows_a_first_page_of_matches_then_counts_them(db, ref, monkeypatch):
    """A search over a paged run selects the first match from its first page while every match is
    still being read ("counting…"); N past that page waits for every match, then wraps as usual."""
    path, rk = db
    ev, _ = ref
    gate = threading.Event()
    real = PagedTimeline.find_rest

    def held_rest(self, *a, **k):
        gate.wait(10)
        return real(self, *a, **k)

    monkeypatch.setattr(PagedTimeline, "find_rest", held_rest)
    every = [i for i, s in enumerate(ev.summary) if s and "band-pass" in s.lower()]
    assert len(every) > PAGE  # (the first page cannot hold them all)
    async with EdgeTUIApp(path, rk).run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "cursor", None) is not None)
        screen = pilot.app.screen
        cur = screen.cursor
        el = screen.query_one(EventList)
        await pilot.press("slash", *"band-pass", "enter")
        await wait_for(pilot, lambda: cur.query == "band-pass")
        assert cur.match_cover is not None and len(cur.matches) == PAGE
        assert cur.index == every[0] and list(cur.matches) == every[:PAGE]
        assert "counting" in str(el.border_subtitle)
        await pilot.press("N")  # the previous match wraps to the last one: not known yet
        await pilot.pause(0.1)
        assert cur.index == every[0]
        gate.set()
        await wait_for(pilot, lambda: cur.match_cover is None)
        await pilot.pause(0.05)
        assert list(cur.matches) == every and cur.index == every[-1]  # N done once every match was in
        assert f"{len(every):,}/{len(every):,}" in str(el.border_subtitle)
        await pilot.press("n")
        assert cur.index == every[0]


@pytest.mark.asyncio
async def test_the_run_end_is_read_with_the_cursor(db, ref):
    """The last pages are read right after the whole run's cursor, before any key: G draws the last
    event's row in the frame of the key, no "…" placeholder first."""
    path, rk = db
    ev, _ = ref
    async with EdgeTUIApp(path, rk).run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "cursor", None) is not None)
        tl = pilot.app.screen.cursor.events
        await wait_for(pilot, lambda: tl.has(tl.n - 1) and tl.has(tl.n - replay_screen.END_ROWS))
        assert tl.event_id[tl.n - 1] == ev.event_id[-1]
        assert tl.missing(PAGE, tl.n - replay_screen.END_ROWS - 1)  # (the middle is not read)


@pytest.mark.asyncio
async def test_the_heap_is_frozen_while_a_replay_is_shown_and_thawed_after(db):
    """The first paint's full collection of the import-time heap is avoided by freezing it when the
    replay mounts (gc.freeze); it is thawed when the screen goes, so nothing stays out of the collector."""
    import gc

    path, rk = db
    gc.unfreeze()  # (whatever an earlier test left frozen)
    app = EdgeTUIApp(path, rk)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "cursor", None) is not None)
        assert gc.get_freeze_count() > 10_000
        assert not replay_screen.freeze_startup_heap(object())  # frozen once, by the screen
    assert gc.get_freeze_count() == 0
