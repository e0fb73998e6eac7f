"""The analysis commands of the ``edgetui`` command line: ``leaderboard`` and ``fit``.

Built on :mod:`edgetui.replay.analysis` (no Textual); parsers follow :mod:`edgetui.cli.main`'s pattern (a
description and an example per command). Errors are raised as exceptions and printed by
``edgetui.cli.main`` as one line (an input problem: status 2; a bug: an internal error, status 70).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence, cast

from edgetui.error_log import note_swallowed
from edgetui.cli.output import for_terminal, visible
from edgetui.quantities import fmt_hours
from edgetui.views.plot_figure import new_figure
from edgetui.replay.analysis.task_variants import mixed_note, mixed_tasks

if TYPE_CHECKING:
    from edgetui.replay.analysis.leaderboard import LeaderCell

__all__ = ["add_commands", "cmd_leaderboard", "cmd_fit", "parse_hours", "SCALE_NOTE"]

#: said under every table of rescaled values (forecast, compare, leaderboard)
SCALE_NOTE = (
    "values are 0-100: the task's rescaled score where it defines a rescale (its raw score is in `edgetui runs`), "
    "else pass rate x 100"
)


def parse_hours(text: str) -> list[float]:
    """``"2,4,6"`` → ``[2.0, 4.0, 6.0]`` (hours): the type of ``--hours`` and ``--horizons``. A bad
    list raises ``argparse.ArgumentTypeError``, whose message argparse says after the option's name
    (``--hours: 'abc' is not a list of hours (e.g. 1,3,12)``)."""
    out = []
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        try:
            h = float(item.rstrip("h"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a list of hours (e.g. 1,3,12)") from None
        if h <= 0 or h != h or h == float("inf"):
            raise argparse.ArgumentTypeError(f"{item!r}: hours must be a number above 0 (e.g. 1,3,12)")
        out.append(h)
    if not out:
        raise argparse.ArgumentTypeError("no hours given (e.g. 1,3,12)")
    return out


def _add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--by",
        choices=["model", "run_group", "run_id"],
        default="model",
        help="group recorded runs by model (default), SForge run group, or run id",
    )
    p.add_argument("--include-retry", action="store_true", help="count -retry runs (left out by default)")
    p.add_argument("--include-infra", action="store_true", help="count infra-error runs (left out by default)")
    p.add_argument("--include-samples", action="store_true", help="count sample runs (left out by default)")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")
    p.add_argument(
        "--team",
        action="store_true",
        help="every member's runs pulled by `edgetui sync` (default: this machine's), each with who recorded it",
    )


def add_commands(sub, cmd, add_db) -> None:
    """Add ``leaderboard`` and ``fit`` to the sub-parsers ``sub`` (``cmd``/``add_db``: edgetui.cli.main's helpers)."""
    p = cmd(
        sub,
        "leaderboard",
        "EdgeBench-style leaderboard: per model (or run group) x @2h...@12h, overall and per category",
        "edgetui leaderboard --csv edgebench_open51_per_task.csv --format csv",
        "The value at an hour is the mean over the tasks with a value at that hour (repeats of a task "
        "averaged first), as EdgeBench computes its tables; (N) is the number of tasks. Per-task values "
        "are rescaled 0-100 where the task defines a rescale, else pass rate x 100, best-so-far under the "
        "task's selection policy. Without --csv: the recorded runs (-retry, infra-error and sample runs "
        "left out unless asked).",
    )
    add_db(p)
    p.add_argument(
        "--csv",
        type=Path,
        default=None,
        metavar="FILE",
        help="a per-task table (task, hours, score; optional category; other columns group) "
        "instead of the recorded runs",
    )
    p.add_argument(
        "--hours",
        type=parse_hours,
        default=[2, 4, 6, 8, 10, 12],
        metavar="LIST",
        help="hours to show, comma-separated (default 2,4,6,8,10,12)",
    )
    p.add_argument("--no-categories", action="store_true", help="overall rows only")
    p.add_argument(
        "--format",
        choices=["table", "csv", "json"],
        default="table",
        help="output format (default: table; csv and json are long: one row per cell, unrounded)",
    )
    _add_selection(p)

    p = cmd(
        sub,
        "fit",
        "fit EdgeBench's log-sigmoid law S(t) = Smax / (1 + (t_mid/t)^beta) and its look-alikes",
        "edgetui fit --csv edgebench_open51_per_task.csv --mean-over task --plot",
        "One curve per group: recorded runs (--by run|task|model) or --csv FILE with hours and score columns "
        "(every other column groups; --mean-over COLUMN averages over it as the leaderboard does and "
        "bootstraps it). Smax is solved in closed form over a dense (t_mid, beta) grid, then refined by "
        "bounded robust least squares. Flagged fits (at_bound:*, ill_conditioned, did_not_converge, flat) "
        "withhold Smax, t_mid and beta. Forms (log_probit, log_gompertz, weibull, log_linear) are compared "
        'by RMSE on held-out hours (leave one hour out). --format json: docs/commands.md "fit JSON".',
    )
    add_db(p)
    p.add_argument("runs", nargs="*", metavar="RUN", help="recorded runs (default: all, as --by groups them)")
    p.add_argument("--csv", type=Path, default=None, metavar="FILE", help="a table with hours and score columns")
    p.add_argument(
        "--mean-over",
        default=None,
        metavar="COLUMN",
        help="with --csv: each group's curve is the mean over this column (e.g. task)",
    )
    p.add_argument(
        "--by",
        choices=["run", "task", "model"],
        default="run",
        help="recorded runs: one curve per run (default), per task or per model (means)",
    )
    p.add_argument(
        "--hours",
        type=parse_hours,
        default=None,
        metavar="LIST",
        help="recorded runs: hours to sample (default: 12 points up to the longest run's end)",
    )
    p.add_argument(
        "--horizons",
        type=parse_hours,
        default=[12.0],
        metavar="LIST",
        help="hours at which to report S with its interval (default 12)",
    )
    p.add_argument(
        "--bootstrap",
        type=int,
        default=1000,
        metavar="N",
        help="resamples for the intervals (default 1000; 0: none). Means: tasks, then runs; single curves: residuals",
    )
    p.add_argument(
        "--time-basis",
        choices=["wall_clock", "active"],
        default="wall_clock",
        help="recorded runs: elapsed wall clock (default) or active time (grading and cooldown waits left out)",
    )
    p.add_argument(
        "--form",
        choices=["log_sigmoid", "log_probit", "log_gompertz", "weibull"],
        default="log_sigmoid",
        help="the form whose parameters and intervals are reported (default log_sigmoid)",
    )
    p.add_argument("--smax-max", type=float, default=100.0, metavar="S", help="upper bound of Smax (default 100)")
    p.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    p.add_argument("--plot", action="store_true", help="draw points and fitted curves in the terminal")
    p.add_argument(
        "--backtest",
        action="store_true",
        help="with --csv of a per-task table (task, model, hours, score): back-test the 12-hour "
        "forecast from 2-6 h and 2-4 h, leave-one-out, beside 'last best persists'",
    )
    p.add_argument("--markdown", action="store_true", help="with --backtest: print docs/analysis.md's Markdown table")
    p.add_argument(
        "--store",
        action="store_true",
        help="also store the fits in the database's fits table (source recorded or the CSV's name)",
    )
    p.add_argument("--include-retry", action="store_true", help="count -retry runs (left out by default)")
    p.add_argument("--include-infra", action="store_true", help="count infra-error runs (left out by default)")
    p.add_argument("--include-samples", action="store_true", help="count sample runs (left out by default)")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")
    p.add_argument(
        "--team",
        action="store_true",
        help="every member's runs pulled by `edgetui sync` (default: this machine's), each with who recorded it",
    )

    p = cmd(
        sub,
        "forecast",
        "forecast a run's score at 12 h (or its budget) from its hours so far, beside 'last best persists'",
        "edgetui forecast opus48-edge-3 --at 3h",
        "log-sigmoid with beta from the earlier recorded runs of the same task or model, else 1.0; with "
        "--published FILE (EdgeBench's per-task table saved as CSV, see docs/analysis.md) and no earlier run of "
        "the task, the best so far plus the table's median gain to the horizon where the back-test found that "
        "better. The 80% interval is the error of that forecast measured by back-testing single tasks "
        "(`edgetui fit --backtest`). Values are rescaled 0-100 (the task's rescale, else pass rate x 100).",
    )
    add_db(p)
    p.add_argument("run", metavar="RUN", help="run dir, RUN_ID[/TASK_ID], or a unique prefix")
    p.add_argument(
        "--horizon",
        type=float,
        default=None,
        metavar="HOURS",
        help="hours to forecast (default: the run's budget, else 12)",
    )
    p.add_argument("--at", default=None, metavar="TIME", help="forecast as of this elapsed time (3h, 2:15, 95m)")
    p.add_argument(
        "--published",
        type=Path,
        default=None,
        metavar="FILE",
        help="EdgeBench's per-task table as CSV (task, model, hours, score): the prior when no earlier "
        "run of the task is recorded",
    )
    p.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")

    p = cmd(
        sub,
        "compare",
        "two or more runs (or run groups) aligned by elapsed time on one score axis, "
        "with their fits and the first point where their best-so-far curves part",
        "edgetui compare real-stats real-tz --at 2m --plot",
        "Each RUN is a run (run dir, RUN_ID[/TASK_ID] or a unique prefix); with --groups each is an SForge run "
        "group key (its -<machine>-<timestamp> siblings merged: the mean over tasks, repeats first).",
    )
    add_db(p)
    p.add_argument("runs", nargs="+", metavar="RUN", help="runs, or run group keys with --groups")
    p.add_argument("--groups", action="store_true", help="the arguments are run group keys")
    p.add_argument("--at", default=None, metavar="TIME", help="the values of all of them at this elapsed time")
    p.add_argument("--plot", action="store_true", help="draw their best-so-far curves on one chart")
    p.add_argument(
        "--view", action="store_true", help="open the compare screen (step them together: l/h, ]/[, p where they part)"
    )
    p.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")
    p.add_argument(
        "--team",
        action="store_true",
        help="every member's runs pulled by `edgetui sync` (default: this machine's), each with who recorded it",
    )

    p = cmd(
        sub,
        "edgebench-csv",
        "turn EdgeBench's README (its published leaderboard, category and per-task tables) into the CSV files "
        "the analysis commands read",
        "edgetui edgebench-csv edgebench-README.md -o tables/",
        "EdgeBench publishes its results in its repository's README "
        "(https://github.com/ByteDance-Seed/EdgeBench, section Leaderboard); edgetui ships none of them. Download "
        "it (e.g. curl -L -o edgebench-README.md https://raw.githubusercontent.com/ByteDance-Seed/EdgeBench/main/README.md) and give "
        "it here: writes edgebench_leaderboard.csv (suite,model,hours,score), edgebench_category_12h.csv "
        "(suite,model,category,score) and edgebench_<suite>_per_task.csv (task,category,model,hours,score).",
    )
    add_db(p)
    p.add_argument("readme", type=Path, metavar="README", help="EdgeBench's README.md, downloaded")
    p.add_argument("--output", "-o", type=Path, default=Path("."), metavar="DIR", help="folder to write to (default .)")

    p = cmd(
        sub,
        "learning-speed",
        "learning speed per model and its doubling time across model generations",
        "edgetui learning-speed --csv edgebench_learning_speed.csv",
        "Learning speed: the gain within a run's first 2 hours (value at 2 h minus the first graded "
        "submission's value), mean over tasks per model; or a table with one value per model (model, "
        "release_month, learning_speed). Doubling time = ln 2 / slope of ln(speed) on release date, with a "
        "bootstrap interval (over models for a table, over tasks then runs for recorded runs).",
    )
    add_db(p)
    p.add_argument(
        "--csv",
        type=Path,
        default=None,
        metavar="FILE",
        help="a table with model, release_month (or release_date) and learning_speed",
    )
    p.add_argument(
        "--release-dates",
        type=Path,
        default=None,
        metavar="FILE",
        help="recorded runs: CSV of model,release_date (YYYY-MM or YYYY-MM-DD)",
    )
    p.add_argument("--frontier", action="store_true", help="only models faster than every model released before them")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="resamples (default 1000)")
    p.add_argument("--format", choices=["table", "json"], default="table", help="output format (default: table)")
    p.add_argument("--include-retry", action="store_true", help="count -retry runs (left out by default)")
    p.add_argument("--include-infra", action="store_true", help="count infra-error runs (left out by default)")
    p.add_argument("--include-samples", action="store_true", help="count sample runs (left out by default)")
    p.add_argument("--snapshot", action="store_true", help="read a copy when another process holds the database")


