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


def query_read_only(db: Path, sql: str, snapshot: bool = False, params=None):
    """Run read-only SQL: own read-only connection, else through the holder, else a snapshot copy."""
    from edgetui.store.database import DatabaseBusy, ask_holder, busy_because, open_db, run_query, snapshot_copy
    from edgetui.store.holder_socket import HolderEnded

    if not db.exists():
        raise FileNotFoundError(
            f"no database at {db}; record runs first with `edgetui ingest PATH` or `edgetui samples`"
        )
    try:
        conn = open_db(db, read_only=True)
    except DatabaseBusy as busy:
        try:
            return ask_holder(db, sql, params)
        except HolderEnded as gone:
            if not snapshot:
                raise RuntimeError(str(gone)) from None
            conn = snapshot_copy(db)
        except ConnectionError as why:
            if not snapshot:
                raise busy_because(busy, why) from None
            conn = snapshot_copy(db)
    try:
        res = run_query(conn, sql, params)
    finally:
        conn.close()
    from edgetui.store.query_cells import from_wire, to_wire

    # the values the holder would have sent (DECIMALs as numbers, NaN as null, timestamps as text):
    # every format prints the same whoever answered
    res.rows = [tuple(from_wire(to_wire(v)) for v in r) for r in res.rows]
    return res


def emit(res, fmt: str) -> None:
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
        print_table(res)


#: colours of a run's status in tables (left out under NO_COLOR or TERM=dumb, by Rich)
_STATUS_COLOUR = {"running": "green", "grading": "cyan", "finished": "blue", "aborted": "red", "gone": "magenta"}


#: columns cut in the middle when too wide ("opus48-…5800", not "opus48-…")
MIDDLE_CUT = {"run_id", "run_key", "annotation_id", "event_id"}


def _middle(s: str, n: int) -> str:
    """``s`` in ``n`` cells with its middle cut out ("…")."""
    if len(s) <= n or n < 3:
        return s[:n]
    head = (n - 1) // 2
    return s[:head] + "…" + s[len(s) - (n - 1 - head) :]


def _utc(v) -> str:
    """A time column's epoch seconds (UTC) as ``2026-12-01 18:12:24Z`` in a table (csv and json
    keep the number); anything else as :func:`_short` gives it."""
    import datetime as dt

    if isinstance(v, (int, float)) and not isinstance(v, bool) and 1e8 < v < 1e11:
        return dt.datetime.fromtimestamp(float(v), dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return _short(v)


def print_table(res) -> None:
    """The table for a terminal: cell text literal (no markup), control characters shown
    escaped, fitted to the terminal's width: long text columns are cut with "…" first (down to
    8 cells), then the rightmost columns are left out, and a last line names them."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    con = Console()
    width = con.width if con.is_terminal else int(os.environ.get("COLUMNS") or 250)
    times = [j for j, c in enumerate(res.columns) if str(c) == "t" or str(c).endswith("_at")]
    cells = [
        [visible("" if v is None else _utc(v) if j in times else _short(v)) for j, v in enumerate(r)] for r in res.rows
    ]
    cols = [visible(str(c)) for c in res.columns]
    empty: list[str] = []
    if cells:  # a column empty in every row says nothing here (csv/json keep every column)
        keep = [j for j in range(len(cols)) if any(row[j] for row in cells)]
        empty = [c for j, c in enumerate(cols) if j not in keep and c.strip()]  # (an unnamed spacer: not said)
        cols = [cols[j] for j in keep]
        cells = [[row[j] for j in keep] for row in cells]
    longest = [max([len(row[j]) for row in cells] + [len(c)]) for j, c in enumerate(cols)]
    gap = 2

    def layout(n: int) -> list[int]:
        """Widths of the first ``n`` columns: numbers, flags and short ids (<= 16 cells) whole; the
        long text columns share what is left, the narrower ones first (at least 8 cells each, run
        ids and keys 14: rightmost columns are left out before an id is cut shorter)."""
        ws = list(longest[:n])
        long_cols = sorted((j for j in range(n) if ws[j] > 16), key=lambda j: ws[j])
        budget = width - sum(w for j, w in enumerate(ws) if j not in long_cols) - gap * (n - 1)
        for i, j in enumerate(long_cols):
            ws[j] = min(longest[j], max(14 if cols[j] in MIDDLE_CUT else 8, budget // (len(long_cols) - i)))
            budget -= ws[j]
        return ws

    n = len(cols)
    widths = layout(n)
    while n > 1 and sum(widths) + gap * (n - 1) > width:
        n -= 1
        widths = layout(n)
    left_out = cols[n:]
    cols = cols[:n]
    cut = [c for j, c in enumerate(cols) if widths[j] < longest[j]]
    for j, c in enumerate(cols):  # ids keep both ends (run ids differ at the end: their timestamps)
        if c in MIDDLE_CUT and widths[j] < longest[j]:
            for row in cells:
                row[j] = _middle(row[j], widths[j])
    t = Table(
        show_lines=False, header_style="bold", box=None, pad_edge=False, padding=(0, gap // 2), collapse_padding=True
    )
    for c, w in zip(cols, widths):
        t.add_column(Text(c), no_wrap=True, overflow="ellipsis", max_width=w, min_width=min(w, len(c)))
    status_col = cols.index("status") if "status" in cols else -1
    for row in cells:
        t.add_row(
            *(
                Text(x, style=_STATUS_COLOUR.get(x, "") if j == status_col else "")
                for j, x in enumerate(row[: len(cols)])
            )
        )
    Console(width=width, highlight=False).print(t)
    notes = [f"{len(res.rows)} row{'s' if len(res.rows) != 1 else ''}"]
    if cut:
        notes.append("cut to fit: " + ", ".join(cut))
    if empty:
        notes.append("empty in every row, left out: " + ", ".join(empty))
    if left_out:
        notes.append("not shown (too wide): " + ", ".join(left_out))
    if empty or left_out:
        notes[-1] += "; --format csv or json shows every column"
    import textwrap

    print("\n".join(textwrap.wrap("(" + "; ".join(notes) + ")", width=max(20, width))))


def _plain(v):
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    if isinstance(v, float) and v != v:
        return None
    return v


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) >= 1e6 else f"{v:.6g}"  # (epoch seconds keep their digits)
    s = str(_plain(v))
    return s if len(s) <= 200 else s[:199] + "…"
