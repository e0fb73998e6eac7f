#!/usr/bin/env python3
"""CPU of one refresh of the runs table: 150 busy runs whose tokens, dollars and age change at every
refresh, headless at 160x48 (Textual's run_test driver).

    .venv/bin/python bench/bench_runs_table.py [--runs 150] [--refreshes 40]

Prints the process CPU per refresh: building the cells (``RunsTable.show``) and the rest (Textual's
layout, rendering and compositing until the frame is composed). Median of 3 rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from textual.app import App

from edgetui.live.model import LiveRun
from bench_live import machine_reference_s
from edgetui.views.widgets.runs_table import RunsTable


def snapshot(n: int, k: int, now: float) -> list[LiveRun]:
    return [
        LiveRun(
            run_key=f"local/r{i}/t{i}",
            run_id=f"opus48-edge-{i}-20261129",
            task_id=f"task_{i}",
            model="claude-opus-4-8",
            agent="claude-code",
            status="running",
            started_at=now - 3600,
            elapsed_s=3600 + k,
            budget_s=43200,
            tokens=100000 + 1000 * k + i,
            cost_usd=1.0 + 0.01 * k,
            last_event_at=now - (k % 2),
            n_events=100 + k,
        )
        for i in range(n)
    ]


class _App(App):
    def compose(self):
        yield RunsTable(id="t")


async def one_round(n: int, refreshes: int) -> tuple[float, float]:
    app = _App()
    async with app.run_test(size=(160, 48)) as pilot:
        t = app.query_one(RunsTable)
        now = time.time()
        t.show(snapshot(n, 0, now), now)
        await pilot.pause()
        snaps = [snapshot(n, k, now) for k in range(1, refreshes + 1)]
        c0 = time.process_time()
        in_show = 0.0
        for s in snaps:
            a = time.process_time()
            t.show(s, now)
            in_show += time.process_time() - a
            await pilot.pause()
        total = time.process_time() - c0
    return total / refreshes, in_show / refreshes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=150)
    ap.add_argument("--refreshes", type=int, default=40)
    a = ap.parse_args()
    rounds = [asyncio.run(one_round(a.runs, a.refreshes)) for _ in range(3)]
    total = statistics.median(r[0] for r in rounds)
    show = statistics.median(r[1] for r in rounds)
    print(
        f"runs table, {a.runs} busy rows at 160x48: {total * 1000:.1f} ms CPU per refresh "
        f"(building cells {show * 1000:.1f} ms, rendering and compositing {(total - show) * 1000:.1f} ms); "
        f"rounds: {', '.join(f'{r[0] * 1000:.1f}' for r in rounds)} ms; "
        f"machine reference: 10M-step Python loop {machine_reference_s():.2f} s"
    )


if __name__ == "__main__":
    main()
