"""Watching many runs: finished runs asleep (shown from their rows, woken by a change), new runs
registered in one transaction, the watcher's limit (stat polling instead), the engine's events.

Real run directories (the bundled sample runs, copied with their mtimes), a real DuckDB file, the
real file watcher, a real lowered inotify limit (a user namespace), this machine's Docker engine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from waits import wait_for

from edgetui.store.database import open_db
from edgetui.hosts.signature import TREE_SOURCE
from edgetui.record.ingest import ingest_paths
from edgetui.live.alarms import AlarmSettings
from edgetui.live.supervisor import Supervisor
from edgetui.parsers.sforge_dir import discover

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs" / "runs"
TASKS = ROOT / "sample_runs" / "tasks"

#: LiveRun fields a run asleep shows as the same run watched in full does
SAME = (
    "run_key",
    "host",
    "run_id",
    "task_id",
    "run_dir",
    "agent",
    "model",
    "status",
    "infra_error",
    "started_at",
    "elapsed_s",
    "budget_s",
    "best_display",
    "best_round",
    "score_task",
    "agent_submissions",
    "auto_submissions",
    "last_event_at",
    "tokens",
    "cost_usd",
    "best_pass_rate",
    "best_score",
    "best_score_0_100",
    "game_sessions",
    "resume_count",
    "deleted",
)


def settings(**kw) -> AlarmSettings:
    base = dict(
        discovery_interval_s=0,
        finalize_min_interval_s=0,
        finalize_interval_s=0,
        stats_interval_s=0,
        grading_grace_s=0,
        container_grace_s=0,
    )
    base.update(kw)
    return AlarmSettings(**base)


@pytest.fixture
def warm(tmp_path):
    """The sample runs copied (mtimes kept) and recorded by ``edgetui ingest``: (root, conn)."""
    root = tmp_path / "runs"
    shutil.copytree(SAMPLES, root, symlinks=True)
    conn = open_db(tmp_path / "w.duckdb")
    rep = ingest_paths(conn, [root], tasks_dir=TASKS)
    assert rep.runs and not rep.failed
    yield root, conn
    conn.close()


def _recorded_asleep(conn) -> set[str]:
    return {
        r[0]
        for r in conn.execute(
            "SELECT r.run_key FROM runs r JOIN source_cursors c ON c.run_key = r.run_key AND c.source = ? "
            "WHERE r.status IN ('finished', 'aborted')",
            [TREE_SOURCE],
        ).fetchall()
    }


def test_finished_runs_start_asleep_and_show_what_a_full_watch_shows(warm):
    root, conn = warm
    sleepy = _recorded_asleep(conn)
    assert len(sleepy) >= 5
    sup = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings())
    full = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings(), sleep=False)
    try:
        runs = {r.run_key: r for r in sup.poll_once()}
        assert set(sup.dormant) == sleepy
        counts = dict(conn.execute("SELECT run_key, count(*) FROM events GROUP BY run_key").fetchall())
        assert {k: runs[k].n_events for k in sleepy} == {k: counts.get(k, 0) for k in sleepy}
        assert not any(k in sup.runs for k in sleepy)
        assert not any(rs.sources for rs in sup.dormant.values())  # no file of theirs is open or tailed
        assert set(runs) == {loc.run_key for loc in discover(root)}
        # the same runs watched in full (every file read again from the recorded cursors)
        ref = {r.run_key: r for r in full.poll_once()}
        while full.behind:
            ref = {r.run_key: r for r in full.poll_once()}
        assert not full.dormant
        for key in sleepy:
            a, b = runs[key].model_dump(), ref[key].model_dump()
            diff = {f: (a[f], b[f]) for f in SAME if a[f] != b[f]}
            assert not diff, (key, diff)
            # (n_events: the full watch adds the end of a finished transcript where the offline ingest
            # recorded none, e.g. the game sample's budget stop: one event more, not the sleep's doing)
            assert 0 <= b["n_events"] - a["n_events"] <= 1
    finally:
        sup.close()
        full.close()


def test_a_run_asleep_costs_no_refresh_work(warm, monkeypatch):
    root, conn = warm
    sup = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings(dormant_poll_s=3600))
    try:
        sup.poll_once()
        asleep = set(sup.dormant)
        seen: list[str] = []
        for part, name in (
            (sup.files, "check_run_files"),
            (sup.rows, "status"),
            (sup.rows, "alarms"),
            (sup.rows, "live_run"),
            (sup.containers, "grading_state"),
        ):
            orig = getattr(part, name)

            def spy(rs, *a, _orig=orig, **kw):
                seen.append(rs.key)
                return _orig(rs, *a, **kw)

            monkeypatch.setattr(part, name, spy)
        for _ in range(3):
            runs = sup.poll_once()
        assert not asleep & set(seen)
        assert asleep <= {r.run_key for r in runs}
        assert sup.snapshot_changed is bool(sup.runs)  # nothing awake: the snapshot is not sent again
    finally:
        sup.close()


def test_a_change_under_a_run_asleep_wakes_it_through_the_watcher(warm):
    root, conn = warm
    sup = Supervisor(
        conn,
        [root],
        docker_client=None,
        tasks_dir=TASKS,
        settings=settings(dormant_check_s=3600, dormant_poll_s=3600, dormant_full_s=0),
    )
    stop = threading.Event()
    th = threading.Thread(target=sup.run_forever, args=(0.5, stop), daemon=True)
    try:
        sup.poll_once()
        key = sorted(sup.dormant)[0]
        td = Path(sup.dormant[key].task_dir)
        n0 = conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [key]).fetchone()[0]
        th.start()
        wait_for(lambda: sup.watch.watching, 20, "the file watcher running", 0.1, describe=lambda: sup.watch_mode)
        assert sup.watch.watching and sup.watch_mode == "inotify"
        with open(td / "run_agent.log", "a") as f:
            f.write(time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()) + ",000 - INFO - woken by a test line\n")
        wait_for(
            lambda: (
                conn.cursor()
                .execute(
                    "SELECT count(*) FROM events WHERE run_key = ? AND summary LIKE '%woken by a test line%'", [key]
                )
                .fetchone()[0]
            ),
            20,
            "the line written to the sleeping run recorded",
            0.2,
        )
        assert key in sup.runs and key not in sup.dormant
        n1 = conn.cursor().execute("SELECT count(*) FROM events WHERE run_key = ?", [key]).fetchone()[0]
        assert n1 > n0
        # resumed from its cursor: no line recorded twice
        dup = (
            conn.cursor()
            .execute("SELECT count(*) - count(DISTINCT event_id) FROM events WHERE run_key = ?", [key])
            .fetchone()[0]
        )
        assert dup == 0
    finally:
        stop.set()
        th.join(10)
        sup.close()


def test_without_watcher_the_cheap_check_and_the_full_signature_wake_runs(warm):
    root, conn = warm
    sup = Supervisor(
        conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings(dormant_poll_s=0, dormant_full_s=1e9)
    )
    try:
        sup.poll_once()
        keys = sorted(sup.dormant)
        # the cheap check: a log grew
        a = sup.dormant[keys[0]]
        with open(Path(a.task_dir) / "run_agent.log", "a") as f:
            f.write("2026-01-01 00:00:00,000 - INFO - a line\n")
        sup.poll_once()
        assert keys[0] in sup.runs
        # a report rewritten inside its submission folder: no directory's mtime moves, the cheap
        # check cannot see it; the full signature (each run asleep every dormant_full_s) does
        b = next(rs for k, rs in sup.dormant.items() if list((Path(rs.task_dir) / "submissions").glob("*/report.json")))
        rep = sorted((Path(b.task_dir) / "submissions").glob("*/report.json"))[0]
        d_mt = [os.stat(p).st_mtime_ns for p in (rep.parent, rep.parent.parent, b.task_dir)]
        rep.write_text(rep.read_text())  # same bytes, new mtime
        assert [os.stat(p).st_mtime_ns for p in (rep.parent, rep.parent.parent, b.task_dir)] == d_mt
        sup.poll_once()
        assert b.key in sup.dormant
        sup.settings.dormant_full_s = 1e-6  # every run asleep is due
        sup.poll_once()
        assert b.key in sup.runs and b.key not in sup.dormant
    finally:
        sup.close()


def test_a_run_finishing_while_watched_falls_asleep_and_starts_asleep_next_time(tmp_path):
    root = tmp_path / "runs"
    src = SAMPLES / "opus48-edge-3-20260312005800"
    shutil.copytree(src, root / src.name, symlinks=True)
    conn = open_db(tmp_path / "f.duckdb")
    try:
        sup = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings(dormant_after_s=0))
        try:
            sup.poll_once()
            assert not sup.dormant  # never recorded: read in full first
            for _ in range(20):
                sup.poll_once()
                if sup.dormant:
                    break
            keys = {loc.run_key for loc in discover(root)}
            finished = {r.run_key for r in sup.last_runs if r.status == "finished"}
            assert finished and set(sup.dormant) == finished
            assert finished <= _recorded_asleep(conn)
            shown = {r.run_key: r.model_dump() for r in sup.last_runs}
            assert set(shown) == keys
        finally:
            sup.close()
        again = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings())
        try:
            runs = {r.run_key: r.model_dump() for r in again.poll_once()}
            assert set(again.dormant) == finished
            for k in finished:
                assert {f: runs[k][f] for f in SAME} == {f: shown[k][f] for f in SAME}
        finally:
            again.close()
    finally:
        conn.close()


def _big_run(root: Path, i: int, n_subs: int) -> None:
    td = root / f"r{i}" / "taskA"
    for k in range(n_subs):
        (td / "submissions" / f"agent-{k + 1}").mkdir(parents=True)
    (td / "run_agent.log").write_text(
        time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()) + ",000 - INFO - Running agent\n"
    )
    (td / "agent_output.txt").write_text(
        json.dumps({"type": "system", "subtype": "init", "session_id": f"s{i}", "model": "m", "cwd": "/w", "tools": []})
        + "\n"
    )


_LIMIT_CHILD = textwrap.dedent("""
    import json, sys, threading, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[3])
    from edgetui.store.database import open_db
    from edgetui.live.alarms import AlarmSettings
    from edgetui.live.supervisor import Supervisor
    root, db = Path(sys.argv[1]), Path(sys.argv[2])
    conn = open_db(db)
    sup = Supervisor(conn, [root], docker_client=None, settings=AlarmSettings(max_poll_s=2.0))
    gaps = []
    orig = sup._next_gap
    def spy(interval):
        gaps.append(orig(interval))
        return gaps[-1]
    sup._next_gap = spy
    stop = threading.Event()
    th = threading.Thread(target=sup.run_forever, args=(1.0, stop), daemon=True)
    th.start()
    end = time.time() + 30
    while not sup.watch_mode.startswith("polling") and time.time() < end:
        time.sleep(0.1)
    end = time.time() + 30
    while not (gaps and max(gaps) > 1.0) and time.time() < end:  # quiet refreshes: the polling interval grows
        time.sleep(0.1)
    gap = max(gaps)
    t0 = time.time()
    with open(root / "r0" / "taskA" / "agent_output.txt", "a") as f:
        f.write(json.dumps({"type": "assistant", "message": {"id": "m1", "model": "m", "role": "assistant",
                "content": [{"type": "text", "text": "seen by polling"}]}, "session_id": "s0"}) + "\\n")
    (root / "late" / "taskB").mkdir(parents=True)
    (root / "late" / "taskB" / "run_agent.log").write_text("2026-01-01 00:00:00,000 - INFO - Running agent\\n")
    seen = found = None
    c = conn.cursor()
    end = t0 + 10  # the deadline: polling (every 1-2 s here) records both well within it
    while time.time() < end and (seen is None or found is None):
        if seen is None and c.execute("SELECT count(*) FROM events WHERE summary LIKE '%seen by polling%'").fetchone()[0]:
            seen = time.time() - t0
        if found is None and any(k.endswith("/late/taskB") for k in sup.runs):
            found = time.time() - t0
        time.sleep(0.1)
    stop.set(); th.join(10)
    print(json.dumps({"mode": sup.watch_mode, "notes": [m for _, m in sup.notes], "gap": gap,
                      "seen": seen, "found": found}))
    sup.close(); conn.close()
