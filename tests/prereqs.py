"""System tools the test suite drives, found or installed when the session starts.

The README's test command (``pytest -q`` after ``pip install -e '.[dev]'``) is the
whole set-up: Python packages come from ``pyproject.toml``, and the few system tools
the tests need (below: busybox-static, tmux, sshd, inotifywait, postgresql, chromium-headless-shell) are found here, or installed through Debian's ``apt-get`` when
the tests run as root (or with password-less ``sudo``). Without either, the exact
install line is printed once and the tests that need a missing tool skip with that
line as their reason; under ``CI=true`` they fail instead (a CI run that silently
skips its Docker or terminal tests proves nothing).

``busybox-static`` is special: it is only a file (the root filesystem of the tiny
images the Docker tests ``docker import``), so without root it is fetched with
``apt-get download`` and unpacked with ``dpkg-deb -x`` into a cache directory; no
root is needed for that.

Set ``EDGETUI_TEST_NO_INSTALL=1`` to never install anything (only find).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

#: where an unpacked busybox-static goes when it cannot be installed system-wide
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "edgetui-tests"


def is_static_elf(path: Path) -> bool:
    """Is ``path`` an ELF executable without a program interpreter (statically linked)?

    A dynamically linked busybox (Debian's ``busybox`` package) fails inside an empty
    root filesystem, which has no shared libraries.
    """
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return False
            is64 = head[4] == 2
            endian = "<" if head[5] == 1 else ">"
            if is64:
                (phoff,) = struct.unpack_from(endian + "Q", head, 32)
                phentsize, phnum = struct.unpack_from(endian + "HH", head, 54)
            else:
                (phoff,) = struct.unpack_from(endian + "I", head, 28)
                phentsize, phnum = struct.unpack_from(endian + "HH", head, 42)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except (OSError, struct.error):
        return False
    for i in range(phnum):
        (p_type,) = struct.unpack_from(endian + "I", table, i * phentsize)
        if p_type == 3:  # PT_INTERP
            return False
    return True


def find_busybox() -> Optional[Path]:
    """A statically linked busybox: the system's, else the one unpacked into :data:`CACHE`."""
    cands = [Path("/bin/busybox"), Path("/usr/bin/busybox"), CACHE / "busybox-static" / "bin" / "busybox"]
    which = shutil.which("busybox")
    if which:
        cands.append(Path(which))
    for c in cands:
        if is_static_elf(c):
            return c
    return None


def find_postgres() -> Optional[Path]:
    """Debian's PostgreSQL server (``initdb`` and ``postgres`` in /usr/lib/postgresql/<major>/bin, not on PATH)."""
    base = Path("/usr/lib/postgresql")
    if base.is_dir():
        for d in sorted(base.iterdir(), key=lambda p: (len(p.name), p.name), reverse=True):
            if (d / "bin" / "initdb").exists() and (d / "bin" / "postgres").exists():
                return d / "bin" / "postgres"
    return None


def find_sshd() -> Optional[Path]:
    """OpenSSH's server (Debian's ``openssh-server`` puts it in /usr/sbin, often not on a user's PATH)."""
    for c in (shutil.which("sshd"), "/usr/sbin/sshd", "/usr/local/sbin/sshd"):
        if c and os.access(c, os.X_OK):
            return Path(c)
    return None


@dataclass
class Tool:
    """One system tool: how to find it and which Debian package provides it."""

    name: str
    package: str
    needed_by: str
    find: Callable[[], Optional[Path]]
    #: can be fetched as a file without root (apt-get download + dpkg-deb -x)
    unpackable: bool = False
    missing_reason: str = field(default="", init=False)


def _which(cmd: str) -> Callable[[], Optional[Path]]:
    def f() -> Optional[Path]:
        p = shutil.which(cmd)
        return Path(p) if p else None

    return f


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            "busybox",
            "busybox-static",
            "the Docker tests (root filesystem of their images)",
            find_busybox,
            unpackable=True,
        ),
        Tool("tmux", "tmux", "the end-to-end terminal tests", _which("tmux")),
        Tool("sshd", "openssh-server", "the SSH host tests (a real OpenSSH server on 127.0.0.1)", find_sshd),
        Tool(
            "inotifywait",
            "inotify-tools",
            "the SSH feed's change notices from the host (tests/test_ssh_inotify.py)",
            _which("inotifywait"),
        ),
        Tool(
            "kubectl",
            "kubectl",  # (Kubernetes' own apt repository, pkgs.k8s.io, names it so)
            "the pod shell test (kubectl exec against the fake API server, tests/test_pod_watch.py)",
            _which("kubectl"),
        ),
        Tool(
            "postgres",
            "postgresql",
            "the team record's tests (tests/test_team_sync.py: a real PostgreSQL on a Unix socket)",
            find_postgres,
        ),
        Tool(
            "chromium-headless-shell",
            "chromium-headless-shell",
            "the browser tests (tests/test_report_browser.py, tests/test_serve_browser.py)",
            _which("chromium-headless-shell"),
        ),
    )
}


