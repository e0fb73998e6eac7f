"""The analysis commands of the ``edgetui`` command line: ``leaderboard`` and ``fit``.

Built on :mod:`replay.analysis` (no Textual); parsers follow :mod:`edgetui.cli`'s pattern (a
description and an example per command). Errors are raised as exceptions and printed by
``edgetui.cli.main`` as one line with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

__all__ = ["add_commands", "cmd_leaderboard", "cmd_fit", "parse_hours"]


def parse_hours(text: str) -> list[float]:
    """``"2,4,6"`` → ``[2.0, 4.0, 6.0]`` (hours); raises ``ValueError`` naming the bad item."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            h = float(item.rstrip("h"))
        except ValueError:
            raise ValueError(f"--hours: {item!r} is not a number of hours; e.g. --hours 2,4,6,8,10,12") from None
        if h <= 0:
            raise ValueError(f"--hours: {item!r} must be above 0")
        out.append(h)
    if not out:
        raise ValueError("--hours: no hours given; e.g. --hours 2,4,6,8,10,12")
    return out


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--by", choices=["model", "run_group", "run_id"], default="model",
                   help="group recorded runs by model (default), SForge run group, or run id")
    p.add_argument("--include-retry", action="store_true", help="count -retry runs (left out by default)")
    p.add_argument("--include-infra", action="store_true", help="count infra-error runs (left out by default)")
    p.add_argument("--include-samples", action="store_true", help="count sample runs (left out by default)")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")


def add_commands(sub, cmd, add_db) -> None:
    """Add ``leaderboard`` and ``fit`` to the sub-parsers ``sub`` (``cmd``/``add_db``: edgetui.cli's helpers)."""
    p = cmd(sub, "leaderboard", "EdgeBench-style leaderboard: per model (or run group) x @2h...@12h, overall and "
            "per category", "edgetui leaderboard --csv edgebench_open51_per_task.csv --format csv",
            "The value at an hour is the mean over the tasks with a value at that hour (repeats of a task "
            "averaged first), as EdgeBench computes its tables; (N) is the number of tasks. Per-task values "
            "are rescaled 0-100 where the task defines a rescale, else pass rate x 100, best-so-far under the "
            "task's selection policy. Without --csv: the recorded runs (-retry, infra-error and sample runs "
            "left out unless asked).")
    add_db(p)
    p.add_argument("--csv", type=Path, default=None, metavar="FILE",
                   help="a per-task table (task, hours, score; optional category; other columns group) "
                        "instead of the recorded runs")
    p.add_argument("--hours", type=parse_hours, default=[2, 4, 6, 8, 10, 12], metavar="LIST",
                   help="hours to show, comma-separated (default 2,4,6,8,10,12)")
    p.add_argument("--no-categories", action="store_true", help="overall rows only")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table",
                   help="output format (default: table; csv and json are long: one row per cell, unrounded)")
    _add_selection(p)


# ---------------------------------------------------------------------------- leaderboard


def _fetch(db: Path, snapshot: bool):
    from .cli import _query

    return lambda sql, params=None: _query(db, sql, snapshot, params)


def recorded_task_values(db: Path, args, hours: Sequence[float]):
    """(grouping column names, per-task values) of the recorded runs under ``args``' selection."""
    from replay.analysis.leaderboard import recorded_values

    from .analysis_data import load_curves

    curves = load_curves(_fetch(db, args.snapshot))
    vals = recorded_values(curves, hours, args.by, include_retry=args.include_retry,
                           include_infra=args.include_infra, include_samples=args.include_samples)
    return [args.by], vals


def cmd_leaderboard(db: Path, args) -> int:
    from replay.analysis.leaderboard import OVERALL, aggregate, read_task_table

    hours = args.hours
    if args.csv is not None:
        if not args.csv.is_file():
            raise FileNotFoundError(f"--csv {args.csv}: no such file")
        group_cols, vals = read_task_table(args.csv, hours)
    else:
        group_cols, vals = recorded_task_values(db, args, hours)
    cells = aggregate(vals, categories=not args.no_categories)
    if not cells:
        raise LookupError("no runs to rank" + ("" if args.csv else
                          " (-retry, infra-error and sample runs are left out: --include-retry, --include-infra, "
                          "--include-samples)"))
    from .cli import _emit
    from .holder import QueryResult

    if args.format in ("csv", "json"):
        cols = list(group_cols) + ["category", "hours", "score", "n_tasks", "n_runs"]
        rows = [tuple(c.group) + (c.category, c.hours, c.score, c.n_tasks, c.n_runs) for c in cells]
        _emit(QueryResult(cols, rows), args.format)
        return 0
    table: dict[tuple, dict[float, object]] = {}
    for c in cells:
        table.setdefault((c.group, c.category), {})[c.hours] = c
    cols = list(group_cols) + ["category"] + [f"@{h:g}h" for h in hours]
    rows = []
    for (g, cat), by_h in table.items():
        row = list(g) + [cat if cat != OVERALL else "overall"]
        for h in hours:
            c = by_h.get(float(h))
            row.append("–" if c is None or c.score is None else f"{c.score:.1f} ({c.n_tasks})")
        rows.append(tuple(row))
    _emit(QueryResult(cols, rows), "table")
    print("(N) = tasks with a value at that hour; mean over them, repeats averaged first; "
          "--format csv|json for unrounded values")
    return 0


def cmd_fit(db: Path, args) -> int:  # filled in by the fit step
    raise NotImplementedError
