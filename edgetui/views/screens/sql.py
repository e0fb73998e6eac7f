"""The SQL screen: an editor (textual-textarea's, SQL highlighting and completion of tables, views,
columns, functions), the schema with each table's and column's meaning, a results table that pages
lazily, history kept across restarts, cancel, a cell whole, export as CSV or Parquet.

No SQL runs here: workers call :mod:`edgetui.store.sql_results`, which checks every query with the
socket's read-only rule and fetches its rows a page at a time from a cursor the worker holds. Cells
are shown through :func:`edgetui.control_chars.visible` (no control sequence, no markup reaches the
terminal). Opened with F6 from the picker, and from the replay scoped to its run.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional, Union

from rich.text import Text
from textual import on, work
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, OptionList, Static, TextArea, Tree
from textual_textarea import TextEditor

from edgetui.control_chars import visible, visible_lines
from edgetui.store.sql_results import (
    HolderPagedResult,
    PagedResult,
    QueryBuffer,
    QueryHistory,
    completion_words,
    event_time,
    export_bytes,
    export_result,
    ready_the_rule,
    schema_entries,
)
from edgetui.views.screens.replay_host import app_connection
from edgetui.views.widgets.results_grid import CELL_WIDTH, ResultsGrid, cell_text

__all__ = ["SqlScreen", "CellScreen", "HistoryScreen", "ExportScreen", "scoped_query", "CELL_WIDTH"]

#: rows from the end of what is loaded at which the next page is asked for: a page ahead, so a page
#: down (a screenful) lands on rows already there (bench/bench_sql_screen.py)
PREFETCH_ROWS = 200
#: the most completions offered at once
MAX_COMPLETIONS = 30
#: seconds between two saves of the editor's text (QueryBuffer)
BUFFER_SAVE_S = 60.0
#: the keys' hints under the editor, the first that fits shown (the last for a narrow line (at 80 columns, the schema shown:
#: 44 cells; the footer names F5, F8, F7, F4, F10)
SQL_HINTS = (
    "F5 runs the query · F7 history · F4 export · F8 cancels · v a cell whole · enter: replay · esc back",
    "v a cell whole · enter: its replay · esc back · F1 every key",
    "results: v a cell whole · enter its replay",
)
#: TextEditor's actions that read or write files, or quit: the app does its own I/O and quitting
_EDITOR_LEFT_OUT = {"save", "load", "quit"}


#: a result being paged: on the app's own connection, or through the socket of the process holding the file
Paged = Union[PagedResult, HolderPagedResult]


def scoped_query(run_key: Optional[str]) -> str:
    """The query the screen opens with: one run's events when opened from its replay."""
    if not run_key:
        return (
            "SELECT run_key, round, to_timestamp(known_at) AS known, score, best_score, is_new_best\n"
            "FROM best_so_far\nORDER BY known_at"
        )
    rk = run_key.replace("'", "''")
    return f"SELECT t, kind, summary, run_key, event_id\nFROM events\nWHERE run_key = '{rk}'\nORDER BY t"


