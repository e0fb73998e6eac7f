#!/usr/bin/env python3
"""Many remote hosts through one edgetui: ``--hosts`` real OpenSSH sshd (tests/sshd_fixture.py) on
distinct loopback ports, ``--runs`` live runs on each (issue 16's Speed section: 10 × 15).

* Each host's runs root holds ``--runs`` run directories (bench/bench_live.py's ``make_runs``:
  a run_agent.log, a run_config.json and an ``agent_output.txt`` of ``--history`` Claude
  stream-json lines).
* A separate writer **process** (bench_live's ``writer``) appends ``--rate`` lines per second to
  every transcript of every host (and, every ``--submit-every`` seconds, a graded submission
  folder to one run), logging (file, offset, append time) of each line.
* This process is the whole live side of edgetui: one :class:`~edgetui.hosts.feed.RemoteFeed` per
  host (one SSH connection each: SFTP listings and reads; no ``inotifywait`` here, so adaptive
  stat intervals), the :class:`~edgetui.hosts.attach.HostLinks` of those hosts (with each host's
  Docker engine through its forwarded socket unless ``--no-engines``; this machine's engine
  behind all of them) and one ``Supervisor.run_forever`` over the hosts' images.
* Lag of a line, as in bench_live: the commit time of the first transaction that recorded the
  line's events − its append time (both clocks are this machine's).

Printed: lag p50 / p95 / max (target p95 < 2 s), edgetui's CPU (this process: user + system ÷ wall,
the writer excluded; target < 30 % of one core), beside it the servers' CPU (every sshd of the
fixture and what it forked: sftp-server, sessions), refreshes, syncs, load average.

Usage: ``.venv/bin/python bench/bench_ssh_hosts.py [--hosts 10] [--runs 15] [--rate 2] [--seconds 60]``
"""

from __future__ import annotations

