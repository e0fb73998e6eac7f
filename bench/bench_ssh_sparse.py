#!/usr/bin/env python3
"""Peak memory of ``edgetui ingest`` over SSH against the local ingest of the same files, for a run
folder holding a 1 GB sparse file (issue 31, item 12: 2.2 GB over SSH against ~210 MB
locally; target: within 1.5x).

Starts one sshd on 127.0.0.1 (tests/sshd_fixture.py) and runs the real command as a child process;
its peak resident set size is the child's ``ru_maxrss`` (``os.wait4``; the local ``tar`` that
unpacks a first sync's streams is a child of it, counted apart as "with children" where it is
larger). Measured:

1. **local**: ``edgetui ingest ROOT`` into a fresh database;
2. **ssh, file new to the image**: the root ingested over SSH once without the big file, then
   the file made (1 GB, sparse) on the server and ingested again (the mirror reads the file
   over SFTP: ``Mirror._sync_file``);
3. **ssh, file rewritten in place**: its mtime changed, same size (read again and compared);
4. **ssh, first sync**: a fresh image and database, the tar streams bring the file.

Usage: ``.venv/bin/python bench/bench_ssh_sparse.py [--gb 1]``; prints each peak (MB) and its ratio
to the local one.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sshd_fixture import Sshd  # noqa: E402 - after sys.path is set above

GENUINE = ROOT / "sample_runs" / "genuine"
TZ = "real-tz-20261201182000"
EXE = [str(Path(sys.executable).parent / "edgetui")]


def _peak(argv: list[str], env: dict) -> tuple[float, float, int, str]:
    """Run ``argv``; (its peak RSS in MB, the peak of it and its waited-for children, its status,
    its stderr's last line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _pid, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read().decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return ru.ru_maxrss / 1024, max(ru.ru_maxrss, after if after > before else 0) / 1024, p.returncode, tail[0]


def _sparse(path: Path, gb: float) -> None:
    """Make ``path`` a sparse file of ``gb`` GB (a hole, then one line)."""
    with open(path, "wb") as f:
        f.truncate(int(gb * (1 << 30)))
        f.seek(0, os.SEEK_END)
        f.write(b"\nend\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=1.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="edgetui-bench-sparse-"))
    s = Sshd(Path(shutil.which("sshd") or "/usr/sbin/sshd"), work / "sshd").start()
    try:
        runs = work / "remote" / "logs" / "runs"
        shutil.copytree(GENUINE / "runs" / TZ, runs / TZ, copy_function=shutil.copy2)
        transcript = runs / TZ / "tiny_stats" / "scratch.img"  # a file of the run folder no parser reads
        home = work / "home"
        (home / ".ssh").mkdir(parents=True)
        s.known_hosts(home / ".ssh" / "known_hosts")
        (home / ".ssh" / "config").write_text(
            f"Host benchbox\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  IdentityFile {s.user_key}\n"
        )
        base = {**os.environ, "HOME": str(home), "EDGETUI_HOSTS_FILE": str(work / "none.toml")}
        base.pop("SSH_AUTH_SOCK", None)
        tasks = ["--tasks-dir", str(GENUINE / "tasks")]

        def ssh_ingest(db: Path, cache: Path) -> tuple[float, float, int, str]:
            env = {**base, "XDG_CACHE_HOME": str(cache)}
            return _peak([*EXE, "--db", str(db), "ingest", "-q", *tasks, "--host", f"benchbox:{runs}"], env)

        # 2. the image made without the big file, then the file made sparse on the server
        cache = work / "cache-a"
        r = ssh_ingest(work / "a.duckdb", cache)
        assert r[2] == 0, r
        _sparse(transcript, args.gb)
        os.sync()
        local = _peak(
            [*EXE, "--db", str(work / "local.duckdb"), "ingest", "-q", *tasks, str(runs)],
            {**base, "XDG_CACHE_HOME": str(work / "cache-l")},
        )
        assert local[2] == 0, local
        new = ssh_ingest(work / "a.duckdb", cache)
        assert new[2] == 0, new
        # 3. rewritten in place: the same size, another mtime
        t = time.time() + 5
        os.utime(transcript, (t, t))
        same = ssh_ingest(work / "a.duckdb", cache)
        assert same[2] == 0, same
        # 4. a first sync (tar streams) into a fresh image
        first = ssh_ingest(work / "b.duckdb", work / "cache-b")
        assert first[2] == 0, first
        print(f"sparse file in a run folder: {transcript.stat().st_size / 1e9:.2f} GB apparent")
        print(f"local ingest                        peak {local[0]:7.0f} MB")
        for name, got in (
            ("ssh, file new to the image", new),
            ("ssh, rewritten in place (same size)", same),
            ("ssh, first sync (tar streams)", first),
        ):
            print(f"{name:36s}peak {got[0]:7.0f} MB   ratio {got[0] / local[0]:.2f}x   (target <= 1.5x)")
    finally:
        s.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
