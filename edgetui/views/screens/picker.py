"""Run picker: every recorded run, filtered as you type; Enter opens the replay."""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from edgetui.views.widgets.ordered_input import OrderedInput

from edgetui.names import abbreviate_all, distinguishing_width
from edgetui.store import queries as store
from edgetui.store.run_groups import RunIdGroup, group_by_run_id
from edgetui.views.screens.replay_parts import HelpScreen

from edgetui.views.widgets.fmt import (
    STATUS_STYLE,
    fmt_best,
    fmt_count,
    fmt_pct,
    fmt_score,
    fmt_subs,
    fmt_usd,
    fmt_utc,
    plural,
)
from edgetui.control_chars import visible
from edgetui.quantities import lower_is_better

__all__ = ["PickerScreen"]


class RunsLoaded(Message):
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        super().__init__()


PICKER_COLUMNS = ("run id", "task", "best", "pass", "status", "model", "subs", "events", "cost", "started (UTC)")
#: the columns left out first when the terminal is too narrow for all of them (the rest stay)
_DROP_ORDER = ("started (UTC)", "events", "cost", "subs", "model")
_CELL_PAD = 2  # DataTable's cell padding, both sides together
#: what the best column's two quantities are (said under the table: the header stays narrow)
BEST_NOTE = "best: a score task's score (↓: lower is better) or pass rate (%)"
#: the folded rows' mean: not a raw score but each task's best on EdgeBench's 0–100 scale
GROUP_MEAN_LABEL = "mean 0–100"
GROUP_MEAN_NOTE = "mean 0–100: the tasks' best, scores normalised, pass rates × 100"


def fit_columns(widths: dict[str, int], avail: int, min_id: int = 14) -> tuple[list[str], int]:
    """Which of the picker's columns fit in ``avail`` cells, and the run id column's width: the
    columns of :data:`_DROP_ORDER` are kept, most needed first, where they fit; when even the rest
    do not, the run id is cut (down to ``min_id``). ``widths`` maps each column label to its widest cell."""

    def total(cs: list[str]) -> int:
        return sum(widths[c] + _CELL_PAD for c in cs)

    keep = [c for c in PICKER_COLUMNS if c not in _DROP_ORDER]
    for c in reversed(_DROP_ORDER):  # the most needed of the optional columns first, each if it fits
        if total(keep + [c]) <= avail:
            keep.append(c)
    cols = [c for c in PICKER_COLUMNS if c in keep]
    id_w = widths["run id"]
    over = total(cols) - avail
    if over > 0:
        id_w = max(min_id, id_w - over)
    return cols, id_w


class FilterInput(OrderedInput):
    """The picker's filter: Enter submits (opens the selected run), said in the footer as the
    screen's own Enter was (the input's Enter binding, hidden, shadowed it).
    Its editing keys act in order with the characters of a burst (:class:`OrderedInput`)."""

    BINDINGS = [Binding("enter", "submit", "open run", key_display="enter")]


#: the picker's keys (F1: the filter has the focus, so ``?`` is a character of it)
PICKER_KEYS = [
    ("type", "filter the runs: words match run id, task, host, model, agent, status"),
    ("↑ / ↓, pgup / pgdn", "choose a run"),
    ("enter", "replay the chosen run"),
    ("esc", "clear the filter; on an empty filter, quit"),
    ("f5", "read the list again"),
    ("f6", "SQL: query the database (ready-made views, history, export)"),
    ("f2", "the live runs (when supervising: edgetui watch)"),
    ("ctrl+g", "fold the tasks by SForge run id (again: unfold)"),
    ("ctrl+p", "command palette: the leaderboard, the moments queue, …"),
    ("F1", "these keys (on the other screens ? too)"),
]


