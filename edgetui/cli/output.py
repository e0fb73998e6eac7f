"""The command line's output: a query run read-only (or on a snapshot while another process
writes), and its rows printed as an aligned table (status coloured on a terminal), CSV or JSON.
On a terminal, control characters in run content are shown escaped (:mod:`edgetui.control_chars`);
a file or a pipe gets the bytes. No Textual; used by :mod:`edgetui.cli.main` and :mod:`edgetui.cli.analysis_commands`."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import Optional

from edgetui.control_chars import visible, visible_lines  # (the CLI's escaper, read here by cli*.py)


def for_terminal(text: str, stream=None) -> str:
    """``text`` as it may be written to ``stream`` (default stdout): control characters escaped
    (:func:`~edgetui.control_chars.visible_lines`) when it is a terminal; unchanged for a file or a
    pipe (machine formats keep their bytes there)."""
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return visible_lines(text.replace("\r\n", "\n")) if tty else text  # (CSV's CRLF line ends: plain ones)


def query_read_only(
    db: Path,
    sql: str,
    snapshot: bool = False,
    params=None,
    memory_limit: Optional[str] = None,
    timeout_s: Optional[float] = None,
):
    """Run read-only SQL: own read-only connection, else through the holder, else a snapshot copy.
    ``memory_limit`` (e.g. ``"32MB"``) bounds DuckDB's buffer pool on its own connection: a listing
    that reads a little of many blocks (the runs' transcript flags) then keeps none of them; a query
    that needs more is run again without it."""
    from edgetui.store.database import DatabaseBusy, ask_holder, busy_because, open_db, run_query, snapshot_copy
    from edgetui.store.holder_socket import HolderEnded
    import duckdb

    if not db.exists():
        raise FileNotFoundError(
            f"no database at {db}; record runs first with `edgetui ingest PATH` or `edgetui samples`"
        )
    try:
        conn = open_db(db, read_only=True)
    except DatabaseBusy as busy:
        try:
            return ask_holder(db, sql, params, query_timeout=timeout_s)
        except HolderEnded as gone:
            if not snapshot:
                raise RuntimeError(str(gone)) from None
            conn = snapshot_copy(db)
        except ConnectionError as why:
            if not snapshot:
                raise busy_because(busy, why) from None
            conn = snapshot_copy(db)
    try:
        if memory_limit:
            conn.execute(f"SET memory_limit = '{memory_limit}'")
        try:
            res = run_query(conn, sql, params, timeout_s)
        except duckdb.OutOfMemoryException:
            if not memory_limit:
                raise
            conn.execute("RESET memory_limit")
            res = run_query(conn, sql, params, timeout_s)
    finally:
        conn.close()
    from edgetui.store.query_cells import from_wire, to_wire

    # the values the holder would have sent (DECIMALs as numbers, NaN as null, timestamps as text):
    # every format prints the same whoever answered
    res.rows = [tuple(from_wire(to_wire(v)) for v in r) for r in res.rows]
    return res


def emit(res, fmt: str, durations: bool = True) -> None:
    """``res`` as ``fmt`` (table, csv or json). ``durations``: a table shows the duration columns
    (:data:`DURATION_COLUMNS`) as ``h:mm:ss`` (``edgetui sql`` keeps a query's columns as written)."""
    from edgetui.store.query_cells import csv_cell, json_cell

    if fmt == "json":  # numbers as numbers, BLOBs as base64 (edgetui.store.query_cells)
        rows = [dict(zip(res.columns, [json_cell(v) for v in r])) for r in res.rows]
        print(json.dumps(rows, indent=1))  # (ASCII: control characters as \u escapes)
    elif fmt == "csv":  # the same values; BLOBs as base64, lists and structs as JSON text
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(res.columns)
        for r in res.rows:
            w.writerow([csv_cell(v) for v in r])
        sys.stdout.write(for_terminal(buf.getvalue()))
    else:
        print_table(res, durations)


#: colours of a run's status in tables (left out under NO_COLOR or TERM=dumb, by Rich)
_STATUS_COLOUR = {"running": "green", "grading": "cyan", "finished": "blue", "aborted": "red", "gone": "magenta"}


#: columns of names (runs, tasks, models, hosts): given their width before the numbers' columns, and
#: cut to the part that tells each apart from the others of its column (edgetui.names), never blind
NAME_COLUMNS = {"run_id", "run_key", "task_id", "model", "host", "annotation_id", "event_id"}


#: duration columns (their unit in the name, numbers in csv / json): a table shows them as the
#: screens do, ``h:mm:ss``, under the name without its unit (``elapsed_h`` -> ``elapsed``)
DURATION_COLUMNS = {"elapsed_h": 3600.0, "elapsed_s": 1.0, "sforge_runtime_h": 3600.0, "budget_h": 3600.0}


def _duration(v, seconds_per_unit: float) -> str:
    """A duration column's number as ``h:mm:ss`` (:func:`edgetui.replay.cursor.format_elapsed`)."""
    from edgetui.replay.cursor import format_elapsed

    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
        return format_elapsed(float(v) * seconds_per_unit)
    return _short(v)


def _utc(v) -> str:
    """A time column's epoch seconds (UTC) as ``2026-12-01 18:12:24Z`` in a table (csv and json
    keep the number); anything else as :func:`_short` gives it."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and 1e8 < v < 1e11:
        import datetime as dt

        return dt.datetime.fromtimestamp(float(v), dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return _short(v)


def table_width(stream=None) -> Optional[int]:
    """The width a table is fitted to: the terminal's; for a file or a pipe none (never cut) unless
    ``COLUMNS`` is set in the environment."""
    stream = sys.stdout if stream is None else stream
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty:
        import shutil

        return shutil.get_terminal_size().columns
    cols = os.environ.get("COLUMNS", "")
    return int(cols) if cols.isdigit() and int(cols) > 0 else None


def fit_table(cols: list[str], cells: list[list[str]], width: Optional[int], gap: int = 2):
    """Fit a table's text cells to ``width`` cells (``None``: whole). Returns the columns kept, their
    widths and the cells (cut where needed), the columns cut and those left out. Names
    (:data:`NAME_COLUMNS`) keep the part that tells them apart; other long text columns are cut
    first (down to 8 cells), then names (each to no fewer cells than still tell its values apart,
    at least 12), then the rightmost columns that are not names are left out, and last names."""
    from edgetui.names import distinguishing_width, shared_ends, abbreviate

    longest = [max([len(row[j]) for row in cells] + [len(c)]) for j, c in enumerate(cols)]
    if width is None:
        return cols, longest, cells, [], []
    names = [j for j, c in enumerate(cols) if c in NAME_COLUMNS]
    need = {j: max(len(cols[j]), distinguishing_width([row[j] for row in cells], floor=12)) for j in names}
    widths = list(longest)
    shown = list(range(len(cols)))

    def total() -> int:
        return sum(widths[j] for j in shown) + gap * (len(shown) - 1)

    for j in sorted((j for j in shown if j not in names and longest[j] > 16), key=lambda j: -longest[j]):
        if total() <= width:
            break
        widths[j] = max(8, len(cols[j]), widths[j] - (total() - width))
    for j in sorted(names, key=lambda j: -(longest[j] - need[j])):  # names, to what tells them apart
        if total() <= width:
            break
        widths[j] = max(need[j], widths[j] - (total() - width))
    for j in reversed([j for j in shown if j not in names]):  # then numbers and flags give way to names
        if total() <= width or len(shown) == 1:
            break
        shown.remove(j)
    while total() > width and len(shown) > 1:
        shown.pop()
    # names cut by a cell or two while the rightmost number fits: it gives way when that makes every
    # name whole (a run's task read `judge_…mo_sum` beside its stated dollars)
    cut_by = sum(longest[j] - widths[j] for j in shown if j in names)
    last = next((j for j in reversed(shown) if j not in names), None)
    if 0 < cut_by <= 4 and last is not None and len(shown) > 1 and width - total() + widths[last] + gap >= cut_by:
        shown.remove(last)
    for j in shown:  # what leaving columns out freed goes back to the cut columns, left to right
        if widths[j] < longest[j] and total() < width:
            widths[j] = min(longest[j], widths[j] + width - total())
    left_out = [cols[j] for j in range(len(cols)) if j not in shown]
    cut = [cols[j] for j in shown if widths[j] < longest[j]]
    out = [[row[j] for j in shown] for row in cells]
    for i, j in enumerate(shown):
        w = widths[j]
        if w >= longest[j]:
            continue
        if j in names:
            ends = shared_ends(row[i] for row in out)
            for row in out:
                row[i] = abbreviate(row[i], w, *ends.get(row[i], (0, 0)))
        else:
            for row in out:
                if len(row[i]) > w:
                    row[i] = row[i][: w - 1] + "…"
    return [cols[j] for j in shown], [widths[j] for j in shown], out, cut, left_out


def print_table(res, durations: bool = True) -> None:
    """The table: cell text literal (no markup), control characters shown escaped. On a terminal
    fitted to its width (:func:`fit_table`) with the status coloured; to a file or a pipe never cut
    (unless ``COLUMNS`` says a width), written as plain text without loading Rich. A last line
    gives the number of rows and names the columns cut or left out."""
    width = table_width()
    tty = sys.stdout.isatty()
    times = [j for j, c in enumerate(res.columns) if str(c) == "t" or str(c).endswith("_at")]
    spans = {j: DURATION_COLUMNS[str(c)] for j, c in enumerate(res.columns) if durations and str(c) in DURATION_COLUMNS}
    whole = width is None
    cells = [
        [
            visible(
                ""
                if v is None
                else _utc(v)
                if j in times
                else _duration(v, spans[j])
                if j in spans
                else _short(v, whole)
            )
            for j, v in enumerate(r)
        ]
        for r in res.rows
    ]
    cols = [visible(str(c).rsplit("_", 1)[0] if j in spans else str(c)) for j, c in enumerate(res.columns)]
    empty: list[str] = []
    if cells:  # a column empty in every row says nothing here (csv/json keep every column)
        keep = [j for j in range(len(cols)) if any(row[j] for row in cells)]
        empty = [c for j, c in enumerate(cols) if j not in keep and c.strip()]  # (an unnamed spacer: not said)
        cols = [cols[j] for j in keep]
        cells = [[row[j] for j in keep] for row in cells]
    cols, widths, cells, cut, left_out = fit_table(cols, cells, width)
    if tty:
        _rich_table(cols, widths, cells, width or 250)
    else:
        out = ["  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip()]
        out.extend("  ".join(x.ljust(w) for x, w in zip(row, widths)).rstrip() for row in cells)
        sys.stdout.write("\n".join(out) + "\n")
    notes = [f"{len(res.rows)} row{'s' if len(res.rows) != 1 else ''}"]
    if cut:
        notes.append("cut to fit: " + ", ".join(cut))
    if empty:
        notes.append("empty in every row, left out: " + ", ".join(empty))
    if left_out:
        notes.append("not shown (too wide): " + ", ".join(left_out))
    if empty or left_out:
        notes[-1] += "; --format csv or json shows every column"
    note = "(" + "; ".join(notes) + ")"
    if width is not None:
        import textwrap

        note = "\n".join(textwrap.wrap(note, width=max(20, width)))
    print(note)


def _rich_table(cols: list[str], widths: list[int], cells: list[list[str]], width: int) -> None:
    """The fitted table on a terminal, through Rich (the status coloured; NO_COLOR and TERM=dumb
    respected)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    t = Table(show_lines=False, header_style="bold", box=None, pad_edge=False, padding=(0, 1), collapse_padding=False)
    for c, w in zip(cols, widths):
        t.add_column(Text(c), no_wrap=True, overflow="ellipsis", max_width=w, min_width=min(w, len(c)))
    status_col = cols.index("status") if "status" in cols else -1
    for row in cells:
        t.add_row(*(Text(x, style=_STATUS_COLOUR.get(x, "") if j == status_col else "") for j, x in enumerate(row)))
    Console(width=width, highlight=False).print(t)


def _plain(v):
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    if isinstance(v, float) and v != v:
        return None
    return v


def _short(v, whole: bool = False) -> str:
    """A cell's text; a text longer than 200 characters cut on a terminal (``whole``: never)."""
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) >= 1e6 else f"{v:.6g}"  # (epoch seconds keep their digits)
    s = str(_plain(v))
    return s if whole or len(s) <= 200 else s[:199] + "…"
