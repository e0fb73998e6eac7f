"""Speed of the live forecast update with its shape prior (edgetui.analysis.forecast_prior.header_forecast):
what a live run's forecast costs after each graded submission, in a real DuckDB file.

Records ``--earlier`` finished 12-hour runs of one task (a graded submission every 10 minutes:
72 each) and one live run of it 3 hours in, with the real ingest (tests/runs_factory.py), then
times in this process (each update: median of ``--repeat``, and the slowest):

* the **baseline**: the forecast with the default prior (``forecast_run`` on the curve rebuilt
  from the run's submissions: what the update cost before the prior was automatic);
* the **first** update, nothing stored yet: the update reads the feeding runs' data hashes, finds
  no stored fit, shows the default prior and names the runs pending (no fit in the update);
* the **background fit** of those runs (``edgetui.analysis.forecast_prior.fit_runs``, the app's worker): not an
  update, printed for what the worker costs (first call: with scipy's import);
* a **stored** update (every feeding run's fit stored and current): what every later graded
  submission pays;
* an update **after one earlier run changed** (its stored fit stale: left out, pending), then
  its refit alone.

Prints each in ms and as a ratio to the baseline. Target: every update < 50 ms.

Usage: ``.venv/bin/python bench/bench_forecast_prior.py [--earlier 20] [--repeat 15]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the run-directory builder lives with the tests


def _law(h, b):
    return 80.0 / (1 + (4.0 / h) ** b)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--earlier", type=int, default=20, help="finished runs of the task before the live one")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)

    from runs_factory import HOUR, NOW, ingest, write_run, write_task

    from edgetui.store import queries as store
    from edgetui.analysis.recorded_curves import fetch_from
    from edgetui.analysis.forecast_prior import header_forecast
    from edgetui.analysis.forecast_prior import fit_runs
    from edgetui.store.database import open_db
    from edgetui.replay.analysis.forecast import forecast_run
    from edgetui.replay.analysis.score_at import run_curve

    with tempfile.TemporaryDirectory(prefix="edgetui-prior-") as tmp:
        tmp = Path(tmp)
        tasks, runs, db = tmp / "tasks", tmp / "runs", tmp / "b.duckdb"
        write_task(tasks, "law", selection="pass_rate_first", parser="pytest")
        for i in range(args.earlier):
            b = 0.8 + 0.05 * i
            write_run(
                runs,
                f"old-{i}",
                "law",
                model="M",
                start=NOW - (200 - 5 * i) * HOUR,
                duration_s=12.2 * HOUR,
                subs=[(k * 600.0, _law(k / 6, b) / 100, None, 60.0) for k in range(1, 73)],
            )
        write_run(
            runs,
            "live",
            "law",
            model="M",
            start=NOW - 3 * HOUR - 300,
            duration_s=None,
            subs=[(k * 600.0, _law(k / 6, 1.0) / 100, None, 60.0) for k in range(1, 19)],
        )
        ingest(db, [runs], tasks)
        conn = open_db(db)
        try:
            rk = "local/live/law"
            head, subs = store.run_header(conn, rk), store.submissions(conn, rk)

            def default_update():
                t = store.task(conn, head.get("task_id"))
                c = run_curve(head, subs, t.get("rescale") if t else None, now=head.get("last_t"))
                return forecast_run(c, 12.0)

            cpu: dict[str, list[float]] = {}

            def timed(fn, n, name=""):
                out = []
                for _ in range(n):
                    t0, c0 = time.perf_counter(), time.process_time()
                    fn()
                    out.append(time.perf_counter() - t0)
                    cpu.setdefault(name, []).append(time.process_time() - c0)
                return statistics.median(out), max(out)

            update = lambda: header_forecast(conn, head, subs)
            base, _ = timed(default_update, args.repeat, "base")
            t0 = time.perf_counter()
            fc0 = update()
            first = time.perf_counter() - t0
            first_med, first_max = timed(update, args.repeat, "update")
            pending = fc0["prior_pending"]
            t0 = time.perf_counter()
            fit_runs(fetch_from(conn), pending, execute=conn.execute)
            fit_s = time.perf_counter() - t0
            stored_med, stored_max = timed(update, args.repeat, "update")
            fc = update()
            # one earlier run re-recorded with another curve: its stored fit is stale
            write_run(
                tmp / "again",
                "old-0",
                "law",
                model="M",
                start=NOW - 200 * HOUR,
                duration_s=12.2 * HOUR,
                subs=[(k * 600.0, _law(k / 6, 2.5) / 100, None, 60.0) for k in range(1, 73)],
            )
            conn.close()
            ingest(db, [tmp / "again"], tasks)
            conn = open_db(db)
            t0 = time.perf_counter()
            fc1 = update()
            changed = time.perf_counter() - t0
            changed_med, changed_max = timed(update, args.repeat, "update")
            t0 = time.perf_counter()
            fit_runs(fetch_from(conn), fc1["prior_pending"], execute=conn.execute)
            refit_s = time.perf_counter() - t0
            after_med, after_max = timed(update, args.repeat, "update")
        finally:
            conn.close()
    worst = max(first, first_max, stored_max, changed, changed_max, after_max)
    print(f"live forecast update, {args.earlier} earlier runs of the task x 72 graded submissions, live run at 3 h:")
    print(f"  baseline (default prior, curve + forecast): {1000 * base:.1f} ms")
    print(
        f"  first update, nothing stored ({len(pending)} pending, default prior): {1000 * first:.1f} ms; "
        f"median {1000 * first_med:.1f} ms ({first_med / base:.1f}x)"
    )
    print(
        f"  background fit of the {len(pending)} runs (not an update; scipy's import included): {1000 * fit_s:.0f} ms"
    )
    print(
        f"  update with every fit stored: median {1000 * stored_med:.1f} ms ({stored_med / base:.1f}x), "
        f"slowest {1000 * stored_max:.1f} ms"
    )
    print(
        f"  after one earlier run changed ({len(fc1['prior_pending'])} pending): {1000 * changed:.1f} ms; "
        f"median {1000 * changed_med:.1f} ms; its refit {1000 * refit_s:.0f} ms; then median "
        f"{1000 * after_med:.1f} ms"
    )
    print(
        f"  slowest update of all: {1000 * worst:.1f} ms wall (target < 50 ms: {'met' if worst < 0.05 else 'NOT met'})"
    )
    u = cpu["update"]
    print(
        f"  CPU per update (this process, DuckDB's threads included), {len(u)} updates: median "
        f"{1000 * statistics.median(u):.1f} ms, slowest {1000 * max(u):.1f} ms; baseline median "
        f"{1000 * statistics.median(cpu['base']):.1f} ms; load average {open('/proc/loadavg').read().split()[0]}"
    )
    print(
        f"  forecast {fc['value']:.1f} [{fc['lo']:.1f}-{fc['hi']:.1f}] at 12 h, last best {fc['baseline']:.1f}, "
        f"beta {fc['beta']:.2f} from {fc['prior']}; before the fits: beta {fc0['beta']:.2f} from {fc0['prior']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
