"""The ingest's helper processes (the parsing process, the shard): started so that a ctrl+c or a
``kill -9`` of the ingest leaves nothing behind. Core: no Textual imports.

* **Deaf to ctrl+c.** A ctrl+c in a terminal signals the whole foreground process group: the
  helpers too, where a ``KeyboardInterrupt`` printed a traceback or was sent back as a parse
  failure ("could not record", the ingest going on). :func:`start_process` starts them with
  SIGINT ignored (inherited through ``exec``; Python installs no handler for an ignored SIGINT);
  the ingest itself takes the ctrl+c and stops them (``kill``: they hold nothing worth keeping).
* **No named semaphores.** ``multiprocessing.Queue`` and ``Lock`` are POSIX named semaphores
  (``/dev/shm/sem.mp-*``), removed by the resource tracker process: a ``kill -9`` of the whole
  process group (the tracker too) left 6 of them per ingest. Here messages go through a pipe
  (:func:`multiprocessing.Pipe`; :class:`Sender` keeps a few in flight from a thread, as a
  queue's feeder thread does) and the claims of the shard are guarded by a POSIX record lock
  on a file (:class:`FileLock`): nothing outlives the processes but that file, which the shard's
  stale-file sweep removes.
"""

from __future__ import annotations

import fcntl
import os
import queue
import signal
import threading
from typing import Any, Callable, Optional

import multiprocessing as mp

__all__ = ["start_process", "ignore_ctrl_c", "Sender", "FileLock"]


def start_process(target: Callable, args: tuple, name: str):
    """A started ``spawn`` process running ``target(*args)``, with SIGINT ignored from its first
    instruction. SIGINT is blocked in this thread while the disposition is switched, so a ctrl+c
    meanwhile stays pending and is taken by this process's own handler after."""

    ctx = mp.get_context("spawn")
    proc = ctx.Process(target=target, args=args, daemon=True, name=name)
    if threading.current_thread() is not threading.main_thread():
        proc.start()  # (signal handlers belong to the main thread; the helper's own start ignores it below)
        return proc
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        try:
            old = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                proc.start()
            finally:
                signal.signal(signal.SIGINT, old)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)  # (a ctrl+c meanwhile is raised here)
        return proc
    except BaseException:
        if proc.pid is not None:  # (started, and nobody will stop it)
            proc.kill()
            proc.join(5)
        raise


def ignore_ctrl_c() -> None:
    """In a helper process: SIGINT ignored and unblocked (for one started from a thread, whose
    start could not ignore it beforehand)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class Sender:
    """The helper's end of a pipe, ``put`` like a queue's: up to ``in_flight`` messages wait in
    this process while a thread sends them (the helper works on meanwhile). :meth:`close` sends
    what waits and closes the pipe."""

    def __init__(self, conn, in_flight: int = 4) -> None:
        self.conn = conn
        self._q: queue.Queue = queue.Queue(maxsize=in_flight)
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, name="edgetui-sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            msg = self._q.get()
            if msg is _END:
                return
            try:
                self.conn.send(msg)
            except (OSError, ValueError) as e:  # (the reader is gone: the helper is being stopped)
                self._error = e
                return

    def put(self, msg: Any) -> None:
        if self._error is not None:
            raise BrokenPipeError(f"the ingest stopped reading ({self._error})")
        self._q.put(msg)

    def close(self) -> None:
        if self._thread.is_alive():
            self._q.put(_END)
            self._thread.join()
        self.conn.close()


_END = object()


class FileLock:
    """A lock between processes: a POSIX record lock (``lockf``) on the file at ``path``, made and
    opened here; another process opens it by its path at its first use (the object pickles as
    its path). The path may be removed once both have it open. Not between threads."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: Optional[int] = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.path, self._fd = state["path"], None

    def __enter__(self) -> "FileLock":
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
        fcntl.lockf(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:  # (set by __enter__)
            fcntl.lockf(self._fd, fcntl.LOCK_UN)

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            os.close(fd)
            self._fd = None
