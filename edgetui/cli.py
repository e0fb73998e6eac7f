"""``edgetui`` command line. The one list of commands is in README.md.

Every command takes ``--db PATH`` (default: :func:`edgetui.db.default_db_path`).
Errors are one line on stderr (``edgetui: error: ...``) with exit status 2;
no traceback reaches the user unless ``EDGETUI_DEBUG=1``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import sys
from pathlib import Path
from typing import Optional, Sequence

from . import __version__


def _add_db(p: argparse.ArgumentParser, top: bool = False) -> None:
    # sub-commands use SUPPRESS so `edgetui --db X cmd` and `edgetui cmd --db X` both work
    p.add_argument("--db", type=Path, default=None if top else argparse.SUPPRESS, help="database file (default: user data dir, or $EDGETUI_DB)")


def _add_live(p: argparse.ArgumentParser, top: bool = True) -> None:
    d = None if top else argparse.SUPPRESS
    p.add_argument("--runs-dir", action="append", type=Path, default=d,
                   help="runs root to watch (repeatable; default $SFORGE_LOG_DIR/runs or ./logs/runs if present)")
    p.add_argument("--judge-url", default=d, help="poll this SForge judge's /history (never registers or submits)")
    p.add_argument("--on-alarm", default=d, metavar="COMMAND", help="run COMMAND with each alarm as JSON on stdin")
    p.add_argument("--poll", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="stat-poll the runs roots (network mounts) instead of file notifications")
    p.add_argument("--no-docker", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="do not watch the local Docker engine")
    if top:
        p.add_argument("--tasks-dir", type=Path, default=None, help="SForge task JSONs (default $SFORGE_TASKS_DIR or ./tasks)")


def default_runs_dirs() -> list[Path]:
    """``$SFORGE_LOG_DIR/runs`` else ``./logs/runs`` (SForge's own default), when it exists."""
    base = Path(os.environ.get("SFORGE_LOG_DIR", "logs")).expanduser()
    return [base / "runs"] if (base / "runs").is_dir() else []


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="edgetui", description="Supervise and replay SForge / EdgeBench agent runs.")
    ap.add_argument("--version", action="version", version=f"edgetui {__version__}")
    _add_db(ap, top=True)
    _add_live(ap)
    sub = ap.add_subparsers(dest="cmd")

    p = sub.add_parser("watch", help="supervise live runs: the runs screen (also the default when a run is live)")
    _add_db(p)
    _add_live(p, top=False)

    p = sub.add_parser("ingest", help="record run directories, runs roots or transcript files")
    _add_db(p)
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--tasks-dir", type=Path, default=None, help="SForge task JSONs (default $SFORGE_TASKS_DIR or ./tasks)")
    p.add_argument("--host", default="local", help="host name for runs in flat layouts (default: local)")
    p.add_argument("--sample", action="store_true", help="tag the runs as samples (left out of aggregates)")
    p.add_argument("--prices", type=Path, default=None, help="price table JSON (USD per million tokens)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")

    p = sub.add_parser("samples", help="record the bundled sample runs (tagged as samples)")
    _add_db(p)
    p.add_argument("--quiet", "-q", action="store_true")

    p = sub.add_parser("runs", help="table of recorded runs")
    _add_db(p)
    p.add_argument("--no-samples", action="store_true", help="hide sample runs")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")

    p = sub.add_parser("sql", help="run one SQL query")
    _add_db(p)
    p.add_argument("query")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")

    p = sub.add_parser("export", help="export every table as Parquet into a directory")
    _add_db(p)
    p.add_argument("out", type=Path)

    p = sub.add_parser("check", help="check the database file fully (header, catalog, every block read)")
    _add_db(p)

    p = sub.add_parser("replay", help="replay a recorded run (RUN = run dir, RUN_ID or RUN_ID/TASK_ID)")
    _add_db(p)
    p.add_argument("run")
    p.add_argument("--host", default=None)
    p.add_argument("--tasks-dir", type=Path, default=None)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    from .db import default_db_path

    db = args.db or default_db_path()
    try:
        if args.cmd is None:
            return cmd_app(db, args)
        return globals()[f"cmd_{args.cmd}"](db, args)
    except KeyboardInterrupt:
        print("edgetui: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # one line, no traceback
        if os.environ.get("EDGETUI_DEBUG"):
            raise
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"edgetui: error: {msg}", file=sys.stderr)
        return 2


