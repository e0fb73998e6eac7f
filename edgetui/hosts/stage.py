"""A first sync's image staged in memory (tmpfs), written to disk after the runs are recorded.

A first sync of a runs root writes tens of thousands of small files; on ext4 creating them costs
~280 µs each (the journal), more than everything else of the sync together, while on a tmpfs the
same tar streams take a fraction of it. So a first sync (:meth:`edgetui.hosts.mirror.Mirror.sync`
of an image without files) writes its image into a private directory of a tmpfs (the *stage*,
``/dev/shm/edgetui-stage-XXXX``, 0700) and :func:`publish` puts one symlink per top-level entry of
the root (a run dir, SForge's ``<ip>`` dir) into the image directory: the ingest and the tailer
read the image at its own path (what the database records: ``run_dir``, cursors' ``path``) and get
the staged files. :func:`settle` then writes the stage to disk behind the image's back, entry by
entry (a copy beside, mtimes kept, swapped with its symlink in one ``renameat2(RENAME_EXCHANGE)``:
the path always names the same bytes), and frees the stage. A tailer holding a staged file open
sees another inode with the same bytes and goes on from its offset; tree signatures of an image
leave inodes out (:mod:`edgetui.hosts.signature`), so the recorded runs stay unchanged.

Staging is used only where it is safe and fits: Linux (``renameat2`` in libc), a tmpfs at
``/dev/shm`` (or ``$EDGETUI_STAGE_DIR``; ``none`` turns staging off), and a root whose files take
at most :data:`MEM_SHARE` of the memory available and :data:`TMPFS_SHARE` of the tmpfs's free space
(checked as soon as the listing says how large the root is; a larger one is synced to disk
directly). A stage left by a process that ended before settling is settled by the next sync of
that image; one lost with a reboot leaves dangling symlinks, removed then (the files are read again).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Union

import ctypes
import errno

#: prefix of a stage directory's name (recognised when adopting a stage left by another process)
PREFIX = "edgetui-stage-"
#: share of MemAvailable a staged image may take at most
MEM_SHARE = 0.25
#: share of the tmpfs's free space a staged image may take at most
TMPFS_SHARE = 0.5
#: bytes counted per file and directory besides its size (inode, directory entry, page rounding)
ENTRY_OVERHEAD = 4096

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
#: libc's renameat2 once looked up (a ctypes function), False when there is none
_renameat2: Union[None, bool, Callable[..., int]] = None


def _exchange_fn():
    """libc's ``renameat2``, or None (not Linux, an old glibc)."""
    global _renameat2
    if _renameat2 is None:
        try:
            # lazy: a libc call made through ctypes only on this path (Linux), not at import
            import ctypes

            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = False
    return _renameat2 or None


def exchange(a: Path, b: Path) -> None:
    """Swap the paths ``a`` and ``b`` atomically (both must exist, on one file system). Raises
    ``OSError``."""

    fn = _exchange_fn()
    if fn is None:
        raise OSError(38, "renameat2 not available", str(a))
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def _is_tmpfs(path: str) -> bool:
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] == path:
                    return parts[2] == "tmpfs"
    except OSError:  # no /proc/self/mounts (not Linux): not known to be a tmpfs
        pass
    return False


def base_dir() -> str | None:
    """The tmpfs directory stages are made in, or None when staging is off or impossible here."""
    env = os.environ.get("EDGETUI_STAGE_DIR")
    if env is not None:
        if env.strip().lower() in ("", "none", "off", "0"):
            return None
        base = env
    else:
        base = "/dev/shm"
        if not _is_tmpfs(base):
            return None
    if _exchange_fn() is None or not os.path.isdir(base) or not os.access(base, os.W_OK | os.X_OK):
        return None
    return base


