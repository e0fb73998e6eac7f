"""Batched live tailing of many line files into the database (core, no Textual).

Same semantics as :func:`edgetui.record.ingest.ingest_lines` with ``final=False`` and
``observed_t`` — the saved cursor (generation + byte offset + parser state)
is where reading resumes, a half-written last line waits for its newline, a
parser's open multi-line record is re-read from its first byte — but built
for hundreds of growing files refreshed every second:

* a file whose (size, mtime, inode) did not change since the last refresh is
  not read; a file that changed is read through a handle kept open between
  refreshes (reopened when its inode changes; at most ``max_open`` handles,
  the least recently read closed first), only up to the size its ``stat``
  gave, and the bytes just before the cursor that tell a rewritten file are
  kept in memory rather than read back after each read (measured: opening
  the file was 6 % of a refresh of 150 growing transcripts);
* the new lines of **all** changed files of one refresh are committed in one
  transaction (one Arrow insert for the events, one for the cursors due),
  instead of one transaction per file (measured: 150 files × 3 lines, 1.6 s
  per refresh with ``ingest_lines`` per file, 0.03 s batched);
* the parser object stays alive between refreshes; a cursor row (position +
  parser state) is written at most every ``cursor_interval_s`` per file (and
  at once on a new generation or while a multi-line record is open). A
  supervisor killed in between restarts from the older cursor: the lines
  read again give the same event ids (``INSERT OR IGNORE``: nothing
  duplicated) and are not handed to observers twice;
* each refresh reads at most ``max_bytes_per_source`` of one file and
  ``max_bytes_total`` overall (a long catch-up proceeds over several refreshes;
  :attr:`TailResult.behind` says more is waiting).

Generations. ``file_generation`` names a file by its first line. A file that
is truncated or replaced (``size < offset``, or the bytes just before the
cursor changed) while its first line stayed the same would give the same
event ids as the old content, and ``INSERT OR IGNORE`` would drop the new
events; the tailer then reads the file as a *derived* generation
``<first-line gen>.<6 hex>`` (stored in the cursor). A new first line is a new
generation as usual. Old generations' events stay in the database. The derived
generation starts where the file stops holding the lines that were read (each
line's end and CRC-32 are kept: :mod:`edgetui.live.line_digests`), so lines kept
before a cut stay recorded once and lines written right after it are all read;
another file (another inode, or a handle whose file was deleted), or a cut that
cannot be placed, is read from its start.

Time. Lines that were already in a file when this tailer first saw it keep
``t`` unset (aligned later by interpolation); lines that arrive while
watching get ``t = observed_t`` with ``t_source = 'observed'`` when their
parser gave no time. An observed time is an upper bound (the line was written
before it was read): when a later line of the same read carries its own recent
time (a Claude Code ``tool_result`` with its ``timestamp``, written right
after the untimed ``tool_use``) that is earlier, the observed time is lowered
to it, so the file's order holds in the timeline (a call is never listed after
its result). A recorded time more than :data:`OBSERVED_CLAMP_S` before the read
(a stale or copied line) lowers nothing.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import duckdb
import pyarrow as pa

from edgetui.error_log import note_swallowed
from edgetui.events import Event
from edgetui.parsers.base import (
    GENERATION_PREFIX_BYTES,
    MAX_LINE_BYTES,
    RAW_KEEP,
    Line,
    generation_of_head,
    iter_lines,
    non_regular_kind,
    line_events,
)
from edgetui.parsers.runlog import RunAgentLogParser
from edgetui.parsers.arrow_batches import data_json
from edgetui.record.recorder import Recorder
from edgetui.parsers.cursor_check import moved_below
from edgetui.live.line_digests import ANCHOR_BYTES, LineDigests
from edgetui.parsers.run_folder_files import SkippedRunFile, open_run_file

#: bytes just before the cursor compared at each change to notice a rewritten file (kept as they are)
FINGERPRINT_BYTES = 4096

#: file handles kept open between refreshes (per Tailer; the least recently read is closed first)
MAX_OPEN_FILES = 512

MakeParser = Callable[[str, str, Optional[dict]], Any]  # (source, generation, state) -> LineParser
LineHook = Callable[["TailSource", bytes, int], None]

_CURSOR_COLS = [
    "run_key",
    "source",
    "path",
    "generation",
    "offset",
    "state",
    "size",
    "mtime",
    "inode",
    "done",
    "updated_at",
]
_CURSOR_SCHEMA = pa.schema(
    [
        ("run_key", pa.string()),
        ("source", pa.string()),
        ("path", pa.string()),
        ("generation", pa.string()),
        ("offset", pa.int64()),
        ("state", pa.string()),
        ("size", pa.int64()),
        ("mtime", pa.float64()),
        ("inode", pa.int64()),
        ("done", pa.bool_()),
        ("updated_at", pa.float64()),
    ]
)


def settle(conn) -> None:
    """Finish any half-fetched result of ``conn`` (DuckDB refuses ``register()`` after a ``fetchone()``
    that left rows unread)."""
    conn.execute("SELECT 1").fetchall()


def base_generation(gen: Optional[str]) -> Optional[str]:
    """The first-line generation a (possibly derived) generation belongs to."""
    return gen.split(".", 1)[0] if gen else gen


#: a recorded time at most this long before the read bounds the observed times of earlier lines
OBSERVED_CLAMP_S = 30.0


def _clamp_observed(events: list[Event], now: float) -> None:
    """Lower each observed time (epoch seconds UTC) to the earliest recent recorded time of a later
    event of the same read (``events`` in file order): see the module's "Time"."""
    low = float("inf")
    for e in reversed(events):
        t = e.t
        if t is None:
            continue
        if e.t_source == "observed":
            if t > low:
                e.t = low
        elif now - OBSERVED_CLAMP_S <= t < low:
            low = t


