"""A remote host's judge URL, forwarded over the host's one SSH connection (asyncssh local port forward).

SForge's judge listens where the harness runs it: often ``127.0.0.1:<port>`` of that host, which
this machine cannot reach. :func:`forward_url` gives a URL on this machine's loopback whose every
TCP connection is a ``direct-tcpip`` channel of the host's connection to the judge's address *as
the host sees it*; the judge poller of that host's runs uses it. The local port is chosen once
and listened on again after each reconnect (so the URL stays valid); while the host is down a
request to it is refused at once (nothing listens), which the poller reports as one line.
"""

from __future__ import annotations

import asyncio
import socket
import urllib.parse
from typing import Any

from edgetui.error_log import note_swallowed
from edgetui.hosts.ssh_loop import ssh_loop


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def forward_url(host: Any, url: str) -> str:
    """``url`` (``http://ADDR:PORT/...`` as the host ``host``, an :class:`~edgetui.hosts.ssh.SshHost`,
    sees it) rewritten to ``http://127.0.0.1:LOCAL/...`` on this machine, LOCAL forwarded over the
    host's connection to ADDR:PORT. Returns at once (the forward listens as soon as the host is up,
    and again after each reconnect). Raises ``ValueError`` for a URL without a host."""
    u = urllib.parse.urlsplit(url)
    if not u.hostname:
        raise ValueError(f"judge_url {url!r}: no host")
    rport = u.port or (443 if u.scheme == "https" else 80)
    rhost = u.hostname
    lport = _free_port()
    state: dict[str, Any] = {"listener": None}

    async def listen(conn) -> None:
        old = state["listener"]
        if old is not None:
            old.close()
        state["listener"] = await conn.forward_local_port("127.0.0.1", lport, rhost, rport)

    host.on_connect.append(listen)
    conn = host.connection
    if conn is not None:  # already up: listen now (later connections call the hook)
        fut = asyncio.run_coroutine_threadsafe(listen(conn), ssh_loop())
        try:
            fut.result(host.op_timeout)
        except Exception:  # noqa: BLE001 - refused now: the next connection tries again
            note_swallowed("refused now: the next connection tries again")
    netloc = f"127.0.0.1:{lport}"
    return urllib.parse.urlunsplit((u.scheme or "http", netloc, u.path, u.query, u.fragment))
