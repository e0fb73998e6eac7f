"""What reading through the holder costs a browser tab of ``edgetui serve``: the reads the replay
makes when it opens the 12-hour sample run (header, first page of events, the index of every event,
submissions, the chart's rounds), on the file directly against through a holder in another process
(``HolderConnection``: one socket request per statement, Arrow rows read back in memory).

Two copies of the bundled samples' database: one opened read-only here (direct), one held by a child
process serving its socket (as ``edgetui serve`` does). Rounds alternate direct / through the holder.

    .venv/bin/python bench/bench_serve_tab.py [--rounds 7]

Prints each round's seconds, the medians and the ratio through ÷ direct.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOLD = """
import sys, time
from pathlib import Path
from edgetui.store.database import open_db
from edgetui.record.forget_and_tag import holder_server
db = Path(sys.argv[1]); conn = open_db(db); h = holder_server(conn, db)
print("ready", flush=True)
sys.stdin.read()
h.close(); conn.close()
"""


def replay_reads(conn, key: str) -> int:
    from edgetui.store import queries
    from edgetui.store.timeline_pages import first_page, load_index

    header = queries.run_header(conn, key)
    page = first_page(conn, key)
    index = load_index(conn, key)
    subs = queries.submissions(conn, key)
    rounds = queries.new_best_rounds(conn, key)
    return len(page.event_id) + index.n + len(subs) + len(rounds) + len(header or {})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    from edgetui.cli.main import main as cli
    from edgetui.store.database import open_db
    from edgetui.store.holder_connection import HolderConnection

    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    try:
        direct_db, held_db = tmp / "direct.duckdb", tmp / "held.duckdb"
        assert cli(["--db", str(direct_db), "samples", "-q"]) == 0
        shutil.copyfile(direct_db, held_db)
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(held_db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        direct = open_db(direct_db, read_only=True)
        through = HolderConnection(held_db)
        key = direct.execute("SELECT run_key FROM runs WHERE run_id LIKE 'opus48-edge%'").fetchone()[0]
        assert replay_reads(direct, key) == replay_reads(through, key)  # (the same reads, warmed)
        times: dict[str, list[float]] = {"direct": [], "through": []}
        for i in range(args.rounds):
            for name, conn in (("direct", direct), ("through", through))[:: 1 if i % 2 == 0 else -1]:
                t0 = time.perf_counter()
                replay_reads(conn, key)
                times[name].append(time.perf_counter() - t0)
        for name, ts in times.items():
            print(f"{name:8s} " + " ".join(f"{t:.3f}" for t in ts) + f"  median {statistics.median(ts):.3f} s")
        ratio = statistics.median(times["through"]) / statistics.median(times["direct"])
        print(f"through the holder / direct: {ratio:.2f}x  (load {os.getloadavg()[0]:.1f})")
        through.close()
        direct.close()
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
