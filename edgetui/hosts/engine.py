"""A remote host's Docker engine through its Unix socket, forwarded over the host's one SSH connection.

:func:`remote_docker_client` gives a ``docker.DockerClient`` whose socket is a local Unix socket
forwarded (``direct-streamlocal``, one channel per HTTP connection) to ``/var/run/docker.sock``
on the host (:meth:`edgetui.hosts.ssh.SshHost.forward_unix`): every listing, inspect, stats,
stop and kill of :class:`edgetui.hosts.docker_watch.DockerWatch` then travels over the same SSH
connection as the run files, with no second login per call (docker contexts' ``ssh://`` opens
one per call). The user on the host needs access to the socket (the ``docker`` group); sshd
needs ``AllowStreamLocalForwarding`` (its default is yes).
"""

from __future__ import annotations

from typing import Any

#: where the engine listens on SForge hosts
DOCKER_SOCKET = "/var/run/docker.sock"


def remote_docker_client(host: Any, socket_path: str = DOCKER_SOCKET, timeout: int = 10):
    """A ``docker.DockerClient`` for the engine behind ``socket_path`` on ``host`` (an
    :class:`~edgetui.hosts.ssh.SshHost`). Raises ``OSError`` when the host is down."""
    # lazy: the Docker SDK loads only when an engine is watched
    import docker

    local = host.forward_unix(socket_path)
    return docker.DockerClient(base_url=f"unix://{local}", timeout=timeout)