""")


def test_watch_limit_reached_falls_back_to_stat_polling(tmp_path):
    """inotify's limit lowered for real (a user namespace's max_inotify_watches, seen by that
    namespace only): the supervisor says so, polls by stat, and still records new lines and runs."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) not installed")
    probe = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", "echo 40 > /proc/sys/user/max_inotify_watches"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot lower the inotify limit in a user namespace: {probe.stderr.strip()}")
    root = tmp_path / "runs"
    for i in range(4):
        _big_run(root, i, 20)  # 4 runs x 20 submission folders: over 80 directories, limit 40
    script = tmp_path / "child.py"
    script.write_text(_LIMIT_CHILD)
    r = subprocess.run(
        [
            "unshare",
            "-Ur",
            "sh",
            "-c",
            "echo 40 > /proc/sys/user/max_inotify_watches && "
            f'exec "{sys.executable}" "{script}" "{root}" "{tmp_path / "l.duckdb"}" "{ROOT}"',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["mode"] == "polling: the file watcher's limit was reached"
    assert any("file watcher's limit reached" in n for n in out["notes"]), out["notes"]
    assert out["gap"] is not None and out["gap"] > 1.0  # quiet: the interval grew (adaptive)
    assert out["seen"] is not None, out  # the new line recorded within the child's 10 s deadline
    assert out["found"] is not None, out  # the new run found within it


@pytest.mark.docker
def test_the_local_engine_is_listed_on_its_events_only(tmp_path):
    """This machine's Docker engine: after the first listings, refreshes list nothing until the
    events stream (read in 1 s windows here) says a container changed."""
    docker = pytest.importorskip("docker")
    sys.path.insert(0, str(Path(__file__).parent))
    from docker_images import build_busybox_image, remove_containers, remove_image

    from edgetui.hosts.docker_watch import DockerWatch

    try:
        engine = docker.from_env(timeout=10)
        engine.ping()
    except Exception as e:  # noqa: BLE001 - no engine, whatever the reason: said (CI fails on it)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"Docker engine not reachable: {e}")
        pytest.skip(f"Docker engine not reachable: {e}")
    tag = build_busybox_image(engine)
    tok = "edt" + os.urandom(4).hex()
    woke = threading.Event()
    dw = DockerWatch(engine, list_interval_s=3600, events_window_s=1.0, on_change=woke.set)
    try:
        assert dw.refresh()
        wait_for(lambda: dw.events_up, 10, "the engine's events stream read")
        assert dw.refresh()  # the listing due once the stream is read (what came before it is unknown)
        n, e = dw.listings, dw._events.events
        time.sleep(2.5)  # part of the test: past a window's end, the next window goes on from its `until`
        woke.clear()
        for _ in range(5):
            assert dw.refresh()
        # nothing happened, nothing listed (an SForge-named container of another test on this
        # engine is an event: each listing here was asked by one)
        assert dw.listings - n <= dw._events.events - e
        c = engine.containers.run(tag, ["sleep", "60"], name=f"sforge.run.{tok}.r1", detach=True)
        assert woke.wait(10), "no event for the container started"

        def listed() -> bool:
            assert dw.refresh()
            return f"sforge.run.{tok}.r1" in dw.by_name

        wait_for(listed, 10, "the started container listed", 0.1)
        assert dw.by_name[f"sforge.run.{tok}.r1"].state == "running" and dw.listings > n
        woke.clear()
        c.kill()
        assert woke.wait(10), "no event for the container killed"

        def stopped() -> bool:
            assert dw.refresh()
            return dw.by_name[f"sforge.run.{tok}.r1"].state != "running"

        wait_for(stopped, 10, "the killed container seen stopped", 0.1)
        assert dw.by_name[f"sforge.run.{tok}.r1"].state == "exited"
    finally:
        dw.close()
        remove_containers(engine, tok)
        remove_image(engine, tag)


def test_the_local_hosts_signature_is_the_generic_one(warm):
    """The local host's listing skips building Entry objects: the digest must be the one any other
    host (the same stats through Host.list) gives, or recorded signatures would never match."""
    from edgetui.hosts.local import LocalHost
    from edgetui.hosts.signature import tree_signature

    class Other:  # any host but LocalHost: the generic path through list()/stat()
        name = "local"

        def __init__(self):
            self.h = LocalHost()

        def list(self, p):
            return self.h.list(p)

        def stat(self, p):
            return self.h.stat(p)

    root, _conn = warm
    locs = discover(root)
    assert locs
    for loc in locs:
        a = tree_signature(LocalHost(), str(loc.task_dir), "salt")
        b = tree_signature(Other(), str(loc.task_dir), "salt")
        assert (a.digest, a.n_entries, a.n_bytes, a.newest_mtime) == (b.digest, b.n_entries, b.n_bytes, b.newest_mtime)


def test_a_run_asleep_whose_directory_goes_is_shown_deleted(warm):
    root, conn = warm
    sup = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings(dormant_poll_s=0))
    try:
        sup.poll_once()
        key = sorted(sup.dormant)[0]
        td = Path(sup.dormant[key].task_dir)
        n = conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [key]).fetchone()[0]
        shutil.rmtree(td)
        runs = {r.run_key: r for r in sup.poll_once()}
        assert key in sup.runs and runs[key].deleted and "deleted" in runs[key].flags
        assert conn.execute("SELECT count(*) FROM events WHERE run_key = ?", [key]).fetchone()[0] == n  # kept
    finally:
        sup.close()


