"""Reads of many files at once over an :class:`~edgetui.hosts.ssh.SshHost`'s SFTP session, with the
handles of growing files kept open between reads (a mixin of ``SshHost``, split from ``ssh.py``;
core: no Textual). The host's state is ``SshHost``'s (``_run``, ``_sftp``, ``_handles``, ``stats``).
"""

from __future__ import annotations

import asyncio
import collections
import errno
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

from edgetui.error_log import note_swallowed
from edgetui.hosts.ssh_loop import os_error

if TYPE_CHECKING:
    import asyncssh

#: SFTP handles :meth:`SshHost.read_files` keeps open per host (OpenSSH's sftp-server allows 512),
#: and seconds one stays open unused
KEPT_HANDLES = 256
KEPT_IDLE_S = 30.0


class SftpReads:
    """``read_files`` and its kept handles (mixed into :class:`~edgetui.hosts.ssh.SshHost`)."""

    # the host's state these reads use: SshHost's, set in its __init__ and by its connection
    _sftp: Optional[asyncssh.SFTPClient]
    _handles: collections.OrderedDict[str, list[Any]]
    stats: dict[str, int]
    op_timeout: float
    _run: Callable[..., Any]

    def _session(self) -> asyncssh.SFTPClient:
        """The current SFTP session; ``OSError`` (EHOSTDOWN) when the connection went meanwhile."""
        sftp = self._sftp
        if sftp is None:
            raise OSError(errno.EHOSTDOWN, "SFTP session closed (connection lost)")
        return sftp

    def read_files(self, files: list[tuple], parallel: int = 32) -> list:
        """The first ``n`` bytes of each ``(path, n)`` (n: the listed size; fewer at a shorter
        file's end), or ``n`` bytes from ``offset`` of each ``(path, offset, n)`` or
        ``(path, offset, n, inode)`` (the new bytes of grown files), ``parallel`` files in flight
        at once over the one SFTP session (a first scan of thousands of small files is then bound
        by bandwidth, not by round trips; a sync of many growing files is one call, not one per
        file). With an ``inode`` (> 0, from the caller's listing) the file's SFTP handle is kept
        open for the next read of the same path and inode (one READ request instead of OPEN, READ,
        CLOSE: a growing transcript is read again and again); a listing with another inode opens
        the new file (a replaced file is never read through the old handle); at most
        :data:`KEPT_HANDLES`, closed after :data:`KEPT_IDLE_S` seconds unused. Returns, in order,
        each file's bytes or the ``OSError`` reading it raised."""

        async def one(sem, path, *rest):
            inode = 0
            if len(rest) == 1:
                offset, n = 0, rest[0]
            else:
                offset, n = rest[0], rest[1]
                inode = rest[2] if len(rest) > 2 else 0
            async with sem:
                try:
                    if inode > 0 and n > 0:
                        data = await self._read_kept(path, inode, offset, n)
                    else:
                        async with self._session().open(path, "rb") as f:
                            data = await f.read(n, offset) if n > 0 else b""
                except Exception as e:  # noqa: BLE001 - returned per file
                    return os_error(e, path)
                self.stats["bytes_read"] += len(data)
                return data

        async def go():
            sem = asyncio.Semaphore(parallel)
            got = await asyncio.gather(*(one(sem, *f) for f in files))
            await self._close_idle_handles()
            return got

        return self._run(go, f"{len(files)} files", timeout=self.op_timeout + len(files) * 0.05)

    async def _read_kept(self, path: str, inode: int, offset: int, n: int) -> bytes:
        """Read through the kept handle of (path, inode) on the current SFTP session (opened on first use)."""
        sftp = self._session()
        kept = self._handles.get(path)
        if kept is not None and (kept[0] is not sftp or kept[1] != inode):
            del self._handles[path]
            if kept[0] is sftp:
                try:
                    await kept[2].close()
                except Exception:  # noqa: BLE001 - a handle of a file since replaced
                    note_swallowed("a handle of a file since replaced")
            kept = None
        if kept is None:
            f = await sftp.open(path, "rb")
            kept = [sftp, inode, f, 0.0]
            self._handles[path] = kept
        kept[3] = time.monotonic()
        self._handles.move_to_end(path)
        try:
            return await kept[2].read(n, offset)
        except Exception:
            self._handles.pop(path, None)
            raise

    async def _close_idle_handles(self) -> None:
        now = time.monotonic()
        sftp = self._sftp
        while self._handles:
            path, kept = next(iter(self._handles.items()))
            if kept[0] is sftp and len(self._handles) <= KEPT_HANDLES and now - kept[3] < KEPT_IDLE_S:
                # (oldest first: the rest were used later)
                break
            del self._handles[path]
            if kept[0] is sftp:
                try:
                    await kept[2].close()
                except Exception:  # noqa: BLE001 - closing a session whose connection may be gone
                    note_swallowed("closing a session whose connection may be gone")
