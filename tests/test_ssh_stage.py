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
