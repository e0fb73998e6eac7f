"""A machine reached over SSH as a :class:`~edgetui.hosts.Host`: ONE asyncssh connection per host.

Everything edgetui asks of a remote host travels as channels of that one connection: one SFTP
session (listings with stats, reads by offset), exec channels (``inotifywait`` for change
detection) and forwarded Unix sockets (the remote Docker engine, :meth:`SshHost.open_unix`).
sshd limits the channels of a connection (``MaxSessions``, 10 by default): a per-host budget
(:attr:`SshHost.max_channels`, the SFTP session included) queues what would exceed it.

Options come from ``~/.ssh/config`` through asyncssh's own config support (``Host`` aliases,
``Port``, ``User``, ``IdentityFile``, ``IdentityAgent``, ``ProxyJump``, ``UserKnownHostsFile``);
edgetui never re-parses the file. Keys come from ssh-agent or unencrypted identity files; there
is no prompt: an encrypted key without an agent, or a password-only host, is refused with "add
the key to ssh-agent". Host keys are verified against known_hosts; an unknown or changed key is
refused with the command that trusts it. edgetui never writes remote files and never forwards
the agent (``agent_forwarding=False``; the SFTP session is only asked to read and list).

asyncio runs in one background thread shared by every SSH host (:func:`edgetui.hosts.ssh_loop.ssh_loop`); the methods of
:class:`SshHost` are a synchronous facade for the threaded supervisor and ingest. A call never
waits longer than ``op_timeout`` seconds; while the host is down a call fails at once with
:class:`HostDown` (an ``OSError``), so a dead or slow host never blocks other hosts. The
connection is kept by a task that reconnects with capped exponential backoff, forever, and
reports the host's :class:`HostState`.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import concurrent.futures
import errno
import os
import re
import stat as statmod
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, cast

from edgetui.error_log import note_swallowed
from edgetui.hosts import Entry
from edgetui.hosts.ssh_loop import os_error, ssh_loop
from edgetui.hosts.sftp_reads import KEPT_HANDLES, KEPT_IDLE_S, SftpReads  # noqa: F401  (public here before the split)
from edgetui.hosts.tuning import coalesce_sends, preferred_ciphers

from edgetui.errors import KnownHostsMissing
import shlex
from edgetui.hosts.shell import RemoteShell
import tempfile

import getpass

if TYPE_CHECKING:
    import asyncssh

# ---------------------------------------------------------------------------------------------- states

CONNECTING, UP, DEGRADED, DOWN, AUTH_FAILED, HOST_KEY_REFUSED, CLOSED = (
    "connecting",
    "up",
    "degraded",
    "down",
    "auth failed",
    "host key refused",
    "closed",
)


@dataclass(frozen=True)
class HostState:
    """Where a host's connection stands. ``kind`` is one of ``connecting``, ``up``, ``degraded``
    (connected, but the last probe was slower than ``slow_s`` or a call timed out), ``down``,
    ``auth failed``, ``host key refused``, ``closed``. ``since`` (epoch UTC seconds) is when it
    entered ``kind``; ``rtt_s`` the last probe's round trip (seconds; an SFTP ``stat``, up and
    degraded only); ``next_retry`` (epoch UTC seconds) when the next connection attempt starts
    (down, auth failed, host key refused); ``message`` one line for the user (why, what to do)."""

    kind: str
    since: float
    rtt_s: Optional[float] = None
    next_retry: Optional[float] = None
    message: str = ""

    def describe(self, now: Optional[float] = None) -> str:
        """Short text for a status column: ``up 3 ms``, ``down 2m (retry 20s)``, ``auth failed``."""
        now = time.time() if now is None else now
        if self.kind in (UP, DEGRADED) and self.rtt_s is not None:
            return f"{self.kind} {self.rtt_s * 1000:.0f} ms"
        if self.kind in (DOWN, AUTH_FAILED, HOST_KEY_REFUSED) and self.next_retry is not None:
            age = _short_span(now - self.since)
            return f"{self.kind} {age} (retry {_short_span(max(0.0, self.next_retry - now))})"
        return self.kind


def _short_span(s: float) -> str:
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class _NoSftp(Exception):
    """Logged in, but the host gave no SFTP channel (``cause``: asyncssh's error)."""

    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


class HostDown(OSError):
    """A call on a host that is not connected (``errno`` ``EHOSTDOWN``); its text is the host's
    state message."""

    def __init__(self, host: str, state: HostState):
        super().__init__(
            errno.EHOSTDOWN, f"{host}: {state.kind}: {state.message}" if state.message else f"{host}: {state.kind}"
        )
        self.state = state


# ---------------------------------------------------------------------------------------------- targets

_SPEC_RE = re.compile(r"^(?:(?P<user>[^@/:\s]+)@)?(?P<host>\[[^\]]+\]|[^:/@\s]+)(?::(?P<port>\d+))?$")


@dataclass(frozen=True)
class SshTarget:
    """Where to connect: ``host`` (a name, an address or an ssh_config alias), ``port`` and
    ``user`` (None: from ssh_config, else 22 and the local user), ``jump`` (``[user@]host[:port]``
    of a jump host, None: ssh_config's ``ProxyJump`` if any)."""

    host: str
    port: Optional[int] = None
    user: Optional[str] = None
    jump: Optional[str] = None

    @classmethod
    def parse(cls, spec: str, jump: Optional[str] = None) -> "SshTarget":
        """``user@host[:port]``, ``host``, ``[::1]:2222`` or an ssh_config alias. Raises
        ``ValueError`` naming the spec when it is none of these."""
        m = _SPEC_RE.match(spec.strip())
        if not m:
            raise ValueError(f"{spec!r}: not user@host[:port] or an ssh_config alias")
        host = m.group("host").strip("[]")
        port = int(m.group("port")) if m.group("port") else None
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"{spec!r}: port {port} out of range")
        return cls(host, port, m.group("user"), jump)

    def __str__(self) -> str:
        h = f"[{self.host}]" if ":" in self.host else self.host
        return (f"{self.user}@" if self.user else "") + h + (f":{self.port}" if self.port else "")