# ---------------------------------------------------------------------------- commands

def _live_config(args, home: bool):
    from .app import LiveConfig

    dirs = args.runs_dir or default_runs_dirs()
    for d in dirs:
        if not d.is_dir():
            raise FileNotFoundError(f"--runs-dir {d}: no such directory")
    if not dirs and not home:
        return None
    return LiveConfig(dirs, home=home or bool(args.runs_dir), judge_url=args.judge_url, on_alarm=args.on_alarm,
                      poll=args.poll, docker=not args.no_docker, tasks_dir=getattr(args, "tasks_dir", None))


def cmd_app(db: Path, args=None) -> int:
    from .app import run_app

    run_app(db, live=_live_config(args, home=False) if args is not None else None)
    return 0


def cmd_watch(db: Path, args) -> int:
    from .app import run_app

    run_app(db, live=_live_config(args, home=True))
    return 0


def _progress_ingest(db: Path, paths, *, tasks_dir=None, host="local", sample=False, prices=None, quiet=False):
    from .db import open_db
    from .ingest import ingest_paths

    conn = open_db(db)
    try:
        if quiet or not sys.stderr.isatty():
            return ingest_paths(conn, paths, tasks_dir=tasks_dir, host=host, is_sample=sample, prices=prices)
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

        with Progress(TextColumn("[bold]recording"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                      TimeRemainingColumn(), transient=True) as prog:
            task = prog.add_task("ingest", total=None)

            def on_total(n: int) -> None:
                prog.update(task, total=n)

            def on_bytes(n: int) -> None:
                prog.advance(task, n)

            return ingest_paths(conn, paths, tasks_dir=tasks_dir, host=host, is_sample=sample, prices=prices,
                                progress=on_bytes, on_total=on_total)
    finally:
        conn.close()


def _print_report(rep) -> None:
    for m in rep.messages:
        print(f"edgetui: {m}", file=sys.stderr)
    print(f"recorded {len(rep.runs)} run(s), {rep.events_offered} event(s) read, "
          f"{rep.bytes_read / 1e6:.1f} MB")


def cmd_ingest(db: Path, args) -> int:
    if args.tasks_dir is not None and not args.tasks_dir.is_dir():
        raise FileNotFoundError(f"--tasks-dir {args.tasks_dir}: no such directory")
    if args.prices is not None and not args.prices.is_file():
        raise FileNotFoundError(f"--prices {args.prices}: no such file")
    rep = _progress_ingest(db, args.paths, tasks_dir=args.tasks_dir, host=args.host, sample=args.sample,
                           prices=args.prices, quiet=args.quiet)
    _print_report(rep)
    return 0 if rep.recorded_anything and not rep.failed else 1  # any path that failed: non-zero


def cmd_check(db: Path, args) -> int:
    """``edgetui check``: 0 when the file is sound, 1 with one line per problem; never writes."""
    from .db import check_database

    problems = check_database(db)
    for p in problems:
        print(f"edgetui: {p}", file=sys.stderr)
    if not problems:
        print(f"{db}: sound (header, catalog and every table read)")
    return 1 if problems else 0


def cmd_samples(db: Path, args) -> int:
    from .samples import samples_dir

    d = samples_dir()
    rep = _progress_ingest(db, [d / "runs"], tasks_dir=d / "tasks", sample=True, quiet=args.quiet)
    _print_report(rep)
    return 0 if rep.recorded_anything else 1


def _query(db: Path, sql: str, snapshot: bool = False, params=None):
    """Run read-only SQL: own read-only connection, else through the holder, else a snapshot copy."""
    from .db import DatabaseBusy, ask_holder, open_db, run_query, snapshot_copy
    from .holder import HolderEnded

    if not db.exists():
        raise FileNotFoundError(f"no database at {db}; record runs first with `edgetui ingest PATH` or `edgetui samples`")
    try:
        conn = open_db(db, read_only=True)
    except DatabaseBusy as busy:
        try:
            return ask_holder(db, sql, params)
        except HolderEnded as gone:
            if not snapshot:
                raise RuntimeError(str(gone)) from None
            conn = snapshot_copy(db)
        except ConnectionError:
            if not snapshot:
                raise busy from None
            conn = snapshot_copy(db)
    try:
        return run_query(conn, sql, params)
    finally:
        conn.close()


def _emit(res, fmt: str) -> None:
    if fmt == "json":
        rows = [dict(zip(res.columns, [_plain(v) for v in r])) for r in res.rows]
        print(json.dumps(rows, indent=1, default=str))
    elif fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(res.columns)
        for r in res.rows:
            w.writerow([_plain(v) for v in r])
        sys.stdout.write(buf.getvalue())
    else:
        _print_table(res)


def visible(s: str) -> str:
    """``s`` with control characters shown, never sent to the terminal: ESC as ``\\x1b``, a
    newline as ``\\n``, a tab as ``\\t`` (ANSI / OSC sequences in transcripts would retitle the
    terminal or write to its clipboard)."""
    if s.isprintable():
        return s
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif o < 32 or o == 127 or 0x80 <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    return "".join(out)


def _print_table(res) -> None:
    """The table for a terminal: cell text literal (no markup), control characters shown
    escaped, fitted to the terminal's width: long text columns are cut with "…" first (down to
    8 cells), then the rightmost columns are left out, and a last line names them."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    con = Console()
    width = con.width if con.is_terminal else int(os.environ.get("COLUMNS") or 250)
    cells = [[visible("" if v is None else _short(v)) for v in r] for r in res.rows]
    cols = [visible(str(c)) for c in res.columns]
    if cells:  # a column empty in every row says nothing here (csv/json keep every column)
        keep = [j for j in range(len(cols)) if any(row[j] for row in cells)]
        cols = [cols[j] for j in keep]
        cells = [[row[j] for j in keep] for row in cells]
    longest = [max([len(row[j]) for row in cells] + [len(c)]) for j, c in enumerate(cols)]
    gap = 2

    def layout(n: int) -> list[int]:
        """Widths of the first ``n`` columns: numbers, flags and short ids (<= 16 cells) whole; the
        long text columns share what is left, the narrower ones first (at least 8 cells each)."""
        ws = list(longest[:n])
        long_cols = sorted((j for j in range(n) if ws[j] > 16), key=lambda j: ws[j])
        budget = width - sum(w for j, w in enumerate(ws) if j not in long_cols) - gap * (n - 1)
        for i, j in enumerate(long_cols):
            ws[j] = min(longest[j], max(8, budget // (len(long_cols) - i)))
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
    t = Table(show_lines=False, header_style="bold", box=None, pad_edge=False, padding=(0, gap // 2),
              collapse_padding=True)
    for c, w in zip(cols, widths):
        t.add_column(Text(c), no_wrap=True, overflow="ellipsis", max_width=w, min_width=min(w, len(c)))
    for row in cells:
        t.add_row(*(Text(x) for x in row[:len(cols)]))
    Console(width=width, highlight=False).print(t)
    notes = [f"{len(res.rows)} row{'s' if len(res.rows) != 1 else ''}"]
    if cut:
        notes.append("cut to fit: " + ", ".join(cut))
    if left_out:
        notes.append("not shown (too wide): " + ", ".join(left_out) + "; --format csv or json shows every column")
    print("(" + "; ".join(notes) + ")")


def _plain(v):
    if isinstance(v, (bytes, bytearray)):
        return f"<{len(v)} bytes>"
    if isinstance(v, float) and v != v:
        return None
    return v


def _short(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    s = str(_plain(v))
    return s if len(s) <= 200 else s[:199] + "…"


def cmd_sql(db: Path, args) -> int:
    if not args.query.strip():
        raise ValueError("empty query; e.g. edgetui sql \"SELECT run_id, task_id, status FROM runs\"")
    _emit(_query(db, args.query, args.snapshot), args.format)
    return 0


RUNS_SQL = """
SELECT run_id, task_id, status,
       CASE WHEN score_task THEN printf('%.6g', best_score) ELSE printf('%.1f%%', 100 * best_pass_rate) END AS best,
       round((coalesce(last_event_at, started_at) - started_at) / 3600.0, 2) AS elapsed_h,
       round(timeout_s / 3600.0, 2) AS budget_h,
       agent_submissions AS agent_subs, auto_submissions AS auto_subs,
       concat_ws(' ', CASE WHEN infra_error THEN 'infra' END, CASE WHEN is_sample THEN 'sample' END,
                 CASE WHEN policy_assumed THEN 'policy-assumed' END,
                 CASE WHEN n_parse_errors > 0 THEN n_parse_errors || '-bad-records' END,
                 CASE WHEN status IN ('running', 'grading') AND timeout_s > 0 AND started_at IS NOT NULL
                      AND epoch(current_timestamp) - started_at > timeout_s THEN 'over-budget' END) AS flags,
       coalesce(model, '') AS model, coalesce(agent, '') AS agent, host, best_round, n_events AS events,
       coalesce(input_tokens, 0) + coalesce(output_tokens, 0) + coalesce(cache_read_tokens, 0)
         + coalesce(cache_write_tokens, 0) AS tokens,
       round(cost_usd, 2) AS cost_usd, round(stated_cost_usd, 2) AS stated_usd
FROM runs {where} ORDER BY started_at DESC NULLS LAST, run_id, task_id
"""


def cmd_runs(db: Path, args) -> int:
    where = "WHERE NOT coalesce(is_sample, FALSE)" if args.no_samples else ""
    _emit(_query(db, RUNS_SQL.format(where=where), args.snapshot), args.format)
    return 0


def cmd_export(db: Path, args) -> int:
    from .db import open_db

    conn = open_db(db, read_only=True)
    try:
        out = args.out
        out.mkdir(parents=True, exist_ok=True)
        conn.execute(f"EXPORT DATABASE '{str(out)}' (FORMAT parquet)")
    finally:
        conn.close()
    print(f"exported to {args.out}")
    return 0


def resolve_run(conn, spec: str, host: Optional[str] = None) -> str:
    """Map RUN (task dir / run dir / transcript path, RUN_ID or RUN_ID/TASK_ID, optional host) to a run_key.

    Raises ``LookupError`` listing the candidates when ambiguous or unknown.
    """
    p = Path(spec)
    if p.exists():  # a task dir, a run dir (several tasks) or a transcript file
        rows = conn.execute("SELECT run_key FROM runs WHERE run_dir = ?", [str(p.resolve())]).fetchall()
        if not rows and p.is_dir():
            rows = conn.execute("SELECT run_key FROM runs WHERE run_dir LIKE ?", [str(p.resolve()) + "/%"]).fetchall()
    else:
        run_id, _, task_id = spec.partition("/")
        q = "SELECT run_key FROM runs WHERE run_id = ?"
        params = [run_id]
        if task_id:
            q += " AND task_id = ?"
            params.append(task_id)
        if host:
            q += " AND host = ?"
            params.append(host)
        rows = conn.execute(q + " ORDER BY run_key", params).fetchall()
    keys = [r[0] for r in rows]
    if not keys:
        raise LookupError(f"no recorded run matches {spec!r}; see `edgetui runs`")
    if len(keys) > 1:
        raise LookupError(f"{spec!r} is ambiguous; candidates: " + ", ".join(keys))
    return keys[0]


def cmd_replay(db: Path, args) -> int:
    from .app import run_app
    from .db import open_db

    p = Path(args.run)
    if p.exists():
        _progress_ingest(db, [p], tasks_dir=args.tasks_dir, host=args.host or "local", quiet=True)
    conn = open_db(db, read_only=True)
    try:
        key = resolve_run(conn, args.run, args.host)
    finally:
        conn.close()
    run_app(db, key)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
