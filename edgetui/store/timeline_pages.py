"""A run's timeline read in pages: what the replay screen holds of a run of any size.

The timeline order is :mod:`edgetui.store.queries`'s (``t`` ascending, untimed last, then segment, segment
end, source rank, offset, sub, event id). A :class:`PagedTimeline` holds of *every* event only its
time: the timed events' ``t`` sorted ascending, one float64 each (8 bytes an event; NaN for the
untimed tail), read as stored and sorted by numpy. Positions are found from times: an
event whose ``t`` no other event shares sits at ``searchsorted(t)``; for the few groups of events
sharing a ``t`` the group is read with its full sort key and ordered here (:func:`positions_where`).
With it, when the run opens (:func:`load_index`), the marks the cursor moves between are found by SQL
and placed: graded rounds (with their round names), transcript metadata (folds, with the first words
their fold rows show), sub-agent depths (the events inside a sub-agent and the calls launching them).

Everything else is read by page (:data:`PAGE` rows) on demand (:meth:`PagedTimeline.fetch_pages`,
from a worker; :meth:`PagedTimeline.add_pages` on the UI thread): a page of timed positions
``[a, b)`` is the rows with ``t`` between ``t[a]`` and ``t[b-1]`` (DuckDB's zone maps on ``t`` serve
it), ordered here; a page of the untimed tail by ``LIMIT/OFFSET`` in SQL. At most
:data:`MAX_PAGES` pages are kept (least recently added dropped). Columns read like lists
(``tl.summary[i]``) and give ``None`` for a row whose page is not read (``kind`` and ``round`` of a
graded round are always known).

:func:`first_page` reads the first :data:`PAGE` rows before any of that (a top-N on ``t``): the
replay's first paint. :meth:`PagedTimeline.find` searches summaries and tool names in DuckDB and
returns the matches' positions (an int64 array, 8 bytes a match); tool output is searched only when
asked (:meth:`PagedTimeline.find_in_data`).

No Textual here (core).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Iterable, Optional, Sequence

import duckdb
import numpy as np
import pyarrow as pa

from edgetui.store.queries import EventColumns

from bisect import bisect_left
from edgetui.replay.fold import fold_head
from edgetui.replay.fold import is_metadata

__all__ = [
    "PAGE",
    "MAX_PAGES",
    "PAGE_COLUMNS",
    "ArrayDepth",
    "PagedTimeline",
    "Positions",
    "first_page",
    "load_index",
    "positions_where",
]

#: rows in a page
PAGE = 512
#: pages kept in memory (the least recently added dropped first)
MAX_PAGES = 64
#: columns of a page (the event list's, the detail's key, and the sort key's)
PAGE_COLUMNS = (
    "event_id",
    "kind",
    "t",
    "source",
    "offset",
    "sub",
    "summary",
    "tool_use_id",
    "parent_tool_use_id",
    "tool_name",
    "is_error",
    "round",
    "level",
    "segment",
    "agent_format",
)
_SEL = ", ".join(f'"{c}"' for c in PAGE_COLUMNS)
_I = {c: i for i, c in enumerate(PAGE_COLUMNS)}
#: the events the fast search matches: summary or tool name containing ``$q``, case-insensitive
#: (``$q`` a LIKE pattern from :func:`like_pattern`; DuckDB's ILIKE ran 2-3x faster here than
#: ``contains(lower(…))``, which lower-cases every string first)
LIGHT_MATCH_SQL = "(summary ILIKE $q ESCAPE '\\' OR tool_name ILIKE $q ESCAPE '\\')"


def like_pattern(text: str) -> str:
    """``%text%`` with LIKE's wildcards in ``text`` escaped (``\\`` is the escape)."""
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


