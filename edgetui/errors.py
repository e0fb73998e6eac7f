"""The errors a user can act on: each one line that names the file (or host) and says what to do.

:class:`UserError` is their base; its ``exit_code`` is the status the command line exits with when
one ends a command (``edgetui: error: <message>``, no traceback; :data:`edgetui.error_log.EXIT_INPUT`).
Besides these, the command line counts a few built-in exceptions as input problems (a missing file, a
bad value, an unknown run: ``edgetui.cli.main.is_input_problem``); every other exception is a fault of
edgetui's (a bug), said as an internal error with its traceback in the log file
(:func:`edgetui.error_log.report_internal_error`). A subclass stands for one cause, so that a caller can
tell the causes apart by type, never by the words of the message.

Notes (:class:`Note`) are not errors: one line saying what edgetui did about a condition it recovered
from (a database recovered from its WAL, opened read-only); the command line prints them as
``edgetui: note: <message>`` on stderr, the app as a notification.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional


class UserError(Exception):
    """An error in the input or the environment, said in one line; ``exit_code`` for the CLI."""

    exit_code = 2  # edgetui.error_log.EXIT_INPUT (a layer above this module: tests/test_error_path.py checks)

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))  # one line, whatever the parts held


# ---------------------------------------------------------------------------- the database file


class DatabaseError(UserError):
    """A problem with the database file at ``path``."""

    def __init__(self, path: Path | str, message: str):
        self.path = Path(path)
        super().__init__(message)


class DatabaseDamaged(DatabaseError, ValueError):
    """DuckDB cannot read the file's catalog and tables in full: the file is left byte for byte as it
    was (never opened writable)."""

    #: what to do, the end of every such message
    ADVICE = (
        "it is left untouched: restore it from a backup, or move it aside and record the runs again "
        "(`edgetui ingest PATH`: the run folders are the source); `edgetui check` tells more"
    )


class ForeignDatabase(DatabaseError, ValueError):
    """Not edgetui's database: not a DuckDB file, or a DuckDB file of another application (tables
    and no edgetui schema marker). Never written into."""


class DatabaseTooNew(DatabaseError, RuntimeError):
    """Written by a newer edgetui (a schema version above this one's)."""


class DatabaseReadOnly(DatabaseError, PermissionError):
    """The file (or its directory, or its file system) cannot be written: commands that record or
    change runs refuse it; the app, replay, ``runs`` and ``sql`` open it read-only instead."""


class DatabaseUnreadable(DatabaseError, PermissionError):
    """This user may not read the file (its permissions): not damage, nothing to recover."""


class DiskFull(DatabaseError, OSError):
    """The file system holding the database has no space left (or the process its file size limit)."""


class DatabaseBusy(DatabaseError):
    """Another process (``pid`` when known) holds the file read-write; DuckDB lets no other process
    open it, not even read-only. Subclasses say why that process cannot answer for it."""

    def __init__(self, path: Path | str, pid: Optional[int], detail: str = "", *, message: str = ""):
        self.pid = pid
        self.detail = detail
        who = f"process {pid}" if pid else "another process"
        if message:
            msg = message
        elif pid == os.getpid():  # this process itself (a second open of a file it has open)
            msg = f"{path} is held by this process ({who}): {detail}"
        else:
            msg = (
                f"{path} is held by {who}{(' (' + detail + ')') if detail else ''}; "
                f"`edgetui sql` and `edgetui runs` read it through that process or, with --snapshot, "
                f"from a copy; other commands need {who} to stop first"
            )
        super().__init__(path, msg)


class HolderNotServing(DatabaseBusy):
    """The holder serves no socket (an ``ingest``, an ``export``…: only the app and ``watch`` answer
    queries for the file they hold)."""

    def __init__(self, path: Path | str, pid: Optional[int], what: str = ""):
        who = f"process {pid}" + (f" ({what})" if what else "") if pid else "another process"
        super().__init__(
            path,
            pid,
            what,
            message=(
                f"{path} is held by {who}, which answers no queries (only the app and `edgetui watch` do); "
                "wait for it to end (meanwhile `edgetui sql` and `edgetui runs` read a copy with --snapshot)"
            ),
        )


class HolderNotAnswering(DatabaseBusy):
    """The holder's socket exists but no answer came (refused, timed out, a stale socket)."""

    def __init__(self, path: Path | str, pid: Optional[int], why: str, what: str = ""):
        who = f"process {pid}" + (f" ({what})" if what else "") if pid else "another process"
        super().__init__(
            path,
            pid,
            why,
            message=(
                f"{path} is held by {who}, which does not answer on its socket ({why}); read a copy with "
                f"--snapshot, or wait for {who} to end (if it hangs, stop it: kill {pid or 'PID'})"
            ),
        )


class NoSocketDirectory(DatabaseBusy):
    """The holder cannot be asked: no private socket directory exists for this user."""

    def __init__(self, path: Path | str, pid: Optional[int], why: str):
        who = f"process {pid}" if pid else "another process"
        super().__init__(
            path,
            pid,
            why,
            message=(
                f"{path} is held by {who}, which cannot be asked: {why}; set XDG_RUNTIME_DIR or TMPDIR to a "
                "directory of yours, or read a copy with --snapshot"
            ),
        )


# ---------------------------------------------------------------------------- the holder's socket


class QueryRefused(UserError, ValueError):
    """A request to the holder's socket (or ``edgetui sql``) that is not a read of the database's
    tables alone (one line, starting with ``refused:``; see :mod:`edgetui.store.read_only_sql`)."""


# ---------------------------------------------------------------------------- SSH hosts


class KnownHostsMissing(UserError, FileNotFoundError):
    """The known_hosts file named to check a host's key against (``UserKnownHostsFile`` of
    ssh_config, or the host's ``known_hosts`` setting) does not exist."""

    def __init__(self, host: str, path: str, where: str, scan: str):
        self.host, self.path = host, path
        super().__init__(
            f"{host}: no known host keys: {path} ({where}) does not exist; trust the host with `{scan}` after "
            "checking its fingerprint, or name an existing file there"
        )