class PickerScreen(Screen):
    """Type to filter (words match run key, model, agent, status); ↑/↓ choose; Enter opens."""

    BINDINGS = [
        Binding("down", "move(1)", "down", show=False),
        Binding("up", "move(-1)", "up", show=False),
        Binding("pagedown", "move(10)", "page down", show=False),
        Binding("pageup", "move(-10)", "page up", show=False),
        # not a priority binding: those run as the app receives the key, before the focused filter has
        # handled the characters typed with it (one terminal read: a fast typist, a paste), which
        # opened the row selected before the filter; in the filter, Enter is its Submitted, in order
        Binding("enter", "open", "open run", key_display="enter"),
        Binding("escape", "clear_or_quit", "clear / quit", key_display="esc"),
        Binding("f5", "reload", "reload"),
        Binding("f1", "help", "keys"),
        Binding("f6", "sql", "SQL", show=False),  # (in F1 keys; the footer fits 80 columns)
        # (a control key: the filter takes every printable one)
        Binding("ctrl+g", "fold_run_ids", "by run id", key_display="^g"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self.shown: list[dict[str, Any]] = []
        #: tasks folded under their SForge run id (ctrl+g): one row per (host, run id)
        self.folded = False
        self.groups: list[RunIdGroup] = []

    def compose(self) -> ComposeResult:
        yield Static(id="picker-title")
        yield FilterInput(
            placeholder="type to filter runs: words match run id, task, host, model, agent, status", id="filter"
        )
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Static(id="picker-empty")
        yield Footer()

    def on_mount(self) -> None:
        t = self.query_one(DataTable)
        t.add_columns(*PICKER_COLUMNS)
        self.query_one("#picker-empty").display = False
        title = Text()
        title.append("edgetui ", style="bold bright_magenta")
        title.append("· runs · ", style="dim")
        title.append(visible(str(getattr(self.app, "db_path", ""))), style="dim")
        self.query_one("#picker-title", Static).update(title)
        self.query_one("#filter", Input).focus()
        self.reload()

    @work(thread=True, exclusive=True, group="picker-load", exit_on_error=False)
    def reload(self) -> None:
        try:
            rows = store.list_runs(self.app.conn)  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - shown, never crashes the app
            self.app.call_from_thread(self.notify, f"cannot list runs: {e}", severity="error")
            rows = []
        self.post_message(RunsLoaded(rows))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(PICKER_KEYS, title="Run picker keys"))

    def action_sql(self) -> None:
        """``F6``: the SQL screen."""
        self.app.open_sql()  # type: ignore[attr-defined]

    def action_reload(self) -> None:
        self.reload()

    def on_screen_resume(self) -> None:
        """Back on top (e.g. from the runs screen or a replay): the list may have grown or changed."""
        if self.is_mounted:
            self.reload()

    @on(RunsLoaded)
    def _on_runs(self, msg: RunsLoaded) -> None:
        self.rows = msg.rows
        empty = self.query_one("#picker-empty", Static)
        if not msg.rows:
            empty.display = True
            note = getattr(self.app, "empty_note", None)
            empty.update(
                Text(note or "No runs recorded in this database yet — loading sample runs…", style="dim italic")
            )
            self.app.handle_empty()  # type: ignore[attr-defined]
        else:
            empty.display = False
        self._fill()

    def _fill(self) -> None:
        keep = self.selected_run_key
        text = self.query_one("#filter", Input).value
        self._shown_for = text
        self.shown = store.filter_runs(self.rows, text)
        if self.folded:
            self._fill_groups()
            return
        t = self.query_one(DataTable)
        rows = []
        for r in self.shown:
            st = r.get("status") or "?"
            # a task's best in its own quantity (a pass-rate task's pass rate), as `edgetui runs` and the runs screen
            best = fmt_best(r.get("best_score"), r.get("best_pass_rate"), r.get("score_task"))
            if r.get("score_task") and lower_is_better(r) and best != "–":
                best = "↓" + best  # a minimised score (a route's length): lower is better
            subs = fmt_subs(r.get("agent_submissions"), r.get("auto_submissions"), r.get("game_sessions"))
            cost = r.get("cost_usd") if r.get("cost_usd") is not None else r.get("stated_cost_usd")
            rows.append(
                (
                    r["run_key"],
                    [
                        Text(visible(str(r.get("run_id"))), style="bold"),
                        Text(visible(str(r.get("task_id"))), style="cyan"),
                        Text(best, style="green", justify="right"),
                        Text(fmt_pct(r.get("best_pass_rate")), justify="right"),
                        Text(visible(st), style=STATUS_STYLE.get(st, "")),
                        Text(visible(str(r.get("model") or r.get("agent") or "–"))),
                        Text(subs, justify="right"),
                        Text(fmt_count(r.get("n_events")), justify="right"),
                        Text(fmt_usd(cost), style="yellow", justify="right"),
                        Text(fmt_utc(r.get("started_at"))),
                    ],
                )
            )
        # explicit column widths from the cells: the table never depends on deferred auto-width
        # (under load it could keep the header widths and cut every value); a narrow terminal
        # leaves out the least needed columns and cuts run ids in the middle instead of scrolling
        widths = {
            label: max([len(label)] + [cells[i].cell_len for _, cells in rows])
            for i, label in enumerate(PICKER_COLUMNS)
        }
        avail = (t.size.width or self.size.width or 160) - 2  # the vertical scrollbar
        ids = [cells[0].plain for _, cells in rows]
        # a run id is cut no shorter than what tells it apart from the others (names before numbers)
        cols, id_w = fit_columns(widths, avail, min_id=distinguishing_width(ids, floor=14))
        short_ids = abbreviate_all(ids, id_w)
        idx = [PICKER_COLUMNS.index(c) for c in cols]
        t.clear(columns=True)
        for c in cols:
            t.add_column(c, width=id_w if c == "run id" else widths[c])
        for (key, cells), short in zip(rows, short_ids):
            shown = [cells[i] for i in idx]
            if id_w < widths["run id"]:
                shown[0] = Text(short, style="bold")
            t.add_row(*shown, key=key)
        if keep is not None:  # a reload keeps the selected run selected
            for i, (key, _) in enumerate(rows):
                if key == keep:
                    t.move_cursor(row=i, animate=False)
                    break
        t.border_subtitle = BEST_NOTE
        t.border_title = f"runs {len(self.shown):,}" + (
            f" of {len(self.rows):,}" if len(self.shown) != len(self.rows) else ""
        )

    def _fill_groups(self) -> None:
        """One row per (host, SForge run id) of the runs shown: its tasks, how many ended, their mean
        score (0–100) and models; ``n done`` counts the ended tasks, finished or aborted, as the runs screen's
        ``3 tasks, 2 done`` does (:func:`edgetui.store.run_groups.group_by_run_id`)."""
        t = self.query_one(DataTable)
        keep = self._selected_group()
        self.groups = group_by_run_id(self.shown)
        rows = []
        for g in self.groups:
            rid = g.run_id if g.host in ("", "local") else f"{g.host}:{g.run_id}"
            rows.append(
                [
                    Text(visible(rid), style="bold"),
                    Text(plural(g.n_tasks, "task"), justify="right"),
                    Text(f"{g.n_finished} done", justify="right"),
                    Text(fmt_score(g.mean_score), style="green", justify="right"),
                    Text(visible(" ".join(g.models) or "–")),
                    Text(fmt_utc(g.started_at)),
                ]
            )
        labels = ("run id", "tasks", "done", GROUP_MEAN_LABEL, "models", "started (UTC)")
        widths = {lb: max([len(lb)] + [r[i].cell_len for r in rows]) for i, lb in enumerate(labels)}
        avail = (t.size.width or self.size.width or 160) - 2
        fixed = sum(widths[lb] + _CELL_PAD for lb in labels[1:4]) + widths["run id"] + _CELL_PAD
        id_w = widths["run id"]
        if fixed > avail:  # names keep the part that tells them apart
            id_w = max(distinguishing_width([r[0].plain for r in rows], floor=14), id_w - (fixed - avail))
        t.clear(columns=True)
        used = 0
        cols = []
        for i, lb in enumerate(labels):
            w = id_w if i == 0 else widths[lb]
            if i >= 4 and used + w + _CELL_PAD > avail:
                break
            cols.append(i)
            used += w + _CELL_PAD
            t.add_column(lb, width=w)
        ids = abbreviate_all([r[0].plain for r in rows], id_w)
        for g, r, short in zip(self.groups, rows, ids):
            cells = [r[i] for i in cols]
            cells[0] = Text(short, style="bold")
            t.add_row(*cells, key="group:" + g.key)
        for i, g in enumerate(self.groups):
            if g.key == keep:
                t.move_cursor(row=i, animate=False)
                break
        t.border_title = f"{plural(len(self.groups), 'run id')} · {plural(len(self.shown), 'task')} · ^g unfolds"
        t.border_subtitle = GROUP_MEAN_NOTE

    def _selected_group(self) -> Optional[str]:
        t = self.query_one(DataTable)
        if not self.groups or not (0 <= t.cursor_row < len(self.groups)):
            return None
        return self.groups[t.cursor_row].key

    def action_fold_run_ids(self) -> None:
        """Fold the tasks under their SForge run id (again: one row per task)."""
        self.folded = not self.folded
        self.groups = []
        self._fill()

    def on_resize(self) -> None:
        if self.rows:
            self.call_after_refresh(self._fill)

    @on(Input.Changed, "#filter")
    def _on_filter(self) -> None:
        self._fill()

    @on(Input.Submitted, "#filter")
    def _on_filter_enter(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_open()

    def action_move(self, n: int) -> None:
        t = self.query_one(DataTable)
        if t.row_count:
            t.move_cursor(row=max(0, min(t.row_count - 1, t.cursor_row + n)))

    @property
    def selected_run_key(self) -> Optional[str]:
        t = self.query_one(DataTable)
        if self.folded:
            return None
        if not t.row_count or not (0 <= t.cursor_row < len(self.shown)):
            return None
        return self.shown[t.cursor_row]["run_key"]

    def action_open(self) -> None:
        if self.query_one("#filter", Input).value != getattr(self, "_shown_for", None):
            self._fill()  # Enter typed right after the filter: apply it before choosing
        if self.folded:  # a run id: its tasks, unfolded
            t = self.query_one(DataTable)
            if self.groups and 0 <= t.cursor_row < len(self.groups):
                g = self.groups[t.cursor_row]
                self.folded = False
                self.query_one("#filter", Input).value = g.run_id
                self._fill()
            return
        rk = self.selected_run_key
        if rk:
            self.app.open_run(rk)  # type: ignore[attr-defined]

    @on(DataTable.RowSelected)
    def _on_row(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_clear_or_quit(self) -> None:
        f = self.query_one("#filter", Input)
        if f.value:
            f.value = ""
        else:
            self.app.exit()
