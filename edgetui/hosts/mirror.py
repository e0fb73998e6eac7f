"""A remote runs root kept in step, byte by byte, in a local cache that the ingest and the tailer read.

Why a cache: the ingest and the live tailer read run files as local paths (parsers, byte-offset
tailing, generations); keeping one local, append-only image of each remote file lets both
record a remote run through exactly the code that records a local one, so the same files give
the same events (tests/test_ssh_ingest.py compares them by SQL). What crosses the network is
what changed: a file that grew is read from its recorded end only (plus a 64-byte overlap that
proves the old bytes are still there; when they are not, the file is read again whole, written
beside and renamed over, which the tailer sees as a new generation); an unchanged file costs
its line in one listing (and, from a Mirror's second full sync on, nothing local: a path the host
lists as the last sync verified it is trusted without an ``lstat`` of its image, and removals are
looked for among the paths listed last, not by a walk of the image: the image is written by its
Mirror alone, so a file changed in the image by hand is put right by a new process's first sync). Listings come from one remote ``find -printf`` over an exec channel
(nanosecond mtimes, inodes), else from SFTP ``readdir`` (whole-second mtimes). Every mtime is
set on the image as the remote file has it, since the ingest reads times from mtimes.

A first sync (an image without files) comes as remote ``tar`` streams (:data:`STREAMS` at once,
the root's entries dealt among them, each compressed with ``zstd -1`` where both ends have it,
else ``gzip -1``), each read as it arrives (:mod:`edgetui.hosts.stream`) into a local ``tar -x``
that writes the files with the host's nanosecond mtimes (pax headers), while the listing is made:
no file of the image is written, stat'ed or timed in Python on that path. The listing then checks
every file as for any sync (what a stream missed or got at another size is read file by file).
Where it can, the first sync writes into a tmpfs *stage* and the image's top-level entries are
symlinks into it (:mod:`edgetui.hosts.stage`: creating ~20,000 inodes on ext4 was most of a first
sync); :meth:`Mirror.settle` writes it to disk after the runs are recorded, and any later sync
does so first. Without a stage the image is written to disk at the sync's end (``syncfs``: the
ingest's first fsync would otherwise do it).

Only the files the ingest reads are copied (:func:`wanted`: not the submitted archives, a
submission's ``eval.sh`` or ``allowed_files.txt``). Nothing is ever written on the remote host. The image lives under the user cache directory
(``~/.cache/edgetui/hosts/<host>/<remote root, quoted>``): deleting it costs one full read.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat as statmod
import subprocess
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

from edgetui.error_log import note_swallowed
from edgetui.hosts import Entry, Host
from edgetui.hosts import stage as stage_mod

from edgetui.parsers.sforge_dir import FOLDER_FILES
from edgetui.hosts.stream import open_process

import platformdirs

#: bytes re-read before a grown file's recorded end, compared with the image's (a replaced file)
OVERLAP = 64
#: bytes asked for in one read call
CHUNK = 8 << 20
#: remote tar streams of a first sync at once (each one exec channel of the host's budget and one
#: local ``tar -x``: file creation is the first sync's main cost and proceeds in parallel)
STREAMS = 4


@dataclass
class SyncReport:
    """One :meth:`Mirror.sync`: ``files`` seen, ``changed`` (paths relative to the root, POSIX),
    ``bytes_read`` over the network, ``errors`` (one line each, naming the remote path), ``seconds``."""

    files: int = 0
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    bytes_read: int = 0
    errors: list[str] = field(default_factory=list)
    #: one line each for what the listing had that is not a file nor a directory (a FIFO, a socket,
    #: a device, a broken symlink): never opened, not in the image
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: the host's listing was not complete (cut short, a directory unreadable): nothing was removed
    incomplete: bool = False
    #: bytes of the compressed tar streams of a first sync (0 without one)
    bulk_bytes: int = 0
    #: seconds of each phase of a full sync, in order (``settle``: an earlier stage written to disk
    #: first, when there was one; ``listing``: the remote ``find`` done; ``streams``: the tar
    #: streams' wait after it; ``check``: the listing against the image and what it fetched;
    #: ``remove``, ``dir_times``, then ``publish`` (a staged first sync: the links made) or ``flush``)
    phases: dict[str, float] = field(default_factory=dict)


def default_cache(host_name: str, remote_root: str) -> Path:
    """Where the image of ``remote_root`` on ``host_name`` lives (user cache directory)."""

    return (
        Path(platformdirs.user_cache_dir("edgetui"))
        / "hosts"
        / urllib.parse.quote(host_name, safe="")
        / urllib.parse.quote(remote_root.rstrip("/") or "/", safe="")
    )


def _ns(mt: bytes) -> int:
    """``find``'s ``%T@`` (seconds, a dot, up to 10 fraction digits) as integer nanoseconds."""
    sec, _dot, frac = mt.partition(b".")
    if sec.isdigit() and (not frac or frac.isdigit()):
        return int(sec) * 1_000_000_000 + int((frac + b"000000000")[:9])
    return int(Decimal(mt.decode()) * 1_000_000_000)  # a negative time, an odd form


