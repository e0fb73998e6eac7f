"""Live supervision benchmark, append -> SCREEN: the whole app (EdgeTUIApp, live mode, files only)
with N simulated runs whose transcripts grow.

    .venv/bin/python bench/bench_live_screen.py [--runs 150] [--rate 5] [--seconds 60] [--history 300]

The app runs headless (Textual's ``run_test`` driver: layout, rendering and
compositing happen as in a terminal; the bytes go nowhere). Runs, writer
process and submissions are those of ``bench/bench_live.py``. Two phases of
``--seconds / 2`` each:

1. the runs screen is shown: lag of a line = time of the first screen refresh
   after the runs table took a supervisor snapshot that includes the line
   (the snapshot of the refresh whose transaction recorded the line) − its
   append time; over every line of every run (but those of the last second
   before the switch, which the hidden runs screen may never show);
2. the live run screen of run 0 is shown (pinned to now): lag of a line of
   run 0 = time of the first screen refresh after the event list held an
   event at or past the line's byte offset − its append time.

"Screen refresh" = Textual's ``call_after_refresh`` after the widget update
(the frame that shows it has been composed). Printed: p50 / p95 / max per
phase, CPU share of one core of the app process (writer excluded), by phase and by
thread (the supervisor's ``edgetui-live``, Textual's main thread, the screen's
thread workers, DuckDB's and other unnamed threads; from ``/proc/self/task``),
peak RSS.
Target: p95 under 1 s, under 25 % of one core (the issue's live targets).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import multiprocessing as mp
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_live import machine_reference_s, make_runs, writer  # noqa: E402 - after sys.path is set above


def thread_cpu() -> dict[str, tuple[str, float]]:
    """CPU seconds (user + system) of each thread of this process: {tid: (name, seconds)}; Python
    threads by their name, the others (DuckDB's, watchfiles' inotify) as "duckdb/other"."""
    import threading

    names = {str(t.native_id): t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        name = names.get(tid, "duckdb/other")
        if name.startswith(("asyncio_", "ThreadPool")):
            name = "screen workers"
        out[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return out


def pct(xs: list[float], p: float) -> float:
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else float("nan")


async def run(args) -> int:
    os.environ.setdefault("XDG_CONFIG_HOME", tempfile.mkdtemp(prefix="edgetui-bench-cfg-"))  # default alarm settings
    from edgetui.views.app import EdgeTUIApp, LiveConfig
    from edgetui.live.supervisor import Supervisor
    from edgetui.live.tail import Tailer
    from edgetui.views.screens.live_run import LiveRunScreen
    from edgetui.views.screens.runs import RunsScreen

    tmp = Path(tempfile.mkdtemp(prefix="edgetui-bench-screen-"))
    root = tmp / "runs"
    paths = make_runs(root, args.runs, args.history)
    key0 = "local/bench-0/task0"

    # ---- instrumentation (wraps; the app's code paths are unchanged)
    poll_no = [0]
    commits: list[tuple[float, int, dict]] = []  # (time, poll number, {(run_key, source): max offset})
    snap_poll: dict[int, int] = {}  # id(LiveRun) -> poll number of its snapshot
    keep_alive: list = []
    runs_frames: list[tuple[float, int]] = []  # (refresh time, poll number shown)
    list_frames: list[tuple[float, int]] = []  # (refresh time, max transcript offset of run 0 in the list)

    orig_commit = Tailer._commit

    def timed_commit(self, events, cursors):
        orig_commit(self, events, cursors)
        top: dict = {}
        for e in events:
            k = (e.run_key, e.source)
            if e.offset > top.get(k, -1):
                top[k] = e.offset
        commits.append((time.time(), poll_no[0], top))

    Tailer._commit = timed_commit
    orig_poll = Supervisor.poll_once

    def counted_poll(self):
        poll_no[0] += 1
        n = poll_no[0]
        runs = orig_poll(self)
        for r in runs:
            snap_poll[id(r)] = n
        keep_alive.append(runs)
        del keep_alive[:-50]
        return runs

    Supervisor.poll_once = counted_poll
    orig_render = RunsScreen._render_all

    def timed_render(self):
        orig_render(self)
        if self.runs:
            n = snap_poll.get(id(self.runs[0]))
            if n is not None:
                self.call_after_refresh(lambda n=n: runs_frames.append((time.time(), n)))

    RunsScreen._render_all = timed_render
    orig_apply = LiveRunScreen._apply_reload

    def timed_apply(self, msg):
        orig_apply(self, msg)
        ev = self.cursor.events
        offs = [o for o, s in zip(ev.offset, ev.source) if s == "agent_output.txt" and o is not None]
        top = max(offs) if offs else -1
        self.call_after_refresh(lambda: list_frames.append((time.time(), top)))

    LiveRunScreen._apply_reload = timed_apply

    app = EdgeTUIApp(
        tmp / "bench.duckdb",
        live=LiveConfig([root], home=True, interval=args.interval, docker=False),
        on_empty=lambda p: None,
    )
    ctx = mp.get_context("spawn")
    go = ctx.Event()
    log_path = str(tmp / "writer.json")
    proc = ctx.Process(
        target=writer,
        args=([str(p) for p in paths], args.rate, args.seconds, args.history, log_path, go, args.submit_every),
    )
    async with app.run_test(size=(160, 48)) as pilot:
        t0 = time.time()
        # startup: every run listed and caught up (not measured)
        while True:
            await pilot.pause(0.2)
            sup = app.supervisor
            scr = app.screen
            if (
                sup is not None
                and not sup.behind
                and isinstance(scr, RunsScreen)
                and len(scr.runs) == args.runs
                and not any(rs.dirty_files for rs in sup.runs.values())
            ):
                break
            if time.time() - t0 > 600:
                print("startup did not finish in 600 s")
                return 1
        startup = time.time() - t0
        runs_screen = app.screen
        proc.start()
        await asyncio.sleep(0.5)
        runs_frames.clear()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        th0 = thread_cpu()
        w0 = time.time()
        go.set()
        half = args.seconds / 2
        await asyncio.sleep(half)
        t_switch = time.time()
        r_sw = resource.getrusage(resource.RUSAGE_SELF)
        th1 = thread_cpu()
        runs_screen.open_run(key0)
        while not (isinstance(app.screen, LiveRunScreen) and app.screen.cursor is not None):
            await pilot.pause(0.05)
        t_open = time.time() - t_switch
        while proc.is_alive():
            await asyncio.sleep(0.2)
        await asyncio.sleep(2.0)  # the last lines land
        wall = time.time() - w0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        th2 = thread_cpu()
    proc.join()
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    cpu1 = (r_sw.ru_utime - r0.ru_utime) + (r_sw.ru_stime - r0.ru_stime)
    wall1 = t_switch - w0
    log = json.load(open(log_path))

    # ---- phase 1: runs screen, every run
    keys = [f"local/bench-{i}/task{i}" for i in range(args.runs)]
    per_key: dict[str, list[tuple[float, int, int]]] = {k: [] for k in keys}
    for t_c, p, top in commits:
        for (rk, src), off in top.items():
            if src == "agent_output.txt" and rk in per_key:
                per_key[rk].append((t_c, off, p))
    frames = sorted(runs_frames)
    frame_t = [f[0] for f in frames]
    # first frame at or after time t showing poll >= p: scan (frames are few per second)
    lag1, miss1 = [], 0
    for i, start, t_a in log:
        if t_a >= t_switch - 1.0:  # the runs screen is hidden at the switch: lines of the last second may not show
            continue
        seq = per_key[keys[i]]
        offs = [o for _, o, _ in seq]
        j = bisect.bisect_left(offs, start)
        while j < len(seq) and seq[j][0] < t_a:
            j += 1
        if j >= len(seq):
            miss1 += 1
            continue
        p = seq[j][2]
        k = bisect.bisect_left(frame_t, t_a)
        while k < len(frames) and frames[k][1] < p:
            k += 1
        if k >= len(frames) or frames[k][0] > t_switch:
            miss1 += 1
            continue
        lag1.append(frames[k][0] - t_a)
    lag1.sort()
    # ---- phase 2: live run screen of run 0
    lf = sorted(list_frames)
    lag2, miss2 = [], 0
    for i, start, t_a in log:
        if i != 0 or t_a < t_switch + t_open:
            continue
        hit = next((t for t, top in lf if t >= t_a and top >= start), None)
        if hit is None:
            miss2 += 1
            continue
        lag2.append(hit - t_a)
    lag2.sort()
    peak = r1.ru_maxrss / 1024
    print(
        f"runs {args.runs}, {args.rate:g} lines/s each, {args.seconds:g} s ({half:g} s per phase), "
        f"history {args.history} lines/run; startup {startup:.1f} s; live run screen opened in {t_open * 1000:.0f} ms"
    )
    print(
        f"phase 1 runs screen: {len(lag1)} lines, not shown {miss1}; lag append->screen p50 "
        f"{pct(lag1, 50) * 1000:.0f} ms, p95 {pct(lag1, 95) * 1000:.0f} ms, max {lag1[-1] * 1000 if lag1 else float('nan'):.0f} ms "
        f"({len(frames)} frames with new snapshots)"
    )
    print(
        f"phase 2 live run screen (run 0): {len(lag2)} lines, not shown {miss2}; lag append->screen p50 "
        f"{pct(lag2, 50) * 1000:.0f} ms, p95 {pct(lag2, 95) * 1000:.0f} ms, max {lag2[-1] * 1000 if lag2 else float('nan'):.0f} ms"
    )
    print(
        f"cpu: {cpu:.1f} s over {wall:.1f} s wall = {100 * cpu / wall:.1f} % of one core (app + supervisor; "
        f"writer excluded); peak RSS {peak:.0f} MiB; machine reference: 10M-step Python loop {machine_reference_s():.2f} s"
    )
    print(
        f"cpu by phase: runs screen {100 * cpu1 / wall1:.1f} %, live run screen "
        f"{100 * (cpu - cpu1) / max(1e-9, wall - wall1):.1f} % of one core"
    )
    by: dict[str, list[float]] = {}
    for tid, (name, c2) in th2.items():
        c0 = th0.get(tid, (name, 0.0))[1]
        c1 = th1.get(tid, (name, c0))[1]
        acc = by.setdefault(name, [0.0, 0.0])
        acc[0] += c1 - c0
        acc[1] += c2 - c1
    print(
        "cpu by thread (runs screen / live run screen, % of one core): "
        + ", ".join(
            f"{n} {100 * a / wall1:.1f} / {100 * b / max(1e-9, wall - wall1):.1f}"
            for n, (a, b) in sorted(by.items(), key=lambda kv: -sum(kv[1]))
            if a + b >= 0.05
        )
    )
    ok = lag1 and lag2 and pct(lag1, 95) < 1.0 and pct(lag2, 95) < 1.0 and cpu / wall < 0.25
    print("targets (p95 < 1 s on both screens, < 25 % of one core):", "met" if ok else "NOT met")
    if args.keep:
        print("kept", tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=150)
    ap.add_argument("--rate", type=float, default=5.0, help="lines per second per transcript")
    ap.add_argument("--seconds", type=float, default=60.0, help="both phases together")
    ap.add_argument("--history", type=int, default=300)
    ap.add_argument("--interval", type=float, default=2.0, help="supervisor refresh interval (the app's default)")
    ap.add_argument("--submit-every", type=float, default=2.0)
    ap.add_argument("--keep", action="store_true")
    return asyncio.run(run(ap.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
