"""A command on a remote host whose output is read as it arrives (a first sync's tar stream).

:meth:`SshHost.run <edgetui.hosts.ssh.SshHost.run>` returns a command's whole stdout at its end,
held in memory; a first sync of a runs root is a stream of tens to hundreds of megabytes that the
image should be written from while more comes (:mod:`edgetui.hosts.mirror`). :func:`open_process`
starts the command over an exec channel of the host's channel budget (queued as
:meth:`~edgetui.hosts.ssh.SshHost.run`'s) and :class:`RemoteProcess` reads its stdout in chunks
from any thread, each read one call on the SSH loop under the host's timeouts.
"""

from __future__ import annotations

import shlex
from typing import Any

from edgetui.error_log import note_swallowed
from edgetui.hosts.ssh_loop import ssh_loop


def open_process(host: Any, argv: list[str]) -> RemoteProcess:
    """Start ``argv`` (quoted with ``shlex``) on the :class:`~edgetui.hosts.ssh.SshHost` ``host``
    and return it unread. Raises ``OSError`` as the host's calls do (the host down, the channel
    refused)."""
    cmd = " ".join(shlex.quote(a) for a in argv)

    async def go():
        sem = await host._channel()  # the budget of this connection, to give the unit back to
        try:
            proc = await host._opening(lambda: host.connection.create_process(cmd, encoding=None))
        except BaseException:
            host._release(sem)
            raise
        return proc, sem

    proc, sem = host.call(go, cmd)
    return RemoteProcess(host, proc, sem, cmd)


class RemoteProcess:
    """A command running on a host (:func:`open_process`). :meth:`read` gives up to ``n`` bytes of
    its stdout (``b""`` at its end), :meth:`wait` its exit status (255 when it gave none),
    :meth:`close` ends it and gives its channel back (:meth:`wait` calls it; calling it again is
    harmless). Each call waits at most ``timeout`` seconds (default: the host's ``op_timeout``)
    and raises ``OSError`` as the host's calls do."""

    def __init__(self, host: Any, proc: Any, sem: Any, cmd: str):
        self.host, self._proc, self._sem, self.cmd = host, proc, sem, cmd
        self._closed = False

    def read(self, n: int = 1 << 20, timeout: float | None = None) -> bytes:
        proc = self._proc

        async def go():
            return await proc.stdout.read(n)

        return self.host.call(go, self.cmd, timeout)

    def wait(self, timeout: float | None = None) -> int:
        proc = self._proc

        async def go():
            return await proc.wait(check=False)

        try:
            r = self.host.call(go, self.cmd, timeout)
        finally:
            self.close()
        return r.exit_status if r.exit_status is not None else 255

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True

        host, proc, sem = self.host, self._proc, self._sem

        def release():
            try:
                proc.close()
            except Exception:  # noqa: BLE001 - the connection is already gone
                note_swallowed("the connection is already gone")
            host._release(sem)  # (to its own connection's budget: a later one's is not grown)

        ssh_loop().call_soon_threadsafe(release)
