"""A real OpenSSH ``sshd`` on 127.0.0.1 for the SSH host tests (and benches).

:class:`Sshd` starts Debian's ``sshd`` (found or installed by :mod:`prereqs`) on a free
loopback port in the foreground (``-D -e``), with a generated ed25519 host key, a generated
unencrypted user key in its ``authorized_keys``, the current user as the login, no password
authentication, its own ``MaxSessions``, Unix socket forwarding allowed unless ``stream_local=False``, and OpenSSH's ``sftp-server`` as the SFTP subsystem.
Only files under its temporary directory are written. :meth:`Sshd.known_hosts` writes the
client's known_hosts line, :meth:`Sshd.stop_all` / :meth:`Sshd.cont_all` SIGSTOP / SIGCONT the
server with every session process it forked (a slow host), :meth:`Sshd.kill_all` kills them (a
dead host) and :meth:`Sshd.start` starts it again on the same port with the same keys.
"""

from __future__ import annotations

import getpass
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "edgetui-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (read from /proc)."""
    by_parent: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        by_parent.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in by_parent.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def rchar(pids: list[int]) -> int:
    """Bytes the processes ``pids`` read (``rchar`` of each one's ``/proc/<pid>/io``; a gone one counts 0):
    what an sshd's sftp-server read, counted at the server."""
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/io").read_text().splitlines():
                if line.startswith("rchar:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def _alive(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


class Sshd:
    """One sshd in ``tmp`` (a directory); ``port`` free on 127.0.0.1; ``user_key`` the client's key."""

    def __init__(
        self,
        sshd: Path,
        tmp: Path,
        *,
        max_sessions: int = 10,
        port: Optional[int] = None,
        extra: str = "",
        stream_local: bool = True,
    ):
        self.sshd, self.tmp = Path(sshd), Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.user = getpass.getuser()
        self.host_key = keygen(self.tmp / "host_ed25519")
        self.user_key = keygen(self.tmp / "user_ed25519")
        (self.tmp / "authorized_keys").write_text((self.tmp / "user_ed25519.pub").read_text())
        os.chmod(self.tmp / "authorized_keys", 0o600)
        self.config = self.tmp / "sshd_config"
        self.log = self.tmp / "sshd.log"
        self.config.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key}\n"
            f"PidFile {self.tmp / 'sshd.pid'}\nAuthorizedKeysFile {self.tmp / 'authorized_keys'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
            f"MaxSessions {max_sessions}\nMaxStartups 100\n"
            f"AllowStreamLocalForwarding {'yes' if stream_local else 'no'}\n"
            "AllowAgentForwarding no\nX11Forwarding no\nClientAliveInterval 0\n"
            "Subsystem sftp /usr/lib/openssh/sftp-server\n" + extra
        )
        self.proc: Optional[subprocess.Popen] = None
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory

    def start(self, timeout: float = 10.0) -> "Sshd":
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [str(self.sshd), "-D", "-e", "-f", str(self.config)], stdout=logf, stderr=logf, stdin=subprocess.DEVNULL
        )
        logf.close()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2) as s:
                    s.settimeout(2)
                    if s.recv(4).startswith(b"SSH-"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on {self.port}: {self.log.read_text()[-2000:]}")

    def known_hosts(self, path: Path) -> Path:
        """Write (append) the known_hosts line of this server to ``path``."""
        pub = (self.tmp / "host_ed25519.pub").read_text().split()
        with open(path, "a") as f:
            f.write(f"[127.0.0.1]:{self.port} {pub[0]} {pub[1]}\n")
        return path

    def pids(self) -> list[int]:
        return [self.proc.pid, *_children(self.proc.pid)] if self.proc else []

    def sftp_server_pids(self) -> list[int]:
        out = []
        for p in self.pids():
            try:
                if Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].endswith(b"sftp-server"):
                    out.append(p)
            except OSError:
                pass
        return out

    def stop_all(self) -> None:
        for p in self.pids():
            os.kill(p, signal.SIGSTOP)

    def cont_all(self) -> None:
        for p in self.pids():
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def _sshd_pids(self) -> list[int]:
        """The listener and its per-connection sshd processes (not the sessions' shells and servers)."""
        out = []
        for p in self.pids():
            try:
                if os.path.realpath(f"/proc/{p}/exe") == os.path.realpath(self.sshd):
                    out.append(p)
            except OSError:
                pass
        return out

    def kill_all(self) -> None:
        """A dead host: SIGKILL the listener and every per-connection sshd. The sessions' own
        processes (the login shell, sftp-server, find) are not killed: their pipes close and they
        end by themselves (a shell killed inside its rc file can leave a stale lock behind, e.g.
        pyenv's rehash lock, which then stalls every shell of the user for a minute)."""
        if not self.proc:
            return
        everything = self.pids()
        for p in everything:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass
        for p in self._sshd_pids():
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(5)
        self.proc = None
        end = time.monotonic() + 5  # sessions gone: the port is free to listen on again
        while time.monotonic() < end and any(_alive(p) for p in everything[1:]):
            time.sleep(0.05)

    def close(self) -> None:
        self.kill_all()
