"""The SQL screen through the app (headless, 160x48): first rows of a 1,000,000-row result, a page
down past what is loaded (the next page fetched from the held cursor), and the process's peak memory
for a 1,000,000-row result against a 10,000-row one (each size in a fresh process, the app's own
database being the bundled samples).

    .venv/bin/python bench/bench_sql_screen.py [--rounds 3]

Prints the figures, their medians and the ratios: 1M first rows ÷ 10k first rows, peak 1M ÷ peak 10k.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "SELECT i, 'row ' || i AS label, i * 0.5 AS half, repeat('x', 40) AS pad FROM range({n}) t(i)"


async def measure(db: Path, n: int) -> dict:
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.picker import PickerScreen
    from edgetui.views.screens.sql import SqlEditor, SqlScreen
    from edgetui.store.sql_results import PAGE_ROWS

    async def until(pilot, cond, timeout=60.0):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError("the screen did not get there")
            await pilot.pause(0.001)

    app = EdgeTUIApp(db)
    out: dict = {"n": n}
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, PickerScreen) and app.screen.rows)
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, SqlScreen) and app.screen.words)
        screen = app.screen
        screen.query_one(SqlEditor).text = QUERY.format(n=n)
        t0 = time.perf_counter()
        await pilot.press("f5")
        await until(pilot, lambda: len(screen.rows) >= PAGE_ROWS)
        out["first_rows_s"] = time.perf_counter() - t0
        await pilot.press("ctrl+r")
        downs = []
        table = screen.query_one("#sql-results")
        # a page down as the user makes it: the cursor moves a screenful; the rows under it were
        # fetched ahead (the next page is asked for while a page is still left)
        downs = []
        for _ in range(30):
            before = table.cursor_row
            t0 = time.perf_counter()
            await pilot.press("pagedown")
            await until(pilot, lambda b=before: b < table.cursor_row < len(screen.rows))
            downs.append(time.perf_counter() - t0)
        out["page_down_s"] = statistics.median(downs)
        out["page_down_max_s"] = max(downs)
        # the baseline: a key that moves the cursor one column (the same Pilot round trip and repaint)
        base = []
        for k in range(30):
            before = table.cursor_column
            t0 = time.perf_counter()
            await pilot.press("right" if k % 2 == 0 else "left")
            await until(pilot, lambda b=before: table.cursor_column != b)
            base.append(time.perf_counter() - t0)
        out["key_baseline_s"] = statistics.median(base)
        # the fetch of one page behind it: from asking to the rows in the table
        fetches = []
        for _ in range(5):
            have = len(screen.rows)
            t0 = time.perf_counter()
            screen.fetch_more(screen.result)
            await until(pilot, lambda h=have: len(screen.rows) > h)
            fetches.append(time.perf_counter() - t0)
        out["page_fetch_s"] = statistics.median(fetches)
        out["rows_loaded"] = len(screen.rows)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def child(db: Path, n: int) -> None:
    print(json.dumps(asyncio.run(measure(db, n))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.db, a.child)
        return
    from edgetui.cli.main import main as edgetui

    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "samples.duckdb"
        assert edgetui(["--db", str(db), "samples", "-q"]) == 0
        env = {**os.environ, "XDG_STATE_HOME": str(Path(d) / "state")}
        res: dict[int, list[dict]] = {10_000: [], 1_000_000: []}
        for r in range(a.rounds):
            for n in (10_000, 1_000_000) if r % 2 == 0 else (1_000_000, 10_000):  # alternating
                p = subprocess.run(
                    [sys.executable, __file__, "--child", str(n), "--db", str(db)],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                res[n].append(json.loads(p.stdout.strip().splitlines()[-1]))
    load = os.getloadavg()[0]
    med = {
        n: {
            k: statistics.median(x[k] for x in rs)
            for k in ("first_rows_s", "page_down_s", "page_down_max_s", "page_fetch_s", "key_baseline_s", "peak_rss_mb")
        }
        for n, rs in res.items()
    }
    for n, m in med.items():
        print(
            f"{n:>9,} rows: first rows {m['first_rows_s'] * 1000:.0f} ms, page down {m['page_down_s'] * 1000:.1f} ms "
            f"(slowest {m['page_down_max_s'] * 1000:.1f}; a column move {m['key_baseline_s'] * 1000:.1f}), a page fetched {m['page_fetch_s'] * 1000:.1f} ms, "
            f"peak {m['peak_rss_mb']:.0f} MB (medians of {a.rounds})"
        )
    big, small = med[1_000_000], med[10_000]
    print(
        f"ratios 1M / 10k: first rows {big['first_rows_s'] / small['first_rows_s']:.2f}x, "
        f"page down {big['page_down_s'] / small['page_down_s']:.2f}x, peak memory {big['peak_rss_mb'] / small['peak_rss_mb']:.3f}x"
        f" (targets: first rows < 0.5 s, page down < 50 ms, memory within 1.1x); load {load:.1f}"
    )


if __name__ == "__main__":
    main()