class _Bounded:
    """A read-only view of a binary file that ends after ``limit`` bytes (``hit_limit`` once a read
    met it) or at the ``available`` bytes its stat gave, whichever comes first."""

    def __init__(self, fp, limit: int, available: int):
        self.fp = fp
        self.left = limit
        # bytes the file held at its stat: reading stops there without a read() that finds the end
        self.available = available
        self.hit_limit = False
        self.first: Optional[tuple[int, bytes]] = None  # (position, bytes) of the first block read
        self.pos = 0

    def seek(self, pos: int) -> int:
        self.pos = pos
        return self.fp.seek(pos)

    def read(self, n: int = -1) -> bytes:
        if self.available <= 0:
            return b""
        if self.left <= 0:
            self.hit_limit = True
            return b""
        n = min(self.left, self.available) if n is None or n < 0 else min(n, self.left, self.available)
        b = self.fp.read(n)
        self.left -= len(b)
        self.available -= len(b)
        if self.first is None:
            self.first = (self.pos, b)
        self.pos += len(b)
        return b


@dataclass
class TailSource:
    """One line file of one run, tailed by byte offset.

    Two positions are kept: the *live* one (``gen``/``offset`` + the parser
    object that has read up to there) and the *saved* one (the cursor row in
    the database: ``saved_gen``/``saved_offset``/``saved_state``). Events are
    committed at every read; the cursor row at most every
    ``Tailer.cursor_interval_s`` (and at once on a new generation or while a
    parser holds an open multi-line record). Restarting from an older cursor
    re-reads up to ``cursor_interval_s`` of lines whose events are already recorded: same
    ids, ``INSERT OR IGNORE``, nothing duplicated — and they are not handed to
    observers again (``delivered``).
    """

    run_key: str
    source: str  # events.source (name relative to the task dir)
    path: Path
    make_parser: MakeParser
    line_hook: Optional[LineHook] = None  # sees each new raw line once (offset order)
    on_new_generation: Optional[Callable[["TailSource"], None]] = None  # before the new generation's lines
    folder: Optional[Path] = None  # the run folder the file must stay in (edgetui.parsers.run_folder_files)
    refused: Optional[tuple] = None  # (size, mtime_ns, inode) of a file not read: a link out of the folder…
    # --- live position
    gen: Optional[str] = None
    offset: int = 0
    parser: Any = None  # the parser object positioned at (gen, offset), None = rebuild from the saved cursor
    delivered: int = 0  # events at offsets below this were handed to observers already
    # --- saved cursor (database)
    saved_gen: Optional[str] = None
    saved_offset: int = 0
    saved_state: Optional[dict] = None
    saved_t: float = float("-inf")
    loaded: bool = False
    sig: Optional[tuple] = None  # (size, mtime_ns, ino) when last read
    fingerprint: Optional[bytes] = None  # the bytes just before ``offset`` (up to FINGERPRINT_BYTES)
    fp: Any = None  # open handle of ``path`` kept between reads (Tailer.max_open), with its inode
    fp_ino: Optional[tuple[int, int]] = None
    catchup_until: Optional[int] = None  # lines ending at or before: no observed time
    hook_mark: int = 0  # next offset the line hook has not seen
    exists: bool = False
    force_new: bool = False  # truncated: the next first line starts a new generation
    generations_seen: int = 0
    last_growth_t: Optional[float] = None  # when new complete lines were last recorded
    mtime: Optional[float] = None
    size: int = 0
    read_t: float = float("-inf")  # when bytes were last read
    held: Optional[Event] = None  # the open record's event as it stands (RunAgentLogParser.peek_open)
    long_at: Optional[int] = None  # a line longer than one read starts here: read it whole next time
    not_regular: bool = False  # the path is a FIFO, socket or device (said once)
    cut_at: Optional[int] = None  # truncated: where the file stops holding the lines read (kept recorded)
    skip: Optional[list] = None  # [offset, scanned_to, head, tail] of a line over MAX_LINE_BYTES
    provisional: Optional[tuple] = None  # (generation, offset, ended) of the held record recorded provisionally
    #: the file gets no more lines (its run is over): a held record is recorded as final, with the
    #: event id an offline ingest gives it (its parser's finish()), not provisionally
    ended: bool = False
    digests: Optional[LineDigests] = None  # the lines read of the file (where a cut was: line_digests)
    read_ino: Optional[tuple[int, int]] = None  # (st_dev, st_ino) of the file last read

    @property
    def state(self) -> Optional[dict]:
        """Parser state of the saved cursor."""
        return self.saved_state


