#!/usr/bin/env python3
"""The holder socket with clients that never read their reply: how long a 9th client waits.

A holder process (``HolderServer`` on a fresh database file) gets ``--stalled`` clients (default 8)
that each ask for a ~20 MB reply (``SELECT repeat('x', 1000) FROM range(20000)``) and never read
it. A 9th client asks ``SELECT 42`` through :func:`edgetui.store.holder_socket.ask_holder`; its wait is timed
two ways, each with a fresh holder:

* **stalled**: once the holder has started replying to every stalled client (their first byte is
  waiting): the delay the non-reading clients alone cause (target 1 s);
* **queued**: right after the 8 requests, so the 9th also waits for the holder to compute the 8
  big replies first (its 2 workers take requests in order): printed for reference.

``--rounds`` rounds of each; the medians against the target are printed.

``--code DIR`` runs the holder from another checkout (e.g. a checkout of main at ``../main``) for a
before figure; there the 9th client may wait past its own 60 s limit (printed as such).

Usage: ``.venv/bin/python bench/bench_holder_stalled.py [--stalled 8] [--rounds 3] [--code DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from edgetui.store.holder_socket import ask_holder, socket_path  # noqa: E402 - after sys.path is set above

BIG = "SELECT repeat('x', 1000) AS pad FROM range(20000)"
TARGET_S = 1.0


def _holder(db: Path, code_dir: Path) -> subprocess.Popen:
    code = (
        "import time;from edgetui.store.database import open_db;from edgetui.record.forget_and_tag import holder_server;"
        f"c=open_db({str(db)!r});h=holder_server(c,{str(db)!r});print('ready',flush=True);time.sleep(600)"
    )
    env = {**os.environ, "PYTHONPATH": str(code_dir)}
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env, cwd=code_dir)
    assert p.stdout.readline().split() == ["ready"], "the holder did not start"
    return p


def _started(s: socket.socket) -> bool:
    try:
        return bool(s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


def one_round(code_dir: Path, n_stalled: int, queued: bool) -> tuple[float, float]:
    """(seconds until the holder replied to every stalled client, seconds the 9th client waited);
    ``queued``: the 9th asks right after the stalled requests (the first figure is then 0)."""
    with tempfile.TemporaryDirectory(prefix="bench-holder-") as tmp:
        db = Path(tmp) / "h.duckdb"
        p = _holder(db, code_dir)
        stalled = []
        try:
            path = str(socket_path(db))
            t0 = time.monotonic()
            for _ in range(n_stalled):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                s.sendall(json.dumps({"sql": BIG}).encode() + b"\n")
                stalled.append(s)
            deadline = t0 + 120
            while not queued and not all(_started(s) for s in stalled):
                if time.monotonic() > deadline:
                    raise SystemExit("the holder did not start replying to every stalled client within 120 s")
                time.sleep(0.01)
            all_started = time.monotonic() - t0
            t1 = time.monotonic()
            try:
                rows = ask_holder(db, "SELECT 42", timeout=60).rows
                assert rows == [(42,)], rows
                waited = time.monotonic() - t1
            except ConnectionError:
                waited = float("inf")
            return all_started, waited
        finally:
            for s in stalled:
                s.close()
            p.kill()
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stalled", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--code", type=Path, default=ROOT, help="checkout whose holder is measured")
    a = ap.parse_args()
    print(f"load before: {Path('/proc/loadavg').read_text().split()[:3]}")
    for queued in (False, True):
        mode = "queued" if queued else "stalled"
        waits = []
        for i in range(a.rounds):
            started, waited = one_round(a.code.resolve(), a.stalled, queued)
            waits.append(waited)
            shown = "no answer within 60 s" if waited == float("inf") else f"{waited * 1000:.0f} ms"
            when = (
                "right after the stalled requests"
                if queued
                else f"once replies had started to all {a.stalled} stalled clients ({started:.2f} s)"
            )
            print(f"{mode} round {i + 1}: SELECT 42 from a 9th client, asked {when}: answered in {shown}")
        med = statistics.median(waits)
        print(
            f"{mode}: median wait {med * 1000:.0f} ms; target {TARGET_S:.0f} s: ratio {med / TARGET_S:.3f}"
            + ("" if queued else f" ({'within' if med <= TARGET_S else 'OVER'} target)")
        )
    print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