import argparse
import bisect
import json
import multiprocessing as mp
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            pass
    return total


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=10)
    ap.add_argument("--runs", type=int, default=15, help="live runs per host")
    ap.add_argument("--rate", type=float, default=2.0, help="lines per second per transcript")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--history", type=int, default=100, help="lines already in each transcript")
    ap.add_argument("--interval", type=float, default=1.0, help="run_forever interval")
    ap.add_argument("--submit-every", type=float, default=4.0, help="a graded submission folder this often (0: never)")
    ap.add_argument("--no-engines", action="store_true", help="leave the hosts' Docker engines out")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)

    import bench_live
    import prereqs
    from sshd_fixture import Sshd

    from edgetui.db import open_db
    from edgetui.hosts.attach import HostLinks
    from edgetui.hosts.config import HostConfig
    from edgetui.hosts.feed import RemoteFeed
    from edgetui.hosts.ssh import UP, SshHost
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor
    from edgetui.live.tail import Tailer

    os.environ.pop("SSH_AUTH_SOCK", None)
    tmp = Path(tempfile.mkdtemp(prefix="edgetui-bench-hosts-"))
    servers, feeds, paths, keys = [], [], [], []
    try:
        sshd = prereqs.need("sshd")
        for h in range(args.hosts):
            s = Sshd(sshd, tmp / f"sshd{h}").start()
            servers.append(s)
            root = tmp / f"host{h}" / "runs"
            for i, p in enumerate(bench_live.make_runs(root, args.runs, args.history)):
                paths.append(p)
                keys.append((f"box{h}/bench-{i}/task{i}", "agent_output.txt"))
            kh = tmp / f"kh{h}"
            s.known_hosts(kh)
            host = SshHost(f"box{h}", f"{s.user}@127.0.0.1:{s.port}", config=[], known_hosts=str(kh),
                           client_keys=[str(s.user_key)], connect_timeout=10)
            feeds.append(RemoteFeed(HostConfig(f"box{h}", host.target, (str(root),)), host=host,
                                    cache=tmp / f"cache{h}", use_inotify=False))
        for f in feeds:
            f.host.start()
        for f in feeds:
            assert f.host.wait_up(20).kind == UP, f.host.state
            f.sync_once()
        conn = open_db(tmp / "bench.duckdb")
        commits: list[tuple[float, dict]] = []
        orig_commit = Tailer._commit

        def timed_commit(self, events, cursors):
            orig_commit(self, events, cursors)
            top: dict = {}
            for e in events:
                k = (e.run_key, e.source)
                if e.offset > top.get(k, -1):
                    top[k] = e.offset
            commits.append((time.time(), top))

        Tailer._commit = timed_commit
        sup = Supervisor(conn, [r for f in feeds for r in f.roots()], docker_client=None,
                         settings=AlarmSettings(stats_interval_s=0))
        links = HostLinks(feeds, docker=not args.no_engines, engine_options=dict(stats_interval_s=0)).attach(sup)
        t = time.time()
        sup.poll_once()
        while sup.behind or any(rs.dirty_files or rs.dirty_finalize for rs in sup.runs.values()):
            sup.poll_once()
        print(f"{args.hosts} hosts × {args.runs} runs: {len(sup.runs)} runs watched, caught up in {time.time() - t:.1f} s")
        links.start()
        ctx = mp.get_context("spawn")
        go = ctx.Event()
        log_path = str(tmp / "writer.json")
        proc = ctx.Process(target=bench_live.writer, args=([str(p) for p in paths], args.rate, args.seconds,
                                                           args.history, log_path, go, args.submit_every))
        proc.start()
        time.sleep(1.0)  # the writer process imports
        polls = [0]
        orig_poll = sup.poll_once

        def counted():
            polls[0] += 1
            return orig_poll()

        sup.poll_once = counted
        stop = threading.Event()
        th = threading.Thread(target=sup.run_forever, args=(args.interval, stop, None), daemon=True)
        syncs0 = sum(f.syncs for f in feeds)
        commits.clear()
        spids = [p for s in servers for p in s.pids()]
        s0 = _cpu_ticks(spids)
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        w0 = time.time()
        load0 = open("/proc/loadavg").read().split()[:3]
        th.start()
        go.set()
        proc.join()
        time.sleep(3.0)  # the last lines land
        wall = time.time() - w0
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        spids = sorted(set(spids) | {p for s in servers for p in s.pids()})
        s1 = _cpu_ticks(spids)
        load1 = open("/proc/loadavg").read().split()[:3]
        stop.set()
        th.join(10)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        srv_cpu = (s1 - s0) / os.sysconf("SC_CLK_TCK")
        log = json.load(open(log_path))
        per_src: dict[tuple, list[tuple[float, int]]] = {k: [] for k in keys}
        for t_c, curs in commits:
            for k, off in curs.items():
                if k in per_src:
                    per_src[k].append((t_c, off))
        lags, missing = [], 0
        offs_of = {k: [o for _, o in seq] for k, seq in per_src.items()}
        for i, start, t_a in log:
            seq, offs = per_src[keys[i]], offs_of[keys[i]]
            j = bisect.bisect_left(offs, start)
            while j < len(seq) and seq[j][0] < t_a:
                j += 1
            if j >= len(seq):
                missing += 1
                continue
            lags.append(seq[j][0] - t_a)
        lags.sort()

        def pct(p):
            return lags[min(len(lags) - 1, int(p / 100 * len(lags)))] if lags else float("nan")

        engines = "no engines" if args.no_engines else \
            f"engines: {sum(e.listings for e in links.engines.values())} listings over SSH"
        print(f"{args.rate:g} lines/s per run ({len(paths) * args.rate:g} lines/s), {args.seconds:g} s, "
              f"submission every {args.submit_every:g} s; {engines}")
        print(f"lines appended {len(log)}, recorded {len(lags)}, not recorded {missing}")
        print(f"lag append->db: p50 {pct(50) * 1000:.0f} ms, p95 {pct(95) * 1000:.0f} ms, "
              f"max {(lags[-1] if lags else float('nan')) * 1000:.0f} ms (target p95 < 2 s)")
        print(f"edgetui cpu: {cpu:.1f} s over {wall:.1f} s = {100 * cpu / wall:.1f} % of one core "
              f"(user {r1.ru_utime - r0.ru_utime:.1f} s, system {r1.ru_stime - r0.ru_stime:.1f} s; target < 30 %)")
        print(f"servers' cpu (sshd, sftp-server, sessions): {srv_cpu:.1f} s = {100 * srv_cpu / wall:.1f} % of one core")
        print(f"refreshes {polls[0]}, syncs {sum(f.syncs for f in feeds) - syncs0}, "
              f"load average {' '.join(load0)} -> {' '.join(load1)}")
        ok = pct(95) < 2.0 and cpu / wall < 0.30 and missing == 0
        print("targets (p95 < 2 s, < 30 % of one core):", "met" if ok else "NOT met")
        links.close()
        sup.close()
        conn.close()
        return 0 if ok else 1
    finally:
        for s in servers:
            s.close()
        if args.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