def _find_walk(host, root: str, skipped: list | None = None) -> tuple[dict[str, Entry], bool] | None:
    """Every path under ``root`` (relative, POSIX) from one remote ``find -L -printf``, and whether
    that listing is complete (``find`` exited 0 and its last record is whole: a listing cut short or
    with unreadable parts lists only some of what is there). None when the host cannot run it (no
    exec channel, no GNU find, the channel refused: the caller lists over SFTP). ``skipped``: see
    :func:`_find_entries`."""
    run = getattr(host, "run_kept", None) or getattr(host, "run", None)  # no new session per listing
    if run is None:
        return None
    try:
        status, out, _err = run(["find", "-L", root, "-mindepth", "1", "-printf", r"%y %s %T@ %i %P\0"], timeout=600)
    except OSError:  # the host cannot run find: the caller lists over SFTP
        return None
    if status not in (0, 1) or (status == 1 and not out):  # 1: some entries unreadable, the rest listed
        return None
    whole = not out or out.endswith(b"\0")
    if not whole:  # a record cut short: not a path of the host's
        out = out[: out.rfind(b"\0") + 1]
    return _find_entries(out, "", skipped), status == 0 and whole


#: ``find``'s ``%y`` letters of what is neither a file nor a directory, as said in a note
NOT_REGULAR = {
    "p": "FIFO",
    "s": "socket",
    "c": "character device",
    "b": "block device",
    "l": "broken symlink",
    "D": "door",
}


def _find_entries(out: bytes, base: str, skipped: list | None = None) -> dict[str, Entry]:
    """``find -printf '%y %s %T@ %i <path>\\0'`` records as entries keyed by path relative to
    ``base`` (a path not under it, or a malformed record, is skipped; ``""``: paths are relative already).
    What is neither a file nor a directory (a FIFO: an SFTP open of it blocks the session for good)
    is left out, and ``(relative path, what it is)`` appended to ``skipped``."""
    got: dict[str, Entry] = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        try:
            kind, size, mt, ino, path = rec.split(b" ", 4)
            p = path.decode("utf-8", "surrogateescape")
            if not p.startswith(base):
                continue
            rel_s = p[len(base) :]
            if kind not in (b"d", b"f"):
                if skipped is not None:
                    k = kind.decode("ascii", "replace")
                    skipped.append((rel_s, NOT_REGULAR.get(k, f"type {k}")))
                continue
            got[rel_s] = Entry(posixpath.basename(rel_s), kind == b"d", int(size), _ns(mt), int(ino))
        except (ValueError, ArithmeticError):  # a malformed record: skipped (see the docstring)
            continue
    return got


def _find_paths(host, root: str, rels: list[str], depth0: bool, skipped: list | None = None) -> dict[str, Entry] | None:
    """The entries of ``rels`` (relative to ``root``) from one remote ``find -L`` (``depth0``: the
    paths themselves only, else everything under them too), keyed by path relative to ``root``;
    a path missing there is absent from the result. None when the host cannot run ``find``."""
    run = getattr(host, "run_kept", None) or getattr(host, "run", None)
    if run is None or not rels:
        return None if run is None else {}
    base = root.rstrip("/") + "/"
    argv = ["find", "-L", *[base + r for r in rels]]
    if depth0:
        argv += ["-maxdepth", "0"]
    try:
        status, out, _err = run(argv + ["-printf", r"%y %s %T@ %i %p\0"], timeout=600)
    except OSError:  # the host cannot run find: the caller stats over SFTP
        return None
    if status not in (0, 1) or (out and not out.endswith(b"\0")):  # 1: some paths gone (absent), the rest listed
        return None  # (a record cut short: the answer is not whole)
    return _find_entries(out, base, skipped)


def _list_walk(host: Host, root: str, depth: int = 12) -> tuple[dict[str, Entry], bool]:
    """Every path under ``root`` from SFTP listings, directory by directory, and whether that is
    complete (every directory listed, none deeper than ``depth``). Raises ``OSError`` when ``root``
    itself cannot be listed."""
    got: dict[str, Entry] = {}
    complete = True
    todo = [("", 0)]
    while todo:
        rel, d = todo.pop()
        try:
            entries = host.list(posixpath.join(root, rel) if rel else root)
        except OSError as e:
            if not rel or e.errno in (errno.EHOSTDOWN, errno.ETIMEDOUT):  # (the host gone: no listing at all)
                raise
            complete = False  # (a directory unreadable, gone meanwhile, or the host gone: not listed)
            continue
        for entry in entries:
            r = posixpath.join(rel, entry.name) if rel else entry.name
            got[r] = entry
            if entry.is_dir:
                if d < depth:
                    todo.append((r, d + 1))
                else:
                    complete = False
    return got, complete


#: GNU tar's patterns for most of what :func:`wanted` leaves out (anything else that comes is
#: removed from the image at the end of the sync)
TAR_EXCLUDES = [
    "--exclude=*.tar.gz",
    "--exclude=*.tgz",
    "--exclude=*.tar",
    "--exclude=*.zip",
    "--exclude=*/submissions/*/eval.sh",
    "--exclude=*/submissions/*/allowed_files.txt",
]