#: the slower search: the data JSON text (tool output, inputs…) containing ``$q``
DATA_MATCH_SQL = "contains(lower(coalesce(CAST(data AS VARCHAR), '')), $q)"
_SRC_SQL = "SELECT source, min(t) AS mt FROM events WHERE run_key = $rk GROUP BY source"
_FULL_ORDER = (
    "ev.t ASC NULLS LAST, ev.segment ASC NULLS LAST, (ev.kind = 'segment_end'), _src.mt ASC NULLS LAST, "
    'ev.source, ev."offset", ev.sub, ev.event_id'
)


def _key(src: dict):
    """Sort key of a page row (a tuple in :data:`PAGE_COLUMNS` order) in the timeline order, ``src``
    giving each source's earliest ``t`` (``None``: untimed): the same order as
    :data:`edgetui.store.queries.EVENT_ORDER_SQL` (a source's rank is the order of (earliest t, name))."""
    i_t, i_seg, i_kind, i_src, i_off, i_sub, i_id = (
        _I[c] for c in ("t", "segment", "kind", "source", "offset", "sub", "event_id")
    )

    def key(r: tuple) -> tuple:
        t, seg, off, sub, s = r[i_t], r[i_seg], r[i_off], r[i_sub], r[i_src]
        m = src.get(s)
        return (
            t is None,
            t or 0.0,
            seg is None,
            seg or 0,
            r[i_kind] == "segment_end",
            m is None,
            m or 0.0,
            s,
            off is None,
            off or 0,
            sub is None,
            sub or 0,
            r[i_id],
        )

    return key


def _columns(rows: Sequence[tuple]) -> dict[str, list]:
    return {c: [r[j] for r in rows] for j, c in enumerate(PAGE_COLUMNS)}


def first_page(conn: duckdb.DuckDBPyConnection, run_key: str, n: Optional[int] = None) -> EventColumns:
    """The first :data:`PAGE` events of the run in timeline order, as :class:`EventColumns`: the rows
    with ``t`` up to the :data:`PAGE`-th smallest ``t`` (a top-N), ordered here. Every source of
    those rows has its earliest event among them (it is at or before that ``t``), so their order
    is exact without reading the rest of the run."""
    with conn.cursor() as cur:
        hi = cur.execute(
            "SELECT t FROM events WHERE run_key = ? AND t IS NOT NULL ORDER BY t LIMIT 1 OFFSET ?", [run_key, PAGE - 1]
        ).fetchall()
        if hi:
            rows = cur.execute(
                f"SELECT {_SEL} FROM events WHERE run_key = ? AND t <= ?", [run_key, hi[0][0]]
            ).fetchall()
        else:  # fewer timed events than a page: all of them, then the untimed ones
            rows = cur.execute(f"SELECT {_SEL} FROM events WHERE run_key = ? AND t IS NOT NULL", [run_key]).fetchall()
    src: dict[str, float] = {}
    for r in rows:
        s, t = r[_I["source"]], r[_I["t"]]
        if s not in src or t < src[s]:
            src[s] = t
    rows.sort(key=_key(src))
    rows = rows[:PAGE]
    if len(rows) < PAGE:
        rows += _tail_rows(conn, run_key, 0, PAGE - len(rows))
    out = EventColumns()
    for c, vals in _columns(rows).items():
        setattr(out, c, vals)
    return out


def _tail_rows(conn: duckdb.DuckDBPyConnection, run_key: str, offset: int, limit: int) -> list[tuple]:
    """Rows ``[offset, offset + limit)`` of the untimed tail, in timeline order (SQL)."""
    sel = ", ".join(f'ev."{c}"' for c in PAGE_COLUMNS)
    with conn.cursor() as cur:
        return cur.sql(
            f"""WITH _src AS ({_SRC_SQL})
                           SELECT {sel} FROM events ev JOIN _src ON _src.source = ev.source
                           WHERE ev.run_key = $rk AND ev.t IS NULL ORDER BY {_FULL_ORDER} LIMIT $lim OFFSET $off""",
            params={"rk": run_key, "lim": limit, "off": offset},
        ).fetchall()


