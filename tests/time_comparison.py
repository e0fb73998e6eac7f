"""Event times of one run in two databases: a live watcher's (the reference: what it saw as lines
arrived) and another's (offline ingest, a watcher restarted, a watcher over SSH) (issue 36)."""

from __future__ import annotations

from dataclasses import dataclass, field

TRANSCRIPT = "agent_output.txt"


@dataclass
class TimeComparison:
    """``pinned``: transcript events of the other database whose time is an anchor's (no bounds)
    and that the reference saw arrive; ``pinned_within`` of them within the tolerance. ``gap``:
    events placed in a gap (bounds ``t_lo`` / ``t_hi``); ``gap_outside`` of them whose seen time is
    outside their bounds by more than the tolerance. ``observed``: events the other database saw
    arrive itself (a live watcher's), ``observed_within`` of them within the tolerance. ``errors``:
    (event_id, reference t, other t, t_source, t_lo, t_hi) of every event compared."""

    tolerance: float
    pinned: int = 0
    pinned_within: int = 0
    gap: int = 0
    gap_outside: int = 0
    observed: int = 0
    observed_within: int = 0
    worst_pinned: float = 0.0
    worst_gap: list = field(default_factory=list)
    rows: list = field(default_factory=list)

    def caught_up(self, since: float, until: float) -> int:
        """Events the reference saw arrive between ``since`` and ``until`` (a watcher stopped) that the
        other database timed without seeing them (anchored or interpolated)."""
        return sum(1 for _, ref_t, _, src, _, _ in self.rows if since < ref_t < until and src != "observed")

    def __str__(self) -> str:
        return (
            f"pinned {self.pinned_within}/{self.pinned} within {self.tolerance:g} s (worst {self.worst_pinned:.1f} s); "
            f"gap {self.gap} ({self.gap_outside} outside their bounds); "
            f"observed {self.observed_within}/{self.observed}"
        )


def compare_times(ref, other, run_key: str, tolerance: float) -> TimeComparison:
    """Compare the transcript events of ``run_key`` present in both connections (see the class)."""
    seen = {
        eid: t
        for eid, t in ref.execute(
            "SELECT event_id, t FROM events WHERE run_key = ? AND source = ? AND t_source = 'observed'",
            [run_key, TRANSCRIPT],
        ).fetchall()
    }
    out = TimeComparison(tolerance)
    for eid, t, src, lo, hi in other.execute(
        "SELECT event_id, t, t_source, t_lo, t_hi FROM events WHERE run_key = ? AND source = ?",
        [run_key, TRANSCRIPT],
    ).fetchall():
        if eid not in seen or t is None:
            continue
        ref_t = seen[eid]
        out.rows.append((eid, ref_t, t, src, lo, hi))
        err = abs(t - ref_t)
        if src == "observed":
            out.observed += 1
            out.observed_within += err <= tolerance
        elif lo is None and hi is None:
            out.pinned += 1
            out.pinned_within += err <= tolerance
            out.worst_pinned = max(out.worst_pinned, err)
        else:
            out.gap += 1
            if (lo is not None and ref_t < lo - tolerance) or (hi is not None and ref_t > hi + tolerance):
                out.gap_outside += 1
                out.worst_gap.append((eid, ref_t, t, lo, hi))
    return out


def causal_faults(conn, run_key: str) -> list:
    """Transcript events out of causal order: a tool result timed before its call, an event timed
    after the run_agent.log's "Agent finished" line."""
    faults = conn.execute(
        "SELECT 'result before call', c.summary, c.t, r.t FROM events c JOIN events r "
        "ON r.run_key = c.run_key AND r.source = c.source AND r.tool_use_id = c.tool_use_id "
        "WHERE c.run_key = ? AND c.source = ? AND c.kind = 'tool_call' AND r.kind = 'tool_result' AND r.t < c.t",
        [run_key, TRANSCRIPT],
    ).fetchall()
    fin = conn.execute(
        "SELECT max(t) FROM events WHERE run_key = ? AND source = 'run_agent.log' "
        "AND kind = 'segment_end' AND data->>'$.agent_finished' = 'true'",
        [run_key],
    ).fetchone()[0]
    if fin is not None:
        faults += conn.execute(
            "SELECT 'after Agent finished', summary, t, ? FROM events WHERE run_key = ? AND source = ? AND t > ? "
            "AND t_source <> 'observed'",  # (a live read may come just after the agent's last line)
            [fin, run_key, TRANSCRIPT, fin + 0.001],
        ).fetchall()
    return faults
