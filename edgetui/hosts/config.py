"""Remote hosts to supervise: the hosts file and ``--host user@host[:port]:/path/to/logs/runs``.

The hosts file is TOML in the user's config directory (``~/.config/edgetui/hosts.toml`` on
Linux; :func:`hosts_file`), one table per host, its key the host's name (the host part of its
run keys)::

    [hosts.gpu-1]
    ssh = "me@10.1.2.3:2222"          # user@host[:port], or an alias of ~/.ssh/config
    roots = ["/srv/sforge/logs/runs"]  # runs roots on that host (absolute paths)
    judge_url = "http://127.0.0.1:8000"  # optional: the judge as that host sees it
    jump = "me@bastion.example.org"    # optional: a jump host (else ~/.ssh/config's ProxyJump)
    engine = "auto"                    # optional: the host's Docker engine through its forwarded
                                       # socket ("socket"), its docker CLI ("cli"), either ("auto",
                                       # the default) or not at all ("none")
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from edgetui.hosts.cluster_config import ClusterConfig, clusters_of
from edgetui.hosts.ssh import SshTarget

from edgetui.hosts.ssh import SshHost
import tomllib
from edgetui.parsers.base import NotRegularFile, non_regular_kind

import platformdirs

from edgetui.parsers.base import open_regular

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


@dataclass(frozen=True)
class HostConfig:
    """One remote host: ``name`` (run keys' host part), ``target``, ``roots`` (absolute POSIX paths
    on the host), ``judge_url`` and ``jump`` (optional), ``source`` (where it was given: the file
    or ``--host``), ``engine`` (``auto``, ``socket``, ``cli`` or ``none``:
    :mod:`edgetui.hosts.remote_engine`)."""

    name: str
    target: SshTarget
    roots: tuple[str, ...]
    judge_url: Optional[str] = None
    source: str = "--host"
    engine: str = "auto"

    def ssh_host(self, **kw):
        """An :class:`~edgetui.hosts.ssh.SshHost` for this host (not started)."""

        return SshHost(self.name, self.target, **kw)


def hosts_file() -> Path:
    """The hosts file's path (user config directory; it need not exist)."""

    return Path(platformdirs.user_config_dir("edgetui")) / "hosts.toml"


def is_host_arg(value: str) -> bool:
    """Does ``value`` look like ``[user@]host[:port]:/path`` (a remote root) rather than a name?"""
    return ":/" in value and not value.startswith("/")


def parse_host_arg(value: str, known: Sequence[HostConfig] = ()) -> HostConfig:
    """``user@host[:port]:/path/to/logs/runs`` (or ``alias:/path``) as a host. Its name is the host
    part (``host:port`` when a port is given), or the name of the host of ``known`` (the hosts
    file's) with the same target (address, port, and user where both give one): the same machine
    gives its runs the same keys whichever way it is named. Raises ``ValueError`` naming the
    argument."""
    if not is_host_arg(value):
        raise ValueError(f"--host {value}: expected user@host[:port]:/path/to/logs/runs")
    spec, _, path = value.partition(":/")
    try:
        target = SshTarget.parse(spec)
    except ValueError as e:
        raise ValueError(f"--host {value}: {e}") from None
    name = target.host + (f":{target.port}" if target.port else "")
    for h in known:
        t = h.target
        if (
            (t.host, t.port or 22) == (target.host, target.port or 22)
            and (t.user is None or target.user is None or t.user == target.user)
            and t.jump == target.jump
        ):
            name = h.name
            break
    why = root_error("/" + path)
    if why:
        raise ValueError(f"--host {value}: {why}")
    return HostConfig(name, target, (normal_root("/" + path),), None, "--host")


def host_name_error(value: str, file: Path) -> str:
    """The one-line error for ``--host VALUE`` that names no host of ``file`` (and is not a remote
    root): a path that is not absolute, or no path at all, said as such."""
    if ":" in value and not is_host_arg(value):
        return (
            f"--host {value}: a remote root needs its absolute path after the host "
            "(user@host[:port]:/path/to/logs/runs)"
        )
    return f"--host {value}: no such host in {file} (a remote root is user@host[:port]:/path/to/logs/runs)"


#: the largest hosts file read (a hosts file is a few lines; more is not one)
MAX_HOSTS_FILE_BYTES = 4 << 20

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def root_error(root: str) -> Optional[str]:
    """Why ``root`` (a runs root on a host, as given) cannot be one, or None: not an absolute
    path, a control character in it, or the whole file system (``/``, also spelled ``//``,
    ``/..``)."""
    if not root.startswith("/"):
        return f"{root!r} is not an absolute path"
    if _CONTROL_RE.search(root):
        return f"{root!r} holds a control character"
    if normal_root(root) == "/":
        return f"{root!r} is the whole file system, not a runs root (e.g. /srv/sforge/logs/runs)"
    return None


