"""A real PostgreSQL server for the team-record tests (``@pytest.mark.postgres``).

Debian's ``postgresql`` (found or installed by :mod:`prereqs`): ``initdb`` makes a cluster in a
fresh folder under the system temp dir, ``postgres`` serves it on a Unix socket only
(``listen_addresses=''``: no TCP port to collide on, the folder is the address). PostgreSQL
refuses to run as root, so under root the cluster belongs to the ``postgres`` system user
(the Debian package's) and the server runs as it. Each xdist worker starts its own server
(a session fixture); each test gets its own database in it (``CREATE DATABASE``), so tests
never see each other's rows. fsync is off: a test's data needs no durability across a power
cut, and a server killed with SIGKILL still recovers from its WAL.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import signal
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Optional

import adbc_driver_postgresql.dbapi as pg_dbapi

PORT = 5432  # only the socket file's name (.s.PGSQL.5432): the socket folder is unique per server


def _die_with_parent() -> None:
    """In the server's process before it starts (after its user is set, which would clear it): SIGQUIT,
    PostgreSQL's immediate shutdown, when the process that started it ends, whatever ended it (a
    test run killed, an interrupted bench): no server outlives its tests."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGQUIT)  # 1: PR_SET_PDEATHSIG


class _ExitedEarly(RuntimeError):
    pass


class PgServer:
    def __init__(self, bindir: Path):
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="edgetui-pg-"))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.log = self.root / "server.log"
        self.proc: Optional[subprocess.Popen] = None
        self.user: Optional[str] = None
        if os.geteuid() == 0:  # initdb and postgres refuse root
            self.user = "postgres"
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        os.chmod(self.root, 0o755)
        self._as_owner(
            [
                str(bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "edgetui",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C",
            ]
        )
        self._as_owner(["mkdir", "-p", str(self.sock)])

    def _as_owner(self, cmd: list[str]) -> None:
        subprocess.run(cmd, user=self.user, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        """Start the server; after a SIGKILL its orphaned backends may still hold the shared memory for a
        moment (the new postmaster then exits at once): started again until it stays."""
        for _ in range(50):
            try:
                return self._start()
            except _ExitedEarly:
                time.sleep(0.2)
        return self._start()

    def _start(self) -> None:
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-k",
                str(self.sock),
                "-p",
                str(PORT),
                "-c",
                "listen_addresses=",
                "-c",
                "fsync=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=60",
                "-c",
                "shared_buffers=32MB",
            ],
            user=self.user,
            stdout=logf,
            stderr=logf,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        logf.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise _ExitedEarly(f"postgres exited ({self.proc.returncode}): {self.log.read_text()[-2000:]}")
            try:
                with pg_dbapi.connect(self.url("postgres")) as c:
                    c.cursor().execute("SELECT 1")
                return
            except pg_dbapi.Error:  # not accepting connections yet: try again until the deadline
                time.sleep(0.1)
        raise RuntimeError(f"postgres did not start in 60 s: {self.log.read_text()[-2000:]}")

    def stop(self, kill: bool = False) -> None:
        """Stop the server: SIGINT (fast shutdown: clients cut off), or SIGKILL (a crash)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(9 if kill else 2)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def url(self, db: str, user: str = "edgetui") -> str:
        return f"postgresql:///{db}?host={self.sock}&port={PORT}&user={user}"

    def sql(self, statement: str, db: str = "postgres") -> list[tuple]:
        with pg_dbapi.connect(self.url(db), autocommit=True) as c:
            cur = c.cursor()
            cur.execute(statement)
            try:
                return list(cur.fetchall())
            except pg_dbapi.Error:  # a statement without a result set
                return []

    def new_database(self) -> str:
        name = "t_" + uuid.uuid4().hex[:12]
        self.sql(f"CREATE DATABASE {name}")
        return name

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
