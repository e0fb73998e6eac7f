"""``edgetui report RUN``: a run's report as Markdown, JSON, one self-contained HTML file, or PDF.

:func:`build_report` gathers it as plain data through the read side (:mod:`edgetui.store.queries`,
the moments table, the why of each moment): the summary (agent, model, status, times, duration
against the budget, tokens, dollars), the best-so-far curve, the table of new bests, the best
submission's per-test results, the reframing moments with their why, the annotations.
:func:`to_markdown` (readable on its own, the chart drawn as text), :func:`to_json` and
:func:`to_html` (inline SVG and CSS, no script, no reference to anything outside the file, laid
out for print: no chart or table row cut at a page's edge) render it; :mod:`edgetui.analysis.report_pdf`
prints the HTML to PDF with a headless Chromium.

Every text from a run is shown with its control characters escaped (:mod:`edgetui.control_chars`)
and, in HTML and Markdown, its markup escaped: a transcript's ``<script>`` is text on the page.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
from typing import Any, Optional, Sequence

from edgetui.control_chars import visible, visible_lines
from edgetui.record.annotations import list_annotations
from edgetui.record.moments_table import load_series, replay_moments
from edgetui.redact import redact_obj
from edgetui.parsers.run_secrets import recorded_run_secrets
from edgetui.analysis.why_new_best import why_of
from edgetui.replay.invalid_rounds import invalid_reason
from edgetui.replay.trajectory_metrics import FIELDS as TRAJECTORY_FIELDS
from edgetui.store import queries

__all__ = ["REPORT_SCHEMA", "build_report", "to_markdown", "to_json", "to_html", "text_chart", "elapsed_ticks"]

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
#: further columns of the runs row (and the task) a report shows
_MORE = ("task_name", "task_category", "stated_cost_usd", "n_tool_calls", "status_reason", "is_sample")
#: a test's message is cut to this many characters in a report
MAX_TEST_MESSAGE = 300


def _fmt_el(s: Optional[float]) -> str:
    if s is None:
        return "–"
    neg, s = s < 0, int(round(abs(s)))
    return ("-" if neg else "") + f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _fmt_time(t: Optional[float]) -> str:
    """Epoch seconds as ``2026-03-12 00:58 UTC``."""
    if t is None:
        return "–"
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _fmt_tokens(n: Optional[int]) -> str:
    if not n:
        return "0"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return str(n)


def build_report(conn: Any, run_key: str, *, with_diff: bool = True) -> dict[str, Any]:
    """The report of one recorded run as a JSON-able dict:

    ``schema`` (:data:`REPORT_SCHEMA`), ``run`` (the ``runs`` row's summary columns, times epoch
    UTC, pass rates 0–1, plus ``task_name``, ``task_category``, ``duration_s`` (start to end, or to
    the last event), ``tokens`` (``input``, ``output``, ``cache_read``, ``cache_write``, ``total``),
    ``stated_cost_usd``, ``n_tool_calls``), ``unit``, ``curve`` (every graded round in result-known
    order: ``round``, ``kind``, ``elapsed_s``, ``value`` and ``best`` in the chart's units,
    ``new_best``), ``new_bests`` (each new best: ``round``, ``kind``, ``elapsed_s``, ``value``,
    ``gain`` over the best before it, the raw ``score``, ``pass_rate``, ``passed`` / ``total_tests``),
    ``best_tests`` (the selected round's per-test results: ``round``, ``tests`` with ``name``,
    ``status``, ``score``, ``weight``, ``message``), ``invalid_rounds``, ``moments`` (the reframing
    moments: ``round`` e.g. ``agent-213``, ``elapsed_s``, ``before`` / ``after``, ``gain``,
    ``lead_time_s``, ``confidence``, ``components``, ``why``), ``other_moments`` (counts of the
    ``gain`` / ``changepoint`` detectors) and ``annotations`` (each with its ``elapsed_s``). Raises
    ``KeyError`` for an unknown run."""
    head = queries.run_header(conn, run_key)
    if head is None:
        raise KeyError(run_key)
    run = {k: head.get(k) for k in _SUMMARY + _MORE}
    started = head.get("started_at")
    end = head.get("ended_at") or head.get("last_event_at") or head.get("last_t")
    run["duration_s"] = end - started if started is not None and end is not None else None
    run["tokens"] = {
        "input": head.get("tok_input") or 0,
        "output": head.get("tok_output") or 0,
        "cache_read": head.get("tok_cache_read") or 0,
        "cache_write": head.get("tok_cache_write") or 0,
        "total": head.get("tokens") or 0,
    }
    subs = queries.submissions(conn, run_key)
    by_round = {r["round"]: r for r in subs}
    series, info = load_series(conn, run_key)
    curve: list[dict[str, Any]] = [
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
    new_bests, prev = [], None
    for c in curve:
        if not c["new_best"] or c["best"] is None:
            continue
        r = by_round.get(c["round"]) or {}
        new_bests.append(
            {
                "round": c["round"],
                "kind": c["kind"],
                "elapsed_s": c["elapsed_s"],
                "value": c["best"],
                "gain": None if prev is None else c["best"] - prev,
                "score": r.get("score"),
                "pass_rate": r.get("pass_rate"),
                "passed": r.get("passed"),
                "total_tests": r.get("total_tests"),
            }
        )
        prev = c["best"]
    best_round = run.get("best_round")
    best_tests = {
        "round": best_round,
        "tests": [
            {
                "name": t.get("name"),
                "status": t.get("status"),
                "score": t.get("score"),
                "weight": t.get("weight"),
                "message": (t.get("message") or "")[:MAX_TEST_MESSAGE],
            }
            for t in (queries.test_results(conn, run_key, best_round) if best_round else [])
        ],
    }
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
    annotations = []
    for a in list_annotations(conn, run_key):
        el = (by_round.get(a.get("round")) or {}).get("elapsed_s") if a.get("round") else None
        if el is None and started is not None and a.get("t") is not None:
            el = a["t"] - started
        annotations.append({**a, "elapsed_s": el})
    # a report is made to be shared: every text in it, from the database or the run folder, through
    # the one rule set with the run's own known secrets (a value learned after a text was recorded)
    return redact_obj(
        {
            "schema": REPORT_SCHEMA,
            "run": run,
            "unit": "score" if info["score_task"] else "pass rate %",
            "curve": curve,
            "new_bests": new_bests,
            "best_tests": best_tests,
            "invalid_rounds": _invalid_rounds(subs),
            "moments": moments,
            "other_moments": others,
            "annotations": annotations,
        },
        recorded_run_secrets(conn, run_key),
    )


def _invalid_rounds(subs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's invalid rounds (:mod:`edgetui.replay.invalid_rounds`: no curve point, no input to the
    analysis) in time order: ``round``, ``kind``, ``elapsed_s``, ``reason``."""
    out = []
    for s in sorted(subs, key=lambda r: (r.get("t") is None, r.get("t") or 0.0, r["round"])):
        reason = invalid_reason(s)
        if reason is not None:
            out.append({"round": s["round"], "kind": s.get("kind"), "elapsed_s": s.get("elapsed_s"), "reason": reason})
    return out


