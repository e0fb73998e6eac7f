"""A remote runs root over a real OpenSSH sshd is recorded with the same events as a local ingest of
the same files (compared by SQL, EXCEPT both ways), through the mirror (edgetui/hosts/mirror.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgetui.store.database import open_db
from edgetui.hosts.mirror import Mirror, wanted
from edgetui.hosts.ssh import UP, SshHost
from edgetui.record.ingest import ingest_paths

ROOT = Path(__file__).resolve().parents[1]
SETS = [
    (ROOT / "sample_runs" / "runs", ROOT / "sample_runs" / "tasks"),
    (ROOT / "sample_runs" / "genuine" / "runs", ROOT / "sample_runs" / "genuine" / "tasks"),
]

#: every column of events, submissions and runs but the local paths (where the files were read)
COMPARE = {
    "events": "SELECT * EXCLUDE (ingested_at) FROM events",
    "submissions": "SELECT * FROM submissions",
    "runs": "SELECT * EXCLUDE (run_dir, source_path, ingested_at, updated_at) FROM runs",
    "test_results": "SELECT * FROM test_results",
}


@pytest.fixture
def served(tmp_path, start_sshd):
    """An sshd serving copies of the sample and genuine runs (mtimes kept, nanoseconds included)."""
    s = start_sshd()
    roots = []
    for i, (runs, _tasks) in enumerate(SETS):
        dest = tmp_path / "home" / f"set{i}" / "logs" / "runs"
        shutil.copytree(runs, dest, copy_function=shutil.copy2)
        roots.append(dest)
    host = SshHost(
        "box",
        f"{s.user}@127.0.0.1:{s.port}",
        config=[],
        known_hosts=str(s.known_hosts(tmp_path / "kh")),
        client_keys=[str(s.user_key)],
    )
    assert host.wait_up(10).kind == UP, host.state
    yield s, host, roots
    host.close()
    s.close()


def _columns(conn, table: str) -> set[str]:
    return {r[0] for r in conn.execute(f"DESCRIBE {table}").fetchall()}


def _query(conn, table: str) -> str:
    q = COMPARE[table]
    cols = _columns(conn, table)
    if "EXCLUDE" in q:  # exclude only the columns this schema has
        inner = q.split("EXCLUDE (")[1].split(")")[0]
        keep = [c.strip() for c in inner.split(",") if c.strip() in cols]
        q = q.replace(f"EXCLUDE ({inner})", f"EXCLUDE ({', '.join(keep)})" if keep else "")
    return q


def test_remote_root_recorded_as_the_local_ingest_of_the_same_files(served, tmp_path):
    _s, host, roots = served
    local_db, remote_db = tmp_path / "local.duckdb", tmp_path / "remote.duckdb"
    lc, rc = open_db(local_db), open_db(remote_db)
    try:
        for (_, tasks), root in zip(SETS, roots):
            lrep = ingest_paths(lc, [root], tasks_dir=tasks, host="box")
            m = Mirror(host, str(root), tmp_path / "cache" / root.parent.parent.name)
            srep = m.sync()
            assert not srep.errors, srep.errors
            assert srep.bulk_bytes > 0  # the first sync came as tar streams
            # every phase timed, in order, and together within the sync (bench_ssh prints them)
            assert list(srep.phases) == ["listing", "streams", "check", "remove", "dir_times", "publish"]
            assert all(v >= 0 for v in srep.phases.values()) and sum(srep.phases.values()) <= srep.seconds
            host.stat(str(root))  # a round trip on the SSH loop: the streams' releases (queued on it) have run
            assert host._open_channels <= 1  # every stream's channel given back (the kept shell may stay)
            files = [p for p in root.rglob("*") if p.is_file()]
            kept = [p for p in files if wanted(p.relative_to(root).as_posix())]
            assert len(kept) < len(files)  # the submitted archives, eval.sh, allowed_files.txt stay there
            assert srep.bytes_read == sum(p.stat().st_size for p in kept)  # the first sync reads each once
            # staged in memory: the image's top-level entries lead into a tmpfs stage until settled
            assert m.staged and str(m.stage).startswith("/dev/shm/")
            tops = list(m.local_root.iterdir())
            assert tops and all(p.is_symlink() for p in tops if p.is_dir())
            assert _files(m.local_root) == sorted(p.relative_to(root) for p in kept)
            rrep = ingest_paths(
                rc, [m.local_root], tasks_dir=tasks, host="box", images=[m.local_root]
            )  # read from the stage
            assert sorted(lrep.runs) == sorted(rrep.runs) and lrep.runs
            assert not rrep.failed
            stage = m.stage
            assert m.settle() is not None and not m.staged and not stage.exists()
            assert not any(p.is_symlink() for p in m.local_root.rglob("*"))
            _same_files(m.local_root, root)  # on disk now: the same bytes and mtimes
            # the runs recorded from the stage are unchanged on disk (signatures without inodes)
            assert ingest_paths(
                rc, [m.local_root], tasks_dir=tasks, host="box", images=[m.local_root]
            ).unchanged == len(rrep.runs)
            # nothing changed: the next sync reads nothing
            again = m.sync()
            assert again.bytes_read == 0 and again.changed == [] and "settle" not in again.phases
        lc.close()
        rc.execute(f"ATTACH '{local_db}' AS l (READ_ONLY)")
        n_events = rc.execute("SELECT count(*) FROM events").fetchone()[0]
        assert n_events > 1000
        assert (
            rc.execute("SELECT count(DISTINCT split_part(run_key, '/', 1)) FROM runs").fetchone()[0] >= 2
        )  # box + the ip group
        for table in COMPARE:
            q = _query(rc, table)
            ql = q.replace(f"FROM {table}", f"FROM l.{table}")
            only_remote = rc.execute(f"SELECT count(*) FROM ({q} EXCEPT ALL {ql})").fetchone()[0]
            only_local = rc.execute(f"SELECT count(*) FROM ({ql} EXCEPT ALL {q})").fetchone()[0]
            assert (only_remote, only_local) == (0, 0), table
        # run_dir: the image's path, the same place under the root as the remote one
        pairs = rc.execute("SELECT r.run_dir, x.run_dir FROM runs r JOIN l.runs x USING (run_key)").fetchall()
        assert len(pairs) == rc.execute("SELECT count(*) FROM runs").fetchone()[0]
        for mine, theirs in pairs:
            rel_m = Path(mine).relative_to(tmp_path / "cache")
            rel_t = Path(theirs).relative_to(tmp_path / "home")
            assert rel_m.parts[0] == rel_t.parts[0] and rel_m.parts[1:] == rel_t.parts[3:]
    finally:
        rc.close()


def test_a_grown_file_is_read_from_its_end_and_a_replaced_one_whole(served, tmp_path):
    _s, host, roots = served
    d = roots[0].parent / "grow"
    d.mkdir()
    f = d / "run_agent.log"
    f.write_bytes(b"a" * 10_000)
    m = Mirror(host, str(d), tmp_path / "img")
    assert m.sync().bytes_read == 10_000
    with open(f, "ab") as fh:
        fh.write(b"b" * 5_000)
    rep = m.sync()
    assert rep.changed == ["run_agent.log"] and rep.bytes_read == 5_000 + 64  # the new bytes and the overlap
    assert (m.local_root / "run_agent.log").read_bytes() == f.read_bytes()
    ino = (m.local_root / "run_agent.log").stat().st_ino
    f.write_bytes(b"c" * 20_000)  # rewritten larger: the overlap differs, read whole, a new inode
    rep = m.sync()
    assert (m.local_root / "run_agent.log").read_bytes() == b"c" * 20_000
    assert (m.local_root / "run_agent.log").stat().st_ino != ino
    assert (m.local_root / "run_agent.log").stat().st_mtime_ns == f.stat().st_mtime_ns
    f.unlink()
    assert m.sync().removed == ["run_agent.log"] and not (m.local_root / "run_agent.log").exists()


def test_the_kept_shell_returns_outputs_past_asyncssh_readuntil_limit(served):
    """A listing of a big root (~15,000 files: 3.5 MB of ``find -printf``) came back whole from the
    kept shell, not as 'connection lost' (asyncssh's readuntil stops at 2 MiB) and an SFTP walk."""
    _s, host, _roots = served
    rc, out, _ = host.run_kept(["head", "-c", "5000000", "/dev/zero"])  # NULs: the marker's own first byte
    assert rc == 0 and out == b"\0" * 5_000_000
    rc, out, _ = host.run_kept(["sh", "-c", "printf abc; exit 3"])  # the shell still serves, status kept
    assert (rc, out) == (3, b"abc")
    assert host._shell.starts == 1


def _files(top: Path) -> list[Path]:
    """The files under ``top``, relative, following the image's staged top-level symlinks."""
    import os

    return sorted(Path(dp, f).relative_to(top) for dp, _dn, fs in os.walk(top, followlinks=True) for f in fs)


def _same_files(image: Path, root: Path) -> None:
    """The image holds exactly the wanted files of ``root``, regular files with its bytes and mtimes."""
    kept = sorted(
        p.relative_to(root) for p in root.rglob("*") if p.is_file() and wanted(p.relative_to(root).as_posix())
    )
    assert _files(image) == kept  # (a staged image: through its top-level links into the stage)
    for rel in kept:
        assert not (image / rel).is_symlink()
        assert (image / rel).read_bytes() == (root / rel).read_bytes(), rel
        assert (image / rel).stat().st_mtime_ns == (root / rel).stat().st_mtime_ns, rel


@pytest.mark.parametrize("how", ["cut", "no-local-tar"])
def test_first_sync_completed_by_the_listing_when_the_stream_falls_short(served, tmp_path, monkeypatch, how):
    """The tar streams are a fast path only: a stream cut short (a partial last file, files missing)
    or no local tar at all gives the same image, every file read once, as the remote's (a symlinked
    file becomes a regular file with its target's bytes, as ``find -L`` lists it)."""
    _s, host, roots = served
    from edgetui.hosts import mirror

    root = roots[0]
    target = next(p for p in sorted(root.rglob("run_agent.log")))
    (root / "linked.log").symlink_to(target)
    if how == "cut":  # every stream ends after 40 KB of its (uncompressed) tar
        monkeypatch.setattr(
            mirror,
            "_TAR_SCRIPT",
            mirror._TAR_SCRIPT.replace(" -cf - -- ", " -cf - -- ").replace(
                "2>/dev/null | $z", "2>/dev/null | head -c 40000 | $z"
            ),
        )
    else:
        real = shutil.which
        monkeypatch.setattr(mirror.shutil, "which", lambda name: None if name == "tar" else real(name))
    m = Mirror(host, str(root), tmp_path / "img")
    rep = m.sync()
    assert not rep.errors, rep.errors
    assert (rep.bulk_bytes > 0) == (how == "cut")
    host.stat(str(root))
    assert host._open_channels <= 1  # a stream cut short gives its channel back too
    _same_files(m.local_root, root)
    kept = [p for p in root.rglob("*") if p.is_file() and wanted(p.relative_to(root).as_posix())]
    assert rep.bytes_read >= sum(p.stat().st_size for p in kept)  # a cut file: its prefix and then all of it
    assert sorted(rep.changed) == sorted(p.relative_to(root).as_posix() for p in kept)
    again = m.sync()
    assert again.bytes_read == 0 and again.changed == [] and again.removed == []


def test_a_first_sync_into_an_image_with_files_is_not_streamed(served, tmp_path):
    """An image that has files already is brought up to date file by file (a stream would write
    over files the tailer may be reading); a file the host no longer has is removed."""
    _s, host, roots = served
    root = roots[1]
    img = tmp_path / "img"
    (img / "old-run").mkdir(parents=True)
    (img / "old-run" / "run_agent.log").write_bytes(b"gone on the host\n")
    m = Mirror(host, str(root), img)
    rep = m.sync()
    assert rep.bulk_bytes == 0 and not rep.errors
    assert rep.removed == ["old-run/run_agent.log"]
    _same_files(img, root)


def _stages(under: Path | None = None) -> set[str]:
    """The stages in /dev/shm (with ``under``: only those whose owner file names an image below it,
    so that tests staging at the same time in other workers do not count)."""
    import glob

    from edgetui.hosts.stage import OWNER, PREFIX

    found = set(glob.glob(f"/dev/shm/{PREFIX}*"))
    if under is None:
        return found
    mine = set()
    for f in found:
        owner = f if f.endswith(OWNER) else f + OWNER
        try:
            image = Path(owner).read_text().splitlines()[1]
        except (OSError, IndexError):  # gone meanwhile, or not named: another's
            continue
        if image.startswith(str(under)):
            mine.add(f)
    return mine


def test_a_root_too_large_for_the_stage_or_staging_off_goes_straight_to_disk(served, tmp_path, monkeypatch):
    """A root whose listing says it would take more than the stage may hold is streamed again into
    the image on disk (the stage removed); ``EDGETUI_STAGE_DIR=none`` never stages."""
    _s, host, roots = served
    from edgetui.hosts import stage

    assert _stages(tmp_path) == set()
    monkeypatch.setattr(stage, "budget", lambda base: 10_000)  # the sample runs take ~7 MB
    m = Mirror(host, str(roots[0]), tmp_path / "big")
    rep = m.sync()
    assert not rep.errors and rep.bulk_bytes > 0 and not m.staged
    assert list(rep.phases)[-1] == "flush" and _stages(tmp_path) == set()
    assert not any(p.is_symlink() for p in m.local_root.iterdir())
    _same_files(m.local_root, roots[0])
    monkeypatch.undo()
    monkeypatch.setenv("EDGETUI_STAGE_DIR", "none")
    m = Mirror(host, str(roots[1]), tmp_path / "off")
    rep = m.sync()
    assert not m.staged and rep.bulk_bytes > 0 and _stages(tmp_path) == set()
    _same_files(m.local_root, roots[1])


def test_a_stage_left_by_an_ended_process_is_settled_and_a_lost_one_read_again(served, tmp_path):
    """The next sync of an image (any process: a new Mirror here) writes a stage it finds linked
    to disk first and reads nothing; links whose stage is gone (a reboot) are removed and the
    files streamed again."""
    _s, host, roots = served
    root = roots[1]
    first = Mirror(host, str(root), tmp_path / "img")
    first.sync()
    assert first.staged
    stage = first.stage
    again = Mirror(host, str(root), tmp_path / "img").sync()
    assert "settle" in again.phases and again.bytes_read == 0 and again.changed == []
    assert not stage.exists()
    _same_files(tmp_path / "img", root)
    lost = Mirror(host, str(root), tmp_path / "img2")
    lost.sync()
    shutil.rmtree(lost.stage)  # as a reboot clears /dev/shm
    m = Mirror(host, str(root), tmp_path / "img2")
    rep = m.sync()
    assert not rep.errors and rep.bulk_bytes > 0 and m.staged  # streamed again, into a new stage
    assert m.settle() is not None
    _same_files(m.local_root, root)


def _dir_times_match(image: Path, root: Path) -> None:
    """Every directory of the image has its host directory's mtime (the ingest reads times from them)."""
    for d in [p for p in root.rglob("*") if p.is_dir()]:
        rel = d.relative_to(root)
        if (image / rel).is_dir():
            assert (image / rel).stat().st_mtime_ns == d.stat().st_mtime_ns, rel


def test_a_rescan_trusts_what_it_verified_and_still_sees_every_change(served, tmp_path, monkeypatch):
    """A later full sync of the same Mirror takes a path the host lists unchanged as matching its
    image (no local lstat: what the last sync verified) and looks for removals among the paths it
    listed, not by a walk of the image; a file grown, rewritten at the same size, created, removed,
    and a directory created or removed on the host all still reach the image, with the host's
    mtimes on files and directories, as a fresh Mirror of the same image finds (nothing to do)."""
    import os

    from edgetui.hosts import mirror

    _s, host, roots = served
    root = roots[0]
    m = Mirror(host, str(root), tmp_path / "img")
    assert not m.sync().errors
    m.settle()
    n_entries = sum(1 for _ in root.rglob("*"))
    calls = []
    real_lstat, real_scandir = os.lstat, os.scandir
    monkeypatch.setattr(mirror.os, "lstat", lambda p, *a, **k: (calls.append(p), real_lstat(p, *a, **k))[1])
    monkeypatch.setattr(mirror.os, "scandir", lambda p=".": (calls.append(p), real_scandir(p))[1])
    quiet = m.sync()
    assert quiet.changed == [] and quiet.removed == [] and quiet.bytes_read == 0 and quiet.files > 100
    assert len(calls) < n_entries // 10, (len(calls), n_entries)  # without the trust: one lstat an entry
    monkeypatch.undo()

    logs = sorted(root.rglob("run_agent.log"))
    with open(logs[0], "ab") as fh:  # grown
        fh.write(b"2026-12-01 10:00:00 INFO more\n")
    st = logs[1].stat()
    logs[1].write_bytes(logs[1].read_bytes().replace(b"I", b"J", 1))  # rewritten, same size
    os.utime(logs[1], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    (logs[2].parent / "notes.txt").write_text("new\n")  # created in a known directory
    (root / "brand-new" / "t").mkdir(parents=True)  # a new directory with a file
    (root / "brand-new" / "t" / "run_agent.log").write_text("2026-12-01 10:00:00 INFO x\n")
    (root / "empty-dir").mkdir()
    gone_file = logs[3]
    gone_file.unlink()
    gone_dir = next(p for p in sorted(root.rglob("submissions")) if p.is_dir() and gone_file.parent not in p.parents)
    gone_dir = next(p for p in sorted(gone_dir.iterdir()) if p.is_dir())
    gone_n = sum(1 for p in gone_dir.rglob("*") if p.is_file() and wanted(p.relative_to(root).as_posix()))
    shutil.rmtree(gone_dir)
    rep = m.sync()
    assert not rep.errors, rep.errors
    rel = lambda p: p.relative_to(root).as_posix()
    assert {rel(logs[0]), rel(logs[1]), rel(logs[2].parent / "notes.txt"), "brand-new/t/run_agent.log"} <= set(
        rep.changed
    )
    assert rel(gone_file) in rep.removed and len(rep.removed) == 1 + gone_n, rep.removed
    assert not (m.local_root / rel(gone_dir)).exists() and (m.local_root / "empty-dir").is_dir()
    _same_files(m.local_root, root)
    _dir_times_match(m.local_root, root)
    fresh = Mirror(host, str(root), m.local_root).sync()  # a new process's first look: nothing to do
    assert fresh.changed == [] and fresh.removed == [] and fresh.bytes_read == 0
    again = m.sync()
    assert again.changed == [] and again.removed == [] and again.bytes_read == 0


def test_a_rescan_with_nothing_changed_records_nothing_after_a_sharded_first_ingest(served, tmp_path, monkeypatch):
    """The first ingest of a staged image shares its new runs with a second process (the shard,
    edgetui/record/ingest_shard.py), which signs them too; the stage then settled on disk (new inodes, the
    same files), a rescan with nothing changed on the host records nothing: every run unchanged,
    no event written (issue 36 item 11: 33 of 50 runs read again, 4.25 s, in bench/bench_ssh.py:
    the shard signed the image's runs with their inodes, not knowing the image)."""
    import edgetui.record.ingest_shard as shard_mod

    _s, host, roots = served
    root, tasks = roots[0], SETS[0][1]
    monkeypatch.delenv("EDGETUI_NO_MP", raising=False)
    monkeypatch.setattr(shard_mod, "SHARD_MIN_RUNS", 2)
    monkeypatch.setattr(shard_mod, "CHUNK_RUNS", 1)
    shards = []
    real_copy = shard_mod.copy_shard
    monkeypatch.setattr(shard_mod, "copy_shard", lambda rec, path: (shards.append(path), real_copy(rec, path))[1])
    m = Mirror(host, str(root), tmp_path / "img")
    assert not m.sync().errors and m.staged
    conn = open_db(tmp_path / "r.duckdb")
    try:
        first = ingest_paths(conn, [m.local_root], tasks_dir=tasks, host="box", images=[m.local_root])
        assert shards and first.runs and not first.failed  # the shard recorded some of them
        m.settle()
        n_events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        for _ in range(2):
            rep = m.sync()
            assert rep.changed == [] and rep.removed == []
            again = ingest_paths(conn, [m.local_root], tasks_dir=tasks, host="box", images=[m.local_root])
            assert (again.unchanged, len(again.runs)) == (len(first.runs), len(first.runs))
            assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == n_events
    finally:
        conn.close()
