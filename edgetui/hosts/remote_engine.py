"""A remote host's Docker engine for the live supervisor: listed in the host's own thread, joined to
that host's runs, acted on over the host's one SSH connection (core, no Textual).

:class:`RemoteEngine` has the part of :class:`edgetui.hosts.docker_watch.DockerWatch`'s interface
the supervisor uses (``refresh``, ``available``, ``error``, ``containers``, ``by_name``,
``token_of``, ``sample``, ``stop_container``, ``kill_container``, ``shell_command``, ``close``), so
the supervisor joins each host's containers to that host's runs with the code it uses for the
local engine. Two routes to the engine, both over the host's connection:

* ``socket``: the host's ``/var/run/docker.sock`` forwarded as a local Unix socket
  (:mod:`edgetui.hosts.engine`), driven by a ``DockerWatch`` (Docker's HTTP API: listing, one
  inspect per work container state, one-shot stats, stop, kill);
* ``cli``: the host's ``docker`` CLI over exec channels (``docker ps -a --format '{{json .}}'``,
  ``docker inspect``, ``docker stats --no-stream``, ``docker stop`` / ``kill``), for hosts where
  the socket cannot be forwarded (sshd's ``AllowStreamLocalForwarding no``, rootless Docker or a
  remote ``DOCKER_HOST`` the CLI knows). Each call is one exec channel of the budget.

``mode="auto"`` tries the socket, then the CLI. The listing runs in this object's thread, never
in the supervisor's refresh: a slow or dead host only makes its own engine stale (``refresh``
returns the last listing's availability at once). The interactive shell is the system ``ssh -t``
(a second login, :func:`ssh_argv`): bridging an asyncssh PTY channel into the suspended terminal
is not worth it for an occasional ``docker exec``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
import time
from typing import TYPE_CHECKING, Any, Optional, Union

from edgetui.error_log import note_swallowed
from edgetui.hosts.ssh import DEGRADED, UP
from edgetui.hosts.docker_watch import DockerWatch, short_error

from edgetui.hosts.engine import remote_docker_client

if TYPE_CHECKING:
    import docker

MODES = ("auto", "socket", "cli", "none")


def ssh_argv(host: Any, tty: bool = True) -> list[str]:
    """The system ``ssh`` command line reaching ``host`` (an :class:`~edgetui.hosts.ssh.SshHost`) as
    edgetui's own connection does: its ssh_config file (``-F``; ``/dev/null`` when edgetui reads
    none), known_hosts file and identity files when given, jump host, port and user, host keys
    checked strictly (never auto-accepted). ``-t`` when ``tty``. The remote command comes after."""
    t = host.target
    argv = ["ssh"] + (["-t"] if tty else [])
    argv += ["-F", host.config[0] if host.config else os.devnull, "-o", "StrictHostKeyChecking=yes"]
    if getattr(host, "_known_hosts", None):
        argv += ["-o", f"UserKnownHostsFile={os.path.expanduser(host._known_hosts)}"]
    for k in host.client_keys or []:
        argv += ["-i", os.path.expanduser(k)]
    if t.jump:
        argv += ["-J", t.jump]
    if t.port:
        argv += ["-p", str(t.port)]
    argv.append(f"{t.user}@{t.host}" if t.user else t.host)
    return argv


# ------------------------------------------------------------------------------- the docker CLI route


class _ExecResult:
    def __init__(self, exit_code: int, output: bytes):
        self.exit_code, self.output = exit_code, output


def _cli_error(argv: list[str], rc: int, err: bytes) -> RuntimeError:
    text = " ".join(err.decode("utf-8", "replace").split())[:200] or f"exit {rc}"
    return RuntimeError(f"{' '.join(argv[:2])}: {text}")


class _CliContainer:
    def __init__(self, cli: "CliDockerClient", ref: str):
        self._cli, self.id = cli, ref

    def stop(self, timeout: int = 10) -> None:
        self._cli.docker(["stop", "-t", str(int(timeout)), self.id], timeout=timeout + 30)

    def kill(self, signal: str = "SIGKILL") -> None:
        self._cli.docker(["kill", "-s", str(signal), self.id])

    def exec_run(self, cmd: list[str], stdout: bool = True, stderr: bool = False) -> _ExecResult:
        rc, out, err = self._cli.host.run(["docker", "exec", self.id, *cmd], timeout=30)
        return _ExecResult(rc, (out if stdout else b"") + (err if stderr else b""))


class _CliContainers:
    def __init__(self, cli: "CliDockerClient"):
        self._cli = cli

    def get(self, ref: str) -> _CliContainer:
        return _CliContainer(self._cli, ref)


class _CliApi:
    """The two API calls ``DockerWatch.refresh`` makes, answered by the remote ``docker`` CLI."""

    def __init__(self, cli: "CliDockerClient"):
        self._cli = cli

    def containers(self, all: bool = True) -> list[dict[str, Any]]:  # `all`: docker-py's name
        out = self._cli.docker(["ps", "--no-trunc", "--format", "{{json .}}"] + (["-a"] if all else []))
        rows = []
        for line in out.decode("utf-8", "replace").splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            names = [n for n in str(d.get("Names") or "").split(",") if n]
            rows.append(
                {
                    "Id": d.get("ID"),
                    "Names": ["/" + n for n in names],
                    "State": d.get("State"),
                    "Status": d.get("Status"),
                }
            )
        return rows

    def inspect_container(self, ref: str) -> dict[str, Any]:
        out = json.loads(self._cli.docker(["inspect", "--type", "container", ref]))
        if not out:
            raise RuntimeError(f"no such container: {ref}")
        return out[0]


class CliDockerClient:
    """A stand-in for ``docker.DockerClient`` driving the host's ``docker`` CLI over exec channels
    (what :class:`~edgetui.hosts.docker_watch.DockerWatch` calls: ``api.containers``,
    ``api.inspect_container``, ``containers.get(ref).stop / kill / exec_run``). Calls raise
    ``RuntimeError`` with the CLI's one-line error, ``OSError`` when the host is down."""

    def __init__(self, host: Any):
        self.host = host
        self.api = _CliApi(self)
        self.containers = _CliContainers(self)

    def docker(self, args: list[str], timeout: float = 30.0) -> bytes:
        argv = ["docker", *args]
        rc, out, err = self.host.run(argv, timeout=timeout)
        if rc != 0:
            raise _cli_error(argv, rc, err)
        return out

    def ping(self) -> str:
        """The engine's version (``docker version``): raises when the CLI or the engine is missing."""
        return self.docker(["version", "--format", "{{.Server.Version}}"], timeout=15).decode().strip()

    def stats(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """One ``docker stats --no-stream`` of ``ids``: ``{id: {t, cpu_percent (0-100 per core, as
        Docker), mem_bytes, mem_limit_bytes}}``."""
        out = self.docker(["stats", "--no-stream", "--no-trunc", "--format", "{{json .}}", *ids], timeout=30)
        now = time.time()
        res = {}
        for line in out.decode("utf-8", "replace").splitlines():
            if not line.strip():
                continue
            d = json.loads(line)
            cid = str(d.get("ID") or d.get("Container") or "")
            used, _, limit = str(d.get("MemUsage") or "").partition("/")
            cpu = str(d.get("CPUPerc") or "").rstrip("%").strip()
            match = next((i for i in ids if i.startswith(cid) or cid.startswith(i)), None) if cid else None
            if match is None:
                continue
            res[match] = {
                "t": now,
                "cpu_percent": float(cpu) if _NUM_RE.match(cpu) else None,
                "mem_bytes": parse_size(used),
                "mem_limit_bytes": parse_size(limit),
            }
        return res

    def close(self) -> None:
        pass


_NUM_RE = re.compile(r"^\d+(\.\d+)?$")
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?i?B)\s*$", re.I)
_UNITS = {
    "b": 1,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "tb": 1e12,
    "pb": 1e15,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "pib": 2**50,
}