@dataclass
class TailResult:
    events: dict[tuple[str, str], list[Event]] = field(default_factory=dict)  # (run_key, source) -> new events
    grown: set[tuple[str, str]] = field(default_factory=set)  # new lines arrived while watching
    caught_up: set[tuple[str, str]] = field(default_factory=set)  # only lines that were there before
    messages: list[str] = field(default_factory=list)
    new_generation: list[tuple[str, str]] = field(default_factory=list)
    vanished: list[tuple[str, str]] = field(default_factory=list)
    behind: bool = False
    bytes_read: int = 0
    n_events: int = 0
    cursors_saved: int = 0


class Tailer:
    """Tails many :class:`TailSource` s; one transaction per :meth:`poll`."""

    def __init__(
        self,
        rec: Recorder,
        *,
        max_bytes_per_source: int = 4 << 20,
        max_bytes_total: int = 8 << 20,
        cursor_interval_s: float = 15.0,
        max_open: int = MAX_OPEN_FILES,
    ):
        self.rec = rec
        self.max_bytes_per_source = max_bytes_per_source
        self.max_bytes_total = max_bytes_total
        # 15 s: with 150 runs x 3 files a 5 s interval wrote 90 cursor rows (each with its parser's
        # state) a second; a restart re-reads at most this much of each file (same ids, not twice)
        self.cursor_interval_s = cursor_interval_s
        self.max_open = max_open
        self._open: dict[int, TailSource] = {}  # id(source) -> source holding an open handle, oldest read first

    # ------------------------------------------------------------------ handles
    def _handle(self, src: TailSource, st: os.stat_result):
        """``src``'s open handle on the file ``st`` describes: kept from the last read unless the path
        now names another file (replaced or rotated), else opened. Raises ``OSError``."""
        ino = (st.st_dev, st.st_ino)
        if src.fp is not None and src.fp_ino == ino and _linked(src.fp):
            self._open.pop(id(src), None)
            self._open[id(src)] = src  # most recently read last
            return src.fp
        self.release(src)
        fp = open_run_file(src.path, folder=src.folder)
        src.fp, src.fp_ino = fp, ino
        self._open[id(src)] = src
        while len(self._open) > max(1, self.max_open):
            self.release(next(iter(self._open.values())))
        return fp

    def release(self, src: TailSource) -> None:
        """Close ``src``'s kept handle, if any (the next read opens the file again)."""
        self._open.pop(id(src), None)
        fp, src.fp, src.fp_ino = src.fp, None, None
        if fp is not None:
            try:
                fp.close()
            except OSError:  # (closing a read handle: no data of ours is lost)
                pass

    def close(self) -> None:
        """Close every kept handle (idempotent; the Tailer can still be used: files are reopened)."""
        for src in list(self._open.values()):
            self.release(src)

    # ------------------------------------------------------------------ cursors
    def _cursor_keys(self, sources: list[TailSource]) -> set[tuple[str, str]] | None:
        """(run key, source) of those of ``sources`` that have a cursor row, in one statement (a
        start-up of many new runs asked once per source); None when the recorder holds cursors
        not written yet (a batch transaction: :meth:`Recorder.get_cursor` knows those)."""
        if getattr(self.rec, "_pending_cursors", None):
            return None
        keys = sorted({s.run_key for s in sources})
        rows = self.rec.conn.execute(
            "SELECT run_key, source FROM source_cursors WHERE run_key IN (SELECT unnest(?::VARCHAR[]))", [keys]
        ).fetchall()
        return {(r[0], r[1]) for r in rows}

    def _load(
        self, src: TailSource, size: int, have: set[tuple[str, str]] | None = None, st: Optional[os.stat_result] = None
    ) -> None:
        """The source's saved position (its cursor row); ``have``: the sources known to have one
        (:meth:`_cursor_keys`), the others are not asked for theirs."""
        if have is not None and (src.run_key, src.source) not in have:
            self.rec.note_no_cursor(src.run_key, src.source)  # (its first save inserts)
            cur = None
        else:
            cur = self.rec.get_cursor(src.run_key, src.source)
        src.loaded = True
        if cur and cur.get("generation") and cur.get("offset") is not None:
            src.gen = src.saved_gen = cur["generation"]
            src.offset = src.saved_offset = int(cur["offset"])
            src.saved_state = cur["state"]
            if st is not None and moved_below(self.rec.conn, src.run_key, src.source, cur, src.path, st):
                src.force_new = True  # not the file the cursor was saved on (a run folder made again)
            # events recorded beyond the cursor (the cursor is saved every few seconds) were seen already
            rows = self.rec.conn.execute(
                'SELECT max("offset") FROM events WHERE run_key = ? AND source = ? AND generation = ?',
                [src.run_key, src.source, src.gen],
            ).fetchall()
            top = rows[0][0] if rows and rows[0][0] is not None else -1
            src.delivered = max(src.offset, top + 1)
        src.parser = None
        src.hook_mark = max(src.offset, src.delivered)
        if src.catchup_until is None:
            src.catchup_until = size if size > src.offset else src.offset

    def _cursor_row(self, src: TailSource, gen: str, offset: int, state: Optional[dict], st, now: float) -> tuple:
        return (
            src.run_key,
            src.source,
            str(src.path),
            gen,
            offset,
            data_json(state) if state is not None else None,
            st[0],
            st[1],
            st[2],
            False,
            now,
        )

    def flush(self, sources: list[TailSource], now: Optional[float] = None) -> int:
        """Save the cursor of every source whose live position is ahead of its saved one (shutdown)."""
        return self.poll([], now, flush=sources).cursors_saved

    # ------------------------------------------------------------------ poll
    def poll(
        self,
        sources: list[TailSource],
        now: Optional[float] = None,
        *,
        observe: bool = True,
        flush: Optional[list[TailSource]] = None,
    ) -> TailResult:
        """Read what is new in every changed source and commit it (events + due cursors) at once."""
        now = time.time() if now is None else now
        res = TailResult()
        cursors: list[tuple] = []
        updates: list[tuple[TailSource, dict]] = []
        saves: list[tuple[TailSource, str, int, Optional[dict]]] = []
        all_events: list[Event] = []
        budget = self.max_bytes_total
        unloaded = [src for src in sources if not src.loaded]
        have = self._cursor_keys(unloaded) if len(unloaded) > 1 else None
        for src in sources:
            if budget <= 0:
                res.behind = True
                break
            try:
                st = os.stat(src.path)
            except OSError:
                if src.exists:
                    res.vanished.append((src.run_key, src.source))
                src.exists = False
                src.sig = None
                self.release(src)
                continue
            src.exists = True
            what = non_regular_kind(st.st_mode)
            if what:  # a FIFO would block the whole supervisor: never opened
                if not src.not_regular:
                    src.not_regular = True
                    res.messages.append(f"{src.path}: skipped, not a regular file ({what})")
                continue
            src.not_regular = False
            sig = (st.st_size, st.st_mtime_ns, st.st_ino)
            if sig == src.refused:
                continue
            if sig == src.sig:
                self._maybe_save(src, now, saves, cursors, force=False)
                self._maybe_provisional(src, now, all_events, res)
                continue
            if not src.loaded:
                self._load(src, st.st_size, have, st)
            try:
                out = self._read(src, st, now, min(self.max_bytes_per_source, budget), observe, res)
            except SkippedRunFile as e:  # (said once for this file)
                self.release(src)
                src.refused = sig
                res.messages.append(str(e))
                continue
            except OSError as e:
                self.release(src)
                res.messages.append(f"{src.path}: cannot read ({e.strerror or e})")
                continue
            if out is None:
                continue
            upd, evs, nbytes = out
            budget -= nbytes
            res.bytes_read += nbytes
            if upd.get("more"):
                res.behind = True
            for ev in evs:
                ev.run_key = src.run_key
            all_events.extend(evs)
            mark = upd["deliver_from"]
            fresh = [ev for ev in evs if ev.offset >= mark] if mark else evs
            if fresh:
                res.events[(src.run_key, src.source)] = fresh
            if upd["new_lines"]:
                res.grown.add((src.run_key, src.source))
            elif upd["lines"]:
                res.caught_up.add((src.run_key, src.source))
            if upd["save"]:
                state = upd["parser_obj"].state() if upd["state"] is None else upd["state"]
                cursors.append(
                    self._cursor_row(src, upd["gen"], upd["offset"], state, (st.st_size, st.st_mtime, st.st_ino), now)
                )
                saves.append((src, upd["gen"], upd["offset"], state))
            updates.append((src, upd))
        for src in flush or []:
            self._maybe_save(src, now, saves, cursors, force=True)
        if cursors or all_events:
            self._commit(all_events, cursors)
        for src, upd in updates:
            if upd["gen"] != src.gen and src.gen is not None:
                src.generations_seen += 1
            src.gen, src.offset = upd["gen"], upd["offset"]
            src.parser = upd["parser"]
            src.delivered = max(upd["offset"], upd["deliver_from"])
            src.sig, src.fingerprint = upd["sig"], upd["fingerprint"]
            src.mtime, src.size = upd["mtime"], upd["size"]
            src.read_t = now
            src.read_ino = upd["ino"]
            src.held = upd["held"]
            if upd["new_lines"]:
                src.last_growth_t = now
        for src, gen, off, state in saves:
            src.saved_gen, src.saved_offset, src.saved_state, src.saved_t = gen, off, state, now
        res.n_events = len(all_events)
        res.cursors_saved = len(cursors)
        return res

    #: a held multi-line record (an ERROR that may get traceback lines) is recorded provisionally once
    #: its file has been quiet this long
    HOLD_FLUSH_S = 2.0

    def _maybe_provisional(self, src: TailSource, now: float, events: list[Event], res: TailResult) -> None:
        """Record the held record of a quiet source as it stands (``RunAgentLogParser.peek_open``):
        an ERROR that is the log's last line is seen at once, not when the next line arrives."""
        ev = src.held
        if ev is None or now - src.read_t < self.HOLD_FLUSH_S or src.provisional == (src.gen, ev.offset, src.ended):
            return
        seen = src.provisional is not None and src.provisional[:2] == (src.gen, ev.offset)
        src.provisional = (src.gen, ev.offset, src.ended)
        if src.ended:  # (the Recorder drops the provisional row of the same record)
            ev = RunAgentLogParser.final_of(ev)
        ev.run_key = src.run_key
        if seen:  # the same record, final now: not a new event of the run (its count, its alarms)
            events.append(ev)
            return
        events.append(ev)
        res.events.setdefault((src.run_key, src.source), []).append(ev)

    def _maybe_save(self, src: TailSource, now: float, saves: list, cursors: list, force: bool) -> None:
        """Save an idle source's live position when its cursor lags (the file stopped changing)."""
        if src.parser is None or src.gen is None:
            return
        if src.saved_gen == src.gen and src.saved_offset == src.offset:
            return
        if not force and now - src.saved_t < self.cursor_interval_s:
            return
        try:
            st = os.stat(src.path)
        except OSError:  # (the file went away: no cursor row for it this time)
            return
        state = src.parser.state()
        cursors.append(self._cursor_row(src, src.gen, src.offset, state, (st.st_size, st.st_mtime, st.st_ino), now))
        saves.append((src, src.gen, src.offset, state))

    #: commits that found an event recorded already and were redone with INSERT OR IGNORE (diagnostics)
    redone = 0

    def _commit(self, events: list[Event], cursors: list[tuple]) -> None:
        """Events + due cursor rows in one transaction. Tailed lines are new but after a restart
        from an older cursor (or a file read again): a plain INSERT first (DuckDB's INSERT OR IGNORE
        costs 2-3x more), and on a primary-key conflict the whole transaction again with OR IGNORE."""
        try:
            self._commit_once(events, cursors, ignore=False)
        except duckdb.ConstraintException:
            self.redone += 1
            self._commit_once(events, cursors, ignore=True)

    def _commit_once(self, events: list[Event], cursors: list[tuple], ignore: bool) -> None:
        conn = self.rec.conn
        settle(conn)
        conn.execute("BEGIN TRANSACTION")
        try:
            if events:
                self.rec.insert_events("", events, ignore=ignore)
            if cursors:
                tbl = pa.table(
                    [pa.array(list(c), type=f.type) for c, f in zip(zip(*cursors), _CURSOR_SCHEMA)],
                    schema=_CURSOR_SCHEMA,
                )
                conn.register("_edgetui_live_cursors", tbl)
                try:
                    cols = ", ".join(f'"{c}"' for c in _CURSOR_COLS)
                    conn.execute(
                        f"INSERT OR REPLACE INTO source_cursors ({cols}) SELECT {cols} FROM _edgetui_live_cursors"
                    )
                finally:
                    conn.unregister("_edgetui_live_cursors")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _generation_in_db(self, src: TailSource, gen: str) -> bool:
        row = self.rec.conn.execute(
            "SELECT 1 FROM events WHERE run_key = ? AND source = ? AND generation = ? LIMIT 1",
            [src.run_key, src.source, gen],
        ).fetchall()
        return bool(row)

    def _read(
        self, src: TailSource, st: os.stat_result, now: float, limit: int, observe: bool, res: TailResult
    ) -> Optional[tuple[dict, list[Event], int]]:
        sig = (st.st_size, st.st_mtime_ns, st.st_ino)
        drained: list[Event] = []
        if (
            src.fp is not None
            and src.fp_ino != (st.st_dev, st.st_ino)
            and src.parser is not None
            and src.gen is not None
        ):
            drained = self._drain_replaced(src, now, observe)  # lines written just before a rename
        fp = self._handle(src, st)
        if src.parser is not None:
            gen, offset, state = src.gen, src.offset, None
        else:  # rebuild from the saved cursor (start, restart, after a failed commit, open record)
            gen, offset, state = src.saved_gen, src.saved_offset, src.saved_state
            if gen is None and src.gen is not None:
                gen, offset = src.gen, 0  # never saved: this generation from its start
        need_new = src.force_new
        replaced = src.read_ino is not None and src.read_ino != (st.st_dev, st.st_ino)
        if gen is not None and not need_new:
            if offset > st.st_size or src.offset > st.st_size:
                need_new = True  # truncated: what is left before the cut stays recorded, once
                src.cut_at = self._cut(src, fp, st, replaced)
            elif src.offset > 0 and src.fingerprint is not None and src.gen == gen:
                n = len(src.fingerprint)
                fp.seek(src.offset - n)
                if fp.read(n) != src.fingerprint:
                    need_new = True  # rewritten underneath the live position (cut, then written past it)
                    src.cut_at = self._cut(src, fp, st, replaced)
        if gen is None or need_new or src.fingerprint is None:
            fp.seek(0)
            head_gen = generation_of_head(fp.read(GENERATION_PREFIX_BYTES))
            if head_gen is None:  # no complete first line yet (new, or truncated and not rewritten yet)
                if gen is not None and need_new:
                    src.force_new = True
                return None
            if gen is not None and not need_new and base_generation(gen) != head_gen:
                need_new = True  # a new first line since the saved cursor
            if gen is None:
                gen, offset, state = head_gen, 0, None
            elif need_new:
                old = gen
                if base_generation(old) == head_gen or self._generation_in_db(src, head_gen):
                    h = hashlib.sha1(f"{st.st_ino}:{st.st_size}:{time.time_ns()}".encode()).hexdigest()[:6]
                    gen = f"{head_gen}.{h}"
                else:
                    gen = head_gen
                res.messages.append(f"{src.path.name}: truncated or replaced; reading it as a new generation")
                res.new_generation.append((src.run_key, src.source))
                src.catchup_until = 0  # everything in the new generation arrived while watching
                src.hook_mark = 0
                src.force_new = False
                offset, state = 0, None
                cut, src.cut_at = src.cut_at, None
                if cut and base_generation(old) == head_gen and cut <= st.st_size:
                    # truncated mid-file under the same first line: the lines before the cut are the
                    # old generation's (recorded once); the derived generation starts at the cut
                    offset = cut
                    msg = res.messages.pop()
                    res.messages.append(msg.replace("truncated or replaced", f"truncated at byte {cut}"))
                    if src.digests is not None:
                        src.digests.keep_until(cut)
                else:
                    src.digests = None
                if src.on_new_generation is not None:
                    src.on_new_generation(src)
        if src.parser is not None and gen == src.gen and offset == src.offset:
            parser = src.parser
        else:
            parser = src.make_parser(src.source, gen, state)
        dig = src.digests
        if dig is None or offset < dig.start:
            anchor = b""
            if 0 < offset <= st.st_size:  # (the bytes before the first line read: where its lines begin)
                fp.seek(offset - min(ANCHOR_BYTES, offset))
                anchor = fp.read(min(ANCHOR_BYTES, offset))
            dig = src.digests = LineDigests(offset, anchor)
        events: list[Event] = drained
        start = offset
        if src.skip is not None and (src.skip[0] != offset or gen != src.gen):
            src.skip = None
        if src.skip is not None:  # a line over MAX_LINE_BYTES: look for its end in the new bytes only
            end = self._scan_long_line(src, fp, st.st_size)
            if end is None:
                return None
            head, tail = src.skip[2], src.skip[3]
            src.skip = src.long_at = None
            long_line = Line(offset, head, end, too_long=True, tail=tail)
            dig.add(long_line)
            long_evs = line_events(parser, long_line, src.source, gen)
            if observe and end > (src.catchup_until or 0):
                for e in long_evs:
                    if e.t is None:
                        # use_enum_values: the field holds the enum's str value, as validation sets it
                        e.t, e.t_source = now, "observed"  # type: ignore[assignment]
            events.extend(long_evs)
            offset = end
        elif src.long_at == offset:  # a long line in progress: read it whole (the long-line rule)
            limit = max(limit, MAX_LINE_BYTES + (2 << 20))
        src.parser = None  # in use: valid again only once this read is committed
        bounded = _Bounded(fp, limit, max(0, st.st_size - offset))
        last_end = offset
        n_lines = n_new = 0
        catchup = src.catchup_until or 0
        hook = src.line_hook
        # read blocks about the size of what is new: a 1 MiB read() allocates 1 MiB (an mmap and
        # its page faults) even when a few hundred bytes are left, at every refresh of every file
        chunk = min(1 << 20, max(1 << 16, st.st_size - offset + 1))
        for line in iter_lines(bounded, offset, final=False, chunk=chunk):
            evs = line_events(parser, line, src.source, gen)  # the long-line rule, as offline
            dig.add(line)
            if not line.too_long and hook is not None and line.offset >= src.hook_mark:
                hook(src, line.data, line.offset)
            if observe and line.end > catchup:
                for e in evs:
                    if e.t is None:
                        e.t = now
                        # use_enum_values: the field holds the enum's str value, as validation sets it
                        e.t_source = "observed"  # type: ignore[assignment]
            events.extend(evs)
            last_end = line.end
            n_lines += 1
            if line.end > catchup:
                n_new += 1
        if n_lines == 0 and bounded.hit_limit and start == offset:  # no line ends within this read
            if src.long_at != offset:
                src.long_at = offset  # the next read takes the whole line (up to MAX_LINE_BYTES)
            else:  # longer than MAX_LINE_BYTES: from now on only the new bytes are scanned for its end
                fp.seek(offset)
                head = fp.read(RAW_KEEP)
                scanned = max(bounded.pos, offset)  # how far this read got
                tail_from = max(offset, scanned - RAW_KEEP)
                fp.seek(tail_from)
                src.skip = [offset, scanned, head, fp.read(scanned - tail_from)]
        elif n_lines:
            src.long_at = None
        if observe and events:
            _clamp_observed(events, now)
        ro = parser.resume_offset()
        new_off = ro if ro is not None else last_end
        if last_end > src.hook_mark:
            src.hook_mark = last_end
        fingerprint = _fingerprint(
            fp, new_off, offset, bounded.first, src.fingerprint if (src.gen == gen and src.offset == offset) else None
        )
        more = bounded.hit_limit or st.st_size - offset > limit
        # the cursor row is written with these events when due; always when a parser holds an open
        # record (its state is the one *before* that record: the live parser cannot be kept)
        save = ro is not None or gen != src.saved_gen or more or now - src.saved_t >= self.cursor_interval_s
        # data left beyond the read limit must be read at the next refresh even if the file
        # does not change; a half-written last line waits for the write that completes it
        peek = getattr(parser, "peek_open", None) if ro is not None else None
        upd = {
            "gen": gen,
            "offset": new_off,
            "state": parser.state() if ro is not None else None,
            "held": peek() if peek is not None else None,
            "parser_obj": parser,
            "parser": parser if ro is None else None,
            "save": save,
            "deliver_from": src.delivered if gen == src.gen else 0,
            "sig": sig if not more else (-1, 0, 0),
            "fingerprint": fingerprint,
            "mtime": st.st_mtime,
            "size": st.st_size,
            "end": last_end,
            "start": offset,
            "lines": n_lines,
            "new_lines": n_new,
            "more": more,
            "ino": (st.st_dev, st.st_ino),
        }
        return upd, events, last_end - start

    @staticmethod
    def _cut(src: TailSource, fp, st: os.stat_result, replaced: bool) -> int:
        """Where the file ``fp`` (stat ``st``) stopped holding the lines ``src`` read: 0 when it is
        another file (``replaced``) or that cannot be told (the new generation then reads it all)."""
        if replaced or src.digests is None:
            return 0
        cut = src.digests.cut_in(fp, st.st_size)
        return cut or 0

    def _drain_replaced(self, src: TailSource, now: float, observe: bool) -> list[Event]:
        """The complete lines the replaced file (still open as ``src.fp``) got after ``src.offset``,
        read before switching to the file now at the path; ``src``'s live position moves past them
        (same generation). A rename-replace otherwise loses what was written just before it."""
        fp, parser, gen = src.fp, src.parser, src.gen
        out: list[Event] = []
        if fp is None or gen is None:  # (the caller drains an open file of a known generation only)
            return out
        try:
            fp.seek(0, os.SEEK_END)
            end = fp.tell()
            if end <= src.offset:
                return out
            last = src.offset
            for line in iter_lines(_Bounded(fp, end - src.offset, end - src.offset), src.offset, final=False):
                evs = line_events(parser, line, src.source, gen)
                if observe:
                    for e in evs:
                        if e.t is None:
                            # use_enum_values: the field holds the enum's str value, as validation sets it
                            e.t, e.t_source = now, "observed"  # type: ignore[assignment]
                out.extend(evs)
                last = line.end
            if last > src.offset:
                n = min(FINGERPRINT_BYTES, last)
                fp.seek(last - n)
                src.fingerprint = fp.read(n)
                src.offset = last
        except OSError:
            return out
        return out

    #: bytes of a line over MAX_LINE_BYTES scanned for its end per refresh (a 1 GB line without a
    #: newline costs a few reads, then nothing until the file grows)
    SKIP_SCAN_BYTES = 64 << 20

    def _scan_long_line(self, src: TailSource, fp, size: int) -> Optional[int]:
        """Continue the search for the newline ending ``src.skip``'s line; returns the offset just
        after it, or None (``src.skip`` keeps where the search stopped and the line's last bytes)."""
        skip = src.skip
        assert skip is not None  # (the caller reads a long line's end only while there is one)
        off, pos, head, tail = skip
        stop = min(size, pos + self.SKIP_SCAN_BYTES)
        fp.seek(pos)
        while pos < stop:
            block = fp.read(min(1 << 20, stop - pos))
            if not block:
                break
            nl = block.find(b"\n")
            if nl >= 0:
                src.skip = [off, pos + nl + 1, head, (tail + block[:nl])[-RAW_KEEP:]]
                return pos + nl + 1
            tail = (tail + block)[-RAW_KEEP:]
            pos += len(block)
        src.skip = [off, pos, head, tail]
        return None


