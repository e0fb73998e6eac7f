#!/usr/bin/env python3
"""``edgetui watch`` on a runs root the size of SForge's example, and on 150 new live runs.

Builds once (excluded from every figure; removed at the end unless ``--keep DIR``) the root of
``bench/bench_scale.py`` (``--runs`` task dirs, default 750, from the sample and genuine runs,
transcripts included) and records it with ``edgetui ingest`` into a database file: the *warm
database*. Then:

1. **start-up, warm database**: SForge's scanner (``RunsIndex.list_runs(include_submissions=True)``,
   what its visualizer shows) and the supervisor's first refresh (``Supervisor(...)`` then
   ``poll_once()`` until every run is in its snapshot, the local Docker engine included when it is
   reachable) on the same root, interleaved, ``--repeat`` rounds, medians; their ratio (target
   ≤ 2×). With ``--app``, the same for the whole app: ``edgetui watch`` started in a tmux pane
   (``tmux -L bench-watch``, 160×48) until its title says ``<N> runs``;
2. **idle, every run finished**: the whole app (``edgetui watch`` in tmux, ``--app``) or the
   supervisor alone (a child process running ``Supervisor.run_forever`` with the file watcher and
   the engine's events), once caught up: CPU share of one core (``/proc/<pid>/stat`` utime +
   stime over ``--idle`` seconds, default 60) and resident memory (``VmRSS``, the highest sampled
   in the window; ``VmHWM`` printed beside it); targets < 2 % of a core, < 300 MB;
3. **start-up of 150 new live runs** (``bench/bench_live.py``'s runs: 300 lines of history each,
   a fresh database): until every run is on screen, until their history is recorded (caught up),
   and until every run's first full refresh (file events, alignment, aggregates) is done; target
   under 5 s.

The machine's load moves every figure (printed: ``/proc/loadavg`` before and after): the ratios
against the scanner, run in the same minutes, are what to compare.

``--live-only`` runs part 3 alone, ``--repeat`` rounds, each in a fresh process; with ``--code DIR``
(e.g. a checkout of main at ``../main``) each round runs that checkout's ``edgetui`` too, in turn
(paired before/after figures, the load printed with each).

Usage: ``.venv/bin/python bench/bench_watch.py [--runs 750] [--repeat 3] [--idle 60] [--app] [--keep DIR]
[--skip-live] [--live-only [--code DIR]]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import bench_scale  # noqa: E402 - after sys.path is set above


def loadavg() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), seconds."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def proc_mem_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MB."""
    rss = hwm = float("nan")
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    return rss, hwm


def idle_window(pid: int, seconds: float) -> tuple[float, float, float]:
    """(CPU % of one core, highest VmRSS MB, VmHWM MB) of ``pid`` over ``seconds``."""
    c0, t0 = proc_cpu_s(pid), time.monotonic()
    peak = 0.0
    while time.monotonic() - t0 < seconds:
        time.sleep(1.0)
        peak = max(peak, proc_mem_mb(pid)[0])
    cpu = proc_cpu_s(pid) - c0
    return 100.0 * cpu / (time.monotonic() - t0), peak, proc_mem_mb(pid)[1]


def build_warm(work: Path, n_runs: int) -> tuple[Path, Path, Path, int]:
    """The root (transcripts included), its tasks dir and the database recording it (reused when kept)."""
    root, tasks, db = work / "runs", work / "tasks", work / "watch.duckdb"
    mark = work / ".built"
    if mark.exists() and db.exists():
        return root, tasks, db, int(mark.read_text())
    shutil.rmtree(root, ignore_errors=True)
    for p in (db, Path(str(db) + ".wal")):
        p.unlink(missing_ok=True)
    bench_scale.merged_tasks(tasks)
    t0 = time.perf_counter()
    n_subs, held = bench_scale.build(root, n_runs)
    for src, dst in held:
        os.link(src, dst)
    t1 = time.perf_counter()
    # recorded in a child process: this one's heap stays small (its garbage collections in the
    # measured start-ups would otherwise walk everything the ingest left)
    subprocess.run([sys.executable, __file__, "--child-ingest", str(db), str(root), str(tasks)], check=True)
    print(
        f"setup (not counted): root of {n_runs} runs, {n_subs} submission folders built in {t1 - t0:.1f} s, "
        f"recorded by edgetui ingest in {time.perf_counter() - t1:.1f} s",
        flush=True,
    )
    mark.write_text(str(n_subs))
    return root, tasks, db, n_subs


