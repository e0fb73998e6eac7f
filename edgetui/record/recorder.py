"""The Recorder: the only writer of the edgetui DuckDB file.

* Events are appended in batches through an Arrow table (``INSERT OR IGNORE``
  on the stable ``event_id``), never row by row; re-ingesting the same bytes
  adds nothing.
* A batch of events and the source cursor that follows it are committed in one
  transaction, so an ingest killed at any moment (even ``kill -9``) resumes at
  the last committed cursor and ends with exactly the rows of an uninterrupted
  ingest.
* Secrets are scrubbed before anything is written: known secret values
  (run_config ``api_key``, secret-looking ``extra_env`` values, the judge
  admin secret) and API-key-shaped strings are replaced by ``<redacted>``.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager

from typing import Any, Iterable, Optional, Sequence

import duckdb
import pyarrow as pa

from edgetui.events import Event
from edgetui.parsers.runlog import PROVISIONAL_SUB
from edgetui.records import RunInfo, TaskInfo
from edgetui.store.schema import migrate

from edgetui.parsers.arrow_batches import (  # noqa: F401  (re-exported: the recorder's batch format)
    EVENT_COLS_SQL,
    EVENT_SCHEMA,
    EVENT_COLUMNS,
    REDACTED,
    Scrubber,
    data_json,
    events_to_table,
)

import uuid


def _has_final_errors(tbl: pa.Table) -> bool:
    """Does this batch hold a completed (not provisional) run-log ERROR record?"""
    # lazy: pyarrow.compute's kernels load on first use, not for every command
    import pyarrow.compute as pc

    return bool(
        pc.any(
            pc.and_(pc.equal(tbl.column("kind"), "infra_error"), pc.not_equal(tbl.column("sub"), PROVISIONAL_SUB))
        ).as_py()
    )


#: whole-file event kinds whose time finalize_run places after they are written (never re-timed here)
_PLACED_KINDS = ("game_step", "game_result")


class Recorder:
    """Single writer of one DuckDB database file.

    ``Recorder(conn)`` wraps an open read-write connection (see
    :func:`edgetui.store.database.open_db`); the schema is migrated on construction.
    """

    #: a new run's submission rows wait for the transaction's commit (batch_mode; tests turn it off
    #: to compare with rows inserted at once)
    defer_new_submissions = True

    def __init__(self, conn: duckdb.DuckDBPyConnection):
        self.conn = conn
        self._no_cursor: set[tuple[str, str]] = set()  # (run key, source) get_cursor found no row for
        self._depth = 0  # open transaction() blocks (the outermost one holds the DuckDB transaction)
        migrate(conn)
        self.scrubber = Scrubber()
        self.secrets: set[str] = self.scrubber.secrets  # the same set
        #: a source never read before (no cursor) is appended with a plain INSERT (2-3x cheaper than
        #: INSERT OR IGNORE); set to False to retry an ingest that met a recorded key anyway
        self.plain_new_sources = True
        #: the run key being ingested that had no ``runs`` row before (set by ``ingest.ingest_run`` for
        #: the length of that call only): nothing of it is recorded, so its cursors, file events,
        #: submissions and record keys are not looked up or deleted (a statement each, ~1-4 ms)
        self.fresh_run: Optional[str] = None
        #: set by the offline ingest (this Recorder is the file's only writer while it runs):
        #: * new cursors are written at the outermost transaction's commit, all in one INSERT (each
        #:   INSERT of one row costs ~2 ms in a first ingest);
        #: * replace_submissions leaves a run's rows alone when they are what it would write (two
        #:   reads instead of four writes: a run re-read because its transcript grew keeps them);
        #: * task rows are read once (task_for).
        self.batch_mode = False
        self._pending_cursors: dict[tuple[str, str], list] = {}
        #: a new run's submission and test-result rows (batch_mode), inserted with the transaction's
        #: other runs' at its commit: (column names, rows as dicts) and rows as lists
        self._known_runs: set[str] | None = None  # batch_mode: the runs rows' keys, read once
        self._pending_subs: list[tuple[tuple, list[dict]]] = []
        self._pending_tests: list[list] = []
        #: batch_mode: a new run's ``runs`` row (run_key, column -> value) while it is being ingested:
        #: :meth:`upsert_run` and the :meth:`update_run` calls after it fill it; :meth:`flush_run`
        #: (finalize's end, the next run) puts it with the transaction's other new runs' rows, written
        #: by :meth:`write_held_runs` (the commit, or a reader of runs) in one INSERT from Arrow per
        #: column set (~0.13 ms a row against ~1.2 ms of an INSERT with parameters)
        self._pending_run: Optional[tuple[str, dict[str, Any]]] = None
        self._held_runs: dict[str, dict[str, Any]] = {}
        #: while a list: :meth:`commit_batch` of :attr:`fresh_run`'s events appends ``(table, ignore)``
        #: here instead of inserting, and :meth:`replace_file_events` inserts them with the run's file
        #: events in one statement (set by the offline ingest around a new run's small log files)
        self.hold: Optional[list] = None
        self._tasks: dict[str, Optional[TaskInfo]] = {}  # task_for's reads (cleared on a rollback)
        self._load_default_secrets()

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self):
        """One DuckDB transaction around the block; a block inside another is part of the outer one
        (DuckDB has no nested transactions). Each commit of a file database writes and syncs its WAL
        (~3 ms here): the ingest of a run's small files in one transaction instead of one per
        statement is most of what makes a first ingest fast. An exception rolls the outermost block
        back and propagates."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN TRANSACTION")
        self._depth = 1
        try:
            yield
            self.write_held_runs()
            self._flush_submissions()
            self._flush_cursors()
        except BaseException:
            self._depth = 0
            self._pending_run = None
            self._held_runs.clear()
            self._pending_cursors.clear()
            self._pending_subs.clear()
            self._pending_tests.clear()
            self._known_runs = None
            self._tasks.clear()
            try:
                self.conn.execute("ROLLBACK")
            except duckdb.Error:  # the failed statement ended the transaction already
                pass
            raise
        self._depth = 0
        self.conn.execute("COMMIT")

    # ------------------------------------------------------------------ secrets
    def _load_default_secrets(self) -> None:
        env = os.environ.get("SFORGE_ADMIN_SECRET")
        if env:
            self.add_secret(env)

    def add_secret(self, value: Optional[str]) -> None:
        """Remember a secret value; it is replaced by ``<redacted>`` in everything written."""
        if value and isinstance(value, str) and len(value) >= 6 and value != REDACTED:
            self.secrets.add(value)

    def set_secrets(self, values) -> None:
        """Know exactly ``values`` as the secrets (those :meth:`add_secret` would keep) from now on."""
        self.secrets.clear()
        self.scrubber._bsecrets = []
        for v in values:
            self.add_secret(v)

    def scrub(self, text: Optional[str]) -> Optional[str]:
        return self.scrubber.scrub(text)

    # ------------------------------------------------------------------ events
    def events_table(self, run_key: str, events: Sequence[Event]) -> pa.Table:
        return events_to_table(run_key, events, self.scrubber)

    def insert_events(self, run_key: str, events: Sequence[Event], *, ignore: bool = True) -> int:
        """Append events (``INSERT OR IGNORE``); returns the number of rows offered. ``ignore=False``
        is a plain ``INSERT`` (2-3x cheaper in DuckDB) for events known to be new: it raises
        ``duckdb.ConstraintException`` if one is recorded already (the caller rolls back and retries
        with ``ignore=True``)."""
        if not events:
            return 0
        return self.insert_table(self.events_table(run_key, events), ignore=ignore)

    def insert_table(self, tbl: pa.Table, *, ignore: bool = True, fresh: bool = False) -> int:
        """Append an events Arrow table built by :func:`events_to_table` (``INSERT OR IGNORE``;
        ``ignore=False``: see :meth:`insert_events`). ``fresh``: the caller knows every row is of a
        run never recorded before this ingest (as :attr:`fresh_run`, for tables of several runs)."""
        if tbl.num_rows == 0:
            return 0
        self.conn.register("_edgetui_batch", tbl)
        try:
            # a held ERROR record completed: its provisional row goes (rows only the live tailer
            # writes: a run never recorded before this ingest has none)
            if not fresh and not self._fresh_rows(tbl) and _has_final_errors(tbl):
                self.conn.execute(
                    "DELETE FROM events WHERE sub = ? AND event_id IN (SELECT e.event_id FROM events e JOIN "
                    '_edgetui_batch b ON e.run_key = b.run_key AND e.source = b.source AND e."offset" = b."offset" '
                    "WHERE e.sub = ? AND b.sub <> ?)",
                    [PROVISIONAL_SUB] * 3,
                )
            self.conn.execute(
                f"INSERT {'OR IGNORE ' if ignore else ''}INTO events ({EVENT_COLS_SQL}) "
                f"SELECT {EVENT_COLS_SQL} FROM _edgetui_batch"
            )
        finally:
            try:
                self.conn.unregister("_edgetui_batch")
            except duckdb.Error:  # the transaction failed (e.g. a key conflict): the caller's error stands
                pass
        return tbl.num_rows

    def _fresh_rows(self, tbl: pa.Table) -> bool:
        """Are all rows of ``tbl`` of :attr:`fresh_run`?"""
        if self.fresh_run is None:
            return False
        # lazy: pyarrow.compute's kernels load on first use, not for every command
        import pyarrow.compute as pc

        return bool(pc.all(pc.equal(tbl.column("run_key"), self.fresh_run)).as_py())

    def replace_file_events(
        self,
        run_key: str,
        events: Sequence[Event],
        line_sources: Sequence[str],
        held: Sequence[tuple[Any, bool]] = (),
        defer_to: Optional[list] = None,
    ) -> int:
        """Set the events of the run's whole-file sources (JSON files, submission folders).

        Such events describe the files as they are now: events of an older
        version of such a file (a round re-graded after a judge restart, a
        grading that finished since the last ingest) are deleted in the same
        transaction; an event whose time (``t``, ``t_source``) changed is written again under
        the same ``event_id`` (a graded round timed by its judge log, then by ``evolve_state.json``
        ``at``: annotations on it stay attached). Line sources and database-only kinds (annotation,
        alarm, container_state, resource_sample) are never touched. Returns the change in the
        run's number of events (rows inserted minus rows deleted). ``held``: line-source events (Arrow
        tables or lists of events, each with its ``ignore`` flag) of a run never recorded before
        (:attr:`hold`), inserted in the same statement (not counted).
        ``defer_to`` (a list; :attr:`fresh_run`'s events only): the table to insert and its
        ``ignore`` flag are appended to it instead of inserted (the offline ingest inserts several
        new runs' tables in one statement: ``insert_table(..., fresh=True)``).
        (:meth:`replace_file_events_many` of this one run.)
        """
        return self.replace_file_events_many([(run_key, events)], line_sources, held=held, defer_to=defer_to)[0]

    def replace_file_events_many(
        self,
        items: Sequence[tuple[str, Sequence[Event]]],
        line_sources: Sequence[str],
        held: Sequence[tuple[Any, bool]] = (),
        defer_to: Optional[list] = None,
    ) -> list[int]:
        """:meth:`replace_file_events` of several runs ``(run_key, events)`` (distinct run keys) in
        at most three statements whatever their number: one read of what they have recorded, one
        DELETE, one INSERT (a statement costs ~1-4 ms: 150 new live runs' first refresh paid one
        read and one INSERT each). Returns each run's change in its number of events, in order.
        ``held`` lists of events (not tables) and ``defer_to``: with one run only (see
        :meth:`replace_file_events`)."""
        if not items:
            return []
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise ValueError("replace_file_events_many: a run twice in one call")
        held_events = [e for t, _ in held if not isinstance(t, pa.Table) for e in t]
        if (held_events or defer_to is not None) and len(items) != 1:
            raise ValueError("replace_file_events_many: held events lists and defer_to take one run")
        # the ids already recorded, then only the difference is written: a refresh after one new
        # graded round deletes nothing and inserts that round's events (an anti-join DELETE and an
        # INSERT OR IGNORE of every file event cost ~15 ms a refresh)
        srcs = ", ".join("'" + s.replace("'", "''") + "'" for s in line_sources) or "''"
        where = f"source NOT IN ({srcs}) AND kind NOT IN ('annotation', 'alarm', 'container_state', 'resource_sample')"
        with self.transaction():
            ask = [k for k in keys if k != self.fresh_run]
            have: dict[str, dict[str, tuple]] = {k: {} for k in keys}
            if ask:
                qs = ", ".join("?" for _ in ask)
                for rk, eid, t, ts in self.conn.execute(
                    f"SELECT run_key, event_id, t, t_source FROM events WHERE run_key IN ({qs}) AND {where}", ask
                ).fetchall():
                    have[rk][eid] = (t, ts)
            tables: list[pa.Table] = [t for t, _ in held if isinstance(t, pa.Table)]
            gone_all: list[str] = []
            changes: list[int] = []
            for run_key, events in items:
                had = have[run_key]
                if held_events:  # (one run) its held events and file events as one table: one conversion
                    both = self.events_table(run_key, [*held_events, *events])
                    tables.append(both.slice(0, len(held_events)))
                    tbl = both.slice(len(held_events))
                else:
                    tbl = self.events_table(run_key, events)
                ids = tbl.column("event_id").to_pylist()
                # an event whose time changed is written again under its id: a round's result timed by
                # the judge log until evolve_state.json gives ``at``, a log read with a new UTC offset
                # (game events are placed by finalize, untimed ones by the alignment: left as they are)
                retimed: set[str] = set()
                if had:
                    cols = (tbl.column(c).to_pylist() for c in ("t", "t_source", "kind"))
                    retimed = {
                        eid
                        for eid, t, ts, kind in zip(ids, *cols)
                        if t is not None and eid in had and had[eid] != (t, ts) and kind not in _PLACED_KINDS
                    }
                gone = sorted(set(had).difference(ids) | retimed)
                gone_all.extend(gone)
                fresh, seen = [], set(had).difference(retimed)
                for i, eid in enumerate(ids):
                    if eid not in seen:
                        seen.add(eid)
                        fresh.append(i)
                if fresh:
                    tables.append(tbl if len(fresh) == len(ids) else tbl.take(fresh))
                changes.append(len(fresh) - len(gone))  # (a re-timed event counts once in each: no change)
            if gone_all:
                # (event ids are unique across runs: sha1 of run key, source, generation, offset, sub)
                self.conn.execute(
                    f"DELETE FROM events WHERE run_key IN ({', '.join('?' for _ in keys)}) AND {where} "
                    "AND event_id IN (SELECT unnest(?))",
                    [*keys, gone_all],
                )
            if tables:  # known to be new: a plain INSERT (an INSERT OR IGNORE of one row costs ~8 ms)
                new = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
                if defer_to is not None and keys[0] == self.fresh_run:
                    defer_to.append((new, any(ig for _, ig in held)))
                else:
                    self.insert_table(new, ignore=any(ig for _, ig in held))
        return changes

    # ------------------------------------------------------------------ cursors
    def get_cursor(self, run_key: str, source: str) -> Optional[dict[str, Any]]:
        pend = self._pending_cursors.get((run_key, source))
        if pend is not None:  # set in this transaction, not written yet (batch_mode)
            return {
                "generation": pend[3],
                "offset": pend[4],
                "state": json.loads(pend[5]) if pend[5] else None,
                "size": pend[6],
                "mtime": pend[7],
                "inode": pend[8],
                "done": pend[9],
                "path": pend[2],
            }
        if run_key == self.fresh_run:
            self._no_cursor.add((run_key, source))
            return None
        rows = self.conn.execute(
            'SELECT generation, "offset", state, size, mtime, inode, done, path FROM source_cursors '
            "WHERE run_key = ? AND source = ?",
            [run_key, source],
        ).fetchall()
        if not rows:
            self._no_cursor.add((run_key, source))
            return None
        row = rows[0]
        return {
            "generation": row[0],
            "offset": row[1],
            "state": json.loads(row[2]) if row[2] else None,
            "size": row[3],
            "mtime": row[4],
            "inode": row[5],
            "done": row[6],
            "path": row[7],
        }

    def set_cursor(
        self,
        run_key: str,
        source: str,
        *,
        path: str,
        generation: str,
        offset: int,
        state: Optional[dict],
        size: int,
        mtime: float,
        inode: int,
        done: bool,
    ) -> None:
        st = data_json(state) if state is not None else None
        k = (run_key, source)
        if k in self._pending_cursors or (self.batch_mode and self._depth and k in self._no_cursor):
            self._no_cursor.discard(k)  # a new cursor: written with the others at the commit
            self._pending_cursors[k] = [
                run_key,
                source,
                path,
                generation,
                offset,
                st,
                size,
                mtime,
                inode,
                done,
                time.time(),
            ]
            return
        # an UPDATE, else an INSERT: DuckDB's INSERT OR REPLACE costs ~4x either (2.2 against 0.5 ms here)
        if (run_key, source) in self._no_cursor:  # get_cursor found none: nothing to update
            self._no_cursor.discard((run_key, source))
            self.conn.execute(
                "INSERT INTO source_cursors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_key, source, path, generation, offset, st, size, mtime, inode, done, time.time()],
            )
            return
        n = self.conn.execute(
            'UPDATE source_cursors SET path = ?, generation = ?, "offset" = ?, state = ?, size = ?, mtime = ?, '
            "inode = ?, done = ?, updated_at = ? WHERE run_key = ? AND source = ?",
            [path, generation, offset, st, size, mtime, inode, done, time.time(), run_key, source],
        ).fetchall()
        if not n or not n[0][0]:
            self.conn.execute(
                "INSERT INTO source_cursors VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_key, source, path, generation, offset, st, size, mtime, inode, done, time.time()],
            )

    def note_no_cursor(self, run_key: str, source: str) -> None:
        """The caller knows ``source`` of ``run_key`` has no cursor row: its :meth:`set_cursor` inserts."""
        self._no_cursor.add((run_key, source))

    def _flush_cursors(self) -> None:
        """Write the cursors deferred in this transaction (``batch_mode``), one INSERT."""
        if not self._pending_cursors:
            return
        rows = list(self._pending_cursors.values())
        self._pending_cursors.clear()
        names = [
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
        types = [
            pa.string(),
            pa.string(),
            pa.string(),
            pa.string(),
            pa.int64(),
            pa.string(),
            pa.int64(),
            pa.float64(),
            pa.int64(),
            pa.bool_(),
            pa.float64(),
        ]
        tbl = pa.table([pa.array(col, t) for col, t in zip(zip(*rows), types)], names=names)
        self.conn.register("_edgetui_cursors", tbl)
        try:
            self.conn.execute("INSERT INTO source_cursors SELECT * FROM _edgetui_cursors")
        finally:
            self.conn.unregister("_edgetui_cursors")

    def commit_batch(
        self, run_key: str, events: Sequence[Event] | pa.Table, cursor: Optional[dict] = None, *, ignore: bool = True
    ) -> None:
        """Insert ``events`` (or an events Arrow table) and set the source cursor in one transaction
        (``ignore=False``: a plain INSERT of events known to be new, see :meth:`insert_events`)."""
        with self.transaction():
            if self.hold is not None and run_key == self.fresh_run:  # (events as given: converted with
                # the run's file events, one Arrow table a run instead of one per source)
                self.hold.append((events if isinstance(events, pa.Table) else list(events), ignore))
            elif isinstance(events, pa.Table):
                self.insert_table(events, ignore=ignore)
            else:
                self.insert_events(run_key, events, ignore=ignore)
            if cursor is not None:
                self.set_cursor(run_key, **cursor)

    # ------------------------------------------------------------------ runs, tasks, submissions
    _TASK_COLS = (
        "task_id, name, category, selection, score_direction, rescale, parser, game_mode, eval_timeout, "
        "source_path, assumed"
    )

    def get_task(self, task_id: str) -> Optional[TaskInfo]:
        return self.get_tasks([task_id])[task_id]

    def get_tasks(self, task_ids: Sequence[str]) -> dict[str, Optional[TaskInfo]]:
        """:meth:`get_task` of several task ids in one statement: by task id, its row (None without one)."""
        ids = list(dict.fromkeys(task_ids))
        out: dict[str, Optional[TaskInfo]] = {t: None for t in ids}
        if not ids:
            return out
        for r in self.conn.execute(
            f"SELECT {self._TASK_COLS} FROM tasks WHERE task_id IN ({', '.join('?' for _ in ids)})", ids
        ).fetchall():
            out[r[0]] = TaskInfo(
                task_id=r[0],
                name=r[1],
                category=r[2],
                selection=r[3] or "pass_rate_first",
                score_direction=r[4] or "maximize",
                rescale=json.loads(r[5]) if r[5] else None,
                parser=r[6],
                game_mode=bool(r[7]),
                eval_timeout=r[8],
                source_path=r[9],
                assumed=bool(r[10]),
            )
        return out

    def task_for(self, task: TaskInfo) -> TaskInfo:
        """Record ``task`` unless it is only assumed (no task JSON this time) while settings read from
        a task JSON are already recorded: then those are kept and returned."""
        return self.tasks_for([task])[0]

    def tasks_for(self, tasks: Sequence[TaskInfo]) -> list[TaskInfo]:
        """:meth:`task_for` of several tasks (distinct task ids), in order: one read of their rows
        and one write of those that changed (~3 ms a statement: 150 new live runs of as many tasks
        paid a read and a write each)."""
        if len({t.task_id for t in tasks}) != len(tasks):
            return [self.tasks_for([t])[0] for t in tasks]
        ask = [t.task_id for t in tasks if not (self.batch_mode and t.task_id in self._tasks)]
        self._tasks.update(self.get_tasks(ask))
        out, write = [], []
        for task in tasks:
            known = self._tasks[task.task_id]
            if task.assumed and known is not None and not known.assumed:
                out.append(known)
                continue
            if known != task:  # (a write costs ~3 ms; 750 runs share a few tasks)
                write.append(task)
                self._tasks[task.task_id] = task
            out.append(task)
        self.upsert_tasks(write)
        return out

    def upsert_task(self, task: TaskInfo) -> None:
        self.upsert_tasks([task])

    def upsert_tasks(self, tasks: Sequence[TaskInfo]) -> None:
        """Write the rows of ``tasks`` (distinct task ids; replacing theirs): one statement."""
        if not tasks:
            return
        if len(tasks) == 1:
            task = tasks[0]
            self.conn.execute(
                "INSERT OR REPLACE INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    task.task_id,
                    task.name,
                    task.category,
                    task.selection,
                    task.score_direction,
                    data_json(task.rescale) if task.rescale else None,
                    task.parser,
                    task.game_mode,
                    task.eval_timeout,
                    task.source_path,
                    task.assumed,
                ],
            )
            return
        tbl = pa.table(
            {
                "task_id": [t.task_id for t in tasks],
                "name": pa.array([t.name for t in tasks], pa.string()),
                "category": pa.array([t.category for t in tasks], pa.string()),
                "selection": [t.selection for t in tasks],
                "score_direction": [t.score_direction for t in tasks],
                "rescale": pa.array([data_json(t.rescale) if t.rescale else None for t in tasks], pa.string()),
                "parser": pa.array([t.parser for t in tasks], pa.string()),
                "game_mode": pa.array([t.game_mode for t in tasks], pa.bool_()),
                "eval_timeout": pa.array([t.eval_timeout for t in tasks], pa.int64()),
                "source_path": pa.array([t.source_path for t in tasks], pa.string()),
                "assumed": pa.array([t.assumed for t in tasks], pa.bool_()),
            }
        )
        self.conn.register("_edgetui_tasks", tbl)
        try:
            self.conn.execute(
                f"INSERT OR REPLACE INTO tasks ({self._TASK_COLS}) SELECT {self._TASK_COLS} FROM _edgetui_tasks"
            )
        finally:
            try:
                self.conn.unregister("_edgetui_tasks")
            except duckdb.Error:
                pass

    def upsert_run(self, run_key: str, info: RunInfo, **extra: Any) -> bool:
        """Insert or update the descriptive columns of a run (aggregates are set by ``update_run``).
        Returns whether the run had a row already."""
        self.flush_run()
        if run_key in self._held_runs:  # (the same run again in this transaction: its row written first)
            self.write_held_runs()
        vals = self._run_values(info, extra)
        known = self._known_runs
        if self.batch_mode:  # the only writer: the keys read once instead of one lookup per run
            if known is None:
                known = self._known_runs = {r[0] for r in self.conn.execute("SELECT run_key FROM runs").fetchall()}
            exists = run_key in known
        else:
            exists = bool(self.conn.execute("SELECT 1 FROM runs WHERE run_key = ?", [run_key]).fetchall())
        if exists:
            self._update_run_values(run_key, vals)
        elif self.batch_mode and known is not None and self._depth and info.layout != "transcript":
            # held until flush_run (a bare transcript's row is read by the repeats' ranking: written now)
            self._pending_run = (run_key, vals)
            known.add(run_key)
        else:
            self._insert_run(run_key, vals)
            if self._known_runs is not None:
                self._known_runs.add(run_key)
        return exists

    def upsert_runs(self, items: Sequence[tuple[str, RunInfo]]) -> list[bool]:
        """:meth:`upsert_run` of several runs ``(run_key, info)`` (distinct run keys), in order: one
        lookup of which have a row, one INSERT from Arrow of the new ones' rows (an INSERT with
        parameters costs ~1.2-2 ms a row), the others updated one by one. Each run's config and final
        result are scrubbed with the secrets known when it is called. (One by one in ``batch_mode``,
        whose held rows do the same.)"""
        keys = [k for k, _ in items]
        if self.batch_mode or len(items) < 2 or len(set(keys)) != len(keys):
            return [self.upsert_run(k, info) for k, info in items]
        self.write_held_runs()
        qs = ", ".join("?" for _ in keys)
        have = {r[0] for r in self.conn.execute(f"SELECT run_key FROM runs WHERE run_key IN ({qs})", keys).fetchall()}
        out, new = [], []
        for key, info in items:
            vals = self._run_values(info, {})
            if key in have:
                self._update_run_values(key, vals)
            else:
                new.append({"run_key": key, **vals})
            out.append(key in have)
        self._insert_run_rows(new)
        if self._known_runs is not None:
            self._known_runs.update(keys)
        return out

    def _run_values(self, info: RunInfo, extra: dict[str, Any]) -> dict[str, Any]:
        """The descriptive columns of a run's row (config and final result scrubbed now)."""
        cfg = data_json(self.scrubber.scrub_obj(info.config)) if info.config is not None else None
        fin = data_json(self.scrubber.scrub_obj(info.final)) if info.final is not None else None
        vals = dict(
            host=info.host,
            run_id=info.run_id,
            task_id=info.task_id,
            run_dir=info.run_dir,
            layout=info.layout,
            agent=info.agent,
            model=info.model,
            agent_format=info.agent_format,
            format=info.format,
            timeout_s=info.timeout_s,
            eval_interval_s=info.eval_interval_s,
            started_at=info.started_at,
            ended_at=info.ended_at,
            utc_offset_s=info.utc_offset_s,
            infra_error=info.infra_error,
            resume_count=info.resume_count,
            is_sample=info.is_sample,
            config=cfg,
            final=fin,
            ingested_at=time.time(),
        )
        vals.update(extra)
        return vals

    def _update_run_values(self, run_key: str, vals: dict[str, Any]) -> None:
        # a run once recorded as a sample stays one (an ingest of its folder without --sample)
        if not vals.get("is_sample"):
            vals.pop("is_sample", None)
        sets = ", ".join(f"{k} = ?" for k in vals)
        self.conn.execute(f"UPDATE runs SET {sets} WHERE run_key = ?", [*vals.values(), run_key])

    def _insert_run(self, run_key: str, vals: dict[str, Any]) -> None:
        cols = ", ".join(["run_key", *vals])
        qs = ", ".join("?" for _ in range(len(vals) + 1))
        self.conn.execute(f"INSERT INTO runs ({cols}) VALUES ({qs})", [run_key, *vals.values()])

    def flush_run(self) -> None:
        """The held ``runs`` row of the new run being ingested (batch_mode, see
        :attr:`_pending_run`), if any, is complete: it joins the transaction's other held rows
        (:meth:`write_held_runs`). Called at the end of :func:`edgetui.record.derived_rows.finalize_run` and
        before the next run's upsert; a rollback drops the rows."""
        if self._pending_run is not None:
            key, vals = self._pending_run
            self._pending_run = None
            self._held_runs[key] = vals

    def held_run(self, run_key: str) -> Optional[dict[str, Any]]:
        """The columns set so far of a new run's ``runs`` row not written yet (batch_mode), else None
        (a column missing from it is NULL or its default once written)."""
        if self._pending_run is not None and self._pending_run[0] == run_key:
            return self._pending_run[1]
        return self._held_runs.get(run_key)

    def write_held_runs(self) -> None:
        """Write every held ``runs`` row (the current run's too): one INSERT from an Arrow table per
        set of columns (a column a row does not set gets its default, as in a one-row INSERT). Called
        at the commit and by anything that reads ``runs`` inside the transaction."""
        self.flush_run()
        if not self._held_runs:
            return
        held, self._held_runs = self._held_runs, {}
        self._insert_run_rows([{"run_key": key, **vals} for key, vals in held.items()])

    def _insert_run_rows(self, rows: list[dict[str, Any]]) -> None:
        """New ``runs`` rows (``run_key`` and column -> value): one INSERT from an Arrow table per set
        of columns (a column a row does not set gets its default, as in a one-row INSERT)."""
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in rows:
            groups.setdefault(tuple(row), []).append(row)
        for cols, group in groups.items():
            names = ", ".join(cols)  # (run_key first)
            self.conn.register("_edgetui_runs", pa.Table.from_pylist(group))
            try:
                self.conn.execute(f"INSERT INTO runs ({names}) SELECT {names} FROM _edgetui_runs")
            finally:
                try:
                    self.conn.unregister("_edgetui_runs")
                except duckdb.Error:
                    pass

    def update_run(self, run_key: str, **vals: Any) -> None:
        self.update_runs([(run_key, vals)])

    def update_runs(self, items: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """:meth:`update_run` of several runs ``(run_key, column -> value)``: a held row takes its
        values, the others are written with one UPDATE per set of columns (a join with their
        values) instead of one per run (~5 ms each inside a transaction)."""
        groups: dict[tuple[str, ...], list[tuple[str, dict[str, Any]]]] = {}
        for run_key, vals in items:
            if not vals:
                continue
            if self._pending_run is not None and self._pending_run[0] == run_key:
                self._pending_run[1].update(vals)  # the row is not written yet: its INSERT takes them
            elif run_key in self._held_runs:
                self._held_runs[run_key].update(vals)
            else:
                groups.setdefault(tuple(vals), []).append((run_key, vals))
        for cols, rows in groups.items():
            if len(rows) == 1:
                sets = ", ".join(f"{k} = ?" for k in cols)
                self.conn.execute(f"UPDATE runs SET {sets} WHERE run_key = ?", [*rows[0][1].values(), rows[0][0]])
                continue
            one = "(" + ", ".join("?" for _ in range(len(cols) + 1)) + ")"
            names = ", ".join(f"_v{i}" for i in range(len(cols)))
            self.conn.execute(
                f"UPDATE runs SET {', '.join(f'{c} = v._v{i}' for i, c in enumerate(cols))} "
                f"FROM (VALUES {', '.join(one for _ in rows)}) v(_rk, {names}) WHERE runs.run_key = v._rk",
                [x for rk, vals in rows for x in (rk, *(vals[c] for c in cols))],
            )

    def replace_submissions(self, run_key: str, subs: Iterable[dict[str, Any]]) -> None:
        """Replace all submissions and test results of a run (rows as dicts of column -> value)."""
        self.replace_submissions_many([(run_key, subs, run_key == self.fresh_run)])

    def replace_submissions_many(self, items: Sequence[tuple[str, Iterable[dict[str, Any]], Optional[bool]]]) -> None:
        """:meth:`replace_submissions` of several runs ``(run_key, rows, fresh)`` (``fresh``: the run
        had no row before this ingest, as :attr:`fresh_run`): one DELETE per table for the runs
        that had rows and one INSERT per table for all of them."""
        with self.transaction():
            gone: list[str] = []
            now: list[tuple[list[dict], list[list]]] = []
            for run_key, subs, fresh in items:
                sub_rows, tests_rows = self._submission_rows(run_key, subs)
                if not fresh:
                    if self.batch_mode and self._submissions_equal(run_key, sub_rows, tests_rows):
                        continue
                    gone.append(run_key)
                elif self.batch_mode and self.defer_new_submissions and self._depth > 1:
                    # a new run inside a transaction: its rows go in with the other runs' at the commit (two
                    # INSERTs per group instead of two per run; nothing reads a new run's submissions
                    # before: finalize hands them to the alignment)
                    if sub_rows:
                        self._pending_subs.append((tuple(sub_rows[0].keys()), sub_rows))
                    self._pending_tests.extend(tests_rows)
                    continue
                now.append((sub_rows, tests_rows))
            if gone:
                where = "run_key = ?" if len(gone) == 1 else f"run_key IN ({', '.join('?' for _ in gone)})"
                self.conn.execute(f"DELETE FROM test_results WHERE {where}", gone)
                self.conn.execute(f"DELETE FROM submissions WHERE {where}", gone)
            by_cols: dict[tuple, list[dict]] = {}
            tests: list[list] = []
            for sub_rows, tests_rows in now:
                if sub_rows:
                    by_cols.setdefault(tuple(sub_rows[0].keys()), []).extend(sub_rows)
                tests.extend(tests_rows)
            for i, rows in enumerate(list(by_cols.values()) or [[]]):
                self._insert_submission_rows(rows, tests if i == 0 else [])

    def _submission_rows(self, run_key: str, subs: Iterable[dict[str, Any]]) -> tuple[list[dict], list[list]]:
        """A run's submission rows and test-result rows as written, secrets out."""
        tests_rows = []
        sub_rows = []
        for s in subs:
            tests = s.pop("tests", [])
            s["run_key"] = run_key
            s["metrics"] = data_json(self.scrubber.scrub_obj(s.get("metrics") or {}))
            sub_rows.append(s)
            for i, tr in enumerate(tests):  # (dicts, or TestResult objects: finalize's rows)
                tests_rows.append(
                    [
                        run_key,
                        s["round"],
                        i,
                        tr.get("name"),
                        tr.get("status"),
                        tr.get("message"),
                        tr.get("score"),
                        tr.get("weight"),
                        tr.get("origin"),
                    ]
                    if isinstance(tr, dict)
                    else [run_key, s["round"], i, tr.name, tr.status, tr.message, tr.score, tr.weight, tr.origin]
                )
        # secrets out, column by column: one prefilter pass per column (edgetui.redact), only the
        # strings where it matched redacted one by one (tens of thousands of test names a root)
        for k in ("summary", "error"):
            for s, v in zip(sub_rows, self.scrubber.scrub_column([s.get(k) for s in sub_rows])):
                s[k] = v
        for col in (3, 5):
            for row, v in zip(tests_rows, self.scrubber.scrub_column([r[col] for r in tests_rows])):
                row[col] = v
        return sub_rows, tests_rows

    def _flush_submissions(self) -> None:
        """Insert the submission and test-result rows deferred in this transaction (batch_mode)."""
        if not self._pending_subs and not self._pending_tests:
            return
        by_cols: dict[tuple, list[dict]] = {}
        for cols, rows in self._pending_subs:
            by_cols.setdefault(cols, []).extend(rows)
        tests = self._pending_tests
        self._pending_subs, self._pending_tests = [], []
        groups = list(by_cols.values()) or [[]]
        for i, rows in enumerate(groups):
            self._insert_submission_rows(rows, tests if i == 0 else [])

    def _insert_submission_rows(self, sub_rows: list[dict], tests_rows: list[list]) -> None:
        if True:  # (one block with replace_submissions' before it was split)
            if sub_rows:
                cols = list(sub_rows[0].keys())
                tbl = pa.Table.from_pylist(sub_rows)
                self.conn.register("_edgetui_subs", tbl)
                try:
                    collist = ", ".join(f'"{c}"' for c in cols)
                    self.conn.execute(f"INSERT INTO submissions ({collist}) SELECT {collist} FROM _edgetui_subs")
                finally:
                    self.conn.unregister("_edgetui_subs")
            if tests_rows:
                tbl = pa.table(
                    list(zip(*tests_rows)),
                    names=["run_key", "round", "idx", "name", "status", "message", "score", "weight", "origin"],
                )
                self.conn.register("_edgetui_tests", tbl)
                try:
                    self.conn.execute("INSERT INTO test_results SELECT * FROM _edgetui_tests")
                finally:
                    self.conn.unregister("_edgetui_tests")

    def _submissions_equal(self, run_key: str, sub_rows: list[dict], tests_rows: list[list]) -> bool:
        """Do the recorded submissions and test results of ``run_key`` hold exactly these rows? (Two
        reads instead of two DELETEs and two INSERTs into indexed tables: a run re-read because its
        transcript grew mostly keeps its submissions.)"""
        if sub_rows:
            cols = list(sub_rows[0].keys())
            collist = ", ".join(f'"{c}"' for c in cols)
            have = self.conn.execute(
                f"SELECT {collist} FROM submissions WHERE run_key = ? ORDER BY round", [run_key]
            ).fetchall()
            ri = cols.index("round")
            want = sorted((tuple(s[c] for c in cols) for s in sub_rows), key=lambda r: r[ri])
        else:
            have = self.conn.execute("SELECT 1 FROM submissions WHERE run_key = ? LIMIT 1", [run_key]).fetchall()
            want = []
        if have != want:
            return False
        have_t = self.conn.execute(
            "SELECT run_key, round, idx, name, status, message, score, weight, origin FROM test_results "
            "WHERE run_key = ? ORDER BY round, idx",
            [run_key],
        ).fetchall()
        return have_t == sorted((tuple(r) for r in tests_rows), key=lambda r: (r[1], r[2]))

    def load_prices(self, prices: dict[str, dict[str, float]]) -> None:
        """Replace the price table: ``{model_pattern: {input, output, cache_read, cache_write}}`` USD per Mtok."""
        with self.transaction():
            self.conn.execute("DELETE FROM prices")
            for pat, p in prices.items():
                self.conn.execute(
                    "INSERT INTO prices VALUES (?, ?, ?, ?, ?)",
                    [
                        pat,
                        p.get("input", 0.0),
                        p.get("output", 0.0),
                        p.get("cache_read", 0.0),
                        p.get("cache_write", 0.0),
                    ],
                )

    def add_annotation(
        self, run_key: str, text: str, *, event_id: Optional[str] = None, t: Optional[float] = None, tags: str = ""
    ) -> str:

        aid = uuid.uuid4().hex[:16]
        self.conn.execute(
            "INSERT INTO annotations VALUES (?, ?, ?, ?, ?, ?, ?)",
            [aid, run_key, event_id, t, self.scrub(text), tags, time.time()],
        )
        return aid
