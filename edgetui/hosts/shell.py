"""One long-lived ``sh`` on a remote host, over one exec channel, for commands run again and again.

Every exec channel is a new session on the server: sshd forks, and the user's login shell starts
(reading its rc files) before the command runs. For the listing a feed repeats every half second
(``find -L ROOT -printf …``, :mod:`edgetui.hosts.mirror`) that start-up was most of its cost
(about 400 ms a listing on a loaded 2-core machine, against ~10 ms for ``find`` itself).
:class:`RemoteShell` starts ``exec sh`` once per connection and writes each command to its
stdin, reading the output up to a marker that carries a random token and the exit status.
It holds one unit of the host's channel budget while it lives and is started again, on the
next call, after a reconnect. A command must not read stdin (``</dev/null`` is added).
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
from typing import Any, Optional

from edgetui.error_log import note_swallowed
from edgetui.hosts.ssh_loop import ssh_loop


async def _read_to_marker(stdout, head: bytes) -> tuple[bytes, bytes]:
    """(the output before ``head``, the status digits after it, up to the next NUL), read in chunks:
    asyncssh's ``readuntil`` gives up (``IncompleteReadError``) once its receive buffer holds
    2 MiB without the separator, so a listing of some 15,000 files failed here (and quadratically
    before that: it joins the buffer again on every packet)."""
    buf = bytearray()
    seen = 0  # the marker is not in buf[:seen]
    while True:
        chunk = await stdout.read(1 << 18)
        if not chunk:
            raise EOFError("the remote shell ended")
        buf += chunk
        i = buf.find(head, max(0, seen - len(head)))
        if i >= 0:
            j = buf.find(b"\0", i + len(head))
            if j >= 0:
                return bytes(buf[:i]), bytes(buf[i + len(head) : j])
        else:
            seen = len(buf)


class RemoteShell:
    """The long-lived shell of one :class:`~edgetui.hosts.ssh.SshHost` (see the module)."""

    def __init__(self, host: Any):
        self.host = host
        self._proc = None
        self._conn = None
        self._lock: Optional[asyncio.Lock] = None
        self._sem = None
        self.starts = 0  # shells started (one per connection when all goes well)

    async def _ensure(self):
        host = self.host
        conn = host.connection
        if self._proc is not None and self._conn is conn and not self._proc.stdout.at_eof():
            return self._proc
        await self._drop()
        sem = await host._channel()  # the budget of this connection (a reconnect makes a new one)
        conn = host.connection
        try:
            proc = await host._opening(lambda: conn.create_process("exec sh", encoding=None))
        except BaseException:
            host._release(sem)
            raise
        self._sem = sem
        self._proc, self._conn = proc, conn
        self.starts += 1
        return proc

    async def _drop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.close()
            except Exception:  # noqa: BLE001 - the connection is already gone
                note_swallowed("the connection is already gone")
            self.host._release(self._sem)  # (to its own connection's budget: a later one's is not grown)

    async def run(self, argv: list[str]) -> tuple[int, bytes]:
        """Run ``argv`` (quoted with ``shlex``) in the shell: (exit status, stdout). Raises
        ``OSError`` / asyncssh errors when the channel or the connection goes (the next call starts
        a new shell)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            proc = await self._ensure()
            token = secrets.token_hex(8).encode()
            head = b"\0__edgetui_" + token + b"__ "
            cmd = " ".join(shlex.quote(a) for a in argv)
            line = f"{cmd} </dev/null 2>/dev/null; printf '\\000__edgetui_%s__ %d\\000' {token.decode()} $?\n"
            try:
                proc.stdin.write(line.encode())
                out, rc = await _read_to_marker(proc.stdout, head)
            except BaseException:
                await self._drop()
                raise
            return int(rc or b"255"), out

    def close(self) -> None:
        """Give the channel back (from any thread)."""
        if self._proc is not None:
            asyncio.run_coroutine_threadsafe(self._drop(), ssh_loop())