class SqlEditor(TextEditor):
    """textual-textarea's editor without its file and quit keys (ctrl+s, ctrl+o, ctrl+q); its find
    and go-to keys kept but out of the footer (it fits 80 columns)."""

    BINDINGS = [
        Binding(b.key, b.action, b.description, show=False)
        for b in TextEditor.BINDINGS
        if isinstance(b, Binding) and b.action not in _EDITOR_LEFT_OUT
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in _EDITOR_LEFT_OUT:
            return False
        return super().check_action(action, parameters)


class SqlStarted(Message):
    def __init__(self, result: Paged) -> None:
        super().__init__()
        self.result = result


class SqlPage(Message):
    """A page of rows of ``result`` (``first``: the query's first page)."""

    def __init__(self, result: Optional[Paged], rows: list[tuple], first: bool, error: str = "") -> None:
        super().__init__()
        self.result = result
        self.rows = rows
        self.first = first
        self.error = error


class SchemaLoaded(Message):
    def __init__(self, entries: list[dict], words: list[str], error: str = "") -> None:
        super().__init__()
        self.entries = entries
        self.words = words
        self.error = error


class Said(Message):
    """A line for the status bar (an export done, a replay that cannot open)."""

    def __init__(self, text: str, error: bool = False) -> None:
        super().__init__()
        self.text = text
        self.error = error


class BufferRestored(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ReplayAt(Message):
    def __init__(self, run_key: str, t: Optional[float]) -> None:
        super().__init__()
        self.run_key = run_key
        self.t = t


class CellScreen(ModalScreen[None]):
    """One cell whole (control characters shown escaped), scrollable."""

    BINDINGS = [Binding("escape,q,v", "dismiss", "close")]
    DEFAULT_CSS = """
    CellScreen { align: center middle; }
    CellScreen > VerticalScroll { width: 90%; height: 80%; border: round $accent; background: $panel; padding: 0 1; }
    """

    def __init__(self, column: str, value: Any) -> None:
        super().__init__()
        self.column = column
        self.value = value

    def compose(self) -> ComposeResult:
        with VerticalScroll() as v:
            v.border_title = visible(self.column)
            v.border_subtitle = "esc closes"
            yield Static(Text(visible_lines(cell_text(self.value))), id="cell-text")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class HistoryScreen(ModalScreen[Optional[str]]):
    """The queries run before (newest first), filtered by the words typed; Enter takes one."""

    BINDINGS = [Binding("escape", "cancel", "close")]
    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical { width: 90%; height: 80%; border: round $accent; background: $panel; }
    HistoryScreen OptionList { height: 1fr; }
    """

    def __init__(self, queries: list[str]) -> None:
        super().__init__()
        self.queries = queries  # newest first
        self.shown: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical() as v:
            v.border_title = "query history"
            v.border_subtitle = "type to filter · enter takes it · esc closes"
            yield Input(placeholder="filter: words the query contains", id="history-filter")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one(Input).focus()

    def _fill(self, text: str) -> None:
        words = text.lower().split()
        self.shown = [q for q in self.queries if all(w in q.lower() for w in words)]
        ol = self.query_one(OptionList)
        ol.clear_options()
        ol.add_options([Text(visible(" ".join(q.split()))[:200]) for q in self.shown])
        if self.shown:
            ol.highlighted = 0

    @on(Input.Changed, "#history-filter")
    def _changed(self, ev: Input.Changed) -> None:
        self._fill(ev.value)

    def on_key(self, ev) -> None:
        if ev.key in ("down", "up") and self.shown:
            ol = self.query_one(OptionList)
            ol.action_cursor_down() if ev.key == "down" else ol.action_cursor_up()
            ev.stop()

    @on(Input.Submitted, "#history-filter")
    def _submitted(self) -> None:
        hi = self.query_one(OptionList).highlighted
        self.dismiss(self.shown[hi] if hi is not None and self.shown else None)

    @on(OptionList.OptionSelected)
    def _selected(self, ev: OptionList.OptionSelected) -> None:
        self.dismiss(self.shown[ev.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


class ExportScreen(ModalScreen[Optional[str]]):
    """The file to export the result to (``.csv`` or ``.parquet``)."""

    BINDINGS = [Binding("escape", "cancel", "close")]
    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical { width: 80%; height: auto; border: round $accent; background: $panel; }
    """

    def __init__(self, default: str) -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical() as v:
            v.border_title = "export the result"
            v.border_subtitle = "a .csv or .parquet file · enter writes · esc closes"
            yield Input(value=self.default, id="export-path")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submitted(self, ev: Input.Submitted) -> None:
        self.dismiss(ev.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SqlScreen(Screen):
    """Editor above, results below, the schema on the left (wide terminals, or ctrl+t)."""

    #: the title of its key list (F1): "SQL keys"
    HELP_NAME = "SQL"

    BINDINGS = [
        Binding("f5,ctrl+j", "run_query", "run", key_display="F5", priority=True),
        Binding("f8", "cancel_query", "cancel", key_display="F8", priority=True),
        Binding("f7", "history", "history", key_display="F7", priority=True),
        Binding("f4", "export", "export", key_display="F4", priority=True),
        Binding("ctrl+t", "toggle_schema", "schema", key_display="^t", priority=True),
        # (^r and ^e out of the footer: at 80 columns it ran out before F10 back; F1 lists them)
        Binding("ctrl+r", "focus_results", "results", key_display="^r", priority=True, show=False),
        Binding("ctrl+e", "focus_editor", "editor", key_display="^e", priority=True, show=False),
        Binding("v", "open_cell", "cell", show=False),
        Binding("f10", "back", "back", key_display="F10"),
        # priority: the editor's text area stops every Esc it gets (it closes its completion list)
        Binding("escape", "back_unless_editing", "back", show=False, priority=True),
    ]

    DEFAULT_CSS = """
    SqlScreen #sql-schema { width: 34; border: round $primary 40%; }
    SqlScreen #sql-schema Tree { height: 1fr; }
    SqlScreen #sql-schema-note { height: auto; max-height: 7; padding: 0 1; border-top: solid $primary 40%; }
    SqlScreen #sql-main { width: 1fr; }
    SqlScreen SqlEditor { height: 8; }
    SqlScreen #sql-status { height: 1; padding: 0 1; background: $panel; }
    SqlScreen #sql-results { height: 1fr; }
    """

    def __init__(
        self,
        run_key: Optional[str] = None,
        history: Optional[QueryHistory] = None,
        buffer: Optional[QueryBuffer] = None,
        timeout_s: Optional[float] = None,
        held_elsewhere: Optional[Path] = None,
    ) -> None:
        super().__init__()
        self.run_key = run_key
        #: seconds a query may run (``--sql-timeout``), None: until F8
        self.timeout_s = timeout_s
        #: the database file when another process holds it: queries go to that process's socket, a
        #: page at a time from a cursor there (the app's own connection is a snapshot copy)
        self.held_elsewhere = held_elsewhere
        self.history = history or QueryHistory()
        self.buffer = buffer or QueryBuffer()
        self.saved_text = ""
        self.result: Optional[Paged] = None
        self.running: Optional[Paged] = None
        self.rows: list[tuple] = []
        #: a page is being fetched (the next is asked for when it is in)
        self.fetching = False
        self.sql = ""
        self.words: list[str] = []
        self.show_schema: Optional[bool] = None  # None: automatic (shown at 120 columns and more)
        #: the status line shows the keys' hint (redrawn for the new width on a resize)
        self.hint_shown = False

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="sql-schema"):
                yield Tree("schema", id="sql-tree")
                yield Static(id="sql-schema-note")
            with Vertical(id="sql-main"):
                yield SqlEditor(language="sql", text=scoped_query(self.run_key), word_completer=self._complete)
                yield Static(id="sql-status")
                yield ResultsGrid(id="sql-results")
        yield Footer()

    def on_mount(self) -> None:
        self._say_hint()
        self._apply_layout()
        self._load_schema()
        if not self.run_key:  # the query left open last time (a crash, a closed terminal)
            self._restore_buffer()
        self.set_interval(BUFFER_SAVE_S, self.save_buffer)
        self.query_one(SqlEditor).focus()

    def on_resize(self) -> None:
        self._apply_layout()

    def _say_hint(self) -> None:
        """The keys under the editor: all of them where the line holds them, else the results' own
        (the footer has the rest)."""
        room = (self.query_one("#sql-status", Static).size.width or self.size.width or 80) - 2
        self._say(next((h for h in SQL_HINTS if len(h) <= room), SQL_HINTS[-1]))
        self.hint_shown = True

    def _apply_layout(self) -> None:
        show = self.show_schema if self.show_schema is not None else (self.size.width or 80) >= 120
        self.query_one("#sql-schema").display = show
        self.query_one(SqlEditor).styles.height = 8 if (self.size.height or 24) >= 30 else 5
        if self.hint_shown:  # the hint for the status line's new width (unless replaced since)
            self.call_after_refresh(self._resay_hint)

    def _resay_hint(self) -> None:
        if self.hint_shown:
            self._say_hint()

    def _say(self, text: str, error: bool = False) -> None:
        self.hint_shown = False
        self.query_one("#sql-status", Static).update(Text(visible(text), style="bold red" if error else "dim"))

    # ------------------------------------------------------------------ schema and completion

    @work(thread=True, exclusive=True, group="sql-schema", exit_on_error=False)
    def _load_schema(self) -> None:
        try:
            conn = app_connection(self.app)
            self.post_message(SchemaLoaded(schema_entries(conn), completion_words(conn)))
            ready_the_rule()
        except Exception as e:  # noqa: BLE001 - shown on the screen, never a crash
            self.post_message(SchemaLoaded([], [], f"{type(e).__name__}: {e}"))

    @on(SchemaLoaded)
    def _schema_loaded(self, msg: SchemaLoaded) -> None:
        if msg.error:
            self._say(f"the schema cannot be read: {msg.error}", error=True)
            return
        self.words = msg.words
        tree = self.query_one(Tree)
        tree.clear()
        tree.root.expand()
        for kind in ("view", "table"):
            branch = tree.root.add(Text("ready-made views" if kind == "view" else "tables", style="bold"), expand=True)
            for e in (e for e in msg.entries if e["kind"] == kind):
                label = Text(e["name"], style="cyan")
                about = self._note(e["name"], kind, e["meaning"])
                node = branch.add(label, data=about)
                if e["meaning"]:
                    node.add_leaf(Text(e["meaning"], style="dim italic"), data=about)
                for col, ty, meaning in e["columns"]:
                    t = Text(col)
                    t.append(f" {ty.lower()}", style="dim")
                    if meaning:
                        t.append(f" {meaning}", style="dim italic")
                    node.add_leaf(t, data=self._note(f"{e['name']}.{col}", ty.lower(), meaning))
        self._show_note(self._note("schema", "", "tables and ready-made views: ^t (or a click), ↑↓, enter opens"))

    @staticmethod
    def _note(name: str, what: str, meaning: str) -> Text:
        """The whole of a schema entry, under the tree (the tree's lines are cut at its width)."""
        t = Text(name, style="bold")
        if what:
            t.append(f" {what}", style="dim")
        if meaning:
            t.append(f"\n{meaning}", style="italic")
        return t

    def _show_note(self, note: Text) -> None:
        self.query_one("#sql-schema-note", Static).update(note)

    @on(Tree.NodeHighlighted, "#sql-tree")
    def _schema_highlighted(self, ev: Tree.NodeHighlighted) -> None:
        if isinstance(ev.node.data, Text):
            self._show_note(ev.node.data)

    def _complete(self, prefix: str) -> list[tuple[str, str]]:
        """The editor's word completer: names starting with ``prefix`` (case-insensitive)."""
        p = prefix.lower()
        if not p:
            return []
        return [(w, w) for w in self.words if w.lower().startswith(p) and w != prefix][:MAX_COMPLETIONS]

    # ------------------------------------------------------------------ running a query

    def action_run_query(self) -> None:
        sql = self.query_one(SqlEditor).text.strip()
        if not sql:
            self._say("nothing to run: type a query", error=True)
            return
        if self.running is not None:
            self._say("a query is running: F8 cancels it", error=True)
            return
        if self.result is not None:
            self.result.close()
            self.result = None
        self._close_completions()  # (it stayed over the editor)
        self.sql = sql
        self.history_add(sql)
        self._say("running… (F8 cancels)")
        self._run(sql)

    def history_add(self, sql: str) -> None:
        self._write_history(sql)
        self.save_buffer()

    def save_buffer(self) -> None:
        """Save the editor's text when it changed since the last save (every minute, on each run)."""
        text = self.query_one(SqlEditor).text
        if text != self.saved_text and text.strip():
            self.saved_text = text
            self._write_buffer(text)

    @work(thread=True, group="sql-buffer", exit_on_error=False)
    def _write_buffer(self, text: str) -> None:
        try:
            self.buffer.save(text)
        except OSError as e:
            self.post_message(Said(f"the query was not saved: {e}", error=True))

    @work(thread=True, group="sql-buffer", exit_on_error=False)
    def _restore_buffer(self) -> None:
        try:
            text = self.buffer.load()
        except OSError as e:
            self.post_message(Said(f"the saved query cannot be read: {e}", error=True))
            return
        if text.strip():
            self.post_message(BufferRestored(text))

    @on(BufferRestored)
    def _buffer_restored(self, msg: BufferRestored) -> None:
        editor = self.query_one(SqlEditor)
        if editor.text == scoped_query(None):  # (nothing typed yet)
            editor.text = msg.text
            self.saved_text = msg.text
            self._say("the query left open last time is back (F7: the history)")

    @work(thread=True, group="sql-history", exit_on_error=False)
    def _write_history(self, sql: str) -> None:
        try:
            self.history.add(sql)
        except OSError as e:
            self.post_message(Said(f"history not saved: {e}", error=True))

    @work(thread=True, exclusive=True, group="sql-run", exit_on_error=False)
    def _run(self, sql: str) -> None:
        res: Optional[Paged] = None
        try:
            if self.held_elsewhere is not None:
                res = HolderPagedResult(self.held_elsewhere, timeout_s=self.timeout_s)
            else:
                res = PagedResult(app_connection(self.app), timeout_s=self.timeout_s)
            self.post_message(SqlStarted(res))
            try:
                res.run(sql)
            except ConnectionError:
                if not isinstance(res, HolderPagedResult):
                    raise
                # the holder is gone (or does not answer): the app's snapshot copy answers, said so
                res.close()
                res = PagedResult(app_connection(self.app), timeout_s=self.timeout_s)
                self.post_message(SqlStarted(res))
                res.run(sql)
            self.post_message(SqlPage(res, res.next_page(), True))
        except Exception as e:  # noqa: BLE001 - a refused or failing query is said on the screen
            if res is not None:
                res.close()
            self.post_message(SqlPage(res, [], True, self._why(res, e)))

    def _why(self, res: Optional[Paged], e: Exception) -> str:
        """A failed query's line: stopped by --sql-timeout, cancelled, refused or failing; through
        the holder, its own line."""
        if isinstance(res, PagedResult) and res.timed_out:
            return f"stopped after {self.timeout_s:g} s (--sql-timeout)"
        if "interrupt" in type(e).__name__.lower():
            return f"cancelled: {e}"
        if isinstance(e, ConnectionError) and self.held_elsewhere is not None:
            return f"the process holding the database does not answer: {e}"
        if isinstance(e, RuntimeError) and isinstance(res, HolderPagedResult):
            return str(e)  # the holder's line
        return f"{type(e).__name__}: {e}"

    @on(SqlStarted)
    def _started(self, msg: SqlStarted) -> None:
        self.running = msg.result

    def action_cancel_query(self) -> None:
        if self.running is None:
            self._say("no query is running")
            return
        self.running.interrupt()

    @on(SqlPage)
    def _page(self, msg: SqlPage) -> None:
        table = self.query_one("#sql-results", ResultsGrid)
        if msg.first:
            self.running = None
            if msg.error:
                self._say(msg.error.splitlines()[0] if msg.error else "", error=True)
                return
            if msg.result is None:
                return
            self.result = msg.result
            self.rows = []
            self.fetching = False
            table.clear(columns=True)
            table.add_columns(msg.result.columns)
        elif msg.result is not self.result:
            return  # a page of a result since replaced
        else:
            self.fetching = False
        if msg.error:
            self._say(msg.error.splitlines()[0], error=True)
            return
        self.rows.extend(msg.rows)
        table.add_rows(msg.rows)
        self._status()
        self._fetch_ahead(table.cursor_row)

    def _status(self) -> None:
        res = self.result
        if res is None:
            return
        more = " so far (more as you scroll)" if not res.done else ""
        via = " · from the holding process" if isinstance(res, HolderPagedResult) else ""
        if self.held_elsewhere is not None and isinstance(res, PagedResult):
            via = " · from the snapshot copy (the holding process does not answer)"
        self._say(
            f"{len(self.rows):,} rows{more} · {len(res.columns)} columns{via} · F4 export · v cell · enter replay"
        )

    @on(ResultsGrid.CellHighlighted, "#sql-results")
    def _highlighted(self, ev: ResultsGrid.CellHighlighted) -> None:
        self._fetch_ahead(ev.coordinate.row)

    def _fetch_ahead(self, row: int) -> None:
        """The next page, when the cursor at ``row`` is within :data:`PREFETCH_ROWS` of the end."""
        res = self.result
        if res is not None and not res.done and not self.fetching and row >= len(self.rows) - PREFETCH_ROWS:
            self.fetching = True  # one fetch at a time: pages come in order
            self.fetch_more(res)

    @work(thread=True, exclusive=True, group="sql-page", exit_on_error=False)
    def fetch_more(self, res: Paged) -> None:
        try:
            self.post_message(SqlPage(res, res.next_page(), False))
        except Exception as e:  # noqa: BLE001 - a failing fetch is said on the screen
            res.done = True  # (not asked again at each cursor move: the rows so far stay)
            self.post_message(SqlPage(res, [], False, self._why(res, e)))

    # ------------------------------------------------------------------ a row, a cell

    def _current(self) -> Optional[tuple[int, int]]:
        table = self.query_one("#sql-results", ResultsGrid)
        if self.result is None or not self.rows:
            return None
        c = table.cursor_coordinate
        return (c.row, c.column) if 0 <= c.row < len(self.rows) else None

    def action_open_cell(self) -> None:
        at = self._current()
        if at is None or self.result is None:
            return
        r, c = at
        self.app.push_screen(CellScreen(self.result.columns[c], self.rows[r][c]))

    @on(ResultsGrid.CellSelected, "#sql-results")
    def _selected(self, ev: ResultsGrid.CellSelected) -> None:
        """Enter: the replay at the row's event when it names a run and an event, else the cell whole."""
        res = self.result
        at = self._current()
        if res is None or at is None:
            return
        row = self.rows[at[0]]
        if "run_key" in res.columns and "event_id" in res.columns:
            rk, eid = row[res.columns.index("run_key")], row[res.columns.index("event_id")]
            if rk and eid:
                self._replay_at(str(rk), str(eid))
                return
        self.action_open_cell()

    @work(thread=True, group="sql-replay", exit_on_error=False)
    def _replay_at(self, run_key: str, event_id: str) -> None:
        try:
            self.post_message(ReplayAt(run_key, event_time(app_connection(self.app), run_key, event_id)))
        except Exception as e:  # noqa: BLE001 - said on the screen
            self.post_message(Said(f"cannot open the replay: {type(e).__name__}: {e}", error=True))

    @on(ReplayAt)
    def _open_replay(self, msg: ReplayAt) -> None:
        self.app.open_replay_at(msg.run_key, msg.t)  # type: ignore[attr-defined]

    @on(Said)
    def _said(self, msg: Said) -> None:
        self._say(msg.text, msg.error)

    # ------------------------------------------------------------------ history, export

    def action_history(self) -> None:
        def take(q: Optional[str]) -> None:
            if q:
                self.query_one(SqlEditor).text = q
                self.query_one(SqlEditor).focus()

        self.app.push_screen(HistoryScreen(list(reversed(self.history.load()))), take)

    def action_export(self) -> None:
        if not self.sql or self.result is None:
            self._say("nothing to export: run a query first", error=True)
            return

        def write(path: Optional[str]) -> None:
            if path:
                fmt = "parquet" if path.lower().endswith((".parquet", ".pq")) else "csv"
                self._say(f"writing {path}…")
                self._export(self.sql, path, fmt)

        self.app.push_screen(ExportScreen("edgetui-result.csv"), write)

    @work(thread=True, group="sql-export", exit_on_error=False)
    def _export(self, sql: str, path: str, fmt: str) -> None:
        try:
            if self.app.is_web:  # a browser tab (edgetui serve): the browser downloads it, no file is left here
                name = Path(path).name or "edgetui-result.csv"
                n, data = export_bytes(app_connection(self.app), sql, name, fmt)
                self.app.call_from_thread(
                    self.app.deliver_binary,
                    io.BytesIO(data),
                    save_filename=name,
                    open_method="download",
                    name="the export",
                )
                self.post_message(Said(f"{n:,} rows: the browser downloads {name} ({fmt})"))
                return
            n = export_result(app_connection(self.app), sql, path, fmt)
            # (held elsewhere: run on the app's snapshot copy, not through the holder; said so)
            copy = " from the snapshot copy taken when the app opened" if self.held_elsewhere is not None else ""
            self.post_message(Said(f"{n:,} rows written to {path} ({fmt}){copy}"))
        except Exception as e:  # noqa: BLE001 - said on the screen
            self.post_message(Said(f"export failed: {type(e).__name__}: {e}", error=True))

    # ------------------------------------------------------------------ focus, back

    def action_toggle_schema(self) -> None:
        """Show the schema and move into it, or hide it and go back to the editor."""
        self.show_schema = not self.query_one("#sql-schema").display
        self._apply_layout()
        if self.show_schema:
            self.query_one(Tree).focus()
        else:
            self.query_one(SqlEditor).focus()

    def action_focus_results(self) -> None:
        self.query_one("#sql-results").focus()

    def action_focus_editor(self) -> None:
        self.query_one(SqlEditor).focus()

    def action_back_unless_editing(self) -> None:
        """Esc leaves the screen, from the editor too, except where it closes something first: the
        editor's completion list, or its find / go-to line (those get the key)."""
        editor = self.query_one(SqlEditor)
        focused = self.focused
        if focused is not None and focused is not editor.text_input and editor in focused.ancestors:
            raise SkipAction()  # the editor's find or go-to input: its Esc cancels it
        if isinstance(focused, TextArea) and editor.completion_list.is_open:
            self._close_completions()
            return
        self.action_back()

    def _close_completions(self) -> None:
        """Close the editor's completion list (a priority key like F5 never reaches the editor, which
        closes it on any other key)."""
        editor = self.query_one(SqlEditor)
        editor.completion_list.is_open = False
        if editor.text_input is not None:
            editor.text_input.completer_active = None

    def action_back(self) -> None:
        if self.running is not None:
            self.running.interrupt()
        if self.result is not None:
            self.result.close()
        self.app.pop_screen()