def _trajectory_text(tm: Any) -> str:
    """SForge's trajectory metrics (replay/trajectory_metrics.py) as one line's text."""
    if not isinstance(tm, dict):
        return "–"

    def fmt(v: Any) -> str:
        return "–" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)

    return ", ".join(f"{k} {fmt(tm.get(k))}" for k in TRAJECTORY_FIELDS)


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


def elapsed_ticks(x_max_s: float, n: int = 6) -> list[tuple[float, str]]:
    """About ``n`` ticks over 0..``x_max_s`` seconds on a round step: (seconds, ``h:mm`` label, or
    ``m:ss`` under ten minutes)."""
    secs = max(x_max_s, 1.0)
    steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
    step = next((st for st in steps if secs / st <= n), 86400)
    out = []
    for k in range(int(secs // step) + 1):
        t = k * step
        out.append((float(t), f"{t // 60}:{t % 60:02d}" if secs < 600 else f"{t // 3600}:{t % 3600 // 60:02d}"))
    return out


def _value_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round values over [lo, hi] (about ``n``)."""
    span = hi - lo
    raw = span / max(1, n)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    out, v = [], first
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _chart_bounds(rep: dict[str, Any]):
    """(points (hours, best, value, round, kind), x_max hours, budget hours or None, lo, hi)."""
    pts = [
        (c["elapsed_s"] / 3600.0, c["best"], c["value"], c["round"], c["kind"])
        for c in rep["curve"]
        if c["elapsed_s"] is not None and c["best"] is not None
    ]
    run = rep["run"]
    dur = (run.get("duration_s") or 0) / 3600.0
    budget = (run.get("timeout_s") or 0) / 3600.0 or None
    x_max = max([p[0] for p in pts] + [dur]) or 1.0
    if budget and budget <= 1.5 * x_max:
        x_max = max(x_max, budget)
    else:
        budget = None
    vals = [p[1] for p in pts] + [p[2] for p in pts if p[2] is not None]
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    return pts, x_max, budget, lo, hi


def text_chart(
    curve: list[dict], moment_rounds: set[str], width: int = 72, height: int = 14, x_max_h: Optional[float] = None
) -> list[str]:
    """The best-so-far curve as text: ``·`` the line, ``◆`` a new best, ``✦`` where a reframing
    moment's new best starts; y labels on the left, elapsed time (h:mm) ticks below."""
    pts = [
        (c["elapsed_s"] / 3600.0, c["best"], c["round"], c.get("new_best"))
        for c in curve
        if c["elapsed_s"] is not None and c["best"] is not None
    ]
    if not pts:
        return ["(nothing graded)"]
    x_max = max([p[0] for p in pts] + [x_max_h or 0.0]) or 1.0
    lo, hi = min(p[1] for p in pts), max(p[1] for p in pts)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    grid = [[" "] * width for _ in range(height)]

    def row(v: float) -> int:
        return height - 1 - int(round((v - lo) / (hi - lo) * (height - 1)))

    def col(x: float) -> int:
        return min(width - 1, int(x / x_max * (width - 1)))

    best_at: list[Optional[float]] = [None] * width
    for x, b, _, _ in pts:
        for c in range(col(x), width):
            best_at[c] = b
    for c, b in enumerate(best_at):
        if b is not None:
            grid[row(b)][c] = "·"
    for x, b, rnd, nb in pts:
        if rnd in moment_rounds:
            grid[row(b)][col(x)] = "✦"
        elif nb:
            grid[row(b)][col(x)] = "◆"
    labels = {r: f"{hi - (hi - lo) * r / (height - 1):.4g}" for r in (0, (height - 1) // 2, height - 1)}
    lab = max(len(x) for x in labels.values())
    out = []
    for r, cells in enumerate(grid):
        out.append(f"{labels.get(r, ''):>{lab}} │" + "".join(cells))
    axis = ["─"] * width
    under = [" "] * (width + 8)
    for t, text in elapsed_ticks(x_max * 3600.0):
        c = col(t / 3600.0)
        axis[c] = "┬"
        start = min(max(0, c - len(text) // 2), width + 8 - len(text))
        if all(ch == " " for ch in under[max(0, start - 1) : start + len(text) + 1]):
            under[start : start + len(text)] = list(text)
    out.append(" " * lab + " └" + "".join(axis))
    out.append(" " * lab + "  " + "".join(under).rstrip())
    unit = "m:ss" if x_max * 3600 < 600 else "h:mm"
    out.append(" " * lab + f"  elapsed ({unit}); · best so far, ◆ new best, ✦ reframing moment")
    return out


def _best_text(run: dict) -> str:
    if run.get("score_task"):
        return f"{run.get('best_score')}"
    pr = run.get("best_pass_rate")
    return "–" if pr is None else f"{pr * 100:.1f}%"


def _num(v: Any, fmt: str = "{:.4g}") -> str:
    return "–" if v is None else fmt.format(v)


def _summary_rows(rep: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) of the report's summary, shared by Markdown and HTML (texts not yet escaped)."""
    run = rep["run"]
    tok = run.get("tokens") or {}
    dur, budget = run.get("duration_s"), run.get("timeout_s")
    used = f" ({100 * dur / budget:.0f} % of the budget)" if dur is not None and budget else ""
    cost = "–" if run.get("cost_usd") is None else f"${run['cost_usd']:.2f}"
    if run.get("stated_cost_usd") is not None:
        cost += f" (the transcript states ${run['stated_cost_usd']:.2f})"
    task = str(run.get("task_id"))
    if run.get("task_name") and run.get("task_name") != run.get("task_id"):
        task += f" ({run['task_name']})"
    if run.get("task_category"):
        task += f", {run['task_category']}"
    return [
        ("run", str(run["run_key"]) + ("  [sample]" if run.get("is_sample") else "")),
        ("task", task),
        ("agent, model", f"{run.get('agent') or '–'}, {run.get('model') or '–'}"),
        (
            "status",
            str(run.get("status")) + (f": {run['status_reason']}" if run.get("status_reason") else ""),
        ),
        ("started, ended", f"{_fmt_time(run.get('started_at'))} → {_fmt_time(run.get('ended_at'))}"),
        ("duration / budget", f"{_fmt_el(dur)} / {_fmt_el(budget) if budget else 'none'}{used}"),
        (
            "best",
            f"{_best_text(run)} ({run.get('best_round') or '–'}); selection {run.get('selection')}, "
            f"{run.get('score_direction')}"
            + ("; the round SForge selects is invalid" if run.get("best_invalid") else ""),
        ),
        (
            "submissions",
            f"{run.get('agent_submissions') or 0} agent, {run.get('auto_submissions') or 0} auto-eval; "
            f"{len(rep['curve'])} valid graded, {len(rep.get('invalid_rounds', []))} invalid; "
            f"{len(rep.get('new_bests', []))} new bests",
        ),
        (
            "tokens",
            f"{_fmt_tokens(tok.get('total'))} ({_fmt_tokens(tok.get('input'))} in, {_fmt_tokens(tok.get('output'))} out, "
            f"{_fmt_tokens(tok.get('cache_read'))} cache read, {_fmt_tokens(tok.get('cache_write'))} cache write)",
        ),
        ("cost", cost),
        ("events", f"{run.get('n_events') or 0} events, {run.get('n_tool_calls') or 0} tool calls"),
        (
            "SForge",
            f"format {run.get('format') or '–'}; work image {run.get('work_image') or '–'}, "
            f"judge image {run.get('judge_image') or '–'}",
        ),
        ("trajectory metrics", _trajectory_text(run.get("trajectory_metrics"))),
        (
            "invalid rounds",
            ", ".join(f"{r['round']} ({r['reason']})" for r in rep.get("invalid_rounds", [])) or "none",
        ),
        (
            "moments",
            f"{len(rep['moments'])} reframing; other detectors: "
            + ", ".join(f"{k} {v}" for k, v in rep["other_moments"].items()),
        ),
    ]


def _new_best_rows(rep: dict[str, Any]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for b in rep.get("new_bests", []):
        tests = "–" if b.get("total_tests") is None else f"{b.get('passed') or 0}/{b['total_tests']}"
        out.append(
            (
                str(b["round"]),
                _fmt_el(b["elapsed_s"]),
                _num(b["value"]),
                "–" if b["gain"] is None else f"+{b['gain']:.4g}",
                _num(b.get("score")),
                "–" if b.get("pass_rate") is None else f"{100 * b['pass_rate']:.1f}%",
                tests,
            )
        )
    return out


_NEW_BEST_HEAD = ("round", "elapsed", "best", "gain", "raw score", "pass rate", "tests passed")
_TEST_HEAD = ("test", "status", "score", "weight", "message")


def _test_rows(rep: dict[str, Any]) -> list[tuple[str, ...]]:
    return [
        (
            str(t.get("name") or "–"),
            str(t.get("status") or "–"),
            _num(t.get("score")),
            _num(t.get("weight")),
            str(t.get("message") or ""),
        )
        for t in rep.get("best_tests", {}).get("tests", [])
    ]


# ---------------------------------------------------------------------------- Markdown


def _md(s: Any) -> str:
    """Run text for Markdown outside code: one line, control characters escaped, markup as text."""
    return html.escape(visible(str(s)), quote=False).replace("|", "\\|").replace("`", "\\`").replace("*", "\\*")


def _md_table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
    return out


def _fence(lines: list[str]) -> str:
    """A code fence longer than any run of backticks in ``lines`` (so no line of them closes it)."""
    n = 3
    for ln in lines:
        k = 0
        for ch in ln:
            k = k + 1 if ch == "`" else 0
            n = max(n, k + 1)
    return "`" * n


def to_markdown(rep: dict[str, Any]) -> str:
    run = rep["run"]
    L = [f"# Run report: {_md(run['run_id'])} / {_md(run['task_id'])}", ""]
    L += _md_table(("", ""), [(k, v) for k, v in _summary_rows(rep)])
    pts = _chart_bounds(rep)
    L += [
        "",
        f"## Best so far ({rep['unit']}, over elapsed time)",
        "",
        "```",
    ]
    L += text_chart(rep["curve"], {m["round"] for m in rep["moments"]}, x_max_h=pts[1])
    L += ["```", "", "## New bests", ""]
    nb = _new_best_rows(rep)
    L += _md_table(_NEW_BEST_HEAD, nb) if nb else ["None."]
    bt = rep.get("best_tests") or {}
    L += ["", f"## Tests of the best submission ({_md(bt.get('round') or '–')})", ""]
    tr = _test_rows(rep)
    L += _md_table(_TEST_HEAD, tr) if tr else ["No per-test results recorded."]
    L += ["", "## Reframing moments", ""]
    if not rep["moments"]:
        L += ["None found.", ""]
    for m in rep["moments"]:
        w = m["why"]
        gain = f"Gain {m['gain']:.4g}" + (f" (noise {m['noise']:.3g})" if m.get("noise") else "")
        L += [
            f"### {_md(m['round'])} at {_fmt_el(m['elapsed_s'])}: {m['before']:g} → {m['after']:g}",
            "",
            f"{gain}; lead time {_fmt_el(m['lead_time_s'])}; confidence {m['confidence']:.2f}"
            + ("; provisional" if m["provisional"] else "")
            + ".",
            "",
        ]
        if m["components"]:
            L.append(
                "Sub-scores that moved: "
                + ", ".join(f"{_md(k)} {a:g} → {b:g}" for k, (a, b) in m["components"].items())
                + "."
            )
            L.append("")
        L.append(f"What the agent did since {_md(w.get('prev_round') or 'the start')}:")
        L.append("")
        for k, a in w["actions"].items():
            L.append(f"- {_md(k)}: {a['n']}")
        notes = w["notes"]
        for key, title in (("thinking", "Its thinking"), ("messages", "Its last messages")):
            if notes.get(key):
                L += ["", f"{title}:", ""]
                for n in notes[key]:
                    L += ["> " + _md(line) for line in visible_lines(n["text"].strip()).split("\n")] + [""]
        if notes.get("analysis"):
            body = visible_lines(notes["analysis"].rstrip()).split("\n")
            f = _fence(body)
            L += ["", "analysis.md:", "", f] + body + [f]
        d = w.get("diff")
        if d:
            L += [
                "",
                f"Code: submission.tar.gz against {_md(d.get('against') or 'nothing')}"
                + (f": {_md(d['error'])}" if d.get("error") else ""),
                "",
            ]
            for fd in d["files"]:
                body = [visible(x) for x in fd["lines"]]
                f = _fence(body)
                L += [f + "diff"] + body + [f]
        L.append("")
    L += ["## Annotations", ""]
    if not rep["annotations"]:
        L.append("None.")
    else:
        L += ["| where | elapsed | label | note |", "|---|---|---|---|"]
        for a in rep["annotations"]:
            label = f"**{_md(a['label'])}**" if a.get("label") else "–"
            where = _md(a.get("round") or a["event_id"])
            L.append(f"| {where} | {_fmt_el(a.get('elapsed_s'))} | {label} | {_md(a.get('text') or '')} |")
    return "\n".join(L) + "\n"


# ---------------------------------------------------------------------------- HTML


def _e(v: Any) -> str:
    """Run text for HTML: one line, control characters escaped, markup as text."""
    return html.escape(visible(str(v)))


def _e_lines(v: Any) -> str:
    """Run text for HTML keeping its lines (in a ``<pre>`` or ``white-space: pre-wrap``)."""
    return html.escape(visible_lines(str(v)))


#: the chart's colours (also its legend's)
_C_BEST, _C_AGENT, _C_AUTO, _C_MOMENT, _C_NOTE, _C_BUDGET = (
    "#1f7a1f",
    "#b8860b",
    "#8c8c8c",
    "#b000b0",
    "#1f5fbf",
    "#c03030",
)


def _svg(rep: dict[str, Any], w: int = 760, h: int = 330) -> str:
    """The best-so-far chart: gridlines with value and elapsed-time ticks, every graded submission
    (agent and auto-eval apart), the best-so-far step line, ◆ each new best, ✦ the reframing moments,
    ✎ the annotated rounds, the budget's end, and a legend."""
    pts, x_max, budget, lo, hi = _chart_bounds(rep)
    if not pts:
        return "<p>Nothing graded.</p>"
    yt = _value_ticks(lo, hi)
    lo, hi = min([lo] + yt), max([hi] + yt)
    left, right, top, bottom = 56, 18, 44, 48

    def X(x: float) -> float:
        return left + x / x_max * (w - left - right)

    def Y(v: float) -> float:
        return h - bottom - (v - lo) / (hi - lo) * (h - top - bottom)

    parts = []
    for v in yt:  # horizontal gridlines and value labels
        parts.append(
            f'<line x1="{left}" y1="{Y(v):.1f}" x2="{w - right}" y2="{Y(v):.1f}" stroke="#e4e4e4"/>'
            f'<text x="{left - 6}" y="{Y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:g}</text>'
        )
    ticks = elapsed_ticks(x_max * 3600.0)
    for t, label in ticks:  # vertical gridlines and elapsed labels
        x = X(t / 3600.0)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{h - bottom}" stroke="#f0f0f0"/>'
            f'<line x1="{x:.1f}" y1="{h - bottom}" x2="{x:.1f}" y2="{h - bottom + 4}" stroke="#888"/>'
            f'<text x="{x:.1f}" y="{h - bottom + 16}" font-size="11" text-anchor="middle">{label}</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="#888"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="#888"/>'
    )
    unit = "m:ss" if x_max * 3600 < 600 else "h:mm"
    parts.append(
        f'<text x="{(left + w - right) / 2:.1f}" y="{h - 10}" font-size="12" text-anchor="middle">'
        f"elapsed ({unit})</text>"
        f'<text x="14" y="{(top + h - bottom) / 2:.1f}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {(top + h - bottom) / 2:.1f})">{html.escape(rep["unit"])}</text>'
    )
    if budget:
        xb = X(budget)
        parts.append(
            f'<line x1="{xb:.1f}" y1="{top}" x2="{xb:.1f}" y2="{h - bottom}" stroke="{_C_BUDGET}" '
            f'stroke-dasharray="4 3"/>'
        )
    for x, _, v, r, kind in pts:  # every graded submission
        if v is not None:
            c = _C_AUTO if kind == "auto" else _C_AGENT
            parts.append(f'<circle cx="{X(x):.1f}" cy="{Y(v):.1f}" r="2" fill="{c}"><title>{_e(r)}</title></circle>')
    line, prev = [], None
    for x, b, _, _, _ in pts:
        if prev is not None:
            line.append(f"{X(x):.1f},{Y(prev):.1f}")
        line.append(f"{X(x):.1f},{Y(b):.1f}")
        prev = b
    end_h = max(pts[-1][0], ((rep["run"].get("duration_s") or 0) / 3600.0))
    if prev is not None and end_h > pts[-1][0]:
        line.append(f"{X(end_h):.1f},{Y(prev):.1f}")
    parts.append(f'<polyline fill="none" stroke="{_C_BEST}" stroke-width="2" points="{" ".join(line)}"/>')
    mr = {m["round"] for m in rep["moments"]}
    for x, b, _, r, _ in pts:
        nb = any(c["round"] == r and c.get("new_best") for c in rep["curve"])
        if r in mr:
            parts.append(
                f'<text x="{X(x):.1f}" y="{Y(b) - 5:.1f}" fill="{_C_MOMENT}" font-size="15" text-anchor="middle">'
                f"✦<title>{_e(r)}</title></text>"
            )
        elif nb:
            parts.append(
                f'<text x="{X(x):.1f}" y="{Y(b) + 4:.1f}" fill="{_C_BEST}" font-size="10" text-anchor="middle">'
                f"◆<title>{_e(r)}</title></text>"
            )
    by_round = {p[3]: p for p in pts}
    for a in rep["annotations"]:
        p = by_round.get(a.get("round"))
        if p is not None:
            parts.append(
                f'<text x="{X(p[0]):.1f}" y="{Y(p[1]) - 18:.1f}" fill="{_C_NOTE}" font-size="12" '
                f'text-anchor="middle">✎<title>{_e(a.get("label") or "")} {_e(a.get("text") or "")}</title></text>'
            )
    legend = [
        (f'<line x1="0" y1="-4" x2="18" y2="-4" stroke="{_C_BEST}" stroke-width="2"/>', "best so far"),
        (f'<text x="9" y="0" fill="{_C_BEST}" font-size="10" text-anchor="middle">◆</text>', "new best"),
        (f'<text x="9" y="1" fill="{_C_MOMENT}" font-size="14" text-anchor="middle">✦</text>', "reframing moment"),
        (f'<circle cx="9" cy="-4" r="2.5" fill="{_C_AGENT}"/>', "agent submission"),
        (f'<circle cx="9" cy="-4" r="2.5" fill="{_C_AUTO}"/>', "auto-eval"),
        (f'<text x="9" y="0" fill="{_C_NOTE}" font-size="12" text-anchor="middle">✎</text>', "annotation"),
    ]
    if budget:
        legend.append((f'<line x1="0" y1="-4" x2="18" y2="-4" stroke="{_C_BUDGET}" stroke-dasharray="4 3"/>', "budget"))
    x, leg = left, []
    for mark, label in legend:
        leg.append(f'<g transform="translate({x},18)">{mark}<text x="22" y="0" font-size="11">{label}</text></g>')
        x += 30 + 6.2 * len(label)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="best so far over elapsed time">{"".join(leg)}{"".join(parts)}</svg>'
    )


def _html_diff(lines: list[str]) -> str:
    """A unified diff with its added, removed and hunk lines coloured."""
    out = []
    for ln in lines:
        cls = (
            "h"
            if ln.startswith(("+++", "---"))
            else "a"
            if ln.startswith("+")
            else "d"
            if ln.startswith("-")
            else "u"
            if ln.startswith("@@")
            else ""
        )
        out.append(f'<span class="{cls}">{_e(ln)}</span>' if cls else _e(ln))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def _html_table(
    head: tuple[str, ...], rows: Sequence[tuple[str, ...]], cls: str = "", row_cls=None, widths: tuple[int, ...] = ()
) -> str:
    """A table with a fixed layout (``widths``: percentages of the page's width, else equal): however
    long a run's text, it wraps inside its cell and never pushes the table past the page's edge."""
    ws = widths or tuple(round(100 / len(head)) for _ in head)
    cols = "<colgroup>" + "".join(f'<col style="width:{w}%">' for w in ws) + "</colgroup>"
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join(
        f"<tr{f' class={chr(34)}{row_cls(r)}{chr(34)}' if row_cls and row_cls(r) else ''}>"
        + "".join(f"<td>{_e(c)}</td>" for c in r)
        + "</tr>"
        for r in rows
    )
    return f'<table class="fixed {cls}">{cols}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


#: print and screen layout: nothing a reader needs is cut at a page's edge (a chart, a table's
#: row, a moment's heading with its first lines move whole to the next page; tables repeat their
#: heading), long lines wrap instead of running off the page's side
_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:62em;margin:2em auto;color:#222;
  line-height:1.4;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0;width:100%}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f4f4f4}table.fixed{table-layout:fixed}table.fixed td,table.summary td{overflow-wrap:anywhere}
table.summary td:first-child{white-space:nowrap;color:#555;width:11em}
tr.pass td:nth-child(2){color:#1f7a1f;font-weight:600}tr.fail td:nth-child(2){color:#c03030;font-weight:600}
pre{background:#f6f6f6;padding:.5em;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.85em}
pre.diff .a{background:#e6ffec;color:#116329}pre.diff .d{background:#ffebe9;color:#82071e}
pre.diff .u{color:#0550ae}pre.diff .h{color:#555;font-weight:600}
blockquote{border-left:3px solid #ccc;margin:.5em 0;padding-left:.8em;color:#444;white-space:pre-wrap}
figure{margin:1em 0}figure svg{max-width:100%;height:auto}
figcaption{font-size:.85em;color:#555}
section.moment{border-top:1px solid #eee;margin-top:1em}
@page{size:A4;margin:14mm}
@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}h2{break-after:avoid}}
figure,table.summary,table.small,tr,blockquote,.keep{break-inside:avoid;page-break-inside:avoid}
h2,h3,.moment-head{break-after:avoid;page-break-after:avoid}
thead{display:table-header-group}
"""


def to_html(rep: dict[str, Any]) -> str:
    """One self-contained HTML file: inline CSS and SVG, no script, nothing fetched; laid out for
    print (`edgetui report --format pdf`)."""
    e = _e
    run = rep["run"]
    sections = []
    for m in rep["moments"]:
        w = m["why"]
        acts = "".join(f"<li>{e(k)}: {a['n']}</li>" for k, a in w["actions"].items())
        notes = ""
        for key, title in (("thinking", "Its thinking"), ("messages", "Its last messages")):
            if w["notes"].get(key):
                notes += f"<p>{title}:</p>" + "".join(
                    f"<blockquote>{_e_lines(n['text'].strip())}</blockquote>" for n in w["notes"][key]
                )
        if w["notes"].get("analysis"):
            notes += f"<p>analysis.md:</p><pre>{_e_lines(w['notes']['analysis'].rstrip())}</pre>"
        diff = ""
        d = w.get("diff")
        if d:
            diff = (
                f"<p>Code: submission.tar.gz against {e(d.get('against') or 'nothing')}"
                + (f": {e(d['error'])}" if d.get("error") else "")
                + "</p>"
            )
            diff += "".join(_html_diff(f["lines"]) for f in d["files"])
        comps = ", ".join(f"{e(k)} {a:g} → {b:g}" for k, (a, b) in (m["components"] or {}).items())
        sections.append(
            f'<section class="moment"><div class="moment-head keep"><h3>{e(m["round"])} at '
            f"{_fmt_el(m['elapsed_s'])}: {m['before']:g} → {m['after']:g}</h3>"
            f"<p>gain {m['gain']:.4g}; lead time {_fmt_el(m['lead_time_s'])}; confidence {m['confidence']:.2f}"
            f"{'; provisional' if m['provisional'] else ''}</p>"
            + (f"<p>Sub-scores that moved: {comps}</p>" if comps else "")
            + f"<p>What the agent did since {e(w.get('prev_round') or 'the start')}:</p><ul>{acts}</ul></div>"
            f"{notes}{diff}</section>"
        )
    summary = "".join(f"<tr><td>{html.escape(k)}</td><td>{e(v)}</td></tr>" for k, v in _summary_rows(rep))
    nb = _new_best_rows(rep)
    tests = _test_rows(rep)
    bt = rep.get("best_tests") or {}

    def test_cls(r: tuple[str, ...]) -> str:
        st = r[1].upper()
        return "pass" if st in ("PASSED", "PASS", "OK") else "fail" if st in ("FAILED", "FAIL", "ERROR") else ""

    ann_rows = [
        (
            str(a.get("round") or a["event_id"]),
            _fmt_el(a.get("elapsed_s")),
            str(a.get("label") or ""),
            str(a.get("text") or ""),
        )
        for a in rep["annotations"]
    ]
    n_small = 40  # tables up to this many rows move whole to the next page; longer ones split between rows
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>Run report: {e(run["run_id"])} / {e(run["task_id"])}</title>
<style>{_CSS}</style></head><body>
<h1>Run report: {e(run["run_id"])} / {e(run["task_id"])}</h1>
<table class="summary">{summary}</table>
<h2>Best so far ({html.escape(rep["unit"])})</h2>
<figure>{_svg(rep)}<figcaption>Each graded submission at the time its result was known; the line is the best
so far under the task's selection policy.</figcaption></figure>
<h2>New bests</h2>
{_html_table(_NEW_BEST_HEAD, nb, "small" if len(nb) <= n_small else "") if nb else "<p>None.</p>"}
<h2>Tests of the best submission ({e(bt.get("round") or "–")})</h2>
{
        _html_table(_TEST_HEAD, tests, "small" if len(tests) <= n_small else "", test_cls, (27, 11, 9, 11, 42))
        if tests
        else "<p>No per-test results recorded.</p>"
    }
<h2>Reframing moments</h2>
{"".join(sections) or "<p>None found.</p>"}
<h2>Annotations</h2>
{
        _html_table(
            ("where", "elapsed", "label", "note"),
            ann_rows,
            "small" if len(ann_rows) <= n_small else "",
            widths=(22, 12, 16, 50),
        )
        if ann_rows
        else "<p>None.</p>"
    }
</body></html>
"""