def test_a_change_of_a_directory_above_the_runs_is_no_new_run_but_a_new_run_is_found_at_once(warm):
    """The watcher reporting a run dir or the root itself (its times set, as a remote host's image
    does at every sync) starts no discovery; a run dir made under the root does, at once."""
    root, conn = warm
    sup = Supervisor(conn, [root], docker_client=None, tasks_dir=TASKS, settings=settings())
    calls: list[float] = []
    orig = sup._discover

    def counted(now):
        calls.append(now)
        return orig(now)

    sup._discover = counted
    stop = threading.Event()
    th = threading.Thread(target=sup.run_forever, args=(0.3, stop), daemon=True)
    try:
        sup.poll_once()
        td = Path(min(sup.dormant.values(), key=lambda r: r.key).task_dir)
        th.start()
        end = time.time() + 20
        while not sup.watch.watching and time.time() < end:
            (root / ".probe").write_text("x")  # (the watcher says it runs at its first report)
            time.sleep(0.2)
        assert sup.watch.watching
        time.sleep(1.0)
        n0 = len(calls)
        for i in range(5):
            t = time.time() - 10 * i
            os.utime(td.parent, (t, t))  # the run dir
            os.utime(root, (t, t))
            time.sleep(0.4)
        time.sleep(1.0)
        assert len(calls) == n0, "a directory above the runs changing its times started a discovery"
        new = root / "copied-run" / td.name
        shutil.copytree(td, new, symlinks=True)
        wait_for(
            lambda: any(str(r.task_dir) == str(new) for r in [*sup.runs.values(), *sup.dormant.values()]),
            20,
            "the copied run found",
            0.1,
        )
        assert len(calls) > n0
    finally:
        stop.set()
        th.join(10)
        sup.close()
