"""The moments part of the replay screen (:class:`ReplayMoments`): the run's reframing moments and
their keys (``(`` ``)`` ``M`` ``w``), the why of a new best and the annotations (``L``). Its reads
and the annotation's write run in the screen's thread workers and come back as messages
(:mod:`edgetui.views.screens.moments`) that the screen hands to it; the views it opens (the list,
the why) are in :mod:`edgetui.views.screens.moments`."""

from __future__ import annotations

import threading
from typing import Iterable, Optional

from edgetui.analysis.why_new_best import why_diff, why_of
from edgetui.error_log import note_swallowed
from edgetui.record.annotations import list_annotations
from edgetui.store.database import lift_pool_on

from edgetui.views.screens.moments import (
    Annotated,
    AnnotationsRead,
    MomentsFound,
    MomentsScreen,
    WhyLoaded,
    WhyScreen,
    delete_annotation_question,
)
from edgetui.views.screens.replay_host import DatabaseApp, ReplayHost, app_connection, apply_write

__all__ = ["ReplayMoments"]


class ReplayMoments:
    """The replay screen's moments, their keys and views and the ``L`` write (a part of the screen:
    :mod:`edgetui.views.screens.replay_host`)."""

    def __init__(self, host: ReplayHost) -> None:
        self.host = host
        #: the run's reframing moments (:func:`edgetui.record.moments_table.replay_moments`), round order
        self.moments: list[dict] = []
        #: False while they are still being read or detected after the first paint
        self.read = False
        #: why the moments were not detected (none stored, and the run too big to detect them in the app)
        self.note: Optional[str] = None
        #: M pressed before the moments were found (opened when they are)
        self.wanted = False
        #: round -> its why (read ahead, or read by w)
        self.why_cache: dict[str, dict] = {}
        #: the round whose why was asked for last
        self.why_wanted: Optional[str] = None
        #: event id -> its annotations, oldest first (AnnotationsRead; replaced, never mutated)
        self.annotations: dict[str, list[dict]] = {}
        #: the annotation L's open prompt edits
        self.editing: Optional[str] = None

    def rounds(self) -> list[str]:
        """The moments' rounds (the chart's ✦), in order."""
        return [m["round"] for m in self.moments]

    def set_moments(self, moments: list[dict]) -> None:
        """Take ``moments`` (the live run's, found again): marked on the cursor and the chart."""
        self.moments = moments
        cur = self.host.cursor
        if cur is not None:
            cur.set_moments(self.rounds())
        self.host.draw_chart()

    def loaded(self, moments: Optional[list[dict]]) -> None:
        """The whole run's cursor is the screen's (with the moments when they came with it): mark them."""
        if moments is not None:
            self.moments, self.read = moments, True
        cur = self.host.cursor
        if cur is not None:
            cur.set_moments(self.rounds())
        if moments:
            self.prefetch_why([m["round"] for m in moments])

    def found(self, msg: MomentsFound) -> None:
        """(The screen's handler of :class:`MomentsFound`.)"""
        self.moments = msg.moments
        self.read = True
        self.note = msg.not_detected
        if self.host.cursor is not None:
            self.host.cursor.set_moments(self.rounds())
            self.host.draw_chart()
        if self.moments:
            self.prefetch_why(self.rounds())
        if self.wanted:  # M pressed while they were being found: open the list now
            self.wanted = False
            top: object = self.host.app.screen  # (a Screen; the host a protocol of one)
            if top is self.host:
                self.moments_list()

    def moment(self, direction: int) -> None:
        """``)`` / ``(``: the next / previous reframing moment."""
        host = self.host
        if host.later(self.moment, direction):
            return
        c = host.cursor
        if c is None:
            return
        if not c.moment_idx:
            host.notify(self.note or "no reframing moment found in this run", timeout=4)
            return
        fwd = direction > 0
        host.do(
            c.next_moment if fwd else c.prev_moment,
            "no later reframing moment" if fwd else "no earlier reframing moment",
        )

    def moments_list(self) -> None:
        """``M``: the list of the run's moments; enter goes to one."""
        host = self.host
        if host.later(self.moments_list):
            return
        c = host.cursor
        if c is None:
            return
        if not self.moments:
            if self.read:
                host.notify(self.note or "no reframing moment found in this run", timeout=4)
            else:
                self.wanted = True
                host.notify("finding this run's reframing moments… the list opens when they are found", timeout=3)
            return
        # the moment at or before the selected event is highlighted
        pos = c.position()
        current = max((i for i, m in enumerate(self.moments) if (m.get("elapsed_s") or 0.0) <= pos), default=0)

        def go(i: Optional[int]) -> None:
            cur = host.cursor
            if i is None or cur is None:
                return
            rnd = self.moments[i]["round"]
            idx = next((k for k in cur.moment_idx if cur.round[k] == rnd), None)
            if idx is not None:
                host.do(lambda: cur.select(idx))

        host.app.push_screen(MomentsScreen(self.moments, current), go)

    def why_round(self) -> Optional[str]:
        """The round ``w`` explains: the selected event's, when it is a new best's judge result;
        else the last reframing moment at or before the cursor."""
        c = self.host.cursor
        if c is None or c.n == 0:
            return None
        if c.index in c.new_best_idx:
            return c.round[c.index]
        before = [k for k in c.moment_idx if k <= c.index]
        return c.round[before[-1]] if before else None

    def why(self) -> None:
        """``w``: the why of :meth:`why_round`."""
        if self.host.later(self.why):
            return
        rnd = self.why_round()
        if rnd is None:
            self.host.notify("no reframing moment at or before the cursor (select a new best: { })", timeout=3)
            return
        self.show_why_of(rnd)

    def show_why_of(self, rnd: str) -> None:
        """Show the why of ``rnd``: in the open why view (a milestone step), else in a new one; the
        replay's cursor goes to that round's judge result, so the chart shows where it is."""
        self.why_wanted = rnd
        c = self.host.cursor
        idx = next((k for k in c.new_best_idx if c.round[k] == rnd), None) if c is not None else None
        if c is not None and idx is not None and idx != c.index:
            self.host.do(lambda: c.select(idx))
        if rnd in self.why_cache:
            self._show_why(self.why_cache[rnd])
            return
        self.load_why(rnd)  # (no "reading…" note: its toast would cost more than the read of the head)

    def _show_why(self, why: dict) -> None:
        top = self.host.app.screen
        if isinstance(top, WhyScreen):
            top.show(why)
            return
        c = self.host.cursor
        rounds = [r for k in c.new_best_idx if (r := c.round[k]) is not None] if c is not None else []
        self.host.app.push_screen(WhyScreen(why, rounds, self.show_why_of))

    def load_why(self, rnd: str) -> None:
        """Read the why of ``rnd`` in a worker of the screen (:class:`WhyLoaded`, twice)."""
        self.host.run_worker(
            lambda: self._load_why(rnd), thread=True, exclusive=True, group="replay-why", exit_on_error=False
        )

    def _load_why(self, rnd: str) -> None:
        """The why of ``rnd`` in two messages: the actions and notes (the view opens with them), then
        the same with the archives' diff."""
        host = self.host
        try:
            conn = app_connection(host.app)
            head = why_of(conn, host.run_key, rnd, with_diff=False)
            painted = threading.Event()
            host.post_message(WhyLoaded(rnd, dict(head, diff_pending=True), painted=painted))
            # the archives wait for the head's frame (at most 0.5 s): read at once, they would take the
            # interpreter from the paint half of the time
            painted.wait(0.5)
            host.post_message(WhyLoaded(rnd, why_diff(conn, head)))
        except Exception as e:  # noqa: BLE001  (said, never a crash)
            app = host.app
            if lift_pool_on(app.conn if isinstance(app, DatabaseApp) else None, e):  # (a bounded buffer pool, lifted)
                app.call_from_thread(self.load_why, rnd)
                return
            host.post_message(WhyLoaded(rnd, None, f"{type(e).__name__}: {e}"))

    def prefetch_why(self, rounds: list[str]) -> None:
        """The why of each moment, read ahead after the run loads (a worker): ``w`` then paints from
        the cache."""
        self.host.run_worker(
            lambda: self._prefetch_why(rounds),
            thread=True,
            exclusive=True,
            group="replay-why-prefetch",
            exit_on_error=False,
        )

    def _prefetch_why(self, rounds: Iterable[str]) -> None:
        host = self.host
        for rnd in rounds:
            try:
                host.post_message(WhyLoaded(rnd, why_of(app_connection(host.app), host.run_key, rnd), prefetch=True))
            except Exception:  # noqa: BLE001  (w reads it again and says what failed)
                note_swallowed("w reads it again and says what failed")
                continue

    def why_loaded(self, msg: WhyLoaded) -> None:
        """(The screen's handler of :class:`WhyLoaded`.)"""
        host = self.host
        if msg.prefetch:
            if msg.why is not None:
                self.why_cache.setdefault(msg.round, msg.why)
            return
        if msg.why is None:
            host.notify(f"why {msg.round}: {msg.error}", severity="error", timeout=6)
            return
        if not msg.why.get("diff_pending"):
            self.why_cache[msg.round] = msg.why
            if self.why_wanted is not None and msg.round != self.why_wanted:
                return  # a milestone stepped past before its read ended
            top = host.app.screen  # the diff of the round shown (not of one stepped away from, nor of a closed view)
            if isinstance(top, WhyScreen) and top.why["round"] == msg.round:
                top.show(msg.why)
            return
        if self.why_wanted is not None and msg.round != self.why_wanted:
            if msg.painted is not None:
                msg.painted.set()
            return
        self._show_why(msg.why)
        if msg.painted is not None:
            host.app.screen.call_after_refresh(msg.painted.set)

    # -- annotations: L adds one to the selected event; on an annotated event it edits the newest
    # one there (the prompt holds its "label: note"), and an emptied prompt deletes it

    def label_prompt(self, event_id: Optional[str]) -> tuple[str, Optional[str]]:
        """What ``L``'s prompt starts with on ``event_id``: its newest annotation's ``label: note``
        and that annotation's id, or ``("", None)``."""
        anns = self.annotations.get(event_id) or [] if event_id is not None else []
        if not anns:
            self.editing = None
            return "", None
        a = anns[-1]
        self.editing = a["annotation_id"]
        return (a.get("label") or "") + (f": {a['text']}" if a.get("text") else ""), a["annotation_id"]

    def label_submitted(self, event_id: str, text: str) -> None:
        """``L``'s prompt was submitted with ``text`` (``label[: note]``)."""
        label, _, note = text.partition(":")
        editing, self.editing = self.editing, None
        if editing is None:
            if text:
                self._annotate(
                    {"op": "annotate", "event_id": event_id, "label": label.strip() or None, "text": note.strip()},
                    label.strip() or note.strip(),
                )
        elif not text:  # emptied: deleted once you say so (an annotation cannot be brought back)
            self.host.app.push_screen(
                delete_annotation_question(self.annotations.get(event_id) or []),
                lambda yes: (
                    self._annotate({"op": "annotation_delete", "annotation_id": editing}, "deleted")
                    if yes
                    else self.host.notify("annotation kept", timeout=2)
                ),
            )
        else:
            self._annotate(
                {
                    "op": "annotation_edit",
                    "annotation_id": editing,
                    "label": label.strip() or None,
                    "text": note.strip(),
                },
                "edited",
            )

    def _annotate(self, req: dict, where: str) -> None:
        """A typed request on the app's connection (the same the holder carries out for others), in
        a worker, then the run's annotations read again."""

        def write() -> None:
            reply = apply_write(self.host.app, dict(req, run_key=self.host.run_key))
            self.host.post_message(Annotated(where, reply))
            self.read_annotations_now()

        self.host.run_worker(write, thread=True, exclusive=True, group="replay-annotate", exit_on_error=False)

    def read_annotations_now(self) -> None:
        """(In a worker.) The run's annotations, by event, posted to the screen."""
        try:
            by_event: dict[str, list[dict]] = {}
            for a in list_annotations(app_connection(self.host.app), self.host.run_key):
                by_event.setdefault(a["event_id"], []).append(a)
            self.host.post_message(AnnotationsRead(by_event))
        except Exception:  # noqa: BLE001  (a database without the table: L adds, never edits)
            note_swallowed("a database without the table: L adds, never edits")

    def annotations_read(self, msg: AnnotationsRead) -> None:
        """(The screen's handler of :class:`AnnotationsRead`.)"""
        self.annotations = msg.by_event
        self.host.annotations_changed()

    def annotated(self, msg: Annotated) -> None:
        """(The screen's handler of :class:`Annotated`.)"""
        if "error" in msg.reply:
            self.host.notify(f"not annotated: {msg.reply['error']}", severity="error", timeout=5)
        elif msg.reply["ok"] is False:
            self.host.notify("that annotation is gone (deleted elsewhere)", severity="warning", timeout=4)
        else:
            ok = msg.reply["ok"]
            if isinstance(ok, dict):  # a new annotation: its id, or the same one already there
                said = f"already there: {msg.where} ({ok['annotation_id']})" if ok.get("already") else None
                self.host.notify(said or f"annotated: {msg.where} ({ok['annotation_id']})", timeout=3)
            else:
                self.host.notify(f"annotated: {msg.where}" + (f" ({ok})" if isinstance(ok, str) else ""), timeout=3)
