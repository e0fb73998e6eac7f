"""New generations live and offline: lines written right after a mid-file truncation, or into a run
folder deleted and made again, are recorded (once), and an ingest after a watch finds what the
watch could not see (issue 31, item 11).

Real files, a real DuckDB database, the real supervisor driven refresh by refresh, the real
``edgetui ingest`` command.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

from test_live_core import env, init_line, make_run, text_line  # noqa: F401 (fixture)


def _lines(ids) -> bytes:
    return b"".join(text_line(i) + b"\n" for i in ids)


def _recorded_steps(conn) -> dict[int, int]:
    """How many agent_message events say "thinking about step N", by N."""
    out: dict[int, int] = {}
    for (s,) in conn.execute(
        "SELECT summary FROM events WHERE kind = 'agent_message' AND source = 'agent_output.txt'"
    ).fetchall():
        if s and s.startswith("thinking about step "):
            n = int(s.rsplit(" ", 1)[1])
            out[n] = out.get(n, 0) + 1
    return out


def _check(conn, written: set[int]) -> None:
    got = _recorded_steps(conn)
    lost = sorted(written - set(got))
    twice = sorted(n for n, c in got.items() if c > 1)
    assert not lost, f"{len(lost)} of {len(written)} lines lost: {lost[:20]}"
    assert not twice, f"{len(twice)} lines recorded twice: {twice[:20]}"


def test_150_truncations_with_lines_written_right_after_lose_nothing(env):
    root, conn, clock, mk = env
    rnd = random.Random(31)
    next_id = [1000]

    def fresh(k: int) -> list[int]:
        ids = list(range(next_id[0], next_id[0] + k))
        next_id[0] += k
        return ids

    written: set[int] = set()
    runs = []
    for r in range(10):
        ids = fresh(20)
        written.update(ids)
        td = make_run(root, run_id=f"r{r}", transcript=[init_line()] + [text_line(i) for i in ids])
        runs.append(td / "agent_output.txt")
    sup = mk()
    sup.poll_once()
    _check(conn, written)
    head = len(init_line()) + 1
    for _round in range(15):  # 15 rounds x 10 files: 150 truncations
        for p in runs:
            size = p.stat().st_size
            cut = rnd.randrange(head, size)
            data = p.read_bytes()
            mid_line = data[cut - 1 : cut] != b"\n"
            with open(p, "r+b") as f:
                f.truncate(cut)
            if rnd.random() < 0.25:
                sup.poll_once()  # (sometimes a refresh sees the cut before the new lines)
            ids = fresh(rnd.choice([1, 2, 3, 8, 30]))  # fewer or more bytes than were cut
            written.update(ids)
            with open(p, "ab") as f:  # right after the cut, before the next refresh
                f.write((b"\n" if mid_line else b"") + _lines(ids))
        sup.poll_once()
        sup.poll_once()
        _check(conn, written)
        for p in runs:  # and the files go on growing
            ids = fresh(2)
            written.update(ids)
            with open(p, "ab") as f:
                f.write(_lines(ids))
        sup.poll_once()
        _check(conn, written)
    assert sum("truncated at byte" in m for _, m in sup.notes) >= 100, list(sup.notes)[-5:]


def test_20_run_folders_deleted_and_made_again_lose_nothing(env):
    root, conn, clock, mk = env
    rnd = random.Random(131)
    written: set[int] = set()
    nid = 1
    ids = list(range(nid, nid + 12))
    nid += 12
    written.update(ids)
    td = make_run(root, run_id="again", transcript=[init_line()] + [text_line(i) for i in ids])
    sup = mk()
    sup.poll_once()
    _check(conn, written)
    for trial in range(20):
        shutil.rmtree(td.parent)
        if trial % 2:
            sup.poll_once()  # (every other time a refresh sees the folder gone)
        k = rnd.choice([1, 3, 6, 12, 25])  # shorter or longer than the deleted transcript
        ids = list(range(nid, nid + k))
        nid += k
        written.update(ids)
        # the same run again: same first line (a re-run of the same session), new lines
        make_run(root, run_id="again", transcript=[init_line()] + [text_line(i) for i in ids])
        sup.poll_once()
        sup.poll_once()
        _check(conn, written)


def _ingest(db: Path, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "edgetui.cli.main", "--db", str(db), "ingest", str(root)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_ingest_after_the_watch_records_what_changed_below_its_cursors(env, tmp_path):
    """What the watch could not see (it had stopped): a run folder made again with the same first
    line and a transcript longer than the old one, a transcript cut mid-file with fewer bytes
    written after the cut. The ingest records the new lines and says so."""
    root, conn, clock, mk = env
    a = make_run(root, run_id="remade", transcript=[init_line()] + [text_line(i) for i in range(1, 6)])
    b = make_run(root, run_id="cut", transcript=[init_line()] + [text_line(i) for i in range(100, 130)])
    sup = mk()
    sup.poll_once()
    sup.poll_once()
    written = set(range(1, 6)) | set(range(100, 130))
    _check(conn, written)
    sup.close()
    conn.close()
    db = tmp_path / "live.duckdb"

    shutil.rmtree(a.parent)
    make_run(root, run_id="remade", transcript=[init_line()] + [text_line(i) for i in range(10, 30)])
    bp = b / "agent_output.txt"
    data = bp.read_bytes()
    cut = data.index(text_line(120))
    with open(bp, "r+b") as f:
        f.truncate(cut)
    with open(bp, "ab") as f:
        f.write(_lines([500, 501]))
    written |= set(range(10, 30)) | {500, 501}

    r = _ingest(db, root)
    assert r.returncode == 0, r.stderr
    assert "nothing new" not in r.stdout, r.stdout
    assert "Traceback" not in r.stderr
    c = duckdb.connect(str(db), read_only=True)
    try:
        got = _recorded_steps(c)
    finally:
        c.close()
    assert not sorted(written - set(got)), sorted(written - set(got))
    r2 = _ingest(db, root)  # and nothing more the next time
    assert r2.returncode == 0 and "nothing new" in r2.stdout, (r2.stdout, r2.stderr)


def test_a_watch_started_again_reads_a_run_folder_made_again_while_it_was_stopped(env):
    root, conn, clock, mk = env
    td = make_run(root, run_id="again", transcript=[init_line()] + [text_line(i) for i in range(1, 6)])
    sup = mk()
    sup.poll_once()
    sup.poll_once()
    sup.close()
    written = set(range(1, 6))
    _check(conn, written)
    shutil.rmtree(td.parent)  # made again while nothing watched: same first line, longer, other lines
    make_run(root, run_id="again", transcript=[init_line()] + [text_line(i) for i in range(10, 40)])
    written |= set(range(10, 40))
    sup2 = mk()
    sup2.poll_once()
    sup2.poll_once()
    _check(conn, written)
    # and a copy of the same bytes (another inode, another mtime) is the same file: nothing again
    sup2.close()
    tpath = td / "agent_output.txt"
    data = tpath.read_bytes()
    tpath.unlink()
    tpath.write_bytes(data)
    sup3 = mk()
    sup3.poll_once()
    sup3.poll_once()
    _check(conn, written)
