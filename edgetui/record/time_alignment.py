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

#: tar + upload of the workspace before the judge stamps ``submitted_at`` (the call line came 0.1-0.5 s
#: before it in genuine runs with small archives; a large archive over a slow link takes longer)
UPLOAD_LEAD_S = 0.5
RESULT_POLL_S = 5.0  # sforge-submit polls /result every 10 s: mean wait 5 s
#: evolve_state.json's ``at`` is ``date +%s`` (whole seconds: +0.5 on average) taken before
#: sforge-submit updates its state file with jq and prints; the result line comes when it exits
#: (1.1-2.8 s after ``at`` in genuine runs, 2.0 s on average)
SEEN_AT_LAG_S = 1.5


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
    written: Optional[float] = None  # the transcript's last write (its mtime), when the caller knows it


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
        "bool_or(e.kind = 'session_init') AS init, "
        # what the line says about the time before it (line_weights): a model message's id, a tool
        # call's or result's tool_use_id and tool, a result record's own duration
        "min(e.message_id) FILTER (e.kind IN ('agent_message', 'thinking', 'tool_call')) AS msg, "
        "bool_or(e.kind = 'agent_result') AS result, "
        "bool_or(e.kind IN ('agent_message', 'thinking', 'tool_call')) AS said, "
        "min(e.tool_use_id) FILTER (e.kind = 'tool_result') AS res_of, "
        "min(e.tool_use_id || chr(31) || e.tool_name) FILTER (e.kind = 'tool_call') AS call_of, "
        "max(CASE WHEN e.kind = 'agent_result' THEN TRY_CAST(e.data->>'$.duration_ms' AS DOUBLE) END) AS dur_ms "
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
    # the transcript's own last write, where its ingest read it to the end (source_cursors)
    written: dict[str, float] = {}
    for rk, off, size, mt in conn.execute(
        f'SELECT run_key, "offset", size, mtime FROM source_cursors WHERE {in_list("run_key", keys)} AND source = ?',
        [*keys, source],
    ).fetchall():
        lines = per_run.get(rk)
        last = lines.column("offset")[-1].as_py() if lines is not None and lines.num_rows else None
        if off is not None and mt is not None and off == size and last is not None and off > last:
            written[rk] = mt  # (read to its end, last line included, when that mtime was taken)
    line_t: list[pa.Table] = []
    for j in jobs:
        lines = per_run[j.run_key]
        st = stats[j.run_key]
        st.events = int(pc.sum(lines.column("n")).as_py())
        kept = _kept_anchors(
            j,
            lines,
            logs[j.run_key],
            subs_of[j.run_key],
            call_pos[j.run_key],
            results[j.run_key],
            st,
            j.written if j.written is not None else written.get(j.run_key),
        )
        if kept:
            # piecewise-linear between kept anchors in the time the lines say passed (line_weights),
            # flat outside them: one time per line, written to the line's events without a recorded
            # time, with the bracketing anchors' times when it lies in a gap (line_placement)
            t_new, lo, hi, pinned = line_placement(line_weights(lines), kept)
            line_t.append(
                pa.table(
                    {
                        "run_key": lines.column("run_key"),
                        "offset": lines.column("offset"),
                        "t_new": t_new,
                        "t_lo": lo,
                        "t_hi": hi,
                        "src": pc.if_else(pinned, "anchored", "interpolated"),
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
    j: AlignJob,
    lines: pa.Table,
    log: list,
    subs: dict,
    call_pos: dict,
    results: list,
    st: AlignStats,
    written: Optional[float] = None,
) -> list[tuple[int, float]]:
    """One run's anchors (module docstring), kept monotone: ``lines`` its ``_edgetui_pos`` rows,
    ``log`` its run_agent.log (kind, t) ordered by t, ``subs`` its submissions, ``call_pos`` the
    line of each sforge-submit call by tool_use_id, ``results`` its tool results (tool_use_id,
    round, pos, recorded) in file order, ``written`` the transcript's last write (its mtime when
    its ingest read it to the end)."""
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
    # a Claude ``result`` record says how long its process ran (``duration_ms``, from its start)
    if "dur_ms" in lines.column_names and init_pos:
        with_dur = lines.filter(pc.is_valid(lines.column("dur_ms")))
        for p, d in zip(with_dur.column("pos").to_pylist(), with_dur.column("dur_ms").to_pylist()):
            k = bisect.bisect_right(init_pos, p) - 1
            if 0 <= k < len(seg_starts) and 0 <= d < 30 * 86400 * 1000:
                anchors.append((p, seg_starts[k] + d / 1000.0))
    for tid, rnd, pos, recorded in results:
        if rnd not in subs or tid not in call_pos:
            continue
        submitted_at, seen_at, graded_at, runtime_s = subs[rnd]
        if submitted_at is not None:
            anchors.append((call_pos[tid], submitted_at - UPLOAD_LEAD_S))
        res_t = seen_at + SEEN_AT_LAG_S if seen_at is not None else None
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
    # the last line: the transcript's last write when it is plausible (not before its segment started,
    # not after the agent finished), else the agent's end ("Agent finished", never the run's end,
    # which comes after the harness stopped and removed its container), else the run's end
    finished = seg_ends[-1] if seg_ends and len(seg_ends) >= len(init_pos) > 0 else None
    cap = finished if finished is not None else j.ended_at
    floor = seg_starts[min(len(init_pos), len(seg_starts)) - 1] if init_pos and seg_starts else None
    end = None
    # (the last write only below a known end: without one, a copied run directory's fresh mtime, the
    # copy's time, would pass for the agent's last line and make a run over long ago look alive)
    for cand in (written if floor is not None and cap is not None else None, j.live_end):
        if (
            end is None
            and cand is not None
            and (cap is None or cand <= cap + WRITTEN_SLACK_S)
            and (floor is None or cand >= floor)
        ):
            end = min(cand, cap) if cap is not None else cand
    if end is None:
        end = cap
    if end is not None:
        anchors.append((last_pos, end))
    if not anchors and j.fallback_end is not None:
        anchors = [(0, j.fallback_end - last_pos), (last_pos, j.fallback_end)]
    kept, dropped = _monotone(anchors)
    st.anchors, st.dropped_anchors = len(kept), dropped
    return kept


#: tools whose result comes as soon as they are called (no command runs): their result takes no time
INSTANT_TOOLS = frozenset(
    {"Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "TodoWrite", "NotebookEdit", "NotebookRead"}
)
#: the time before a model message (its latency) is one unit; a command's result takes this much
COMMAND_WEIGHT = 0.5
#: a transcript's last write (its file's mtime) is believed up to this long after "Agent finished"
WRITTEN_SLACK_S = 1.0


def _numpy():
    """numpy (the per-line computations' one import)."""
    # lazy: numpy loads with the first computation that needs it, not with the module
    import numpy

    return numpy


def line_weights(lines: pa.Table) -> list[float]:
    """How much time passes before each line of a transcript, in units of one model message's latency
    (a float per line of ``lines``: the ``_edgetui_pos`` rows with ``msg``, ``res_of``,
    ``call_of``, ``result``, ``said``): 1 before a line starting a new model message (its first content
    block: the blocks of one message are printed together; in a format without message ids, every
    line of the model's), :data:`COMMAND_WEIGHT` before the result of a command
    (Bash, a subagent, a fetch: it ran for a while), 0 before anything printed right after the line
    before it (the next block of the same message, an instant tool's result, hook records, a Stop
    hook's feedback, a prompt, a ``result`` record right after a model message; one after anything
    else gets 1: a model call ended it). Interpolating in this measure rather than in
    line numbers keeps a message's blocks and an edit's result together with their neighbours."""
    n = lines.num_rows
    names = lines.column_names
    msgs = lines.column("msg").to_pylist() if "msg" in names else [None] * n
    res = lines.column("res_of").to_pylist() if "res_of" in names else [None] * n
    calls = lines.column("call_of").to_pylist() if "call_of" in names else [None] * n
    ends = lines.column("result").to_pylist() if "result" in names else [None] * n
    said = lines.column("said").to_pylist() if "said" in names else [None] * n
    tool_of: dict[str, str] = {}
    w = [0.0] * n
    prev_msg = None
    after_message = False  # the line before is a model message's
    for i, (m, r, c, e, sd) in enumerate(zip(msgs, res, calls, ends, said)):
        if c is not None:
            tid, _, name = c.partition("\x1f")
            tool_of[tid] = name
        if m is not None:
            if m != prev_msg:
                w[i] = 1.0
            prev_msg = m
        elif sd:  # a model's output in a format without message ids (Codex text): a message of its own
            w[i] = 1.0
            prev_msg = None
        elif r is not None:
            w[i] = 0.0 if tool_of.get(r) in INSTANT_TOOLS else COMMAND_WEIGHT
            prev_msg = None
        elif e and not after_message:  # a result record after a tool's result: a model call ended it
            w[i] = 1.0
        after_message = m is not None
    return w


def line_placement(weights, kept: list[tuple[int, float]]):
    """Time of each line between the ``kept`` anchors (``(pos, t)``, pos strictly increasing),
    linear in the cumulative ``weights`` (:func:`line_weights`; in line numbers across a stretch
    where they add up to nothing), the first anchor's time before it and the last one's after it.
    Returns Arrow arrays (t, t_lo, t_hi, pinned): a line is *pinned* when no time passes between
    it and an anchor (an anchor's own line, the other blocks of an anchored message, an instant
    tool's result after an anchored call): its time is the anchor's, bounds null; any other line
    lies in a gap and gets the bracketing anchors' times as its bounds (null on an open side)."""
    np = _numpy()

    n_lines = len(weights)
    weights = np.asarray(weights, dtype=np.float64)
    cum = np.cumsum(weights)
    kp = np.fromiter((p for p, _ in kept), dtype=np.int64, count=len(kept))
    kt = np.fromiter((t for _, t in kept), dtype=np.float64, count=len(kept))
    pos = np.arange(n_lines, dtype=np.int64)
    idx = np.searchsorted(kp, pos, side="right") - 1  # the greatest anchor at or before each line
    out = np.empty(n_lines, dtype=np.float64)
    lo = np.full(n_lines, np.nan)
    hi = np.full(n_lines, np.nan)
    pinned = np.zeros(n_lines, dtype=bool)
    first = idx < 0
    out[first] = kt[0]
    hi[first] = kt[0]
    pinned[first] = cum[first] == cum[kp[0]]  # nothing between it and the anchor
    last = idx >= len(kp) - 1
    out[last] = kt[-1]
    lo[last] = kt[-1]
    pinned[last] = cum[last] == cum[kp[-1]]
    mid = ~(last | first)
    i = idx[mid]
    p0, t0, p1, t1 = kp[i], kt[i], kp[i + 1], kt[i + 1]
    c, c0, c1 = cum[pos[mid]], cum[p0], cum[p1]
    span = c1 - c0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(span > 0, (c - c0) / span, (pos[mid] - p0) / (p1 - p0))
    out[mid] = t0 + (t1 - t0) * frac
    at0 = ((c == c0) & (span > 0)) | (pos[mid] == p0)
    at1 = (c == c1) & (span > 0)
    out[mid] = np.where(at0, t0, np.where(at1, t1, out[mid]))
    pin = at0 | at1
    pinned[mid] = pin
    lo[mid] = np.where(pin, np.nan, t0)
    hi[mid] = np.where(pin, np.nan, t1)
    lo[pinned] = np.nan
    hi[pinned] = np.nan
    return (
        pa.array(out, pa.float64()),
        pa.array(lo, pa.float64(), from_pandas=True),
        pa.array(hi, pa.float64(), from_pandas=True),
        pa.array(pinned, pa.bool_()),
    )


def line_times(n_lines: int, kept: list[tuple[int, float]]) -> pa.Array:
    """Time (float64, epoch UTC) of each line position 0 … ``n_lines - 1`` between the ``kept``
    anchors (``(pos, t)``, pos strictly increasing): between two anchors around a line
    ``t0 + (t1 - t0) * (pos - p0) / (p1 - p0)`` (p0 the greatest anchor position <= pos, p1 the
    next one: the same float operations in the same order as the SQL it replaced, so the same
    bits), an anchor's own time on its line, the first anchor's time before it and the last one's
    after it. Vectorised (numpy, which the ingest's scrubbing imports already): a Claude
    transcript stamps most of its lines, so a loop per anchor cost ~2 µs a line."""
    np = _numpy()

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
            f"""UPDATE events SET t = l.t_new, t_source = l.src, t_lo = l.t_lo, t_hi = l.t_hi
               FROM _edgetui_line_t l
               WHERE {in_list("events.run_key", keys)} AND events.source = ? AND events.run_key = l.run_key
                 AND events."offset" = l."offset"
                 AND (events.t_source IS NULL OR events.t_source NOT IN ('recorded', 'observed'))
                 AND (events.t IS DISTINCT FROM l.t_new OR events.t_source IS DISTINCT FROM l.src
                      OR events.t_lo IS DISTINCT FROM l.t_lo OR events.t_hi IS DISTINCT FROM l.t_hi)""",
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
