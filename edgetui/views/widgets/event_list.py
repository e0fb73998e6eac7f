"""Virtualised event list (Line API): one row per event, any number of events.

Only the visible rows are rendered (``render_line``), each from the parallel
columns of the timeline cursor, so 50,000 events cost no more than 50. Columns:
a mark gutter (``★`` new best, ``◆`` graded round, ``✗`` error), elapsed
``h:mm:ss``, kind, one-line summary; subagent events (``parent_tool_use_id``)
are indented under the call that launched them. While the cursor folds
metadata (:meth:`edgetui.replay.cursor.ReplayCursor.set_folding`), each run of metadata
events is one dim row ``┄ N folded: permission-mode ×40, progress ×2`` (the list
draws the cursor's rows, not its events). The widget owns no state beyond the
selected row: the screen moves the cursor and calls :meth:`select` with the
selected *event*. A row whose event is not read yet (a paged timeline,
:mod:`edgetui.store.timeline_pages`: ``event_id`` is ``None``) is drawn as a dim ``…`` and the
list posts :class:`EventList.NeedRows` for it; the screen reads the page and
refreshes the list.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from edgetui.replay.fold import fold_head

from edgetui.views.widgets.fmt import fmt_elapsed, kind_label, kind_style
from edgetui.control_chars import visible

__all__ = ["EventList"]

KIND_W = 12
TIME_W = 8
_ERROR_KINDS = {"infra_error", "parse_error", "agent_error", "auto_eval_error", "alarm"}


def event_mark(kind: str, is_error: bool, level: Optional[str], new_best: bool) -> tuple[str, str]:
    """Gutter mark and its style: ``★`` new best, ``◆`` graded round (``✗`` when its grading failed,
    a grey ``╵`` when its report says ``valid: false``: an invalid round, level WARNING), ``✗`` errors
    and alarms (not an ``info`` record of an error kind, e.g. an alarm's acknowledgement)."""
    if new_best:
        return "★", "bold bright_yellow"
    if kind in _GRADED:
        if is_error:
            return "✗", "bold red"
        return ("╵", "bright_black") if level == "WARNING" else ("◆", "green")
    if is_error or (kind in _ERROR_KINDS and level != "info"):
        return "✗", "bold red"
    return " ", ""


_GRADED = {"judge_result", "game_result"}
_QUIET = ("tool_result", "log", "system")


def _elapsed_ends(elapsed) -> list[float]:
    """The first and last known elapsed times of a timeline (seconds; timeline order is time order,
    so these are its smallest and largest): what the elapsed column must fit."""
    if not elapsed:
        return []
    first = next((x for x in elapsed if x is not None), None)
    last = next((x for x in reversed(elapsed) if x is not None), None)
    return [x for x in (first, last) if x is not None]


class EventList(ScrollView, can_focus=True, inherit_bindings=False):
    """Rows of a :class:`edgetui.replay.cursor.ReplayCursor` timeline; keys belong to the screen."""

    COMPONENT_CLASSES = {"event-list--cursor", "event-list--match"}

    DEFAULT_CSS = """
    EventList { background: $surface; scrollbar-size-vertical: 1; }
    EventList > .event-list--cursor { background: $primary 45%; text-style: bold; }
    EventList:focus > .event-list--cursor { background: $primary 80%; }
    EventList > .event-list--match { background: $warning 35%; }
    """

    class Clicked(Message):
        """A row was clicked: ``index`` is its event (a fold's first event)."""

        def __init__(self, index: int) -> None:
            self.index = index
            super().__init__()

    class NeedRows(Message):
        """Rows drawn before their events were read: events ``lo``..``hi`` (inclusive) are wanted."""

        def __init__(self, lo: int, hi: int) -> None:
            self.lo, self.hi = lo, hi
            super().__init__()

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.timeline: Any = None
        self.selected: int = 0
        self.query_text: str = ""
        self._new_best: set[int] = set()
        self._cache: LRUCache[tuple, Strip] = LRUCache(512)
        self._folding = False  # the timeline's rows fold metadata
        self._time_w = TIME_W  # the elapsed column: wider for runs past 999 h or far before their start

    # ------------------------------------------------------------------ API

    @property
    def count(self) -> int:
        """Rows shown: the timeline's events, or its rows while it folds metadata."""
        tl = self.timeline
        if tl is None:
            return 0
        return tl.n_rows if hasattr(tl, "n_rows") else tl.n

    def _row_of(self, index: int) -> int:
        tl = self.timeline
        return tl.row_of(index) if hasattr(tl, "row_of") else index

    def _event_of(self, row: int) -> int:
        tl = self.timeline
        return tl.row_event(row) if hasattr(tl, "row_event") else row

    def _folded(self, row: int) -> int:
        tl = self.timeline
        return tl.row_folded(row) if hasattr(tl, "row_folded") else 0

    def set_timeline(self, timeline: Any, selected: int = 0) -> None:
        """Show the events of a :class:`~edgetui.replay.cursor.ReplayCursor` (its columns, elapsed, depth)."""
        self.timeline = timeline
        self._new_best = set(getattr(timeline, "new_best_idx", ()))
        time_w = max([TIME_W] + [len(fmt_elapsed(x)) for x in _elapsed_ends(getattr(timeline, "elapsed", None))])
        if time_w != self._time_w:
            self._time_w = time_w
            self._cache.clear()
        vs = Size(0, self.count)  # (rows are cut to the width: never a horizontal scrollbar)
        if (
            vs != self.virtual_size
            and self.show_vertical_scrollbar
            and vs.width == self.virtual_size.width
            and vs.height > self.scrollable_content_region.height
        ):
            # more (or fewer) rows, the vertical scrollbar shown before and after: only the scroll
            # range and the scrollbar change, as Textual's own Widget._size_updated(layout=False)
            # does it; assigning virtual_size (a layout=True reactive) would lay out the whole
            # screen again for every live reload (~10 ms a frame, and a second frame for the
            # scrollbar), while the list keeps its size
            self.set_reactive(EventList.virtual_size, vs)
            self._scroll_update(vs)
        else:
            self.virtual_size = vs
        self.selected = -1
        folding = bool(getattr(timeline, "folding", False))
        if folding != self._folding:  # the same events, other rows
            self._folding = folding
            self._cache.clear()
        self.select(selected, center=True)
        self.refresh()

    def set_query(self, query: str) -> None:
        """Highlight ``query`` (case-insensitive) in the summaries."""
        if query != self.query_text:
            self.query_text = query
            self._cache.clear()
            self.refresh()

    def on_resize(self, event) -> None:
        """Keep the selected row in view when the list gets shorter (detail pane shown, small terminal)."""
        if self.count:
            self.call_after_refresh(self.select_row, self.selected)

    def select(self, index: int, *, center: bool = False) -> None:
        """Select the row of event ``index`` (a folded event: its fold's row) and scroll it into view
        (centred if ``center`` or if it was far away)."""
        if self.timeline is None:
            self.selected = 0
            return
        self.select_row(self._row_of(index), center=center)

    def row_in_view(self, index: int) -> bool:
        """Is the row of event ``index`` among the visible rows?"""
        top, height = int(self.scroll_y), self.scrollable_content_region.height
        return top <= self._row_of(index) < top + height

    def select_row(self, index: int, *, center: bool = False) -> None:
        """Select row ``index`` and scroll it into view (centred if ``center`` or if it was far away)."""
        n = self.count
        if n == 0:
            self.selected = 0
            return
        index = max(0, min(n - 1, index))
        old = self.selected
        self.selected = index
        height = max(1, self.scrollable_content_region.height or self.size.height or 1)
        top = int(self.scroll_y)
        if center or not (top - 1 <= index <= top + height):
            target = index - height // 3
        elif index < top:
            target = index
        elif index >= top + height:
            target = index - height + 1
        else:
            target = top
        target = max(0, min(target, max(0, n - height)))
        if target != top:
            self.scroll_to(y=target, animate=False, immediate=True)
            self.refresh()
        elif old != index:
            if 0 <= old < n:
                self.refresh_line(old)
            self.refresh_line(index)

    def on_click(self, event: Any) -> None:
        off = event.get_content_offset(self)
        if off is None:  # border or scrollbar
            return
        y = off.y + int(self.scroll_y)
        if 0 <= y < self.count:
            self.post_message(self.Clicked(self._event_of(y)))

    # ------------------------------------------------------------------ render

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width or self.size.width
        index = int(self.scroll_y) + y
        if self.timeline is None or index >= self.count:
            return Strip.blank(width, self.rich_style)
        sel = index == self.selected
        tl = self.timeline
        folded = self._folded(index)
        index = self._event_of(index)
        eid = tl.events.event_id[index]
        if eid is None:  # not read yet (a paged timeline): a placeholder, and the rows asked for
            self.post_message(self.NeedRows(index, index + max(0, folded - 1)))
            dim = self.rich_style + Style(dim=True)
            return Strip([Segment(" " + fmt_elapsed(tl.elapsed[index]).rjust(self._time_w) + " …", dim)]).crop_extend(
                0, width, self.rich_style
            )
        # keyed by the event (not its row number): a live reload that appends events or re-reads the
        # tail keeps the rows already drawn; everything a row shows besides its event is in the key
        key = (
            eid,
            tl.elapsed[index],
            tl.depth[index] if tl.depth else 0,
            index in self._new_best,
            width,
            sel,
            self.has_focus if sel else False,
            folded,
        )
        strip = self._cache.get(key)
        if strip is None:
            strip = self._fold_row(index, folded, width, sel) if folded else self._row(index, width, sel)
            self._cache[key] = strip
        return strip

    def _fold_row(self, i: int, folded: int, width: int, selected: bool) -> Strip:
        """The row of ``folded`` metadata events from event ``i`` on: elapsed of the first, the count
        and the commonest summaries' first words (``permission-mode ×40, progress ×2``)."""
        tl = self.timeline
        base = self.rich_style
        if selected:
            cs = self.get_component_rich_style("event-list--cursor")
            row_style = Style(bgcolor=cs.bgcolor, bold=cs.bold)
        else:
            row_style = Style()
        dim = base + Style(dim=True) + row_style
        if hasattr(tl.events, "fold_heads"):  # a paged timeline knows them without its pages
            heads = tl.events.fold_heads(i, folded)
        else:
            heads = {}
            for j in range(i, min(i + folded, tl.n)):
                h = fold_head(tl.summary[j] or "")
                heads[h] = heads.get(h, 0) + 1
        what = ", ".join(f"{h} ×{c}" if c > 1 else h for h, c in sorted(heads.items(), key=lambda kv: (-kv[1], kv[0])))
        segs = [
            Segment(" ", dim),
            Segment(fmt_elapsed(tl.elapsed[i]).rjust(self._time_w) + " ", dim),
            Segment("┄ " + f"{folded:,} folded".ljust((KIND_W if width >= 60 else 8) - 1) + " ", dim),
            Segment(visible(what), dim),
        ]
        strip = Strip(segs)
        if strip.cell_length > width > 1:
            strip = Strip.join([strip.crop(0, width - 1), Strip([Segment("…", dim)], 1)])
        return strip.crop_extend(0, width, base + row_style)

    def _row(self, i: int, width: int, selected: bool) -> Strip:
        tl = self.timeline
        ev = tl.events
        kind = tl.kind[i]
        base = self.rich_style
        if selected:  # keep the kind colours: take only background and weight from the cursor style
            cs = self.get_component_rich_style("event-list--cursor")
            row_style = Style(bgcolor=cs.bgcolor, bold=cs.bold)
        else:
            row_style = Style()
        dim = Style(dim=True)

        def st(s: str | Style) -> Style:
            s = Style.parse(s) if isinstance(s, str) else s
            return base + s + row_style

        is_err = bool(ev.is_error[i]) if hasattr(ev, "is_error") else False
        level = ev.level[i] if hasattr(ev, "level") else None
        mark, mstyle = event_mark(kind, is_err, level, i in self._new_best)
        segs = [Segment(mark, st(mstyle))]
        el = tl.elapsed[i]
        segs.append(Segment(fmt_elapsed(el).rjust(self._time_w) + " ", st(dim)))
        kw = KIND_W if width >= 60 else 8
        lab = kind_label(kind)
        lab = (lab[: kw - 1] + "…") if len(lab) > kw else lab.ljust(kw)
        kstyle = kind_style(kind)
        if is_err and kind == "tool_result":
            kstyle = "red"
        segs.append(Segment(lab + " ", st(kstyle)))
        d = tl.depth[i] if tl.depth else 0
        if d:
            segs.append(Segment("┆ " * (d - 1) + "↳ ", st("dim cyan")))
        summary = visible((tl.summary[i] or "").replace("\n", " ").replace("\r", " "))
        sstyle = (
            "red"
            if mark == "✗"
            else (
                "bold"
                if kind in _GRADED
                # a harness WARNING (a drain that timed out: reports may be missing) is not background
                else ("yellow" if kind == "log" and level == "WARNING" else "dim" if kind in _QUIET else "")
            )
        )
        q = self.query_text.lower()
        if q and q in summary.lower():
            low = summary.lower()
            pos = 0
            mstyle_q = self.get_component_rich_style("event-list--match")
            while True:
                k = low.find(q, pos)
                if k < 0:
                    break
                if k > pos:
                    segs.append(Segment(summary[pos:k], st(sstyle)))
                segs.append(Segment(summary[k : k + len(q)], st(sstyle) + Style(bgcolor=mstyle_q.bgcolor)))
                pos = k + len(q)
            if pos < len(summary):
                segs.append(Segment(summary[pos:], st(sstyle)))
        else:
            segs.append(Segment(summary, st(sstyle)))
        strip = Strip(segs)
        if strip.cell_length > width > 1:  # a summary cut by the width ends with "…", not mid-word silently
            strip = Strip.join([strip.crop(0, width - 1), Strip([Segment("…", st("dim"))], 1)])
        strip = strip.crop_extend(0, width, base + row_style)
        return strip

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._cache.clear()

    def on_focus(self, event: Any) -> None:
        self._cache.clear()
        self.refresh()

    def on_blur(self, event: Any) -> None:
        self._cache.clear()
        self.refresh()
