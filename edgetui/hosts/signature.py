"""Has a run's directory changed since it was recorded? Told from stats, never from contents.

A run's *tree signature* is a digest of what a listing shows of the files the ingest reads:
for every file of the task directory, of each ``submissions/<round>/`` folder and the run
dir's ``run_config.json``: its name, size, ``mtime_ns`` and inode; for every other
directory, its name only (the *listing signature* of ``submissions/`` is the set of its
folders and their files' stats). Any write, append, rename-replace, new or deleted file
changes it; reading nothing but directory listings costs a fraction of what SForge's own
scanner spends opening each submission's report.json.

A copy made with its mtimes kept (``cp -a``, ``rsync -a``) onto files of another
inode changes the signature too; a copy *over* recorded files keeping size, mtime and inode
cannot be told: ``edgetui ingest --full`` re-reads everything.

All stats go through a :class:`~edgetui.hosts.Host`, so a remote host is checked with the same
code (its listings over SFTP).
"""

from __future__ import annotations

import hashlib
import os
from typing import Iterable, Optional

from edgetui.hosts import HostListing, join

from edgetui.hosts.local import LocalHost

#: source name of the row in ``source_cursors`` holding a run's tree signature (``generation`` =
#: the digest, ``offset`` = number of entries, ``size`` = their bytes, ``mtime`` = the newest
#: mtime in epoch seconds UTC); not a file: no event ever has this source
TREE_SOURCE = "<tree>"


class TreeSignature:
    """``digest`` (32 hex), ``n_entries``, ``n_bytes`` (sum of file sizes), ``newest_mtime``
    (epoch seconds UTC, None without files) of one task directory."""

    __slots__ = ("digest", "n_entries", "n_bytes", "newest_mtime")

    def __init__(self, digest: str, n_entries: int, n_bytes: int, newest_mtime: Optional[float]):
        self.digest, self.n_entries, self.n_bytes, self.newest_mtime = digest, n_entries, n_bytes, newest_mtime

    def cursor(self, task_dir: str) -> dict:
        """The ``source_cursors`` row (as :meth:`edgetui.record.recorder.Recorder.set_cursor` keywords)."""
        return dict(
            path=task_dir,
            generation=self.digest,
            offset=self.n_entries,
            state=None,
            size=self.n_bytes,
            mtime=self.newest_mtime or 0.0,
            inode=0,
            done=True,
        )


def _entry_repr(e) -> str:
    """``repr(Entry(...))`` of an entry tuple (name, is_dir, size, mtime_ns, inode), built directly."""
    return f"Entry(name={e[0]!r}, is_dir={e[1]!r}, size={e[2]!r}, mtime_ns={e[3]!r}, inode={e[4]!r})"


def _local_list(path: str) -> list[tuple]:
    """:meth:`edgetui.hosts.local.LocalHost.list` as plain tuples (the same values, a third of the cost)."""
    out = []
    with os.scandir(path) as it:
        for e in it:
            try:
                st = e.stat()
            except OSError:
                out.append((e.name, False, -1, 0, 0))
                continue
            out.append((e.name, (st.st_mode & 0o170000) == 0o040000, st.st_size, st.st_mtime_ns, st.st_ino))
    return out


def image_prefixes(roots: Iterable[str | os.PathLike]) -> tuple[str, ...]:
    """The local directories holding images of remote runs roots (each
    :class:`edgetui.hosts.mirror.Mirror`'s ``local_root``), as the prefixes :func:`in_image` takes."""
    return tuple(sorted({os.path.abspath(r).rstrip("/") + "/" for r in roots}))


def in_image(task_dir: str | os.PathLike, prefixes: tuple[str, ...]) -> bool:
    """Is ``task_dir`` inside one of the images (:func:`image_prefixes`)?"""
    return bool(prefixes) and os.path.abspath(task_dir).startswith(prefixes)


def tree_signature(host: HostListing, task_dir: str, salt: str = "", image: bool = False) -> Optional[TreeSignature]:
    """The signature of ``task_dir`` on ``host`` (see the module), with ``salt`` (what else the
    ingest's result depends on: task settings, flags) mixed in; None when the directory cannot be
    listed (the ingest then says why). The digest is of ``repr`` of the list of parts (the salt,
    each entry as :class:`~edgetui.hosts.Entry`, or ``name/`` for a directory that is not read), the
    run dir's ``run_config.json`` entry last; the local host's listings skip building the entries
    (:func:`_local_list`; the same digest, tested).

    With ``image`` (``task_dir`` is in the image of a remote root: :func:`in_image`, which the
    caller that knows the images asks; never a process-wide list) every inode, and every directory's
    size (the file system's, not the host's: a tmpfs says 1000 where ext4 says 4096), counts as 0: only
    :class:`~edgetui.hosts.mirror.Mirror` writes there, always with the host's size and mtime, and
    it moves a staged image to disk (new inodes, the same files: :mod:`edgetui.hosts.stage`)."""

    lister = _local_list if type(host) is LocalHost else host.list
    if image:
        base_lister = lister

        def lister(path: str) -> list[tuple]:
            return [(e[0], e[1], 0 if e[1] else e[2], e[3], 0) for e in base_lister(path)]

    try:
        top = lister(task_dir)
    except OSError:
        return None
    parts: list[str] = [repr(salt)]
    add = parts.append
    n_bytes, newest = 0, 0
    top.sort()
    for e in top:
        if e[1]:
            if e[0] != "submissions":
                add(repr(e[0] + "/"))
                continue
            add(_entry_repr(e))
            sub = join(task_dir, "submissions")
            try:
                rounds = lister(sub)
            except OSError:
                continue
            rounds.sort()
            for r in rounds:
                if not r[1]:
                    add(_entry_repr(r))
                    continue
                add(repr(r[0] + "/"))
                try:
                    files = lister(join(sub, r[0]))
                except OSError:
                    add("'?'")
                    continue
                files.sort()
                for f in files:
                    if f[1]:
                        add(repr(f[0] + "/"))
                    else:
                        add(_entry_repr(f))
                        if f[2] > 0:
                            n_bytes += f[2]
                        if f[3] > newest:
                            newest = f[3]
            continue
        add(_entry_repr(e))
        n_bytes += max(e[2], 0)
        newest = max(newest, e[3])
    cfg = host.stat(join(task_dir.rstrip("/").rsplit("/", 1)[0] or "/", "run_config.json"))
    if image and cfg is not None:
        cfg = cfg._replace(inode=0)
    add(repr(cfg))
    text = "[" + ", ".join(parts) + "]"
    digest = hashlib.blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return TreeSignature(digest, len(parts) - 2, n_bytes, newest / 1e9 if newest else None)