# ---------------------------------------------------------------------------- leaderboard


def _fetch(db: Path, snapshot: bool):
    from edgetui.cli.output import query_read_only

    return lambda sql, params=None: query_read_only(db, sql, snapshot, params)


def recorded_task_values(db: Path, args, hours: Sequence[float]):
    """(grouping column names, per-task values) of the recorded runs under ``args``' selection;
    ``args.left_out`` is set to the line saying how many runs it left out and why."""
    from edgetui.replay.analysis.leaderboard import left_out, left_out_note, recorded_values

    from edgetui.analysis.recorded_curves import load_curves

    curves = load_curves(_fetch(db, args.snapshot), team=getattr(args, "team", False))
    args.team_runs = [c.run_key for c in curves]
    args.left_out = left_out_note(
        left_out(
            curves,
            include_retry=args.include_retry,
            include_infra=args.include_infra,
            include_samples=args.include_samples,
        )
    )
    vals = recorded_values(
        curves,
        hours,
        args.by,
        include_retry=args.include_retry,
        include_infra=args.include_infra,
        include_samples=args.include_samples,
    )
    return [args.by], vals


def _say_who_recorded(fn):
    """``fn`` (a command), then with ``--team`` and a table: who recorded the runs it read (docs/team.md)."""

    def run(db: Path, args) -> int:
        rc = fn(db, args)
        keys = getattr(args, "team_runs", None)
        if getattr(args, "team", False) and getattr(args, "format", "table") == "table" and keys:
            from collections import Counter

            from edgetui.analysis.recorded_curves import recorded_by

            who = recorded_by(_fetch(db, args.snapshot), keys)
            if len(keys) <= 12:
                for k in keys:
                    print(visible(f"{k}: recorded by {who[k]}"))
            else:
                counts = Counter(who.values())
                print("recorded by: " + ", ".join(visible(f"{w} {n} run(s)") for w, n in sorted(counts.items())))
        return rc

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    return run


