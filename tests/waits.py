"""The one wait of the tests: poll a condition until it holds, or fail loudly naming what was awaited.

A test never sleeps for a fixed time standing in for a condition ("let the watcher settle"): it waits
for the condition itself, with a deadline; past the deadline the test fails with ``what`` and the last
value the condition returned (or the last exception it raised, when told to ignore exceptions).
``wait_for`` polls with ``time.sleep``; ``pilot_wait_for`` is the same loop inside a Textual
``run_test`` (it pauses the pilot so the app keeps processing its messages while the test waits).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Optional


def _failure(
    what: str, timeout: float, last: Any, error: Optional[BaseException], describe: Optional[Callable[[], Any]]
) -> AssertionError:
    msg = f"timed out after {timeout} s waiting for {what}; last seen: {last!r}"
    if error is not None:
        msg += f"; last error: {type(error).__name__}: {error}"
    if describe is not None:
        try:
            msg += f"; {describe()}"
        except Exception as e:  # noqa: BLE001 (the description must not hide the timeout)
            msg += f"; (describing the state raised {type(e).__name__}: {e})"
    return AssertionError(msg)


def wait_for(
    condition: Callable[[], Any],
    timeout: float = 10.0,
    what: str = "the condition",
    interval: float = 0.05,
    *,
    ignore: tuple[type[BaseException], ...] = (),
    describe: Optional[Callable[[], Any]] = None,
) -> Any:
    """Call ``condition()`` every ``interval`` s until it returns a truthy value, and return that value.

    After ``timeout`` s (the condition is tried once more at the deadline) raise AssertionError naming
    ``what``, the last value returned and ``describe()`` (more of the state, if given). Exceptions of
    the types in ``ignore`` count as "not yet" (e.g. widgets not mounted); any other propagates.
    """
    end = time.monotonic() + timeout
    last: Any = None
    error: Optional[BaseException] = None
    while True:
        final = time.monotonic() >= end
        try:
            last = condition()
            error = None
            if last:
                return last
        except ignore as e:
            error = e
        if final:
            raise _failure(what, timeout, last, error, describe)
        time.sleep(min(interval, max(0.0, end - time.monotonic())))


async def pilot_wait_for(
    pilot,
    condition: Callable[[], Any],
    timeout: float = 10.0,
    what: str = "the condition",
    interval: float = 0.02,
    *,
    ignore: tuple[type[BaseException], ...] = (),
    describe: Optional[Callable[[], Any]] = None,
) -> Any:
    """:func:`wait_for` inside a Textual ``run_test``: ``await pilot.pause(interval)`` between tries."""
    end = time.monotonic() + timeout
    last: Any = None
    error: Optional[BaseException] = None
    while True:
        final = time.monotonic() >= end
        try:
            last = condition()
            error = None
            if last:
                return last
        except ignore as e:
            error = e
        if final:
            raise _failure(what, timeout, last, error, describe)
        await pilot.pause(interval)


def inotify_watched(path: Path) -> bool:
    """Does an inotify watch of this process watch ``path``? (Its inode on an ``inotify wd:`` line of
    /proc/self/fdinfo: a watcher thread's watches are in place, where a test used to sleep "to let the
    watcher settle".)"""
    ino = f" ino:{Path(path).stat().st_ino:x} "
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            with open(f"/proc/self/fdinfo/{fd}") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        if any(ln.startswith("inotify wd:") and ino in ln for ln in lines):
            return True
    return False