def supervisor_startup(db: Path, root: Path, tasks: Path, n_runs: int, docker: bool) -> tuple[float, object]:
    """Seconds from the supervisor's construction to a snapshot holding every run (its first refresh)."""
    from edgetui.store.database import open_db
    from edgetui.live.supervisor import Supervisor

    conn = open_db(db)
    try:
        t0 = time.perf_counter()
        sup = Supervisor(conn, [root], docker_client="auto" if docker else None, tasks_dir=tasks)
        runs = sup.poll_once()
        while len(runs) < n_runs and time.perf_counter() - t0 < 600:
            runs = sup.poll_once()
        dt = time.perf_counter() - t0
        info = (len(runs), len(sup.dormant), len(sup.runs), sup.messages[:3])
        sup.close()
        return dt, info
    finally:
        conn.close()


def _child_idle(db: str, root: str, tasks: str, docker: bool) -> None:
    """The supervisor alone, watching until killed (the parent measures this process)."""
    from edgetui.store.database import open_db
    from edgetui.live.supervisor import Supervisor

    conn = open_db(Path(db))
    sup = Supervisor(conn, [Path(root)], docker_client="auto" if docker else None, tasks_dir=Path(tasks))
    n = [0]

    def upd(runs):
        n[0] += 1
        if n[0] == 1:
            print(f"ready {len(runs)} {len(sup.dormant)} {len(sup.runs)}", flush=True)

    sup.run_forever(2.0, None, upd)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", "bench-watch", *args], capture_output=True, text=True).stdout


def app_startup(db: Path, root: Path, tasks: Path, n_runs: int, docker: bool) -> tuple[float, int]:
    """``edgetui watch`` in a 160x48 tmux pane: seconds until its title says ``<n_runs> runs``; returns
    (seconds, the app's pid). The pane stays open (:func:`app_stop` closes it)."""
    exe = str(ROOT / ".venv" / "bin" / "edgetui")
    env = f"EDGETUI_HOSTS_FILE={tempfile.gettempdir()}/edgetui-bench-no-hosts.toml"
    cmd = f"{env} exec {exe} --db {db} watch --runs-dir {root} --tasks-dir {tasks}" + ("" if docker else " --no-docker")
    tmux("kill-server")
    t0 = time.perf_counter()
    subprocess.run(["tmux", "-L", "bench-watch", "new-session", "-d", "-x", "160", "-y", "48", cmd], check=True)
    want = f"{n_runs} runs"
    pid = int(tmux("display-message", "-p", "#{pane_pid}").strip() or 0)
    while time.perf_counter() - t0 < 600:
        if want in tmux("capture-pane", "-p"):
            return time.perf_counter() - t0, pid
        time.sleep(0.05)
    raise RuntimeError(f"the app did not show {want} in 600 s:\n{tmux('capture-pane', '-p')}")


def app_stop() -> None:
    tmux("send-keys", "q")
    time.sleep(1.0)
    tmux("kill-server")