@_say_who_recorded
def cmd_leaderboard(db: Path, args) -> int:
    from edgetui.replay.analysis.leaderboard import OVERALL, aggregate, read_task_table

    hours = args.hours
    if args.csv is not None:
        if not args.csv.is_file():
            raise FileNotFoundError(f"--csv {args.csv}: no such file")
        group_cols, vals = read_task_table(args.csv, hours)
    else:
        group_cols, vals = recorded_task_values(db, args, hours)
    cells = aggregate(vals, categories=not args.no_categories)
    if not cells:
        raise LookupError(
            "no runs to rank" + ("" if args.csv else f" ({getattr(args, 'left_out', '') or 'no recorded run'})")
        )
    from edgetui.cli.output import emit
    from edgetui.store.holder_socket import QueryResult

    if args.format in ("csv", "json"):
        cols = list(group_cols) + ["category", "hours", "score", "n_tasks", "n_runs", "mixed_variants"]
        rows = [
            tuple(c.group) + (c.category, c.hours, c.score, c.n_tasks, c.n_runs, " ".join(c.mixed_variants))
            for c in cells
        ]
        emit(QueryResult(cols, rows), args.format)
        if getattr(args, "left_out", ""):  # (said on stderr: stdout stays the machine format)
            print(f"edgetui leaderboard: {args.left_out}", file=sys.stderr)
        return 0
    table: dict[tuple, dict[float, LeaderCell]] = {}
    for c in cells:
        table.setdefault((c.group, c.category), {})[c.hours] = c
    cols = list(group_cols) + ["category"] + [f"@{h:g}h" for h in hours]
    rows = []
    mixed: set[str] = set()
    for (g, cat), by_h in table.items():
        row = list(g) + [cat if cat != OVERALL else "overall"]
        for h in hours:
            cell = by_h.get(float(h))
            mark = "" if cell is None or not cell.mixed_variants else " !"
            mixed.update(cell.mixed_variants if cell is not None else ())
            row.append("–" if cell is None or cell.score is None else f"{cell.score:.1f} ({cell.n_tasks}){mark}")
        rows.append(tuple(row))
    emit(QueryResult(cols, rows), "table")
    if getattr(args, "left_out", ""):  # runs the selection left out, and why (the options that count them)
        print(args.left_out)
    print(
        "(N) = tasks with a value at that hour; mean over them, repeats averaged first; "
        "--format csv|json for unrounded values"
    )
    print(f"values as {args.csv.name} gives them" if args.csv is not None else SCALE_NOTE)
    if mixed:
        print(f"! = the cell {mixed_note(sorted(mixed))}")
    return 0


# ---------------------------------------------------------------------------- fit


def _fit_curves(db: Path, args):
    from edgetui.replay.analysis.curves import read_curves_csv, run_curves

    if args.csv is not None:
        if not args.csv.is_file():
            raise FileNotFoundError(f"--csv {args.csv}: no such file")
        return read_curves_csv(args.csv, mean_over=args.mean_over)
    if args.mean_over:
        raise ValueError("--mean-over is for --csv tables; recorded runs are averaged with --by task|model")
    from edgetui.analysis.recorded_curves import load_curves

    keys = [_resolve(db, r, args.snapshot) for r in args.runs] if args.runs else None
    curves = load_curves(_fetch(db, args.snapshot), keys, time_basis=args.time_basis, team=getattr(args, "team", False))
    if keys is None:
        from edgetui.replay.analysis.leaderboard import left_out, left_out_note

        args.left_out = left_out_note(
            left_out(
                curves,
                include_retry=args.include_retry,
                include_infra=args.include_infra,
                include_samples=args.include_samples,
            )
        )
        curves = [
            c
            for c in curves
            if (args.include_retry or not c.retry)
            and (args.include_samples or not c.is_sample)
            and (args.include_infra or not c.infra_error)
        ]
    if not curves:
        raise LookupError(
            "no runs to fit"
            + ("" if keys else f" ({getattr(args, 'left_out', '') or 'no recorded run'}; or name runs)")
        )
    args.team_runs = [c.run_key for c in curves]
    hours = args.hours
    if hours is None:
        ends = [c.end_elapsed_s if c.end_elapsed_s is not None else (c.now_elapsed_s or 0.0) for c in curves]
        top = max(ends) / 3600.0
        if top <= 0:
            raise ValueError("the runs have no elapsed time to fit; give --hours")
        hours = [top * k / 12 for k in range(1, 13)]
    return run_curves(curves, hours, args.by)


