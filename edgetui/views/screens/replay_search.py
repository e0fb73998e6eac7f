"""Search in the replay screen (:class:`ReplaySearch`, a part of
:class:`edgetui.views.screens.replay.ReplayScreen`): ``/`` runs in a worker, ``n`` / ``N`` move between
the matches. Over a paged run (:class:`edgetui.store.timeline_pages.PagedTimeline`) the first page of matches from
the selection is shown first (:meth:`~edgetui.store.timeline_pages.PagedTimeline.find_from`: a top-N on ``t``) and
every match follows once that page is drawn (:meth:`~edgetui.store.timeline_pages.PagedTimeline.find_rest`); a
move past that page waits for them. Split from ``replay.py`` at this seam."""

from __future__ import annotations

import threading
from typing import Any, Optional

import duckdb
from textual.message import Message

from edgetui.store import queries as store
from edgetui.store.database import pool_retry
from edgetui.store.timeline_pages import PagedTimeline
from edgetui.store.timeline_columns import search_light

from edgetui.views.screens.replay_host import ReplayHost, app_connection

__all__ = ["SearchDone", "ReplaySearch"]


class SearchDone(Message):
    """Matches of a search: every one (``cover`` ``None``), or a first page of them from the event
    the search started at (``start``), complete over events ``cover = (lo, hi)``, with every match
    to follow (``painted`` is set once the page is drawn)."""

    def __init__(
        self,
        query: str,
        indices: Any,
        *,
        serial: int = 0,
        cover: Optional[tuple[int, int]] = None,
        start: int = 0,
        painted: Optional[threading.Event] = None,
    ) -> None:
        self.query, self.indices = query, indices
        self.serial, self.cover, self.start, self.painted = serial, cover, start, painted
        super().__init__()


class ReplaySearch:
    """The search of a replay screen (its part: :mod:`edgetui.views.screens.replay_host`): ``/``'s
    query read in the screen's worker, ``n`` / ``N``. Its state: the search being done
    (:attr:`serial`) and the ``n`` / ``N`` pressed before every match was in (:attr:`match_pending`);
    the matches themselves are the cursor's."""

    def __init__(self, host: ReplayHost) -> None:
        self.host = host
        #: the search being done (older ones' results are dropped)
        self.serial = 0
        #: n / N pressed past a first page of matches (done with every match)
        self.match_pending: list[int] = []

    def match(self, direction: int) -> None:
        """``n`` / ``N``: the next / previous match."""
        host = self.host
        if host.later(self.match, direction):
            return
        c = host.cursor
        if c is None:
            return
        if not c.query:
            host.notify("no search yet: press /", timeout=2)
            return
        if not len(c.matches):
            host.notify(f"no match for “{c.query}”", timeout=2)
            return
        if c.match_needs_more(direction):  # past the first page of matches: once every match is in
            self.match_pending.append(direction)
            return
        moved = (c.next_match if direction > 0 else c.prev_match)()
        if not moved:  # one match, already selected: it stays, and says so
            host.notify(f"the only match for “{c.query}” (1/1)", timeout=2)
        host.moved(moved)

    def clear(self) -> None:
        """An emptied search: no matches (a search still being done is dropped)."""
        self.serial += 1
        self.match_pending = []
        c = self.host.cursor
        if c is not None:
            c.search("")
        self.host.show_query("")

    def search(self, query: str) -> None:
        """Look for ``query`` (in a worker of the screen; :class:`SearchDone` brings the matches)."""
        self.serial += 1
        self.match_pending = []
        serial = self.serial
        self.host.run_worker(
            lambda: self._search_worker(query, serial), thread=True, group="replay-search", exit_on_error=False
        )

    def _search_worker(self, query: str, serial: int) -> None:
        """Summaries and tool names first (no JSON read); the tool output and other data only when
        they hold no match. Over a paged run, the first page of matches from the selection
        (:meth:`PagedTimeline.find_from`) is shown first and every match follows (the count, n / N
        beyond the page). A read past a bounded buffer pool lifts it and searches again
        (:func:`edgetui.store.database.pool_retry`)."""
        conn = app_connection(self.host.app)
        pool_retry(conn, self._search_once, conn, query, serial)

    def _search_once(self, conn: duckdb.DuckDBPyConnection, query: str, serial: int) -> None:
        cur = self.host.cursor
        if cur is None:
            return
        post = self.host.post_message
        if isinstance(cur.events, PagedTimeline):
            tl, start = cur.events, cur.index
            for data in (False, True):
                page, cover = tl.find_from(conn, query, start, data=data)
                if serial != self.serial:
                    return
                if cover is None:
                    if len(page) or data:
                        post(SearchDone(query, page, serial=serial))
                        return
                    continue
                if page.array.size and int(page.array[-1]) >= start:  # a match from here on: shown now
                    painted = threading.Event()
                    post(SearchDone(query, page, serial=serial, cover=cover, start=start, painted=painted))
                    painted.wait(1.0)  # (the rest's scan does not share the CPU with that frame)
                    if serial != self.serial:
                        return
                idx = tl.find_rest(conn, query, page, cover, data=data)
                if len(idx) or data:
                    post(SearchDone(query, idx, serial=serial))
                    return
            return
        events: Any = cur.events  # (an in-memory timeline: Timeline or a test's own)
        run_key = self.host.run_key
        if hasattr(events, "find"):
            found = events.find(query) or events.indices_of(store.search_events(conn, run_key, query))
        else:
            ids = search_light(conn, run_key, query) or store.search_events(conn, run_key, query)
            found = [i for i in (events.index_of(e) for e in ids) if i is not None]
        post(SearchDone(query, found, serial=serial))

    def done(self, msg: SearchDone) -> None:
        """(The screen's handler of :class:`SearchDone`.) Show the matches."""
        host = self.host
        c = host.cursor
        if msg.serial != self.serial or c is None:
            if msg.painted is not None:
                msg.painted.set()
            return
        if msg.cover is not None and c.index != msg.start:  # moved meanwhile: every match is coming
            if msg.painted is not None:
                msg.painted.set()
            return
        was = c.index
        follow = msg.cover is None and c.match_cover is not None and c.query == msg.query  # (after its first page)
        n = c.search(
            msg.query, msg.indices, presorted=isinstance(c.events, PagedTimeline), cover=msg.cover, select=not follow
        )
        host.show_query(msg.query)
        if msg.cover is not None:
            if msg.painted is not None:
                host.call_after_refresh(msg.painted.set)
        elif n:
            host.notify(f"{n:,} match{'es' if n != 1 else ''} for “{msg.query}” (n/N to cycle)", timeout=2)
        else:
            host.notify(f"no match for “{msg.query}”", severity="warning", timeout=3)
        host.moved(c.index != was or msg.cover is not None or not n)
        if msg.cover is None:
            pending, self.match_pending = self.match_pending, []
            for direction in pending:
                self.match(direction)
