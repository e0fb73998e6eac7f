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
from typing import Optional

from . import Host, join

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
        """The ``source_cursors`` row (as :meth:`edgetui.recorder.Recorder.set_cursor` keywords)."""
        return dict(path=task_dir, generation=self.digest, offset=self.n_entries, state=None, size=self.n_bytes,
                    mtime=self.newest_mtime or 0.0, inode=0, done=True)


def tree_signature(host: Host, task_dir: str, salt: str = "") -> Optional[TreeSignature]:
    """The signature of ``task_dir`` on ``host`` (see the module), with ``salt`` (what else the
    ingest's result depends on: task settings, flags) mixed in; None when the directory cannot be
    listed (the ingest then says why)."""
    try:
        top = host.list(task_dir)
    except OSError:
        return None
    parts: list = [salt]
    n_bytes, newest = 0, 0
    top.sort()
    for e in top:
        if e.is_dir:
            if e.name != "submissions":
                parts.append(e.name + "/")
                continue
            parts.append(e)
            sub = join(task_dir, "submissions")
            try:
                rounds = host.list(sub)
            except OSError:
                continue
            rounds.sort()
            for r in rounds:
                if not r.is_dir:
                    parts.append(r)
                    continue
                parts.append(r.name + "/")
                try:
                    files = host.list(join(sub, r.name))
                except OSError:
                    parts.append("?")
                    continue
                files.sort()
                for f in files:
                    parts.append(f if not f.is_dir else f.name + "/")
                    if not f.is_dir:
                        n_bytes += max(f.size, 0)
                        newest = max(newest, f.mtime_ns)
            continue
        parts.append(e)
        n_bytes += max(e.size, 0)
        newest = max(newest, e.mtime_ns)
    cfg = host.stat(join(task_dir.rstrip("/").rsplit("/", 1)[0] or "/", "run_config.json"))
    parts.append(cfg)
    digest = hashlib.blake2b(repr(parts).encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return TreeSignature(digest, len(parts) - 2, n_bytes, newest / 1e9 if newest else None)
