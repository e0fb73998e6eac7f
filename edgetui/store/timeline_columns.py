"""A run's timeline for the replay screen, held as Arrow columns instead of Python lists.

:func:`run_timeline` returns the rows of :func:`edgetui.store.queries.run_events` (same order, same
columns but ``source``/``offset``/``sub``/``segment``, which only the live screen's incremental
reads use) as an :class:`ArrowTimeline`: each column a read-only sequence whose items are
converted to Python values when asked for (a row drawn, a detail fetched), so a run of a million
events costs its Arrow buffers (tens of bytes an event) instead of a dozen Python objects an event.
What :class:`edgetui.replay.cursor.ReplayCursor` needs of *every* event is computed here with Arrow
kernels: the times as one ``array('d')`` (NaN: untimed), the positions of graded rounds, and the
sub-agent depth of the few events inside a sub-agent.
"""

from __future__ import annotations

from array import array
from typing import Iterable, Iterator, Optional, Sequence

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from edgetui.replay.fold import CLAUDE_FORMATS, is_metadata
from edgetui.store.queries import timeline_table

#: columns of an :class:`ArrowTimeline` (a subset of :data:`edgetui.store.queries.EVENT_LIST_COLUMNS`)
TIMELINE_COLUMNS = (
    "event_id",
    "kind",
    "t",
    "summary",
    "tool_use_id",
    "parent_tool_use_id",
    "tool_name",
    "is_error",
    "round",
    "level",
    "agent_format",
)


class ArrowColumn(Sequence):
    """One column as a sequence: ``col[i]`` is the Python value of row ``i`` (``None`` for NULL)."""

    __slots__ = ("_a",)

    def __init__(self, arr: pa.Array):
        self._a = arr

    def __len__(self) -> int:
        return len(self._a)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self._a[i].to_pylist()
        if i < 0:
            i += len(self._a)
        return self._a[i].as_py()

    def __iter__(self) -> Iterator:
        for chunk_start in range(0, len(self._a), 65536):
            yield from self._a[chunk_start : chunk_start + 65536].to_pylist()

    @property
    def arrow(self) -> pa.Array:
        return self._a


class SparseDepth(Sequence):
    """Sub-agent depth of every event (0 for most): ``depth[i]``; only the non-zero ones stored."""

    __slots__ = ("_n", "_d")

    def __init__(self, n: int, nonzero: dict[int, int]):
        self._n, self._d = n, nonzero

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._d.get(j, 0) for j in range(*i.indices(self._n))]
        return self._d.get(i if i >= 0 else i + self._n, 0)

    def __iter__(self) -> Iterator[int]:
        get = self._d.get
        return (get(j, 0) for j in range(self._n))

    @property
    def nonzero(self) -> dict[int, int]:
        return self._d


