"""The SQL screen's results table: a line-API grid of query rows with a cell cursor (no I/O).

Textual's ``DataTable`` renders each cell through Rich (a ``Padding`` of a ``Text``, laid out and
cropped per cell), and a page down brings a screenful of rows it has not drawn: 46 rows × 4 cells
took 46 ms of the main thread at 160×48 (bench/bench_sql_screen.py), against 1 ms for a move
within rows already drawn. Here a row is one :class:`~textual.strip.Strip` built straight from
its cells' strings (each cut and padded to its column by cell width), so a screenful costs a few
milliseconds. Rows are kept as given (the query's tuples); a cell's text is made when its row is
drawn: control characters escaped (:func:`edgetui.control_chars.visible`), never markup, cut
to :data:`CELL_WIDTH` with an ellipsis, numbers to the right, NULL as a dim ``∅``.

Keys: arrows, page up / down, home / end (first / last row), ctrl+home / ctrl+end (first / last
column); enter posts :class:`ResultsGrid.CellSelected`; every cursor move posts
:class:`ResultsGrid.CellHighlighted` (the screen fetches the next page from it). A click puts the
cursor on a cell, a click on the cursor's cell selects it.
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from edgetui.control_chars import visible

__all__ = ["ResultsGrid", "CELL_WIDTH", "cell_text", "shown_cell"]

#: the widest a cell is drawn (the whole of it: the SQL screen's `v`)
CELL_WIDTH = 40
#: rows drawn and kept (a page up after a page down draws nothing again)
_STRIP_CACHE = 256


def cell_text(v: Any) -> str:
    """A value as the table and the cell view show it: NULL as ∅, bytes by their size."""
    if v is None:
        return "∅"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(v))} bytes>"
    return str(v)


def shown_cell(v: Any, width: int = CELL_WIDTH) -> tuple[str, bool]:
    """What a cell shows (escaped, cut to ``width`` cells with ``…``) and whether it is right-aligned
    (a number)."""
    s = visible(cell_text(v))
    if len(s) > width // 2 and cell_len(s) > width:  # (len: no cell is wider than 2)
        s = set_cell_size(s, width - 1) + "…"
    return s, isinstance(v, (int, float)) and not isinstance(v, bool)


class ResultsGrid(ScrollView, can_focus=True):
    """Rows of a query's result under a fixed header line; the cursor is on one cell."""

    COMPONENT_CLASSES = {
        "results-grid--header",
        "results-grid--cursor",
        "results-grid--even-row",
        "results-grid--null",
    }
    DEFAULT_CSS = """
    ResultsGrid { height: 1fr; background: $surface; color: $foreground; }
    ResultsGrid:focus { background-tint: $foreground 5%; }
    ResultsGrid > .results-grid--header { text-style: bold; background: $panel; color: $foreground; }
    ResultsGrid > .results-grid--even-row { background: $surface-lighten-1 50%; }
    ResultsGrid:dark > .results-grid--even-row { background: $surface-darken-1 40%; }
    ResultsGrid > .results-grid--null { color: $text-muted; }
    ResultsGrid > .results-grid--cursor { background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground; text-style: $block-cursor-blurred-text-style; }
    ResultsGrid:focus > .results-grid--cursor { background: $block-cursor-background;
        color: $block-cursor-foreground; text-style: $block-cursor-text-style; }
    """
    BINDINGS = [
        Binding("enter", "select_cursor", "select", show=False),
        Binding("up", "cursor_up", "up", show=False),
        Binding("down", "cursor_down", "down", show=False),
        Binding("left", "cursor_left", "left", show=False),
        Binding("right", "cursor_right", "right", show=False),
        Binding("pageup", "page_up", "page up", show=False),
        Binding("pagedown", "page_down", "page down", show=False),
        Binding("home", "first_row", "first row", show=False),
        Binding("end", "last_row", "last row", show=False),
        Binding("ctrl+home", "first_column", "first column", show=False),
        Binding("ctrl+end", "last_column", "last column", show=False),
    ]

    class CellMessage(Message):
        """A message about the cell at ``coordinate`` of ``grid`` (no handler takes this base)."""

        def __init__(self, grid: "ResultsGrid", coordinate: Coordinate) -> None:
            super().__init__()
            self.grid, self.coordinate = grid, coordinate

        @property
        def control(self) -> "ResultsGrid":
            return self.grid

    class CellHighlighted(CellMessage):
        """The cursor moved to ``coordinate``."""

    class CellSelected(CellMessage):
        """Enter (or a click on the cursor's cell) on ``coordinate``."""

    #: blank cells on each side of a cell
    cell_padding = 1

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns: list[str] = []
        self.widths: list[int] = []
        self.rows: list[tuple] = []
        self.cursor_row = 0
        self.cursor_column = 0
        self._starts: list[int] = []  # each column's first cell in the full-width line
        self._total_width = 0
        self._strips: dict[int, tuple[tuple, Strip]] = {}  # row -> (what it was drawn with, its line)
        self._header: Optional[Strip] = None
        self._styles: dict[str, Style] = {}  # base, even, null, cursor: read once per style change

    # ------------------------------------------------------------------ DataTable-like reading

    @property
    def row_count(self) -> int:
        return len(self.rows)

    @property
    def cursor_coordinate(self) -> Coordinate:
        return Coordinate(self.cursor_row, self.cursor_column)

    def get_cell_at(self, at: Coordinate) -> Text:
        """The cell at ``at`` as shown (escaped, cut to :data:`CELL_WIDTH`)."""
        return Text(shown_cell(self.rows[at.row][at.column])[0])

    # ------------------------------------------------------------------ data in

    def clear(self, columns: bool = False) -> None:
        """No rows (and no columns when ``columns``); the cursor back to the first cell."""
        self.rows = []
        if columns:
            self.columns, self.widths = [], []
        else:
            self.widths = [cell_len(visible(c)) for c in self.columns]
        self.cursor_row = self.cursor_column = 0
        self._relayout()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def add_columns(self, names: Iterable[str]) -> None:
        for name in names:
            self.columns.append(name)
            self.widths.append(min(CELL_WIDTH, cell_len(visible(name))))
        self._relayout()

    def add_rows(self, rows: list[tuple]) -> None:
        """Append ``rows`` (tuples in column order); the columns widen to their cells (up to
        :data:`CELL_WIDTH`)."""
        if not rows:
            return
        widths = self.widths
        grown = False
        for c in range(len(widths)):
            w = widths[c]
            for row in rows:
                n = cell_len(shown_cell(row[c])[0])
                if n > w:
                    w = n
            if w != widths[c]:
                widths[c], grown = w, True
        first = len(self.rows)
        self.rows.extend(rows)
        if grown:
            self._relayout()
        else:
            self.virtual_size = Size(self._total_width, len(self.rows) + 1)
            top = int(self.scroll_y)
            if first < top + self._visible_rows:  # new rows on screen: drawn
                self.refresh()

    def _relayout(self) -> None:
        pad = 2 * self.cell_padding
        self._starts, x = [], 0
        for w in self.widths:
            self._starts.append(x)
            x += w + pad
        self._total_width = x
        self._strips.clear()
        self._header = None
        self.virtual_size = Size(self._total_width, len(self.rows) + 1)
        self.refresh()

    # ------------------------------------------------------------------ cursor

    @property
    def _visible_rows(self) -> int:
        """Rows on screen under the header."""
        return max(1, self.scrollable_content_region.height - 1)

    def move_cursor(self, row: Optional[int] = None, column: Optional[int] = None) -> None:
        """Put the cursor on (``row``, ``column``) (clamped; ``None`` keeps that one), scroll it into
        view, post :class:`CellHighlighted`."""
        if not self.rows or not self.columns:
            return
        row = self.cursor_row if row is None else max(0, min(len(self.rows) - 1, row))
        column = self.cursor_column if column is None else max(0, min(len(self.columns) - 1, column))
        old = self.cursor_row
        moved = (row, column) != (self.cursor_row, self.cursor_column)
        self.cursor_row, self.cursor_column = row, column
        self._scroll_cursor_into_view()
        if moved:
            self._refresh_row(old)
            self._refresh_row(row)
            self.post_message(self.CellHighlighted(self, Coordinate(row, column)))

    def _refresh_row(self, index: int) -> None:
        top = int(self.scroll_y)
        if top <= index < top + self._visible_rows:
            self.refresh_lines(index + 1)  # virtual line: the header is line 0

    def _scroll_cursor_into_view(self) -> None:
        visible_rows = self._visible_rows
        y, x = int(self.scroll_y), int(self.scroll_x)
        new_y, new_x = y, x
        if self.cursor_row < y:
            new_y = self.cursor_row
        elif self.cursor_row >= y + visible_rows:
            new_y = self.cursor_row - visible_rows + 1
        if self._starts:
            left = self._starts[self.cursor_column]
            right = left + self.widths[self.cursor_column] + 2 * self.cell_padding
            width = self.scrollable_content_region.width
            if left < x:
                new_x = left
            elif right > x + width:
                new_x = min(left, right - width)
        if (new_x, new_y) != (x, y):
            self.scroll_to(new_x, new_y, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_cursor_left(self) -> None:
        self.move_cursor(column=self.cursor_column - 1)

    def action_cursor_right(self) -> None:
        self.move_cursor(column=self.cursor_column + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - self._visible_rows)

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + self._visible_rows)

    def action_first_row(self) -> None:
        self.move_cursor(row=0)

    def action_last_row(self) -> None:
        self.move_cursor(row=len(self.rows) - 1)

    def action_first_column(self) -> None:
        self.move_cursor(column=0)

    def action_last_column(self) -> None:
        self.move_cursor(column=len(self.columns) - 1)

    def action_select_cursor(self) -> None:
        if self.rows and self.columns:
            self.post_message(self.CellSelected(self, self.cursor_coordinate))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1 or not self.columns:
            return
        row = int(self.scroll_y) + offset.y - 1
        x = int(self.scroll_x) + offset.x
        if not (0 <= row < len(self.rows)) or x >= self._total_width:
            return
        column = max(c for c, start in enumerate(self._starts) if start <= x)
        event.stop()
        if (row, column) == (self.cursor_row, self.cursor_column) or event.chain > 1:
            self.move_cursor(row, column)
            self.action_select_cursor()
        else:
            self.move_cursor(row, column)

    def on_resize(self) -> None:
        self.call_after_refresh(self._scroll_cursor_into_view)

    def on_focus(self) -> None:
        self._restyle()  # the cursor's style follows the focus

    def on_blur(self) -> None:
        self._restyle()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._restyle()

    def _restyle(self) -> None:
        self._strips.clear()
        self._styles.clear()
        self._header = None
        self.refresh()

    def _style(self, name: str) -> Style:
        """The rich style of the grid (``base``) or of one of its parts, read once per style change
        (reading it walks the DOM)."""
        hit = self._styles.get(name)
        if hit is None:
            if name == "base":
                hit = self.rich_style
            else:
                hit = self.get_component_rich_style(f"results-grid--{name}", partial=name == "null")
            self._styles[name] = hit
        return hit

    # ------------------------------------------------------------------ rendering

    def _cell(self, text: str, width: int, right: bool) -> str:
        pad = " " * self.cell_padding
        gap = width - cell_len(text)
        if gap < 0:
            text = set_cell_size(text, width)
        elif gap and right:
            text = " " * gap + text
        elif gap:
            text = text + " " * gap
        return pad + text + pad

    def _header_strip(self) -> Strip:
        if self._header is None:
            style = self._style("base") + self._style("header")
            segs = [Segment(self._cell(visible(c), w, False), style) for c, w in zip(self.columns, self.widths)]
            self._header = Strip(segs, self._total_width)
        return self._header

    def _row_strip(self, index: int) -> Strip:
        cursor = self.cursor_column if index == self.cursor_row else -1
        token = (cursor, self.has_focus)
        hit = self._strips.get(index)
        if hit is not None and hit[0] == token:
            return hit[1]
        base = self._style("base")
        if index % 2:
            base = base + self._style("even-row")
        segs: list[Segment] = []
        for c, (v, w) in enumerate(zip(self.rows[index], self.widths)):
            text, right = shown_cell(v, CELL_WIDTH)
            style = base
            if c == cursor:
                style = base + self._style("cursor")
            elif v is None:
                style = base + self._style("null")
            segs.append(Segment(self._cell(text, w, right), style))
        strip = Strip(segs, self._total_width)
        if len(self._strips) >= _STRIP_CACHE:
            self._strips.clear()
        self._strips[index] = (token, strip)
        return strip

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = int(self.scroll_x), int(self.scroll_y)
        if y == 0:
            strip = self._header_strip()
        else:
            index = scroll_y + y - 1
            if not (0 <= index < len(self.rows)):
                return Strip.blank(width, self._style("base"))
            strip = self._row_strip(index)
        return strip.crop_extend(scroll_x, scroll_x + width, self._style("base"))