def parse_size(text: str) -> Optional[int]:
    """Bytes of a size as ``docker stats`` prints it (``1.5MiB``, ``7.7GiB``, ``12kB``, ``0B``); None
    when it is not one."""
    m = _SIZE_RE.match(text or "")
    if not m:
        return None
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


# ------------------------------------------------------------------------------- the engine


class RemoteEngine:
    """The Docker engine of one remote host (see the module). ``host``: its
    :class:`~edgetui.hosts.ssh.SshHost` (shared with the host's feed); ``mode``: ``auto``,
    ``socket`` or ``cli``; ``interval_s``: seconds between refreshes; through the socket the
    engine's container events stream is read (windows of ``events_window_s`` seconds, 0: none)
    and a refresh lists only after an event, an action of ours or ``list_interval_s`` seconds (the
    safety net); through the CLI every refresh lists; ``stats_interval_s``: between
    CPU/memory samples of running work containers (0: none); ``retry_s``: between attempts to find
    a route while none works. :meth:`start` starts the thread, :meth:`close` ends it."""

    def __init__(
        self,
        host: Any,
        *,
        mode: str = "auto",
        socket_path: str = "/var/run/docker.sock",
        interval_s: float = 2.0,
        stats_interval_s: float = 10.0,
        retry_s: float = 10.0,
        events_window_s: float = 5.0,
        list_interval_s: float = 30.0,
    ):
        if mode not in MODES or mode == "none":
            raise ValueError(f"engine mode {mode!r}: expected auto, socket or cli")
        self.ssh = host
        self.host = host.name
        self.mode = mode
        self.route: Optional[str] = None  # "socket" | "cli" once one works
        self.socket_path = socket_path
        self.interval_s, self.stats_interval_s, self.retry_s = interval_s, stats_interval_s, retry_s
        self.events_window_s, self.list_interval_s = events_window_s, list_interval_s
        self.available = False
        self.error: Optional[str] = None
        self.listed_at: Optional[float] = None
        #: successful refreshes (a listing, or the events stream vouching for the last one)
        self.listings = 0
        #: container listings actually asked of the engine (``GET /containers/json``, ``docker ps``)
        self.api_listings = 0
        self.containers: dict = {}
        self.by_name: dict = {}
        self._watch: Optional[DockerWatch] = None  # over the chosen route
        self._client: Union[docker.DockerClient, CliDockerClient, None] = None
        self._stats_targets: dict[str, str] = {}
        self._samples: dict[str, dict[str, Any]] = {}
        self._next_stats = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._kick = threading.Event()
        self._thread: Optional[threading.Thread] = None

    # ---- what the supervisor calls (no I/O in these but the actions)
    def _host_reachable(self) -> bool:
        kind = self.ssh.state.kind
        if kind in (UP, DEGRADED):
            return True
        self.available = False
        self.error = f"{self.host}: engine unreachable (host {kind})"
        return False

    def refresh(self) -> bool:
        """The last listing's availability (the listing itself runs in this engine's thread); False
        at once while the host is not up."""
        return self._host_reachable() and self.available

    def state_text(self) -> str:
        """``up (socket)``, ``up (cli)``, ``connecting`` or why not, for the hosts view."""
        if not self._host_reachable():
            return "unreachable"
        if self.available and self.route:
            return f"up ({self.route})"
        return (self.error or "connecting").removeprefix(f"{self.host}: ")

    def token_of(self, container_id: str) -> Optional[str]:
        w = self._watch
        return w.token_of(container_id) if w is not None else None

    def sample(self, running_work_ids: dict[str, str]) -> dict[str, dict[str, Any]]:
        """Give the running work containers to sample; returns the samples taken since the last call."""
        w = self._watch
        if w is None or not self.available:
            return {}
        if self.route == "socket":
            return w.sample(running_work_ids)
        with self._lock:
            self._stats_targets = dict(running_work_ids)
            out, self._samples = self._samples, {}
        return out

    def stop_container(self, name_or_id: str, timeout: int = 10) -> str:
        w = self._watch
        if w is None:
            return f"could not stop {name_or_id}: {self.host}: {self.error or 'engine not reached yet'}"
        return w.stop_container(name_or_id, timeout)

    def kill_container(self, name_or_id: str) -> str:
        w = self._watch
        if w is None:
            return f"could not kill {name_or_id}: {self.host}: {self.error or 'engine not reached yet'}"
        return w.kill_container(name_or_id)

    def shell_command(self, name_or_id: str) -> list[str]:
        """``ssh -t <host> docker exec -it <container> bash|sh`` (bash when the container has it)."""
        inner = ["docker", "exec", "-it", name_or_id, "sh"]
        w = self._watch
        if w is not None:
            try:
                inner = w.shell_command(name_or_id)
            except Exception:  # noqa: BLE001 - host gone: sh
                note_swallowed("host gone: sh")
        return ssh_argv(self.ssh) + [" ".join(shlex.quote(a) for a in inner)]

    def has(self, name_or_id: str) -> bool:
        """Is ``name_or_id`` a container of this engine's last listing (name, id or id prefix ≥ 12)?"""
        if name_or_id in self.by_name or name_or_id in self.containers:
            return True
        return len(name_or_id) >= 12 and any(cid.startswith(name_or_id) for cid in list(self.containers))

    # ---- the thread
    def start(self) -> "RemoteEngine":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"edgetui-engine-{self.host}", daemon=True)
            self._thread.start()
        return self

    def kick(self) -> None:
        """List again now (e.g. after an action)."""
        self._kick.set()

    def close(self) -> None:
        self._stop.set()
        self._kick.set()
        if self._thread is not None:
            self._thread.join(5)
        w = self._watch
        if w is not None:
            w.close()
        if self._client is not None:
            try:
                self._client.close()
            except Exception:  # noqa: BLE001 - closing a client whose engine may be gone
                note_swallowed("closing a client whose engine may be gone")

    def _choose(self) -> bool:
        """Find a route (socket first under ``auto``); False with :attr:`error` set when none works."""

        why = []
        if self.mode in ("auto", "socket"):
            try:
                client = remote_docker_client(self.ssh, self.socket_path)
                client.ping()
                self._client, self.route = client, "socket"
            except Exception as e:  # noqa: BLE001 - no forwarding, no access to the socket
                why.append(f"socket {self.socket_path}: {short_error(e)}")
        if self.route is None and self.mode in ("auto", "cli"):
            cli = CliDockerClient(self.ssh)
            try:
                cli.ping()
                self._client, self.route = cli, "cli"
            except Exception as e:  # noqa: BLE001 - each route's failure is said, then the next route is tried
                why.append(f"docker CLI: {' '.join(str(e).split())[:160]}")
        if self.route is None:
            self.error = f"{self.host}: engine unavailable: " + "; ".join(why)
            return False
        events = self.events_window_s if self.route == "socket" else 0.0  # the CLI has no stream here
        self._watch = DockerWatch(
            self._client,
            host=self.host,
            retry_s=min(self.retry_s, 2.0),
            stats_interval_s=self.stats_interval_s,
            events_window_s=events,
            list_interval_s=self.list_interval_s,
            on_change=self._kick.set,
        )
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            wait = self.interval_s
            if not self._host_reachable():
                wait = 0.5
            elif self._watch is None and not self._choose():
                wait = self.retry_s
            else:
                w = self._watch
                assert w is not None  # (made by _choose)
                before = w.listings
                ok = w.refresh()
                self.api_listings += w.listings - before
                self.containers, self.by_name = w.containers, w.by_name
                self.available = ok
                self.error = f"{self.host}: {w.error}" if w.error else None
                if ok:
                    self.listed_at = time.time()
                    self.listings += 1
                    if self.route == "cli":
                        self._cli_stats()
            self._kick.wait(wait)
            self._kick.clear()

    def _cli_stats(self) -> None:
        if self.stats_interval_s <= 0 or time.monotonic() < self._next_stats:
            return
        with self._lock:
            ids = list(self._stats_targets)
        if not ids:
            return
        self._next_stats = time.monotonic() + self.stats_interval_s
        client = self._client
        if not isinstance(client, CliDockerClient):  # (the CLI route's client)
            return
        try:
            got = client.stats(ids)
        except Exception:  # noqa: BLE001 - a container that just went away: next time
            note_swallowed("a container that just went away: next time")
            return
        with self._lock:
            self._samples.update(got)
