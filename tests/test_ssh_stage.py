"""A first sync's tmpfs stage (edgetui/hosts/stage.py) and the tree signatures of images: a staged
image written to disk is the same tree to the ingest (same bytes, mtimes, signatures), while any
real change of a file still changes its run's signature."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from edgetui.hosts import stage
from edgetui.hosts.local import LocalHost
from edgetui.hosts.signature import tree_signature

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_runs" / "runs"
GW = "opus48-edge-3-20260312005800/gw_signal_search"

pytestmark = pytest.mark.skipif(stage.base_dir() is None, reason="no tmpfs at /dev/shm or no renameat2 here")


def _tree(top: Path) -> dict[str, tuple]:
    """Every file and directory under ``top`` (following its top-level links): kind, bytes, mtime_ns."""
    out = {}
    for dp, dn, fs in os.walk(top, followlinks=True):
        for n in dn + fs:
            p = Path(dp, n)
            st = p.stat()
            out[p.relative_to(top).as_posix()] = (p.is_dir(), None if p.is_dir() else p.read_bytes(), st.st_mtime_ns)
    return out


def test_a_staged_image_settled_on_disk_is_the_same_tree_with_the_same_signatures(tmp_path):
    st = stage.make(stage.base_dir())
    for e in SAMPLES.iterdir():
        (shutil.copytree if e.is_dir() else shutil.copy2)(e, st / e.name)
    image = tmp_path / "img"
    stage.publish(st, image)
    assert all(p.is_symlink() for p in image.iterdir() if p.is_dir())
    staged, h = _tree(image), LocalHost()
    sig = tree_signature(h, str(image / GW), image=True).digest
    assert stage.settle(image, st) == sum(1 for e in SAMPLES.iterdir() if e.is_dir())
    assert not st.exists() and not any(p.is_symlink() for p in image.rglob("*"))
    assert _tree(image) == staged  # bytes and nanosecond mtimes of files and directories kept
    assert tree_signature(h, str(image / GW), image=True).digest == sig
    # outside an image the same copy is another tree (other inodes)
    plain = tmp_path / "plain"
    shutil.copytree(image, plain)
    other = tree_signature(h, str(plain / GW)).digest
    assert other != sig
    # inside an image a real change still shows: a file rewritten in place at another mtime
    rep = image / GW / "submissions" / "agent-3" / "report.json"
    t = rep.stat().st_mtime_ns
    os.utime(rep, ns=(t, t + 1))
    assert tree_signature(h, str(image / GW), image=True).digest != sig


def test_settle_removes_links_whose_stage_is_gone_and_leaves_other_links(tmp_path):
    st = stage.make(stage.base_dir())
    (st / "run-a").mkdir()
    (st / "run-a" / "run_agent.log").write_text("x\n")
    image = tmp_path / "img"
    stage.publish(st, image)
    (image / "mine").symlink_to(tmp_path)  # not a stage's link: left alone
    shutil.rmtree(st)  # as a reboot clears /dev/shm
    assert stage.settle(image) == 0
    assert sorted(p.name for p in image.iterdir()) == ["mine"]


def test_a_stage_whose_image_is_gone_is_swept_by_the_next_one_and_a_linked_one_kept(tmp_path):
    """A stage holds tmpfs memory until its image is settled; when the image goes instead (the cache
    cleared, a test's temporary directory removed) nothing would ever settle it: the next stage made
    sweeps it. A stage an image still links to, and one still being made, stay."""
    base = stage.base_dir()
    kept_img, gone_img = tmp_path / "kept", tmp_path / "gone"
    made = []
    try:
        for img in (kept_img, gone_img):
            s = stage.make(base, img)
            made.append(s)
            (s / "run-1").mkdir()
            (s / "run-1" / "f.txt").write_text("x")
            stage.publish(s, img)
        making = stage.make(base, tmp_path / "third")  # not published yet
        made.append(making)
        shutil.rmtree(gone_img)
        fourth = stage.make(base, tmp_path / "fourth")
        made.append(fourth)
        assert not made[1].exists() and not Path(str(made[1]) + stage.OWNER).exists()  # swept
        assert made[0].exists() and making.exists() and fourth.exists()
        assert (kept_img / "run-1" / "f.txt").read_text() == "x"
        shutil.rmtree(made[0])  # the stage itself lost (a reboot clears /dev/shm): its owner file goes next
        made.append(stage.make(base, tmp_path / "fifth"))
        assert not Path(str(made[0]) + stage.OWNER).exists()
    finally:
        for s in made:
            stage.remove(s)


def _mixed_tree(top: Path) -> None:
    """A run dir with nested folders, an empty one, an odd name and a read-only file, each at its own
    nanosecond mtime (directories last, as a sync leaves them)."""
    (top / "submissions" / "agent-1").mkdir(parents=True)
    (top / "empty").mkdir()
    (top / "run_agent.log").write_bytes(b"2026-12-01 10:00:00 INFO start\n" * 50)
    (top / "submissions" / "agent-1" / "report.json").write_text('{"passed": 3}\n')
    (top / "na\u00efve name \n.txt").write_bytes(b"\x00\xff")
    ro = top / "submissions" / "agent-1" / "metadata.json"
    ro.write_text("{}\n")
    ro.chmod(0o444)
    t = 1_767_000_000_123_456_789
    for i, p in enumerate(sorted(top.rglob("*"), key=lambda p: -len(p.parts))):
        os.utime(p, ns=(t + i, t + 7 * i))
    os.utime(top, ns=(t, t + 99))


def stat_mode(p: Path) -> int:
    return p.stat().st_mode & 0o777


@pytest.mark.parametrize("tar_found", [True, False], ids=["gnu-tar-pipe", "no-tar-copytree"])
def test_copy_tree_keeps_bytes_modes_and_nanosecond_mtimes(tmp_path, monkeypatch, tar_found):
    """settle's copy (a pipe of two tars, or shutil.copytree where no tar is found) gives the same
    tree: bytes, permission bits and mtimes to the nanosecond of files and directories, the top one
    included."""
    src = tmp_path / "src" / "run-1"
    src.mkdir(parents=True)
    _mixed_tree(src)
    if not tar_found:
        monkeypatch.setenv("PATH", str(tmp_path / "no-tools"))
    assert (stage._gnu_tar() is not None) == tar_found  # (the tests' machines have GNU tar: prereqs)
    dst = tmp_path / "dst"
    stage.copy_tree(str(src), dst)
    assert _tree(dst) == _tree(src)
    assert dst.stat().st_mtime_ns == src.stat().st_mtime_ns and stat_mode(dst) == stat_mode(src)
    modes = {p.relative_to(src): p.stat().st_mode for p in src.rglob("*")}
    assert {p.relative_to(dst): p.stat().st_mode for p in dst.rglob("*")} == modes
    assert stat_mode(dst / "submissions" / "agent-1" / "metadata.json") == 0o444


def test_a_settle_whose_copy_fails_leaves_the_link_and_the_stage_and_says_why(tmp_path, monkeypatch):
    """A copy that fails (here the disk's tar exits 2, a wrapper first on PATH, as a full disk would
    make it) raises an OSError naming the stage entry; the image's path still leads to the staged
    files, no half copy is left beside it, and a later settle (tar back) writes it to disk."""
    st = stage.make(stage.base_dir(), tmp_path / "img")
    try:
        _mixed_tree(st / "run-1")
        image = tmp_path / "img"
        stage.publish(st, image)
        before = _tree(image)
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "tar"
        wrapper.write_text(
            '#!/bin/sh\n[ "$1" = --version ] && exec ' + shutil.which("tar") + " --version\n"
            "echo 'tar: run-1: Cannot write: No space left on device' >&2\nexit 2\n"
        )
        wrapper.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
        with pytest.raises(OSError) as err:
            stage.settle(image, st)
        assert "No space left on device" in str(err.value) and "run-1" in str(err.value)
        assert (image / "run-1").is_symlink() and _tree(image) == before
        assert sorted(p.name for p in image.iterdir()) == ["run-1"]  # no .run-1.edgetui-part left
        monkeypatch.setenv("PATH", os.environ["PATH"].split(":", 1)[1])
        assert stage.settle(image, st) == 1
        assert not (image / "run-1").is_symlink() and _tree(image) == before and not st.exists()
    finally:
        stage.remove(st)
