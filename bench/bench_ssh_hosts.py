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
  host (one SSH connection each: SFTP reads, ``find`` listings; the hosts' ``inotifywait``
  reports changed paths and only those are synced, unless ``--no-inotify``: adaptive stat
  intervals and full listings), the :class:`~edgetui.live.remote_hosts.HostLinks` of those hosts (with each host's
  Docker engine through its forwarded socket unless ``--no-engines``; this machine's engine
  behind all of them) and one ``Supervisor.run_forever`` over the hosts' images.
* Lag of a line, as in bench_live: the commit time of the first transaction that recorded the
  line's events − its append time (both clocks are this machine's).

First, unless ``--no-local``, the baseline: the same trees watched by a local supervisor (keyed by
the same host names) with the same writer, in this process; then the SSH run. Printed for each:
lag p50 / p95 / max (target p95 < 2 s), edgetui's CPU (this process: user + system ÷ wall, the
writer excluded; target < 30 % of one core), beside it the servers' CPU (every sshd of the
fixture and what it forked: sftp-server, sessions), refreshes, finalizes, syncs, load average;
then the SSH / local ratios.

``--code DIR`` runs another checkout's ``edgetui`` (e.g. a checkout of main at ``../main``) under this
same bench, for before/after runs interleaved in one session (an older feed without path syncs ignores nothing:
it only lacks their counts).

