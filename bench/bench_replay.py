"""Replay screen speed on a 50,000-event run, measured through the running app (headless).

Builds a synthetic 12-hour run (the builder of ``tests/test_replay_cursor.py``)
in a temp DuckDB file, opens ``EdgeTUIApp(db, run_key)`` with ``run_test`` and
prints:

* first paint: app start (entering ``run_test``) until the replay screen is
  mounted, its event list shows rows (the first page: :mod:`edgetui.paged`) and the
  first frame showing them has been composed;
* whole run ready: the same until the cursor over every event's time and marks is the
  screen's (keys pressed before it wait for it);
* step: median of 50 ``j`` key presses, each from posting the key event to
  the app until the next frame after the selection moved is composed (list
  rows, chart cursor, status: everything the key changes);
* jump to last: one ``G`` press, same measure, until the frame showing the last row read
  (its page is read from the database on the way);
* also: next submission, a 600× play tick, a database search.

Frames are timed by wrapping ``App._display`` (called with every composed
update, also headless), so Pilot's idle waits (~20 ms granularity) are not
counted. The detail pane fills in after a 50 ms debounce and is not part of
the step figure; its load is timed separately ("detail shown").

Targets: first paint < 1 s, step < 50 ms, jump to last < 100 ms.

With ``--events 50000,1000000`` each size is built and measured in turn in this process
(the builds are not counted): first paint at 1,000,000 events < 0.8 s and within 1.25× the
50,000-event figure, search of summaries and tool names < 0.3 s, and the growth of the
process's resident memory while the app ran.

Usage: ``.venv/bin/python bench/bench_replay.py [--events N[,N...]] [--size WxH]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic-run builder lives with the tests

TARGETS = {"first paint": 1.0, "step (median of 50)": 0.050, "jump to last": 0.100}
SEARCH = "search summaries and tool names"


async def measure(db: Path, run_key: str, size: tuple[int, int]) -> dict[str, float]:
    from edgetui.app import EdgeTUIApp
    from edgetui.screens.replay import ReplayScreen
    from edgetui.widgets import EventList

    out: dict[str, float] = {}
    clock_now = [0.0]
    app = EdgeTUIApp(db, run_key, clock=lambda: clock_now[0])
    frames: list[tuple[float, object]] = []  # (time, selected index shown by that frame)
    display = app._display

    def shown() -> object:
        scr = app.screen
        cur = getattr(scr, "cursor", None)
        if cur is None:
            return None
        return (cur.index, cur.play_head, cur.query, cur.events.event_id[cur.index] is not None)

    def timed_display(screen, renderable):
        if renderable is not None:
            now = time.perf_counter()
            frames.append((now, shown()))
            scr = app.screen
            if isinstance(scr, ReplayScreen) and scr.query_one(EventList).count > 0:
                painted.append(now)
        return display(screen, renderable)

    app._display = timed_display  # type: ignore[method-assign]

    painted: list[float] = []  # frames with rows in the list (the preview's too)

    async def frame_where(t0: float, ok, timeout: float = 30.0, accept_none: bool = False) -> float:
        """Seconds from ``t0`` to the first frame composed after ``t0`` whose state satisfies ``ok``."""
        while True:
            if accept_none:
                for t in painted:
                    if t > t0:
                        return t - t0
            for t, state in frames:
                if t > t0 and state is not None and ok(state):
                    return t - t0
            if time.perf_counter() - t0 > timeout:
                raise TimeoutError("no such frame")
            await asyncio.sleep(0)

    async def key(k: str, ok) -> float:
        t = time.perf_counter()
        app.simulate_key(k)
        return await frame_where(t, ok)

    t0 = time.perf_counter()
    async with app.run_test(size=size) as pilot:
        out["first paint"] = await frame_where(
            t0, lambda s: isinstance(app.screen, ReplayScreen) and app.screen.query_one(EventList).count > 0,
            accept_none=True)
        out["whole run ready"] = await frame_where(t0, lambda s: True)
        screen = app.screen
        n = screen.cursor.n
        await pilot.pause(0.2)

        steps = []
        for _ in range(50):
            i = screen.cursor.index
            steps.append(await key("j", lambda s, i=i: s[0] == i + 1))
            await asyncio.sleep(0.005)
        out["step (median of 50)"] = statistics.median(steps)
        out["step (max of 50)"] = max(steps)

        detail = screen.query_one("#detail")
        if not screen.detail_visible:  # narrow terminals start without the detail pane
            await pilot.press("d")
            await pilot.pause(0.2)
        i = screen.cursor.index
        t = time.perf_counter()
        app.simulate_key("j")
        want = screen.cursor.events.event_id[i + 1]
        while detail.detail is None or detail.detail["event"]["event_id"] != want:
            if time.perf_counter() - t > 10:
                raise TimeoutError("detail never shown")
            await asyncio.sleep(0)
        out["detail shown (after 50 ms debounce)"] = (await frame_where(time.perf_counter(), lambda s: True)) + (time.perf_counter() - t)

        out["jump to last"] = await key("G", lambda s: s[0] == n - 1 and s[3])
        await pilot.pause(0.1)
        out["jump to first"] = await key("g", lambda s: s[0] == 0)
        await pilot.pause(0.1)
        out["next submission"] = await key("right_square_bracket", lambda s: s[0] > 0)
        await pilot.pause(0.1)

        await pilot.press("s", "s", "s", "space")
        ticks = []
        for _ in range(20):
            clock_now[0] += 0.05
            t = time.perf_counter()
            screen.play_tick()
            head = screen.cursor.play_head
            ticks.append(await frame_where(t, lambda s, head=head: s[1] == head))
            await asyncio.sleep(0.005)
        out["play tick at 600× (median)"] = statistics.median(ticks)
        await pilot.press("space")

        for q, label in (("band-pass", "search summaries and tool names"),
                         ("needle", "search falling back to tool output")):
            await pilot.press("slash", *q)
            t = time.perf_counter()
            app.simulate_key("enter")
            took = await frame_where(t, lambda s, q=q: s[2] == q)
            out[label] = took
            out[f"  ({label}: matches)"] = len(screen.cursor.matches)
            await pilot.pause(0.2)
    return out


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _measure_in_child(db: str, rk: str, size: tuple[int, int], q) -> None:
    """One app run in a fresh process (its peak RSS is the app's alone, not the builder's)."""
    sys.path.insert(0, str(ROOT / "tests"))
    res = asyncio.run(measure(Path(db), rk, size))
    q.put((res, _peak_rss_mb()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="50000",
                    help="event counts, comma-separated (e.g. 50000,1000000): each measured in this process, "
                         "the first paint of the larger against the smallest")
    ap.add_argument("--size", default="160x48")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure the sizes in turn this many times (interleaved): ranges and per-round ratios")
    ap.add_argument("--keep-dir", default=None,
                    help="build the runs' databases here and reuse them when present (default: a temporary folder)")
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    sizes = [int(x) for x in args.events.split(",")]

    from test_replay_cursor import build_synthetic_run

    t = time.perf_counter()
    import plotext  # noqa: F401  (import cost reported separately: it is paid before the app starts)
    import_s = time.perf_counter() - t

    ok = True
    paints: dict[int, list[float]] = {n: [] for n in sizes}
    peaks: dict[int, list[float]] = {n: [] for n in sizes}
    searches: dict[int, list[float]] = {n: [] for n in sizes}
    import contextlib
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with (contextlib.nullcontext(args.keep_dir) if args.keep_dir
          else tempfile.TemporaryDirectory(prefix="edgetui-bench-")) as d:
        Path(d).mkdir(parents=True, exist_ok=True)
        dbs = {}
        for n_events in sizes:
            db = Path(d) / f"bench-{n_events}.duckdb"
            from edgetui.records import make_run_key

            if not db.exists():
                t = time.perf_counter()
                build_synthetic_run(db, n_events, run_id="bench-run")
                print(f"built {n_events:,}-event run in {time.perf_counter() - t:.1f} s (not counted)")
            dbs[n_events] = (db, make_run_key("local", "bench-run", "gw-detect"))
        print(f"plotext import {import_s * 1000:.0f} ms (paid before the app starts; not counted)")
        for rnd in range(args.rounds):
            for n_events in sizes:
                db, rk = dbs[n_events]
                q = ctx.Queue()
                child = ctx.Process(target=_measure_in_child, args=(str(db), rk, (w, h), q))
                child.start()
                res, peak = q.get()
                child.join()
                paints[n_events].append(res["first paint"])
                peaks[n_events].append(peak)
                searches[n_events].append(res[SEARCH])
                print(f"\nreplay bench, {n_events:,} events, terminal {w}x{h}, round {rnd + 1}/{args.rounds} "
                      f"(load average {open('/proc/loadavg').read().split()[0]})")
                for name, v in res.items():
                    if name.startswith("  ("):
                        print(f"  {name.strip()[1:-1]:<38} {v:8,d}")
                        continue
                    target = TARGETS.get(name)
                    if name == SEARCH:
                        target = 0.3
                    if name == "first paint" and n_events >= 1_000_000:
                        target = 0.8
                    mark = ""
                    if target is not None:
                        good = v < target
                        ok &= good
                        mark = f"  target < {target * 1000:.0f} ms  {'OK' if good else 'MISSED'}"
                    print(f"  {name:<38} {v * 1000:8.1f} ms{mark}")
                print(f"  {'peak resident memory of the app':<38} {peak:8.0f} MB (a process of its own: Python, "
                      "Textual, DuckDB and the run)")

    def rng(xs: list[float], k: float = 1000.0) -> str:
        return f"{min(xs) * k:.0f}" if len(xs) == 1 else f"{min(xs) * k:.0f}–{max(xs) * k:.0f}"

    small = min(sizes)
    print(f"\nsummary (load average now {open('/proc/loadavg').read().split()[0]}; ranges over {args.rounds} round(s))")
    for n_events in sizes:
        print(f"  {n_events:>9,} events: first paint {rng(paints[n_events])} ms, search {rng(searches[n_events])} ms, "
              f"peak memory {rng(peaks[n_events], 1.0)} MB")
    for n_events in sizes:
        if n_events == small:
            continue
        ratios = [b / a for a, b in zip(paints[small], paints[n_events])]
        mem = [b / a for a, b in zip(peaks[small], peaks[n_events])]
        r = statistics.median(ratios)
        good = r <= 1.25
        ok &= good
        print(f"first paint {n_events:,} / {small:,} events, per round: {', '.join(f'{x:.2f}x' for x in ratios)} "
              f"(median {r:.2f}x)  target <= 1.25x  {'OK' if good else 'MISSED'}")
        print(f"peak memory {n_events:,} / {small:,} events, per round: {', '.join(f'{x:.2f}x' for x in mem)} "
              f"(+{statistics.median(peaks[n_events]) - statistics.median(peaks[small]):.0f} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