def positions_where(
    conn: duckdb.DuckDBPyConnection,
    run_key: str,
    t_sorted: np.ndarray,
    n: int,
    src: dict,
    cond: str,
    params: Optional[dict] = None,
    columns: Sequence[str] = (),
    *,
    t_from: Optional[float] = None,
    t_below: Optional[float] = None,
    limit: Optional[int] = None,
    tail: bool = True,
) -> tuple[np.ndarray, dict[str, list]]:
    """Positions (ascending int64 array) in the timeline of the run's events matching the SQL
    condition ``cond`` (over ``events``; named parameters ``params``, ``$rk`` is the run key), and
    the values of ``columns`` of each, in the same order.

    A timed event whose ``t`` is unique sits at ``searchsorted(t_sorted, t)``; the events of a ``t``
    shared by several are read with their sort key and ordered by :func:`_key` with ``src`` (each
    source's earliest ``t``); the untimed tail (``n`` events in all) is ordered as
    :func:`_tail_sorted` orders it.

    Narrowed: only timed events with ``t >= t_from`` and ``t < t_below`` (epoch seconds UTC), the
    untimed tail only when ``tail``; ``limit``: the matches of the ``limit`` smallest times (an
    ``ORDER BY t LIMIT``: DuckDB's top-N stops reading row groups past the limit's time, so a page of
    frequent matches costs a few row groups, not the run), every match of the last time included."""
    n_timed = len(t_sorted)
    p = {"rk": run_key, **(params or {})}
    cols = list(columns)
    extra = "".join(f', "{c}"' for c in cols)
    narrow = ""
    if t_from is not None:
        narrow += " AND t >= $t_from"
        p["t_from"] = float(t_from)
    if t_below is not None:
        narrow += " AND t < $t_below"
        p["t_below"] = float(t_below)
    top = ""
    if limit is not None:
        top = " ORDER BY t LIMIT $limit"
        p["limit"] = int(limit)
    with conn.cursor() as cur:
        tbl = cur.sql(
            f"SELECT t{extra} FROM events WHERE run_key = $rk AND t IS NOT NULL{narrow} AND ({cond}){top}", params=p
        ).to_arrow_table()
    for k in ("t_from", "t_below", "limit"):
        p.pop(k, None)
    tm = tbl.column("t").to_numpy()
    if not cols:  # (sorted times are searched several times faster: the probes walk the array in order)
        tm = np.sort(tm)
    left = np.searchsorted(t_sorted, tm, "left")
    nxt = np.minimum(left + 1, max(0, n_timed - 1))
    single = (left + 1 >= n_timed) | (t_sorted[nxt] != tm) if n_timed else np.ones(len(tm), bool)
    pos_parts = [left[single]]
    val_parts: dict[str, list] = {}
    if not single.all():
        mask = pa.array(single)
        val_parts = {c: tbl.column(c).filter(mask).to_pylist() for c in cols}
        tied = np.unique(tm[~single])
        sel = ", ".join(f'"{c}"' for c in PAGE_COLUMNS)
        with conn.cursor() as cur:
            rows = cur.sql(
                f"""SELECT {sel}, ({cond}) AS _hit{"".join(f', "{c}" AS "_c_{c}"' for c in cols)}
                               FROM events WHERE run_key = $rk AND t IN (SELECT unnest($tv::DOUBLE[]))""",
                params={**p, "tv": tied.tolist()},
            ).fetchall()
        k = _key(src)
        rows.sort(key=lambda r: k(r[: len(PAGE_COLUMNS)]))
        i_t = _I["t"]
        base = np.searchsorted(t_sorted, np.array([r[i_t] for r in rows], dtype=np.float64), "left")
        prev_t, rank = None, 0
        tp: list[int] = []
        tv: dict[str, list[Any]] = {c: [] for c in cols}
        for r, b in zip(rows, base):
            rank = rank + 1 if r[i_t] == prev_t else 0
            prev_t = r[i_t]
            if r[len(PAGE_COLUMNS)]:
                tp.append(int(b) + rank)
                for j, c in enumerate(cols):
                    tv[c].append(r[len(PAGE_COLUMNS) + 1 + j])
        pos_parts.append(np.array(tp, dtype=np.int64))
        for c in cols:
            val_parts[c] += tv[c]
    if tail and n_timed < n:
        with conn.cursor() as cur:
            hits = cur.sql(
                f"SELECT count(*) FROM events WHERE run_key = $rk AND t IS NULL AND ({cond})", params=p
            ).fetchall()[0][0]
        if hits:
            if not val_parts:
                val_parts = {c: tbl.column(c).filter(pa.array(single)).to_pylist() for c in cols}
            aliased = "".join(f', "{c}" AS "_c_{c}"' for c in cols)
            rows = _tail_sorted(conn, run_key, src, n - n_timed, f", ({cond}) AS _hit{aliased}", p)
            w = len(PAGE_COLUMNS)
            pos_parts.append(np.array([n_timed + j for j, r in enumerate(rows) if r[w]], dtype=np.int64))
            for j, c in enumerate(cols):
                val_parts[c] += [r[w + 1 + j] for r in rows if r[w]]
    if len(pos_parts) == 1:  # every match at a time of its own (the common case): reorder in Arrow
        order = np.argsort(pos_parts[0], kind="stable")
        take = pa.array(order)
        return pos_parts[0][order].astype(np.int64), {c: tbl.column(c).take(take).to_pylist() for c in cols}
    pos = np.concatenate(pos_parts).astype(np.int64)
    order = np.argsort(pos, kind="stable")
    pos = pos[order]
    out_vals = {c: np.array(val_parts[c], dtype=object)[order].tolist() for c in cols}
    return pos, out_vals


