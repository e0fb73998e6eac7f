"""``edgetui report RUN``: a run's report as Markdown, JSON or one self-contained HTML file.

:func:`build_report` gathers it as plain data (summary, the best-so-far curve, the reframing
moments with their why, the annotations); :func:`to_markdown` (readable on its own, the chart
drawn as text), :func:`to_json` and :func:`to_html` (inline SVG and CSS, no script, no
reference to anything outside the file) render it.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any, Optional

from edgetui.record.annotations import list_annotations
from edgetui.record.moments_table import load_series, replay_moments
from edgetui.redact import redact_obj
from edgetui.parsers.run_secrets import recorded_run_secrets
from edgetui.analysis.why_new_best import why_of
from edgetui.replay.invalid_rounds import invalid_reason
from edgetui.replay.trajectory_metrics import FIELDS as TRAJECTORY_FIELDS

__all__ = ["REPORT_SCHEMA", "build_report", "to_markdown", "to_json", "to_html", "text_chart"]

REPORT_SCHEMA = "edgetui-report/1"
_SUMMARY = (
    "run_key",
    "host",
    "run_id",
    "task_id",
    "agent",
    "model",
    "status",
    "selection",
    "score_direction",
    "score_task",
    "started_at",
    "ended_at",
    "timeout_s",
    "best_round",
    "best_score",
    "best_pass_rate",
    "agent_submissions",
    "auto_submissions",
    "n_events",
    "cost_usd",
    "format",
    "best_invalid",
    "trajectory_metrics",
    "work_image",
    "judge_image",
)


def _fmt_el(s: Optional[float]) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def build_report(conn: Any, run_key: str, *, with_diff: bool = True) -> dict[str, Any]:
    """The report of one recorded run as a JSON-able dict:

    ``schema`` (:data:`REPORT_SCHEMA`), ``run`` (the ``runs`` row's summary columns; times epoch
    UTC, pass rates 0–1), ``curve`` (every graded round in result-known order: ``round``,
    ``kind``, ``elapsed_s``, ``value`` and ``best`` in the chart's units), ``moments`` (the
    reframing moments: ``round`` e.g. ``agent-213``, ``elapsed_s``, ``before`` / ``after``,
    ``gain``, ``lead_time_s``, ``confidence``, ``components``, ``why``), ``other_moments``
    (counts of the ``gain`` / ``changepoint`` detectors) and ``annotations``. Raises
    ``KeyError`` for an unknown run."""
    cur = conn.execute(f"SELECT {', '.join(_SUMMARY)} FROM runs WHERE run_key = ?", [run_key])
    row = cur.fetchone()
    if row is None:
        raise KeyError(run_key)
    run = dict(zip(_SUMMARY, row))
    if isinstance(run.get("trajectory_metrics"), str):
        run["trajectory_metrics"] = json.loads(run["trajectory_metrics"])
    series, info = load_series(conn, run_key)
    curve = [
        {
            "round": g.round,
            "kind": g.kind,
            "elapsed_s": g.elapsed_s,
            "value": g.value,
            "best": g.best,
            "new_best": g.is_new_best,
        }
        for g in series
    ]
    moments = []
    for m in replay_moments(conn, run_key):
        w = why_of(conn, run_key, m["round"], with_diff=with_diff)
        moments.append(
            {
                "round": m["round"],
                "elapsed_s": m["elapsed_s"],
                "t": m["t"],
                "before": m["score_before"],
                "after": m["score_after"],
                "gain": m["gain"],
                "noise": m["noise"],
                "lead_time_s": m["lead_time_s"],
                "confidence": m["confidence"],
                "components": m["components"],
                "provisional": bool(m["provisional"]),
                "why": w,
            }
        )
    others = {d: len(replay_moments(conn, run_key, d)) for d in ("gain", "changepoint")}
    # a report is made to be shared: every text in it, from the database or the run folder, through
    # the one rule set with the run's own known secrets (a value learned after a text was recorded)
    return redact_obj(
        {
            "schema": REPORT_SCHEMA,
            "run": run,
            "unit": "score" if info["score_task"] else "pass rate %",
            "curve": curve,
            "invalid_rounds": _invalid_rounds(conn, run_key),
            "moments": moments,
            "other_moments": others,
            "annotations": list_annotations(conn, run_key),
        },
        recorded_run_secrets(conn, run_key),
    )


def _invalid_rounds(conn: Any, run_key: str) -> list[dict[str, Any]]:
    """The run's invalid rounds (:mod:`edgetui.replay.invalid_rounds`: no curve point, no input to the
    analysis) in time order: ``round``, ``kind``, ``elapsed_s``, ``reason``."""
    cur = conn.execute(
        "SELECT s.round, s.kind, s.status, s.valid, s.error, s.t - r.started_at FROM submissions s "
        "JOIN runs r ON r.run_key = s.run_key WHERE s.run_key = ? ORDER BY s.t NULLS LAST, s.round",
        [run_key],
    )
    out = []
    for rnd, kind, status, valid, error, el in cur.fetchall():
        reason = invalid_reason({"status": status, "valid": valid, "kind": kind, "error": error})
        if reason is not None:
            out.append({"round": rnd, "kind": kind, "elapsed_s": el, "reason": reason})
    return out


def _trajectory_text(tm: Any) -> str:
    """SForge's trajectory metrics (replay/trajectory_metrics.py) as one Markdown line's text."""
    if not isinstance(tm, dict):
        return "–"
    return ", ".join(f"{k} {tm.get(k) if tm.get(k) is not None else '–'}" for k in TRAJECTORY_FIELDS)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def to_json(rep: dict[str, Any]) -> str:
    return json.dumps(_jsonable(rep), indent=1, default=str) + "\n"


def text_chart(curve: list[dict], moment_rounds: set[str], width: int = 72, height: int = 14) -> list[str]:
    """The best-so-far curve as text: ``·`` the line, ``✦`` where a reframing moment's new best
    starts, y labels on the left, elapsed hours below."""
    pts = [
        (c["elapsed_s"] / 3600.0, c["best"], c["round"])
        for c in curve
        if c["elapsed_s"] is not None and c["best"] is not None
    ]
    if not pts:
        return ["(nothing graded)"]
    x_max = max(p[0] for p in pts) or 1.0
    lo, hi = min(p[1] for p in pts), max(p[1] for p in pts)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    grid = [[" "] * width for _ in range(height)]

    def row(v: float) -> int:
        return height - 1 - int(round((v - lo) / (hi - lo) * (height - 1)))

    best_at = [None] * width
    for x, b, _ in pts:
        col = min(width - 1, int(x / x_max * (width - 1)))
        for c in range(col, width):
            best_at[c] = b
    for c, b in enumerate(best_at):
        if b is not None:
            grid[row(b)][c] = "·"
    for x, b, rnd in pts:
        if rnd in moment_rounds:
            grid[row(b)][min(width - 1, int(x / x_max * (width - 1)))] = "✦"
    labels = {r: f"{hi - (hi - lo) * r / (height - 1):.4g}" for r in (0, (height - 1) // 2, height - 1)}
    lab = max(len(x) for x in labels.values())
    out = []
    for r, cells in enumerate(grid):
        out.append(f"{labels.get(r, ''):>{lab}} │" + "".join(cells))
    out.append(" " * lab + " └" + "─" * width)
    out.append(" " * lab + f"  0h{' ' * (width - 4 - len(f'{x_max:.1f}h'))}{x_max:.1f}h")
    return out


def _best_text(run: dict) -> str:
    if run.get("score_task"):
        return f"{run.get('best_score')}"
    pr = run.get("best_pass_rate")
    return "–" if pr is None else f"{pr * 100:.1f}%"


def to_markdown(rep: dict[str, Any]) -> str:
    run = rep["run"]
    L = [
        f"# Run report: {run['run_id']} / {run['task_id']}",
        "",
        f"- run: `{run['run_key']}`; agent {run.get('agent') or '–'}, model {run.get('model') or '–'}; "
        f"status {run.get('status')}",
        f"- best {_best_text(run)} ({run.get('best_round') or '–'}); selection {run.get('selection')}, "
        f"{run.get('score_direction')}",
        f"- {run.get('agent_submissions') or 0} agent and {run.get('auto_submissions') or 0} auto-eval submissions, "
        f"{len(rep['curve'])} valid graded rounds, {len(rep.get('invalid_rounds', []))} invalid, "
        f"{run.get('n_events') or 0} events",
        f"- SForge format {run.get('format') or '–'}"
        + ("; **the round SForge selects is invalid**" if run.get("best_invalid") else "")
        + f"; work image {run.get('work_image') or '–'}, judge image {run.get('judge_image') or '–'}",
        f"- trajectory metrics: {_trajectory_text(run.get('trajectory_metrics'))}",
        "- invalid rounds (no point of the curve): "
        + (", ".join(f"{r['round']} ({r['reason']})" for r in rep.get("invalid_rounds", [])) or "none"),
        f"- reframing moments: {len(rep['moments'])}; other detectors: "
        + ", ".join(f"{k} {v}" for k, v in rep["other_moments"].items()),
        "",
        f"## Best so far ({rep['unit']}, over elapsed hours)",
        "",
        "```",
    ]
    L += text_chart(rep["curve"], {m["round"] for m in rep["moments"]})
    L += ["```", "", "## Reframing moments", ""]
    if not rep["moments"]:
        L += ["None found.", ""]
    for m in rep["moments"]:
        w = m["why"]
        gain = f"Gain {m['gain']:.4g}" + (f" (noise {m['noise']:.3g})" if m.get("noise") else "")
        L += [
            f"### {m['round']} at {_fmt_el(m['elapsed_s'])}: {m['before']:g} → {m['after']:g}",
            "",
            f"{gain}; lead time {_fmt_el(m['lead_time_s'])}; confidence {m['confidence']:.2f}"
            + ("; provisional" if m["provisional"] else "")
            + ".",
            "",
        ]
        if m["components"]:
            L.append(
                "Sub-scores that moved: "
                + ", ".join(f"{k} {a:g} → {b:g}" for k, (a, b) in m["components"].items())
                + "."
            )
            L.append("")
        L.append(f"What the agent did since {w.get('prev_round') or 'the start'}:")
        L.append("")
        for k, a in w["actions"].items():
            L.append(f"- {k}: {a['n']}")
        notes = w["notes"]
        for key, title in (("thinking", "Its thinking"), ("messages", "Its last messages")):
            if notes.get(key):
                L += ["", f"{title}:", ""] + [f"> {n['text'].strip()}".replace("\n", "\n> ") for n in notes[key]]
        if notes.get("analysis"):
            L += ["", "analysis.md:", "", notes["analysis"].rstrip()]
        d = w.get("diff")
        if d:
            L += [
                "",
                f"Code: submission.tar.gz against {d.get('against') or 'nothing'}"
                + (f": {d['error']}" if d.get("error") else ""),
                "",
            ]
            for f in d["files"]:
                L += ["```diff"] + f["lines"] + ["```"]
        L.append("")
    L += ["## Annotations", ""]
    if not rep["annotations"]:
        L.append("None.")
    for a in rep["annotations"]:
        L.append(f"- {a.get('round') or a['event_id']}: **{a.get('label') or '–'}** {a.get('text') or ''}".rstrip())
    return "\n".join(L) + "\n"


def _svg(rep: dict[str, Any], w: int = 760, h: int = 260) -> str:
    pts = [
        (c["elapsed_s"] / 3600.0, c["best"], c["value"], c["round"])
        for c in rep["curve"]
        if c["elapsed_s"] is not None and c["best"] is not None
    ]
    if not pts:
        return "<p>Nothing graded.</p>"
    x_max = max(p[0] for p in pts) or 1.0
    vals = [p[1] for p in pts] + [p[2] for p in pts if p[2] is not None]
    lo, hi = min(vals), max(vals)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    pad = 36

    def X(x: float) -> float:
        return pad + x / x_max * (w - 2 * pad)

    def Y(v: float) -> float:
        return h - pad - (v - lo) / (hi - lo) * (h - 2 * pad)

    line, prev = [], None
    for x, b, _, _ in pts:
        if prev is not None:
            line.append(f"{X(x):.1f},{Y(prev):.1f}")
        line.append(f"{X(x):.1f},{Y(b):.1f}")
        prev = b
    dots = "".join(
        f'<circle cx="{X(x):.1f}" cy="{Y(v):.1f}" r="1.6" fill="#c9a400"/>' for x, _, v, _ in pts if v is not None
    )
    mr = {m["round"] for m in rep["moments"]}
    stars = "".join(
        f'<text x="{X(x):.1f}" y="{Y(b) - 4:.1f}" fill="#c000c0" font-size="14" text-anchor="middle">'
        f"✦<title>{html.escape(r)}</title></text>"
        for x, b, _, r in pts
        if r in mr
    )
    axis = (
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#888"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#888"/>'
        f'<text x="{pad}" y="{h - pad + 16}" font-size="11">0h</text>'
        f'<text x="{w - pad}" y="{h - pad + 16}" font-size="11" text-anchor="end">{x_max:.1f}h</text>'
        f'<text x="{pad - 4}" y="{Y(hi) + 4:.1f}" font-size="11" text-anchor="end">{hi:.4g}</text>'
        f'<text x="{pad - 4}" y="{Y(lo) + 4:.1f}" font-size="11" text-anchor="end">{lo:.4g}</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="best so far">{axis}{dots}<polyline fill="none" stroke="#2a8a2a" stroke-width="2" '
        f'points="{" ".join(line)}"/>{stars}</svg>'
    )


def to_html(rep: dict[str, Any]) -> str:
    """One self-contained HTML file: inline CSS and SVG, no script, nothing fetched."""
    e = html.escape
    run = rep["run"]
    md_sections = []
    for m in rep["moments"]:
        w = m["why"]
        acts = "".join(f"<li>{e(k)}: {a['n']}</li>" for k, a in w["actions"].items())
        notes = "".join(
            f"<blockquote>{e(n['text'].strip())}</blockquote>"
            for n in (w["notes"].get("thinking") or []) + (w["notes"].get("messages") or [])
        )
        diff = ""
        d = w.get("diff")
        if d:
            diff = (
                f"<p>submission.tar.gz against {e(d.get('against') or 'nothing')}"
                + (f": {e(d['error'])}" if d.get("error") else "")
                + "</p>"
            )
            diff += "".join(f"<pre>{e(chr(10).join(f['lines']))}</pre>" for f in d["files"])
        comps = ", ".join(f"{e(k)} {a:g} → {b:g}" for k, (a, b) in (m["components"] or {}).items())
        md_sections.append(
            f"<section><h3>{e(m['round'])} at {_fmt_el(m['elapsed_s'])}: {m['before']:g} → {m['after']:g}</h3>"
            f"<p>gain {m['gain']:.4g}; lead time {_fmt_el(m['lead_time_s'])}; confidence {m['confidence']:.2f}"
            f"{'; provisional' if m['provisional'] else ''}</p>"
            + (f"<p>{comps}</p>" if comps else "")
            + f"<p>Since {e(w.get('prev_round') or 'the start')}:</p><ul>{acts}</ul>{notes}{diff}</section>"
        )
    ann = "".join(
        f"<tr><td>{e(str(a.get('round') or a['event_id']))}</td><td>{e(a.get('label') or '')}</td>"
        f"<td>{e(a.get('text') or '')}</td></tr>"
        for a in rep["annotations"]
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>Run report: {e(run["run_id"])} / {e(run["task_id"])}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}}pre{{background:#f4f4f4;
padding:.5em;overflow-x:auto}}blockquote{{border-left:3px solid #ccc;margin:.5em 0;padding-left:.8em;color:#444}}
td,th{{border:1px solid #ccc;padding:2px 6px}}table{{border-collapse:collapse}}</style></head><body>
<h1>Run report: {e(run["run_id"])} / {e(run["task_id"])}</h1>
<p><code>{e(run["run_key"])}</code>; agent {e(str(run.get("agent") or "–"))}, model {e(str(run.get("model") or "–"))};
status {e(str(run.get("status")))}; best {e(_best_text(run))} ({e(str(run.get("best_round") or "–"))});
{len(rep["curve"])} graded rounds; {len(rep["moments"])} reframing moments.</p>
<h2>Best so far ({e(rep["unit"])})</h2>
{_svg(rep)}
<h2>Reframing moments</h2>
{"".join(md_sections) or "<p>None found.</p>"}
<h2>Annotations</h2>
{("<table><tr><th>where</th><th>label</th><th>note</th></tr>" + ann + "</table>") if ann else "<p>None.</p>"}
</body></html>
"""
