#!/usr/bin/env python3
"""``edgetui runs`` (the table, stdout a pipe) against SForge's own listing of the same runs root,
each in a fresh process, interleaved: wall time and peak resident memory (issue 37, item 10).

The root is bench_scale.py's (``--runs`` task directories built from the bundled runs, their
transcripts linked in) recorded into a database once (not timed); ``--keep DIR`` keeps both for
the next time. SForge's listing is ``RunsIndex(root, task_meta).list_runs(include_submissions=False)``
(what its visualizer lists runs with), in ``python -c``; edgetui's is ``edgetui --db DB runs`` with
its output read through a pipe. ``--code DIR`` times another checkout's edgetui beside this one
(e.g. ``../main``: the figure before a change).

    .venv/bin/python bench/bench_runs_cli.py [--runs 750] [--rounds 5] [--keep DIR] [--code DIR]

Prints each side's median wall time and peak RSS, and the ratio edgetui / SForge (target ≤ 1.0×,
peak < 120 MB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

SFORGE_LIST = (
    "import sys\n"
    "from pathlib import Path\n"
    "from sforge.visualizer.scanner import RunsIndex\n"
    "from sforge.visualizer.server import _load_task_meta\n"
    "runs = RunsIndex(Path(sys.argv[1]), task_meta=_load_task_meta(Path(sys.argv[2]))).list_runs(include_submissions=False)\n"
    "print(len(runs))\n"
)
EDGETUI_AT = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from edgetui.cli.main import run; sys.argv[0] = 'edgetui'; run()"
)


def prepare(work: Path, n_runs: int) -> tuple[Path, Path, Path]:
    """The runs root, its tasks and the database recording it (built and ingested when missing)."""
    import bench_scale

    root, tasks, db = work / "runs", work / "tasks", work / "scale.duckdb"
    if not db.exists():
        t0 = time.monotonic()
        bench_scale.merged_tasks(tasks)
        _, held = bench_scale.build(root, n_runs)
        for src, dst in held:
            os.link(src, dst)
        bench_scale.edgetui_ingest(db, root, tasks)
        print(f"root built and recorded in {time.monotonic() - t0:.1f} s (not counted): {root}")
    return root, tasks, db


def timed(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds and peak RSS (MB) of ``argv`` in a fresh process whose stdout is a pipe read to
    its end; and the bytes it wrote."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out = p.stdout.read()  # type: ignore[union-attr]
    err = p.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"{argv[:4]}… exited {p.returncode}: {err.decode(errors='replace')[-400:]}")
    return wall, usage.ru_maxrss / 1024, len(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=750)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it")
    ap.add_argument("--prepare-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", type=Path, default=None, help="another checkout's edgetui timed beside this one")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="edgetui-runs-cli-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.prepare_only:
        prepare(work, a.runs)
        return
    if not (work / "scale.duckdb").exists():  # in a process of its own: a child forked from this one
        # would count the ingest's memory in its peak (ru_maxrss includes the pages before exec)
        subprocess.run(
            [sys.executable, __file__, "--prepare-only", "--keep", str(work), "--runs", str(a.runs)], check=True
        )
    root, tasks, db = work / "runs", work / "tasks", work / "scale.duckdb"
    py = sys.executable
    sides = {
        "sforge": [py, "-c", SFORGE_LIST, str(root), str(tasks)],
        "edgetui": [py, "-c", EDGETUI_AT, str(ROOT), "--db", str(db), "runs"],
    }
    if a.code is not None:
        sides["other"] = [py, "-c", EDGETUI_AT, str(a.code.resolve()), "--db", str(db), "runs"]
    for argv in sides.values():  # warm the page cache and the interpreter's files
        timed(argv)
    got: dict[str, list[tuple[float, float, int]]] = {k: [] for k in sides}
    for i in range(a.rounds):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for k in order:
            got[k].append(timed(sides[k]))
    load = os.getloadavg()
    med = {k: (statistics.median(w for w, _, _ in v), max(m for _, m, _ in v), v[-1][2]) for k, v in got.items()}
    for k, (w, m, n) in med.items():
        walls = ", ".join(f"{w:.2f}" for w, _, _ in got[k])
        print(f"{k:8s} median {w:.3f} s (rounds {walls}), peak RSS {m:.0f} MB, {n:,} bytes out")
    ratio = med["edgetui"][0] / med["sforge"][0]
    print(
        f"edgetui runs / SForge list_runs: {ratio:.2f}x (target <= 1.0x: {'met' if ratio <= 1.0 else 'NOT met'}); "
        f"edgetui peak {med['edgetui'][1]:.0f} MB (target < 120 MB: {'met' if med['edgetui'][1] < 120 else 'NOT met'})"
    )
    if "other" in med:
        print(
            f"{a.code} runs / SForge list_runs: {med['other'][0] / med['sforge'][0]:.2f}x, peak {med['other'][1]:.0f} MB"
        )
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {a.rounds} rounds interleaved")


if __name__ == "__main__":
    main()
