"""Reading a submission archive (``submissions/<round>/submission.tar.gz``) without trusting it.

An archive is the agent's upload: anything may be in it. :func:`extract_archive` refuses the
whole archive, before anything is written, when any member is hostile — an absolute path, a
path with ``..`` leaving the folder, a link pointing out of it or anywhere absolute, a device,
FIFO or other special file (the standard library's ``tarfile.data_filter`` decides, the filter
of ``filter="data"``, except for absolute names, which that filter would strip and which are
refused here) — or when it is too big: more than ``max_files`` members, a member or
the sum of members over ``max_bytes``, or more than ``max_bytes`` of decompressed stream
(a gzip bomb is cut off while it inflates, not after; also a huge PAX header, which
``tarfile`` reads into memory before it hands the member over). Only then is it extracted, with
``filter="data"``, into the folder given (a temporary one: :func:`read_archive`).
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = ["ArchiveRefused", "Limits", "DEFAULT_LIMITS", "extract_archive", "read_archive"]


class ArchiveRefused(ValueError):
    """An archive not extracted; the message is one line naming the file (and the member)."""


@dataclass(frozen=True)
class Limits:
    """``max_files`` members; ``max_bytes`` decompressed bytes (the stream, and the members'
    total); ``max_text_bytes``: a file larger than this is listed but not read as text."""

    max_files: int = 2000
    max_bytes: int = 64 * 1024 * 1024
    max_text_bytes: int = 1024 * 1024


DEFAULT_LIMITS = Limits()


class _Bounded(io.RawIOBase):
    """A read-only stream that raises :class:`ArchiveRefused` past ``limit`` bytes."""

    def __init__(self, inner: io.BufferedIOBase, limit: int, name: str) -> None:
        self.inner, self.limit, self.name, self.n = inner, limit, name, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.inner.read(len(b))
        self.n += len(data)
        if self.n > self.limit:
            raise ArchiveRefused(f"{self.name}: more than {self.limit:,} bytes decompressed (a gzip bomb?): refused")
        b[: len(data)] = data
        return len(data)


def _open(path: Path, limits: Limits) -> tarfile.TarFile:
    raw = open(path, "rb")
    try:
        head = raw.read(2)
        raw.seek(0)
        inner: io.BufferedIOBase = gzip.GzipFile(fileobj=raw, mode="rb") if head == b"\x1f\x8b" else raw
        stream = io.BufferedReader(_Bounded(inner, limits.max_bytes, str(path)))
        return tarfile.open(fileobj=stream, mode="r|")
    except BaseException:
        raw.close()
        raise


def _check(path: Path, dest: str, limits: Limits) -> int:
    """One pass over the members: every one must pass ``tarfile.data_filter`` and the limits."""
    n = total = 0
    try:
        with _open(path, limits) as tar:
            for m in tar:
                n += 1
                if n > limits.max_files:
                    raise ArchiveRefused(f"{path}: more than {limits.max_files:,} members: refused")
                if m.name.startswith(("/", "\\")) or (len(m.name) > 1 and m.name[1] == ":"):
                    # (the data filter would strip the slash and extract it: an absolute name in
                    # an upload says someone tried, and the whole archive is refused)
                    raise ArchiveRefused(f"{path}: member {m.name!r}: an absolute path: refused")
                try:
                    tarfile.data_filter(m, dest)
                except tarfile.FilterError as e:
                    raise ArchiveRefused(
                        f"{path}: member {m.name!r}: {type(e).__name__} ({' '.join(str(e).split())}): refused"
                    ) from None
                if m.isreg():
                    if m.size > limits.max_bytes:
                        raise ArchiveRefused(f"{path}: member {m.name!r} is {m.size:,} bytes: refused")
                    total += m.size
                    if total > limits.max_bytes:
                        raise ArchiveRefused(f"{path}: members total more than {limits.max_bytes:,} bytes: refused")
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as e:
        raise ArchiveRefused(
            f"{path}: not a readable tar.gz ({' '.join(str(e).split()) or type(e).__name__})"
        ) from None
    return n


def extract_archive(path: Path | str, dest: Path | str, limits: Limits = DEFAULT_LIMITS) -> int:
    """Extract the archive at ``path`` into the existing folder ``dest`` after checking every
    member (see the module docstring). Returns the number of members. Raises
    :class:`ArchiveRefused` (one line) and then has written nothing."""
    path, dest_s = Path(path), os.path.realpath(dest)
    n = _check(path, dest_s, limits)
    try:
        with _open(path, limits) as tar:
            tar.extractall(dest_s, filter="data")
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as e:
        raise ArchiveRefused(
            f"{path}: not a readable tar.gz ({' '.join(str(e).split()) or type(e).__name__})"
        ) from None
    return n


def read_archive(path: Path | str, limits: Limits = DEFAULT_LIMITS) -> dict[str, Optional[str]]:
    """The regular files of an archive: relative path → text (UTF-8), or ``None`` for a file that
    is binary or larger than ``limits.max_text_bytes``. Extracted into a temporary folder that is
    removed before returning. Raises :class:`ArchiveRefused`. Paths and texts are the archive's own,
    secrets included: a caller that shows them redacts them first (:func:`edgetui.analysis.why_new_best.diff_archives`)."""
    out: dict[str, Optional[str]] = {}
    with tempfile.TemporaryDirectory(prefix="edgetui-archive-") as tmp:
        extract_archive(path, tmp, limits)
        root = Path(tmp)
        for p in sorted(root.rglob("*")):
            if p.is_symlink() or not p.is_file():
                continue
            rel = p.relative_to(root).as_posix()
            if p.stat().st_size > limits.max_text_bytes:
                out[rel] = None
                continue
            data = p.read_bytes()
            try:
                out[rel] = None if b"\x00" in data else data.decode("utf-8")
            except UnicodeDecodeError:
                out[rel] = None
    return out
