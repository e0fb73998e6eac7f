"""Timeline cursor over one run's events: the time logic of the replay screen.

No Textual here: the cursor is plain state plus pure moves, so it is tested
without a terminal and shared by the live and replay views.

**Order.** The cursor walks the events in the order they are given; the views
load them with :func:`edgetui.store.queries.run_events`, whose order is the timeline
order of edgetui: ``t`` ascending with untimed events (``t IS NULL``) last, then
the source order (sources ranked by their earliest ``t``, then by name), then
byte ``offset`` and ``sub`` within the source (then ``event_id``).

**Paged timelines: the interface moments and analysis build on.** The replay screen hands the
cursor an :class:`edgetui.store.timeline_pages.PagedTimeline`: a run's events are *not* all in memory. What the
cursor holds of every event is its time (one ``array('d')``, 8 bytes an event: NaN for untimed) and
the positions of the few marks it moves between (graded rounds with their round names, new bests,
moments, metadata folds, sub-agent depths), all computed by SQL when the run opens; the columns
(``events.kind[i]``, ``events.summary[i]``, ``events.event_id[i]``…) are pages of
:data:`edgetui.store.timeline_pages.PAGE` rows read on demand by the screen's workers (``None`` where a page is not
read yet; ``kind`` and ``round`` of a graded round are always known). So code built on a cursor
(moments, analysis, views) must take positions, times and marks from the cursor and read event
columns only for the rows it shows, or query the database by position
(:meth:`edgetui.store.timeline_pages.PagedTimeline.fetch_pages`) — never iterate a column. The same interface
serves :class:`edgetui.store.timeline_columns.ArrowTimeline` (a whole run as Arrow columns; tests) and plain
lists (:class:`edgetui.store.queries.EventColumns`, the live run screen): ``events`` is any object with the
columns below.

**Elapsed.** ``elapsed = t − start`` where ``start`` is ``runs.started_at``, or
the first event's ``t`` when the run has no start. Untimed events (after all
timed ones) have no elapsed of their own; for time moves and for the chart
cursor they sit at the last known elapsed (:meth:`ReplayCursor.position`), so
positions never decrease along the timeline.

**Moves.** Every move returns ``True`` when the selected event changed.

* step ±n, first / last;
* previous / next *submission*: ``judge_result`` events (one per graded round,
  carrying ``round``; ``game_result`` for game sessions) — the moment the grade came back, which is when the curve
  changes (``submission_sent`` only says a round went out);
* previous / next *new best*: ``judge_result`` events whose round has
  ``is_new_best`` in the ``submissions`` table;
* previous / next *moment*: the ``judge_result`` events of the rounds given to
  :meth:`ReplayCursor.set_moments` (reframing moments, :mod:`edgetui.replay.moments`);
* jump to an elapsed time: the last event at or before it;
* search: case-insensitive substring over summary (and data text when given,
  or matches computed by the database, see :func:`edgetui.store.queries.search_events`),
  then next / previous match, cycling;
* play: :meth:`ReplayCursor.advance` moves the play head by ``dt × speed``
  seconds of run time and selects the last event at or before the head. The
  caller owns the clock (``dt`` is wall-clock seconds since its last tick).

**Rows and folds.** The list shows *rows*. Unfolded (the default of a bare
cursor), a row is an event. With :meth:`ReplayCursor.set_folding` on, each
consecutive run of metadata events (:func:`edgetui.replay.fold.metadata_mask`) is one
row standing for all of them; its *anchor* is its first event. Steps (±n,
pages) move by rows and select a row's anchor; every other move selects an
event as above, which may sit inside a fold (its row is then the fold's row).
Folding changes no event, index, time or match: only what a step skips.
"""

from __future__ import annotations

import collections.abc as _abc
import re
from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Mapping, Optional, Sequence, cast

from edgetui.replay.fold import metadata_mask

__all__ = [
    "SPEEDS",
    "SUBMISSION_KINDS",
    "ReplayCursor",
    "format_elapsed",
    "parse_elapsed",
    "subagent_depths",
]

#: Play speeds (run seconds per wall second) cycled by the UI.
SPEEDS: tuple[int, ...] = (1, 10, 60, 600)
#: Event kinds that mark a graded round on the timeline (game sessions end in ``game_result``).
SUBMISSION_KINDS: tuple[str, ...] = ("judge_result", "game_result")


# ---------------------------------------------------------------------------- elapsed text


