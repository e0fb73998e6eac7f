"""Hosts: where runs live, and what edgetui needs from one (files, changes, containers).

A *host* is this machine (:class:`~edgetui.hosts.local.LocalHost`) or a machine reached over one
SSH connection (:mod:`edgetui.hosts.ssh`, its SFTP reads, kept shell and port forwards, the
mirror of its runs roots); container engines are watched here too (local Docker, a remote engine
through its forwarded socket or CLI). Code that looks at run files through a :class:`Host` works
for both: change detection (:mod:`edgetui.hosts.signature`) is the first such code.

Paths are POSIX strings on the host (``str``, not :class:`pathlib.Path`: a remote path means
nothing to this machine's file system). Errors are ``OSError`` (its ``errno`` and ``filename``
set), as the local calls raise them.

May import :mod:`edgetui.parsers`, :mod:`edgetui.replay` and the base modules of ``edgetui``;
nothing above (no store, record, live or views).
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Optional, Protocol, runtime_checkable

import posixpath


class Entry(NamedTuple):
    """One directory entry with its stat: ``size`` in bytes, ``mtime_ns`` (nanoseconds since the
    epoch, UTC), ``inode`` (0 where the host has none). ``is_dir`` follows symlinks, as
    ``os.scandir``'s ``is_dir()``. An entry whose stat failed (a dangling symlink, a file deleted
    between the listing and its stat) has ``size = -1`` and ``mtime_ns = inode = 0``."""

    name: str
    is_dir: bool
    size: int
    mtime_ns: int
    inode: int


@runtime_checkable
class HostListing(Protocol):
    """The listings of a place runs live (what a tree signature reads). ``name`` is the host part
    of run keys (``local`` for this machine)."""

    name: str

    def list(self, path: str) -> list[Entry]:
        """Entries of the directory ``path`` with their stats (hidden ones included, in no
        particular order). Raises ``OSError`` when ``path`` cannot be listed."""
        ...

    def stat(self, path: str) -> Optional[Entry]:
        """The entry of ``path`` (its ``name`` the last path part), or None when it does not exist."""
        ...


class Host(HostListing, Protocol):
    """What edgetui asks of a place runs live: its listings, reads and watches."""

    def read_at(self, path: str, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes of the regular file ``path`` from byte ``offset`` (fewer at its end).
        Raises ``OSError``."""
        ...

    def watch(self, paths: Iterable[str], on_change: Callable[[set[str]], None], stop: "object") -> None:
        """Call ``on_change`` with the changed paths whenever something changes under ``paths``,
        until ``stop`` (a ``threading.Event``) is set. Blocks; run it in a thread. Raises
        ``OSError`` when the host cannot watch (e.g. the watcher's limit): callers fall back to
        polling with :meth:`list` / :meth:`stat`."""
        ...


def join(*parts: str) -> str:
    """POSIX join of host path parts (a host path is always ``/``-separated)."""

    return posixpath.join(*parts)
