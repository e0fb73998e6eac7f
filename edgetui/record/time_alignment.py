"""Time alignment of a finished run (docs/sforge-run-folders.md §9), run after every ingest.

Claude stream-json and Codex text transcripts carry no wall-clock times. Their
events get ``t`` by interpolation between **anchors**:

* segment starts: the k-th ``session_init`` of the transcript ↔ the k-th
  "Running agent" / "Resuming agent" line of ``run_agent.log`` (host time,
  converted to UTC), or ``started_at`` for the first segment;
* segment ends: the last transcript line before the (k+1)-th init ↔ the k-th
  "Agent exited" line; the last line ↔ "Agent finished" / run end;
* submissions: the ``sforge-submit`` tool call of round ``agent-N`` ↔ that
  round's ``report.json`` ``submitted_at`` minus :data:`UPLOAD_LEAD_S`; its tool
  result ↔ ``evolve_state.json`` ``at`` (else grading end + polling delay);
* events whose format recorded a timestamp are anchors themselves.

Between anchors, ``t`` is linear in the line index (position in the file);
anchors that would make time run backwards are dropped (the largest consistent
set is kept). Recorded and observed times are never overwritten. The result is
deterministic, so re-running it after an interrupted ingest gives the same rows.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass
from typing import Optional, Sequence

import duckdb
import pyarrow as pa

from edgetui.store.sql_in_list import in_list

UPLOAD_LEAD_S = 2.0  # tar + upload before the judge stamps submitted_at
RESULT_POLL_S = 5.0  # sforge-submit polls /result every 10 s: mean wait 5 s


@dataclass
class AlignStats:
    events: int = 0
    anchors: int = 0
    dropped_anchors: int = 0
    interpolated: int = 0


def _monotone(anchors: list[tuple[int, float]]) -> tuple[list[tuple[int, float]], int]:
    """Keep the largest set of anchors whose times never decrease with position
    (longest non-decreasing subsequence, O(n log n)), so one wrong anchor costs
    one anchor, not every later one. Ties in position keep the first."""
    pts: list[tuple[int, float]] = []
    for p, t in sorted(anchors):
        if pts and pts[-1][0] == p:
            continue
        pts.append((p, t))
    tails: list[float] = []  # smallest tail time of a subsequence of each length
    tail_idx: list[int] = []
    prev = [-1] * len(pts)
    for i, (_, t) in enumerate(pts):
        k = bisect.bisect_right(tails, t)
        if k == len(tails):
            tails.append(t)
            tail_idx.append(i)
        else:
            tails[k] = t
            tail_idx[k] = i
        prev[i] = tail_idx[k - 1] if k else -1
    kept: list[tuple[int, float]] = []
    i = tail_idx[-1] if tail_idx else -1
    while i >= 0:
        kept.append(pts[i])
        i = prev[i]
    kept.reverse()
    return kept, len(anchors) - len(kept)


@dataclass
class AlignJob:
    """One run to align (:func:`align_runs`): the arguments of :func:`align_run`."""

    run_key: str
    transcript_source: Optional[str]
    started_at: Optional[float] = None
    ended_at: Optional[float] = None
    fallback_end: Optional[float] = None
    live_end: Optional[float] = None
    submissions: dict | None = None


def align_run(
    conn: duckdb.DuckDBPyConnection,
    run_key: str,
    transcript_source: Optional[str],
    *,
    started_at: Optional[float] = None,
    ended_at: Optional[float] = None,
    fallback_end: Optional[float] = None,
    live_end: Optional[float] = None,
    submissions: dict | None = None,
) -> AlignStats:
    """Assign interpolated ``t`` to the run's events that have none (or an interpolated one).

    ``transcript_source`` is the events.source of the agent transcript (None when
    the run has none). ``fallback_end`` (epoch UTC, e.g. the transcript's mtime)
    anchors a bare transcript without any other time; such a transcript then
    spans one second per line ending there. ``live_end`` (epoch UTC, the
    transcript's last write, for a run still going on) anchors its last line when
    no run end is known: lines that were already there when the supervisor first
    saw the file spread up to it instead of piling up at the segment start.
    ``submissions``: the run's submission rows as ``{round: (submitted_at, seen_at, graded_at,
    runtime_s)}`` when the caller has them (the offline ingest: a new run's rows are inserted at
    its transaction's commit), else they are read from the ``submissions`` table.
    """
    return align_runs(
        conn, [AlignJob(run_key, transcript_source, started_at, ended_at, fallback_end, live_end, submissions)]
    )[run_key]


def align_runs(conn: duckdb.DuckDBPyConnection, jobs: list[AlignJob]) -> dict[str, AlignStats]:
    """:func:`align_run` of several runs (distinct run keys) with a fixed number of statements
    whatever their number (each statement costs ~5-10 ms on a loaded machine, a run needed ~8):
    every read groups by ``run_key`` over ``run_key IN (...)``, the times are written by one
    UPDATE per kind. The same rows as aligning the runs one by one. Returns each run's
    :class:`AlignStats` by run key (``interpolated``: the events whose time changed, summed
    over the batch's runs when it holds several transcripts: the UPDATE counts them at once)."""
    stats = {j.run_key: AlignStats() for j in jobs}
    if not jobs:
        return stats
    by_src: dict[str, list[AlignJob]] = {}
    for j in jobs:
        if j.transcript_source:
            by_src.setdefault(j.transcript_source, []).append(j)
    for src, group in by_src.items():  # (one source name in practice: agent_output.txt)
        _align_transcripts(conn, src, group, stats)
    _fill_other_sources(conn, jobs, stats)
    return stats


_RECORDED = "e.t_source IN ('recorded', 'observed') AND e.t IS NOT NULL"


def _runs_slices(tbl: pa.Table) -> dict[str, pa.Table]:
    """The rows of each run of ``tbl`` (ordered by its ``run_key`` column), by run key."""
    out: dict[str, pa.Table] = {}
    start = 0
    for k, grp in itertools.groupby(tbl.column("run_key").to_pylist()):
        n = sum(1 for _ in grp)
        out[k] = tbl.slice(start, n)
        start += n
    return out


def _align_transcripts(conn, source: str, jobs: list[AlignJob], stats: dict[str, AlignStats]) -> None:
    """Anchors in Python (few, plus one per line with a recorded time), line positions and the
    interpolation in DuckDB: memory stays bounded whatever the transcript's size."""
    # one row per line: position = line index (rank of the line's byte offset within its run), the
    # line's first recorded time (its anchor, if any) and whether it holds a session_init; computed
    # once into an Arrow table that the queries below join (~30 bytes a line; registered, not a temp
    # table: no catalog change per run, and a live supervisor re-aligns a run after every graded
    # submission). One scan instead of four (count, positions, anchors, inits: each ~2-5 ms)
    keys = [j.run_key for j in jobs]
    lines = conn.sql(
        'SELECT run_key, "offset", (row_number() OVER (PARTITION BY run_key ORDER BY "offset") - 1)::BIGINT AS pos, '
        f"count(*) AS n, arg_min(e.t, e.sub) FILTER ({_RECORDED}) AS anchor_t, "
        "bool_or(e.kind = 'session_init') AS init "
        f'FROM events e WHERE {in_list("run_key", keys)} AND source = ? GROUP BY run_key, "offset" '
        'ORDER BY run_key, "offset"',
        params=[*keys, source],
    ).to_arrow_table()
    per_run = _runs_slices(lines)
    jobs = [j for j in jobs if j.run_key in per_run]
    if not jobs:
        return
    conn.register("_edgetui_pos", lines)
    try:
        _align_lines(conn, source, jobs, per_run, stats)
    finally:
        conn.unregister("_edgetui_pos")


def _align_lines(
    conn, source: str, jobs: list[AlignJob], per_run: dict[str, pa.Table], stats: dict[str, AlignStats]
) -> None:
    """``per_run``: each run's rows of the registered ``_edgetui_pos`` table (run_key, offset, pos,
    n, anchor_t, init), ordered by pos."""
    # lazy: pyarrow.compute's kernels load on first use, not for every command
    import pyarrow.compute as pc

    keys = [j.run_key for j in jobs]
    join = 'JOIN _edgetui_pos p ON p.run_key = e.run_key AND p."offset" = e."offset"'
    # segment starts / ends from run_agent.log
    logs: dict[str, list] = {k: [] for k in keys}
    for rk, k, t, _ in conn.execute(
        "SELECT run_key, kind, t, data->>'$.event' FROM events WHERE "
        + in_list("run_key", keys)
        + " AND source = 'run_agent.log' AND kind IN ('segment_start', 'segment_end', 'run_end') "
        "AND t IS NOT NULL ORDER BY run_key, t",
        keys,
    ).fetchall():
        logs[rk].append((k, t))
    # submissions: the sforge-submit call and its result
    known_subs = {j.run_key: j.submissions for j in jobs}
    unread = [k for k, s in known_subs.items() if s is None]
    subs_of: dict[str, dict] = {k: s for k, s in known_subs.items() if s is not None}
    if unread:
        for k in unread:
            subs_of[k] = {}
        for r in conn.execute(
            "SELECT run_key, round, submitted_at, seen_at, graded_at, runtime_s FROM submissions "
            f"WHERE {in_list('run_key', unread)}",
            unread,
        ).fetchall():
            subs_of[r[0]][r[1]] = r[2:]
    with_subs = [k for k in keys if subs_of[k]]
    call_pos: dict[str, dict] = {k: {} for k in keys}
    results: dict[str, list] = {k: [] for k in keys}
    if with_subs:
        w = f"{in_list('e.run_key', with_subs)} AND e.source = ?"
        for rk, tid, pos in conn.execute(
            f"SELECT e.run_key, e.tool_use_id, min(p.pos) FROM events e {join} WHERE {w} AND e.kind = 'tool_call' "
            "AND e.tool_use_id IS NOT NULL AND contains(e.data, '\"sforge_submit\"') "  # (a prefilter: no JSON parse)
            "AND e.data->>'$.sforge_submit' IN ('true', 'True', '1') "
            "GROUP BY e.run_key, e.tool_use_id",
            [*with_subs, source],
        ).fetchall():
            call_pos[rk][tid] = pos
        with_calls = [k for k in with_subs if call_pos[k]]
        if with_calls:
            w = f"{in_list('e.run_key', with_calls)} AND e.source = ?"
            for rk, *r in conn.execute(  # (a line with a recorded time is an anchor already)
                f"SELECT e.run_key, e.tool_use_id, e.round, p.pos, p.anchor_t IS NOT NULL "
                f"FROM events e {join} WHERE {w} AND e.kind = 'tool_result' AND e.round IS NOT NULL "
                'ORDER BY e.run_key, e."offset", e.sub',
                [*with_calls, source],
            ).fetchall():
                results[rk].append(r)
    line_t: list[pa.Table] = []
    for j in jobs:
        lines = per_run[j.run_key]
        st = stats[j.run_key]
        st.events = int(pc.sum(lines.column("n")).as_py())
        kept = _kept_anchors(j, lines, logs[j.run_key], subs_of[j.run_key], call_pos[j.run_key], results[j.run_key], st)
        if kept:
            # piecewise-linear in the line position between kept anchors, flat outside them: one
            # time per line (8 bytes a line), written to the line's events without a recorded time
            line_t.append(
                pa.table(
                    {
                        "run_key": lines.column("run_key"),
                        "offset": lines.column("offset"),
                        "t_new": line_times(lines.num_rows, kept),
                    }
                )
            )
    if line_t:
        n = _interpolate_lines(conn, source, [t for t in line_t], [k for k in keys])
        if len(line_t) == 1:
            stats[line_t[0].column("run_key")[0].as_py()].interpolated += n
        else:  # (counted together: the batch's first run holds the sum)
            stats[keys[0]].interpolated += n


def _kept_anchors(
    j: AlignJob, lines: pa.Table, log: list, subs: dict, call_pos: dict, results: list, st: AlignStats
) -> list[tuple[int, float]]:
    """One run's anchors (module docstring), kept monotone: ``lines`` its ``_edgetui_pos`` rows,
    ``log`` its run_agent.log (kind, t) ordered by t, ``subs`` its submissions, ``call_pos`` the
    line of each sforge-submit call by tool_use_id, ``results`` its tool results (tool_use_id,
    round, pos, recorded) in file order."""
    # lazy: pyarrow.compute's kernels load on first use, not for every command
    import pyarrow.compute as pc

    last_pos = lines.num_rows - 1
    # recorded times inside the transcript (one anchor per line: its first recorded event)
    has_t = lines.filter(pc.is_valid(lines.column("anchor_t")))
    anchors: list[tuple[int, float]] = list(zip(has_t.column("pos").to_pylist(), has_t.column("anchor_t").to_pylist()))
    seg_starts = [t for k, t in log if k == "segment_start"]
    seg_ends = [t for k, t in log if k == "segment_end"]
    if not seg_starts and j.started_at is not None:
        seg_starts = [j.started_at]
    init_pos = lines.filter(pc.fill_null(lines.column("init"), False)).column("pos").to_pylist()
    # Formats that stamp only some records (Claude Code stamps user events) still need the
    # harness anchors for the rest, so all anchors are used together; monotone filtering
    # resolves conflicts (earliest position wins).
    for k, p in enumerate(init_pos):
        if k < len(seg_starts):
            anchors.append((p, seg_starts[k]))
    # segment k ends on the line before init k+1
    for k, t_end in enumerate(seg_ends):
        if k + 1 < len(init_pos):
            anchors.append((init_pos[k + 1] - 1, t_end))
    if not init_pos and seg_starts:
        anchors.append((0, seg_starts[0]))
    for tid, rnd, pos, recorded in results:
        if rnd not in subs or tid not in call_pos:
            continue
        submitted_at, seen_at, graded_at, runtime_s = subs[rnd]
        if submitted_at is not None:
            anchors.append((call_pos[tid], submitted_at - UPLOAD_LEAD_S))
        res_t = seen_at
        if res_t is None and submitted_at is not None and runtime_s is not None:
            res_t = submitted_at + runtime_s + RESULT_POLL_S
        if (
            res_t is None
            and graded_at is not None
            and submitted_at is not None
            and submitted_at <= graded_at <= submitted_at + 3 * 3600
        ):  # a plausible report mtime
            res_t = graded_at + RESULT_POLL_S
        if res_t is not None and not recorded:
            anchors.append((pos, res_t))
    end = j.ended_at
    if end is None and seg_ends and len(seg_ends) >= len(init_pos) > 0:
        end = seg_ends[-1]
    if end is None:
        end = j.live_end
    if end is not None:
        anchors.append((last_pos, end))
    if not anchors and j.fallback_end is not None:
        anchors = [(0, j.fallback_end - last_pos), (last_pos, j.fallback_end)]
    kept, dropped = _monotone(anchors)
    st.anchors, st.dropped_anchors = len(kept), dropped
    return kept


def line_times(n_lines: int, kept: list[tuple[int, float]]) -> pa.Array:
    """Time (float64, epoch UTC) of each line position 0 … ``n_lines - 1`` between the ``kept``
    anchors (``(pos, t)``, pos strictly increasing): between two anchors around a line
    ``t0 + (t1 - t0) * (pos - p0) / (p1 - p0)`` (p0 the greatest anchor position <= pos, p1 the
    next one: the same float operations in the same order as the SQL it replaced, so the same
    bits), an anchor's own time on its line, the first anchor's time before it and the last one's
    after it. Vectorised (numpy, which the ingest's scrubbing imports already): a Claude
    transcript stamps most of its lines, so a loop per anchor cost ~2 µs a line."""
    # lazy: numpy loads with the first computation that needs it, not with the module
    import numpy as np

    kp = np.fromiter((p for p, _ in kept), dtype=np.int64, count=len(kept))
    kt = np.fromiter((t for _, t in kept), dtype=np.float64, count=len(kept))
    pos = np.arange(n_lines, dtype=np.int64)
    idx = np.searchsorted(kp, pos, side="right") - 1  # the greatest anchor at or before each line
    out = np.empty(n_lines, dtype=np.float64)
    out[idx < 0] = kt[0]
    last = idx >= len(kp) - 1
    out[last] = kt[-1]
    mid = ~(last | (idx < 0))
    i = idx[mid]
    p0, t0 = kp[i], kt[i]
    out[mid] = t0 + (kt[i + 1] - t0) * (pos[mid] - p0) / (kp[i + 1] - p0)
    return pa.array(out, pa.float64())


def _interpolate_lines(conn, source: str, tables: list[pa.Table], keys: list[str]) -> int:
    """Write :func:`line_times` (``tables``: each run's ``run_key``, ``offset``, ``t_new``) to the
    events of ``source`` without a recorded or observed time; returns the number of events whose
    time changed (a re-alignment rewrites only those). One UPDATE joining the runs' rows of that
    source by run and offset (it replaced one with two ASOF joins)."""
    tbl = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    conn.register("_edgetui_line_t", tbl)
    try:
        n = conn.execute(
            f"""UPDATE events SET t = l.t_new, t_source = 'interpolated' FROM _edgetui_line_t l
               WHERE {in_list("events.run_key", keys)} AND events.source = ? AND events.run_key = l.run_key
                 AND events."offset" = l."offset"
                 AND (events.t_source IS NULL OR events.t_source NOT IN ('recorded', 'observed'))
                 AND (events.t IS DISTINCT FROM l.t_new OR events.t_source IS DISTINCT FROM 'interpolated')""",
            [*keys, source],
        ).fetchall()
    finally:
        conn.unregister("_edgetui_line_t")
    return int(n[0][0]) if n and n[0] and n[0][0] is not None else 0


def _fill_other_sources(conn, jobs: list[AlignJob], stats: dict[str, AlignStats]) -> None:
    """Events of other files without any time take the time of the previous timed event of that
    file (or the run start): e.g. game steps. Times a parser placed are kept. (The previous timed
    event: a window over each run's file in ``offset, sub`` order; only the untimed rows come back.)"""
    keys = [j.run_key for j in jobs]
    job_of = {j.run_key: j for j in jobs}
    # each run's transcript is left out of the scan (its own partitions: the others' windows are the
    # same), grouped by its source name (one in practice)
    skip, args = "", list(keys)
    by_src: dict[str, list[str]] = {}
    for j in jobs:
        if j.transcript_source is not None:
            by_src.setdefault(j.transcript_source, []).append(j.run_key)
    for src, ks in by_src.items():
        skip += f" AND NOT (source = ? AND {in_list('run_key', ks)})"
        args += [src, *ks]
    rows = conn.execute(
        "SELECT event_id, run_key, source, prev_t FROM (SELECT event_id, run_key, source, t, "
        'last_value(t IGNORE NULLS) OVER (PARTITION BY run_key, source ORDER BY "offset", sub '
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_t "
        f"FROM events WHERE {in_list('run_key', keys)}{skip}) WHERE t IS NULL",
        args,
    ).fetchall()
    ids, ts = [], []
    for eid, rk, src, prev_t in rows:
        j = job_of[rk]
        if src == j.transcript_source:  # (None: a run without a transcript leaves NULL sources alone)
            continue
        val = prev_t if prev_t is not None else j.started_at
        if val is not None:
            ids.append(eid)
            ts.append(val)
            stats[rk].interpolated += 1
    if ids:
        write_times(conn, ids, ts, keys)


def write_times(conn, ids: list[str], ts: Sequence[Optional[float]], run_keys: list[str] | None = None) -> None:
    """``t`` of the events ``ids`` (of ``run_keys`` when given: the UPDATE's scan then skips the other
    runs' rows instead of joining them), ``t_source`` 'interpolated'."""
    tbl = pa.table({"event_id": pa.array(ids, pa.string()), "t": pa.array(ts, pa.float64())})
    conn.register("_edgetui_align", tbl)
    try:
        conn.execute(
            "UPDATE events SET t = a.t, t_source = 'interpolated' FROM _edgetui_align a "
            "WHERE events.event_id = a.event_id AND a.t IS NOT NULL"
            + (f" AND {in_list('events.run_key', run_keys)}" if run_keys else ""),
            run_keys or [],
        )
    finally:
        conn.unregister("_edgetui_align")