def fit_record(curve, args) -> dict:
    """One curve's fit as the JSON of ``edgetui fit --format json``."""
    import math

    import numpy as np

    from edgetui.replay.analysis.curves import hierarchical_resamples
    from edgetui.replay.analysis.fit import (
        FIT_METHOD,
        FIT_VERSION,
        bootstrap,
        compare_forms,
        fit_curve,
        residual_resamples,
    )

    t = np.asarray(curve.hours, dtype=float)
    y = np.asarray(curve.scores, dtype=float)
    ok = np.isfinite(y)
    rec: dict = {
        **curve.group,
        "group": dict(curve.group),
        "aggregation": curve.aggregation,
        "time_basis": curve.time_basis,
        "method": FIT_METHOD,
        "version": FIT_VERSION,
        "mixed_variants": list(curve.mixed_variants),
    }
    try:
        f = fit_curve(t[ok], y[ok], args.form, smax_max=args.smax_max, horizons=args.horizons)
    except ValueError as e:
        rec.update(
            {
                "error": str(e),
                "hours": [float(v) for v in t],
                "scores": [None if not math.isfinite(v) else float(v) for v in y],
            }
        )
        return rec
    if args.bootstrap > 0:
        # one task with one run has nothing to resample over: its residuals then, as for a run
        if curve.units and (len(curve.units) > 1 or any(len(r) > 1 for r in curve.units.values())):
            Y = hierarchical_resamples(curve.units, len(t), args.bootstrap)[:, ok]
            kind = "tasks then runs" if any(len(r) > 1 for r in curve.units.values()) else "tasks"
        else:
            Y = residual_resamples(f, args.bootstrap)
            kind = "residuals"
        bootstrap(f, Y, horizons=args.horizons, smax_max=args.smax_max, kind=kind)
    d = f.as_dict()
    rec.update({k: d[k] for k in ("Smax", "t_mid", "beta")})
    rec["fit"] = d
    try:
        rec["forms"] = compare_forms(t[ok], y[ok], smax_max=args.smax_max)
    except ValueError as e:
        rec["forms"] = []
        rec["forms_error"] = str(e)
    return rec


def _num(v, fmt="{:.2f}") -> str:
    return "–" if v is None else fmt.format(v)


def cmd_backtest(args) -> int:
    from edgetui.replay.analysis.backtest import backtest, markdown
    from edgetui.replay.analysis.leaderboard import read_task_table

    if args.csv is None:
        raise ValueError("--backtest needs --csv FILE: a per-task table (task, model, hours, score)")
    if not args.csv.is_file():
        raise FileNotFoundError(f"--csv {args.csv}: no such file")
    _, vals = read_task_table(args.csv)
    rows = backtest(vals)
    if args.markdown:
        print(for_terminal(markdown(rows)))
        return 0
    if args.format == "json":
        print(_dumps([r.as_dict() for r in rows]))
        return 0
    from edgetui.cli.output import emit
    from edgetui.store.holder_socket import QueryResult

    cols = [
        "curves",
        "window",
        "model",
        "n",
        "left_out",
        "MAE_forecast",
        "MAE_last_best",
        "cover80_forecast",
        "cover80_last_best",
        "width_forecast",
        "width_last_best",
    ]
    emit(
        QueryResult(
            cols,
            [
                (
                    r.level,
                    r.window,
                    r.model,
                    r.n,
                    r.left_out,
                    f"{r.mae_forecast:.2f}",
                    f"{r.mae_baseline:.2f}",
                    f"{100 * r.coverage_forecast:.0f}%",
                    f"{100 * r.coverage_baseline:.0f}%",
                    f"{r.width_forecast:.1f}",
                    f"{r.width_baseline:.1f}",
                )
                for r in rows
            ],
        ),
        "table",
    )
    print(
        "forecast: log-sigmoid with beta fixed to the median of curves sharing neither task nor model, fitted to "
        "the window, predicting 12 h; last best: the window's last value. MAE in points; 80% intervals from "
        "the errors of the other curves (leave-one-out)"
    )
    return 0


@_say_who_recorded
def cmd_fit(db: Path, args) -> int:
    if args.bootstrap < 0:
        raise ValueError("--bootstrap must be 0 or more")
    if args.backtest:
        return cmd_backtest(args)
    curves = _fit_curves(db, args)
    recs = [fit_record(c, args) for c in curves]
    if args.store:
        from edgetui.analysis.recorded_curves import store_fits
        from edgetui.store.database import open_db

        conn = open_db(db)
        try:
            n = store_fits(conn, recs, args.csv.name if args.csv is not None else "recorded")
        finally:
            conn.close()
        print(f"stored {n} fit(s) in the fits table of {db}", file=sys.stderr)
    if args.format == "json":
        print(_dumps(recs))
        if getattr(args, "left_out", ""):  # (said on stderr: stdout stays JSON)
            print(f"edgetui fit: {args.left_out}", file=sys.stderr)
        return 0
    from edgetui.cli.output import emit
    from edgetui.store.holder_socket import QueryResult

    gcols = list(curves[0].group) if curves else []
    h0 = args.horizons[0]
    emit(QueryResult(gcols + fit_columns(h0), fit_rows(recs, gcols, args.form, h0)), "table")
    if getattr(args, "left_out", ""):  # runs the selection left out, and why
        print(args.left_out)
    withheld = any("error" not in r and not r["fit"]["findings"] for r in recs)
    print(
        "* the reported form; the other forms' rows are for comparison (heldout_RMSE: leave one hour out). "
        "t_half: hours to half of Smax; gain/2x: points gained per doubling of time; S@h with its 80% interval."
        + (
            " Flagged fits withhold Smax, t_mid and beta: the points do not pin them down (see flags); "
            "t_half, gain/2x and S@h are what they do determine."
            if withheld
            else ""
        )
    )
    print(SCALE_NOTE)
    mixed = sorted({t for rec in recs for t in rec.get("mixed_variants", [])})
    if mixed:
        print(f"mixed-variants: a fit {mixed_note(mixed)}")
    if args.plot:
        print(plot_fits(recs))
    return 0