def format_elapsed(seconds: Optional[float]) -> str:
    """``h:mm:ss`` (hours unbounded: ``13:05:09``); ``-`` for ``None``; a leading ``-`` when negative."""
    if seconds is None:
        return "-"
    sign = "-" if seconds < 0 else ""
    s = int(abs(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{sign}{h}:{m:02d}:{sec:02d}"


_UNIT = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_UNITS_RE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*([dhms])")


def parse_elapsed(text: str) -> float:
    """Seconds from an elapsed-time string; raises ``ValueError`` when unreadable.

    Accepts unit strings ``3h20m``, ``95m``, ``1.5h``, ``2h 5m 10s``, ``45s``,
    ``1d2h``; clock strings ``2:15:00`` (h:mm:ss) and ``2:15`` (h:mm — hours
    first, as the event list shows time); plain numbers are seconds (``5400``).
    """
    s = (text or "").strip().lower().replace(" ", "")
    if not s:
        raise ValueError("empty time")
    if ":" in s:
        parts = s.split(":")
        if len(parts) > 3 or any(not p for p in parts):
            raise ValueError(f"cannot read time {text!r}: use h:mm:ss or h:mm")
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"cannot read time {text!r}: use h:mm:ss or h:mm") from None
        if len(nums) == 2:
            nums.append(0.0)
        h, m, sec = nums
        return h * 3600 + m * 60 + sec
    try:
        return float(s)
    except ValueError:
        pass
    pos = 0
    total = 0.0
    for unit in _UNITS_RE.finditer(s):
        if unit.start() != pos:
            break
        total += float(unit.group(1)) * _UNIT[unit.group(2)]
        pos = unit.end()
    if pos != len(s) or pos == 0:
        raise ValueError(f"cannot read time {text!r}: try 3h20m, 95m, 2:15:00 or seconds")
    return total


# ---------------------------------------------------------------------------- structure


def subagent_depths(
    kind: Sequence[str],
    tool_use_id: Sequence[Optional[str]],
    parent_tool_use_id: Sequence[Optional[str]],
) -> list[int]:
    """Nesting depth of each event: 0 on the main thread, 1 inside a subagent, 2 inside its subagent...

    An event with ``parent_tool_use_id`` sits one level under the tool call
    that launched its subagent (itself possibly inside a subagent).
    """
    call_depth: dict[str, int] = {}
    out = [0] * len(kind)
    for i, parent in enumerate(parent_tool_use_id):
        d = 0 if parent is None else call_depth.get(parent, 0) + 1
        out[i] = d
        if kind[i] == "tool_call":
            tid = tool_use_id[i]
            if tid is not None and tid not in call_depth:
                call_depth[tid] = d
    return out


# ---------------------------------------------------------------------------- views of a time array


class _Elapsed(_abc.Sequence[Optional[float]]):
    """Elapsed seconds of each event of a time array (``None`` where the time is NaN: untimed)."""

    __slots__ = ("_t", "_base", "_n")

    def __init__(self, t: Sequence[float], base: float, n: int):
        self._t, self._base, self._n = t, base, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        v = self._t[i]
        return None if v != v else v - self._base


class _Positions(_abc.Sequence[float]):
    """Elapsed carried forward over the untimed tail of a time array whose timed values ascend and
    come first (so it is non-decreasing: :func:`bisect.bisect_right` works on it)."""

    __slots__ = ("_t", "_base", "_n", "_timed", "_last")

    def __init__(self, t: Sequence[float], base: float, n: int, n_timed: int):
        self._t, self._base, self._n, self._timed = t, base, n, n_timed
        self._last = (t[n_timed - 1] - base) if n_timed else 0.0

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        return self._t[i] - self._base if i < self._timed else self._last


class _Flags(_abc.Sequence[bool]):
    """One bool per event from the sorted positions of the ``True`` ones (memory: the positions)."""

    __slots__ = ("_pos", "_set", "_n")

    def __init__(self, positions: Sequence[int], n: int):
        self._pos, self._set, self._n = positions, None, n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            a, b, step = i.indices(self._n)
            if step != 1:
                return [self[j] for j in range(a, b, step)]
            out = [False] * max(0, b - a)
            for k in range(bisect_left(self._pos, a), bisect_left(self._pos, b)):
                out[self._pos[k] - a] = True
            return out
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        k = bisect_left(self._pos, i)
        return k < len(self._pos) and self._pos[k] == i

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _abc.Sequence) and list(self) == list(other)

    def __iter__(self):
        pos, k, m = self._pos, 0, len(self._pos)
        for i in range(self._n):
            if k < m and pos[k] == i:
                k += 1
                yield True
            else:
                yield False


