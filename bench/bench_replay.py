"""Replay screen speed on a 50,000-event run, measured through the running app (headless).

Builds a synthetic 12-hour run (the builder of ``tests/test_replay_cursor.py``)
in a temp DuckDB file, opens ``EdgeTUIApp(db, run_key)`` with ``run_test`` and
prints:

* first paint: app start (entering ``run_test``) until the replay screen is
  mounted, its event list holds every event and the first frame showing it
  has been composed;
* step: median of 50 ``j`` key presses, each from posting the key event to
  the app until the next frame after the selection moved is composed (list
  rows, chart cursor, status: everything the key changes);
* jump to last: one ``G`` press, same measure (the list scrolls 50,000 rows);
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
        return None if cur is None else (cur.index, cur.play_head, cur.query)

    def timed_display(screen, renderable):
        if renderable is not None:
            frames.append((time.perf_counter(), shown()))
        return display(screen, renderable)

    app._display = timed_display  # type: ignore[method-assign]

    async def frame_where(t0: float, ok, timeout: float = 10.0) -> float:
        """Seconds from ``t0`` to the first frame composed after ``t0`` whose state satisfies ``ok``."""
        while True:
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
            t0, lambda s: isinstance(app.screen, ReplayScreen) and app.screen.query_one(EventList).count > 0)
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

        out["jump to last"] = await key("G", lambda s: s[0] == n - 1)
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
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.split("x"))
    sizes = [int(x) for x in args.events.split(",")]

    from test_replay_cursor import build_synthetic_run

    t = time.perf_counter()
    import plotext  # noqa: F401  (import cost reported separately: it is paid before the app starts)
    import_s = time.perf_counter() - t

    ok = True
    paints: dict[int, float] = {}
    peaks: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="edgetui-bench-") as d:
        for n_events in sizes:
            db = Path(d) / f"bench-{n_events}.duckdb"
            t = time.perf_counter()
            rk = build_synthetic_run(db, n_events, run_id="bench-run")
            build_s = time.perf_counter() - t
            print(f"built {n_events:,}-event run in {build_s:.1f} s (not counted; plotext import {import_s * 1000:.0f} ms)")
            import multiprocessing as mp

            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            child = ctx.Process(target=_measure_in_child, args=(str(db), rk, (w, h), q))
            child.start()
            res, peak = q.get()
            child.join()
            paints[n_events] = res["first paint"]
            peaks[n_events] = peak
            print(f"\nreplay bench, {n_events:,} events, terminal {w}x{h}")
            for name, v in res.items():
                if name.startswith("  ("):
                    print(f"  {name.strip()[1:-1]:<38} {v:8,d}")
                    continue
                target = TARGETS.get(name)
                if name.startswith("search summaries"):
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
    small = min(paints)
    for n_events, v in sorted(paints.items()):
        if n_events != small:
            r = v / paints[small]
            ok &= r <= 1.25
            print(f"first paint {n_events:,} / {small:,} events: {r:.2f}x  target <= 1.25x  "
                  f"{'OK' if r <= 1.25 else 'MISSED'}; peak memory {peaks[n_events]:.0f} / {peaks[small]:.0f} MB "
                  f"(+{peaks[n_events] - peaks[small]:.0f} MB)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
