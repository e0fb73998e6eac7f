#!/usr/bin/env python3
"""Remote runs over SSH against a real OpenSSH sshd on 127.0.0.1 (issue 16's Speed section).

Starts one sshd (tests/sshd_fixture.py: generated keys, a free loopback port) and measures, in this
one process:

1. **follow**: a transcript on the server grows by ``--grow-mb`` MB (default 200) in appends of
   ``--chunk-kb`` KB at ``--rate-mb`` MB/s while a :class:`~edgetui.hosts.feed.RemoteFeed` keeps
   its image in step. Bytes the server's ``sftp-server`` read (``rchar`` of its ``/proc/<pid>/io``:
   file reads plus the request packets it read from sshd, counted at the server) ÷ bytes
   appended (target ≤ 1.05); lag append → the bytes in the local image, p50 / p95 (target p95 <
   2 s; the image → database step is the local tailer's, measured by bench/bench_live.py).
2. **first scan**: a runs root of ``--runs`` runs (default 50; bench_scale.build: hard links of
   the sample and genuine runs, transcripts included) recorded (a) locally (``ingest_paths`` into
   a fresh database) and (b) over SSH (mirror sync + ``ingest_paths`` of the image into another
   fresh database): ratio b / a (target ≤ 1.3); bytes moved over SSH (the first sync's gzipped
   tar stream plus what sftp-server read) beside what ``rsync -a`` of the tree moves (and its
   time), when rsync is installed; (c) the rescan with nothing changed (sync + ingest; target < 2 s).

Usage: ``.venv/bin/python bench/bench_ssh.py [--grow-mb 200] [--rate-mb 20] [--runs 50]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def rchar(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/io").read_text().splitlines():
                if line.startswith("rchar:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def follow(s, host, work: Path, grow_mb: float, rate_mb: float, chunk_kb: int) -> None:
    from edgetui.hosts.config import HostConfig
    from edgetui.hosts.feed import RemoteFeed

    runs = work / "follow" / "runs"
    task = runs / "run-1" / "task_a"
    task.mkdir(parents=True)
    (task / "run_agent.log").write_text("2026-12-01 10:00:00 INFO start\n")
    f = task / "agent_output.txt"
    f.write_bytes(b"")
    feed = RemoteFeed(HostConfig("box", host.target, (str(runs),)), host=host, cache=work / "follow-img",
                      min_interval_s=0.1, max_interval_s=0.5)
    feed.sync_once()
    image = feed.mirrors[0].local_root / "run-1" / "task_a" / "agent_output.txt"
    pids = s.sftp_server_pids()
    before = rchar(pids)
    feed.start()
    chunk = (b'{"type":"assistant","message":{"content":[{"type":"text","text":"' + b"x" * (chunk_kb * 1024 - 80)
             + b'"}]}}\n')
    total = int(grow_mb * 1e6)
    marks: list[tuple[int, float]] = []
    lags: list[float] = []
    done = threading.Event()

    def watcher():
        i = 0
        while not done.is_set() or i < len(marks):
            size = image.stat().st_size if image.exists() else 0
            now = time.monotonic()
            while i < len(marks) and marks[i][0] <= size:
                lags.append(now - marks[i][1])
                i += 1
            time.sleep(0.01)
            if done.is_set() and now - end_t > 30:
                break

    end_t = float("inf")
    t = threading.Thread(target=watcher, daemon=True)
    t.start()
    written = 0
    t0 = time.monotonic()
    with open(f, "ab") as out:
        while written < total:
            out.write(chunk)
            out.flush()
            written += len(chunk)
            marks.append((written, time.monotonic()))
            ahead = written / (rate_mb * 1e6) - (time.monotonic() - t0)
            if ahead > 0:
                time.sleep(ahead)
    end_t = time.monotonic()
    done.set()
    t.join(60)
    feed._stop.set()
    feed._kick.set()
    for th in feed._threads:
        th.join(5)
    read = rchar(pids) - before
    lags.sort()
    p95 = lags[int(len(lags) * 0.95) - 1] if lags else float("nan")
    print(f"follow: {written / 1e6:.0f} MB appended in {end_t - t0:.1f} s ({chunk_kb} KB appends), "
          f"{feed.syncs} syncs")
    print(f"  bytes read by sftp-server (its /proc io rchar) / bytes appended = {read / written:.4f} "
          f"(target <= 1.05) {'OK' if read / written <= 1.05 else 'MISSED'}")
    print(f"  lag append -> local image: p50 {statistics.median(lags) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
          f"max {lags[-1] * 1000:.0f} ms over {len(lags)} appends (target p95 < 2 s) "
          f"{'OK' if p95 < 2 else 'MISSED'}")


def first_scan(s, host, work: Path, n_runs: int) -> None:
    import bench_scale

    from edgetui.db import open_db
    from edgetui.hosts.mirror import Mirror
    from edgetui.ingest import ingest_paths

    root = work / "scan" / "runs"
    root.mkdir(parents=True)
    n_subs, held = bench_scale.build(root, n_runs)
    for src, dst in held:
        os.link(src, dst)
    tasks = bench_scale.merged_tasks(work / "tasks")
    n_bytes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    print(f"first scan: {n_runs} runs, {n_subs} submission folders, {n_bytes / 1e6:.1f} MB")

    def ingest(db: Path, path: Path):
        conn = open_db(db)
        try:
            return ingest_paths(conn, [path], tasks_dir=tasks, host="box")
        finally:
            conn.close()

    t0 = time.perf_counter()
    rep_l = ingest(work / "local.duckdb", root)
    t_local = time.perf_counter() - t0
    pids = s.sftp_server_pids()
    before = rchar(pids)
    m = Mirror(host, str(root), work / "scan-img")
    t0 = time.perf_counter()
    srep = m.sync()
    t_sync = time.perf_counter() - t0
    rep_r = ingest(work / "remote.duckdb", m.local_root)
    t_remote = time.perf_counter() - t0
    moved = rchar(pids) - before
    assert sorted(rep_l.runs) == sorted(rep_r.runs), "the two ingests recorded different runs"
    print(f"  local first ingest {t_local:.2f} s; over SSH {t_remote:.2f} s (sync {t_sync:.2f} s + ingest "
          f"{t_remote - t_sync:.2f} s): {t_remote / t_local:.2f}x (target <= 1.3) "
          f"{'OK' if t_remote / t_local <= 1.3 else 'MISSED'}")
    print(f"  bytes over SSH: {(moved + srep.bulk_bytes) / 1e6:.1f} MB ({srep.bulk_bytes / 1e6:.1f} MB of one gzipped "
          f"tar stream, {moved / 1e6:.1f} MB read by sftp-server) for {srep.bytes_read / 1e6:.1f} MB of files "
          f"({srep.files} files; listing by one remote find)")
    if shutil.which("rsync"):
        dest = work / "rsync-copy"
        t0 = time.perf_counter()
        r = subprocess.run(["rsync", "-a", "--stats", f"{root}/", str(dest)], capture_output=True, text=True)
        t_rs = time.perf_counter() - t0
        sent = next((ln for ln in r.stdout.splitlines() if ln.startswith("Total bytes sent")), "?")
        print(f"  rsync -a of the tree (local, no ssh): {t_rs:.2f} s, {sent.strip()}")
    else:
        print("  rsync not installed: its figure left out (apt-get install rsync)")
    t0 = time.perf_counter()
    again = m.sync()
    rep2 = ingest(work / "remote.duckdb", m.local_root)
    t_re = time.perf_counter() - t0
    print(f"  rescan with nothing changed: {t_re:.2f} s (sync {again.seconds:.2f} s reading "
          f"{again.bytes_read} bytes, {rep2.unchanged} runs unchanged) (target < 2 s) "
          f"{'OK' if t_re < 2 else 'MISSED'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grow-mb", type=float, default=200.0)
    ap.add_argument("--rate-mb", type=float, default=20.0)
    ap.add_argument("--chunk-kb", type=int, default=64)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--skip-follow", action="store_true")
    ap.add_argument("--skip-scan", action="store_true")
    args = ap.parse_args()
    import prereqs
    from sshd_fixture import Sshd

    from edgetui.hosts.ssh import SshHost

    sshd = prereqs.find_sshd()
    if sshd is None:
        print("bench_ssh: sshd not found (apt-get install openssh-server)", file=sys.stderr)
        return 2
    os.environ.pop("SSH_AUTH_SOCK", None)
    with tempfile.TemporaryDirectory(prefix="edgetui-bench-ssh-") as tmp:
        work = Path(tmp)
        s = Sshd(sshd, work / "sshd").start()
        host = SshHost("box", f"{s.user}@127.0.0.1:{s.port}", config=[],
                       known_hosts=str(s.known_hosts(work / "kh")), client_keys=[str(s.user_key)])
        try:
            assert host.wait_up(10).kind == "up", host.state
            if not args.skip_scan:
                first_scan(s, host, work, args.runs)
            if not args.skip_follow:
                follow(s, host, work, args.grow_mb, args.rate_mb, args.chunk_kb)
        finally:
            host.close()
            s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
