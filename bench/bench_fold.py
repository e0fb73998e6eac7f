"""Cost of folding metadata rows (replay/fold.py) in the timeline cursor, in one process.

Builds a synthetic 50,000-event timeline (about 43 % metadata ``system`` events, an upper
bound: real Claude sessions have fewer; its summaries repeat, as metadata summaries do, which the
classification caches) and prints, as medians of 15 interleaved rounds:

* the cursor built with classification (a full read: every event's flag computed);
* the cursor built with the flags known (``metadata_prefix``: what a live tail reload does
  for the events it kept) — the baseline; the ratio of the two is the classification's cost;
* ``set_folding(True)`` (the rows of the folded list).

Usage: ``.venv/bin/python bench/bench_fold.py``
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edgetui.store.queries import EventColumns
from edgetui.replay.cursor import ReplayCursor
from edgetui.replay.fold import metadata_mask

N = 50_000
HEADS = [
    "permission-mode",
    "progress hook_progress Stop",
    "agent says",
    "Bash: ls",
    "1 failed",
    "file-history-snapshot",
    "log line",
]
KINDS = ["system", "system", "agent_message", "tool_call", "tool_result", "system", "log"]


def main() -> int:
    random.seed(1)
    rows = [
        {
            "event_id": f"e{i}",
            "kind": KINDS[k],
            "t": 1000.0 + i,
            "source": "s",
            "offset": i,
            "sub": 0,
            "summary": HEADS[k],
            "tool_use_id": None,
            "parent_tool_use_id": None,
            "tool_name": None,
            "is_error": False,
            "round": None,
            "level": None,
            "segment": 0,
            "agent_format": "claude_session",
        }
        for i, k in enumerate(random.randrange(len(HEADS)) for _ in range(N))
    ]
    ev = EventColumns.from_rows(rows)
    mask = metadata_mask(ev)
    full, known, fold = [], [], []
    for _ in range(15):
        t0 = time.perf_counter()
        c = ReplayCursor(ev, [])
        t1 = time.perf_counter()
        ReplayCursor(ev, [], metadata_prefix=mask)
        t2 = time.perf_counter()
        c.set_folding(True)
        t3 = time.perf_counter()
        full.append(t1 - t0)
        known.append(t2 - t1)
        fold.append(t3 - t2)
    f, k, s = (statistics.median(x) * 1000 for x in (full, known, fold))
    print(
        f"{N:,} events ({sum(mask):,} metadata): cursor with classification {f:.1f} ms, with the flags known "
        f"{k:.1f} ms (ratio {f / k:.2f}); set_folding {s:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
