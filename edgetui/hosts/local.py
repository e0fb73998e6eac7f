"""This machine as a :class:`~edgetui.hosts.Host`: ``os.scandir`` / ``os.stat`` / ``pread``, and
``watchfiles`` (inotify) for changes."""

from __future__ import annotations

import os
from typing import Callable, Iterable, Optional

from . import Entry


class LocalHost:
    """The local file system. ``name`` is the host part of run keys (``local`` by default)."""

    def __init__(self, name: str = "local"):
        self.name = name

    def list(self, path: str) -> list[Entry]:
        out = []
        with os.scandir(path) as it:
            for e in it:
                try:
                    st = e.stat()
                except OSError:
                    out.append(Entry(e.name, False, -1, 0, 0))
                    continue
                out.append(Entry(e.name, (st.st_mode & 0o170000) == 0o040000, st.st_size, st.st_mtime_ns,
                                 st.st_ino))
        return out

    def stat(self, path: str) -> Optional[Entry]:
        try:
            st = os.stat(path)
        except OSError:
            return None
        return Entry(os.path.basename(path), (st.st_mode & 0o170000) == 0o040000, st.st_size, st.st_mtime_ns,
                     st.st_ino)

    def read_at(self, path: str, offset: int, n: int) -> bytes:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # never blocks on a FIFO
        try:
            return os.pread(fd, n, offset)
        finally:
            os.close(fd)

    def watch(self, paths: Iterable[str], on_change: Callable[[set[str]], None], stop) -> None:
        import watchfiles

        try:
            for changes in watchfiles.watch(*paths, stop_event=stop, debounce=400, step=50,
                                            raise_interrupt=False, ignore_permission_denied=True,
                                            watch_filter=None, yield_on_timeout=False):
                if changes:
                    on_change({p for _, p in changes})
                if stop.is_set():
                    return
        except OSError:
            raise
        except Exception as e:  # watchfiles raises its own errors for inotify limits: say OSError
            raise OSError(f"cannot watch {', '.join(map(str, paths))}: {e}") from e