class ArrowTimeline:
    """A run's events in timeline order (see :mod:`edgetui.store.queries`), one :class:`ArrowColumn` per name
    of :data:`TIMELINE_COLUMNS`; ``t_array`` the times (epoch seconds UTC, NaN for untimed: they
    come last, the timed ones in ascending order). ``ordered_by_time`` is true: the order's first
    key is ``t`` (what lets the cursor carry positions without a pass over every event)."""

    # the columns, one per name of TIMELINE_COLUMNS (set in __init__)
    event_id: ArrowColumn
    kind: ArrowColumn
    t: ArrowColumn
    summary: ArrowColumn
    tool_use_id: ArrowColumn
    parent_tool_use_id: ArrowColumn
    tool_name: ArrowColumn
    is_error: ArrowColumn
    round: ArrowColumn
    level: ArrowColumn
    agent_format: ArrowColumn

    ordered_by_time = True
    #: the cursor starts with every depth 0 and the caller sets ``cursor.depth = timeline.depths()``
    #: later (the replay screen, after its first paint: a pass over the sub-agent events)
    defer_depths = False

    def __init__(self, tbl: pa.Table):
        self.n = tbl.num_rows
        self._tbl = tbl
        for name in TIMELINE_COLUMNS:
            setattr(self, name, ArrowColumn(tbl.column(name).combine_chunks()))
        t = tbl.column("t").combine_chunks().cast(pa.float64()).fill_null(float("nan"))
        self.t_array = array("d")
        if len(t):
            self.t_array.frombytes(memoryview(t.buffers()[1])[t.offset * 8 : (t.offset + len(t)) * 8])
        self.n_timed = self.n - self.t.arrow.null_count
        self._lowered: Optional[tuple] = None  # summary and tool_name lower-cased (see find)

    def __len__(self) -> int:
        return self.n

    def positions(self, kinds: Iterable[str]) -> list[int]:
        """Positions of the events of these kinds, ascending."""
        mask = pc.is_in(self.kind.arrow, value_set=pa.array(list(kinds), pa.string()))
        return pc.indices_nonzero(mask).to_pylist()

    def metadata_positions(self) -> list[int]:
        """Positions (ascending) of the transcript metadata events (:mod:`edgetui.replay.fold`): the
        candidates picked by Arrow kernels (kind ``system`` of a Claude transcript, no error, a
        quiet level), then their summaries classified by :func:`edgetui.replay.fold.is_metadata`."""

        quiet = pc.or_kleene(
            pc.is_null(self.level.arrow), pc.is_in(self.level.arrow, value_set=pa.array(["", "info", "debug"]))
        )
        cand = pc.and_kleene(
            pc.and_kleene(
                pc.equal(self.kind.arrow, "system"),
                pc.is_in(self.agent_format.arrow, value_set=pa.array(sorted(CLAUDE_FORMATS))),
            ),
            pc.and_kleene(pc.invert(pc.fill_null(self.is_error.arrow, False)), quiet),
        )
        pos = pc.indices_nonzero(pc.fill_null(cand, False)).to_pylist()
        if not pos:
            return []
        seen: dict[Optional[str], bool] = {}
        out = []
        for i, s in zip(pos, self.values_at("summary", pos)):
            m = seen.get(s)
            if m is None:
                m = seen[s] = is_metadata("system", s)
            if m:
                out.append(i)
        return out

    def values_at(self, name: str, positions: Sequence[int]) -> list:
        """The values of column ``name`` at these positions (one Arrow take)."""
        return getattr(self, name).arrow.take(pa.array(positions, pa.int64())).to_pylist()

    def indices_of(self, event_ids: Iterable[str]) -> list[int]:
        """Positions of these event ids (absent ones left out), ascending."""
        ids = pa.array(list(event_ids), pa.string())
        if len(ids) == 0:
            return []
        return pc.indices_nonzero(pc.is_in(self.event_id.arrow, value_set=ids)).to_pylist()

    def find(self, query: str) -> list[int]:
        """Positions (ascending) of the events whose summary or tool name contains ``query``,
        case-insensitive: matched on the columns in memory (Arrow kernels), the same events as
        :func:`search_light` finds in the database."""
        if not query:
            return []
        if self._lowered is None:  # lower-cased once, at the first search (matching ignore_case is ~3x slower)
            self._lowered = (pc.utf8_lower(self.summary.arrow), pc.utf8_lower(self.tool_name.arrow))
        q = query.lower()
        hit = pc.or_kleene(pc.match_substring(self._lowered[0], q), pc.match_substring(self._lowered[1], q))
        return pc.indices_nonzero(pc.fill_null(hit, False)).to_pylist()

    def index_of(self, event_id: str) -> Optional[int]:
        """Position of ``event_id`` (``None`` if absent)."""
        i = pc.index(self.event_id.arrow, event_id).as_py()
        return None if i < 0 else i

    def depths(self) -> SparseDepth:
        """Sub-agent depth of each event, as :func:`edgetui.replay.cursor.subagent_depths` gives it, computed
        over the events inside a sub-agent and the tool calls that launched them only."""
        parents = self.parent_tool_use_id.arrow
        inside = pc.indices_nonzero(pc.is_valid(parents)).to_pylist()
        if not inside:
            return SparseDepth(self.n, {})
        launched = pc.unique(parents.filter(pc.is_valid(parents)))
        calls = pc.indices_nonzero(
            pc.and_(pc.equal(self.kind.arrow, "tool_call"), pc.is_in(self.tool_use_id.arrow, value_set=launched))
        ).to_pylist()
        pos = sorted(set(inside).union(calls))
        take = pa.array(pos, pa.int64())
        kinds = self.kind.arrow.take(take).to_pylist()
        tids = self.tool_use_id.arrow.take(take).to_pylist()
        pars = self.parent_tool_use_id.arrow.take(take).to_pylist()
        call_depth: dict[str, int] = {}
        out: dict[int, int] = {}
        for i, kind, tid, p in zip(pos, kinds, tids, pars):
            d = 0 if p is None else call_depth.get(p, 0) + 1
            if d:
                out[i] = d
            if kind == "tool_call" and tid is not None and tid not in call_depth:
                call_depth[tid] = d
        return SparseDepth(self.n, out)


def run_timeline(conn: duckdb.DuckDBPyConnection, run_key: str) -> ArrowTimeline:
    """A run's events in the timeline order of :func:`edgetui.store.queries.run_events`, as an
    :class:`ArrowTimeline` (its module docstring)."""

    return ArrowTimeline(timeline_table(conn, run_key, TIMELINE_COLUMNS))


def search_light(conn: duckdb.DuckDBPyConnection, run_key: str, query: str) -> list[str]:
    """Ids of the run's events whose summary or tool name contains ``query`` (case-insensitive):
    the fast search (no JSON payload read); :func:`edgetui.store.queries.search_events` also reads the
    tool output and other data."""
    q = (query or "").lower()
    if not q:
        return []
    with conn.cursor() as cur:
        rows = cur.execute(
            "SELECT event_id FROM events WHERE run_key = ? AND (contains(lower(summary), ?) "
            "OR contains(lower(tool_name), ?))",
            [run_key, q, q],
        ).fetchall()
    return [r[0] for r in rows]