class SparseZero(_abc.Sequence[int]):
    """Depth 0 for each of ``n`` events (until the real depths are set)."""

    __slots__ = ("_n",)

    def __init__(self, n: int):
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [0] * len(range(*i.indices(self._n)))
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return 0


# ---------------------------------------------------------------------------- the cursor


class ReplayCursor:
    """Selection + play head over one run's timeline.

    ``events`` is any object with parallel sequences ``t``, ``kind`` and
    ``round`` (optional: ``summary``, ``event_id``, ``tool_use_id``,
    ``parent_tool_use_id``), e.g. :class:`edgetui.store.queries.EventColumns`, in
    timeline order. ``submissions`` are row mappings with ``round`` and
    ``is_new_best``. ``start`` is the run's start (epoch seconds); ``texts``
    optional per-event search text (e.g. the data JSON) matched with the summary;
    ``metadata_prefix`` the metadata flags of the first events when the caller
    knows them (a timeline that only grew: its kept prefix), so only the rest are
    classified.
    """

    def __init__(
        self,
        events: Any,
        submissions: Iterable[Mapping[str, Any]] = (),
        *,
        start: Optional[float] = None,
        texts: Optional[Sequence[Optional[str]]] = None,
        metadata_prefix: Optional[Sequence[bool]] = None,
    ) -> None:
        self.events = events
        if getattr(events, "ordered_by_time", False):  # an edgetui.store.timeline_columns.ArrowTimeline
            self._init_arrow(events, submissions, start, texts)
            return
        self.kind: Sequence[str] = events.kind
        self.round: Sequence[Optional[str]] = getattr(events, "round", None) or [None] * len(events.kind)
        self.summary: Sequence[Optional[str]] = getattr(events, "summary", None) or [None] * len(events.kind)
        self.texts = texts
        ts: Sequence[Optional[float]] = events.t
        self.n = len(self.kind)
        if start is None:
            start = next((t for t in ts if t is not None), None)
        self.start: Optional[float] = start
        base = start if start is not None else 0.0
        #: elapsed seconds of each event (``None`` if untimed)
        self.elapsed: Sequence[Optional[float]] = [None if t is None else t - base for t in ts]
        #: elapsed carried forward over untimed events (non-decreasing; used for time moves)
        positions: list[float] = []
        last = next((e for e in self.elapsed if e is not None), 0.0)
        for e in self.elapsed:
            if e is not None and e > last:
                last = e
            positions.append(last)
        self._pos: Sequence[float] = positions
        self.end_elapsed: float = self._pos[-1] if self._pos else 0.0

        best_rounds = {s.get("round") for s in submissions if s.get("is_new_best")}
        self.submission_idx: list[int] = [i for i, k in enumerate(self.kind) if k in SUBMISSION_KINDS]
        self.new_best_idx: list[int] = [
            i for i in self.submission_idx if self.round[i] is not None and self.round[i] in best_rounds
        ]
        #: judge-result events of the moments' rounds (:meth:`set_moments`)
        self.moment_idx: list[int] = []
        tu = getattr(events, "tool_use_id", None)
        pu = getattr(events, "parent_tool_use_id", None)
        self.depth: Sequence[int] = (
            subagent_depths(self.kind, tu, pu) if tu is not None and pu is not None else [0] * self.n
        )

        #: one flag per event: transcript metadata, folded while :attr:`folding` is on
        prefix = list(metadata_prefix or ())[: self.n]  # (the flags of the first events, known already)
        flags = prefix + metadata_mask(events, start=len(prefix))
        self._set_metadata([i for i, m in enumerate(flags) if m])
        self.folding: bool = False
        self._folds: Optional[tuple] = None  # the fold runs while folding (see set_folding)

        self.index: int = 0
        self.play_head: float = self._pos[0] if self._pos else 0.0
        self.playing: bool = False
        self.speed: int = SPEEDS[0]
        self.query: str = ""
        self.matches: Sequence[int] = []
        #: ``(lo, hi)`` while :attr:`matches` are a first page (every match in events lo..hi; more may be
        #: elsewhere: :meth:`match_needs_more`); ``None`` when they are every match
        self.match_cover: Optional[tuple[int, int]] = None

    def _init_arrow(
        self,
        events: Any,
        submissions: Iterable[Mapping[str, Any]],
        start: Optional[float],
        texts: Optional[Sequence[Optional[str]]],
    ) -> None:
        """The same state over a timeline ordered by time (timed events ascending, untimed last) whose
        columns are read one item at a time: elapsed and positions are views of its ``t_array``,
        graded rounds and sub-agent depths come from its Arrow kernels; nothing is a per-event list."""
        self.kind = events.kind
        self.round = events.round
        self.summary = events.summary
        self.texts = texts
        self.n = events.n
        ts = events.t_array
        n_timed = events.n_timed
        if start is None:
            start = ts[0] if n_timed else None
        self.start = start
        base = start if start is not None else 0.0
        self.elapsed = _Elapsed(ts, base, self.n)
        self._pos = _Positions(ts, base, self.n, n_timed)
        self.end_elapsed = self._pos[self.n - 1] if self.n else 0.0
        best_rounds = {s.get("round") for s in submissions if s.get("is_new_best")}
        self.submission_idx = events.positions(SUBMISSION_KINDS)
        rounds = events.values_at("round", self.submission_idx) if best_rounds else []
        self.new_best_idx = [i for i, r in zip(self.submission_idx, rounds) if r is not None and r in best_rounds]
        self.depth = SparseZero(self.n) if getattr(events, "defer_depths", False) else events.depths()
        self._set_metadata(events.metadata_positions())
        self.folding = False
        self._folds = None
        self.index = 0
        self.play_head = self._pos[0] if self.n else 0.0
        self.playing = False
        self.speed = SPEEDS[0]
        self.query = ""
        self.matches = []
        self.match_cover = None

    def _set_metadata(self, positions: Sequence[int]) -> None:
        #: positions (ascending) of the transcript metadata events, folded while :attr:`folding` is on
        self.metadata_positions: Sequence[int] = positions
        #: one flag per event (a view of the positions): transcript metadata
        self.metadata: Sequence[bool] = _Flags(positions, self.n)
        #: number of metadata events (what folding hides)
        self.n_metadata: int = len(positions)

    # ------------------------------------------------------------------ state

    def __len__(self) -> int:
        return self.n

    def position(self, index: Optional[int] = None) -> float:
        """Elapsed seconds of event ``index`` (default: the selected one), carried forward if untimed."""
        i = self.index if index is None else index
        return self._pos[i] if self.n else 0.0

    @property
    def selected_elapsed(self) -> Optional[float]:
        """Elapsed seconds of the selected event itself (``None`` if it has no time)."""
        return self.elapsed[self.index] if self.n else None

    @property
    def at_end(self) -> bool:
        """The play head has reached the last timed event (or the last event is selected)."""
        return self.n == 0 or self.index == self.n - 1 or self.play_head >= self.end_elapsed

    def select(self, index: int) -> bool:
        """Select event ``index`` (clamped); the play head moves to its position."""
        if self.n == 0:
            return False
        index = max(0, min(self.n - 1, index))
        changed = index != self.index
        self.index = index
        self.play_head = self._pos[index]
        return changed

    # ------------------------------------------------------------------ rows (folds)

    def set_folding(self, on: bool) -> None:
        """Fold (``True``) or show (``False``) the metadata events; the selected event stays.

        The rows are kept as the *fold runs* (each consecutive run of metadata events: its first
        event, its length, the events hidden before it and its row), so rows cost memory per fold,
        not per event, and row ↔ event is a bisection."""
        self.folding = bool(on)
        if not self.folding or not self.n_metadata:
            self._folds = None
            return
        starts: list[int] = []
        lens: list[int] = []
        prev = -2
        for i in self.metadata_positions:
            if i == prev + 1:
                lens[-1] += 1
            else:
                starts.append(i)
                lens.append(1)
            prev = i
        hidden: list[int] = []  # events hidden by the folds before each fold
        rows: list[int] = []  # row of each fold
        h = 0
        for st, ln in zip(starts, lens):
            hidden.append(h)
            rows.append(st - h)
            h += ln - 1
        self._folds = (starts, lens, hidden, rows, h)

    @property
    def n_rows(self) -> int:
        """Rows of the list: events, with each run of folded metadata events counted once."""
        return self.n if self._folds is None else self.n - self._folds[4]

    def row_of(self, index: Optional[int] = None) -> int:
        """Row of event ``index`` (default: the selected one): a folded event is in its fold's row."""
        i = self.index if index is None else index
        if self._folds is None:
            return i
        starts, lens, hidden, rows, _ = self._folds
        k = bisect_right(starts, i) - 1
        if k < 0:
            return max(0, i)
        if i < starts[k] + lens[k]:
            return rows[k]
        return i - hidden[k] - (lens[k] - 1)

    def row_event(self, row: int) -> int:
        """Event index of row ``row`` (a fold's anchor: its first event)."""
        if self._folds is None:
            return row
        starts, lens, hidden, rows, _ = self._folds
        k = bisect_right(rows, row) - 1
        if k < 0:
            return row
        if row == rows[k]:
            return starts[k]
        return row + hidden[k] + lens[k] - 1

    def row_folded(self, row: int) -> int:
        """Events folded into row ``row`` (0 for a plain event row)."""
        if self._folds is None:
            return 0
        starts, lens, _, rows, _ = self._folds
        k = bisect_left(rows, row)
        return lens[k] if k < len(rows) and rows[k] == row else 0

    @property
    def n_folded(self) -> int:
        """Events hidden in folds now (0 while not folding)."""
        return self.n_metadata if self._folds is not None else 0

    def select_row(self, row: int) -> bool:
        """Select row ``row`` (clamped): its event, or a fold's anchor."""
        if self.n == 0:
            return False
        return self.select(self.row_event(max(0, min(self.n_rows - 1, row))))

    # ------------------------------------------------------------------ steps

    def step(self, n: int = 1) -> bool:
        """Move ``n`` rows (events when not folding; ±, clamped)."""
        if self._folds is None:
            return self.select(self.index + n)
        return self.select_row(self.row_of() + n)

    def first(self) -> bool:
        return self.select(0)

    def last(self) -> bool:
        return self.select(self.n - 1)

    @staticmethod
    def _next_in(marks: Sequence[int], index: int) -> Optional[int]:
        k = bisect_right(marks, index)
        return marks[k] if k < len(marks) else None

    @staticmethod
    def _prev_in(marks: Sequence[int], index: int) -> Optional[int]:
        k = bisect_left(marks, index)
        return marks[k - 1] if k > 0 else None

    def next_submission(self) -> bool:
        i = self._next_in(self.submission_idx, self.index)
        return self.select(i) if i is not None else False

    def prev_submission(self) -> bool:
        i = self._prev_in(self.submission_idx, self.index)
        return self.select(i) if i is not None else False

    def set_moments(self, rounds: Iterable[str]) -> int:
        """Mark the moments (:mod:`edgetui.replay.moments`) by the rounds of their new bests: their
        ``judge_result`` events become the stops of :meth:`next_moment` / :meth:`prev_moment`.
        Returns how many of the rounds have such an event in the timeline."""
        want = set(rounds)
        self.moment_idx = [i for i in self.submission_idx if self.round[i] is not None and self.round[i] in want]
        return len(self.moment_idx)

    def next_moment(self) -> bool:
        i = self._next_in(self.moment_idx, self.index)
        return self.select(i) if i is not None else False

    def prev_moment(self) -> bool:
        i = self._prev_in(self.moment_idx, self.index)
        return self.select(i) if i is not None else False

    def next_new_best(self) -> bool:
        i = self._next_in(self.new_best_idx, self.index)
        return self.select(i) if i is not None else False

    def prev_new_best(self) -> bool:
        i = self._prev_in(self.new_best_idx, self.index)
        return self.select(i) if i is not None else False

    # ------------------------------------------------------------------ time

    def _last_at(self, elapsed: float) -> int:
        """Index of the last event at or before ``elapsed`` (0 if none is)."""
        return max(0, bisect_right(self._pos, elapsed) - 1)

    def jump_to(self, elapsed: float) -> bool:
        """Select the last event at or before ``elapsed`` seconds; the play head goes to ``elapsed``."""
        if self.n == 0:
            return False
        i = self._last_at(elapsed)
        changed = i != self.index
        self.index = i
        self.play_head = elapsed
        return changed

    def play(self) -> None:
        self.playing = True
        if self.index >= self.n - 1 or self.play_head >= self.end_elapsed:
            self.select(0)  # replay from the start when at the end

    def pause(self) -> None:
        self.playing = False

    def toggle_play(self) -> bool:
        """Start or stop playing; returns the new ``playing``."""
        self.pause() if self.playing else self.play()
        return self.playing

    def cycle_speed(self, direction: int = 1, *, wrap: bool = True) -> int:
        """Next (``+1``) or previous (``-1``) speed of :data:`SPEEDS`; wraps around unless ``wrap`` is
        false (then it stops at the slowest / fastest); returns it."""
        k = SPEEDS.index(self.speed) if self.speed in SPEEDS else 0
        k = (k + direction) % len(SPEEDS) if wrap else max(0, min(len(SPEEDS) - 1, k + direction))
        self.speed = SPEEDS[k]
        return self.speed

    def set_speed(self, speed: int) -> None:
        self.speed = speed

    def advance(self, dt_seconds: float, speed: Optional[float] = None) -> bool:
        """Move the play head by ``dt_seconds × speed`` of run time and select the last event at or before it.

        ``speed`` defaults to :attr:`speed`. Stops playing when the head reaches
        the last timed event. Returns ``True`` if the selection changed.
        """
        if self.n == 0:
            self.playing = False
            return False
        sp = self.speed if speed is None else speed
        self.play_head += dt_seconds * sp
        i = self._last_at(self.play_head)
        # never jump back over events the user stepped onto (untimed tail, equal times)
        if i < self.index and self._pos[self.index] <= self.play_head:
            i = self.index
        changed = i != self.index
        self.index = i
        if self.play_head >= self.end_elapsed:
            self.playing = False
        return changed

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        matches: Optional[Iterable[int]] = None,
        *,
        presorted: bool = False,
        cover: Optional[tuple[int, int]] = None,
        select: bool = True,
    ) -> int:
        """Set the search and select the first match at or after the selection (wrapping).

        ``matches`` (event indices) comes from the database when given (see
        :func:`edgetui.store.queries.search_events`); otherwise the summary and
        :attr:`texts` are matched here, case-insensitively. Returns the number
        of matches. ``presorted``: ``matches`` is already ascending without repeats (any sequence,
        e.g. the array :meth:`edgetui.store.timeline_pages.PagedTimeline.find` returns: kept as it is).
        ``cover``: ``matches`` are only those of events ``lo..hi`` (a first page of them,
        :meth:`edgetui.store.timeline_pages.PagedTimeline.find_from`): the first of them at or after the selection
        is selected, never a wrap (there may be matches outside), and :attr:`match_cover` says so
        until the search is set again with every match. ``select=False`` leaves the selection where
        it is (every match after a first page of them: the page's match stays selected).
        """
        self.query = query or ""
        self.match_cover = cover if matches is not None else None
        if matches is not None:
            # presorted: the caller's sequence (an array, a list) is kept as it is, as documented
            self.matches = cast(Sequence[int], matches) if presorted else sorted(set(matches))
        else:
            q = self.query.lower()
            if not q:
                self.matches = []
            else:
                texts = self.texts
                out = []
                for i in range(self.n):
                    s = self.summary[i]
                    if s and q in s.lower():
                        out.append(i)
                    elif texts is not None and (text := texts[i]) and q in text.lower():
                        out.append(i)
                self.matches = out
        if select and len(self.matches):
            k = bisect_left(self.matches, self.index)
            if self.match_cover is None or k < len(self.matches):
                self.select(int(self.matches[k % len(self.matches)]))
        return len(self.matches)

    def match_needs_more(self, direction: int) -> bool:
        """Would the next (``direction`` > 0) or previous match lie outside :attr:`match_cover`
        (so :meth:`next_match` / :meth:`prev_match` must wait for every match)? ``False`` when the
        matches are complete."""
        if self.match_cover is None:
            return False
        lo, hi = self.match_cover
        if direction > 0:  # (a wrap to the first match needs the matches before lo, too)
            return self.index < lo or bisect_right(self.matches, self.index) >= len(self.matches)
        return self.index > hi or bisect_left(self.matches, self.index) == 0

    def next_match(self) -> bool:
        if not len(self.matches):
            return False
        k = bisect_right(self.matches, self.index)
        return self.select(int(self.matches[k % len(self.matches)]))

    def prev_match(self) -> bool:
        if not len(self.matches):
            return False
        k = bisect_left(self.matches, self.index)
        return self.select(int(self.matches[(k - 1) % len(self.matches)]))

    @property
    def match_number(self) -> Optional[int]:
        """1-based number of the selected event among the matches (``None`` if it is not one, or while
        the matches are a first page that does not start at the run's first event)."""
        if self.match_cover is not None and self.match_cover[0] > 0:
            return None
        k = bisect_left(self.matches, self.index)
        if k < len(self.matches) and self.matches[k] == self.index:
            return k + 1
        return None
