#!/usr/bin/env python3
"""Live memory with long lines: 150 watched runs, each of whose transcripts meets a 20 MB line.

Each run's agent_output.txt is a hard link to one file (an init line, a 20 MB tool result, ten
lines after it), so the disk holds 20 MB while the supervisor reads 150 × 20 MB. The supervisor
runs in a child process polling until every run's lines after the long one are recorded; the
child's peak RSS (``ru_maxrss``) is printed, and, in the same run, the same supervisor over 150
runs whose transcripts hold the same lines without the long one (the baseline).

usage: .venv/bin/python bench/bench_long_lines_live.py [--runs 150] [--mb 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import resource, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from edgetui.store.database import open_db
from edgetui.live.alarms import AlarmSettings
from edgetui.live.supervisor import Supervisor
conn = open_db({db!r})
sup = Supervisor(conn, [Path({runs!r})], docker_client=None,
                 settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0))
t0 = time.time()
while time.time() - t0 < 600:
    sup.poll_once()
    n = conn.execute("SELECT count(DISTINCT run_key) FROM events WHERE kind = 'agent_message' "
                     "AND summary = 'after the long line 9'").fetchone()[0]
    if n >= {n_runs}:
        break
print("DONE", n, round(time.time() - t0, 1), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, flush=True)
sup.close()
"""


def line(obj) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def build(work: Path, n_runs: int, mb: int, long_line: bool) -> Path:
    runs = work / ("runs-long" if long_line else "runs-short")
    shared = work / ("long.jsonl" if long_line else "short.jsonl")
    with open(shared, "wb") as f:
        f.write(line({"type": "system", "subtype": "init", "session_id": "s", "model": "m"}))
        if long_line:
            f.write(
                line(
                    {
                        "type": "user",
                        "message": {
                            "role": "user",
                            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x" * (mb << 20)}],
                        },
                    }
                )
            )
        for i in range(10):
            f.write(
                line(
                    {
                        "type": "assistant",
                        "message": {
                            "id": f"m{i}",
                            "role": "assistant",
                            "content": [{"type": "text", "text": f"after the long line {i}"}],
                        },
                    }
                )
            )
    for r in range(n_runs):
        td = runs / f"run{r:03d}" / "task"
        td.mkdir(parents=True)
        (td / "run_agent.log").write_text(time.strftime("%Y-%m-%d %H:%M:%S") + ",000 - INFO - Images ready\n")
        os.link(shared, td / "agent_output.txt")
    return runs


def measure(work: Path, runs: Path, n_runs: int, tag: str) -> tuple[int, float, int]:
    db = work / f"{tag}.duckdb"
    code = CHILD.format(root=str(ROOT), db=str(db), runs=str(runs), n_runs=n_runs)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    for ln in out.stdout.splitlines():
        if ln.startswith("DONE"):
            _, n, secs, rss = ln.split()
            return int(n), float(secs), int(rss)
    raise SystemExit(f"{tag}: no result\n{out.stdout}\n{out.stderr}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=150)
    ap.add_argument("--mb", type=int, default=20)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="edgetui-longlive-") as d:
        work = Path(d)
        short = build(work, a.runs, a.mb, False)
        long_ = build(work, a.runs, a.mb, True)
        n0, s0, rss0 = measure(work, short, a.runs, "short")
        n1, s1, rss1 = measure(work, long_, a.runs, "long")
    print(f"baseline: {a.runs} runs without the long line: all {n0} recorded in {s0} s, peak RSS {rss0} MB")
    print(
        f"long lines: {a.runs} runs each meeting a {a.mb} MB line: {n1} of {a.runs} recorded every line after it "
        f"in {s1} s, peak RSS {rss1} MB ({rss1 / max(1, rss0):.2f}x the baseline; "
        f"{'bounded' if rss1 - rss0 < 4 * a.mb + 200 else 'NOT bounded'}: < baseline + 4 x the line + 200 MB)"
    )


if __name__ == "__main__":
    main()