def normal_root(root: str) -> str:
    """``root`` normalised (``//a/./b/`` -> ``/a/b``): two spellings of one directory are one root."""
    n = posixpath.normpath(root)
    return "/" + n.lstrip("/") if n.startswith("/") else n


def load_clusters(path: Optional[Path] = None) -> list[ClusterConfig]:
    """The ``[clusters.NAME]`` of the hosts file (:mod:`edgetui.hosts.cluster_config`); [] when
    there is no file. Raises ``ValueError`` with one line naming the file."""
    p = Path(path) if path else hosts_file()
    doc = _read_hosts_doc(p)
    return [] if doc is None else clusters_of(doc, str(p))


def load_hosts(path: Optional[Path] = None, notes: Optional[list[str]] = None) -> list[HostConfig]:
    """The hosts of the hosts file (``path``, default :func:`hosts_file`); [] when it does not
    exist. Raises ``ValueError`` with one line naming the file (and line, for TOML errors; the
    host, for a root that cannot be one: :func:`root_error`). A file that is not a regular file (a
    FIFO would block the read) is refused. A root listed again (in any spelling) is kept once, and
    ``notes`` (when given) gets one line saying so."""

    p = Path(path) if path else hosts_file()
    doc = _read_hosts_doc(p)
    if doc is None:
        return []
    hosts = doc.get("hosts", {})
    if not isinstance(hosts, dict):
        raise ValueError(f"{p}: [hosts] must be a table of hosts ([hosts.NAME])")
    return _hosts_of(hosts, p, notes)


def _read_hosts_doc(p: Path) -> Optional[dict]:
    """The parsed hosts file, None when it does not exist (see :func:`load_hosts` for the refusals)."""
    try:
        st = p.stat()
    except FileNotFoundError:  # no hosts file: no hosts
        return None
    except OSError as e:
        raise ValueError(f"{p}: cannot read ({e.strerror or e})") from None
    what = non_regular_kind(st.st_mode)
    if what:
        raise ValueError(f"{p}: the hosts file is {what}, not a regular file (a TOML file is read)")
    if st.st_size > MAX_HOSTS_FILE_BYTES:
        raise ValueError(f"{p}: the hosts file is {st.st_size} bytes; more than {MAX_HOSTS_FILE_BYTES} is not one")
    try:
        with open_regular(p) as fp:  # (non-blocking open: made a FIFO since the stat, it is refused too)
            raw = fp.read(MAX_HOSTS_FILE_BYTES + 1)
    except FileNotFoundError:  # removed since the stat: no hosts
        return None
    except NotRegularFile:
        raise ValueError(f"{p}: the hosts file is not a regular file (a TOML file is read)") from None
    except OSError as e:
        raise ValueError(f"{p}: cannot read ({e.strerror or e})") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{p}: {e}") from None
    return doc


def _hosts_of(hosts: dict, p: Path, notes: Optional[list[str]]) -> list[HostConfig]:
    out = []
    for name, t in hosts.items():
        where = f"{p}: [hosts.{name}]"
        if not isinstance(t, dict):
            raise ValueError(f"{where}: must be a table")
        if not _NAME_RE.match(name) or name == "local":
            raise ValueError(f"{where}: a host name is letters, digits, . _ : - (and not 'local')")
        unknown = set(t) - {"ssh", "roots", "judge_url", "jump", "engine"}
        if unknown:
            raise ValueError(f"{where}: unknown key {sorted(unknown)[0]!r} (ssh, roots, judge_url, jump, engine)")
        engine = t.get("engine", "auto")
        if engine not in ("auto", "socket", "cli", "none"):
            raise ValueError(f"{where}: engine must be one of auto, socket, cli, none")
        ssh = t.get("ssh", name)
        roots = t.get("roots")
        if not isinstance(ssh, str):
            raise ValueError(f"{where}: ssh must be a string (user@host[:port] or an ssh_config alias)")
        if not isinstance(roots, list) or not roots or not all(isinstance(r, str) and r.startswith("/") for r in roots):
            raise ValueError(f"{where}: roots must be a list of absolute paths on that host")
        kept: dict[str, None] = {}
        for r in roots:
            why = root_error(r)
            if why:
                raise ValueError(f"{where}: roots: {why}")
            kept.setdefault(normal_root(r))
        if len(kept) < len(roots) and notes is not None:
            notes.append(f"{where}: {len(roots) - len(kept)} repeated root(s) read once")
        jump, judge = t.get("jump"), t.get("judge_url")
        for k, v in (("jump", jump), ("judge_url", judge)):
            if v is not None and not isinstance(v, str):
                raise ValueError(f"{where}: {k} must be a string")
        try:
            target = SshTarget.parse(ssh, jump=jump)
        except ValueError as e:
            raise ValueError(f"{where}: ssh = {e}") from None
        out.append(HostConfig(name, target, tuple(kept), judge, str(p), engine))
    return out
