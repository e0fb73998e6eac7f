"""Cost of flagging NUL / non-UTF-8 bytes in harness log lines (``runlog.flag_bad_bytes``).

Feeds every ``run_agent.log`` line of ``sample_runs`` (repeated to ~200,000 lines) to a
:class:`edgetui.parsers.runlog.RunAgentLogParser` through ``feed`` (with the check) and through
``_feed`` (the parser without it: the baseline), interleaved in the same process, ``--repeat``
pairs; prints the median ratio and its range with ``os.getloadavg()``.

    .venv/bin/python bench/bench_runlog_bad_bytes.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from edgetui.parsers.runlog import RunAgentLogParser

ROOT = Path(__file__).resolve().parent.parent


def _time(lines: list[bytes], method: str) -> float:
    p = RunAgentLogParser("run_agent.log", "g", 0.0)
    feed, off = getattr(p, method), 0
    t = time.perf_counter()
    for ln in lines:
        feed(ln, off)
        off += len(ln) + 1
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    lines: list[bytes] = []
    for p in sorted((ROOT / "sample_runs").rglob("run_agent.log")):
        lines += p.read_bytes().split(b"\n")
    lines = lines * max(1, 200_000 // max(1, len(lines)))
    ratios = sorted(_time(lines, "feed") / _time(lines, "_feed") for _ in range(a.repeat))
    print(
        f"{len(lines)} lines; feed (with the bad-byte check) / _feed (without): median "
        f"{ratios[len(ratios) // 2]:.3f}x, range {ratios[0]:.3f}-{ratios[-1]:.3f}; load {os.getloadavg()}"
    )


if __name__ == "__main__":
    main()
