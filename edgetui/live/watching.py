"""Noticing changes under the watched runs roots: the file watcher, and stat polling when it cannot
run (a part of :class:`edgetui.live.supervisor.Supervisor`; core: no Textual).

The watcher (:meth:`edgetui.hosts.local.LocalHost.watch`, inotify through ``watchfiles``, one
watch per directory) wakes a refresh at each change, tells the supervisor of paths added outside
every known task dir (a new run: discovery runs at once instead of every ``discovery_interval_s``)
and of changes under the task dir of a run asleep (it is woken, :mod:`edgetui.live.dormant`).

When the watcher's limit is reached (``fs.inotify.max_user_watches``: a root of 750 runs has over
12,000 submission folders, each a watch), or with ``poll=True`` (network mounts, where inotify sees
nothing), there is no watcher: refreshes poll by stat, every ``poll_delay_s`` (at most ``interval``)
while they find something new, doubling up to ``max_poll_s`` while they find nothing; runs asleep are checked by their
cheap stats every ``dormant_poll_s``. The watcher is tried again every :data:`WATCH_RETRY_S`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable, Optional

from edgetui.events import one_line
from edgetui.hosts.local import LocalHost, is_watch_limit
from edgetui.live.alarms import AlarmSettings
from edgetui.live.dormant import DormantRuns

#: seconds between two attempts to start the watcher after its limit was reached
WATCH_RETRY_S = 600.0


class _Either:
    """``is_set()`` of either of two events (watchfiles' stop_event)."""

    def __init__(self, a: threading.Event, b: threading.Event):
        self.a, self.b = a, b

    def is_set(self) -> bool:
        return self.a.is_set() or self.b.is_set()


class FileWatch:
    """The file watcher of ``roots`` (run in its own thread by :meth:`watch_files`) and the gaps
    between refreshes without it. ``wake`` starts a refresh; ``known`` tells a path inside or above
    a watched run (no new run); changes under a run asleep go to ``dormant``; notes are said through
    ``note`` under ``lock`` (the refresh's)."""

    def __init__(
        self,
        roots: list[Path],
        local_host: LocalHost,
        settings: AlarmSettings,
        dormant: DormantRuns,
        known: Callable[[str], bool],
        wake: Callable[[], None],
        note: Callable[[str], None],
        lock: threading.RLock,
    ):
        self.roots = roots
        self.local_host = local_host
        self.settings = settings
        self.dormant = dormant
        self.known = known
        self.wake = wake
        self.note = note
        self.lock = lock
        self.watching = False  # the file watcher is running (its watches are in place)
        #: "starting", "inotify", "polling: <why>" (no watcher: stat polling, adaptive intervals)
        self.mode = "starting"
        self.rediscover = False  # the watcher saw a path added outside every known task dir
        self.poll_gap: Optional[float] = None  # the current stat-polling interval (None until polling)
        self.found = False  # the last refresh found something new (adaptive polling)
        self.poll_delay_s = 1.0  # the shortest gap without the watcher (run_forever's)

    def next_gap(self, interval: float) -> float:
        """The wait before the next refresh: ``interval`` while the watcher runs; without it,
        ``poll_delay_s`` (at most ``interval``) after a refresh that found something, doubled after
        each one that found nothing, up to ``max_poll_s``."""
        if self.watching:
            self.poll_gap = None
            return interval
        base = min(interval, self.poll_delay_s)
        gap = self.poll_gap
        if gap is None or self.found:
            gap = base
        else:
            gap = min(max(gap * 2, base), max(base, self.settings.max_poll_s))
        self.poll_gap = gap
        return gap

    def _on_paths(self, paths: set[str]) -> None:
        """Changes reported by the watcher (its thread)."""

        self.wake()
        for p in paths:
            key = self.dormant.owner(p)
            if key is not None:
                self.dormant.touched.append(key)
            elif not self.rediscover and not self.known(p) and os.path.isdir(p):
                self.rediscover = True

    def watch_files(self, stop: threading.Event, force_polling: bool, interval: float) -> None:
        """Wake refreshes whenever something changes under a runs root (restarts when a root comes or
        goes, or after an error); without a watcher, say why and leave the refreshes to poll."""
        if force_polling:
            self.mode = "polling: asked for (--poll)"
            return
        while not stop.is_set():
            roots = [str(r) for r in self.roots if r.exists()]
            if not roots:
                stop.wait(interval)
                continue
            restart = threading.Event()

            def on_change(paths: set[str], roots=roots, restart=restart) -> None:
                if not self.watching:
                    self.watching = True
                    self.mode = "inotify"
                if paths:
                    self._on_paths(paths)
                if len(roots) != sum(1 for r in self.roots if r.exists()) or any(not Path(r).exists() for r in roots):
                    restart.set()  # a root came or went: watch the new set

            try:
                self.local_host.watch(roots, on_change, _Either(stop, restart), idle_s=max(interval, 1.0))
            except OSError as e:
                self.watching = False
                self.wake()
                if is_watch_limit(e):
                    self.mode = "polling: the file watcher's limit was reached"
                    with self.lock:
                        self.note(
                            one_line(
                                "file watcher's limit reached (fs.inotify.max_user_watches): polling by stat "
                                f"instead, every {min(interval, self.poll_delay_s):g}-{self.settings.max_poll_s:g} s; "
                                "raise the limit to be woken at once",
                                240,
                            )
                        )
                    stop.wait(WATCH_RETRY_S)
                else:
                    self.mode = f"polling: {one_line(str(e), 120)}"
                    with self.lock:
                        self.note(one_line(f"file watching paused: {type(e).__name__}: {e}", 200))
                    stop.wait(interval)
            except Exception as e:  # noqa: BLE001 - never let the thread die silently
                self.watching = False
                self.mode = f"polling: {type(e).__name__}"
                with self.lock:
                    self.note(one_line(f"file watching paused: {type(e).__name__}: {e}", 200))
                stop.wait(interval)