#: an untimed tail up to this many events is ordered here (with the sources' earliest times known),
#: a longer one (a run not aligned yet) by SQL
TAIL_IN_PYTHON = 50_000


def _tail_sorted(
    conn: duckdb.DuckDBPyConnection,
    run_key: str,
    src: dict,
    n_tail: int,
    extra: str = "",
    params: Optional[dict] = None,
) -> list[tuple]:
    """Every untimed row (:data:`PAGE_COLUMNS`, then ``extra`` select items) in timeline order."""
    p = {"rk": run_key, **(params or {})}
    with conn.cursor() as cur:
        if n_tail <= TAIL_IN_PYTHON:
            rows = cur.sql(f"SELECT {_SEL}{extra} FROM events WHERE run_key = $rk AND t IS NULL", params=p).fetchall()
            k = _key(src)
            rows.sort(key=lambda r: k(r[: len(PAGE_COLUMNS)]))
            return rows
        sel = ", ".join(f'ev."{c}"' for c in PAGE_COLUMNS)
        return cur.sql(
            f"""WITH _src AS ({_SRC_SQL})
                           SELECT {sel}{extra} FROM events ev JOIN _src ON _src.source = ev.source
                           WHERE ev.run_key = $rk AND ev.t IS NULL ORDER BY {_FULL_ORDER}""",
            params=p,
        ).fetchall()


class Positions(Sequence):
    """Ascending timeline positions (an int64 array, 8 bytes each) read like a list of ints."""

    __slots__ = ("array",)

    def __init__(self, arr: np.ndarray):
        self.array = arr

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.array[i].tolist()
        return int(self.array[i])

    def __iter__(self):
        return iter(self.array.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Positions):
            return bool(np.array_equal(self.array, other.array))
        return isinstance(other, Sequence) and self.array.tolist() == list(other)

    def tolist(self) -> list[int]:
        return self.array.tolist()


