#!/usr/bin/env python3
"""Bytes on the wire per byte appended, following a growing transcript over SSH, compressed and not,
against ``rsync -az --append`` of the same growth (issue 36 item 12).

One OpenSSH sshd on 127.0.0.1 (tests/sshd_fixture.py; OpenSSH's default ``Compression yes``). A
transcript on the server grows by ``--rounds`` chunks of ``--chunk-kb`` KB of *distinct* lines
(the bundled transcripts' JSON lines, each given its own sequence number: nothing repeats
verbatim, as in a real transcript). After each chunk, in one process and interleaved (the order
alternating each round): the image of the root on a connection with compression
(``zlib@openssh.com``, edgetui's default) and on one without, each brought up to date the way the
live feed does it (``Mirror.sync_changed`` of the reported path: one ``find`` of it over the kept
shell, then the new bytes over SFTP); then ``rsync -az --append`` and ``rsync -a --append`` of
the file into copies of their own. Counted: for edgetui, the TCP payload bytes its connection
received (``tcpi_bytes_received`` of the socket: SSH framing and MACs included); for rsync, its
own ``Total bytes received`` (its protocol stream inside ssh: ssh's framing and each run's
key exchange not counted, which favours rsync). Printed: bytes received ÷ bytes appended for
each, ours against ``rsync -az``'s, and the seconds each sync took (median).

``--first-sync RUNS``: instead, the first sync of a root of RUNS runs × ``--subs`` submission
folders (bench/bench_ssh.py's tree), alternately over the compressed and the uncompressed
connection, ``--rounds`` times each (staged in tmpfs as edgetui does, the image and its stage
removed after each): seconds and TCP bytes received of each, medians and their ratio.

Usage: ``.venv/bin/python bench/bench_ssh_compression.py [--rounds 20] [--chunk-kb 1024]``,
``.venv/bin/python bench/bench_ssh_compression.py --first-sync 50 --subs 100 --rounds 3``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

#: offset of ``tcpi_bytes_received`` (u64) in Linux's ``struct tcp_info``
_TCPI_BYTES_RECEIVED = 128


def tcp_received(host) -> int:
    """TCP payload bytes the host's current connection has received."""
    sock = host.connection.get_extra_info("socket")
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return struct.unpack_from("<Q", info, _TCPI_BYTES_RECEIVED)[0]


def distinct_lines():
    """The bundled transcripts' JSON lines, over and over, each with its own ``"seq"``."""
    lines = []
    for p in sorted((ROOT / "sample_runs").rglob("agent_output.txt")):
        for raw in p.read_bytes().splitlines():
            if raw.startswith(b"{") and len(raw) < 200_000:
                lines.append(raw)
    seq = 0
    while True:
        for raw in lines:
            seq += 1
            yield b'{"seq":%d,' % seq + raw[1:] + b"\n"


