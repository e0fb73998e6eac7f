#!/usr/bin/env python3
"""What counting repeated records once (edgetui/store/repeated_records.py) adds to a finalize of a big transcript run.

Builds a Claude Code stream-json transcript X of --mb megabytes from the real transcripts of the
shared corpus (``transcript-corpus/A``, fresh message / tool-use / uuid ids per repetition, as
bench_ingest.py does) and a resumed file Y (X's first half copied, then as many records of its
own), ingests both into a fresh database, then times on it, in the same process (best of
--rounds):

1. baseline: the run totals as finalize_run computed them before (one aggregate over the run's
   events, the priced cost) for X;
2. the same totals as finalize_run computes them now (``refresh_record_keys``, then
   ``record_totals`` and the recount of the runs sharing records), for X (it shares records with
   Y), for a transcript run sharing nothing and for an SForge run directory (the bundled 12-hour
   sample: no record keys, one aggregate as before).

Prints milliseconds and the ratio to the baseline.
Usage: .venv/bin/python bench/bench_repeats.py [--mb 20] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = Path(os.environ.get("EDGETUI_SHARED_DATA") or ROOT.parent / "shared" / "data")
CORPUS = SHARED / "transcript-corpus" / "A"
ID_RE = re.compile(rb'"(msg_|toolu_|call_|req_)([A-Za-z0-9_]+)"')
UUID_RE = re.compile(rb'"([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})"')
SESSION_RE = re.compile(rb'"session_id":"[^"]*"')
GW = next((ROOT / "sample_runs" / "runs").glob("opus48-edge-3-*")) / "gw_signal_search"

OLD_TOTALS = """SELECT count(*), count(*) FILTER (kind = 'parse_error'), count(*) FILTER (kind = 'tool_call'),
       sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens),
       max(t) FILTER (kind NOT IN ('resource_sample', 'container_state', 'alarm', 'annotation')),
       min(t), count(*) FILTER (kind IN ('agent_message', 'user_message', 'thinking', 'tool_call'))
FROM events WHERE run_key = ?"""
OLD_COST = """SELECT sum(coalesce(e.input_tokens,0) * p.input_per_mtok + coalesce(e.output_tokens,0) * p.output_per_mtok
              + coalesce(e.cache_read_tokens,0) * p.cache_read_per_mtok
              + coalesce(e.cache_write_tokens,0) * p.cache_write_per_mtok) / 1e6
FROM events e
JOIN LATERAL (SELECT * FROM prices WHERE e.model LIKE prices.model_pattern
              ORDER BY length(model_pattern) DESC LIMIT 1) p ON TRUE
WHERE e.run_key = ? AND e.input_tokens IS NOT NULL"""
NEW_TOTALS = """SELECT count(*), count(*) FILTER (kind = 'parse_error'),
       max(t) FILTER (kind NOT IN ('resource_sample', 'container_state', 'alarm', 'annotation')), min(t)
FROM events WHERE run_key = ?"""


def lines_of_corpus() -> list[bytes]:
    out = [ln for f in sorted(CORPUS.glob("*.jsonl")) for ln in f.read_bytes().splitlines() if ln.startswith(b"{")]
    if not out:
        sys.exit(f"no corpus at {CORPUS} (set EDGETUI_SHARED_DATA)")
    return out


def repetition(src: list[bytes], rep: int, session: bytes) -> bytes:
    tag = f"r{rep}x".encode()
    chunk = bytearray()
    for line in src:
        line = ID_RE.sub(lambda m: b'"' + m.group(1) + tag + m.group(2) + b'"', line)
        line = UUID_RE.sub(
            lambda m: (
                b'"'
                + m.group(1)
                + b"-"
                + m.group(2)
                + b"-"
                + m.group(3)
                + b"-"
                + m.group(4)
                + b"-"
                + (b"%012x" % (rep % (1 << 48)))
                + b'"'
            ),
            line,
        )
        chunk += SESSION_RE.sub(b'"session_id":"' + session + b'"', line) + b"\n"
    return bytes(chunk)


def build(x: Path, y: Path, mb: int) -> int:
    """X: repetitions up to ``mb`` MB; Y: X's first half (the same ids), then as many of its own."""
    src = lines_of_corpus()
    reps, size = [], 0
    while size < mb * 1_000_000:
        reps.append(repetition(src, len(reps), b"session-x"))
        size += len(reps[-1])
    x.write_bytes(b"".join(reps))
    half = len(reps) // 2
    own = [repetition(src, 10_000 + i, b"session-y") for i in range(half)]
    y.write_bytes(
        b"".join(r.replace(b'"session_id":"session-x"', b'"session_id":"session-y"') for r in reps[:half])
        + b"".join(own)
    )
    return size


def best_ms(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    from edgetui.store import repeated_records as repeats
    from edgetui.store.database import open_db
    from edgetui.record.ingest import ingest_paths

    with tempfile.TemporaryDirectory(prefix="edgetui-bench-repeats-") as d:
        work = Path(d)
        x, y, lone = work / "x.jsonl", work / "y.jsonl", work / "lone.jsonl"
        size = build(x, y, a.mb)
        lone.write_bytes(repetition(lines_of_corpus(), 99_999, b"session-lone") * 4)
        conn = open_db(work / "b.duckdb")
        for p in (x, y, lone):
            ingest_paths(conn, [p])
        ingest_paths(conn, [GW], tasks_dir=ROOT / "sample_runs" / "tasks")
        keys = dict(conn.execute("SELECT run_dir, run_key FROM runs").fetchall())
        kx, klone, kgw = keys[str(x)], keys[str(lone)], keys[str(GW)]
        n_x = conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [kx]).fetchone()[0]
        rep_y = conn.execute("SELECT n_repeated FROM runs WHERE run_key = ?", [keys[str(y)]]).fetchone()[0]

        def old(k: str):
            return lambda: (conn.execute(OLD_TOTALS, [k]).fetchall(), conn.execute(OLD_COST, [k]).fetchall())

        def new(k: str):
            def go():  # what finalize_run does now
                conn.execute(NEW_TOTALS, [k]).fetchall()
                if repeats.refresh_record_keys(conn, k):
                    repeats.recount(conn, k)
                    repeats.recount_sharing_runs(conn, k)
                else:
                    repeats.record_totals(conn, k, has_keys=False)

            return go

        base = best_ms(old(kx), a.rounds)
        shared = best_ms(new(kx), a.rounds)
        base_lone = best_ms(old(klone), a.rounds)
        alone = best_ms(new(klone), a.rounds)
        base_gw = best_ms(old(kgw), a.rounds)
        gw = best_ms(new(kgw), a.rounds)
        conn.close()
    print(f"X: {size / 1e6:.1f} MB, {n_x:,} events; Y repeats {rep_y:,} of its events")
    print(
        f"run sharing records (X, recounting Y too): baseline {base:.1f} ms, with repeats {shared:.1f} ms "
        f"= {shared / base:.2f}x"
    )
    print(
        f"transcript run sharing nothing: baseline {base_lone:.1f} ms, with repeats {alone:.1f} ms "
        f"= {alone / base_lone:.2f}x"
    )
    print(
        f"SForge run dir (the 12-hour sample, no record keys): baseline {base_gw:.1f} ms, with repeats {gw:.1f} ms "
        f"= {gw / base_gw:.2f}x"
    )


if __name__ == "__main__":
    main()