def fit_columns(h0: float) -> list[str]:
    """The columns of ``edgetui fit``'s table after the grouping columns."""
    return [
        "form",
        "parameters",
        "t_half",
        "t_half_80%",
        "gain/2x",
        "R2",
        "RMSE",
        "heldout_RMSE",
        f"S@{h0:g}h",
        f"S@{h0:g}h_80%",
        "flags",
    ]


def _params_text(form: str, params: dict, shown: bool, intervals: Optional[dict] = None) -> str:
    """A form's parameters as words: ``Smax 79.5 t_mid 1.21 beta 0.59``, ``S = 48.0 + 13.7 ln t``, or for a
    flagged fit ``withheld`` with the bootstrap's 80 % ranges when there are some (how far apart they lie
    is what says the points do not pin them down)."""
    if not shown:
        iv = [(k, (intervals or {}).get(k)) for k in ("Smax", "t_mid", "beta")]
        # (t_mid is a time: a bootstrap's low end below 0 shows as 0, as t_half's does)
        ranges = " ".join(
            f"{k} {max(lo, 0.0) if k == 't_mid' else lo:.3g}–{hi:.3g}" for k, (lo, hi) in ((k, v) for k, v in iv if v)
        )
        return f"withheld (80%: {ranges})" if ranges else "withheld"
    if form == "log_linear":
        b = round(params["b"], 1) or 0.0  # (a slope of -1e-15, a flat run's, is 0.0, not -0.0)
        return f"S = {params['a']:.1f} {'−' if b < 0 else '+'} {abs(b):.1f} ln t"
    return (
        f"Smax {_num(params.get('Smax'), '{:.1f}')} t_mid {_num(params.get('t_mid'))} beta {_num(params.get('beta'))}"
    )


def t_half_interval(iv) -> str:
    """The 80 % interval of t_half as text: a time is not negative, so a bootstrap's low end below 0
    shows as 0 (``0.00–3.20``), and one wholly at or below 0 as ``undetermined``."""
    if not iv:
        return "–"
    lo, hi = iv
    if hi is None or hi <= 0:
        return "undetermined"
    return f"{max(lo, 0.0):.2f}–{hi:.2f}"


def fit_rows(recs: list[dict], gcols: list[str], form: str, h0: float) -> list[tuple]:
    """The rows of ``edgetui fit``'s table: the reported form (``*``), then each look-alike form."""
    import math

    rows = []
    for rec in recs:
        g = [rec["group"].get(c) for c in gcols]
        if "error" in rec:
            rows.append(tuple(g + [form] + ["–"] * 9 + [rec["error"]]))
            continue
        fd = rec["fit"]
        iv = fd["intervals"].get(f"S@{h0:g}")
        th = fd["intervals"].get("t_half")
        held = {x["form"]: x for x in rec.get("forms", [])}
        rows.append(
            tuple(
                g
                + [
                    fd["form"] + " *",
                    _params_text(fd["form"], fd["raw"], fd["findings"], fd["intervals"]),
                    _num(fd["t_half"]),
                    t_half_interval(th),
                    _num(fd["gain_per_doubling"], "{:.1f}"),
                    _num(fd["r2"], "{:.4f}"),
                    _num(fd["rmse"], "{:.3f}"),
                    _num((held.get(fd["form"]) or {}).get("heldout_rmse"), "{:.3f}"),
                    _num(fd["S_at"].get(f"{h0:g}")),
                    f"{iv[0]:.1f}–{iv[1]:.1f}" if iv else "–",
                    " ".join(fd["flags"] + (["mixed-variants"] if rec["mixed_variants"] else [])) or "ok",
                ]
            )
        )
        for x in rec.get("forms", []):
            if x["form"] == fd["form"]:
                continue
            ps = x["params"] or {}
            linear = x["form"] == "log_linear"
            rows.append(
                tuple(
                    g
                    + [
                        x["form"],
                        _params_text(x["form"], ps, not x["flags"]),
                        "–" if linear else _num(x.get("t_half")),
                        "",
                        _num(round(ps["b"] * math.log(2), 1) or 0.0, "{:.1f}") if linear and "b" in ps else "",
                        _num(x["r2"], "{:.4f}"),
                        _num(x["rmse"], "{:.3f}"),
                        _num(x["heldout_rmse"], "{:.3f}"),
                        "",
                        "",
                        " ".join(x["flags"]) or "ok",
                    ]
                )
            )
    return rows


def _clean(o):
    """``o`` with non-finite floats as ``None`` (JSON has no NaN or Infinity) and numpy scalars as Python's."""
    import math

    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if hasattr(o, "item") and not isinstance(o, (str, bytes)):
        try:
            o = o.item()
        except (TypeError, ValueError):  # not a numpy scalar after all: kept as it is
            pass
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return o


def _dumps(o) -> str:
    """Strict JSON (``allow_nan=False``) of ``o``, non-finite numbers as null."""
    return json.dumps(_clean(o), indent=1, default=_json_default, allow_nan=False)


def _json_default(o):
    import numpy as np

    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, tuple):
        return list(o)
    return str(o)


def plot_fits(recs, width: int = 0, height: int = 0) -> str:
    """Points (•) and fitted curves (lines) of ``recs`` (``fit_record`` dicts, at most 8) drawn
    with plotext, as text, with a legend line per curve; no colour when stdout is not a terminal
    or under NO_COLOR."""
    import os
    import shutil

    import numpy as np
    import plotext as plt

    from edgetui.replay.analysis.fit import predict

    cols, lines = shutil.get_terminal_size((100, 30))
    w, h = width or min(cols, 160), height or max(15, min(lines - 6, 40))
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    f = new_figure()
    f.clear()
    f.theme("simple")
    f.plot_size(w, h)
    palette = [33, 208, 40, 170, 45, 196, 226, 99]
    legend = []
    symbols = "•o+x*#@%"
    shown = [r for r in recs if "error" not in r][:8]
    points = []
    for i, rec in enumerate(shown):
        fd = rec["fit"]
        c = palette[i % len(palette)]
        px = (c, "default") if colour else ("default", "default")
        sym = symbols[i % len(symbols)]
        tt = np.linspace(min(fd["hours"]), max(fd["hours"]), 80)
        s = f.signal(
            list(map(float, tt)),
            [float(v) for v in predict(fd["form"], fd["raw"], tt)],
            marker=plt.marker("braille", pixel=px),
        )
        s.lines()
        f.draw(s)
        points.append((fd["hours"], fd["scores"], sym, px))
        label = visible(" ".join(str(v) for v in rec["group"].values())) or "(all)"
        mark = f"\x1b[38;5;{c}m{sym}\x1b[0m" if colour else sym
        legend.append(
            f"{mark} {label}: {fd['form']}" + ("" if fd["findings"] else " (flagged: " + " ".join(fd["flags"]) + ")")
        )
    for xs, ys, sym, px in points:  # drawn last: the data stay visible over the curves
        f.draw(f.signal(xs, ys, marker=plt.marker(sym, pixel=px)))
    out = f.build().string()
    if not colour:
        out = _plain_text(out)
    more = len([r for r in recs if "error" not in r]) - len(shown)
    return (
        out
        + "\n"
        + "\n".join(legend)
        + (f"\n(+{more} more curves not drawn)" if more > 0 else "")
        + "\nx: hours, y: score (0-100)"
    )


