"""The SQL screen through the app (headless, 160x48), the file held by the app itself or by another
process (then every page comes over its socket, from a cursor there): first rows of a 1,000,000-row
result, a page down past what is loaded (the next page fetched ahead), and peak memory for a
1,000,000-row result against a 10,000-row one (each size and mode in a fresh process; the database
is the bundled samples).

    .venv/bin/python bench/bench_sql_screen.py [--rounds 3] [--modes app,socket]

A page down is timed two ways: the Pilot round trip (key in, cursor moved, the frame drawn, as a test
drives the app; its floor is a one-column cursor move's, printed beside it), and the app's own share
of it: the grid's page-down action and the frames the compositor draws for it, main-thread wall and
CPU time. Prints the figures, their medians and the ratios 1M ÷ 10k.
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

HOLDER = (
    "import sys,time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
    "c=open_db(sys.argv[1]);h=holder_server(c,sys.argv[1]);print('ready',flush=True);time.sleep(3600)"
)


def holder_peak_mb(pid: int) -> float:
    """A process's peak resident memory (VmHWM), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Share:
    """Main-thread wall and CPU time in the wrapped calls, and the frames drawn."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0
        self.frames = 0

    def wrap(self, fn, frame: bool = False):
        def timed(*a, **k):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                self.wall += time.perf_counter() - t0
                self.cpu += time.thread_time() - c0
                self.frames += frame

        return timed

    def reset(self) -> None:
        self.wall = self.cpu = 0.0
        self.frames = 0


async def measure(db: Path, n: int, mode: str) -> dict:
    from edgetui.views.app import EdgeTUIApp
    from edgetui.views.screens.picker import PickerScreen
    from edgetui.views.screens.sql import SqlEditor, SqlScreen
    from edgetui.store.sql_results import PAGE_ROWS, HolderPagedResult

    async def until(pilot, cond, timeout=60.0):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError("the screen did not get there")
            await pilot.pause(0.001)

    holder = None
    if mode == "socket":
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().startswith("ready")
    try:
        app = EdgeTUIApp(db)
        out: dict = {"n": n, "mode": mode}
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
            assert isinstance(screen.result, HolderPagedResult) == (mode == "socket"), "not the mode asked for"
            await pilot.press("ctrl+r")
            table = screen.query_one("#sql-results")
            share = Share()
            table.action_page_down = share.wrap(table.action_page_down)
            table.action_cursor_right = share.wrap(table.action_cursor_right)
            table.action_cursor_left = share.wrap(table.action_cursor_left)
            screen._compositor_refresh = share.wrap(screen._compositor_refresh, frame=True)

            async def timed_key(key: str, moved) -> tuple[float, float, float]:
                await pilot.pause(0.02)  # the last key's frames drawn
                share.reset()
                t0 = time.perf_counter()
                await pilot.press(key)
                await until(pilot, lambda: moved() and share.frames >= 1)
                return time.perf_counter() - t0, share.wall, share.cpu

            # a page down as the user makes it: the cursor moves a screenful; the rows under it were
            # fetched ahead (the next page is asked for while a page is still left)
            downs = []
            for _ in range(30):
                before = table.cursor_row
                downs.append(await timed_key("pagedown", lambda b=before: b < table.cursor_row < len(screen.rows)))
            # the baseline: a key that moves the cursor one column (the same Pilot round trip and repaint)
            base = []
            for k in range(30):
                before = table.cursor_column
                base.append(
                    await timed_key("right" if k % 2 == 0 else "left", lambda b=before: table.cursor_column != b)
                )
            for name, xs in (("page_down", downs), ("key_baseline", base)):
                out[f"{name}_s"] = statistics.median(x[0] for x in xs)
                out[f"{name}_max_s"] = max(x[0] for x in xs)
                out[f"{name}_own_s"] = statistics.median(x[1] for x in xs)
                out[f"{name}_own_max_s"] = max(x[1] for x in xs)
                out[f"{name}_own_cpu_s"] = statistics.median(x[2] for x in xs)
            # the fetch of one page behind it: from asking to the rows in the table
            fetches = []
            for _ in range(5):
                await until(pilot, lambda: not screen.fetching)
                have = len(screen.rows)
                t0 = time.perf_counter()
                screen.fetching = True
                screen.fetch_more(screen.result)
                await until(pilot, lambda h=have: len(screen.rows) > h)
                fetches.append(time.perf_counter() - t0)
            out["page_fetch_s"] = statistics.median(fetches)
            out["rows_loaded"] = len(screen.rows)
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if holder is not None:
            out["holder_peak_mb"] = holder_peak_mb(holder.pid)
        return out
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()


def child(db: Path, n: int, mode: str) -> None:
    print(json.dumps(asyncio.run(measure(db, n, mode))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="app,socket", help="app (the app holds the file), socket (another process does)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="app", help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.db, a.child, a.mode)
        return
    from edgetui.cli.main import main as edgetui

    modes = a.modes.split(",")
    keys = (
        "first_rows_s",
        "page_down_s",
        "page_down_max_s",
        "page_down_own_s",
        "page_down_own_max_s",
        "page_down_own_cpu_s",
        "key_baseline_s",
        "key_baseline_own_s",
        "page_fetch_s",
        "peak_rss_mb",
        "holder_peak_mb",
    )
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "samples.duckdb"
        assert edgetui(["--db", str(db), "samples", "-q"]) == 0
        env = {**os.environ, "XDG_STATE_HOME": str(Path(d) / "state")}
        res: dict[tuple[str, int], list[dict]] = {(m, n): [] for m in modes for n in (10_000, 1_000_000)}
        for r in range(a.rounds):
            for m in modes:
                for n in (10_000, 1_000_000) if r % 2 == 0 else (1_000_000, 10_000):  # alternating
                    p = subprocess.run(
                        [sys.executable, __file__, "--child", str(n), "--mode", m, "--db", str(db)],
                        capture_output=True,
                        text=True,
                        env=env,
                        check=True,
                    )
                    res[(m, n)].append(json.loads(p.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    med = {
        mn: {k: statistics.median(x[k] for x in rs) for k in keys if all(k in x for x in rs)} for mn, rs in res.items()
    }
    ms = 1000
    for (m, n), x in med.items():
        where = "the app holds the file" if m == "app" else "another process holds it: pages over its socket"
        print(f"{n:>9,} rows, {where} (medians of {a.rounds}):")
        print(
            f"    first rows {x['first_rows_s'] * ms:.0f} ms; a page fetched {x['page_fetch_s'] * ms:.1f} ms (ahead of the cursor)"
        )
        print(
            f"    page down through Pilot {x['page_down_s'] * ms:.1f} ms (slowest {x['page_down_max_s'] * ms:.1f}); "
            f"a one-column move through Pilot {x['key_baseline_s'] * ms:.1f} ms"
        )
        print(
            f"    page down, the app's own share (action + frames drawn): {x['page_down_own_s'] * ms:.1f} ms wall "
            f"(slowest {x['page_down_own_max_s'] * ms:.1f}), {x['page_down_own_cpu_s'] * ms:.1f} ms CPU; "
            f"the column move's: {x['key_baseline_own_s'] * ms:.1f} ms"
        )
        holder = f", the holder process {x['holder_peak_mb']:.0f} MB" if "holder_peak_mb" in x else ""
        print(f"    peak memory: the app {x['peak_rss_mb']:.0f} MB{holder}")
    for m in modes:
        big, small = med[(m, 1_000_000)], med[(m, 10_000)]
        holder = f", holder {big['holder_peak_mb'] / small['holder_peak_mb']:.3f}x" if "holder_peak_mb" in big else ""
        print(
            f"{m}: ratios 1M / 10k: first rows {big['first_rows_s'] / small['first_rows_s']:.2f}x, "
            f"page down (own) {big['page_down_own_s'] / small['page_down_own_s']:.2f}x, "
            f"peak memory app {big['peak_rss_mb'] / small['peak_rss_mb']:.3f}x{holder}"
        )
    print(
        "targets: first rows < 0.5 s, page down < 50 ms, memory within 1.1x; "
        f"load average {min(loads):.1f}-{max(loads):.1f}"
    )


if __name__ == "__main__":
    main()
