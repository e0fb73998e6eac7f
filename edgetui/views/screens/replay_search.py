"""Search in the replay screen (:class:`ReplaySearchMixin`, mixed into
:class:`edgetui.views.screens.replay.ReplayScreen`): ``/`` runs in a worker, ``n`` / ``N`` move between
the matches. Over a paged run (:class:`edgetui.store.timeline_pages.PagedTimeline`) the first page of matches from
the selection is shown first (:meth:`~edgetui.store.timeline_pages.PagedTimeline.find_from`: a top-N on ``t``) and
every match follows once that page is drawn (:meth:`~edgetui.store.timeline_pages.PagedTimeline.find_rest`); a
move past that page waits for them. Split from ``replay.py`` at this seam."""

from __future__ import annotations

import threading
from typing import Any, Optional

from textual import work
from textual.message import Message

from edgetui.store import queries as store
from edgetui.store.database import pool_retry
from edgetui.store.timeline_pages import PagedTimeline
from edgetui.store.timeline_columns import search_light

from edgetui.views.widgets import EventList

__all__ = ["SearchDone", "ReplaySearchMixin"]


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


class ReplaySearchMixin:
    """The search of :class:`edgetui.views.screens.replay.ReplayScreen` (its cursor, ``_later``, ``_moved``,
    ``notify``; ``_search_serial`` and ``_match_pending`` set in its ``__init__``)."""

    def action_match(self, direction: int) -> None:
        if self._later(self.action_match, direction):
            return
        c = self.cursor
        if c is None:
            return
        if not c.query:
            self.notify("no search yet: press /", timeout=2)
            return
        if not len(c.matches):
            self.notify(f"no match for “{c.query}”", timeout=2)
            return
        if c.match_needs_more(direction):  # past the first page of matches: once every match is in
            self._match_pending.append(direction)
            return
        moved = (c.next_match if direction > 0 else c.prev_match)()
        if not moved:  # one match, already selected: it stays, and says so
            self.notify(f"the only match for “{c.query}” (1/1)", timeout=2)
        self._moved(moved)

    def _search(self, query: str) -> None:
        self._search_serial += 1
        self._match_pending = []
        self._search_worker(query, self._search_serial)

    @work(thread=True, group="replay-search", exit_on_error=False)
    def _search_worker(self, query: str, serial: int) -> None:
        """Summaries and tool names first (no JSON read); the tool output and other data only when
        they hold no match. Over a paged run, the first page of matches from the selection
        (:meth:`PagedTimeline.find_from`) is shown first and every match follows (the count, n / N
        beyond the page). A read past a bounded buffer pool lifts it and searches again
        (:func:`edgetui.store.database.pool_retry`)."""
        conn = self.app.conn  # type: ignore[attr-defined]
        pool_retry(conn, self._search_once, conn, query, serial)

    def _search_once(self, conn, query: str, serial: int) -> None:
        cur = self.cursor
        if isinstance(cur.events, PagedTimeline):
            tl, start = cur.events, cur.index
            for data in (False, True):
                page, cover = tl.find_from(conn, query, start, data=data)
                if serial != self._search_serial:
                    return
                if cover is None:
                    if len(page) or data:
                        self.post_message(SearchDone(query, page, serial=serial))
                        return
                    continue
                if page.array.size and int(page.array[-1]) >= start:  # a match from here on: shown now
                    painted = threading.Event()
                    self.post_message(SearchDone(query, page, serial=serial, cover=cover, start=start, painted=painted))
                    painted.wait(1.0)  # (the rest's scan does not share the CPU with that frame)
                    if serial != self._search_serial:
                        return
                idx = tl.find_rest(conn, query, page, cover, data=data)
                if len(idx) or data:
                    self.post_message(SearchDone(query, idx, serial=serial))
                    return
            return
        if hasattr(cur.events, "find"):
            idx = cur.events.find(query) or cur.events.indices_of(store.search_events(conn, self.run_key, query))
        else:
            ids = search_light(conn, self.run_key, query) or store.search_events(conn, self.run_key, query)
            idx = [i for i in (cur.events.index_of(e) for e in ids) if i is not None]
        self.post_message(SearchDone(query, idx, serial=serial))

    def on_search_done(self, msg: SearchDone) -> None:
        c = self.cursor
        if msg.serial != self._search_serial or c is None:
            if msg.painted is not None:
                msg.painted.set()
            return
        if msg.cover is not None and c.index != msg.start:  # moved meanwhile: every match is coming
            msg.painted.set()
            return
        was = c.index
        follow = msg.cover is None and c.match_cover is not None and c.query == msg.query  # (after its first page)
        n = c.search(
            msg.query, msg.indices, presorted=isinstance(c.events, PagedTimeline), cover=msg.cover, select=not follow
        )
        self.query_one(EventList).set_query(msg.query)
        if msg.cover is not None:
            self.call_after_refresh(msg.painted.set)
        elif n:
            self.notify(f"{n:,} match{'es' if n != 1 else ''} for “{msg.query}” (n/N to cycle)", timeout=2)
        else:
            self.notify(f"no match for “{msg.query}”", severity="warning", timeout=3)
        self._moved(c.index != was or msg.cover is not None or not n)
        if msg.cover is None:
            pending, self._match_pending = self._match_pending, []
            for direction in pending:
                self.action_match(direction)