# ---------------------------------------------------------------------------- learning speed


def _frontier(points):
    out, best = [], -float("inf")
    for p in sorted(points, key=lambda p: p[1]):
        if p[2] > best:
            out.append(p)
            best = p[2]
    return out


def _release_dates_needed(db: Path, args) -> str:
    """The error of ``learning-speed`` on recorded runs without ``--release-dates``: what the file
    holds, with the models of the recorded runs it needs dates for (as many as fit one line)."""
    models: list[str] = []
    if db.exists():
        from edgetui.analysis.recorded_curves import load_curves

        try:
            models = sorted({c.model for c in load_curves(_fetch(db, args.snapshot)) if c.model})
        except Exception:  # noqa: BLE001 - the models only help the message: it is said without them
            models = []
    first = models[0] if models else "claude-opus-4-8"
    named = ", ".join(models[:6]) + (f" and {len(models) - 6} more" if len(models) > 6 else "")
    return (
        "recorded runs need --release-dates FILE: a CSV of model,release_date (YYYY-MM), one line per model"
        + (f" of your runs ({named})" if models else "")
        + f", e.g. '{first},2026-06'; or --csv FILE of model,release_month,learning_speed "
        "(docs/analysis.md#learning-speed)"
    )


def cmd_learning_speed(db: Path, args) -> int:
    from edgetui.replay.analysis.learning import doubling_trend, read_release_dates, read_speed_table, recorded_speeds

    if args.bootstrap < 1:
        raise ValueError("--bootstrap must be 1 or more")
    undated: list = []
    if args.csv is not None:
        if not args.csv.is_file():
            raise FileNotFoundError(f"--csv {args.csv}: no such file")
        points = read_speed_table(args.csv)
        if args.frontier:
            points = _frontier(points)
        trend = doubling_trend(points, resamples=args.bootstrap, basis="models")
        source = f"{args.csv.name}: one value per model"
    else:
        if args.release_dates is None:
            raise ValueError(_release_dates_needed(db, args))
        if not args.release_dates.is_file():
            raise FileNotFoundError(f"--release-dates {args.release_dates}: no such file")
        dates = read_release_dates(args.release_dates)
        from edgetui.analysis.recorded_curves import load_curves

        curves = [
            c
            for c in load_curves(_fetch(db, args.snapshot))
            if (args.include_retry or not c.retry)
            and (args.include_samples or not c.is_sample)
            and (args.include_infra or not c.infra_error)
        ]
        points, R, undated = recorded_speeds(curves, dates, resamples=args.bootstrap)
        if args.frontier:
            keep = {p[0] for p in _frontier(points)}
            cols = [i for i, p in enumerate(points) if p[0] in keep]
            points, R = [points[i] for i in cols], R[:, cols]
        trend = doubling_trend(points, resampled=R, basis="tasks then runs")
        source = "recorded runs: gain from the first graded submission to 2 h, mean over tasks"
    if args.format == "json":
        d = trend.as_dict()
        d.update({"source": source, "frontier": args.frontier, "undated_models": undated})
        print(_dumps(d))
        return 0
    from edgetui.cli.output import emit
    from edgetui.store.holder_socket import QueryResult

    emit(
        QueryResult(["model", "release", "learning_speed"], [(m, f"{y:.2f}", f"{v:.2f}") for m, y, v in trend.points]),
        "table",
    )
    lo, hi = trend.interval
    if not trend.slope > 0:
        print(
            f"no doubling: learning speed does not grow with release date here (slope {trend.slope:.3f} of "
            f"ln(speed) per year); {trend.note}; source: {source}"
            + (f"; no release date for: {', '.join(undated)}" if undated else "")
        )
        return 0
    print(
        f"doubling time {trend.doubling_months:.2f} months ({100 * trend.level:.0f}% interval {lo:.2f}-{hi:.2f}; "
        f"bootstrap over {trend.basis}, {trend.resamples} resamples); R2 of ln(speed) on date {trend.r2:.2f}; "
        f"{trend.note}; source: {source}"
        + (f"; no release date for: {', '.join(undated)}" if undated else "")
        + (f"; speed <= 0, left out: {', '.join(trend.left_out)}" if trend.left_out else "")
    )
    return 0


# ---------------------------------------------------------------------------- forecast


def _resolve(db: Path, spec: str, snapshot: bool) -> str:
    from edgetui.cli.run_arguments import RowsConn, resolve_run

    fetch = _fetch(db, snapshot)
    return resolve_run(RowsConn(lambda sql, params: fetch(sql, params).rows), spec)


def _prior(db: Path, fetch, key: str):
    """The shape prior of run ``key`` (:func:`edgetui.analysis.forecast_prior.shape_prior`): feeding runs without a
    current stored fit are fitted now and stored in the fits table when this process can open the
    database for writing, else computed through ``fetch`` and not stored."""
    from edgetui.store.database import open_db
    from edgetui.analysis.forecast_prior import shape_prior

    try:
        conn = open_db(db)
    except Exception:  # noqa: BLE001 - held by another process: read through it, cache nothing
        note_swallowed("held by another process: read through it, cache nothing")
        return shape_prior(fetch, key)
    try:
        from edgetui.analysis.recorded_curves import fetch_from

        return shape_prior(fetch_from(conn), key, execute=conn.execute)
    finally:
        conn.close()


