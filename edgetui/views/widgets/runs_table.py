"""The live runs table widget: one row per :class:`edgetui.live.model.LiveRun` (no I/O).

:class:`RunsTable` is a line-API table whose columns follow the width (three tiers; text
columns shrink, then the cost and last-event columns are left out, before the table would
scroll sideways). Updates keep the selected run selected and, when the rows are the same, only
the rows whose cells changed are drawn again. Its cells come from the pure helpers of
:mod:`edgetui.views.widgets.runs_cells` (re-exported here).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from edgetui.live.model import LiveRun
from edgetui.names import distinguishing_width, shared_ends

from edgetui.views.widgets.runs_cells import *  # noqa: F403  (the cells' public names, re-exported)
from edgetui.views.widgets.runs_cells import __all__ as _cells_all
from edgetui.views.widgets.fmt import text_sig
from edgetui.views.widgets.runs_cells import (  # noqa: F401  (FORECAST_PENDING, HOST_MARKS: read by the screens and tests)
    CAPS,
    COL,
    COLUMNS,
    FORECAST_PENDING,
    HOST_MARKS,
    NAME_KEYS,
    fit,
    column_label,
    forecast_cell,
    has_remote,
    row_cells,
)

__all__ = ["RunsTable", *_cells_all]


# ---------------------------------------------------------------------------- widget


@dataclass
class ColumnInfo:
    """A shown column: key, header label (with the sort arrow) and width in cells."""

    key: str
    label: Text
    width: int


class RunsTable(ScrollView, can_focus=True):
    """Rows of live runs; the runs screen decides order, filter and tier (:meth:`show`).

    A line-API widget (not a DataTable): each visible row is one :class:`~textual.strip.Strip`,
    cached per row until its cells, its cursor / zebra state or the layout change, so a refresh
    where 150 busy rows change costs the rows on screen whose text changed, not a render per
    cell. Keys: up/down, page up/down, home/end, enter (opens: :class:`RunsTable.RowSelected`);
    a click highlights a row, a click on the highlighted row opens it.
    """

    COMPONENT_CLASSES = {"runs-table--header", "runs-table--cursor", "runs-table--even-row"}
    DEFAULT_CSS = """
    RunsTable { height: 1fr; scrollbar-size-vertical: 1; background: $surface; color: $foreground; }
    RunsTable:focus { background-tint: $foreground 5%; }
    RunsTable > .runs-table--header { text-style: bold; background: $panel; color: $foreground; }
    RunsTable > .runs-table--even-row { background: $surface-lighten-1 50%; }
    RunsTable:dark > .runs-table--even-row { background: $surface-darken-1 40%; }
    RunsTable > .runs-table--cursor { background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground; text-style: $block-cursor-blurred-text-style; }
    RunsTable:focus > .runs-table--cursor { background: $block-cursor-background;
        color: $block-cursor-foreground; text-style: $block-cursor-text-style; }
    """
    BINDINGS = [
        Binding("enter", "select_cursor", "open", show=False),
        Binding("up,k", "cursor_up", "up", show=False),  # j/k as on the live run screen
        Binding("down,j", "cursor_down", "down", show=False),
        Binding("pageup", "page_up", "page up", show=False),
        Binding("pagedown", "page_down", "page down", show=False),
        Binding("home", "first", "first", show=False),
        Binding("end", "last", "last", show=False),
        Binding("left", "scroll_left", "left", show=False),
        Binding("right", "scroll_right", "right", show=False),
    ]

    class RowHighlighted(Message):
        """The cursor moved to ``run_key`` (row ``cursor_row``)."""

        def __init__(self, table: "RunsTable", run_key: Optional[str], cursor_row: int) -> None:
            super().__init__()
            self.table, self.run_key, self.cursor_row = table, run_key, cursor_row

        @property
        def control(self) -> "RunsTable":
            return self.table

    class RowSelected(Message):
        """Enter (or a click on the highlighted row) on ``run_key``."""

        def __init__(self, table: "RunsTable", run_key: str) -> None:
            super().__init__()
            self.table, self.run_key = table, run_key

        @property
        def control(self) -> "RunsTable":
            return self.table

    cell_padding = 1

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.run_keys: list[str] = []
        self.cursor_row = 0
        self.columns: dict[str, ColumnInfo] = {}
        self._layout: tuple = ()
        self._rows: dict[str, dict[str, Text]] = {}  # run key -> fitted cells
        self._cells: dict[str, tuple] = {}  # run key -> cell signatures (what the row shows)
        self._strips: dict[str, tuple[tuple, Strip]] = {}  # run key -> (render token, full-width row)
        self._seg_cache: dict[tuple, list[Segment]] = {}  # one padded cell's segments (_cell_segments)
        self._header: Optional[tuple[tuple, Strip]] = None
        self._total_width = 0
        self._runs: dict[str, LiveRun] = {}  # the latest snapshot of each shown run
        self._now, self._tier = 0.0, "w"
        self._stale: set[str] = set()  # rows whose cells were not rebuilt from the latest snapshot
        self._shrunk: set[str] = set()  # text columns cut to fit the width
        self._layout_in: tuple = ()
        self._widths_t = float("-inf")
        self._host_col = False  # a remote host's run is shown: the host column is on
        #: run key -> Forecast dict / FORECAST_PENDING / None (the runs screen's worker reads them)
        self.forecasts: dict[str, Any] = {}
        self._fc_short = False  # the forecast column in its short form (the value alone: 80 columns)
        #: name column -> each shown value's head and tail shared with another (edgetui.names.shared_ends)
        self._ends: dict[str, dict[str, tuple[int, int]]] = {}

    def _cells_of(self, run: LiveRun, now: float, tier: str) -> dict[str, Text]:
        return row_cells(run, now, tier, self.forecasts.get(run.run_key), self._fc_short, host_column=self._host_col)

    # ------------------------------------------------------------------ DataTable-like reading

    @property
    def row_count(self) -> int:
        return len(self.run_keys)

    def get_row_at(self, index: int) -> list[Text]:
        """Cells of row ``index`` in column order (as shown: fitted to the column widths)."""
        row = self._fresh(self.run_keys[index])
        return [row[k] for k in self.columns]

    def get_column(self, key: str) -> list[Text]:
        """Cells of column ``key``, top to bottom."""
        return [self._fresh(rk)[key] for rk in self.run_keys]

    @property
    def selected_run_key(self) -> Optional[str]:
        """Run key of the row under the cursor (``None`` when empty)."""
        if not self.run_keys or not (0 <= self.cursor_row < len(self.run_keys)):
            return None
        return self.run_keys[self.cursor_row]

    # ------------------------------------------------------------------ data in

    def _widths(
        self, keys: Sequence[str], rows: list[dict[str, Text]], tier: str, labels: dict[str, str], available: int
    ) -> tuple[dict[str, int], set[str]]:
        """Column widths for ``rows`` (content, capped per tier, at least the label), text columns
        shrunk until ``available`` cells hold them; and the columns that were shrunk. Names
        (:data:`NAME_KEYS`) are given the cells that tell their values apart before any other
        column (above the tier's cap but in the narrow tier; :func:`edgetui.names.distinguishing_width`):
        a table whose names would be cut further does not fit a wider tier."""
        caps = CAPS[tier]
        w: dict[str, int] = {}
        floor: dict[str, int] = {}
        for k in keys:
            content = max((r[k].cell_len for r in rows), default=0)
            cap = caps.get(k, 10**6)
            floor[k] = COL[k].min_w
            if k in NAME_KEYS:
                need = distinguishing_width([r[k].plain for r in rows], floor=COL[k].min_w)
                if tier != "n":
                    cap = max(cap, need)
                    floor[k] = max(floor[k], need)
            w[k] = max(len(labels[k]), min(content, cap))
        natural = dict(w)
        pad = 2 * self.cell_padding
        total = sum(w.values()) + pad * len(keys)
        # shrink the text columns (widest first) until the table fits
        shrinkable = [k for k in keys if COL[k].shrink]
        while total > available and shrinkable:
            k = max(shrinkable, key=lambda c: w[c] - floor[c])
            if w[k] <= max(floor[k], len(labels[k])):
                break
            w[k] -= 1
            total -= 1
        return w, {k for k in keys if w[k] < natural[k]}

    #: column widths follow the content of every row at most this often (and whenever the rows, the
    #: tier, the sort label or the width change, or a row on screen needs a wider column); between
    #: those, only the rows on screen are built, the others when scrolled to
    WIDTHS_EVERY_S = 5.0

    def show(
        self,
        runs: Sequence[LiveRun],
        now: float,
        *,
        tier: str = "w",
        sort_key: Optional[str] = None,
        reverse: bool = False,
        available: Optional[int] = None,
    ) -> None:
        """Show ``runs`` in this order; keeps the selected run selected when it is still shown.

        ``tier``: ``w`` / ``m`` / ``n`` (see :data:`COLUMNS`), or ``auto``: the widest tier whose
        columns fit ``available`` cells (text columns shrunk to their minimum) for these rows.
        """
        avail = available if available is not None else max(20, (self.size.width or 160) - 1)
        layout_in = (tier, sort_key, reverse, avail, has_remote(runs))
        new_keys = [r.run_key for r in runs]
        self._runs = {r.run_key: r for r in runs}
        self._now = now
        if (
            layout_in != self._layout_in
            or new_keys != self.run_keys
            or time.monotonic() - self._widths_t >= self.WIDTHS_EVERY_S
            or not self._show_on_screen(new_keys, list(self.columns))
        ):
            pad = 2 * self.cell_padding
            hc = self._host_col = has_remote(runs)
            self._fc_short = False
            for t in ("w", "m", "n") if tier == "auto" else (tier,):
                keys = [c.key for c in COLUMNS if t in c.tiers and (hc or c.key != "host")]
                keys = self._without_empty_forecast(keys, runs)
                labels = {k: column_label(k, t) for k in keys}
                shown_labels = {k: column_label(k, t, sort_key, reverse) for k in keys}
                raw = [self._cells_of(r, now, t) for r in runs]
                widths, shrunk = self._widths(keys, raw, t, labels, avail)
                fits = sum(max(widths[k], len(shown_labels[k])) + pad for k in keys) <= avail
                # names before numbers: a wider tier whose names had to be cut does not fit
                fits = fits and (t == "n" or not shrunk.intersection(NAME_KEYS))
                if fits:
                    break
            dropped = False
            if tier == "auto" and t == "n":  # the narrowest tier too wide (the host column at 80)
                for drop in self.DROP_WHEN_NARROW:
                    # room for a sort arrow whichever column has it: the columns kept do not
                    # change with the sort key
                    if sum(max(widths[k], len(labels[k])) + pad for k in keys) + 2 <= avail:
                        break
                    if drop in keys:
                        keys = [k for k in keys if k != drop]
                        widths, shrunk = self._widths(keys, raw, t, labels, avail)
                        dropped = True
            self._grow_names(keys, widths, shown_labels, raw, avail, shrunk)
            if tier == "auto" and t != "w" and not dropped:  # (no extra column where one was left out)
                keys = self._add_fitting(keys, widths, shown_labels, raw, t, avail, sort_key, reverse, shrunk)
            self._tier = t
            self._shrunk = shrunk
            self._show_all(new_keys, keys, shown_labels, raw, widths, layout_in)

    #: columns left out, in this order, while the narrowest tier does not fit the width (rather than
    #: a table that scrolls sideways with its text columns cut to their minimum)
    DROP_WHEN_NARROW = ("cost", "last")

    #: columns of wider tiers added, in this order, to a narrower tier's when they fit the space left
    EXTRA_COLUMNS = ("forecast", "tokens", "model", "cpu", "mem")

    def _grow_names(
        self,
        keys: list[str],
        widths: dict[str, int],
        shown_labels: dict[str, str],
        raw: list[dict[str, Text]],
        avail: int,
        shrunk: set[str],
    ) -> None:
        """Names cut by the tier's caps or shrunk take the cells the columns leave free, before any
        wider tier's column is added (names before numbers): a 160-column table showed run ids in 18
        cells beside 60 empty ones."""
        pad = 2 * self.cell_padding
        free = avail - 2 - sum(max(widths[k], len(shown_labels[k])) + pad for k in keys)  # (2: a sort arrow)
        for k in NAME_KEYS:
            if k not in keys or free <= 0:
                continue
            natural = max((r[k].cell_len for r in raw), default=0)
            grow = min(free, natural - widths[k])
            if grow > 0:
                widths[k] += grow
                free -= grow
                if widths[k] >= natural:
                    shrunk.discard(k)

    def _without_empty_forecast(self, keys: list[str], runs: Sequence[LiveRun]) -> list[str]:
        """The forecast column only while a shown run is going on (a table of ended runs keeps its
        columns)."""
        if "forecast" in keys and not any(r.status in ("running", "grading") for r in runs):
            return [k for k in keys if k != "forecast"]
        return keys

    def _add_fitting(
        self,
        keys: list[str],
        widths: dict[str, int],
        shown_labels: dict[str, str],
        raw: list[dict[str, Text]],
        tier: str,
        avail: int,
        sort_key: Optional[str],
        reverse: bool,
        shrunk: Optional[set[str]] = None,
    ) -> list[str]:
        """``keys`` plus the EXTRA_COLUMNS that fit in what the tier's columns leave of ``avail``
        (display order kept); ``widths`` / ``shown_labels`` get their entries. The forecast column
        may take room from the text columns (cut down to their minimum; added to ``shrunk``)."""
        pad = 2 * self.cell_padding
        used = sum(max(widths[k], len(shown_labels[k])) + pad for k in keys)
        out = set(keys)
        for k in self.EXTRA_COLUMNS:
            if k in out or (
                k == "forecast" and not any(r.status in ("running", "grading") for r in self._runs.values())
            ):
                continue
            label = column_label(k, tier, sort_key, reverse)
            content = max((r[k].cell_len for r in raw), default=0)
            w = max(len(label), min(content, CAPS[tier].get(k, 16)))
            if k == "forecast" and used + w + pad > avail and shrunk is not None:
                used = self._make_room(keys, widths, shown_labels, used, used + w + pad - avail, shrunk)
                if used + w + pad > avail and tier == "n":  # the value alone, when that fits
                    short = [forecast_cell(r, self.forecasts.get(rk), tier, True) for rk, r in self._runs.items()]
                    label = "fcst"
                    w = max(len(label), min(max((c.cell_len for c in short), default=0), 8))
                    used = self._make_room(keys, widths, shown_labels, used, used + w + pad - avail, shrunk)
                    if used + w + pad <= avail:
                        self._fc_short = True
                        for r, c in zip(raw, short):
                            r[k] = c
            if used + w + pad <= avail:
                out.add(k)
                widths[k] = w
                shown_labels[k] = label
                used += w + pad
        return [c.key for c in COLUMNS if c.key in out]

    def _make_room(
        self,
        keys: list[str],
        widths: dict[str, int],
        shown_labels: dict[str, str],
        used: int,
        need: int,
        shrunk: set[str],
    ) -> int:
        """Cut the shrinkable columns of ``keys`` (the one furthest above its minimum first) by ``need``
        cells in all, only when they can give that many; returns ``used`` (cells) after."""
        slack = {k: widths[k] - max(COL[k].min_w, len(shown_labels[k])) for k in keys if COL[k].shrink}
        if sum(max(0, v) for v in slack.values()) < need:
            return used  # not enough: nothing is cut
        while need > 0:
            k = max(slack, key=lambda c: slack[c])
            widths[k] -= 1
            slack[k] -= 1
            shrunk.add(k)
            need -= 1
            used -= 1
        return used

    def _show_on_screen(self, new_keys: list[str], keys: list[str]) -> bool:
        """Same rows, same layout: build only the rows on screen (the others go stale). False when a
        row on screen needs a wider column (then every row is measured)."""
        top = int(self.scroll_y)
        bottom = min(len(new_keys), top + self._visible_rows)
        caps = CAPS[self._tier]
        built: list[tuple[int, str, dict[str, Text]]] = []
        for i in range(top, bottom):
            rk = new_keys[i]
            row = self._cells_of(self._runs[rk], self._now, self._tier)
            for k in keys:
                w = self.columns[k].width
                if row[k].cell_len > w and k not in self._shrunk and w < caps.get(k, 10**6):
                    return False
            built.append((i, rk, row))
        dirty: list[int] = []
        for i, rk, row in built:
            if self._set_row(rk, row):
                dirty.append(i)
        self._stale.update(new_keys[:top])
        self._stale.update(new_keys[bottom:])
        self._refresh_rows(dirty)
        return True

    def _set_row(self, rk: str, row: dict[str, Text]) -> bool:
        """Fit ``row`` (uncut cells) to the columns and keep it; True when what it shows changed."""
        fitted = {k: fit(k, row[k], c.width, self._ends.get(k)) for k, c in self.columns.items()}
        sig = tuple(text_sig(fitted[k]) for k in self.columns)
        self._stale.discard(rk)
        self._rows[rk] = fitted
        if self._cells.get(rk) == sig:
            return False
        self._cells[rk] = sig
        return True

    def _fresh(self, rk: str) -> dict[str, Text]:
        """The fitted cells of ``rk``, built now when they went stale off screen."""
        if rk in self._stale:
            self._set_row(rk, self._cells_of(self._runs[rk], self._now, self._tier))
        return self._rows[rk]

    def _show_all(
        self,
        new_keys: list[str],
        keys: list[str],
        shown_labels: dict[str, str],
        raw: list[dict[str, Text]],
        widths: dict[str, int],
        layout_in: tuple,
    ) -> None:
        """Every row measured and built (``raw``: uncut cells of ``self._tier``)."""
        self._ends = {k: shared_ends(r[k].plain for r in raw) for k in keys if k in NAME_KEYS}
        widths = dict(widths)
        for k in keys:  # the arrow must not widen a fitted column past its label
            widths[k] = max(widths[k], len(shown_labels[k]))
        layout = (tuple(keys), tuple(widths[k] for k in keys), tuple(shown_labels[k] for k in keys))
        self._layout_in, self._widths_t = layout_in, time.monotonic()
        selected = self.selected_run_key
        changed = new_keys != self.run_keys
        if layout != self._layout:
            self._layout = layout
            self.columns = {
                k: ColumnInfo(
                    k,
                    Text(shown_labels[k], style="bold", justify=COL[k].justify),  # type: ignore[arg-type]
                    widths[k],
                )
                for k in keys
            }
            self._total_width = sum(widths[k] + 2 * self.cell_padding for k in keys)
            self._strips.clear()
            self._header = None
            self._cells.clear()
            changed = True
        keep = set(new_keys)
        for d in (self._rows, self._cells, self._strips):
            for rk in [k for k in d if k not in keep]:
                del d[rk]
        self._stale.clear()
        dirty = [i for i, (rk, row) in enumerate(zip(new_keys, raw)) if self._set_row(rk, row)]
        self.run_keys = new_keys
        self.virtual_size = Size(self._total_width, len(new_keys) + 1)
        old_row = self.cursor_row
        self.cursor_row = new_keys.index(selected) if selected in keep else 0
        if self.cursor_row != old_row or selected != self.selected_run_key:
            changed = True
            self._scroll_cursor_into_view()
            self.post_message(self.RowHighlighted(self, self.selected_run_key, self.cursor_row))
        if changed:
            self.refresh()
        else:
            self._refresh_rows(dirty)

    def _refresh_rows(self, indices: Iterable[int]) -> None:
        """Draw these rows again (those on screen; the others are drawn when scrolled to)."""
        top = int(self.scroll_y)
        bottom = top + self._visible_rows
        for i in indices:
            if top <= i < bottom:
                self.refresh_lines(i + 1)  # virtual line: the header is line 0

    def select_run(self, run_key: str) -> bool:
        """Put the cursor on ``run_key``; ``False`` when it is not shown."""
        if run_key not in self.run_keys:
            return False
        self.move_cursor(self.run_keys.index(run_key))
        return True

    # ------------------------------------------------------------------ cursor

    def move_cursor(self, row: int) -> None:
        """Put the cursor on row ``row`` (clamped), scroll it into view, post :class:`RowHighlighted`."""
        if not self.run_keys:
            return
        row = max(0, min(len(self.run_keys) - 1, row))
        if row != self.cursor_row:
            self._refresh_rows((self.cursor_row, row))
            self.cursor_row = row
            self.post_message(self.RowHighlighted(self, self.selected_run_key, row))
        self._scroll_cursor_into_view()

    @property
    def _visible_rows(self) -> int:
        """Rows on screen under the header."""
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_cursor_into_view(self) -> None:
        visible = self._visible_rows
        y = int(self.scroll_y)
        if self.cursor_row < y:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= y + visible:
            self.scroll_to(y=self.cursor_row - visible + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - max(1, self._visible_rows - 1))

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + max(1, self._visible_rows - 1))

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.run_keys) - 1)

    def action_select_cursor(self) -> None:
        rk = self.selected_run_key
        if rk is not None:
            self.post_message(self.RowSelected(self, rk))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:
            return
        row = int(self.scroll_y) + offset.y - 1
        if not (0 <= row < len(self.run_keys)):
            return
        event.stop()
        if row == self.cursor_row or event.chain > 1:
            self.move_cursor(row)
            self.action_select_cursor()
        else:
            self.move_cursor(row)

    def on_resize(self) -> None:
        """Smaller (e.g. the filter bar opened above): the selected row stays on screen."""
        self.call_after_refresh(self._scroll_cursor_into_view)

    def on_focus(self) -> None:
        self._strips.clear()  # the cursor's style follows the focus
        self.refresh()

    def on_blur(self) -> None:
        self._strips.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._seg_cache.clear()
        self._header = None

    # ------------------------------------------------------------------ rendering

    def _cell_segments(self, cell: Text, width: int, justify: str) -> list[Segment]:
        """The segments of one cell padded to its column (``width`` cells plus the cell padding), without
        the row's style; cached by what the cell shows (most cells of a busy row are the same at the
        next refresh: only its age, tokens and dollars move)."""
        key = (text_sig(cell), width, justify, self.cell_padding)
        hit = self._seg_cache.get(key)
        if hit is not None:
            return hit
        pad = " " * self.cell_padding
        line = Text(no_wrap=True, overflow="crop", end="")
        line.append(pad)
        gap = width - cell.cell_len
        if gap > 0 and justify == "right":
            line.append(" " * gap)
        line.append_text(cell)
        if gap > 0 and justify != "right":
            line.append(" " * gap)
        line.append(pad)
        segs = list(line.render(self.app.console))
        if len(self._seg_cache) >= 4096:
            self._seg_cache.clear()
        self._seg_cache[key] = segs
        return segs

    def _join(self, cells: Iterable[Text], style: Style) -> Strip:
        """One full-width line: each cell padded to its column, on ``style`` (the row's background)."""
        segments: list[Segment] = []
        for cell, col in zip(cells, self.columns.values()):
            segments.extend(self._cell_segments(cell, col.width, cell.justify or COL[col.key].justify))
        segments = list(Segment.apply_style(segments, style))
        return Strip(segments).adjust_cell_length(self._total_width, style)

    def _row_strip(self, index: int) -> Strip:
        rk = self.run_keys[index]
        row = self._fresh(rk)
        cursor = index == self.cursor_row
        token = (self._cells.get(rk), cursor, index % 2)
        hit = self._strips.get(rk)
        if hit is not None and hit[0] == token:
            return hit[1]
        if cursor:
            style = self.get_component_rich_style("runs-table--cursor")
        elif index % 2:
            style = self.get_component_rich_style("runs-table--even-row")
        else:
            style = Style()
        strip = self._join((row[k] for k in self.columns), style)
        self._strips[rk] = (token, strip)
        return strip

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = int(self.scroll_x), int(self.scroll_y)
        if y == 0:
            if self._header is None or self._header[0] != self._layout:
                style = self.get_component_rich_style("runs-table--header")
                self._header = (self._layout, self._join((c.label for c in self.columns.values()), style))
            strip = self._header[1]
        else:
            index = scroll_y + y - 1
            if not (0 <= index < len(self.run_keys)):
                return Strip.blank(width, self.rich_style)
            strip = self._row_strip(index)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