def _linked(fp) -> bool:
    """Does the open file ``fp`` still have a name? (A file deleted and made again may get the
    same inode number: the kept handle would go on reading the deleted one.)"""
    try:
        return os.fstat(fp.fileno()).st_nlink > 0
    except (OSError, ValueError, AttributeError):  # (AttributeError: a handle without fileno)
        note_swallowed("a handle that cannot say whether it is still linked is read as unlinked")
        return False


def _fingerprint(fp, new_off: int, offset: int, first: Optional[tuple[int, bytes]], before: Optional[bytes]) -> bytes:
    """The bytes ``[new_off - FINGERPRINT_BYTES, new_off)`` of the file (fewer near its start): from
    ``before`` (those just before ``offset``, checked against the file for this read) and the first
    block read from ``offset`` when they cover the range, else read back from ``fp``."""
    n = min(FINGERPRINT_BYTES, new_off)
    if first is not None and first[0] == offset and new_off - offset <= len(first[1]):
        new = first[1][: new_off - offset]
        if len(new) >= n:
            return new[len(new) - n :]
        if before is not None and len(before) >= min(FINGERPRINT_BYTES, offset):
            return (before + new)[-n:]  # n > 0 here: len(new) < n
    fp.seek(new_off - n)
    return fp.read(n)