def cmd_forecast(db: Path, args) -> int:
    from edgetui.replay.analysis.forecast import forecast_run

    from edgetui.analysis.recorded_curves import load_curves

    key = _resolve(db, args.run, args.snapshot)
    fetch = _fetch(db, args.snapshot)
    (curve,) = load_curves(fetch, [key])
    from edgetui.cli.run_arguments import parse_at

    at = parse_at(args.at)
    horizon = args.horizon
    if horizon is None:
        budget = fetch("SELECT timeout_s FROM runs WHERE run_key = ?", [key]).rows[0][0]
        horizon = budget / 3600.0 if budget else 12.0
    p = _prior(db, fetch, key)
    published = None
    if args.published is not None:
        from edgetui.replay.analysis.forecast import PublishedCurves
        from edgetui.replay.analysis.leaderboard import read_task_table

        if not args.published.is_file():
            raise FileNotFoundError(f"--published {args.published}: no such file")
        if p.level != "task":  # earlier runs of the task come first
            published = PublishedCurves(read_task_table(args.published)[1], args.published.name)
    f = forecast_run(curve, horizon, p.beta, p.label, elapsed_s=at, published=published)
    if f is None:
        raise LookupError(f"{key}: no valid submission yet to forecast from")
    end_h = None if curve.live or curve.end_elapsed_s is None else curve.end_elapsed_s / 3600.0
    past_end = at is not None and end_h is not None and at / 3600.0 > end_h
    if args.format == "json":
        print(_dumps({"run_key": key, **f.as_dict(), "scale": "0-100", "run_end_h": end_h, "past_end": past_end}))
        return 0
    iv = "" if f.lo is None else f" (80% interval {f.lo:.1f}-{f.hi:.1f}, from the {f.window} back-test)"
    how = f"from {f.prior}" if f.beta != f.beta else f"beta {f.beta:.2f} from {f.prior}"  # NaN: no beta used
    print(
        f"{visible(key)} at {fmt_hours(f.elapsed_h)}: forecast at {fmt_hours(f.horizon_h)} {f.value:.1f}{iv}; "
        f"last best persists: {f.baseline:.1f}; {how}"
    )
    notes = [SCALE_NOTE]
    if past_end:
        notes.append(
            f"--at {args.at} is past the run's end ({end_h:.2f} h): the run's values at its end, carried "
            + ("(the horizon was reached: no forecast, its value there)" if f.lo is None else "")
        )
    print("; ".join(notes))
    return 0


# ---------------------------------------------------------------------------- compare


def compare_view_spec(names: list[str], groups: bool) -> dict:
    """What ``compare --view`` opens the app with (:class:`edgetui.views.screens.compare.CompareScreen`'s
    arguments): the runs or run groups, and ``direct`` (``q`` quits the app: nothing to go back to)."""
    return {"groups" if groups else "run_keys": names, "direct": True}


@_say_who_recorded
def cmd_compare(db: Path, args) -> int:
    from edgetui.replay.analysis.compare import group_series, parting_point, series_of_run, values_at
    from edgetui.replay.analysis.fit import fit_curve
    from edgetui.replay.analysis.score_at import run_group_key
    from edgetui.replay.cursor import format_elapsed

    from edgetui.analysis.recorded_curves import load_curves

    fetch = _fetch(db, args.snapshot)
    if args.view:
        from edgetui.views.app import run_app

        spec = compare_view_spec(
            list(args.runs) if args.groups else [_resolve(db, r, args.snapshot) for r in args.runs], args.groups
        )
        run_app(db, compare=spec)
        return 0
    if args.groups:
        curves = load_curves(fetch, team=args.team)
        series = []
        for g in args.runs:
            members = [c for c in curves if run_group_key(c.run_id) == g]
            if not members:
                raise LookupError(f"no recorded run has the run group {g!r}; see `edgetui runs`")
            series.append(group_series(g, members))
    else:
        keys = [_resolve(db, r, args.snapshot) for r in args.runs]
        by = {c.run_key: c for c in load_curves(fetch, keys)}
        series = [series_of_run(by[k]) for k in keys]
    if len(series) < 2:
        raise ValueError("compare needs two or more runs (or run groups)")
    compared = (
        [c for c in curves for g in args.runs if run_group_key(c.run_id) == g] if args.groups else list(by.values())
    )
    args.team_runs = [c.run_key for c in compared]
    mixed = mixed_tasks((c.task_id, c.variant) for c in compared)
    part = parting_point(series)
    recs: list[dict[str, Any]] = []
    for s in series:
        end = s.end_s or (s.steps[-1][0] if s.steps else 0.0)
        rec: dict[str, Any] = {
            "name": s.name,
            "runs": s.runs,
            "end_h": end / 3600.0,
            "steps": [{"elapsed_s": t, "value": v} for t, v in s.steps],
        }
        hours = [end / 3600.0 * k / 12 for k in range(1, 13)] if end > 0 else []
        pts = [(h, v) for h in hours if (v := s.at(h * 3600)) is not None]
        try:
            f = fit_curve([h for h, _ in pts], [v for _, v in pts]).as_dict()
            rec["fit"] = {k: f[k] for k in ("Smax", "t_mid", "beta", "t_half", "r2", "rmse", "flags", "raw")}
        except ValueError as e:
            rec["fit"] = {"error": str(e)}
        recs.append(rec)
    out: dict[str, Any] = {
        "curves": recs,
        "parting": None if part is None else {"elapsed_s": part[0], "values": part[1]},
        "mixed_variants": mixed,
    }
    if args.at is not None:
        from edgetui.cli.run_arguments import parse_at

        at = cast(float, parse_at(args.at))  # (a text given: a time, or ValueError)
        out["at"] = {"elapsed_s": at, "values": values_at(series, at)}
    if args.format == "json":
        print(_dumps(out))
        return 0

    def fv(v):
        return "–" if v is None else f"{v:.2f}"

    from edgetui.cli.output import emit
    from edgetui.store.holder_socket import QueryResult

    rows: list[tuple] = []
    for s, rec in zip(series, recs):
        f = rec["fit"]
        fit = f.get("error") or (
            f"t_half {fv(f['t_half'])} h; Smax, t_mid, beta withheld ({' '.join(f['flags'])})"
            if f["flags"]
            else f"Smax {fv(f['Smax'])} t_mid {fv(f['t_mid'])} beta {fv(f['beta'])}"
        )
        last = s.steps[-1][1] if s.steps else None
        rows.append(
            (s.name, format_elapsed(s.end_s), fv(last), fv(out["at"]["values"][len(rows)]) if "at" in out else "", fit)
        )
    emit(
        QueryResult(["curve", "elapsed", "best", f"at {args.at}" if args.at else "", "log-sigmoid fit"], rows), "table"
    )
    print(SCALE_NOTE)
    if part is None:
        print("their best-so-far curves never part (up to the shortest one's end)")
    else:
        print(
            f"they part at {format_elapsed(part[0])} elapsed: "
            + ", ".join(f"{visible(str(s.name))} {fv(v)}" for s, v in zip(series, part[1]))
        )
    if mixed:
        print(f"this comparison {mixed_note(mixed)}")
    if args.plot:
        print(_plot_compare(series))
    return 0