Usage: ``.venv/bin/python bench/bench_ssh_hosts.py [--hosts 10] [--runs 15] [--rate 2] [--seconds 60]
[--no-inotify] [--no-engines] [--code DIR]``
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
    ap.add_argument("--no-local", action="store_true", help="skip the local baseline (same tree read locally)")
    ap.add_argument("--no-inotify", action="store_true", help="no inotifywait: adaptive intervals, full listings")
    ap.add_argument("--code", type=Path, help="import edgetui from this checkout instead (before/after runs)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    import bench_live
    import prereqs
    from sshd_fixture import Sshd

    if args.code is not None:  # after bench_live, which puts this checkout first
        assert "edgetui" not in sys.modules
        sys.path.insert(0, str(args.code.resolve()))

    from edgetui.store.database import open_db
    from edgetui.live.remote_hosts import HostLinks
    from edgetui.hosts.config import HostConfig
    from edgetui.hosts.feed import RemoteFeed
    from edgetui.hosts.ssh import UP, SshHost
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor
    from edgetui.live.tail import Tailer

    os.environ.pop("SSH_AUTH_SOCK", None)
    tmp = Path(tempfile.mkdtemp(prefix="edgetui-bench-hosts-"))
    servers, feeds, paths, keys, roots = [], [], [], [], []
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
    k_next = [args.history]

    def measure(sup, label: str, links=None) -> dict:
        """Catch up, then the writer for --seconds while sup.run_forever follows; the figures."""
        t = time.time()
        sup.poll_once()
        while sup.behind or any(rs.dirty_files or rs.dirty_finalize for rs in sup.runs.values()):
            sup.poll_once()
        print(f"[{label}] {len(sup.runs)} runs watched, caught up in {time.time() - t:.1f} s")
        if links is not None and links.engines:
            end = time.monotonic() + 60
            while time.monotonic() < end and not all(e.available for e in links.engines.values()):
                time.sleep(0.2)
        finalizes = [0]  # runs finalized (a refresh finalizes its due runs together)
        orig_fin = sup.files.finalize_many

        def counted_fin(items):
            finalizes[0] += len(items)
            return orig_fin(items)

        sup.files.finalize_many = counted_fin  # type: ignore[method-assign]  # (a counting spy)
        ctx = mp.get_context("spawn")
        go = ctx.Event()
        log_path = str(tmp / f"writer-{label}.json")
        proc = ctx.Process(
            target=bench_live.writer,
            args=([str(p) for p in paths], args.rate, args.seconds, k_next[0], log_path, go, args.submit_every),
        )
        proc.start()
        k_next[0] += int(args.rate * args.seconds) + 10
        time.sleep(1.0)  # the writer process imports
        stop = threading.Event()
        polls = [0]
        orig_poll = sup.poll_once

        def counted():
            polls[0] += 1
            return orig_poll()

        sup.poll_once = counted
        th = threading.Thread(target=sup.run_forever, args=(args.interval, stop, None), daemon=True)
        syncs0 = sum(f.syncs for f in feeds)
        full0 = sum(getattr(f, "full_syncs", 0) for f in feeds)
        listed0 = (
            sum(getattr(e, "api_listings", e.listings) for e in links.engines.values()) if links is not None else 0
        )
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
        s1 = _cpu_ticks(sorted(set(spids) | {p for s in servers for p in s.pids()}))
        load1 = open("/proc/loadavg").read().split()[:3]
        stop.set()
        th.join(10)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
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

        out = dict(
            cpu=cpu / wall,
            p50=pct(50),
            p95=pct(95),
            max=lags[-1] if lags else float("nan"),
            missing=missing,
            srv=(s1 - s0) / os.sysconf("SC_CLK_TCK") / wall,
        )
        extra = ""
        if links is not None:
            full = sum(getattr(f, "full_syncs", 0) for f in feeds) - full0
            extra = (
                f", syncs {sum(f.syncs for f in feeds) - syncs0} (full listings {full}), engine listings over SSH "
                f"{sum(getattr(e, 'api_listings', e.listings) for e in links.engines.values()) - listed0}"
            )
        print(
            f"[{label}] lines appended {len(log)}, recorded {len(lags)}, not recorded {missing}; "
            f"refreshes {polls[0]}, finalizes {finalizes[0]}{extra}"
        )
        print(
            f"[{label}] lag append->db: p50 {out['p50'] * 1000:.0f} ms, p95 {out['p95'] * 1000:.0f} ms, "
            f"max {out['max'] * 1000:.0f} ms"
        )
        print(
            f"[{label}] edgetui cpu: {cpu:.1f} s over {wall:.1f} s = {100 * out['cpu']:.1f} % of one core "
            f"(user {r1.ru_utime - r0.ru_utime:.1f} s, system {r1.ru_stime - r0.ru_stime:.1f} s); servers' cpu "
            f"(sshd, sftp-server, sessions) {100 * out['srv']:.1f} % of one core; load average "
            f"{' '.join(load0)} -> {' '.join(load1)}"
        )
        return out

    try:
        sshd = prereqs.need("sshd")
        for h in range(args.hosts):
            s = Sshd(sshd, tmp / f"sshd{h}").start()
            servers.append(s)
            root = tmp / f"host{h}" / "runs"
            roots.append(root)
            for i, p in enumerate(bench_live.make_runs(root, args.runs, args.history)):
                paths.append(p)
                keys.append((f"box{h}/bench-{i}/task{i}", "agent_output.txt"))
            kh = tmp / f"kh{h}"
            s.known_hosts(kh)
            host = SshHost(
                f"box{h}",
                f"{s.user}@127.0.0.1:{s.port}",
                config=[],
                known_hosts=str(kh),
                client_keys=[str(s.user_key)],
                connect_timeout=10,
            )
            feeds.append(
                RemoteFeed(
                    HostConfig(f"box{h}", host.target, (str(root),)),
                    host=host,
                    cache=tmp / f"cache{h}",
                    use_inotify=not args.no_inotify,
                )
            )
        print(
            f"{args.hosts} hosts × {args.runs} runs, {args.rate:g} lines/s per run "
            f"({len(paths) * args.rate:g} lines/s), {args.seconds:g} s, a graded submission every "
            f"{args.submit_every:g} s; {'no engines' if args.no_engines else 'engines over the forwarded sockets'}"
        )
        base = None
        if not args.no_local:
            # baseline, same process, same tree, same writer: the runs read locally (keyed by the same hosts)
            conn0 = open_db(tmp / "local.duckdb")
            sup0 = Supervisor(
                conn0,
                [(r, f"box{h}") for h, r in enumerate(roots)],
                docker_client=None,
                settings=AlarmSettings(stats_interval_s=0),
            )
            base = measure(sup0, "local")
            sup0.close()
            conn0.close()
        import edgetui

        print("edgetui from", Path(edgetui.__file__).parent, "; inotifywait", "off" if args.no_inotify else "on")
        for f in feeds:
            f.host.start()
        for f in feeds:
            assert f.host.wait_up(20).kind == UP, f.host.state
            f.sync_once()
        conn = open_db(tmp / "bench.duckdb")
        sup = Supervisor(
            conn, [r for f in feeds for r in f.roots()], docker_client=None, settings=AlarmSettings(stats_interval_s=0)
        )
        links = HostLinks(feeds, docker=not args.no_engines, engine_options=dict(stats_interval_s=0)).attach(sup)
        links.start()
        got = measure(sup, "ssh", links)
        if base is not None:
            print(f"ssh / local: cpu {got['cpu'] / base['cpu']:.2f}x, lag p95 {got['p95'] / base['p95']:.2f}x")
        ok = got["p95"] < 2.0 and got["cpu"] < 0.30 and got["missing"] == 0
        print("targets over SSH (p95 < 2 s, < 30 % of one core):", "met" if ok else "NOT met")
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
