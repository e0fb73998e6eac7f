"""Keeping remote runs roots' images up to date while the supervisor watches them (live).

A :class:`RemoteFeed` is one remote host: its :class:`~edgetui.hosts.ssh.SshHost` (one
connection) and one :class:`~edgetui.hosts.mirror.Mirror` per runs root. A thread syncs the
images: while the host's ``inotifywait`` (over one exec channel) is reporting, only the paths it
reported are synced (:meth:`~edgetui.hosts.mirror.Mirror.sync_changed`: a stat of those paths,
the new bytes of those files, a listing of new directories only), at once; a full listing of
every root stays as the safety net, after the watches are set up (every reconnect), after an
inotify queue overflow or a path outside the roots, and every ``full_every_s`` (45 s). Without
inotifywait, full syncs on adaptive intervals (``min_interval_s`` after a change, doubling to
``max_interval_s`` while nothing changes). The supervisor watches each image as an ordinary runs root under the host's
name (:meth:`RemoteFeed.roots`), so discovery, tailing, submissions, alarms and recording are
the local code path. While the host is down the images stand still (the runs look quiet, the
host's state says why); after a reconnect the next sync continues every file from its image's
end: the tailer's stored offsets then see exactly the bytes that were appended, none twice.
"""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from edgetui.error_log import note_swallowed
from edgetui.hosts.config import HostConfig
from edgetui.hosts.mirror import Mirror, SyncReport
from edgetui.hosts.ssh import SshHost

from edgetui.hosts.ssh import OVERFLOW
from edgetui.hosts.ssh import HostDown
from edgetui.hosts.ssh import UP

import urllib.parse

#: a sync that took longer than this (seconds) brought its bytes late: they are timed as caught up
CATCHUP_AFTER_S = 3.0


