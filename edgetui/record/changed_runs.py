"""Which runs of an ingest need reading, told from their recorded tree signatures
(:mod:`edgetui.hosts.signature`) without reading any file: unchanged runs are skipped, and a run
whose transcript is all that changed keeps its whole-file events (``edgetui.record.ingest``). Core: no
Textual imports."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from edgetui import __version__
from edgetui.store.schema import SCHEMA_VERSION
from edgetui.hosts.local import LocalHost
from edgetui.hosts.signature import TREE_SOURCE, in_image, tree_signature
from edgetui.parsers.run_secrets import raw_secrets
from edgetui.hosts import Entry

from concurrent.futures import ThreadPoolExecutor

if TYPE_CHECKING:
    from edgetui.record.ingest_report import IngestReport
    from edgetui.record.recorder import Recorder


def signature_salt(tasks: dict, task_id: str, is_sample: bool) -> str:
    """What a run's recorded result depends on besides its files: this edgetui's version and schema,
    the task's settings from the tasks dir, the sample flag."""

    t = tasks.get(task_id)
    return f"{__version__}|{SCHEMA_VERSION}|{int(is_sample)}|{t.model_dump_json() if t is not None else ''}"


class Signatures(dict):
    """Run key -> ``(TreeSignature, transcript entry)`` (see :func:`_transcript_entry`), or a
    ``Future`` of it: the signature of a run without a recorded one decides nothing before its
    ingest (the run is read whatever it is), so it is taken by a thread, in job order, while the
    runs before it are read (its listing is mostly system calls, which release the GIL: ~1 s of
    a 750-run first ingest). :meth:`take` waits for it: called before the run is read, the
    signature is still taken before the read (a change meanwhile is seen next time)."""

    def __init__(self, images: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.pool: Optional[ThreadPoolExecutor] = None
        self.images = images  # the images of remote roots (edgetui.hosts.signature.image_prefixes)

    def take(self, key: str):
        """The run's ``(TreeSignature, transcript entry)``, or None (no signature: not listable)."""
        got = self.get(key)
        if got is not None and not isinstance(got, tuple):
            got = self[key] = got.result()
            if got is None:
                del self[key]
        return got

    def take_later(self, key: str, task_dir, salt: str) -> None:
        """Have the signature of ``key``'s task dir taken by this object's thread (started on first
        use), in the order of the calls."""
        pool = self.pool
        if pool is None:
            pool = self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edgetui-signatures")
        self[key] = pool.submit(_signature_of, str(task_dir), salt, in_image(task_dir, self.images))

    def close(self) -> None:
        """Stop taking the signatures not taken yet (the ingest ended)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


def _signature_of(task_dir: str, salt: str, image: bool):

    sig = tree_signature(LocalHost(), task_dir, salt, image)
    return (sig, _transcript_entry(task_dir)) if sig is not None else None


def changed_runs(
    rec: Recorder,
    jobs: list,
    tasks: dict,
    is_sample: bool,
    report: IngestReport,
    full: bool,
    images: tuple[str, ...] = (),
) -> tuple[list, Signatures, set]:
    """The jobs to do: every run job whose tree signature differs from the recorded one (or with
    ``full``, every job), the signatures taken (a :class:`Signatures`: ``take(run key)`` ->
    ``(TreeSignature, transcript entry)``, see :func:`_transcript_entry`) to record after each
    run's ingest, and the keys of the runs whose transcript is all that changed
    (:func:`_only_transcript_changed`). Unchanged runs are counted in ``report.unchanged`` and
    listed in ``report.runs``, and the secrets their files name are added to ``rec``'s. The
    caller calls ``close()`` on the signatures at its end."""

    stored = (
        {}
        if full
        else {
            k: (g, st, state)
            for k, g, st, state in rec.conn.execute(
                "SELECT c.run_key, c.generation, r.status, c.state FROM source_cursors c JOIN runs r USING (run_key) "
                "WHERE c.source = ?",
                [TREE_SOURCE],
            ).fetchall()
        }
    )
    local = LocalHost()
    kept, sigs, only_transcript = [], Signatures(images), set()
    for kind, obj in jobs:
        if kind != "run":
            kept.append((kind, obj))
            continue
        key = obj.run_key
        salt = signature_salt(tasks, obj.task_id, is_sample)
        old = stored.get(key)
        if old is None:  # read whatever its signature: taken by a thread before the run's read (Signatures)
            sigs.take_later(key, obj.task_dir, salt)
            kept.append((kind, obj))
            continue
        image = in_image(obj.task_dir, images)
        sig = tree_signature(local, str(obj.task_dir), salt, image)
        if sig is not None and old is not None and old[0] == sig.digest and old[1] != "running":
            report.unchanged += 1
            report.runs.append(key)
            # (not read again, but the secrets its files name still scrub the runs read: a key
            # one run's config names and another's agent echoes; ~0.1 ms a run)

            for secret in raw_secrets(Path(obj.task_dir)):
                rec.add_secret(secret)
            continue
        if sig is not None:
            sigs[key] = (sig, _transcript_entry(obj.task_dir))  # (stat'ed after the listing: see below)
            if old is not None and _only_transcript_changed(str(obj.task_dir), salt, old[0], old[2], image):
                only_transcript.add(key)
        kept.append((kind, obj))
    return kept, sigs, only_transcript


def fresh_signatures(jobs: list, tasks: dict, is_sample: bool, images: tuple[str, ...] = ()) -> Signatures:
    """:class:`Signatures` of run jobs known to have no recorded signature (what
    :func:`changed_runs` gives them, without its read of the recorded ones)."""
    sigs = Signatures(images)
    for kind, obj in jobs:
        if kind == "run":
            sigs.take_later(obj.run_key, obj.task_dir, signature_salt(tasks, obj.task_id, is_sample))
    return sigs


TRANSCRIPT = "agent_output.txt"


def _transcript_entry(task_dir) -> list | None:
    """``[is_dir, size, mtime_ns, inode]`` of the task dir's transcript (as a listing shows it), or
    None without one; kept in the tree signature's cursor (``state.transcript``). Taken just after
    the signature: a transcript written in between is seen as another entry than the one the
    digest holds, so :func:`_only_transcript_changed` then says no (a full re-read, never a miss)."""
    try:
        st = os.stat(Path(task_dir) / TRANSCRIPT)
    except OSError:
        return None
    return [(st.st_mode & 0o170000) == 0o040000, st.st_size, st.st_mtime_ns, st.st_ino]


class _RecordedTranscriptView:
    """The local file system with the task dir's transcript entry as it was recorded (``entry``:
    :func:`_transcript_entry`'s list, or None: absent); the tree signature over it equals the
    recorded one exactly when nothing but the transcript changed."""

    def __init__(self, task_dir: str, entry: list | None):

        self._local, self._task_dir, self._entry = LocalHost(), task_dir, entry
        self.name = "local"

    def list(self, path: str):

        out = self._local.list(path)
        if path == self._task_dir:
            out = [e for e in out if e.name != TRANSCRIPT]
            if self._entry is not None:
                out.append(Entry(TRANSCRIPT, bool(self._entry[0]), *map(int, self._entry[1:])))
        return out

    def stat(self, path: str):
        return self._local.stat(path)


def _only_transcript_changed(
    task_dir: str, salt: str, recorded_digest: str, state: str | None, image: bool = False
) -> bool:
    """Is the task dir, its transcript aside, as recorded? (Its tree signature with the transcript's
    entry put back as recorded equals the recorded digest.) False when the recorded cursor does
    not say what the transcript was (written by an older edgetui, or by the live supervisor)."""

    try:
        st = json.loads(state) if state else None
    except ValueError:
        return False
    if not isinstance(st, dict) or "transcript" not in st:
        return False
    entry = st["transcript"]
    if entry is not None and (not isinstance(entry, list) or len(entry) != 4):
        return False
    sig = tree_signature(_RecordedTranscriptView(task_dir, entry), task_dir, salt, image)
    return sig is not None and sig.digest == recorded_digest
