"""Opening a file of a run folder without trusting it.

A run folder (``<runs>/<run_id>/``, its task dirs and submission folders) is written by the agent
and the harness: any file there may be a FIFO, a device, a symbolic link to ``~/.ssh/id_rsa`` or
``/etc/shadow``, a link loop, or gigabytes long. Every reader of a run folder's files opens them
here, with the rules :mod:`edgetui.parsers.submission_archive` applies to a submission archive:

* **no link out of the run folder**: the file's directory is resolved (``os.path.realpath``, once
  per directory while the folder is read) and must lie in the resolved run folder; the file is
  opened there with ``O_NOFOLLOW``, and a file that is itself a link is resolved and must lie in
  the run folder too: a link inside it (``a.log -> b.log``) is followed, a loop is skipped;
* **only regular files**: opened with ``O_NONBLOCK`` (a FIFO does not block the open) and
  ``O_CLOEXEC``, then checked with ``fstat`` on the opened descriptor; a FIFO, socket, device or
  directory is skipped;
* **a size bound** for files read whole (:data:`WHOLE_FILE_LIMIT`, :data:`SMALL_FILE_LIMIT`); a
  longer file is skipped, or for text shown to a reader (``analysis.md``) its head is read
  (:func:`read_run_file_head`) and said to be cut. Line files (logs, transcripts) are read as a
  stream by :func:`edgetui.parsers.base.iter_lines`, memory bounded per line, so they have no bound.

A skipped file raises :class:`SkippedRunFile` (an ``OSError``; its message is one line naming the
file and why), and is noted in the :class:`RunFolderNotes` of the run folder being read
(:func:`reading_run_folder`): the readers of a run turn those notes into parse-error events and
one-line messages, so nothing is skipped silently. A missing file raises the usual
``FileNotFoundError``: missing files are normal in a run folder.

Which folder a path must stay in: the ``folder`` argument, else the one of the innermost
:func:`reading_run_folder` of this thread/task (a context variable), else none (then only the
regular-file rule and the bound apply: a file named by the user on the command line, a price
table, a task JSON).

Not guaranteed: a directory component swapped for a link between the check and the open (a race
with a writer in the folder) is not detected; the bound is checked on the size ``fstat`` gives at
the open (a file that grows while read is cut at the bound).
"""

from __future__ import annotations

import errno
import functools
import os
import stat as _stat
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterator, Optional, TypeVar, cast

F = TypeVar("F", bound=Callable)

__all__ = [
    "SkippedRunFile",
    "RunFolderNotes",
    "reading_run_folder",
    "reads_run_folder",
    "current_notes",
    "open_run_file",
    "read_run_file",
    "read_run_file_head",
    "check_run_file",
    "non_regular_kind",
    "WHOLE_FILE_LIMIT",
    "SMALL_FILE_LIMIT",
    "TEXT_HEAD_LIMIT",
]

#: A JSON document or other file read whole into memory (report.json of a big test suite stays far
#: below; the bound of a submission archive's decompressed bytes, edgetui.parsers.submission_archive.Limits).
WHOLE_FILE_LIMIT = 64 << 20
#: A file of a few lines (``started_at``, ``.judge-admin-secret``).
SMALL_FILE_LIMIT = 64 << 10
#: The head of a free-text file shown to a reader (``analysis.md``): the rest is said to be cut.
TEXT_HEAD_LIMIT = 1 << 20

_O_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)


