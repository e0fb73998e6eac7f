"""Lines caught up after an outage are timed as the offline ingest times them, not by their arrival
(issue 36, item 2), over a real OpenSSH sshd.

A run is written on the "host" line by line (a genuine Claude stream-json transcript, run_agent.log
lines stamped as they are written) while a supervisor follows it through the SSH feed. Twice the
host stops answering while the writing goes on: its sshd is stopped (SIGSTOP, as a host that
hangs) and later killed and started again (a reboot). The lines written meanwhile reach the image
in one catch-up sync; they must not carry the catch-up's second as an ``observed`` time: they are
placed by the alignment between the anchors around them (the last line seen before, the first
seen after), with those anchors as their bounds, and their true write time lies within them. The
lines written while the host answered are ``observed`` within a second or so of their writing.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from waits import wait_for

from edgetui.hosts.config import HostConfig
from edgetui.hosts.feed import RemoteFeed
from edgetui.hosts.ssh import UP, SshHost
from edgetui.live.alarms import AlarmSettings
from edgetui.live.remote_hosts import HostLinks
from edgetui.live.supervisor import Supervisor
from edgetui.store.database import open_db

ROOT = Path(__file__).resolve().parents[1]
GENUINE = ROOT / "sample_runs" / "genuine"
SRC = GENUINE / "runs" / "real-stats-20261201180500" / "tiny_stats"
TASKS = GENUINE / "tasks"
RUN = "real-outage-20261206"
GAP_S = 0.35  # between two lines written on the host


def _log_line(msg: str) -> bytes:
    t = time.time()
    return (time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + f",{int(t % 1 * 1000):03d} - INFO - {msg}\n").encode()


def test_lines_caught_up_after_an_outage_are_timed_by_the_alignment_not_by_arrival(start_sshd, tmp_path):
    s = start_sshd("sshd")
    runs = tmp_path / "remote" / "logs" / "runs"
    dst = runs / RUN / "tiny_stats"
    dst.mkdir(parents=True)
    shutil.copy2(SRC / "run_config.json", dst / "run_config.json")
    kh = tmp_path / "kh"
    s.known_hosts(kh)
    host = SshHost(
        "box",
        f"{s.user}@127.0.0.1:{s.port}",
        config=[],
        known_hosts=str(kh),
        client_keys=[str(s.user_key)],
        connect_timeout=10,
        op_timeout=2,
        probe_interval=0.5,
        backoff_min=0.1,
        backoff_max=0.5,
        keepalive_interval=1,
        keepalive_count_max=2,
    )
    feed = RemoteFeed(HostConfig("box", host.target, (str(runs),)), host=host, cache=tmp_path / "cache")
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(
        conn,
        feed.roots(),
        docker_client=None,
        tasks_dir=TASKS,
        settings=AlarmSettings(discovery_interval_s=0, finalize_min_interval_s=0, finalize_interval_s=0),
    )
    HostLinks([feed], docker=False).attach(sup)
    host.start()
    assert host.wait_up(10).kind == UP
    feed.sync_once()  # the run is known before its transcript starts: every line of it arrives
    sup.poll_once()
    lines = (SRC / "agent_output.txt").read_bytes().splitlines(keepends=True)[:60]
    stop_at, cont_at, kill_at, back_at = 12, 24, 36, 48
    written: list[tuple[int, float]] = []  # (offset, when written) of each transcript line
    outage: set[int] = set()  # offsets of the lines written while the host did not answer
    off = 0
    try:
        with open(dst / "agent_output.txt", "wb") as out, open(dst / "run_agent.log", "wb") as log:
            log.write(_log_line("Running agent: claude -p ... (timeout=420s)"))
            log.flush()
            down = False
            for i, line in enumerate(lines):
                if i == stop_at:
                    s.stop_all()  # hangs: the connection stays, nothing answers
                    down = True
                elif i == cont_at:
                    s.cont_all()
                    wait_for(lambda: host.state.kind == UP, 15, "the host answering again", describe=lambda: host.state)
                    down = False
                elif i == kill_at:
                    s.kill_all()
                    wait_for(lambda: host.state.kind != UP, 15, "the host down", describe=lambda: host.state)
                    down = True
                elif i == back_at:
                    s.start()
                    host.reconnect_now()
                    wait_for(lambda: host.state.kind == UP, 15, "the host up again", describe=lambda: host.state)
                    down = False
                out.write(line)
                out.flush()
                written.append((off, time.time()))
                if down or i in (cont_at, back_at):  # (the first line after: synced by the catch-up)
                    outage.add(off)
                off += len(line)
                if not down:
                    feed.sync_once()
                    sup.poll_once()
                time.sleep(GAP_S)
            log.write(_log_line("Agent finished: runtime=30.0s, timed_out=False, resumes=0"))
        shutil.copy2(SRC / "final_result.json", dst / "final_result.json")
        for _ in range(4):
            assert feed.sync_once() is not None
            sup.poll_once()
            time.sleep(0.1)
    finally:
        sup.close()
        host.close()
    rows = {
        o: (t, src, lo, hi)
        for o, t, src, lo, hi in conn.execute(
            "SELECT \"offset\", min(t), min(t_source), min(t_lo), min(t_hi) FROM events WHERE source = 'agent_output.txt' "
            'GROUP BY "offset"'
        ).fetchall()
    }
    conn.close()
    assert len(rows) == len(written)
    caught, seen = [], []
    for o, wt in written:
        t, src, lo, hi = rows[o]
        (caught if o in outage else seen).append((o, wt, t, src, lo, hi))
    assert len(caught) == 26
    # written while the host answered: seen as they came
    # (or pinned to an anchor beside it: the first line to its segment's start in run_agent.log, a line
    # of a sync slow enough to count as a catch-up to the line it follows at once; lines are written
    # GAP_S apart here)
    late = [
        r
        for r in seen
        if not (r[3] == "observed" and -0.05 <= r[2] - r[1] <= 3.0)
        and not (r[3] == "anchored" and abs(r[2] - r[1]) <= 2 * GAP_S + 0.5)
    ]
    assert not late, late
    # caught up: never stamped with the catch-up's arrival; in a gap, its bounds hold its writing
    assert not [r for r in caught if r[3] == "observed"], [r for r in caught if r[3] == "observed"]
    for o, wt, t, src, lo, hi in caught:
        if lo is None and hi is None:  # pinned to an anchor beside it (a message's other blocks)
            # as good as the line it is pinned to (seen up to 3 s late here: the sync after a catch-up),
            # give or take its burst's other lines (written GAP_S apart here, at once by an agent)
            assert abs(t - wt) <= 3.0 + 4 * GAP_S, (o, wt, t, src)
        else:
            assert lo - 0.5 <= wt <= hi + 0.5 and lo <= t <= hi, (o, wt, t, src, lo, hi)