def _elapsed_ticks(x_max_h: float, n: int = 6) -> tuple[list[float], list[str]]:
    """About ``n`` x ticks over 0..``x_max_h`` hours on a round step, labelled h:mm (or m:ss
    under ten minutes)."""
    secs = max(x_max_h * 3600.0, 1.0)
    steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600]
    step = next((st for st in steps if secs / st <= n), 21600)
    ticks = [k * step for k in range(int(secs // step) + 1)]

    def label(t: float) -> str:
        t = int(round(t))
        if secs < 600:
            return f"{t // 60}:{t % 60:02d}"
        return f"{t // 3600}:{t % 3600 // 60:02d}"

    return [t / 3600.0 for t in ticks], [label(t) for t in ticks]


def _plot_compare(series) -> str:
    """Best-so-far step lines of ``series`` (at most 6) on one elapsed axis, as text: each line
    has its own mark at its steps (•, o, +, x, *, #) and the legend repeats it, so the curves tell
    apart without colour too (no colour when stdout is not a terminal or under NO_COLOR)."""
    import os
    import shutil

    import plotext as plt

    cols, lines = shutil.get_terminal_size((100, 30))
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    f = new_figure()
    f.clear()
    f.theme("simple")
    f.plot_size(min(cols, 160), max(12, min(lines - 6, 30)))
    palette = [33, 208, 40, 170, 45, 196]
    symbols = "•o+x*#"
    legend, marks, x_max = [], [], 0.0
    for i, s in enumerate(series[:6]):
        pts = [(t / 3600.0, v) for t, v in s.steps if v is not None]
        if not pts:
            continue
        xs: list[float] = []
        ys: list[float] = []
        for k, (x, y) in enumerate(pts):  # steps: hold each value until the next
            if k:
                xs.append(x)
                ys.append(ys[-1])
            xs.append(x)
            ys.append(y)
        end = (s.end_s or 0) / 3600.0
        if end > xs[-1]:
            xs.append(end)
            ys.append(ys[-1])
        x_max = max(x_max, xs[-1])
        c = palette[i % len(palette)]
        px = (c, "default") if colour else ("default", "default")
        sig = f.signal(xs, ys, marker=plt.marker("braille", pixel=px))
        sig.lines()
        f.draw(sig)
        sym = symbols[i % len(symbols)]
        marks.append(([x for x, _ in pts], [y for _, y in pts], sym, px))
        mark = f"\x1b[38;5;{c}m━{sym}━\x1b[0m" if colour else f"━{sym}━"
        legend.append(f"{mark} {visible(str(s.name))}")
    for xs, ys, sym, px in marks:  # drawn last: each curve's steps stay visible over the lines
        f.draw(f.signal(xs, ys, marker=plt.marker(sym, pixel=px)))
    if x_max > 0:
        ticks, labels = _elapsed_ticks(x_max)
        f.ruler("x").lim(0.0, max(x_max, ticks[-1]))
        f.ruler("x").ticks(ticks, labels)
    out = f.build().string()
    unit = "m:ss" if x_max * 3600.0 < 600 else "h:mm"
    return (
        (out if colour else _plain_text(out))
        + "\n"
        + "\n".join(legend)
        + f"\nx: elapsed ({unit}), y: best-so-far (0-100)"
    )


def _plain_text(s: str) -> str:
    """``s`` without escape sequences (plotext colours its frame whatever it is told)."""
    from edgetui.control_chars import strip_sequences

    return strip_sequences(s)


# ---------------------------------------------------------------------------- EdgeBench's tables


def cmd_edgebench_csv(db: Path, args) -> int:
    """EdgeBench's README → its tables as CSV files in ``args.output`` (the database is not used)."""
    import csv

    from edgetui.replay.analysis.published_tables import PublishedTables, read_published_tables

    try:
        text = args.readme.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(
            f"{args.readme}: no such file: save EdgeBench's README.md as {args.readme} first "
            "(docs/analysis.md#edgebenchs-published-tables)"
        ) from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{args.readme}: not UTF-8 text (byte {e.start})") from None
    t = read_published_tables(text, str(args.readme))
    if not args.output.is_dir():
        raise FileNotFoundError(f"-o {args.output}: no such folder")
    files = [
        ("edgebench_leaderboard.csv", "leaderboard", t.leaderboard),
        ("edgebench_category_12h.csv", "category", t.category),
        (f"edgebench_{t.per_task_suite}_per_task.csv", "per_task", t.per_task),
    ]
    for name, kind, rows in files:
        if not rows:
            print(f"{args.readme}: no {kind.replace('_', '-')} table found: {name} not written", file=sys.stderr)
            continue
        with open(args.output / name, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            head = PublishedTables.HEADERS[kind]
            w.writerow(head)
            for r in rows:  # hours as 2, 4 …; scores as the README writes them (39.0, 16.7)
                w.writerow(["" if v is None else f"{v:g}" if c == "hours" else str(v) for c, v in zip(head, r)])
        print(f"wrote {visible(str(args.output / name))} ({len(rows)} rows)")
    print(LEARNING_SPEED_NOTE)
    return 0


#: what ``edgebench-csv`` says of the learning-speed table it cannot write (not in EdgeBench's README)
LEARNING_SPEED_NOTE = (
    "no edgebench_learning_speed.csv: EdgeBench's README has no learning-speed table (its figures are a "
    "chart of the announcement). `edgetui learning-speed --release-dates FILE` measures it on your recorded "
    "runs (FILE: model,release_date lines); --csv FILE reads your own model,release_month,learning_speed "
    "table (docs/analysis.md#learning-speed)"
)
