"""Time alignment of a finished run (sforge-format.md §6.7), run after every ingest.

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
from dataclasses import dataclass
from typing import Optional

import duckdb
import pyarrow as pa

UPLOAD_LEAD_S = 2.0  # tar + upload before the judge stamps submitted_at
RESULT_POLL_S = 5.0  # sforge-submit polls /result every 10 s: mean wait 5 s


@dataclass
class AlignStats:
    events: int = 0
    anchors: int = 0
    dropped_anchors: int = 0
    interpolated: int = 0


def _interp(positions: list[int], anchors: list[tuple[int, float]]) -> list[Optional[float]]:
    """Piecewise-linear t for each position (sorted), holding flat outside the anchors."""
    if not anchors:
        return [None] * len(positions)
    ap = [a[0] for a in anchors]
    at = [a[1] for a in anchors]
    out: list[Optional[float]] = []
    for p in positions:
        i = bisect.bisect_right(ap, p)
        if i == 0:
            out.append(at[0])
        elif i >= len(ap):
            out.append(at[-1])
        else:
            p0, p1, t0, t1 = ap[i - 1], ap[i], at[i - 1], at[i]
            out.append(t0 if p1 == p0 else t0 + (t1 - t0) * (p - p0) / (p1 - p0))
    return out


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


def align_run(
    conn: duckdb.DuckDBPyConnection,
    run_key: str,
    transcript_source: Optional[str],
    *,
    started_at: Optional[float] = None,
    ended_at: Optional[float] = None,
    fallback_end: Optional[float] = None,
) -> AlignStats:
    """Assign interpolated ``t`` to the run's events that have none (or an interpolated one).

    ``transcript_source`` is the events.source of the agent transcript (None when
    the run has none). ``fallback_end`` (epoch UTC, e.g. the transcript's mtime)
    anchors a bare transcript without any other time; such a transcript then
    spans one second per line ending there.
    """
    st = AlignStats()
    if transcript_source:
        _align_transcript(conn, run_key, transcript_source, started_at, ended_at, fallback_end, st)
    _fill_other_sources(conn, run_key, transcript_source, started_at, st)
    return st


def _align_transcript(conn, run_key, source, started_at, ended_at, fallback_end, st: AlignStats) -> None:
    rows = conn.execute(
        'SELECT event_id, kind, "offset", t, t_source, tool_use_id, round, data->>\'$.sforge_submit\' '
        "FROM events WHERE run_key = ? AND source = ? ORDER BY \"offset\", sub",
        [run_key, source],
    ).fetchall()
    if not rows:
        return
    st.events = len(rows)
    # position = line index
    pos_of_offset: dict[int, int] = {}
    for r in rows:
        if r[2] not in pos_of_offset:
            pos_of_offset[r[2]] = len(pos_of_offset)
    last_pos = len(pos_of_offset) - 1
    anchors: list[tuple[int, float]] = []
    # recorded times inside the transcript
    for r in rows:
        if r[4] in ("recorded", "observed") and r[3] is not None:
            anchors.append((pos_of_offset[r[2]], r[3]))
    recorded_pos = {p for p, _ in anchors}
    # segment starts / ends from run_agent.log
    log = conn.execute(
        "SELECT kind, t, data->>'$.event' FROM events WHERE run_key = ? AND source = 'run_agent.log' "
        "AND kind IN ('segment_start', 'segment_end', 'run_end') AND t IS NOT NULL ORDER BY t",
        [run_key],
    ).fetchall()
    seg_starts = [t for k, t, _ in log if k == "segment_start"]
    seg_ends = [t for k, t, _ in log if k == "segment_end"]
    if not seg_starts and started_at is not None:
        seg_starts = [started_at]
    init_pos = [pos_of_offset[r[2]] for r in rows if r[1] == "session_init"]
    # dedupe init positions (several events may share a line)
    init_pos = sorted(set(init_pos))
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
    # submissions
    subs = {
        r[0]: r[1:]
        for r in conn.execute(
            "SELECT round, submitted_at, seen_at, graded_at, runtime_s FROM submissions WHERE run_key = ?",
            [run_key],
        ).fetchall()
    }
    call_pos: dict[str, int] = {}
    for r in rows:
        if r[1] == "tool_call" and r[5] and r[7] in ("true", "True", "1"):
            call_pos[r[5]] = pos_of_offset[r[2]]
    for r in rows:
        if r[1] == "tool_result" and r[6] and r[6] in subs and r[5] in call_pos:
            submitted_at, seen_at, graded_at, runtime_s = subs[r[6]]
            if submitted_at is not None:
                anchors.append((call_pos[r[5]], submitted_at - UPLOAD_LEAD_S))
            res_t = seen_at
            if res_t is None and submitted_at is not None and runtime_s is not None:
                res_t = submitted_at + runtime_s + RESULT_POLL_S
            if (res_t is None and graded_at is not None and submitted_at is not None
                    and submitted_at <= graded_at <= submitted_at + 3 * 3600):  # a plausible report mtime
                res_t = graded_at + RESULT_POLL_S
            if res_t is not None and pos_of_offset[r[2]] not in recorded_pos:
                anchors.append((pos_of_offset[r[2]], res_t))
    end = ended_at
    if end is None and seg_ends and len(seg_ends) >= len(init_pos) > 0:
        end = seg_ends[-1]
    if end is not None:
        anchors.append((last_pos, end))
    if not anchors and fallback_end is not None:
        anchors = [(0, fallback_end - last_pos), (last_pos, fallback_end)]
    kept, dropped = _monotone(anchors)
    st.anchors, st.dropped_anchors = len(kept), dropped
    todo = [(r[0], pos_of_offset[r[2]]) for r in rows if r[4] not in ("recorded", "observed")]
    if not todo or not kept:
        return
    ts = _interp([p for _, p in todo], kept)
    _write_times(conn, [e for e, _ in todo], ts)
    st.interpolated = len(todo)


def _fill_other_sources(conn, run_key, transcript_source, started_at, st: AlignStats) -> None:
    """Events of other files without any time take the time of the previous timed event of that
    file (or the run start): e.g. game steps. Times a parser placed are kept."""
    rows = conn.execute(
        'SELECT event_id, source, t, t_source FROM events WHERE run_key = ? AND source IS DISTINCT FROM ? '
        'ORDER BY source, "offset", sub',
        [run_key, transcript_source],
    ).fetchall()
    ids, ts = [], []
    cur_src, last_t = None, None
    for eid, src, t, tsrc in rows:
        if src != cur_src:
            cur_src, last_t = src, None
        if t is not None:  # recorded, observed, or placed by its parser (e.g. a file's mtime)
            last_t = t
            continue
        val = last_t if last_t is not None else started_at
        if val is not None:
            ids.append(eid)
            ts.append(val)
    if ids:
        _write_times(conn, ids, ts)
        st.interpolated += len(ids)


def _write_times(conn, ids: list[str], ts: list[Optional[float]]) -> None:
    tbl = pa.table({"event_id": pa.array(ids, pa.string()), "t": pa.array(ts, pa.float64())})
    conn.register("_edgetui_align", tbl)
    try:
        conn.execute(
            "UPDATE events SET t = a.t, t_source = 'interpolated' FROM _edgetui_align a "
            "WHERE events.event_id = a.event_id AND a.t IS NOT NULL"
        )
    finally:
        conn.unregister("_edgetui_align")