class ArrayDepth(Sequence):
    """Sub-agent depth of each of ``n`` events (0 for most) from the positions (ascending int64) and
    depths of the others: 10 bytes an event inside a sub-agent, where a dict of them took ~70 (8 MB
    for the 120,000 of the 1,000,000-event bench run)."""

    __slots__ = ("_n", "_pos", "_d")

    def __init__(self, n: int, positions: np.ndarray, depths: np.ndarray):
        self._n, self._pos, self._d = n, positions, depths

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        k = int(np.searchsorted(self._pos, i))
        return int(self._d[k]) if k < len(self._pos) and self._pos[k] == i else 0

    def __iter__(self):
        dense = np.zeros(self._n, np.int16)
        dense[self._pos] = self._d
        return iter(dense.tolist())

    @property
    def nonzero(self) -> dict[int, int]:
        return dict(zip(self._pos.tolist(), self._d.tolist()))


class _Column(Sequence):
    """One column of a :class:`PagedTimeline`: ``col[i]`` from the page holding row ``i`` (``None``
    while it is not read); ``kind`` / ``round`` of a graded round from the index."""

    __slots__ = ("_tl", "_j", "_name")

    def __init__(self, tl: "PagedTimeline", name: str):
        self._tl, self._j, self._name = tl, _I[name], name

    def __len__(self) -> int:
        return self._tl.n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._tl.n))]
        tl = self._tl
        if i < 0:
            i += tl.n
        page = tl._pages.get(i // PAGE)
        if page is not None:
            return page[self._j][i - (i // PAGE) * PAGE]
        if self._name in ("round", "kind"):
            g = tl._graded.get(i)
            if g is not None:
                return g[0] if self._name == "round" else g[1]
        return None

    def __iter__(self):
        raise TypeError("a paged column is read by row (col[i]); iterating it would read the whole run")


class PagedTimeline:
    """A run's timeline with only its times in memory (module docstring); built by :func:`load_index`."""

    ordered_by_time = True
    defer_depths = False

    def __init__(
        self,
        run_key: str,
        n: int,
        t_sorted: np.ndarray,
        src: dict,
        graded: tuple[np.ndarray, list, list],
        meta: tuple[list[int], list[str]],
        depth: tuple[np.ndarray, np.ndarray],
    ):
        self.run_key = run_key
        self.n = n
        self.n_timed = len(t_sorted)
        #: times of every event, epoch seconds UTC, NaN for the untimed tail (what the cursor views;
        #: numpy's float64 items are Python floats)
        self.t_array = np.full(n, np.nan)
        self.t_array[: self.n_timed] = t_sorted
        self._t_sorted = self.t_array[: self.n_timed]
        self._src = src
        pos, rounds, kinds = graded
        self._graded_pos = [int(p) for p in pos]
        self._graded = {p: (r, k) for p, r, k in zip(self._graded_pos, rounds, kinds)}
        self._meta_pos, self._meta_summary = meta
        self._depth = depth
        self._pages: "OrderedDict[int, list[list]]" = OrderedDict()
        for name in PAGE_COLUMNS:
            setattr(self, name, _Column(self, name))

    def __len__(self) -> int:
        return self.n

    # ------------------------------------------------------------------ what the cursor asks once

    def positions(self, kinds: Iterable[str]) -> list[int]:
        """Positions of the graded rounds (``judge_result`` / ``game_result``: the only kinds the
        index knows; others raise ``ValueError``)."""
        want = set(kinds)
        if not want <= {"judge_result", "game_result"}:
            raise ValueError(f"a paged timeline knows the positions of graded rounds only, not {sorted(want)}")
        return [p for p in self._graded_pos if self._graded[p][1] in want]

    def values_at(self, name: str, positions: Sequence[int]) -> list:
        """``round`` / ``kind`` of graded rounds (from the index); other columns from the pages read."""
        col = getattr(self, name)
        return [col[i] for i in positions]

    def metadata_positions(self) -> list[int]:
        return self._meta_pos

    def depths(self) -> "ArrayDepth":
        return ArrayDepth(self.n, *self._depth)

    def fold_heads(self, i: int, folded: int) -> dict[str, int]:
        """First words (:func:`edgetui.replay.fold.fold_head`) of the ``folded`` metadata events from event
        ``i`` on, with their counts (from the index: no page read)."""

        k = bisect_left(self._meta_pos, i)
        heads: dict[str, int] = {}
        for s in self._meta_summary[k : k + folded]:
            h = fold_head(s or "")
            heads[h] = heads.get(h, 0) + 1
        return heads

    # ------------------------------------------------------------------ pages

    def has(self, i: int) -> bool:
        return (i // PAGE) in self._pages

    def missing(self, lo: int, hi: int) -> list[int]:
        """Pages not read among those holding rows ``lo`` to ``hi`` (inclusive)."""
        lo, hi = max(0, lo), min(self.n - 1, hi)
        return [p for p in range(lo // PAGE, hi // PAGE + 1) if p not in self._pages] if hi >= lo else []

    def fetch_pages(self, conn: duckdb.DuckDBPyConnection, pages: Iterable[int]) -> dict[int, list[list]]:
        """Read these pages (I/O: call from a worker): ``{page: columns}``, each column a list in
        :data:`PAGE_COLUMNS` order; hand the result to :meth:`add_pages` on the UI thread."""
        out: dict[int, list[list]] = {}
        for p in pages:
            a, b = p * PAGE, min(self.n, (p + 1) * PAGE)
            rows: list[tuple] = []
            if a < self.n_timed:
                e = min(b, self.n_timed)
                lo, hi = float(self._t_sorted[a]), float(self._t_sorted[e - 1])
                with conn.cursor() as cur:
                    got = cur.execute(
                        f"SELECT {_SEL} FROM events WHERE run_key = ? AND t >= ? AND t <= ?", [self.run_key, lo, hi]
                    ).fetchall()
                got.sort(key=_key(self._src))
                skip = a - int(np.searchsorted(self._t_sorted, lo, "left"))
                rows = got[skip : skip + (e - a)]
            if b > self.n_timed:
                off = max(a, self.n_timed) - self.n_timed
                n_tail = self.n - self.n_timed
                if n_tail <= TAIL_IN_PYTHON:
                    rows += _tail_sorted(conn, self.run_key, self._src, n_tail)[off : off + b - max(a, self.n_timed)]
                else:
                    rows += _tail_rows(conn, self.run_key, off, b - max(a, self.n_timed))
            out[p] = [list(col) for col in zip(*rows)] if rows else [[] for _ in PAGE_COLUMNS]
        return out

    def add_pages(self, pages: dict[int, list[list]]) -> None:
        for p, cols in pages.items():
            self._pages[p] = cols
            self._pages.move_to_end(p)
        while len(self._pages) > MAX_PAGES:
            self._pages.popitem(last=False)

    # ------------------------------------------------------------------ search

    def find(self, conn: duckdb.DuckDBPyConnection, query: str) -> Positions:
        """Positions (ascending) of the events whose summary or tool name contains ``query``,
        case-insensitive (DuckDB; the same events as :func:`edgetui.store.timeline_columns.search_light`)."""
        return self._find(conn, query, data=False)

    def find_in_data(self, conn: duckdb.DuckDBPyConnection, query: str) -> Positions:
        """Positions of the events whose summary or data JSON text (tool output…) contains ``query``
        (the events of :func:`edgetui.store.queries.search_events`)."""
        return self._find(conn, query, data=True)

    def find_from(
        self, conn: duckdb.DuckDBPyConnection, query: str, index: int, *, data: bool = False, limit: int = PAGE
    ) -> tuple[Positions, Optional[tuple[int, int]]]:
        """The first page of :meth:`find`'s matches (:meth:`find_in_data`'s with ``data``) from the
        time of event ``index`` on: ``(positions, cover)``, every match whose position is in
        ``cover = (lo, hi)`` (inclusive; ``lo`` the first event at ``index``'s time) being in
        ``positions``, or ``cover`` ``None`` when they are every match of the run. The matches of
        the ``limit`` earliest times from there (:func:`positions_where`'s top-N): a frequent word's
        page reads a few row groups (10–60 ms at a million events, against 0.1–0.5 s for every
        match), a rare word's reads the run once, and then :meth:`find_rest` reads only what is
        left. An ``index`` in the untimed tail reads every match (``cover`` ``None``)."""
        cond, params = self._match(query, data)
        if cond is None:
            return Positions(np.zeros(0, np.int64)), None
        if not 0 <= index < self.n_timed:
            return Positions(
                positions_where(conn, self.run_key, self._t_sorted, self.n, self._src, cond, params)[0]
            ), None
        t0 = float(self._t_sorted[index])
        lo = int(np.searchsorted(self._t_sorted, t0, "left"))
        pos, _ = positions_where(
            conn, self.run_key, self._t_sorted, self.n, self._src, cond, params, t_from=t0, limit=limit, tail=False
        )
        if len(pos) >= limit:  # (the last time's matches are all in: see positions_where)
            t_last = float(self.t_array[int(pos[-1])])
            hi = int(np.searchsorted(self._t_sorted, t_last, "right")) - 1
        else:
            hi = self.n - 1 if self.n_timed == self.n else self.n_timed - 1
        if lo == 0 and hi == self.n - 1:
            return Positions(pos), None
        return Positions(pos), (lo, hi)

    def find_rest(
        self,
        conn: duckdb.DuckDBPyConnection,
        query: str,
        found: Positions,
        cover: Optional[tuple[int, int]],
        *,
        data: bool = False,
    ) -> Positions:
        """Every match (:meth:`find` / :meth:`find_in_data`) given those of :meth:`find_from`
        (``found``, ``cover``): when that page held fewer than its limit, only the events before its
        time and the untimed tail are read; else the whole run."""
        if cover is None:
            return found
        cond, params = self._match(query, data)
        if cond is None:
            return Positions(np.zeros(0, np.int64))
        lo, hi = cover
        if hi < self.n_timed - 1 or lo >= self.n_timed:
            return self._find(conn, query, data=data)
        before, _ = (
            positions_where(
                conn,
                self.run_key,
                self._t_sorted,
                self.n,
                self._src,
                cond,
                params,
                t_below=float(self._t_sorted[lo]),
                tail=False,
            )
            if lo > 0
            else (np.zeros(0, np.int64), {})
        )
        tail = np.zeros(0, np.int64)
        if hi < self.n - 1:  # the untimed tail
            tail = positions_where(
                conn, self.run_key, self._t_sorted, self.n, self._src, cond, params, t_from=float("inf"), tail=True
            )[0]
        return Positions(np.concatenate([before, found.array, tail]).astype(np.int64))

    @staticmethod
    def _match(query: str, data: bool) -> tuple[Optional[str], dict]:
        """SQL condition and parameters of a search (``None``: an empty query matches nothing)."""
        q = (query or "").lower()
        if not q:
            return None, {}
        if data:
            return f"(contains(lower(coalesce(summary, '')), $q) OR {DATA_MATCH_SQL})", {"q": q}
        return LIGHT_MATCH_SQL, {"q": like_pattern(q)}

    def _find(self, conn: duckdb.DuckDBPyConnection, query: str, *, data: bool) -> Positions:
        cond, params = self._match(query, data)
        if cond is None:
            return Positions(np.zeros(0, np.int64))
        return Positions(positions_where(conn, self.run_key, self._t_sorted, self.n, self._src, cond, params)[0])

    def index_of_id(self, conn: duckdb.DuckDBPyConnection, event_id: str) -> Optional[int]:
        """Position of ``event_id`` (``None`` if not in the run)."""
        pos, _ = positions_where(
            conn, self.run_key, self._t_sorted, self.n, self._src, "event_id = $eid", {"eid": event_id}
        )
        return int(pos[0]) if len(pos) else None


_CLAUDE_SQL = "('claude_stream', 'claude_session')"


def load_index(conn: duckdb.DuckDBPyConnection, run_key: str) -> PagedTimeline:
    """Read what a :class:`PagedTimeline` holds of every event (module docstring): the sorted times,
    each source's earliest time, and the positions of graded rounds, metadata events and the events
    with a sub-agent depth. I/O: call from a worker."""

    with conn.cursor() as cur:
        n = int(cur.execute("SELECT count(*) FROM events WHERE run_key = ?", [run_key]).fetchall()[0][0])
        # read as they are stored and sorted here: DuckDB's ORDER BY of a million times took 75-117 ms
        # and left its sort's buffers in the process (+73 MB resident), this 23-31 ms and +3-29 MB
        t_sorted = cur.execute("SELECT t FROM events WHERE run_key = ? AND t IS NOT NULL", [run_key]).fetchnumpy()["t"]
        t_sorted = np.sort(np.asarray(t_sorted, dtype=np.float64))
        src = dict(cur.sql(_SRC_SQL, params={"rk": run_key}).fetchall())

    def where(cond: str, cols: Sequence[str]):
        return positions_where(conn, run_key, t_sorted, n, src, cond, None, cols)

    gpos, gv = where("kind IN ('judge_result', 'game_result')", ("round", "kind"))
    mpos, mv = where(
        f"kind = 'system' AND agent_format IN {_CLAUDE_SQL} AND NOT coalesce(is_error, FALSE) "
        "AND (level IS NULL OR level IN ('', 'info', 'debug'))",
        ("summary",),
    )
    seen: dict[Optional[str], bool] = {}
    meta_pos: list[int] = []
    meta_sum: list[str] = []
    for p, s in zip(mpos, mv["summary"]):
        m = seen.get(s)
        if m is None:
            m = seen[s] = is_metadata("system", s)
        if m:
            meta_pos.append(int(p))
            meta_sum.append(s)
    launched = "(SELECT parent_tool_use_id FROM events WHERE run_key = $rk AND parent_tool_use_id IS NOT NULL)"
    with conn.cursor() as cur:
        nested = cur.sql(
            f"SELECT count(*) FROM events WHERE run_key = $rk AND kind = 'tool_call' AND "
            f"parent_tool_use_id IS NOT NULL AND tool_use_id IN {launched}",
            params={"rk": run_key},
        ).fetchall()[0][0]
    if not nested:  # no sub-agent inside a sub-agent: every event inside one is at depth 1
        dpos, _ = where("parent_tool_use_id IS NOT NULL", ())
        depth = (dpos, np.ones(len(dpos), np.int16))
    else:  # the order matters: a call's depth is known when the events it launched come
        dpos, dv = where(
            f"parent_tool_use_id IS NOT NULL OR (kind = 'tool_call' AND tool_use_id IN {launched})",
            ("kind", "tool_use_id", "parent_tool_use_id"),
        )
        call_depth: dict[str, int] = {}
        depth_at: dict[int, int] = {}
        for i, kind, tid, par in zip(dpos.tolist(), dv["kind"], dv["tool_use_id"], dv["parent_tool_use_id"]):
            d = 0 if par is None else call_depth.get(par, 0) + 1
            if d:
                depth_at[i] = d
            if kind == "tool_call" and tid is not None and tid not in call_depth:
                call_depth[tid] = d
        depth = (np.array(list(depth_at), np.int64), np.array(list(depth_at.values()), np.int16))
    return PagedTimeline(run_key, n, t_sorted, src, (gpos, gv["round"], gv["kind"]), (meta_pos, meta_sum), depth)