# ---------------------------------------------------------------------------------------------- the host


def _entry(name: str, attrs) -> Entry:
    """An SFTP stat as an Entry; what is neither a file nor a directory (a FIFO: opening it would
    block the SFTP session for good) gets ``size = -1``, as a stat that failed: never read."""
    mode = attrs.permissions or 0
    mtime_ns = attrs.mtime_ns if getattr(attrs, "mtime_ns", None) else int((attrs.mtime or 0) * 1_000_000_000)
    odd = attrs.permissions is not None and not (statmod.S_ISDIR(mode) or statmod.S_ISREG(mode))
    size = -1 if odd or attrs.size is None else attrs.size
    return Entry(name, statmod.S_ISDIR(mode), size, mtime_ns, 0)


#: the round-trip time above which an up host is shown degraded (seconds)
SLOW_S = 2.0


class SshHost(SftpReads):
    """A remote machine over one asyncssh connection (see the module).

    ``name`` is the host part of run keys; ``target`` an :class:`SshTarget` (or its spec text).
    ``config``: ssh_config files (default ``~/.ssh/config`` when it exists); ``known_hosts``: the
    known_hosts file (default: asyncssh's, i.e. ssh_config's ``UserKnownHostsFile`` else
    ``~/.ssh/known_hosts``; refusal messages name ``~/.ssh/known_hosts`` then);
    ``client_keys``: identity files to use instead of ssh_config's and the defaults (unencrypted
    ones only; the agent is always asked too). Times in seconds: ``connect_timeout`` (TCP and
    login), ``op_timeout`` (any one call), ``keepalive_interval`` × ``keepalive_count_max`` (a
    silent server is dropped after both), ``probe_interval`` (round-trip probes), backoff from
    ``backoff_min`` doubling to ``backoff_max``. ``max_channels``: channels of the connection at
    once (sshd's ``MaxSessions``, 10 by default), the SFTP session included.

    Nothing happens until :meth:`start` (or the first call); :meth:`close` ends it.
    """

    def __init__(
        self,
        name: str,
        target: "SshTarget | str",
        *,
        config: Optional[list[str]] = None,
        known_hosts: Optional[str] = None,
        client_keys: Optional[list[str]] = None,
        connect_timeout: float = 10.0,
        op_timeout: float = 30.0,
        keepalive_interval: float = 15.0,
        keepalive_count_max: int = 3,
        probe_interval: float = 10.0,
        backoff_min: float = 1.0,
        backoff_max: float = 60.0,
        max_channels: int = 10,
        slow_s: float = SLOW_S,
        compression: Optional[bool] = None,
    ):
        self.name = name
        self.target = SshTarget.parse(target) if isinstance(target, str) else target
        if config is None:
            default = os.path.expanduser("~/.ssh/config")
            config = [default] if os.path.exists(default) else []
        self.config = config
        self._known_hosts = known_hosts
        self.client_keys = client_keys
        self.connect_timeout, self.op_timeout = connect_timeout, op_timeout
        self.keepalive_interval, self.keepalive_count_max = keepalive_interval, keepalive_count_max
        self.probe_interval, self.slow_s = probe_interval, slow_s
        self.backoff_min, self.backoff_max = backoff_min, backoff_max
        if max_channels < 2:
            raise ValueError("max_channels must be at least 2 (the SFTP session and one more)")
        self.max_channels = max_channels
        #: compress the connection (zlib@openssh.com, after login): None: yes, unless the user's
        #: ssh_config says ``Compression`` for this host (docs/remote-hosts.md, "Compression")
        self.compression = compression
        self._state = HostState(CONNECTING, time.time())
        self._listeners: list[Callable[[str, HostState], None]] = []
        self._conn: Optional[asyncssh.SSHClientConnection] = None
        self._sftp: Optional[asyncssh.SFTPClient] = None
        self._handles: collections.OrderedDict[str, list[Any]] = collections.OrderedDict()  # read_files' kept handles
        self._up: Optional[asyncio.Event] = None
        self._wake: Optional[asyncio.Event] = None
        self._channels: Optional[asyncio.Semaphore] = None
        self._keeper: Optional[concurrent.futures.Future[None]] = None
        self._closed = False
        self._lock = threading.Lock()
        #: counters (for benches and tests): connections made, channels opened, SFTP bytes read
        self.stats: dict[str, int] = {"connects": 0, "channels": 0, "bytes_read": 0, "max_channels_open": 0}
        self._open_channels = 0
        self._forwards: dict[str, str] = {}  # local socket path -> remote socket path (kept across reconnects)
        self._shell: Optional[RemoteShell] = None  # made on first use of run_kept
        #: ``async fn(conn)`` called on the SSH loop after each connection is made (forwards set up again)
        self.on_connect: list[Callable[[Any], Any]] = []

    # ----------------------------------------------------------------------------------- state

    @property
    def state(self) -> HostState:
        """The current :class:`HostState`."""
        return self._state

    def on_state(self, fn: Callable[[str, HostState], None]) -> None:
        """Call ``fn(host_name, state)`` (from the SSH thread) on every change of state."""
        self._listeners.append(fn)

    def _set_state(self, kind: str, **kw) -> None:
        old = self._state
        since = old.since if old.kind == kind else time.time()
        self._state = HostState(kind, since, **kw)
        if self._state != old:
            for fn in list(self._listeners):
                try:
                    fn(self.name, self._state)
                except Exception:  # noqa: BLE001 - a listener's failure is not the host's
                    note_swallowed("a listener's failure is not the host's")

    # ----------------------------------------------------------------------------------- lifecycle

    def start(self) -> "SshHost":
        """Start connecting (returns at once; the state says how it goes)."""
        with self._lock:
            if self._keeper is None and not self._closed:
                self._keeper = asyncio.run_coroutine_threadsafe(self._keep(), ssh_loop())
        return self

    def wait_up(self, timeout: float) -> HostState:
        """Wait up to ``timeout`` seconds for the host to be up (or refused); returns its state."""
        self.start()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self._state.kind in (UP, DEGRADED, AUTH_FAILED, HOST_KEY_REFUSED):
                return self._state
            time.sleep(0.02)
        return self._state

    def reconnect_now(self) -> None:
        """Skip the backoff wait: try to connect again at once."""
        loop = ssh_loop()
        if self._wake is not None:
            loop.call_soon_threadsafe(self._wake.set)

    def close(self) -> None:
        """Close the connection and stop reconnecting."""
        self._closed = True
        fut = self._keeper
        if fut is not None:
            ssh_loop().call_soon_threadsafe(fut.cancel)
        conn = self._conn
        if conn is not None:
            ssh_loop().call_soon_threadsafe(conn.close)
        for local in self._forwards:
            try:
                os.unlink(local)
                os.rmdir(os.path.dirname(local))
            except OSError:
                pass
        self._set_state(CLOSED)

    def __enter__(self) -> "SshHost":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def ssh_config(self):
        """asyncssh's own reading of the ssh_config files for this target (its ``SSHClientConfig``:
        ``get(option)``), as ``asyncssh.connect`` will apply them. Raises what asyncssh raises on
        an unreadable or invalid file."""

        # lazy: asyncssh loads only when a host is reached over SSH
        from asyncssh.config import SSHClientConfig

        return SSHClientConfig.load(
            None,
            self.config,
            False,
            False,
            False,
            getpass.getuser(),
            self.target.user or (),
            self.target.host,
            self.target.port or (),
        )

    def resolved(self) -> tuple[str, int, str]:
        """(address, port, known_hosts file) after ssh_config (asyncssh's own reading of it: an
        alias's ``HostName``, ``Port``, ``UserKnownHostsFile``), for messages."""
        host, port, kh = self.target.host, self.target.port, self._known_hosts
        try:
            cfg = self.ssh_config()
            host = cfg.get("Hostname", host) or host
            port = port or cfg.get("Port", None)
            files = cfg.get("UserKnownHostsFile", None)
            if not kh and files:
                kh = files[0] if isinstance(files, (list, tuple)) else files
        except Exception:  # noqa: BLE001 - only for a message
            note_swallowed("only for a message")
        return host, int(port or 22), os.path.expanduser(kh or "~/.ssh/known_hosts")

    def _identity_files(self) -> list[str]:
        """The identity files this host's login offers (``client_keys``, else ssh_config's
        ``IdentityFile``, else the first default key that exists), shown with ``~``, for messages."""
        files = list(self.client_keys or [])
        if not files:
            try:
                got = self.ssh_config().get("IdentityFile", None)
                files = list(got) if isinstance(got, (list, tuple)) else [got] if got else []
            except Exception:  # noqa: BLE001 - only for a message
                files = []
        if not files:
            files = [
                k
                for k in ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
                if os.path.exists(os.path.expanduser(k))
            ]
        return [_tilde(os.path.expanduser(str(f))) for f in files]

    def _missing_known_hosts(self):
        """A :class:`~edgetui.errors.KnownHostsMissing` for the first known_hosts file named for this
        host (the ``known_hosts`` setting, else ssh_config's ``UserKnownHostsFile`` and
        ``GlobalKnownHostsFile``) that does not exist, else None. (asyncssh reads each file it is
        given and fails with "No such file or directory" on a missing one; the default
        ``~/.ssh/known_hosts`` is not named, and its absence only means no host is known yet.)"""

        named: list[tuple[str, str]] = []
        if self._known_hosts:
            named = [(self._known_hosts, "the host's known_hosts setting")]
        else:
            try:
                cfg = self.ssh_config()
            except Exception:  # noqa: BLE001 - a bad config file: asyncssh.connect reports it
                note_swallowed("a bad config file: asyncssh.connect reports it")
                return None
            for opt in ("UserKnownHostsFile", "GlobalKnownHostsFile"):
                got = cfg.get(opt, None)
                for f in got if isinstance(got, (list, tuple)) else [got] if got else []:
                    named.append((str(f), f"{opt} in ssh_config"))
        for f, where in named:
            path = os.path.expanduser(f)
            if not os.path.exists(path):
                addr, port, _kh = self.resolved()
                return KnownHostsMissing(
                    str(self.target), _tilde(path), where, f"ssh-keyscan -p {port} {addr} >> {_tilde(path)}"
                )
        return None

    def known_hosts_path(self) -> str:
        """The known_hosts file host keys are checked against (see the class)."""
        return self.resolved()[2]

    # ----------------------------------------------------------------------------------- connecting

    async def _connect(self):
        # lazy: asyncssh loads only when a host is reached over SSH
        import asyncssh

        t = self.target
        kw: dict[str, Any] = dict(
            config=self.config,
            connect_timeout=self.connect_timeout,
            login_timeout=self.connect_timeout,
            keepalive_interval=self.keepalive_interval,
            keepalive_count_max=self.keepalive_count_max,
            agent_forwarding=False,
            password_auth=False,
            kbdint_auth=False,
            x11_forwarding=False,
        )
        if self._known_hosts:
            kw["known_hosts"] = os.path.expanduser(self._known_hosts)
        # AES-GCM first (one AES-NI call a packet); asyncssh's chacha20-poly1305, its default
        # first choice, builds a cipher object per packet: the SSH loop's largest cost at many
        # small packets (bench/bench_ssh_hosts.py, profiled). Every default algorithm stays offered.
        # A ``Ciphers`` of the user's ssh_config for this host wins: asyncssh applies it when no
        # encryption_algs is given (an explicit one would override it)
        try:
            cfg = self.ssh_config()
            user_ciphers, user_compression = cfg.get("Ciphers", None), cfg.get("Compression", None)
        except Exception:  # noqa: BLE001 - a bad config file: asyncssh.connect reports it below
            user_ciphers = user_compression = None
        if user_ciphers is None:
            kw["encryption_algs"] = preferred_ciphers()
        # compressed: run files are text (JSON lines, logs) that zlib takes to a fifth or less,
        # bytes on the wire per byte appended ~0.2 against 1.005 without (bench/bench_ssh_compression.py);
        # asyncssh offers "none" first unless told. The user's ``Compression`` wins, as for ciphers
        want = self.compression if self.compression is not None else (user_compression is None or user_compression)
        if self.compression is not None or user_compression is None:
            kw["compression_algs"] = ["zlib@openssh.com", "zlib", "none"] if want else ["none"]
        if t.port:
            kw["port"] = t.port
        if t.user:
            kw["username"] = t.user
        if t.jump:
            kw["tunnel"] = t.jump
        if self.client_keys is not None:
            kw["client_keys"] = [os.path.expanduser(k) for k in self.client_keys]
            kw["ignore_encrypted"] = True
        return await asyncio.wait_for(asyncssh.connect(t.host, **kw), self.connect_timeout + 1)

    def _refusal(self, e: BaseException) -> tuple[str, str]:
        """(state kind, one-line message) for a failed connection attempt."""
        # lazy: asyncssh loads only when a host is reached over SSH
        import asyncssh

        t = self.target

        if isinstance(e, FileNotFoundError) and not isinstance(e, KnownHostsMissing):
            e = self._missing_known_hosts() or e  # asyncssh reads the known_hosts files once connected
        if isinstance(e, KnownHostsMissing):
            return HOST_KEY_REFUSED, str(e)
        if isinstance(e, asyncssh.HostKeyNotVerifiable):
            addr, port, kh = self.resolved()
            shown = _tilde(kh)
            key_host = f"[{addr}]:{port}" if port != 22 else addr
            scan = f"ssh-keyscan -p {port} {addr} >> {shown}"
            if _known_host_listed(kh, addr, port):
                return HOST_KEY_REFUSED, (
                    f"host key of {key_host} CHANGED since it was trusted in {shown} (another machine, or "
                    f"an attack): if the change is expected, check the new fingerprint, then "
                    f"`ssh-keygen -f {shown} -R '{key_host}'` and `{scan}`"
                )
            # the command first: a cut line (the runs screen's bottom line) still shows it
            return HOST_KEY_REFUSED, (
                f"unknown host key of {key_host}: trust it with `{scan}` after checking "
                f"its fingerprint (it is not in {shown})"
            )
        if isinstance(e, asyncssh.PermissionDenied):
            keys = self._identity_files()
            add = f"ssh-add {keys[0]}" if keys else "ssh-add KEYFILE"
            return AUTH_FAILED, (
                f"no key accepted for {t}: is its public key in the host's authorized_keys? An "
                f"encrypted key works through the agent only: add the key to ssh-agent (`{add}`); "
                "edgetui never asks for a password or passphrase"
            )
        if isinstance(e, _NoSftp):
            why = " ".join(str(e.cause).split()) or type(e.cause).__name__
            return DOWN, (
                f"{t} gives edgetui no SFTP: add a `Subsystem sftp` line to its sshd_config (edgetui "
                f"reads run files over SFTP; the login itself worked: {why})"
            )
        if isinstance(e, ConnectionRefusedError):
            addr, port, _kh = self.resolved()
            return DOWN, f"connection refused by {addr} port {port}: is sshd running there, on that port?"
        if isinstance(e, asyncio.TimeoutError):
            return DOWN, f"no answer from {t} within {self.connect_timeout:g} s"
        if isinstance(e, OSError) and e.strerror:
            return DOWN, f"cannot connect to {t}: {e.strerror}"
        text = " ".join(str(e).split()) or type(e).__name__
        return DOWN, f"cannot connect to {t}: {text}"

    async def _keep(self) -> None:
        """Connect, watch, reconnect with capped backoff, until closed."""
        self._up = asyncio.Event()
        self._wake = asyncio.Event()
        self._channels = asyncio.Semaphore(self.max_channels - 1)
        backoff = self.backoff_min
        try:
            while not self._closed:
                if self._state.kind not in (AUTH_FAILED, HOST_KEY_REFUSED, DOWN):
                    # a retry of a down host stays "down" (since the host went down, not since the
                    # last attempt): only the first connection and a reconnect after "up" show connecting
                    self._set_state(CONNECTING, message=str(self.target))
                conn = None
                try:
                    conn = await self._connect()
                    coalesce_sends(conn)
                    self._channels = asyncio.Semaphore(self.max_channels - 1)
                    try:
                        sftp = await asyncio.wait_for(conn.start_sftp_client(), self.connect_timeout)
                    except asyncio.TimeoutError:
                        raise
                    except Exception as e:  # noqa: BLE001 - logged in, but no SFTP: said as such
                        raise _NoSftp(e) from None
                except BaseException as e:
                    if conn is not None:  # logged in, then failed (no SFTP, cancelled...): not left open
                        conn.close()
                    if isinstance(e, asyncio.CancelledError):
                        raise
                    kind, msg = self._refusal(e)
                    self._set_state(kind, next_retry=time.time() + backoff, message=msg)
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, self.backoff_max)
                    continue
                self.stats["connects"] += 1
                self._conn, self._sftp = conn, sftp
                for local, remote in list(self._forwards.items()):
                    await self._listen_unix(conn, local, remote)
                for hook in list(self.on_connect):
                    try:
                        await hook(conn)
                    except Exception:  # noqa: BLE001 - a forward that cannot listen is its user's error
                        note_swallowed("a forward that cannot listen is its user's error")
                backoff = self.backoff_min
                t0 = time.monotonic()
                try:
                    await asyncio.wait_for(sftp.stat("."), self.op_timeout)
                    self._set_state(UP, rtt_s=time.monotonic() - t0, message=str(self.target))
                except asyncio.CancelledError:  # closed (or the loop ending) meanwhile: end, the finally closes
                    raise
                except Exception:  # noqa: BLE001 - the first probe is an extra: the loop below probes again
                    note_swallowed("the first probe is an extra: the loop below probes again")
                self._up.set()
                probe = asyncio.ensure_future(self._probe_loop(conn, sftp))
                try:
                    await conn.wait_closed()
                finally:
                    probe.cancel()
                    self._up.clear()
                    self._conn = self._sftp = None
                if self._closed:
                    break
                self._set_state(DOWN, next_retry=time.time() + backoff, message=f"connection to {self.target} lost")
                await self._sleep(backoff)
                backoff = min(backoff * 2, self.backoff_max)
        finally:
            conn = self._conn
            if conn is not None:
                conn.close()

    async def _sleep(self, s: float) -> None:
        assert self._wake is not None
        self._wake.clear()
        try:
            await asyncio.wait_for(self._wake.wait(), s)
        except asyncio.TimeoutError:
            pass

    async def _probe_loop(self, conn, sftp) -> None:
        """Measure the round trip every ``probe_interval`` s (an SFTP stat); slow: degraded."""
        while True:
            await asyncio.sleep(self.probe_interval)
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(sftp.stat("."), max(self.op_timeout, self.slow_s))
            except asyncio.CancelledError:
                raise
            except asyncio.TimeoutError:
                self._set_state(
                    DEGRADED,
                    rtt_s=time.monotonic() - t0,
                    message=f"{self.target} answers no probe within {self.op_timeout:g} s",
                )
                continue
            except Exception:  # noqa: BLE001 - any probe failure ends this connection: the caller reconnects
                conn.close()
                return
            rtt = time.monotonic() - t0
            if rtt > self.slow_s:
                self._set_state(DEGRADED, rtt_s=rtt, message=f"{self.target} is slow ({rtt:.1f} s round trip)")
            else:
                self._set_state(UP, rtt_s=rtt, message=str(self.target))

    # ----------------------------------------------------------------------------------- sync facade

    def _run(self, coro_fn: Callable[[], Any], what: str, timeout: Optional[float] = None):
        """Run ``coro_fn()`` on the SSH loop for at most ``timeout`` (``op_timeout``) seconds."""
        self.start()
        st = self._state
        if st.kind not in (UP, DEGRADED, CONNECTING) or (st.kind == CONNECTING and self.stats["connects"]):
            raise HostDown(self.name, st)
        timeout = self.op_timeout if timeout is None else timeout

        async def call():
            while self._up is None or not self._up.is_set():  # the first connection: wait (bounded)
                if self._state.kind not in (CONNECTING, UP, DEGRADED):
                    raise HostDown(self.name, self._state)
                await asyncio.sleep(0.02)
            return await coro_fn()

        fut = asyncio.run_coroutine_threadsafe(asyncio.wait_for(call(), timeout), ssh_loop())
        try:
            return fut.result(timeout + 1)
        except (asyncio.TimeoutError, TimeoutError):
            fut.cancel()
            if self._state.kind in (UP, DEGRADED):
                self._set_state(
                    DEGRADED,
                    rtt_s=self._state.rtt_s,
                    message=f"{what}: no answer from {self.target} within {timeout:g} s",
                )
                raise OSError(errno.ETIMEDOUT, f"{self.name}: no answer within {timeout:g} s", what) from None
            raise HostDown(self.name, self._state) from None
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 - asyncssh's errors, sorted below into OSError
            # lazy: asyncssh loads only when a host is reached over SSH
            import asyncssh

            if isinstance(e, (asyncssh.DisconnectError, asyncssh.ChannelOpenError, ConnectionError, EOFError)):
                raise OSError(errno.EHOSTDOWN, f"{self.name}: connection lost ({e})", what) from None
            raise os_error(e, what) from None

    def list(self, path: str) -> list[Entry]:
        """Entries of ``path`` with their stats (one SFTP ``readdir``; a symlink is stat'ed to tell
        a directory). SFTP v3 (OpenSSH) has whole-second mtimes and no inodes: ``inode`` is 0."""

        async def go():
            sftp = self._session()
            out = []
            for n in await sftp.readdir(path):
                name = cast(str, n.filename)  # (a str path's names are str)
                if name in (".", ".."):
                    continue
                a = n.attrs
                if a.permissions is not None and statmod.S_ISLNK(a.permissions):
                    try:
                        a = await sftp.stat(path.rstrip("/") + "/" + name)
                    except Exception:  # noqa: BLE001 - a link that cannot be followed is listed as such
                        out.append(Entry(name, False, -1, 0, 0))
                        continue
                out.append(_entry(name, a))
            return out

        return self._run(go, path)

    def stat(self, path: str) -> Optional[Entry]:
        async def go():
            # lazy: asyncssh loads only when a host is reached over SSH
            import asyncssh

            try:
                a = await self._session().stat(path)
            except asyncssh.SFTPNoSuchFile:
                return None
            return _entry(path.rstrip("/").rsplit("/", 1)[-1], a)

        try:
            return self._run(go, path)
        except OSError as e:
            if e.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                return None
            raise

    def read_at(self, path: str, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes of ``path`` from ``offset`` (one SFTP open, read, close; large reads go
        as parallel requests). Raises ``OSError`` (``EISDIR`` for a directory)."""

        async def go():
            sftp = self._session()
            async with sftp.open(path, "rb") as f:
                data = await f.read(n, offset)
            self.stats["bytes_read"] += len(data)
            return data

        return self._run(go, path)

    def read_file(self, path: str, max_bytes: int = 64 << 20) -> bytes:
        """The whole file (at most ``max_bytes``)."""
        return self.read_at(path, 0, max_bytes)

    async def _channel(self) -> asyncio.Semaphore:
        """Hold one unit of the channel budget of the current connection (queued when all are in
        use); returns that budget, to give back to with :meth:`_release`. Each connection has its
        own budget (a reconnect makes a new one, full): a unit taken from the budget of a
        connection that went while waiting is given back to it and taken from the new one, so the
        channels open on one connection never exceed ``max_channels`` across reconnects."""
        while True:
            sem = self._channels
            assert sem is not None
            await sem.acquire()
            if sem is self._channels:
                break
            sem.release()  # the connection it budgeted is gone: queue on the new one's
        self._open_channels += 1
        self.stats["channels"] += 1
        self.stats["max_channels_open"] = max(self.stats["max_channels_open"], self._open_channels + 1)
        return sem

    async def _opening(self, open_fn: Callable[[], Any]):
        """``await open_fn()`` (a channel open), retried for up to 2 s while the server refuses it:
        sshd frees a closed session a moment after the client saw it close, so a queued channel
        can meet a full ``MaxSessions`` for that moment."""
        # lazy: asyncssh loads only when a host is reached over SSH
        import asyncssh

        end = time.monotonic() + 2.0
        while True:
            try:
                return await open_fn()
            except asyncssh.ChannelOpenError:
                if time.monotonic() > end:
                    raise
                await asyncio.sleep(0.05)

    def _release(self, sem: asyncio.Semaphore) -> None:
        """Give back a unit taken with :meth:`_channel` to the budget ``sem`` it came from (a budget
        of a connection since gone is dropped with it: the new connection's is not grown)."""
        self._open_channels -= 1
        sem.release()

    def run(self, argv: builtins.list[str], timeout: Optional[float] = None) -> tuple[int, bytes, bytes]:
        """Run a command on the host over an exec channel (queued on the channel budget): (exit
        status, stdout, stderr); 127 when the command is missing. The command line is built with
        ``shlex.quote`` from ``argv``."""

        cmd = " ".join(shlex.quote(a) for a in argv)

        async def go():
            sem = await self._channel()
            try:
                proc = await self._opening(lambda: self._connected().create_process(cmd, encoding=None))
                r = await proc.wait(check=False)
            finally:
                self._release(sem)
            return (r.exit_status if r.exit_status is not None else 255, r.stdout or b"", r.stderr or b"")

        return self._run(go, cmd, timeout)

    def run_kept(self, argv: builtins.list[str], timeout: Optional[float] = None) -> tuple[int, bytes, bytes]:
        """As :meth:`run`, in the host's long-lived ``sh`` (:mod:`edgetui.hosts.shell`: no new
        session per call; stderr is discarded, the command gets no stdin)."""
        if self._shell is None:
            self._shell = RemoteShell(self)
        shell = self._shell

        async def go():
            rc, out = await shell.run(argv)
            return rc, out, b""

        return self._run(go, " ".join(argv[:2]), timeout)

    def open_unix(self, path: str = "/var/run/docker.sock"):
        """A byte stream to the Unix socket ``path`` on the host (``direct-streamlocal`` over the
        connection): ``(reader, writer)`` asyncio streams bound to the SSH loop, and a ``release``
        callable to give back the channel when done. Raises ``OSError`` when the server refuses."""

        async def go():
            sem = await self._channel()
            try:
                reader, writer = await self._opening(lambda: self._connected().open_unix_connection(path))
            except BaseException:
                self._release(sem)
                raise
            return reader, writer, sem

        reader, writer, sem = self._run(go, path)
        done = threading.Event()

        def release():
            if not done.is_set():
                done.set()

                def close_and_release() -> None:
                    writer.close()
                    self._release(sem)

                ssh_loop().call_soon_threadsafe(close_and_release)

        return reader, writer, release

    async def _listen_unix(self, conn, local: str, remote: str) -> None:
        try:
            os.unlink(local)  # the listener of an earlier connection
        except FileNotFoundError:
            pass
        try:
            await conn.forward_local_path(local, remote)
        except Exception:  # noqa: BLE001 - the engine's user sees it as "engine unavailable"
            note_swallowed("the engine's user sees it as 'engine unavailable'")

    def forward_unix(self, remote_path: str = "/var/run/docker.sock") -> str:
        """A local Unix socket (in a private 0700 directory) whose every connection is a
        ``direct-streamlocal`` channel to ``remote_path`` on the host over this connection; set up
        again after each reconnect. Returns the local path (e.g. for
        ``docker.DockerClient(base_url="unix://" + path)``). Raises ``OSError`` when the host is down."""

        for local, remote in self._forwards.items():
            if remote == remote_path:
                return local
        local = os.path.join(tempfile.mkdtemp(prefix="edgetui-ssh-"), "sock")
        self._forwards[local] = remote_path

        async def go():
            await self._listen_unix(self._connected(), local, remote_path)

        self._run(go, remote_path)
        return local

    def _connected(self) -> asyncssh.SSHClientConnection:
        """The current connection; ``OSError`` (EHOSTDOWN) when it went meanwhile."""
        conn = self._conn
        if conn is None:
            raise OSError(errno.EHOSTDOWN, f"{self.name}: connection lost")
        return conn

    @property
    def connection(self):
        """The current asyncssh connection, or None while not connected (for channel users on the SSH loop)."""
        return self._conn

    def call(self, coro_fn: Callable[[], Any], what: str = "", timeout: Optional[float] = None):
        """Run an async function on the SSH loop under this host's timeouts (for channel users)."""
        return self._run(coro_fn, what, timeout)

    def watch(
        self,
        paths: Iterable[str],
        on_change: Callable[[set[str]], None],
        stop,
        on_ready: Optional[Callable[[], None]] = None,
    ) -> None:
        """Remote ``inotifywait -m -r`` over one exec channel, changed paths (absolute, remote;
        a directory's own events end in ``/``) passed to ``on_change`` (batched over 0.4 s).
        ``on_ready`` is called once inotifywait says its watches are set up (changes before that
        are not reported: callers list once then). A queue overflow reaches ``on_change`` as the
        path :data:`OVERFLOW` (changes were lost: list everything). Raises ``OSError`` when the
        host has no ``inotifywait`` (exit 127) or the connection goes: callers then poll with
        :meth:`list`."""

        paths = list(paths)
        cmd = "sh -c " + shlex.quote(_WATCH_SCRIPT) + " edgetui " + " ".join(shlex.quote(p) for p in paths)

        async def go():
            sem = await self._channel()
            loop = asyncio.get_running_loop()
            try:
                proc = await self._opening(
                    lambda: self._connected().create_process(cmd, encoding="utf-8", errors="surrogateescape")
                )

                async def ready():  # inotifywait's stderr: "Setting up watches." ... "Watches established."
                    while True:
                        try:
                            line = await proc.stderr.readline()
                        except Exception:  # noqa: BLE001 - the connection went: the stdout loop ends too
                            note_swallowed("the connection went: the stdout loop ends too")
                            return
                        if not line:
                            return
                        if "Watches established" in line and on_ready is not None:
                            await loop.run_in_executor(None, on_ready)

                ready_task = asyncio.ensure_future(ready())
                pending: set[str] = set()
                last = time.monotonic()
                part = ""  # a line not ended yet
                while not stop.is_set():
                    # what has arrived, many lines at once (one wait and one task per line was the
                    # loop's cost at hundreds of writes a second); a cancelled read leaves the data
                    try:
                        chunk = await asyncio.wait_for(proc.stdout.read(1 << 16), 0.4)
                    except asyncio.TimeoutError:
                        chunk = None
                    if chunk == "":
                        break
                    if chunk:
                        *lines, part = (part + chunk).split("\n")
                        for line in lines:
                            path, _, events = line.rpartition(" ")
                            pending.add(OVERFLOW if "Q_OVERFLOW" in events or not path else path)
                    if pending and (chunk is None or time.monotonic() - last > 0.4):
                        batch, pending = pending, set()
                        last = time.monotonic()
                        await loop.run_in_executor(None, on_change, batch)
                ready_task.cancel()
                proc.close()
                if stop.is_set():
                    return None
                await proc.wait_closed()
                return proc.exit_status
            finally:
                self._release(sem)

        status = self._run(go, "inotifywait", timeout=10**9)
        if status is not None and not stop.is_set():
            raise OSError(
                errno.ENOSYS if status == 127 else errno.EIO,
                f"{self.name}: cannot watch with inotifywait (exit {status})",
            )


#: the remote side of :meth:`SshHost.watch` (``sh -c SCRIPT edgetui PATH...``): ``inotifywait -m``
#: writes only when something changes, so a session that ended (the channel closed, the connection
#: or sshd gone) would leave it running with parent 1 for good; here a ``cat`` of the channel's
#: stdin ends it as soon as that closes (sshd closes it with the session), and the script ends with
#: inotifywait (its status: 127 without it)
_WATCH_SCRIPT = (
    "command -v inotifywait >/dev/null 2>&1 || exit 127; exec 3<&0; "
    "inotifywait -m -r -e close_write,modify,create,delete,moved_to,moved_from,attrib "
    "--format '%w%f %e' -- \"$@\" </dev/null & p=$!; "
    "{ cat <&3 >/dev/null 2>&1; kill $p 2>/dev/null; } & c=$!; exec 3<&-; "
    "wait $p; s=$?; kill $c 2>/dev/null; exit $s"
)

#: the path :meth:`SshHost.watch` reports when inotifywait's queue overflowed (changes lost)
OVERFLOW = "\0overflow"


def _tilde(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


def _known_host_listed(known_hosts: str, host: str, port: int) -> bool:
    """Does ``known_hosts`` hold any key for ``host`` at ``port`` (a changed key, then)?"""
    try:
        # lazy: asyncssh loads only when a host is reached over SSH
        import asyncssh

        kh = asyncssh.read_known_hosts(known_hosts)
        keys = kh.match(host, host, port)
    except Exception:  # noqa: BLE001 - an unreadable known_hosts is no known key
        note_swallowed("an unreadable known_hosts is no known key")
        return False
    return bool(keys[0] or keys[1] or keys[3] or keys[4])