def rsync_bytes(s, kh: Path, src: str, dest: Path, compress: bool) -> int:
    rsh = (
        f"ssh -p {s.port} -i {s.user_key} -o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes "
        "-o IdentitiesOnly=yes -o BatchMode=yes -F /dev/null"
    )
    r = subprocess.run(
        [
            "rsync",
            "-az" if compress else "-a",
            "--append",
            "--stats",
            "-e",
            rsh,
            f"{s.user}@127.0.0.1:{src}",
            str(dest),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("Total bytes received"))
    return int("".join(ch for ch in line.split(":", 1)[1] if ch.isdigit()))


def first_syncs(hosts: dict, work: Path, n_runs: int, subs: int, rounds: int) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import bench_ssh

    from edgetui.hosts import stage as stage_mod
    from edgetui.hosts.mirror import Mirror

    root = work / "scan" / "runs"
    root.mkdir(parents=True)
    bench_ssh.build_tree(root, n_runs, subs)
    os.sync()
    got: dict[str, list[tuple[float, int]]] = {m: [] for m in hosts}
    for r in range(rounds):
        for mode in ["zlib", "none"] if r % 2 == 0 else ["none", "zlib"]:
            h = hosts[mode]
            assert h.wait_up(10).kind == "up", h.state
            img = work / f"first-{mode}-{r}"
            before, t0 = tcp_received(h), time.perf_counter()
            m = Mirror(h, str(root), img)
            rep = m.sync()
            got[mode].append((time.perf_counter() - t0, tcp_received(h) - before))
            assert not rep.errors, rep.errors[:3]
            print(
                f"  round {r + 1} {mode} (load {os.getloadavg()[0]:.1f}): first sync {got[mode][-1][0]:.2f} s, "
                f"{got[mode][-1][1] / 1e6:.2f} MB received; " + ", ".join(f"{k} {v:.2f}" for k, v in rep.phases.items())
            )
            if m.stage is not None:
                stage_mod.remove(m.stage)
            shutil.rmtree(img, ignore_errors=True)
    med = {m: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for m, v in got.items()}
    print(
        f"first sync of {n_runs} runs x {subs} submission folders, median of {rounds} interleaved: compressed "
        f"{med['zlib'][0]:.2f} s, {med['zlib'][1] / 1e6:.2f} MB; uncompressed {med['none'][0]:.2f} s, "
        f"{med['none'][1] / 1e6:.2f} MB; compressed / uncompressed: {med['zlib'][0] / med['none'][0]:.2f}x time, "
        f"{med['zlib'][1] / med['none'][1]:.2f}x bytes"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--chunk-kb", type=int, default=1024)
    ap.add_argument("--first-sync", type=int, default=0, metavar="RUNS")
    ap.add_argument("--subs", type=int, default=100)
    args = ap.parse_args()
    import prereqs
    from sshd_fixture import Sshd

    from edgetui.hosts.mirror import Mirror
    from edgetui.hosts.ssh import SshHost

    if not shutil.which("rsync"):
        print("bench_ssh_compression: rsync not installed (apt-get install rsync)", file=sys.stderr)
        return 2
    os.environ.pop("SSH_AUTH_SOCK", None)
    with tempfile.TemporaryDirectory(prefix="edgetui-bench-sshz-") as tmp:
        work = Path(tmp)
        s = Sshd(prereqs.need("sshd"), work / "sshd").start()
        kh = s.known_hosts(work / "kh")
        runs = work / "remote" / "runs"
        rel = "run-1/task_a/agent_output.txt"
        (runs / "run-1" / "task_a").mkdir(parents=True)
        remote = runs / rel
        remote.write_bytes(b"")
        hosts = {
            mode: SshHost(
                f"box-{mode}",
                f"{s.user}@127.0.0.1:{s.port}",
                config=[],
                known_hosts=str(kh),
                client_keys=[str(s.user_key)],
                compression=mode == "zlib",
            )
            for mode in ("zlib", "none")
        }
        try:
            if args.first_sync:
                first_syncs(hosts, work, args.first_sync, args.subs, args.rounds)
                return 0
            mirrors = {}
            for mode, h in hosts.items():
                assert h.wait_up(10).kind == "up", h.state
                mirrors[mode] = Mirror(h, str(runs), work / f"img-{mode}", use_stage=False)
                mirrors[mode].sync()
            got = {"zlib": 0, "none": 0, "rsync -az": 0, "rsync -a": 0}
            secs: dict[str, list[float]] = {"zlib": [], "none": []}
            appended = 0
            lines = distinct_lines()
            for r in range(args.rounds):
                chunk = bytearray()
                while len(chunk) < args.chunk_kb * 1024:
                    chunk += next(lines)
                with open(remote, "ab") as f:
                    f.write(chunk)
                appended += len(chunk)
                order = ["zlib", "none"] if r % 2 == 0 else ["none", "zlib"]
                for mode in order:
                    h = hosts[mode]
                    before, t0 = tcp_received(h), time.perf_counter()
                    rep = mirrors[mode].sync_changed({rel})
                    secs[mode].append(time.perf_counter() - t0)
                    got[mode] += tcp_received(h) - before
                    assert rep is not None and not rep.errors, rep
                for label, z in (("rsync -az", True), ("rsync -a", False)):
                    got[label] += rsync_bytes(s, kh, str(remote), work / f"copy-{z}", z)
            for mode in ("zlib", "none"):
                image = mirrors[mode].local_root / rel
                assert image.read_bytes() == remote.read_bytes(), f"{mode}: the image differs"
            sample = remote.read_bytes()[: 1 << 20]
            print(
                f"growth: {args.rounds} chunks of {args.chunk_kb} KB of distinct JSON lines, {appended / 1e6:.1f} MB "
                f"appended (a sample's zlib ratio {len(__import__('zlib').compress(sample, 6)) / len(sample):.3f}); "
                f"load {os.getloadavg()[0]:.1f}"
            )
            for label, n in got.items():
                extra = ""
                if label in secs:
                    extra = f"; sync median {statistics.median(secs[label]) * 1000:.0f} ms"
                print(
                    f"  {label:10s} {n / appended:.4f} bytes received per byte appended "
                    f"({n / max(got['rsync -az'], 1):.2f}x rsync -az){extra}"
                )
            print(json.dumps({k: round(v / appended, 4) for k, v in got.items()}))
        finally:
            for h in hosts.values():
                h.close()
            s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
