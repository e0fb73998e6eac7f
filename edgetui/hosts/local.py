"""This machine as a :class:`~edgetui.hosts.Host`: ``os.scandir`` / ``os.stat`` / ``pread``, and
``watchfiles`` (inotify) for changes."""

from __future__ import annotations

import os
from typing import Callable, Iterable, Optional

from edgetui.hosts import Entry

import watchfiles


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
                out.append(Entry(e.name, (st.st_mode & 0o170000) == 0o040000, st.st_size, st.st_mtime_ns, st.st_ino))
        return out

    def stat(self, path: str) -> Optional[Entry]:
        try:
            st = os.stat(path)
        except OSError:  # gone or unreachable: no entry (HostListing.stat's None)
            return None
        return Entry(os.path.basename(path), (st.st_mode & 0o170000) == 0o040000, st.st_size, st.st_mtime_ns, st.st_ino)

    def read_at(self, path: str, offset: int, n: int) -> bytes:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # never blocks on a FIFO
        try:
            return os.pread(fd, n, offset)
        finally:
            os.close(fd)

    def watch(
        self, paths: Iterable[str], on_change: Callable[[set[str]], None], stop, *, idle_s: Optional[float] = None
    ) -> None:
        """inotify through ``watchfiles`` (recursive: one watch per directory). ``idle_s``: also call
        ``on_change(set())`` after that many seconds without a change (the first such call says the
        watches are in place; the caller may look at its own state and set ``stop``). Raises ``OSError`` when a
        path cannot be watched; :func:`is_watch_limit` tells the watch limit
        (``fs.inotify.max_user_watches``) from other causes."""

        paths = list(paths)

        def run(ignore_denied: bool) -> None:
            for changes in watchfiles.watch(
                *paths,
                stop_event=stop,
                debounce=400,
                step=50,
                raise_interrupt=False,
                ignore_permission_denied=ignore_denied,
                watch_filter=None,
                yield_on_timeout=idle_s is not None,
                rust_timeout=int((idle_s or 5.0) * 1000),
            ):
                if changes or idle_s is not None:
                    on_change({p for _, p in changes})
                if stop.is_set():
                    return

        try:
            try:
                # (watchfiles' ignore_permission_denied also hides the watch limit: the watches past it
                # are silently missing; so it is asked for only when a folder cannot be read)
                run(False)
            except Exception as e:
                if is_watch_limit(e) or "ermission denied" not in str(e):
                    raise
                run(True)  # a folder we may not read: watched without it
        except OSError:
            raise
        except Exception as e:  # watchfiles raises its own errors for inotify limits: say OSError
            raise OSError(f"cannot watch {', '.join(map(str, paths))}: {e}") from e


def is_watch_limit(e: BaseException) -> bool:
    """Is ``e`` (from :meth:`LocalHost.watch`) the file watcher's limit (inotify's watches or
    instances per user) rather than a path that went away?"""
    txt = str(e)
    return (
        "watch limit" in txt
        or "MaxFilesWatch" in txt
        or "max_user_watches" in txt
        or getattr(e, "errno", None) in (28, 24)
    )  # ENOSPC (inotify_add_watch), EMFILE (instances)