def budget(base: str) -> int:
    """Bytes a staged image may take in ``base`` (see the module)."""
    try:
        st = os.statvfs(base)
        free = st.f_bavail * st.f_frsize
    except OSError:  # the base cannot be asked: nothing may be staged there
        return 0
    avail = None
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):  # no MemAvailable (not Linux): the disk's share alone
        pass
    cap = int(free * TMPFS_SHARE)
    return cap if avail is None else min(cap, int(avail * MEM_SHARE))


#: suffix of the file beside a stage naming its maker and its image (``<pid>\n<image path>\n``)
OWNER = ".owner"

#: stages this process made that are not published or settled yet (never swept)
_MAKING: set[str] = set()


def make(base: str, image: Path | None = None) -> Path:
    """A new private stage directory (0700, a random name) under ``base`` for the image ``image``
    (named in a file beside it, :data:`OWNER`); stages left orphaned are swept first
    (:func:`sweep`). Raises ``OSError``."""
    sweep(base)
    stage = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    _MAKING.add(str(stage))
    if image is not None:
        Path(str(stage) + OWNER).write_text(f"{os.getpid()}\n{os.path.abspath(image)}\n")
    return stage


def remove(stage: Path) -> None:
    """Remove a stage and the file naming its owner."""
    _MAKING.discard(str(stage))
    shutil.rmtree(stage, ignore_errors=True)
    try:
        os.unlink(str(stage) + OWNER)
    except FileNotFoundError:  # no owner file: nothing more to remove
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:  # no such process
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def sweep(base: str) -> list[Path]:
    """Remove the stages under ``base`` that nothing leads to any more: made by this user, whose
    image (named beside it) has no link into it, and not being made (by this process, or by another
    one still alive). Such a stage is tmpfs memory held for nothing: its image was deleted (the
    cache cleared, a test's temporary directory removed) or settled elsewhere. Returns those removed."""
    out: list[Path] = []
    try:
        items = list(os.scandir(base))
    except OSError:
        return out
    names = {e.name for e in items}
    for e in items:
        if e.name.startswith(PREFIX) and e.name.endswith(OWNER) and e.name[: -len(OWNER)] not in names:
            try:  # the stage itself removed by hand (as a reboot clears /dev/shm): its owner file too
                if e.stat(follow_symlinks=False).st_uid == os.getuid():
                    os.unlink(e.path)
            except OSError:  # gone meanwhile, or not removable: left for the next sweep
                pass
            continue
        if not e.name.startswith(PREFIX) or e.name.endswith(OWNER) or not e.is_dir(follow_symlinks=False):
            continue
        try:
            if e.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            pid_s, image = Path(e.path + OWNER).read_text().split("\n")[:2]
            pid = int(pid_s)
        except (OSError, ValueError):
            continue  # (no owner named: made by an older edgetui, left as it is)
        if e.path in _MAKING or (pid != os.getpid() and _alive(pid)):
            continue
        if any(os.path.dirname(t) == e.path for _link, t in staged_links(Path(image))):
            continue  # the next sync of its image settles it
        remove(Path(e.path))
        out.append(Path(e.path))
    return out


def publish(stage: Path, image: Path) -> None:
    """Make the staged tree visible at ``image``: a symlink ``image/<name>`` to each top-level
    directory of ``stage`` (what was at that name, an empty directory tree left by an earlier
    sync, is replaced); a top-level file is copied (mtime kept). Raises ``OSError``."""
    image.mkdir(parents=True, exist_ok=True)
    for e in sorted(os.scandir(stage), key=lambda e: e.name):
        dst = image / e.name
        if os.path.lexists(dst):
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            else:
                dst.unlink()
        if e.is_dir(follow_symlinks=False):
            os.symlink(e.path, dst)
        else:
            shutil.copy2(e.path, dst)
    _MAKING.discard(str(stage))


def staged_links(image: Path) -> list[tuple[Path, str]]:
    """The top-level symlinks of ``image`` made by :func:`publish` (a target whose parent is a
    stage directory): (link, target) pairs."""
    out: list[tuple[Path, str]] = []
    try:
        it = list(os.scandir(image))
    except OSError:
        return out
    for e in it:
        if e.is_symlink():
            try:
                target = os.readlink(e.path)
            except OSError:  # gone since the scan: not a staged image's link
                continue
            if os.path.basename(os.path.dirname(target)).startswith(PREFIX):
                out.append((Path(e.path), target))
    return out


