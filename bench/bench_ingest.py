#!/usr/bin/env python3
"""Ingest throughput and peak memory on a large Claude Code stream-json transcript.

Builds a transcript of --mb megabytes (default 200) by repeating the events of
the real transcripts in ../shared/data/transcript-corpus/A with fresh message,
tool-use and uuid ids per repetition, then, in the same run:

1. baseline: DuckDB ``read_ndjson_objects`` reading the same file (count(*)),
2. ``edgetui ingest`` of the file into a fresh database (a subprocess, so its
   peak RSS is measured alone).

Prints MB/s of both, the ratio, and edgetui's peak memory (MB).
Usage: .venv/bin/python bench/bench_ingest.py [--mb 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "data" / "transcript-corpus" / "A"
ID_RE = re.compile(rb'"(msg_|toolu_|call_|req_)([A-Za-z0-9_]+)"')
UUID_RE = re.compile(rb'"([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})"')


def build(path: Path, mb: int) -> int:
    src_lines: list[bytes] = []
    for f in sorted(CORPUS.glob("*.jsonl")):
        for line in f.read_bytes().splitlines():
            if line.startswith(b"{"):
                src_lines.append(line)
    if not src_lines:
        sys.exit(f"no corpus at {CORPUS}")
    target = mb * 1_000_000
    written = 0
    rep = 0
    with open(path, "wb") as out:
        while written < target:
            tag = f"r{rep}x".encode()
            chunk = bytearray()
            for line in src_lines:
                line = ID_RE.sub(lambda m: b'"' + m.group(1) + tag + m.group(2) + b'"', line)
                line = UUID_RE.sub(lambda m: b'"' + m.group(1) + b"-" + m.group(2) + b"-" + m.group(3) + b"-"
                                   + m.group(4) + b"-" + (b"%012x" % (rep % (1 << 48))) + b'"', line)
                chunk += line + b"\n"
            out.write(chunk)
            written += len(chunk)
            rep += 1
    return written


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None)
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="edgetui-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    f = work / "big-stream.jsonl"
    if not f.exists() or f.stat().st_size < a.mb * 1_000_000:
        size = build(f, a.mb)
    else:
        size = f.stat().st_size
    mb = size / 1e6
    print(f"file: {f} ({mb:.1f} MB)")

    import duckdb

    t0 = time.perf_counter()
    n = duckdb.connect().execute(f"SELECT count(*) FROM read_ndjson_objects('{f}')").fetchone()[0]
    t_duck = time.perf_counter() - t0
    print(f"baseline duckdb read_ndjson_objects: {n} objects, {t_duck:.2f} s, {mb / t_duck:.1f} MB/s")

    db = work / "bench.duckdb"
    for p in (db, Path(str(db) + ".wal")):
        if p.exists():
            p.unlink()
    code = (
        "import resource,sys,time;from edgetui.cli import main;t=time.perf_counter();"
        f"rc=main(['--db','{db}','ingest','-q','{f}']);"
        "print('ELAPSED',time.perf_counter()-t);"
        "print('MAXRSS_KB',resource.getrusage(resource.RUSAGE_SELF).ru_maxrss);"
        "print('CHILD_MAXRSS_KB',resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        print(out.stdout, out.stderr)
        sys.exit("ingest failed")
    el = float(re.search(r"ELAPSED ([\d.]+)", out.stdout).group(1))
    rss = int(re.search(r"\nMAXRSS_KB (\d+)", "\n" + out.stdout).group(1)) / 1024
    child = int(re.search(r"CHILD_MAXRSS_KB (\d+)", out.stdout).group(1)) / 1024
    events = duckdb.connect(str(db), read_only=True).execute("SELECT count(*) FROM events").fetchone()[0]
    print(f"edgetui ingest: {events} events, {el:.2f} s, {mb / el:.1f} MB/s, peak RSS {rss:.0f} MB "
          f"(+ parsing process {child:.0f} MB = {rss + child:.0f} MB together)")
    ratio = el / t_duck
    print(f"ratio edgetui/duckdb time: {ratio:.1f}x (target <= 3x: {'met' if ratio <= 3 else 'NOT met'}); "
          f"throughput {mb / el:.1f} MB/s (target >= 40: {'met' if mb / el >= 40 else 'NOT met'}); "
          f"memory {rss + child:.0f} MB (target < 400: {'met' if rss + child < 400 else 'NOT met'})")
    if not a.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
