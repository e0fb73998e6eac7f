"""The one error path: exit statuses, and the log file that holds an internal error's traceback.

An error a user can act on (:class:`edgetui.errors.UserError` and the well-known input problems the
command line names in ``edgetui.cli.main``) is one line, ``edgetui: error: <message>``. Anything
else is a fault of edgetui's (a bug): :func:`report_internal_error` writes its traceback, secrets
redacted, to :func:`log_path` and returns the one line the user sees::

    edgetui: internal error (ZeroDivisionError): division by zero; details in ~/.local/state/edgetui/errors.log

The command line and the app both say it this way (docs/reliability-and-security.md, "Errors and
exit status"). Handlers elsewhere that recover from an exception log it on :data:`log` (the
``edgetui`` logger), which writes to the same file once :func:`log_to_file` ran.

No Textual here: a base module.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
import traceback
from pathlib import Path
from typing import Optional

import platformdirs

from edgetui.control_chars import visible
from edgetui.redact import redact_text

# ---------------------------------------------------------------------------- exit statuses

#: the command did what was asked
EXIT_OK = 0
#: the command ran but had nothing to do, or the user answered no (``ingest`` recorded nothing,
#: ``forget`` not confirmed)
EXIT_NOTHING_DONE = 1
#: an input problem (a :class:`~edgetui.errors.UserError`, a missing file, a bad value, an unknown
#: run, an SQL error in ``edgetui sql``) or a usage error (argparse's own status)
EXIT_INPUT = 2
#: an internal error (a bug of edgetui's); the traceback is in :func:`log_path` (sysexits' EX_SOFTWARE)
EXIT_INTERNAL = 70
#: the app's terminal went away (SIGHUP's 128 + 1)
EXIT_TERMINAL_GONE = 129
#: ctrl+c (SIGINT's 128 + 2)
EXIT_INTERRUPTED = 130

# ---------------------------------------------------------------------------- the log file

#: the ``edgetui`` logger: handlers that recover from an exception say so here (debug or warning)
log = logging.getLogger("edgetui")

#: the log file's bound: it is rotated at this size, one older copy kept (errors.log.1)
MAX_BYTES = 1_000_000


def state_dir() -> Path:
    """``$EDGETUI_STATE_DIR``, else the user's state directory (platformdirs: ``~/.local/state/edgetui``)."""
    env = os.environ.get("EDGETUI_STATE_DIR")
    return Path(env) if env else Path(platformdirs.user_state_dir("edgetui"))


def log_path() -> Path:
    """The log file: ``errors.log`` in :func:`state_dir`."""
    return state_dir() / "errors.log"


class RedactingFileHandler(logging.handlers.RotatingFileHandler):
    """A size-bounded log file whose records (traceback included) pass through :func:`redact_text`."""

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(super().format(record)) or ""

    def _open(self) -> io.TextIOWrapper:
        # the file is the user's alone (0600, as the state directory is 0700): tracebacks name paths
        # and hosts; created with that mode before logging opens it (and again after each rotation)
        os.close(os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        return super()._open()


def _open_handler() -> Optional[logging.Handler]:
    path = log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler = RedactingFileHandler(path, maxBytes=MAX_BYTES, backupCount=1, encoding="utf-8", delay=True)
    except OSError:
        return None  # no writable state directory: the one line still says where it would be
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"))
    return handler


def log_to_file(level: int = logging.DEBUG) -> Optional[Path]:
    """Send the ``edgetui`` logger's records (``level`` and above) to :func:`log_path` (once per path);
    the path, or None when its directory cannot be made."""
    path = log_path()
    for h in log.handlers:
        if isinstance(h, RedactingFileHandler) and Path(h.baseFilename) == path.absolute():
            return path
    handler = _open_handler()
    if handler is None:
        return None
    log.addHandler(handler)
    log.setLevel(min(level, log.level or level))
    log.propagate = False
    return path


def one_line(exc: BaseException, limit: int = 200) -> str:
    """``exc``'s message on one line, at most ``limit`` characters, control characters made visible."""
    msg = redact_text(" ".join(str(exc).split())) or type(exc).__name__
    if len(msg) > limit:
        msg = msg[: limit - 1] + "…"
    return visible(msg)


def report_internal_error(exc: BaseException, where: str = "") -> str:
    """Write ``exc``'s traceback (redacted) to the log file; the one line for the user."""
    path = log_to_file()
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if path is not None:
        log.error("internal error%s\n%s", f" in {where}" if where else "", text.rstrip())
        for h in log.handlers:
            h.flush()
    shown = path if path is not None else log_path()
    return f"edgetui: internal error ({type(exc).__name__}): {one_line(exc)}; details in {shown}"


#: exception types that, swallowed, most likely hide a bug of edgetui's (a renamed function, a wrong
#: type): :func:`note_swallowed` logs them as warnings, every other exception at debug level
BUG_TYPES: tuple[type[BaseException], ...] = (
    AttributeError,
    TypeError,
    NameError,
    KeyError,
    IndexError,
    ArithmeticError,
    AssertionError,
    ImportError,
    RecursionError,
    NotImplementedError,
)


def note_swallowed(why: str) -> None:
    """Inside an ``except`` that recovers (a connection already gone, a listener's failure): log the
    exception being handled with ``why``, a warning when it looks like a bug (:data:`BUG_TYPES`),
    else at debug level (the log file keeps warnings; ``EDGETUI_DEBUG=1`` debug lines too)."""
    exc = sys.exc_info()[1]
    level = logging.WARNING if isinstance(exc, BUG_TYPES) else logging.DEBUG
    log.log(level, "recovered from %s: %s", type(exc).__name__ if exc else "nothing", why, exc_info=exc is not None)
