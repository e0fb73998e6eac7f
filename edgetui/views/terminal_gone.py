"""Is the terminal gone? (core: no Textual imports)

A terminal closed without a SIGHUP reaching the process (its pty's master side closed while the
process is in another session, or ignores SIGHUP) leaves the process's terminal descriptors at
end of file: every read returns nothing at once, so an input loop that selects and reads spins
(Textual's input thread: ~60-70 % of a core for good) and the app never ends, holding its
database. ``poll`` reports that state as ``POLLHUP`` (or ``POLLERR``/``POLLNVAL``) without
reading anything, so it can be asked while the app runs.
"""

from __future__ import annotations

import os
import select

from edgetui.error_log import EXIT_TERMINAL_GONE

#: the exit status of an app whose terminal went away (as for SIGHUP: 128 + 1)
TERMINAL_GONE_STATUS = EXIT_TERMINAL_GONE

_GONE = getattr(select, "POLLHUP", 0x10) | getattr(select, "POLLERR", 0x08) | getattr(select, "POLLNVAL", 0x20)


def terminal_fds() -> list[int]:
    """This process's standard descriptors that are terminals (the ones to watch)."""
    out = []
    for fd in (0, 1, 2):
        try:
            if os.isatty(fd):
                out.append(fd)
        except OSError:  # a closed descriptor: not a terminal to watch
            pass
    return out


def hung_up(fds: list[int]) -> bool:
    """Has the terminal behind any of ``fds`` gone (hung up, closed)? Reads nothing."""
    if not fds or not hasattr(select, "poll"):
        return False
    p = select.poll()
    for fd in fds:
        p.register(fd, 0)  # no event asked for: only hang-up and errors are reported
    try:
        return any(ev & _GONE for _fd, ev in p.poll(0))
    except OSError:  # the descriptors cannot even be polled: the terminal is gone
        return True