def _run(cmd: list[str]) -> bool:
    try:
        return (
            subprocess.run(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=600,
                env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _apt_install(packages: list[str], say: Callable[[str], None]) -> bool:
    if not shutil.which("apt-get"):
        return False
    if os.geteuid() == 0:
        prefix: list[str] = []
    elif shutil.which("sudo") and _run(["sudo", "-n", "true"]):
        prefix = ["sudo", "-n"]
    else:
        return False
    say(f"edgetui tests: installing {' '.join(packages)} with apt-get (system tools the tests drive)")
    install = [*prefix, "apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    if _run(install):
        return True
    return _run([*prefix, "apt-get", "update", "-qq"]) and _run(install)


def _unpack_busybox(say: Callable[[str], None]) -> bool:
    """``apt-get download busybox-static`` + ``dpkg-deb -x`` into :data:`CACHE` (no root needed)."""
    if not (shutil.which("apt-get") and shutil.which("dpkg-deb")):
        return False
    say(f"edgetui tests: fetching busybox-static into {CACHE} (apt-get download; no root needed)")
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        try:
            r = subprocess.run(
                ["apt-get", "download", "-qq", "busybox-static"], cwd=tmp, capture_output=True, timeout=300
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        debs = list(Path(tmp).glob("busybox-static*.deb"))
        if r.returncode != 0 or not debs:
            return False
        dest = CACHE / "busybox-static"
        shutil.rmtree(dest, ignore_errors=True)
        return _run(["dpkg-deb", "-x", str(debs[0]), str(dest)])


def ensure(say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> dict[str, Tool]:
    """Find every tool of :data:`TOOLS`, installing the missing ones where allowed.

    Returns the tools still missing (name -> Tool with ``missing_reason`` set: the
    exact install line). Never raises.
    """
    missing = [t for t in TOOLS.values() if t.find() is None]
    if missing and os.environ.get("EDGETUI_TEST_NO_INSTALL") != "1":
        if _apt_install([t.package for t in missing], say):
            missing = [t for t in missing if t.find() is None]
        for t in [t for t in missing if t.unpackable]:
            if t.name == "busybox" and _unpack_busybox(say) and t.find() is not None:
                missing.remove(t)
    if missing:
        line = "sudo apt-get install -y " + " ".join(t.package for t in missing)
        for t in missing:
            t.missing_reason = f"{t.name} not found: {t.needed_by} need it; install it with: {line}"
        say(f"edgetui tests: missing {', '.join(t.name for t in missing)}; install with: {line}")
    return {t.name: t for t in missing}


_MISSING: Optional[dict[str, Tool]] = None


def session_start(install: bool = True) -> None:
    """Called from ``conftest.py``'s ``pytest_sessionstart``: in the main process (which installs), then in
    each xdist worker (``install=False``: only find, so that two workers never run apt-get at once)."""
    global _MISSING
    if install:
        _MISSING = ensure()
        return
    no_install = os.environ.get("EDGETUI_TEST_NO_INSTALL")
    os.environ["EDGETUI_TEST_NO_INSTALL"] = "1"
    try:
        _MISSING = ensure(say=lambda s: None)
    finally:
        if no_install is None:
            os.environ.pop("EDGETUI_TEST_NO_INSTALL")
        else:
            os.environ["EDGETUI_TEST_NO_INSTALL"] = no_install


def need(name: str) -> Path:
    """The path of tool ``name``; skips the calling test (fails it under ``CI=true``) when missing."""
    import pytest

    tool = TOOLS[name]
    path = tool.find()
    if path is not None:
        return path
    reason = tool.missing_reason or (
        f"{name} not found: {tool.needed_by} need it; install it with: sudo apt-get install -y {tool.package}"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: a missing prerequisite fails)")
    pytest.skip(reason)
    raise AssertionError("unreachable")