class SkippedRunFile(OSError):
    """A file of a run folder not read: not a regular file, a link out of the run folder, a link
    loop, or over its size bound. ``str()`` is one line naming the file; ``reason`` without it."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        super().__init__(f"{os.fspath(path)}: skipped, {reason}")
        self.path, self.reason = os.fspath(path), reason


@dataclass
class RunFolderNotes:
    """The files of one run folder skipped while it was read (path → reason, in order)."""

    folder: str
    real: str
    skipped: dict[str, str] = field(default_factory=dict)
    #: directory → its real path (inside ``real``), resolved once while the folder is read
    dirs: dict[str, str] = field(default_factory=dict)

    def note(self, path: str, reason: str) -> None:
        self.skipped.setdefault(os.path.abspath(path), reason)

    def relative(self, base: str | os.PathLike) -> list[tuple[str, str]]:
        """The notes as (path relative to ``base``, reason) — ``../run_config.json`` for a file
        above a task dir."""
        b = os.path.abspath(base)
        return [(os.path.relpath(p, b), r) for p, r in self.skipped.items()]


_current: ContextVar[Optional[RunFolderNotes]] = ContextVar("edgetui_run_folder", default=None)


@contextmanager
def reading_run_folder(folder: str | os.PathLike) -> Iterator[RunFolderNotes]:
    """Within the block, the run files opened here must stay in ``folder`` and the skipped ones
    are noted in the yielded :class:`RunFolderNotes`. Nested blocks of the same folder share
    the notes."""
    cur = _current.get()
    f = os.path.abspath(folder)
    if cur is not None and cur.folder == f:
        yield cur
        return
    notes = RunFolderNotes(f, os.path.realpath(f))
    token = _current.set(notes)
    try:
        yield notes
    finally:
        _current.reset(token)


def reads_run_folder(folder_of: Callable[..., str | os.PathLike]) -> Callable[[F], F]:
    """A decorator: the function reads the run folder ``folder_of(*args, **kwargs)`` (within
    :func:`reading_run_folder`), whoever calls it."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            with reading_run_folder(folder_of(*args, **kwargs)):
                return fn(*args, **kwargs)

        return cast(F, inner)  # (functools.wraps: fn's signature, and fn's value returned)

    return wrap


def current_notes() -> Optional[RunFolderNotes]:
    return _current.get()


def non_regular_kind(mode: int) -> Optional[str]:
    """What a file of ``st_mode`` ``mode`` is when it is not a regular file ("a FIFO", "a socket"…),
    else None."""
    if _stat.S_ISREG(mode):
        return None
    return (
        "a FIFO"
        if _stat.S_ISFIFO(mode)
        else "a socket"
        if _stat.S_ISSOCK(mode)
        else "a device"
        if _stat.S_ISCHR(mode) or _stat.S_ISBLK(mode)
        else "a directory"
        if _stat.S_ISDIR(mode)
        else "not a regular file"
    )


def _skip(path: str, reason: str, notes: Optional[RunFolderNotes]) -> SkippedRunFile:
    if notes is not None:
        notes.note(path, reason)
    return SkippedRunFile(path, reason)


def _inside(real: str, real_folder: str) -> bool:
    return real == real_folder or real.startswith(real_folder.rstrip(os.sep) + os.sep)


def _notes_for(folder: Optional[str | os.PathLike]) -> Optional[RunFolderNotes]:
    notes = _current.get()
    if folder is not None:
        f = os.path.abspath(folder)
        if notes is None or notes.folder != f:  # (this folder; the caller's notes, if any, noted in)
            notes = RunFolderNotes(f, os.path.realpath(f), notes.skipped if notes is not None else {})
    return notes


def _real_dir(d: str, notes: RunFolderNotes, path: str) -> str:
    """The real path of the directory ``d`` (cached in ``notes``), inside the run folder."""
    real = notes.dirs.get(d)
    if real is None:
        try:
            real = os.path.realpath(d, strict=True)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _skip(path, "a symbolic link loop", notes) from None
            raise
        if not _inside(real, notes.real):
            raise _skip(path, "a symbolic link pointing out of the run folder", notes)
        notes.dirs[d] = real
    return real