def live_startup(n: int = 150, history: int = 300) -> dict[str, float]:
    """bench_live's runs in a fresh database: seconds until on screen, caught up, first full refresh done."""
    from bench_live import make_runs
    from edgetui.store.database import open_db
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor

    tmp = Path(tempfile.mkdtemp(prefix="edgetui-bench-watch-live-"))
    try:
        make_runs(tmp / "runs", n, history)
        conn = open_db(tmp / "b.duckdb")
        t0, c0 = time.perf_counter(), time.process_time()
        sup = Supervisor(conn, [tmp / "runs"], docker_client=None, settings=AlarmSettings(stats_interval_s=0))
        runs = sup.poll_once()
        shown = time.perf_counter() - t0 if len(runs) == n else float("nan")
        shown_cpu = time.process_time() - c0
        while sup.behind:
            runs = sup.poll_once()
        caught, caught_cpu = time.perf_counter() - t0, time.process_time() - c0
        if shown != shown and len(runs) == n:
            shown = caught
        while any(rs.dirty_files or rs.dirty_finalize for rs in sup.runs.values()):
            sup.poll_once()
        full, full_cpu = time.perf_counter() - t0, time.process_time() - c0
        n_ev = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        sup.close()
        conn.close()
        # (CPU: this process, every thread, DuckDB's included; less moved by other processes than wall time)
        return {
            "shown": shown,
            "caught_up": caught,
            "full": full,
            "events": n_ev,
            "shown_cpu": shown_cpu,
            "caught_up_cpu": caught_cpu,
            "full_cpu": full_cpu,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def live_rounds(rounds: int, code: Path | None) -> int:
    """Part 3 alone, ``rounds`` times, each in a fresh process (this code, then ``code``'s when given)."""
    import json

    sides = [("this", None)] + ([("code", code)] if code is not None else [])
    got: dict[str, list[dict]] = {k: [] for k, _ in sides}
    for r in range(rounds):
        for name, c in sides if r % 2 == 0 else sides[::-1]:  # alternate who goes first
            load0 = os.getloadavg()
            out = subprocess.run(
                [sys.executable, __file__, "--child-live"] + (["--code", str(c)] if c else []),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            lv = json.loads(out.strip().splitlines()[-1])
            load1 = os.getloadavg()
            got[name].append(lv)
            print(
                f"round {r + 1} {name} ({lv['code']}): on screen {lv['shown']:.1f} s, caught up {lv['caught_up']:.1f} s, "
                f"full refresh {lv['full']:.1f} s (CPU {lv['shown_cpu']:.1f} / {lv['caught_up_cpu']:.1f} / "
                f"{lv['full_cpu']:.1f} s), {lv['events']} events; load average "
                f"{' '.join(f'{x:.2f}' for x in load0)} -> {' '.join(f'{x:.2f}' for x in load1)}",
                flush=True,
            )
    for name, _c in sides:
        xs = got[name]
        print(
            f"{name}: medians on screen {statistics.median(x['shown'] for x in xs):.1f} s, caught up "
            f"{statistics.median(x['caught_up'] for x in xs):.1f} s, full refresh "
            f"{statistics.median(x['full'] for x in xs):.1f} s (target < 5 s: "
            f"{verdict(statistics.median(x['caught_up'] for x in xs) < 5)} for caught up, "
            f"{verdict(statistics.median(x['full'] for x in xs) < 5)} for the full refresh)"
        )
    if code is not None:
        for k in ("shown", "caught_up", "full", "shown_cpu", "caught_up_cpu", "full_cpu"):
            ratios = [a[k] / b[k] for a, b in zip(got["this"], got["code"]) if b[k]]
            print(
                f"this / code, {k}: {', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f}x)"
            )
    return 0


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=750)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of the idle window")
    ap.add_argument("--app", action="store_true", help="also the whole app in tmux (start-up and idle window)")
    ap.add_argument("--no-docker", action="store_true", help="without the local Docker engine")
    ap.add_argument("--skip-live", action="store_true", help="skip the 150 new live runs")
    ap.add_argument("--keep", type=Path, default=None, help="work in this directory and keep it (reused)")
    ap.add_argument("--live-only", action="store_true", help="only the 150 new live runs, --repeat rounds")
    ap.add_argument("--code", type=Path, default=None, help="with --live-only: also this checkout's edgetui, in turn")
    ap.add_argument("--child-live", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-idle", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--child-ingest", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    docker = not a.no_docker
    if a.child_ingest:
        rep = bench_scale.edgetui_ingest(*map(Path, a.child_ingest))
        return 1 if rep.failed else 0
    if a.child_idle:
        _child_idle(*a.child_idle, docker=docker)
        return 0
    if a.child_live:
        import json

        if a.code is not None:
            sys.path.insert(0, str(a.code.resolve()))
        import edgetui

        print(json.dumps({**live_startup(), "code": str(Path(edgetui.__file__).parents[1])}), flush=True)
        return 0
    if a.live_only:
        return live_rounds(a.repeat, a.code)
    print(f"load average before: {loadavg()}", flush=True)
    work = a.keep or Path(tempfile.mkdtemp(prefix="edgetui-watch-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        root, tasks, db, n_subs = build_warm(work, a.runs)
        bench_scale.sforge_scan(root, tasks)  # warm the page cache and the imports
        scans, ups, apps = [], [], []
        info = None
        for _ in range(a.repeat):
            s, _n = bench_scale.timed(lambda: bench_scale.sforge_scan(root, tasks))
            scans.append(s)
            u, info = supervisor_startup(db, root, tasks, a.runs, docker)
            ups.append(u)
            if a.app:
                t, _pid = app_startup(db, root, tasks, a.runs, docker)
                apps.append(t)
                app_stop()
        scan, up = statistics.median(scans), statistics.median(ups)
        print(
            f"root: {a.runs} runs, {n_subs} submission folders; snapshot: {info[0]} runs, {info[1]} asleep, "
            f"{info[2]} watched in full; notes: {info[3]}"
        )
        print(
            f"sforge scanner (list_runs(include_submissions=True)): median {scan:.2f} s "
            f"(runs: {', '.join(f'{x:.2f}' for x in scans)})"
        )
        print(
            f"edgetui watch start-up, warm database (supervisor's first snapshot with every run): median {up:.2f} s "
            f"(runs: {', '.join(f'{x:.2f}' for x in ups)})"
        )
        r_up = up / scan
        print(f"ratio watch start-up / scanner: {r_up:.2f}x (target <= 2x: {verdict(r_up <= 2)})")
        if apps:
            app = statistics.median(apps)
            print(
                f"edgetui watch, the whole app in tmux 160x48 until its title says {a.runs} runs: median {app:.2f} s "
                f"(runs: {', '.join(f'{x:.2f}' for x in apps)}); {app / scan:.2f}x the scanner"
            )

        # idle window: the supervisor alone (a child process), then the whole app
        child = subprocess.Popen(
            [sys.executable, __file__, "--child-idle", str(db), str(root), str(tasks)]
            + (["--no-docker"] if not docker else []),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            line = child.stdout.readline().split()
            time.sleep(10.0)  # caught up: the watcher's watches in place, the collector frozen
            cpu, rss, hwm = idle_window(child.pid, a.idle)
        finally:
            child.terminate()
            child.wait(10)
        print(
            f"idle, every run finished, the supervisor alone ({line[1:] if line else '?'} runs/asleep/awake): "
            f"{cpu:.2f} % of one core over {a.idle:g} s, RSS {rss:.0f} MB (peak {hwm:.0f} MB) "
            f"(targets < 2 %: {verdict(cpu < 2)}, < 300 MB: {verdict(hwm < 300)})",
            flush=True,
        )
        if a.app:
            _t, pid = app_startup(db, root, tasks, a.runs, docker)
            try:
                time.sleep(10.0)
                cpu, rss, hwm = idle_window(pid, a.idle)
            finally:
                app_stop()
            print(
                f"idle, every run finished, the whole app (edgetui watch in tmux 160x48): {cpu:.2f} % of one core "
                f"over {a.idle:g} s, RSS {rss:.0f} MB (peak {hwm:.0f} MB) "
                f"(targets < 2 %: {verdict(cpu < 2)}, < 300 MB: {verdict(hwm < 300)})",
                flush=True,
            )
        if not a.skip_live:
            lv = live_startup()
            print(
                f"150 new live runs (300 lines of history each, {lv['events']} events): on screen after "
                f"{lv['shown']:.1f} s, caught up after {lv['caught_up']:.1f} s, every run's first full refresh "
                f"after {lv['full']:.1f} s (target < 5 s: {verdict(lv['caught_up'] < 5)} for caught up, "
                f"{verdict(lv['full'] < 5)} for the full refresh)"
            )
        print(f"load average after: {loadavg()}")
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
