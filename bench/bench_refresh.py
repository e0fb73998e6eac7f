#!/usr/bin/env python3
"""Time the live supervisor needs to refresh a run with many graded submissions (what it does after
each new submission: re-read the run's files, replace its whole-file events, re-finalize), with the
per-folder caches warm and cold.

    .venv/bin/python bench/bench_refresh.py [--repeat 5]

Uses a copy of the bundled 12-hour sample run (248 graded submissions), made live (no
final_result.json), in a fresh database.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edgetui.store.database import open_db  # noqa: E402 - after sys.path is set above
from edgetui.live.alarms import AlarmSettings  # noqa: E402 - after sys.path is set above
from edgetui.live.supervisor import Supervisor  # noqa: E402 - after sys.path is set above
from edgetui.parsers import sforge_dir as sd  # noqa: E402 - after sys.path is set above


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="edgetui-bench-refresh-"))
    src = next(loc for loc in sd.discover(ROOT / "sample_runs" / "runs") if "gw_signal" in str(loc.task_dir))
    dst = tmp / "runs" / "live-gw" / "gw_signal_search"
    shutil.copytree(src.task_dir, dst)
    (dst / "final_result.json").unlink()
    n_subs = len(list((dst / "submissions").iterdir()))
    conn = open_db(tmp / "bench.duckdb")
    sup = Supervisor(
        conn,
        [tmp / "runs"],
        docker_client=None,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0),
    )
    sup.poll_once()
    while sup.behind:
        sup.poll_once()
    rs = next(iter(sup.runs.values()))

    def timed(cold: bool) -> float:
        if cold:
            rs.sub_cache.clear()
            rs.rec_cache.clear()
        t = time.perf_counter()
        with sup.rec.transaction():
            full, known = sup.files.refresh_files_many([rs], sup.clock())[rs.key]
        sup.files.finalize(rs, aggregates=full, **known)  # (the refresh's finalize: the poll's, with its others)
        return time.perf_counter() - t

    warm = [timed(False) for _ in range(a.repeat)]
    cold = [timed(True) for _ in range(a.repeat)]
    print(
        f"refresh of a live run with {n_subs} submission folders: warm caches {statistics.median(warm) * 1000:.0f} ms, "
        f"cold caches (every folder read) {statistics.median(cold) * 1000:.0f} ms (medians of {a.repeat})"
    )
    sup.close()
    conn.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