#: the remote side of one first-sync stream: ``sh -c SCRIPT edgetui ROOT COMPRESSOR NAME...``. GNU
#: tar, pax format (nanosecond mtimes), symlinks and hard links stored as the files they lead to
#: (as ``find -L`` lists them: the image holds regular files only); its stderr dropped (it is not
#: read: a full stderr would stall the channel). Exit status: the compressor's.
_TAR_SCRIPT = (
    'cd "$1" || exit 2; z=$2; shift 2; '
    'if [ "$z" = zstd ] && command -v zstd >/dev/null 2>&1; then z="zstd -1 -q -c"; else z="gzip -1 -c"; fi; '
    "tar --format=posix --pax-option=delete=atime,delete=ctime --dereference --hard-dereference "
    + " ".join(f"'{x}'" for x in TAR_EXCLUDES)
    + ' -cf - -- "$@" 2>/dev/null | $z'
)
_ZSTD_MAGIC, _GZIP_MAGIC = b"\x28\xb5\x2f\xfd", b"\x1f\x8b"


def _clear(path: str, st: os.stat_result) -> None:
    """Remove what is at ``path`` (a directory with what it holds)."""
    if statmod.S_ISDIR(st.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:  # gone already
            pass


def _flush(path: Path) -> None:
    """Write the file system holding ``path`` to disk (``syncfs``, Linux; elsewhere nothing): after
    a first sync wrote thousands of files, the ingest that reads them next commits with fsync, and
    on ext4 (``data=ordered``) that commit would first write all of them out, inside the ingest."""
    try:
        # lazy: a libc call made through ctypes only on this path (Linux), not at import
        import ctypes

        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # no libc syncfs (not Linux): nothing to write out
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # the folder went meanwhile: nothing to write out
        return
    try:
        syncfs(fd)
    finally:
        os.close(fd)


def _has_files(root: str) -> bool:
    """Does the directory ``root`` hold any file (at any depth)?"""
    for _dp, _dn, files in os.walk(root):
        if files:
            return True
    return False


_FOLDER_FILES: frozenset | None = None


def wanted(rel: str) -> bool:
    """Is the file ``rel`` (relative to a runs root) one the ingest or the tailer reads? In a
    submission folder only :data:`~edgetui.parsers.sforge_dir.FOLDER_FILES` are (not the
    submitted ``submission.tar.gz``, ``eval.sh``, ``allowed_files.txt``); archives are read
    nowhere. Everything else is kept: the image is then what the ingest would read locally."""
    global _FOLDER_FILES
    if _FOLDER_FILES is None:
        _FOLDER_FILES = frozenset(FOLDER_FILES)
    parts = rel.split("/")
    name = parts[-1]
    if name.endswith((".tar.gz", ".tgz", ".tar", ".zip")):
        return False
    if len(parts) >= 3 and parts[-3] == "submissions":
        return name in _FOLDER_FILES
    return True


def walk(host: Host, root: str, skipped: list | None = None) -> dict[str, Entry]:
    """Every file and directory under ``root`` on ``host`` (relative POSIX path -> Entry). Raises
    ``OSError`` when ``root`` is not a directory there. ``skipped``: see :func:`_find_entries`."""
    return listing(host, root, skipped)[0]


def listing(host: Host, root: str, skipped: list | None = None) -> tuple[dict[str, Entry], bool]:
    """:func:`walk`, and whether the listing is complete: the only kind a removal is believed from
    (docs/remote-hosts.md, "What is believed deleted"). Raises ``OSError`` when ``root`` is not a
    directory there or the host stops answering."""
    top = host.stat(root)
    if top is None or not top.is_dir:
        raise OSError(2, "no such directory", root)
    found = _find_walk(host, root, skipped)
    return found if found is not None else _list_walk(host, root)


def _image_bytes(entries: dict[str, Entry]) -> int:
    """What the files and directories of a listing take in an image (bytes, with
    :data:`edgetui.hosts.stage.ENTRY_OVERHEAD` each)."""
    return sum(max(e.size, 0) for e in entries.values() if not e.is_dir) + len(entries) * stage_mod.ENTRY_OVERHEAD


class _NoFile:
    """No file (a context manager standing for the local copy when there is none to compare)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


class Mirror:
    """The image of ``remote_root`` on ``host`` under ``local_root`` (see the module)."""

    def __init__(self, host: Host, remote_root: str, local_root: Path | None = None, *, use_stage: bool = True):
        self.host, self.remote_root = host, remote_root.rstrip("/") or "/"
        self.local_root = Path(local_root) if local_root else default_cache(host.name, self.remote_root)

        #: the directory syncs write into: ``local_root``, or a first sync's stage (:mod:`.stage`)
        self._root = self.local_root
        #: a first sync's stage not written to disk yet (:meth:`settle`), else None
        self.stage: Path | None = None
        #: stage a first sync in tmpfs when it can (:mod:`edgetui.hosts.stage`)
        self.use_stage = use_stage
        #: totals over every sync
        self.bytes_read = 0
        #: what this process's last full sync found the image to hold, as the host listed it: path ->
        #: Entry for every directory and file whose image matched the listing (size and mtime), and
        #: ``_listed``: every path that listing had (the image holds no other, :meth:`_remove_gone`).
        #: A later sync trusts an entry the host lists unchanged without a local ``lstat`` and looks
        #: for removals among the listed paths only, not by a walk of the image: the image is
        #: written by this object alone. None: not known (no full sync yet, or one that failed).
        self._verified: dict[str, Entry] | None = None
        self._listed: set[str] | None = None
        self._said_skipped: set[tuple[str, str]] = set()  # (relative path, what) said in a SyncReport
        #: a sync while ``catching_up`` (set by its feed: the host was not followed for a while) notes,
        #: before writing, the size each file it brings up to date will have: image path -> bytes
        #: written on the host while nothing followed it, which the live tailer then times as the
        #: offline ingest does, not by their arrival (``Tailer.catchup_marks``; None: not noted)
        self.catchup_marks: dict[str, int] | None = None
        self.catching_up = False
        #: seconds of the last :meth:`settle`'s steps: ``copy`` (the stage written beside the links
        #: and swapped in, the stage freed) and ``syncfs`` (the image's file system written out)
        self.settle_phases: dict[str, float] = {}

    def sync(self, only: set[str] | None = None) -> SyncReport:
        """Bring the image up to date (``only``: relative paths of files known changed, to skip
        the walk). An image without files yet is filled by tar streams while the root is listed
        (see the module), staged in tmpfs when it can be (:mod:`edgetui.hosts.stage`: the image's
        top-level entries are then symlinks into the stage until :meth:`settle`, which any later
        sync does first). Errors of single files are listed, not raised; raises ``OSError`` when the
        root cannot be listed (the host down, the root gone)."""
        t0 = time.monotonic()
        rep = SyncReport()
        self.local_root.mkdir(parents=True, exist_ok=True)
        known, listed = (self._verified, self._listed) if only is None else (None, None)
        self._verified = self._listed = None  # (until this sync ends well)
        if self.settle() is not None:
            rep.phases["settle"] = time.monotonic() - t0
        first = only is None and not _has_files(str(self.local_root))
        base = stage_mod.base_dir() if first and self.use_stage else None
        if base is not None:
            try:
                self.stage = self._root = stage_mod.make(base, self.local_root)
            except OSError:
                base = None
        streams = self._start_streams() if first else None
        if streams is None and self.stage is not None:  # nothing streams: no stage either
            self._drop_stage()
        ph, tp = rep.phases, time.monotonic()

        def mark(name: str) -> None:
            nonlocal tp
            now = time.monotonic()
            ph[name] = now - tp
            tp = now

        try:
            try:
                odd: list = []
                if only is None:
                    entries, complete = listing(self.host, self.remote_root, odd)
                else:
                    entries, complete = self._stat_only(only), False
                self._say_skipped(odd, rep)
            except BaseException:
                if streams is not None:
                    self._finish_streams(streams, stop=True)
                self._drop_stage()
                raise
            mark("listing")
            entries = {rel: e for rel, e in entries.items() if e.is_dir or wanted(rel)}
            if self.stage is not None and base is not None and _image_bytes(entries) > stage_mod.budget(base):
                # larger than the stage may hold: straight to disk (the streams started again there)
                if streams is not None:  # (a stage is kept only with streams)
                    self._finish_streams(streams, stop=True)
                self._drop_stage()
                streams = self._start_streams()
            if streams is not None:
                rep.bulk_bytes = self._finish_streams(streams)
            mark("streams")
            verified = self._apply(entries, rep, streamed=streams is not None, known=known)
            mark("check")
            if complete:
                rep.removed = self._remove_gone(entries, listed)
            elif only is None:
                rep.incomplete = True
                rep.errors.append(
                    f"{self.host.name}:{self.remote_root}: the host's listing was incomplete "
                    "(a directory unreadable, or the answer cut short): nothing removed"
                )
            mark("remove")
            self._dir_times(entries, known, rep)
            mark("dir_times")
            if self.stage is not None:
                stage_mod.publish(self.stage, self.local_root)  # (no flush: the stage is in memory)
                mark("publish")
            else:
                if streams is not None:
                    _flush(self.local_root)
                mark("flush")
        except BaseException:
            self._drop_stage()
            raise
        finally:
            self._root = self.local_root
        if complete:
            self._verified, self._listed = verified, set(entries)
        elif only is None and listed is not None:
            # what this listing missed may still be there: kept among the paths a later complete
            # listing looks for removals in
            self._verified, self._listed = verified, listed | set(entries)
        self.bytes_read += rep.bytes_read
        rep.seconds = time.monotonic() - t0
        return rep

    @property
    def staged(self) -> bool:
        """Is the image (its top-level entries) still in a tmpfs stage, not written to disk yet?"""
        return self.stage is not None

    def settle(self) -> float | None:
        """Write a staged image to disk (:func:`edgetui.hosts.stage.settle`: the symlinks swapped for
        copies of what they lead to, then the stage freed, then the disk written out with
        ``syncfs``); also a stage left by another process, and dangling links (a stage lost with a
        reboot) removed. The seconds it took, or None when there was nothing to settle (the cost:
        one listing of the image's top level). Raises ``OSError``."""
        if self.stage is None and not stage_mod.staged_links(self.local_root):
            return None
        t0 = time.monotonic()
        stage, self.stage = self.stage, None
        written = stage_mod.settle(self.local_root, stage)
        t1 = time.monotonic()
        if written:
            _flush(self.local_root)
        self.settle_phases = {"copy": t1 - t0, "syncfs": time.monotonic() - t1}
        return time.monotonic() - t0

    def _drop_stage(self) -> None:
        """Forget and remove this sync's stage (nothing published from it yet)."""
        if self.stage is not None:
            stage_mod.remove(self.stage)
        self.stage, self._root = None, self.local_root

    def sync_changed(self, rels: set[str], recurse: set[str] | None = None) -> SyncReport | None:
        """Bring only the paths ``rels`` (relative to the root, POSIX: what the host's inotifywait
        reported) up to date, at a cost in proportion to them: one remote ``find -maxdepth 0``
        stats those paths and their parent directories; a directory in ``recurse`` (created or
        moved in: its files may predate the host's watch on it) or new to the image is listed
        whole with a second ``find``; then only grown files' new bytes and new files are read (as
        :meth:`sync`). A path the host no longer has is removed from the image. None when the host
        cannot run ``find`` (the caller then syncs in full); raises ``OSError`` as :meth:`sync`."""
        t0 = time.monotonic()
        rep = SyncReport()
        clean = set()
        for rel in rels:
            rel = posixpath.normpath(rel.strip("/")) if rel.strip("/") else ""
            if rel and rel != "." and not rel.startswith("../") and rel != "..":
                clean.add(rel)
        if not clean:
            rep.seconds = time.monotonic() - t0
            return rep
        asked = set(clean)
        for rel in clean:
            parent = posixpath.dirname(rel)
            while parent:
                asked.add(parent)
                parent = posixpath.dirname(parent)
        odd: list = []
        entries = _find_paths(self.host, self.remote_root, sorted(asked), depth0=True, skipped=odd)
        if entries is None:
            return None
        deep = [
            rel
            for rel in clean
            if rel in entries
            and entries[rel].is_dir
            and (rel in (recurse or ()) or not (self.local_root / rel).is_dir())
        ]
        if deep:
            more = _find_paths(self.host, self.remote_root, sorted(deep), depth0=False, skipped=odd)
            if more is None:
                return None
            entries.update(more)
        self._say_skipped(odd, rep)
        gone = self._confirmed_gone([rel for rel in clean if rel not in entries])
        entries = {rel: e for rel, e in entries.items() if e.is_dir or wanted(rel)}
        self.local_root.mkdir(parents=True, exist_ok=True)
        known, listed = self._verified, self._listed
        self._verified = self._listed = None  # (until this sync ends well)
        verified = self._apply(entries, rep, known=known)
        for rel in sorted(gone):
            local = self.local_root / rel
            if local.is_dir() and not local.is_symlink():
                rep.removed += [p.relative_to(self.local_root).as_posix() for p in local.rglob("*") if p.is_file()]
                shutil.rmtree(local, ignore_errors=True)
            elif local.exists() or local.is_symlink():
                local.unlink(missing_ok=True)
                rep.removed.append(rel)
        self._dir_times(entries, known, rep)
        if known is not None and listed is not None:
            # this sync's paths now as it found them; what is gone (and under it) forgotten
            for rel in entries:
                known.pop(rel, None)
            known.update(verified)
            listed.update(entries)
            if gone:
                prefixes, gone_set = tuple(g + "/" for g in gone), set(gone)
                drop = {p for p in listed if p in gone_set or p.startswith(prefixes)}
                listed -= drop
                for p in drop:
                    known.pop(p, None)
            self._verified, self._listed = known, listed
        self.bytes_read += rep.bytes_read
        rep.seconds = time.monotonic() - t0
        return rep

    def _confirmed_gone(self, rels: list[str]) -> list[str]:
        """Those of ``rels`` (missing from a ``find`` of the reported paths) that the host says are
        gone: its SFTP listing of the parent directory lacks the name (or the parent is gone, and
        so on up; never the root). A ``find`` that failed to stat a path (an unreadable directory,
        a host half-answering) is no proof of a deletion. Raises ``OSError`` when a listing fails
        otherwise (the caller then lists the root in full)."""
        names: dict[str, set[str] | None] = {}

        def listed(d: str) -> set[str] | None:
            if d not in names:
                try:
                    names[d] = {
                        e.name for e in self.host.list(posixpath.join(self.remote_root, d) if d else self.remote_root)
                    }
                except OSError as e:
                    if e.errno != errno.ENOENT or not d:
                        raise
                    names[d] = None
            return names[d]

        def gone(rel: str) -> bool:
            parent = posixpath.dirname(rel)
            have = listed(parent)
            if have is None:
                return gone(parent)
            return posixpath.basename(rel) not in have

        return [rel for rel in rels if gone(rel)]

    def _say_skipped(self, odd: list, rep: SyncReport) -> None:
        """A note in ``rep.skipped`` for each ``(relative path, what)`` the listing left out, once
        per path and kind for this mirror (a watch syncs again and again)."""
        said = self._said_skipped
        for rel, what in odd:
            if (rel, what) not in said:
                said.add((rel, what))
                rep.skipped.append(
                    f"{self.host.name}:{posixpath.join(self.remote_root, rel)}: skipped, not a regular file ({what})"
                )

    def _apply(
        self, entries: dict[str, Entry], rep: SyncReport, streamed: bool = False, known: dict[str, Entry] | None = None
    ) -> dict[str, Entry]:
        """Directories made, new files and grown tails read many at a time, then every listed file
        that differs from its image brought up to date. ``streamed``: the image was empty before
        this sync's tar streams, so every file found in it came with them (counted as read and
        changed; kept when its size and mtime are the listing's, or when it is larger, i.e. read
        after the listing: the next sync continues it). ``known``: entries an earlier sync found
        the image to match (``_verified``); one listed the same again is taken as matching without
        an ``lstat``. Returns the entries found matching the image (for ``_verified``); a file this
        call wrote is not among them (the next sync checks it)."""
        root = str(self._root)
        have: dict[str, os.stat_result | None] = {}
        verified: dict[str, Entry] = {}
        if known:
            for rel, e in entries.items():
                if known.get(rel) == e:
                    verified[rel] = e
                    if not e.is_dir and e.size >= 0:
                        rep.files += 1
        for rel, e in entries.items():
            if rel in verified:
                continue
            try:
                st = os.lstat(f"{root}/{rel}")
            except OSError:
                st = None
            if st is not None and (
                statmod.S_ISDIR(st.st_mode) != e.is_dir or not (e.is_dir or statmod.S_ISREG(st.st_mode))
            ):
                _clear(f"{root}/{rel}", st)  # a file where the host has a directory, a symlink...
                st = None
            have[rel] = st
        for rel in sorted(r for r, e in entries.items() if e.is_dir and r in have and have[r] is None):
            os.makedirs(f"{root}/{rel}", exist_ok=True)
        todo = {}
        for rel, e in entries.items():
            if rel not in have:
                continue  # (verified)
            if e.is_dir:
                if have[rel] is not None:
                    verified[rel] = e  # (its time: _dir_times)
                continue
            if e.size < 0:
                continue
            rep.files += 1
            st = have[rel]
            if st is not None and streamed:
                rep.changed.append(rel)
                rep.bytes_read += st.st_size
                if st.st_size == e.size and st.st_mtime_ns == e.mtime_ns:
                    verified[rel] = e
                    continue
                if st.st_size > e.size:
                    continue
            elif st is not None and st.st_size == e.size and st.st_mtime_ns == e.mtime_ns:
                verified[rel] = e
                continue
            todo[rel] = e
        if not todo:
            return verified
        if self.catching_up and self.catchup_marks is not None:
            for rel, e in todo.items():
                self.catchup_marks[str(self.local_root / rel)] = e.size
        done = self._fetch_new(todo, have, rep)
        tails = self._fetch_tails(todo, have)
        for rel in sorted(todo):
            if rel in done:
                continue
            e = todo[rel]
            try:
                n = self._sync_file(rel, e, self._root / rel, tails.get(rel))
            except OSError as err:
                rep.errors.append(f"{self.host.name}:{posixpath.join(self.remote_root, rel)}: {err.strerror or err}")
                continue
            if n is not None:
                if not (streamed and have[rel] is not None):
                    rep.changed.append(rel)
                rep.bytes_read += n
        return verified

    def _dir_times(
        self, entries: dict[str, Entry], known: dict[str, Entry] | None = None, rep: SyncReport | None = None
    ) -> None:
        """Directories' mtimes as the host has them, last (writing files into them moved them); only
        where they differ (setting a time writes the directory's inode). A directory listed as
        ``known`` has it (``known``: see :meth:`_apply`), unless this sync (``rep``) wrote or removed
        something in it."""
        root = str(self._root)
        touched: set[str] = set()
        if known and rep is not None:
            new_dirs = [rel for rel, e in entries.items() if e.is_dir and known.get(rel) != e]
            for rel in (*rep.changed, *rep.removed, *new_dirs):
                d = posixpath.dirname(rel)
                while d and d not in touched:
                    touched.add(d)
                    d = posixpath.dirname(d)
        for rel, e in entries.items():
            if e.is_dir and e.mtime_ns and not (known and known.get(rel) == e and rel not in touched):
                p = f"{root}/{rel}"
                try:
                    if os.stat(p).st_mtime_ns != e.mtime_ns:
                        os.utime(p, ns=(e.mtime_ns, e.mtime_ns))
                except OSError:
                    note_swallowed("a directory's time not set (gone since the listing?)")

    def _start_streams(self) -> list | None:
        """Start the first sync's tar streams (see the module): the root's entries (one SFTP
        ``readdir``) dealt among :data:`STREAMS` remote ``tar``s, each read in a thread into a
        local ``tar -x`` under the image. None when the host cannot stream (no exec channel) or
        this machine has no ``tar``: the files then come one by one."""

        tar = shutil.which("tar")
        if tar is None or getattr(self.host, "call", None) is None:  # (an SshHost: it has exec channels)
            return None
        try:
            names = sorted(e.name for e in self.host.list(self.remote_root))
        except OSError:  # the root unlisted: the files come one by one (whose errors are said)
            return None
        if not names:
            return None
        zstd = shutil.which("zstd") is not None
        groups = [g for g in (names[i::STREAMS] for i in range(STREAMS)) if g]
        if sum(len(n) + 3 for n in names) > 64_000:  # a command line too long for some servers
            groups = [["."]]
        out = []
        for group in groups:
            box: dict = {"bytes": 0}
            try:
                proc = open_process(
                    self.host,
                    ["sh", "-c", _TAR_SCRIPT, "edgetui", self.remote_root, "zstd" if zstd else "gzip", *group],
                )
            except OSError:
                note_swallowed("a first-sync stream not started: its files come one by one")
                break
            t = threading.Thread(target=self._pump, args=(proc, tar, box), name="edgetui-first-sync", daemon=True)
            t.start()
            out.append((t, box))
        return out or None

    def _pump(self, proc, tar: str, box: dict) -> None:
        """One stream: its bytes into a local ``tar -x`` (GNU tar or bsdtar; no owners restored)
        as they come; ``box["bytes"]``: the compressed bytes read. Any failure ends it quietly (the
        listing's check then reads what is missing)."""
        local = None
        try:
            data = proc.read(1 << 20)
            if data.startswith(_ZSTD_MAGIC):
                how = ["--use-compress-program=zstd"]
            elif data.startswith(_GZIP_MAGIC):
                how = ["-z"]
            else:
                return
            local = subprocess.Popen(
                [tar, "-x", "-f", "-", "-C", str(self._root), "--no-same-owner", *how],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            pipe = local.stdin
            assert pipe is not None  # (stdin=PIPE)
            while data and not box.get("stop"):
                box["bytes"] += len(data)
                pipe.write(data)
                data = proc.read(1 << 20)
            if box.get("stop"):
                proc.close()
        except (OSError, ValueError):
            note_swallowed("a first-sync stream failed: the listing's check reads what is missing")
        finally:
            if local is not None:
                try:
                    if local.stdin is not None:  # (stdin=PIPE: always)
                        local.stdin.close()
                except OSError:  # tar ended already (a broken pipe): it is waited for below
                    pass
                local.wait()
            try:
                proc.wait(timeout=10)
            except OSError:
                proc.close()

    @staticmethod
    def _finish_streams(streams: list, stop: bool = False) -> int:
        """Wait for the streams (``stop``: end them first, each at its next chunk); the compressed
        bytes they read."""
        for _t, box in streams:
            box["stop"] = stop
        for t, _box in streams:
            t.join()
        return sum(box["bytes"] for _t, box in streams)

    def _fetch_new(self, todo: dict[str, Entry], have: dict, rep: SyncReport) -> set[str]:
        """Files of ``todo`` without an image yet, read many at a time (``read_files`` of an SSH host)
        and written; the set of those done."""
        read_files = getattr(self.host, "read_files", None)
        done: set[str] = set()
        if read_files is None:
            return done
        new = [rel for rel, e in todo.items() if 0 <= e.size <= CHUNK and have.get(rel) is None]
        for i in range(0, len(new), 256):
            batch = new[i : i + 256]
            got = read_files([(posixpath.join(self.remote_root, r), todo[r].size) for r in batch])
            for rel, data in zip(batch, got):
                if isinstance(data, BaseException):
                    continue  # _sync_file tries again and says why
                e = todo[rel]
                local = self._root / rel
                local.parent.mkdir(parents=True, exist_ok=True)
                tmp = local.with_name(f".{local.name}.edgetui-part")
                with open(tmp, "wb") as f:
                    f.write(data)
                # the listed size is read: a file grown since is continued from there by the next
                # sync; a shorter read (shrunk since) leaves mtime 0, so the next sync reads it again
                mt = e.mtime_ns if len(data) == e.size else 0
                os.utime(tmp, ns=(mt, mt))
                os.replace(tmp, local)
                rep.bytes_read += len(data)
                rep.changed.append(rel)
                done.add(rel)
        return done

    def _fetch_tails(self, todo: dict[str, Entry], have: dict) -> dict[str, bytes]:
        """The new bytes (and the overlap before them) of every file of ``todo`` grown since its
        image, read in one call (``read_files`` of an SSH host: all of them in flight at once, not
        one round trip after another); :meth:`_sync_file` uses them instead of reading. {} without
        ``read_files``."""
        read_files = getattr(self.host, "read_files", None)
        if read_files is None:
            return {}
        want = []
        for rel, e in todo.items():
            st = have.get(rel)
            if st is not None and 0 < st.st_size < e.size and e.size - st.st_size <= CHUNK:
                start = max(0, st.st_size - OVERLAP)
                want.append((rel, start, e.size - start, e.inode))
        if not want:
            return {}
        # with the listed inode: the host may keep the handle open for the next tail (read_files)
        got = read_files([(posixpath.join(self.remote_root, rel), start, n, ino) for rel, start, n, ino in want])
        return {rel: data for (rel, _s, _n, _i), data in zip(want, got) if isinstance(data, bytes)}

    def _stat_only(self, rels: set[str]) -> dict[str, Entry]:
        out = {}
        for rel in rels:
            e = self.host.stat(posixpath.join(self.remote_root, rel))
            if e is not None:
                out[rel] = e
        return out

    def _sync_file(self, rel: str, e: Entry, local: Path, tail: bytes | None = None) -> int | None:
        """Bring one file up to date; the bytes read, or None when it was unchanged. ``tail``: the
        bytes from ``max(0, image size - OVERLAP)`` already read (:meth:`_fetch_tails`)."""
        remote = posixpath.join(self.remote_root, rel)
        try:
            st = local.stat()
        except FileNotFoundError:
            st = None
        if st is not None and st.st_size == e.size and st.st_mtime_ns == e.mtime_ns:
            return None
        if st is not None and 0 < st.st_size < e.size:  # grown: the new bytes, if the old are unchanged
            start = max(0, st.st_size - OVERLAP)
            head = tail if tail is not None else self.host.read_at(remote, start, min(CHUNK, e.size - start))
            with open(local, "r+b") as f:
                f.seek(start)
                if f.read(st.st_size - start) == head[: st.st_size - start]:
                    f.seek(st.st_size)
                    f.write(head[st.st_size - start :])
                    n, pos = len(head), start + len(head)
                    while pos < e.size:
                        more = self.host.read_at(remote, pos, min(CHUNK, e.size - pos))
                        if not more:
                            break
                        f.write(more)
                        n += len(more)
                        pos += len(more)
                    f.flush()
                    os.utime(local, ns=(e.mtime_ns, e.mtime_ns))
                    return n
        # the whole file, a CHUNK at a time into a copy beside (memory: one CHUNK whatever its size);
        # same size, other mtime (a touch or a rewrite in place): compared as it comes, kept if equal
        same = st is not None and st.st_size == e.size and e.size > 0
        local.parent.mkdir(parents=True, exist_ok=True)
        tmp = local.with_name(f".{local.name}.edgetui-part")
        try:
            with open(tmp, "wb") as f, open(local, "rb") if same else _NoFile() as old:
                n = 0
                for chunk in self._read_chunks(remote, e.size):
                    f.write(chunk)
                    n += len(chunk)
                    if same and old.read(len(chunk)) != chunk:
                        same = False
                if same and old.read(1):
                    same = False
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        if same and n == e.size:
            tmp.unlink()
            os.utime(local, ns=(e.mtime_ns, e.mtime_ns))
            return n
        os.utime(tmp, ns=(e.mtime_ns, e.mtime_ns))
        os.replace(tmp, local)  # a new inode: the tailer sees a new generation
        return n

    def _read_chunks(self, remote: str, size: int):
        """The bytes of ``remote`` from its start, :data:`CHUNK` at a time (to its end: a file grown
        since its listing is read on; one shorter ends early)."""
        pos = 0
        while True:
            chunk = self.host.read_at(remote, pos, CHUNK if size <= 0 else min(CHUNK, max(size - pos, 1)))
            if not chunk:
                break
            yield chunk
            pos += len(chunk)
            if pos >= size and len(chunk) < CHUNK:
                break

    def _remove_gone(self, entries: dict[str, Entry], listed: set[str] | None = None) -> list[str]:
        """Files of the image the listing does not have (gone on the host, or not :func:`wanted`)
        removed, and directories emptied by that; the removed files' paths. ``listed``: every path
        the image can hold (the last full sync's listing, kept up to date since: ``_listed``), so
        only those not listed now are looked at, without a walk of the image."""
        gone: list[str] = []
        if listed is not None:
            root = str(self._root)
            for rel in sorted(listed.difference(entries), key=lambda r: -r.count("/")):  # deepest first
                p = f"{root}/{rel}"
                try:
                    st = os.lstat(p)
                except OSError:  # gone already: nothing to remove
                    continue
                if statmod.S_ISDIR(st.st_mode):
                    for q in Path(p).rglob("*"):
                        if not q.is_dir():
                            gone.append(f"{rel}/{q.relative_to(p).as_posix()}")
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)
                    gone.append(rel)
            return sorted(gone)

        def visit(d: str, prefix: str) -> None:
            try:
                with os.scandir(d) as it:
                    items = list(it)
            except OSError:  # the directory went meanwhile: nothing in it to remove
                return
            for x in items:
                rel = prefix + x.name
                if x.is_dir(follow_symlinks=False):
                    visit(x.path, rel + "/")
                    if rel not in entries:
                        try:
                            os.rmdir(x.path)
                        except OSError:  # not empty (it holds listed files) or gone: kept
                            pass
                elif rel not in entries:
                    try:
                        os.unlink(x.path)
                    except FileNotFoundError:  # gone already
                        pass
                    gone.append(rel)

        visit(str(self._root), "")
        return sorted(gone)
