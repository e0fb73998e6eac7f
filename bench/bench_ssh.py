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
2. **first scan**: a runs root of ``--runs`` runs (default 50) with ``--subs`` submission folders
   each (default 100: issue 16's 5,000), built from the sample and genuine runs by
   :func:`build_tree`, every file its own copy (no hard links: tar and rsync both send every
   file, so the bytes comparison is fair), transcripts included, synced to disk before timing.
   ``--rounds`` paired rounds (default 3, the order of the two sides alternating, ``os.sync``
   between them): (a) the local first ingest (``ingest_paths`` into a fresh database) and (b)
   over SSH, a fresh image (mirror sync: the tar streams and the listing, staged in tmpfs where
   edgetui can: edgetui/hosts/stage.py) + ``ingest_paths`` of the image into another fresh
   database: the scan is done when its runs are recorded and queryable. The staged image's write to
   disk that follows (``Mirror.settle``) is timed apart and printed beside, not counted in the
   ratio (``--no-stage``: every first sync straight to disk). Ratio b / a per round and its median (target ≤ 1.3),
   the image's ingest against the local one; bytes moved over SSH (the compressed tar streams
   plus what sftp-server read) beside ``rsync -a`` of the tree from the same sshd (its bytes
   received and time); (c) the rescan with nothing changed (sync + ingest, 4 times; target < 2 s), each with its phases and
   this process's CPU time, interleaved (ABBA) with 4 rescans that first forget what the last sync
   verified (every path lstat'ed and the image walked, as before the trust). Each round also prints
   the CPU seconds (this process and its children: the local tars, the ingest's shard; not the
   server's) of the local ingest, the sync, the image's ingest and the image's write.

``--settle-variants``: only the staged image's write to disk, the tar pipe edgetui uses against
``shutil.copytree``, interleaved (``--rounds`` rounds), wall and CPU.

Usage: ``.venv/bin/python bench/bench_ssh.py [--grow-mb 200] [--rate-mb 20] [--runs 50] [--subs 100] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import os
import re
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

from sshd_fixture import rchar  # noqa: E402  (bytes read at the server: /proc/<pid>/io)


def follow(s, host, work: Path, grow_mb: float, rate_mb: float, chunk_kb: int) -> None:
    from edgetui.hosts.config import HostConfig
    from edgetui.hosts.feed import RemoteFeed

    runs = work / "follow" / "runs"
    task = runs / "run-1" / "task_a"
    task.mkdir(parents=True)
    (task / "run_agent.log").write_text("2026-12-01 10:00:00 INFO start\n")
    f = task / "agent_output.txt"
    f.write_bytes(b"")
    feed = RemoteFeed(
        HostConfig("box", host.target, (str(runs),)),
        host=host,
        cache=work / "follow-img",
        min_interval_s=0.1,
        max_interval_s=0.5,
    )
    feed.sync_once()
    image = feed.mirrors[0].local_root / "run-1" / "task_a" / "agent_output.txt"
    pids = s.sftp_server_pids()
    before = rchar(pids)
    load0 = os.getloadavg()[0]
    feed.start()
    chunk = (
        b'{"type":"assistant","message":{"content":[{"type":"text","text":"'
        + b"x" * (chunk_kb * 1024 - 80)
        + b'"}]}}\n'
    )
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
    print(
        f"follow: {written / 1e6:.0f} MB appended in {end_t - t0:.1f} s ({chunk_kb} KB appends), "
        f"{feed.syncs} syncs; load {load0:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  bytes read by sftp-server (its /proc io rchar) / bytes appended = {read / written:.4f} "
        f"(target <= 1.05) {'OK' if read / written <= 1.05 else 'MISSED'}"
    )
    print(
        f"  lag append -> local image: p50 {statistics.median(lags) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
        f"max {lags[-1] * 1000:.0f} ms over {len(lags)} appends (target p95 < 2 s) "
        f"{'OK' if p95 < 2 else 'MISSED'}"
    )


def _sub_key(name: str) -> tuple:
    m = re.match(r"^(.*?)(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


def build_tree(root: Path, n_runs: int, subs_per_run: int) -> int:
    """``n_runs`` task dirs under ``root``, each with exactly ``subs_per_run`` submission folders, every
    file its own copy (no hard links: tar and rsync then both send every file, the bytes comparison is
    fair). Run ``c`` is a copy of the bundled run ``c mod T`` (the T runs with a submissions folder; the
    12-hour sample in every second round only), transcript included, mtimes kept; a template with fewer
    submission folders is filled up with copies of its own (next numbers, same prefix), one with more
    keeps its first ``subs_per_run``. Returns the number of submission folders."""
    import bench_scale

    tpl = [t for t in bench_scale.templates() if (t[2] / "submissions").is_dir()]
    made = c = n_subs = 0
    while made < n_runs:
        for group, run_id, task_dir in tpl:
            if made >= n_runs:
                break
            if task_dir.name == bench_scale.BIG and c % 2:
                continue
            run_dir = (root / group if group else root) / f"{run_id}-c{c:03d}"
            dst = run_dir / task_dir.name
            shutil.copytree(task_dir, dst, ignore=shutil.ignore_patterns("submissions"))
            cfg = task_dir.parent / "run_config.json"
            if cfg.is_file() and not (run_dir / "run_config.json").exists():
                shutil.copy2(cfg, run_dir / "run_config.json")
            subs = sorted((e.name for e in os.scandir(task_dir / "submissions") if e.is_dir()), key=_sub_key)
            (dst / "submissions").mkdir()
            prefix, last = _sub_key(subs[-1])
            for i in range(subs_per_run):
                name = subs[i] if i < len(subs) else f"{prefix}{last + 1 + i - len(subs)}"
                shutil.copytree(task_dir / "submissions" / subs[i % len(subs)], dst / "submissions" / name)
            n_subs += subs_per_run
            made += 1
        c += 1
    return n_subs


def _rsync_over_ssh(s, work: Path, root: Path) -> tuple[float, int, int] | None:
    """``rsync -a`` of ``root`` from the bench's sshd into a fresh directory (the system ssh, the
    same keys): (seconds, bytes received, bytes sent by this side), or None without rsync / ssh."""
    if not (shutil.which("rsync") and shutil.which("ssh")):
        return None
    kh = s.known_hosts(work / "kh-rsync")
    rsh = (
        f"ssh -p {s.port} -i {s.user_key} -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes "
        "-o IdentitiesOnly=yes -o BatchMode=yes -F /dev/null"
    )
    dest = work / "rsync-copy"
    t0 = time.perf_counter()
    r = subprocess.run(
        ["rsync", "-a", "--stats", "-e", rsh, f"{s.user}@127.0.0.1:{root}/", str(dest)],
        capture_output=True,
        text=True,
        check=False,
    )
    t = time.perf_counter() - t0
    shutil.rmtree(dest, ignore_errors=True)

    def stat(label: str) -> int:
        line = next((ln for ln in r.stdout.splitlines() if ln.startswith(label)), "")
        digits = "".join(ch for ch in line.split(":", 1)[-1] if ch.isdigit())
        return int(digits or 0)

    if r.returncode != 0:
        print(f"  rsync failed ({r.returncode}): {r.stderr.strip()[:200]}")
        return None
    return t, stat("Total bytes received"), stat("Total bytes sent")


def sync_variants(host, work: Path, root: Path, counts: list[str], reps: int) -> None:
    """The first sync alone (no ingest) with each number of tar streams in ``counts`` (``N``: as
    edgetui does it, staged in tmpfs where it can; ``N:disk``: straight to the image on disk;
    ``N:shm``: the image itself on /dev/shm),
    interleaved (``reps`` rounds, the order rotating each round, ``os.sync`` before each), in this
    process: the median seconds per variant and its ratio to the first one's, with each phase's
    median."""
    from edgetui.hosts import mirror as mirror_mod
    from edgetui.hosts import stage as stage_mod

    got: dict[str, list] = {c: [] for c in counts}
    keep = mirror_mod.STREAMS
    try:
        for r in range(reps):
            order = counts[r % len(counts) :] + counts[: r % len(counts)]
            for c in order:
                n, _, where = c.partition(":")
                mirror_mod.STREAMS = int(n)
                shm = where == "shm"
                base_dir = Path(tempfile.mkdtemp(prefix="sshscan2-bench-", dir="/dev/shm")) if shm else work
                img = base_dir / f"variant-{n}-{r}"
                os.sync()
                load = os.getloadavg()[0]
                m = mirror_mod.Mirror(host, str(root), img, use_stage=where != "disk")
                rep = m.sync()
                got[c].append((rep.seconds, rep.phases, load))
                print(
                    f"  round {r + 1}, {c} streams (load {load:.1f}): sync {rep.seconds:.2f} s"
                    f"{' (staged in tmpfs)' if m.staged else ''}: "
                    + ", ".join(f"{k} {v:.2f}" for k, v in rep.phases.items())
                )
                if m.stage is not None:
                    stage_mod.remove(m.stage)
                shutil.rmtree(base_dir if shm else img, ignore_errors=True)
    finally:
        mirror_mod.STREAMS = keep
    base = statistics.median(x[0] for x in got[counts[0]])
    for c in counts:
        med = statistics.median(x[0] for x in got[c])
        phases = {k: statistics.median(x[1].get(k, 0.0) for x in got[c]) for k in got[c][0][1]}
        print(
            f"  {c} streams: sync median {med:.2f} s ({med / base:.2f}x the {counts[0]}-stream one; phases "
            + ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
            + f"; load {os.getloadavg()[0]:.1f})"
        )


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children (user + system)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def settle_variants(host, work: Path, root: Path, reps: int) -> None:
    """The staged image's write to disk alone, each way interleaved (``reps`` rounds, the order
    alternating, ``os.sync`` before each): ``tar`` (edgetui's: a pipe of two tars,
    stage.copy_tree) and ``copytree`` (``shutil.copytree`` with ``copy2``, the way before), each
    copy of the stage's top-level entries followed by one ``syncfs``: wall and CPU seconds (this
    process and its children), medians and ratios."""
    from edgetui.hosts import mirror as mirror_mod
    from edgetui.hosts import stage as stage_mod

    m = mirror_mod.Mirror(host, str(root), work / "settle-img")
    m.sync()
    if m.stage is None:
        print("  not staged here (no tmpfs /dev/shm, or staging off): nothing to compare")
        return
    tops = [e.path for e in os.scandir(m.stage) if e.is_dir(follow_symlinks=False)]
    ways = {
        "tar": stage_mod.copy_tree,
        "copytree": lambda a, b: shutil.copytree(a, b, symlinks=True, copy_function=shutil.copy2),
    }
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in ways}
    out = work / "settle-copies"
    for r in range(reps):
        for name in list(ways) if r % 2 == 0 else list(ways)[::-1]:
            dst = out / f"{name}-{r}"
            dst.mkdir(parents=True)
            os.sync()
            load = os.getloadavg()[0]
            t0, c0 = time.perf_counter(), _cpu()
            for t in tops:
                ways[name](t, dst / os.path.basename(t))
            mirror_mod._flush(dst)
            got[name].append((time.perf_counter() - t0, _cpu() - c0))
            print(f"  round {r + 1}, {name} (load {load:.1f}): {got[name][-1][0]:.2f} s, CPU {got[name][-1][1]:.2f} s")
    base_w = statistics.median(x[0] for x in got["copytree"])
    base_c = statistics.median(x[1] for x in got["copytree"])
    for name, xs in got.items():
        w, c = statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)
        print(f"  {name}: median {w:.2f} s ({w / base_w:.2f}x copytree's), CPU {c:.2f} s ({c / base_c:.2f}x)")
    stage_mod.remove(m.stage)


def first_scan(
    s,
    host,
    work: Path,
    n_runs: int,
    subs: int,
    rounds: int,
    variants: list[str] | None = None,
    stage: bool = True,
    settle_ways: bool = False,
) -> None:
    import bench_scale

    from edgetui.store.database import open_db
    from edgetui.hosts.mirror import Mirror
    from edgetui.record.ingest import ingest_paths

    root = work / "scan" / "runs"
    root.mkdir(parents=True)
    t0 = time.perf_counter()
    n_subs = build_tree(root, n_runs, subs)
    tasks = bench_scale.merged_tasks(work / "tasks")
    files = [p for p in root.rglob("*") if p.is_file()]
    n_bytes = sum(p.stat().st_size for p in files)
    os.sync()  # the tree on disk, as a remote tree is: no writeback of it in any timed part
    print(
        f"first scan: {n_runs} runs, {n_subs} submission folders, {len(files)} files, {n_bytes / 1e6:.1f} MB, "
        f"every file its own copy (no hard links; built in {time.perf_counter() - t0:.1f} s, not counted)"
    )
    if variants:
        sync_variants(host, work, root, variants, rounds)
        return
    if settle_ways:
        settle_variants(host, work, root, rounds)
        return

    def ingest(db: Path, path: Path, image: bool = False):
        conn = open_db(db)
        try:
            # an image is ingested as `ingest --host` ingests it (cli/main.py): its runs signed without
            # inodes, so the staged image's move to disk (new inodes, the same files) changes nothing
            return ingest_paths(conn, [path], tasks_dir=tasks, host="box", images=[path] if image else ())
        finally:
            conn.close()

    ingest(work / "warm.duckdb", ROOT / "sample_runs" / "runs")  # imports and first-use costs, for neither side
    pids = s.sftp_server_pids()
    locals_, remotes, syncs, image_ingests, settles, staged = [], [], [], [], [], []
    settle_cpu: list[float] = []
    local_cpu: list[float] = []
    remote_cpu: list[tuple[float, float]] = []  # (sync, the image's ingest)
    settle_steps: list[dict] = []
    last = None
    for r in range(rounds):

        def local_side(r=r):
            t0, c0 = time.perf_counter(), _cpu()
            rep = ingest(work / f"local{r}.duckdb", root)
            locals_.append(time.perf_counter() - t0)
            local_cpu.append(_cpu() - c0)
            return rep

        def ssh_side(r=r):
            before = rchar(pids)
            m = Mirror(host, str(root), work / f"img{r}", use_stage=stage)
            t0, c0 = time.perf_counter(), _cpu()
            srep = m.sync()
            t_sync = time.perf_counter() - t0
            c_sync = _cpu()
            rep = ingest(work / f"remote{r}.duckdb", m.local_root, image=True)  # done: the runs recorded and queryable
            remotes.append(time.perf_counter() - t0)
            remote_cpu.append((c_sync - c0, _cpu() - c_sync))
            syncs.append(t_sync)
            image_ingests.append(remotes[-1] - t_sync)
            staged.append(m.staged)
            t1, c1 = time.perf_counter(), _cpu()
            m.settle()  # deferred, after the scan: the staged image written to disk (timed apart)
            settles.append(time.perf_counter() - t1)
            settle_cpu.append(_cpu() - c1)
            settle_steps.append(dict(m.settle_phases))
            return rep, m, srep, rchar(pids) - before

        load0 = os.getloadavg()[0]
        if r % 2 == 0:
            rep_l = local_side()
            os.sync()
            rep_r, m, srep, sftp_read = ssh_side()
        else:
            rep_r, m, srep, sftp_read = ssh_side()
            os.sync()
            rep_l = local_side()
        os.sync()
        assert sorted(rep_l.runs) == sorted(rep_r.runs) and len(rep_l.runs) == n_runs, "the two ingests differ"
        print(
            f"  round {r + 1} ({'local first' if r % 2 == 0 else 'ssh first'}; load {load0:.1f} -> "
            f"{os.getloadavg()[0]:.1f}): local ingest {locals_[-1]:.2f} s; over SSH {remotes[-1]:.2f} s = sync "
            f"{syncs[-1]:.2f} s + ingest of the image {image_ingests[-1]:.2f} s; ratio "
            f"{remotes[-1] / locals_[-1]:.2f}x (image ingest / local ingest {image_ingests[-1] / locals_[-1]:.2f}x); "
            f"{'staged in tmpfs, ' if staged[-1] else 'not staged, '}then (deferred, not in the ratio) the image "
            f"written to disk {settles[-1]:.2f} s (all three: {(remotes[-1] + settles[-1]) / locals_[-1]:.2f}x)"
        )
        print("    sync phases: " + ", ".join(f"{k} {v:.2f} s" for k, v in srep.phases.items()))
        print(
            f"    CPU (this process and its children; not the server's): local ingest {local_cpu[-1]:.2f} s; "
            f"sync {remote_cpu[-1][0]:.2f} s + image ingest {remote_cpu[-1][1]:.2f} s + image write "
            f"{settle_cpu[-1]:.2f} s = {(sum(remote_cpu[-1]) + settle_cpu[-1]) / local_cpu[-1]:.2f}x the local ingest's"
        )
        if staged[-1]:
            print(
                "    image write: "
                + ", ".join(f"{k} {v:.2f} s" for k, v in settle_steps[-1].items())
                + f"; CPU (this process and its children) {settle_cpu[-1]:.2f} s"
            )
        if last is not None:
            shutil.rmtree(last[0].local_root, ignore_errors=True)  # not timed
        last = (m, srep, sftp_read, r)
    m, srep, sftp_read, r_last = last
    ratios = [b / a for a, b in zip(locals_, remotes)]
    med = statistics.median(ratios)
    print(
        f"  first scan over SSH / local first ingest, median of {rounds} paired rounds: {med:.2f}x "
        f"(rounds {', '.join(f'{x:.2f}' for x in ratios)}; target <= 1.3) {'OK' if med <= 1.3 else 'MISSED'}; "
        f"sync median {statistics.median(syncs):.2f} s, image ingest / local ingest median "
        f"{statistics.median([b / a for a, b in zip(locals_, image_ingests)]):.2f}x; deferred image write median "
        f"{statistics.median(settles):.2f} s (scan + write / local: median "
        f"{statistics.median([(b + c) / a for a, b, c in zip(locals_, remotes, settles)]):.2f}x); CPU of scan + write / "
        f"local ingest's, median {statistics.median([(sum(b) + c) / a for a, b, c in zip(local_cpu, remote_cpu, settle_cpu)]):.2f}x"
    )
    moved = sftp_read + srep.bulk_bytes
    print(
        f"  bytes over SSH (last round): {moved / 1e6:.2f} MB = {srep.bulk_bytes / 1e6:.2f} MB of compressed tar "
        f"streams + {sftp_read / 1e6:.2f} MB read by sftp-server, for {srep.bytes_read / 1e6:.1f} MB of files "
        f"({srep.files} files; listing by one remote find)"
    )
    rs = _rsync_over_ssh(s, work, root)
    if rs is None:
        print("  rsync/ssh not installed: its figure left out (apt-get install rsync openssh-client)")
    else:
        t_rs, got, sent = rs
        print(
            f"  rsync -a of the tree over the same sshd (distinct files, no hard links): {t_rs:.2f} s, "
            f"{got / 1e6:.2f} MB received, {sent / 1e6:.2f} MB sent; ours / rsync's received = "
            f"{moved / max(got, 1):.3f} (target <= 1) {'OK' if moved <= got else 'MISSED'}"
        )
    # the rescan: as edgetui does it (the image trusted where its last sync verified it) and, interleaved
    # (ABBA), with that forgotten first (every path lstat'ed, the image walked for removals: the code before)
    res: dict[str, list] = {"trusted": [], "checked": []}
    for i in range(8):
        mode = "trusted" if i % 4 in (0, 3) else "checked"
        if mode == "checked":
            m._verified = m._listed = None
        t0, c0 = time.perf_counter(), time.process_time()
        again = m.sync()
        t_sync = time.perf_counter() - t0
        rep2 = ingest(work / f"remote{r_last}.duckdb", m.local_root, image=True)
        res[mode].append(
            (
                time.perf_counter() - t0,
                t_sync,
                time.process_time() - c0,
                again.bytes_read,
                rep2.unchanged,
                again.phases,
                os.getloadavg()[0],
            )
        )
        print(
            f"    rescan {i + 1} ({mode}, load {res[mode][-1][6]:.1f}): {res[mode][-1][0]:.2f} s = sync {t_sync:.2f} s ("
            + ", ".join(f"{k} {v:.2f}" for k, v in again.phases.items())
            + f") + ingest {res[mode][-1][0] - t_sync:.2f} s; CPU {res[mode][-1][2]:.2f} s; read {again.bytes_read} bytes; "
            f"{len(again.changed)} files changed, runs unchanged {rep2.unchanged} of {len(rep2.runs)}"
        )
    med = {k: [statistics.median(x[n] for x in v) for n in range(3)] for k, v in res.items()}
    worst = max(x[0] for x in res["trusted"])
    print(
        f"  rescan with nothing changed (sync + ingest), 4 times each, interleaved: {med['trusted'][0]:.2f} s median "
        f"(sync {med['trusted'][1]:.2f} s, this process's CPU {med['trusted'][2]:.2f} s; worst {worst:.2f} s) against "
        f"{med['checked'][0]:.2f} s (sync {med['checked'][1]:.2f} s, CPU {med['checked'][2]:.2f} s) with every path checked: "
        f"{med['trusted'][0] / med['checked'][0]:.2f}x; {res['trusted'][-1][4]} runs unchanged "
        f"(target < 2 s) {'OK' if worst < 2 else 'MISSED'}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grow-mb", type=float, default=200.0)
    ap.add_argument("--rate-mb", type=float, default=20.0)
    ap.add_argument("--chunk-kb", type=int, default=64)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--subs", type=int, default=100, help="submission folders per run")
    ap.add_argument("--rounds", type=int, default=3, help="paired first-scan rounds (local / SSH, order alternating)")
    ap.add_argument("--skip-follow", action="store_true")
    ap.add_argument(
        "--sync-streams",
        default="",
        help="e.g. 4,2: only the first sync, with each number of tar streams interleaved (--rounds rounds), no ingest",
    )
    ap.add_argument("--skip-scan", action="store_true")
    ap.add_argument(
        "--settle-variants",
        action="store_true",
        help="only the staged image's write to disk, tar pipe against shutil.copytree (--rounds rounds)",
    )
    ap.add_argument("--no-stage", action="store_true", help="first syncs straight to disk (no tmpfs stage)")
    ap.add_argument(
        "--no-compression", action="store_true", help="the connection uncompressed (edgetui compresses by default)"
    )
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
        host = SshHost(
            "box",
            f"{s.user}@127.0.0.1:{s.port}",
            config=[],
            known_hosts=str(s.known_hosts(work / "kh")),
            client_keys=[str(s.user_key)],
            compression=not args.no_compression,
        )
        try:
            assert host.wait_up(10).kind == "up", host.state
            print(f"connection compression: {'off' if args.no_compression else 'zlib@openssh.com'}")
            if not args.skip_scan:
                first_scan(
                    s,
                    host,
                    work,
                    args.runs,
                    args.subs,
                    args.rounds,
                    [x for x in args.sync_streams.split(",") if x] or None,
                    stage=not args.no_stage,
                    settle_ways=args.settle_variants,
                )
            if not args.skip_follow:
                follow(s, host, work, args.grow_mb, args.rate_mb, args.chunk_kb)
        finally:
            host.close()
            s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