class RemoteFeed:
    """One remote host's images, kept in step (see the module). ``cache``: the directory holding
    the images (default: the user cache directory). ``on_change`` is called (from the feed's
    thread) after a sync that changed files. ``min_interval_s`` / ``max_interval_s``: seconds
    between full syncs without inotifywait; ``full_every_s``: seconds between the safety net's
    full syncs while it reports. ``full_syncs`` / ``path_syncs`` count both kinds."""

    def __init__(
        self,
        cfg: HostConfig,
        *,
        host: Optional[SshHost] = None,
        cache: Optional[Path] = None,
        min_interval_s: float = 0.5,
        max_interval_s: float = 10.0,
        on_change: Optional[Callable[[SyncReport], None]] = None,
        use_inotify: bool = True,
        full_every_s: float = 45.0,
        path_gap_s: float = 1.0,
    ):
        self.cfg = cfg
        self.host = host or cfg.ssh_host()
        self.mirrors = [Mirror(self.host, r, (Path(cache) / _dir_name(r)) if cache else None) for r in cfg.roots]
        self.min_interval_s, self.max_interval_s = min_interval_s, max_interval_s
        self.on_change = on_change
        #: called (from the feed's thread) with each note of a sync: what it skipped (a FIFO...)
        self.on_note: Optional[Callable[[str], None]] = None
        self.use_inotify = use_inotify
        self.last: Optional[SyncReport] = None
        self.last_error: Optional[str] = None
        self._was_down = False  # a state line said the host was not up (state_line)
        self._said_connecting = False  # a state line said it was connecting
        self.syncs = 0
        self._stop = threading.Event()
        self._kick = threading.Event()
        self._threads: list[threading.Thread] = []
        self.inotify = False  # the host's inotifywait is running
        self.full_every_s = full_every_s
        #: seconds from one path sync to the next at least (reports meanwhile are gathered: fewer,
        #: larger syncs; the lag this adds is at most this)
        self.path_gap_s = path_gap_s
        self._last_path_t = 0.0
        #: syncs of every root (listings) and of reported paths only, since the start
        self.full_syncs = 0
        self.path_syncs = 0
        self._lock = threading.Lock()
        self._pending: set[str] = set()  # remote paths inotifywait reported, not synced yet
        self._watch_ready = False  # its watches are set up: its reports are complete from then on
        self._need_full = True
        self._last_full = 0.0
        #: the images are current: the last sync succeeded and the host has been up since (and
        #: reporting, when it can). A sync that starts while they are not catches up: the bytes it
        #: brings were written on the host while nothing followed them (Mirror.catching_up)
        self._current = False
        #: image path -> size caught up to (Mirror.catchup_marks), shared with the live tailer
        self.catchup_marks: dict[str, int] = {}
        for m in self.mirrors:
            m.catchup_marks = self.catchup_marks
        self.host.on_state(self._state_changed)

    @property
    def name(self) -> str:
        return self.cfg.name

    def roots(self) -> list[tuple[Path, str]]:
        """(image directory, host name) of each runs root, for the supervisor."""
        for m in self.mirrors:
            m.local_root.mkdir(parents=True, exist_ok=True)
        return [(m.local_root, self.cfg.name) for m in self.mirrors]

    def state_line(self) -> Optional[str]:
        """One line for the supervisor's messages while the host is not up (None when it is: the
        runs screen's host column shows it). The text stays the same while the state does (a
        notes list keeps each distinct line): ``gpu-1: down: why (since 23:41:07 UTC, retrying)``."""
        st = self.host.state
        since = time.strftime("%H:%M:%S UTC", time.gmtime(st.since))
        if st.kind == "up":
            if self.last_error:  # (an error naming this host already: named once)
                return f"{self.cfg.name}: {self.last_error.removeprefix(self.cfg.name + ': ')}"
            # after a line saying it was not up (connecting included), one saying it is now: the
            # runs screen's bottom line shows the latest line, which would say "connecting" for good
            if self._was_down:
                return f"{self.cfg.name}: up again since {since}"
            return f"{self.cfg.name}: up since {since}" if self._said_connecting else None
        if st.kind == "connecting":  # (a first connection is not a recovery)
            self._said_connecting = True
        else:
            self._was_down = True
        retry = ", retrying" if st.kind not in ("connecting", "degraded", "closed") else ""
        # the why (and what to do) right after the state: the runs screen's bottom line is one line
        if st.message:
            return f"{self.cfg.name}: {st.kind}: {st.message} (since {since}{retry})"
        return f"{self.cfg.name}: {st.kind} since {since}{retry}"

    def share_catchup_marks(self, marks: dict[str, int]) -> None:
        """Note the sizes caught up to in ``marks`` (a live tailer's ``catchup_marks``) from now on."""
        self.catchup_marks = marks
        for m in self.mirrors:
            m.catchup_marks = marks

    def _catching_up(self) -> bool:
        """Is the sync about to start a catch-up (see ``_current``)? Tells the mirrors."""
        catching = not self._current
        for m in self.mirrors:
            m.catching_up = catching
        return catching

    def _synced(self, rep: Optional[SyncReport], t0: float) -> None:
        """After a sync that started at ``t0`` (monotonic): the images are current when it succeeded
        (and the host reports changes, when it can); one that took longer than
        :data:`CATCHUP_AFTER_S` brought bytes late: they are noted as caught up (before the tailer
        is told of them)."""
        for m in self.mirrors:
            m.catching_up = False
        if rep is None:
            self._current = False
            return
        if time.monotonic() - t0 > CATCHUP_AFTER_S:
            for m in self.mirrors:
                root = m.remote_root.rstrip("/") + "/"
                for c in rep.changed:
                    if c.startswith(root):
                        local = m.local_root / c[len(root) :]
                        try:
                            self.catchup_marks[str(local)] = local.stat().st_size
                        except OSError:  # gone from the image since: nothing of it to time
                            pass
        self._current = self.host.state.kind == UP and (self._watch_ready or not self.inotify)

    def _state_changed(self, _name: str, st) -> None:
        if st.kind != UP:  # down, reconnecting, or not answering its probes: not followed meanwhile
            self._current = False

    def sync_once(self) -> Optional[SyncReport]:
        """Sync every image once; None when the host could not be reached (``last_error`` says why)."""
        total = SyncReport()
        t0 = time.monotonic()
        self._catching_up()
        try:
            for m in self.mirrors:
                _add(total, m.remote_root, m.sync())
        except OSError as e:
            self.last_error = _error_text(e)
            self._synced(None, t0)
            return None
        self._synced(total, t0)
        self.full_syncs += 1
        return self._done(total)

    def sync_paths(self, paths: set[str]) -> Optional[SyncReport]:
        """Sync only ``paths`` (remote, absolute: inotifywait's reports) into their roots' images;
        None when the host could not be reached or cannot list paths (the caller syncs in full)."""
        total = SyncReport()
        by_root: dict[int, tuple[set[str], set[str]]] = {}
        for p in paths:
            for i, m in enumerate(self.mirrors):
                root = m.remote_root.rstrip("/")
                if p == root or p.startswith(root + "/"):
                    rel = p[len(root) :].strip("/")
                    rels, recurse = by_root.setdefault(i, (set(), set()))
                    if rel:
                        rels.add(rel)
                        if not p.endswith("/"):  # a child's event: a directory created or moved in
                            recurse.add(rel)
                    break
            else:
                return None  # outside every root (an overflow, an odd path): list everything
        t0 = time.monotonic()
        self._catching_up()
        try:
            for i, (rels, recurse) in by_root.items():
                m = self.mirrors[i]
                r = m.sync_changed(rels, recurse)
                if r is None:
                    self._synced(None, t0)
                    return None
                _add(total, m.remote_root, r)
        except OSError as e:
            self.last_error = _error_text(e)
            self._synced(None, t0)
            return None
        self._synced(total, t0)
        self.path_syncs += 1
        return self._done(total)

    def _done(self, total: SyncReport) -> SyncReport:
        self.last_error = total.errors[0] if total.errors else None
        self.last = total
        self.syncs += 1
        if total.skipped and self.on_note is not None:  # (each said once: Mirror._say_skipped)
            for line in total.skipped:
                try:
                    self.on_note(line)
                except Exception:  # noqa: BLE001 - a listener's failure is not the feed's
                    note_swallowed("a listener's failure is not the feed's")
        if (total.changed or total.removed) and self.on_change is not None:
            try:
                self.on_change(total)
            except Exception:  # noqa: BLE001 - a listener's failure is not the feed's
                note_swallowed("a listener's failure is not the feed's")
        return total

    def start(self) -> "RemoteFeed":
        self.host.start()
        t = threading.Thread(target=self._run, name=f"edgetui-feed-{self.cfg.name}", daemon=True)
        t.start()
        self._threads.append(t)
        if self.use_inotify:
            w = threading.Thread(target=self._watch, name=f"edgetui-watch-{self.cfg.name}", daemon=True)
            w.start()
            self._threads.append(w)
        return self

    def close(self) -> None:
        """Stop syncing and close the connection; an image still staged in memory (a first sync
        whose next sync has not come yet) is written to disk first (:meth:`Mirror.settle`)."""
        self._stop.set()
        self._kick.set()
        self.host.close()
        for t in self._threads:
            t.join(5)
        busy = any(t.is_alive() for t in self._threads)  # (a sync still running: left to the next one)
        for m in self.mirrors:
            if m.staged and not busy:
                try:
                    m.settle()
                except OSError:
                    pass  # (the next sync of this image settles what is left)

    def _run(self) -> None:
        interval = self.min_interval_s
        while not self._stop.is_set():
            st = self.host.state.kind
            wait = interval
            if st in ("up", "degraded", "connecting"):
                if st == "connecting":
                    self.host.wait_up(min(self.host.connect_timeout, 5.0))
                if self.inotify and self._watch_ready and not self._need_full:
                    gap = self.path_gap_s - (time.monotonic() - self._last_path_t)
                    if gap > 0 and self._stop.wait(gap):
                        break
                with self._lock:
                    reporting = self.inotify and self._watch_ready
                    full = not reporting or self._need_full or time.monotonic() - self._last_full >= self.full_every_s
                    paths, self._pending = self._pending, set()
                    if full:
                        self._need_full = False
                rep = None
                if not full and paths:
                    self._last_path_t = time.monotonic()
                    rep = self.sync_paths(paths)
                    if rep is None:  # could not sync by path: a full listing now
                        full = True
                if full:
                    t = time.monotonic()
                    rep = self.sync_once()
                    if rep is not None:
                        self._last_full = t
                    elif reporting:
                        with self._lock:
                            self._need_full = True
                changed = rep is not None and bool(rep.changed or rep.removed)
                if reporting:  # the reports wake this thread; the timer is only the safety net's
                    wait = max(0.05, self.full_every_s - (time.monotonic() - self._last_full))
                    if self._need_full:
                        wait = self.min_interval_s
                else:
                    interval = self.min_interval_s if changed else min(interval * 2, self.max_interval_s)
                    wait = interval
            else:
                self._current = False
                interval = wait = self.min_interval_s  # down: check the state often, sync as soon as it is up
            self._kick.wait(wait)
            self._kick.clear()

    def _reported(self, paths: set[str]) -> None:

        with self._lock:
            if OVERFLOW in paths:
                self._need_full = True
            self._pending |= paths - {OVERFLOW}
        self._kick.set()

    def _ready(self) -> None:
        with self._lock:
            self._watch_ready = True
            self._need_full = True  # what changed before the watches were set up
        self._kick.set()

    def _watch(self) -> None:
        """The host's inotifywait reports the changed paths; without it (or while down) the intervals do."""
        while not self._stop.is_set():
            if self.host.state.kind not in ("up", "degraded"):
                self._stop.wait(0.5)
                continue
            try:
                self.inotify = True
                self.host.watch([m.remote_root for m in self.mirrors], self._reported, self._stop, on_ready=self._ready)
            except OSError as e:
                with self._lock:
                    self.inotify = self._watch_ready = False
                if e.errno == errno.ENOSYS:
                    return  # no inotifywait there: adaptive intervals only
                self._stop.wait(0.5)  # the connection went (or inotifywait died): again once up
            with self._lock:
                self.inotify = self._watch_ready = False
                self._need_full = True
                self._current = False  # (what the host wrote since its watch ended: the next full sync)
            self._kick.set()


def _dir_name(root: str) -> str:

    return urllib.parse.quote(root.rstrip("/") or "/", safe="")


def _add(total: SyncReport, remote_root: str, r: SyncReport) -> None:
    """Fold one root's sync report into ``total`` (its changed paths made remote-absolute)."""
    total.files += r.files
    total.changed += [f"{remote_root}/{c}" for c in r.changed]
    total.removed += r.removed
    total.bytes_read += r.bytes_read
    total.errors += r.errors
    total.skipped += r.skipped


def _error_text(e: OSError) -> str:
    """One line for an ``OSError`` of a sync, without Python's ``[Errno N]`` and quoted filename:
    its text, then the remote path it concerns (when not already in it)."""

    text = e.strerror or str(e)
    if e.filename and not isinstance(e, HostDown) and str(e.filename) not in text:  # (HostDown: the state says it)
        text += f" ({e.filename})"
    return " ".join(text.split())