#: tar programs found to be GNU tar (path -> bool), asked once each
_GNU_TAR: dict[str, bool] = {}


def _gnu_tar() -> str | None:
    """The path of ``tar`` when it is GNU tar (the options :func:`copy_tree` gives it), else None."""
    tar = shutil.which("tar")
    if tar is None:
        return None
    if tar not in _GNU_TAR:
        try:
            r = subprocess.run([tar, "--version"], capture_output=True, timeout=10, check=False)
            _GNU_TAR[tar] = r.returncode == 0 and b"GNU tar" in r.stdout.split(b"\n", 1)[0]
        except (OSError, subprocess.SubprocessError):  # it cannot be run: not used
            _GNU_TAR[tar] = False
    return tar if _GNU_TAR[tar] else None


def copy_tree(src: str, dst: Path) -> None:
    """A copy of the directory ``src`` at ``dst`` (which must not exist): files' bytes and modes,
    and files' and directories' mtimes to the nanosecond. Through a pipe of two GNU ``tar``
    processes (pax format: nanosecond times) where GNU tar is found, else ``shutil.copytree``: the
    tar pipe takes ~25 % less CPU than the Python copy (its per-file calls and ``copystat``) and
    reads on one core while it writes on the other (bench/bench_ssh.py --settle-variants). Raises
    ``OSError`` naming ``src`` when the copy fails (what was copied is left at ``dst``)."""
    tar = _gnu_tar()
    if tar is None:
        shutil.copytree(src, dst, symlinks=True, copy_function=shutil.copy2)
        return
    os.mkdir(dst, 0o700)  # (its mode and mtime then come from the archive's "." entry)
    with tempfile.TemporaryFile() as err_c:  # (a file, not a pipe: a long complaint cannot stall the copy)
        with subprocess.Popen(
            [tar, "-C", src, "--format=posix", "--pax-option=delete=atime,delete=ctime", "-cf", "-", "."],
            stdout=subprocess.PIPE,
            stderr=err_c,
        ) as out:
            assert out.stdout is not None
            into = subprocess.run(
                [tar, "-C", str(dst), "-xpf", "-", "--no-same-owner"],
                stdin=out.stdout,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
            out.stdout.close()
        err_c.seek(0)
        err_out = err_c.read()
    if out.returncode != 0 or into.returncode != 0:
        why = (into.stderr or err_out).decode("utf-8", "replace").strip().splitlines()
        raise OSError(errno.EIO, f"copying the stage to disk failed: {why[-1] if why else 'tar failed'}", src)


def settle(image: Path, stage: Path | None = None) -> int:
    """Write the staged entries of ``image`` to disk (see the module): each symlink made by
    :func:`publish` whose target exists is replaced by a copy of it (files' and directories' mtimes
    kept, to the nanosecond), one that dangles (its stage lost with a reboot) is removed; then the
    stage directories those links led to (and ``stage``) are removed. Returns the number of entries
    written. Raises ``OSError`` (the image as it was: a copy not swapped in yet is removed)."""
    stages = {Path(stage)} if stage is not None else set()
    n = 0
    for link, target in staged_links(image):
        stages.add(Path(os.path.dirname(target)))
        if not os.path.isdir(target):
            link.unlink()
            continue
        part = link.with_name(f".{link.name}.edgetui-part")
        if os.path.lexists(part):
            shutil.rmtree(part) if part.is_dir() and not part.is_symlink() else part.unlink()
        try:
            copy_tree(target, part)
            exchange(part, link)  # now `link` names the copy, `part` the symlink
        except BaseException:
            shutil.rmtree(part, ignore_errors=True)
            raise
        part.unlink()
        n += 1
    for s in stages:
        remove(s)
    return n
