"""Tuning of an asyncssh connection for many small packets (split from ``ssh.py``; core: no
Textual): the cipher preference and coalesced socket writes, both measured with
``bench/bench_ssh_hosts.py`` (see DESIGN.md, "Remote hosts over SSH")."""

from __future__ import annotations

import asyncio


def coalesce_sends(conn) -> None:
    """Make ``conn`` (an asyncssh connection, asyncssh pinned in pyproject.toml) write the packets
    it sends in one turn of the event loop with one ``write`` of the socket, at the end of that
    turn, instead of one each: a sync's parallel SFTP reads of many files are one TCP segment, not
    one per file (each write on loopback also runs the receiving side's TCP work in this process:
    the SSH loop's largest cost at 10 hosts, bench/bench_ssh_hosts.py, profiled). Order is kept;
    a packet waits for at most the rest of the loop's turn. Anything asyncssh itself does with its
    transport (close, abort) is unchanged; a packet left when the transport is closing is dropped,
    as asyncssh's own write would."""
    transport = getattr(conn, "_transport", None)
    send = getattr(conn, "_send", None)
    if transport is None or send is None:
        return  # (another asyncssh: its own sends, unchanged)
    loop = asyncio.get_running_loop()
    closing = getattr(transport, "is_closing", None)  # (a ProxyJump tunnel's channel transport too)
    buf: list[bytes] = []

    def flush() -> None:
        data = b"".join(buf)
        buf.clear()
        if data and not (closing is not None and closing()):
            try:
                transport.write(data)
            except ConnectionError:  # (as asyncssh's _send)
                pass

    def coalesced(data: bytes) -> None:
        if conn._transport is None:
            return  # closed: as asyncssh's _send
        if not buf:
            loop.call_soon(flush)
        buf.append(data)

    conn._send = coalesced


def preferred_ciphers() -> list[str]:
    # lazy: asyncssh loads only when a host is reached over SSH
    from asyncssh.encryption import get_default_encryption_algs

    algs = [a.decode() for a in get_default_encryption_algs()]
    first = [a for a in ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com") if a in algs]
    return first + [a for a in algs if a not in first]