def _open_checked(p: str, notes: Optional[RunFolderNotes]) -> int:
    """A descriptor of ``p`` opened by the folder rule: its directory resolved (cached), the file
    itself opened with ``O_NOFOLLOW``; a file that is a link is resolved and checked, then
    opened the same way."""
    if notes is None:
        try:
            return os.open(p, _O_FLAGS & ~getattr(os, "O_NOFOLLOW", 0))
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _skip(p, "a symbolic link loop", None) from None
            raise
    d, name = os.path.split(os.path.abspath(p))
    target = os.path.join(_real_dir(d, notes, p), name)
    try:
        return os.open(target, _O_FLAGS)
    except OSError as e:
        if e.errno != errno.ELOOP:  # (ELOOP: the file is a link, O_NOFOLLOW)
            raise
    try:
        real = os.path.realpath(target, strict=True)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _skip(p, "a symbolic link loop", notes) from None
        raise
    if not _inside(real, notes.real):
        raise _skip(p, "a symbolic link pointing out of the run folder", notes)
    try:
        return os.open(real, _O_FLAGS)
    except OSError as e:
        if e.errno == errno.ELOOP:  # (swapped for a link after the check)
            raise _skip(p, "a symbolic link (changed while read)", notes) from None
        raise


def _open_fd(
    path: str | os.PathLike, folder: Optional[str | os.PathLike]
) -> tuple[int, os.stat_result, Optional[RunFolderNotes]]:
    p = os.fspath(path)
    notes = _notes_for(folder)
    fd = _open_checked(p, notes)
    try:
        st = os.fstat(fd)
        what = non_regular_kind(st.st_mode)
        if what:
            raise _skip(p, f"{what} (only regular files are read)", notes)
    except BaseException:
        os.close(fd)
        raise
    return fd, st, notes


def open_run_file(path: str | os.PathLike, *, folder: Optional[str | os.PathLike] = None) -> BinaryIO:
    """A binary file object of the regular file ``path`` (blocking reads), after the rules of the
    module docstring. For streamed line files: no size bound."""
    fd, _, _ = _open_fd(path, folder)
    try:
        if hasattr(os, "O_NONBLOCK"):
            # lazy: POSIX-only locking, imported where it is used
            import fcntl

            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _read_fd(fd: int, size_hint: int, limit: int) -> bytes:
    parts, n = [], 0
    want = min(max(size_hint + 1, 1 << 16), limit + 1, 1 << 30)
    while n <= limit:
        b = os.read(fd, min(want, limit + 1 - n))
        if not b:
            break
        parts.append(b)
        n += len(b)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_run_file(
    path: str | os.PathLike, *, limit: int = WHOLE_FILE_LIMIT, folder: Optional[str | os.PathLike] = None
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them: a longer file is skipped
    (:class:`SkippedRunFile`, noted) — a document cut short would be read as another one."""
    data, _ = read_run_file_stat(path, limit=limit, folder=folder)
    return data


def read_run_file_stat(
    path: str | os.PathLike, *, limit: int = WHOLE_FILE_LIMIT, folder: Optional[str | os.PathLike] = None
) -> tuple[bytes, os.stat_result]:
    """:func:`read_run_file` and the ``fstat`` of the opened file."""
    fd, st, notes = _open_fd(path, folder)
    try:
        if st.st_size > limit:
            raise _skip(os.fspath(path), f"{st.st_size:,} bytes, over the {limit:,} read whole", notes)
        data = _read_fd(fd, st.st_size, limit)
        if len(data) > limit:
            raise _skip(os.fspath(path), f"grew past the {limit:,} bytes read whole", notes)
        return data, st
    finally:
        os.close(fd)


def read_run_file_head(
    path: str | os.PathLike, limit: int = TEXT_HEAD_LIMIT, *, folder: Optional[str | os.PathLike] = None
) -> tuple[bytes, int]:
    """(the first ``limit`` bytes of ``path``, its size): for text shown to a reader, where the
    head is worth showing and the caller says the rest was cut (``size > len(bytes)``)."""
    fd, st, _ = _open_fd(path, folder)
    try:
        data = _read_fd(fd, min(st.st_size, limit), limit)[:limit]
        return data, max(st.st_size, len(data))
    finally:
        os.close(fd)


def check_run_file(path: str | os.PathLike, *, folder: Optional[str | os.PathLike] = None) -> Optional[str]:
    """None when ``path`` is a regular file to read under the rules, else the one-line reason it is
    skipped (and noted). Raises ``OSError`` (``FileNotFoundError``…) for a file that cannot be
    checked at all."""
    try:
        fd, _, _ = _open_fd(path, folder)
    except SkippedRunFile as e:
        return str(e)
    os.close(fd)
    return None
