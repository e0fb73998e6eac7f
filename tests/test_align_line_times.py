"""The alignment's per-line times (edgetui.record.time_alignment.line_times, numpy) against the SQL they replaced
(two ASOF joins and the same expression in DuckDB): equal to the last bit, on random anchors."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pyarrow as pa

from edgetui.record.time_alignment import _monotone, line_times

SQL = """SELECT v.pos, CASE WHEN q.p0 IS NULL THEN q.t1 WHEN q.p1 IS NULL OR q.p1 = q.p0 THEN q.t0
                        ELSE q.t0 + (q.t1 - q.t0) * (q.pos - q.p0) / (q.p1 - q.p0) END AS t_new
         FROM v JOIN (SELECT w.*, b.pos AS p1, b.t AS t1
               FROM (SELECT v.pos, a.pos AS p0, a.t AS t0 FROM v ASOF LEFT JOIN anchors a ON v.pos >= a.pos) w
               ASOF LEFT JOIN anchors b ON w.pos <= b.pos) q ON q.pos = v.pos ORDER BY v.pos"""


def test_line_times_equal_duckdbs_asof_interpolation():
    rng = random.Random(15)
    c = duckdb.connect()
    for trial in range(60):
        n_lines = rng.choice([1, 2, 7, 300, 5000, 70000])  # (70,000: more than one slice)
        raw = [(rng.randrange(n_lines), rng.uniform(1.7e9, 1.7e9 + 86400)) for _ in range(rng.randint(1, 12))]
        if trial % 7 == 0:  # anchors outside the lines (as the SQL allowed)
            raw.append((rng.choice([-1, n_lines, n_lines + 3]), rng.uniform(1.7e9, 1.7e9 + 86400)))
        kept, _ = _monotone(raw)
        pos = np.arange(n_lines, dtype=np.int64)
        got = line_times(n_lines, kept).to_numpy()
        v = pa.table({"pos": pa.array(pos, pa.int64())})
        anchors = pa.table(
            {"pos": pa.array([a[0] for a in kept], pa.int64()), "t": pa.array([a[1] for a in kept], pa.float64())}
        )
        c.register("v", v)
        c.register("anchors", anchors)
        want = [t for _, t in c.execute(SQL).fetchall()]
        c.unregister("v")
        c.unregister("anchors")
        assert got.tolist() == want, (trial, kept)
        # anchors' own lines carry the anchor's time; before the first / after the last: flat
        for p, t in kept:
            assert not 0 <= p < n_lines or got[p] == t
        if kept[0][0] >= 0:  # before the first anchor: its time
            assert (got[: kept[0][0] + 1] == kept[0][1]).all()
        if kept[-1][0] < n_lines:  # after the last: its time
            assert (got[kept[-1][0] :] == kept[-1][1]).all()
