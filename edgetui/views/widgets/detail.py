"""Detail pane of the selected event: tool input and output, thinking, a submission's report.

:func:`render_detail` turns the detail dict the replay screen loads (see
:meth:`edgetui.views.screens.replay.ReplayScreen`) into Rich renderables; the widget
only displays it. Long texts are cut at :data:`MAX_CHARS` with a note.
"""

from __future__ import annotations

from typing import Any, Optional

import orjson
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from edgetui.views.widgets.fmt import (
    finite,
    fmt_count,
    fmt_elapsed,
    fmt_pct,
    fmt_score,
    fmt_usd,
    fmt_utc,
    kind_label,
    kind_style,
)
from edgetui.control_chars import visible, visible_lines
from edgetui.replay.invalid_rounds import invalid_reason

__all__ = ["EventDetail", "render_detail", "MAX_CHARS"]

MAX_CHARS = 12_000
MAX_TESTS = 40
_TEXT_KEYS = ("text", "content", "thinking", "result", "message", "output")
_PASS = {"passed", "pass", "ok", "success", "succeeded"}


def _cut(s: str, limit: int = MAX_CHARS) -> tuple[str, int]:
    if len(s) <= limit:
        return s, 0
    return s[:limit], len(s) - limit


def _section(title: str, style: str = "bold") -> Text:
    t = Text()
    t.append(f"── {title} ", style=style)
    return t


def _json_text(v: Any) -> str:
    try:
        return orjson.dumps(v, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
    except TypeError:
        return str(v)


def _code(s: str, lexer: str) -> list[RenderableType]:
    body, more = _cut(s)
    body = visible_lines(body)
    out: list[RenderableType] = [Syntax(body, lexer, theme="ansi_dark", word_wrap=True, background_color="default")]
    if more:
        out.append(Text(f"… {more:,} more characters", style="dim italic"))
    return out


def _plain(s: str, style: str = "") -> list[RenderableType]:
    body, more = _cut(s)
    out: list[RenderableType] = [Text(visible_lines(body), style=style)]
    if more:
        out.append(Text(f"… {more:,} more characters", style="dim italic"))
    return out


def _input_parts(inp: Any) -> list[RenderableType]:
    if isinstance(inp, dict):
        cmd = inp.get("command")
        rest = {k: v for k, v in inp.items() if k != "command"}
        out: list[RenderableType] = []
        if isinstance(cmd, str):
            out += _code(cmd, "bash")
        if rest:
            # file edits read better as text than as escaped JSON
            for k in ("content", "new_string", "old_string", "prompt"):
                if isinstance(rest.get(k), str) and "\n" in rest[k]:
                    out.append(Text(f"{k}:", style="dim"))
                    out += _plain(rest.pop(k))
            if rest:
                out += _code(_json_text(rest), "json")
        return out
    if isinstance(inp, str):
        return _plain(inp)
    return _code(_json_text(inp), "json") if inp is not None else [Text("(no input)", style="dim")]


def _text_of(data: dict[str, Any]) -> Optional[str]:
    for k in _TEXT_KEYS:
        v = data.get(k)
        if isinstance(v, str) and v:
            return v
    return None


#: where a graded row's time comes from (``data.known_by``: sforge_dir.result_known_time), in words
_KNOWN_BY = {
    "evolve_state": "agent saw it (evolve at)",
    "judge_log": "judge's Result: line",
    "report_mtime": "report.json mtime",
    "submitted_at+runtime": "≈ submitted + runtime",
}


def _report(sub: dict[str, Any], tests: Optional[list[dict[str, Any]]], data: dict[str, Any]) -> list[RenderableType]:
    g = lambda k: sub.get(k) if sub.get(k) is not None else data.get(k)
    out: list[RenderableType] = [_section("Submission report", "bold green")]
    t = Table.grid(padding=(0, 2))
    t.add_column(style="dim", no_wrap=True)
    t.add_column()
    t.add_row(
        "round",
        Text(visible(str(sub.get("round") or data.get("round") or "?")), style="bold").append(
            visible(f"  {g('kind') or ''}  {g('status') or ''}"), style="dim"
        ),
    )
    t.add_row("pass rate", Text(fmt_pct(g("pass_rate")), style="bold"))
    sc = Text(fmt_score(g("score")), style="bold")
    if g("score_flag"):
        sc.append(visible(f" ({g('score_flag')})"), style="red")
    if g("score_0_100") is not None:
        sc.append(f"   rescaled {fmt_score(g('score_0_100'))}/100", style="dim")
    t.add_row("score", sc)
    tot = g("total_tests")
    if tot is not None or g("passed") is not None:
        tt = Text(f"{g('passed') or 0} passed", style="green")
        tt.append(f" · {g('failed') or 0} failed", style="red" if g("failed") else "dim")
        tt.append(f" · {g('errors') or 0} errors", style="red" if g("errors") else "dim")
        if tot is not None:
            tt.append(f"  of {tot}", style="dim")
        t.add_row("tests", tt)
    if g("valid") is not None:
        t.add_row("valid", Text("yes" if g("valid") else "no", style="" if g("valid") else "bold red"))
    if g("timed_out"):
        t.add_row("timed out", Text("yes", style="bold red"))
    if g("runtime_s") is not None:
        t.add_row("runtime", Text(fmt_elapsed(g("runtime_s"))))
    known = _KNOWN_BY.get(data.get("known_by") or "")
    if known:  # the graded row sits when the result was known; the submission went out earlier
        kt = Text(known)
        sent, at = g("submitted_at"), sub.get("t")
        if isinstance(sent, (int, float)) and isinstance(at, (int, float)) and at >= sent:
            kt.append(f" · sent {fmt_elapsed(at - sent)} before", style="dim")
        t.add_row("known", kt)
    if sub:
        nb = Text(
            "★ new best" if sub.get("is_new_best") else "no",
            style="bold bright_yellow" if sub.get("is_new_best") else "dim",
        )
        t.add_row("new best", nb)
        if (
            sub.get("kind") == "manual"
        ):  # `sforge eval` rounds: SForge's visualizer skips them (docs/sforge-run-folders.md §4.1)
            t.add_row("best so far", Text("not counted (a manual submission)", style="dim"))
        elif invalid_reason(sub) is not None:  # (docs/sforge-formats.md, "Invalid rounds")
            t.add_row("best so far", Text(f"invalid round ({invalid_reason(sub)}): no point of the curve", style="dim"))
        else:
            bs, bp = sub.get("best_score"), sub.get("best_pass_rate")
            # a pass-rate task: SForge stores the pass rate as best_score (no score of its own)
            passrate_only = bs is None or (bp is not None and abs(float(bs) - float(bp)) < 1e-12)
            t.add_row(
                "best so far",
                Text(
                    (f"pass {fmt_pct(bp)}" if passrate_only else f"{fmt_score(bs)} · pass {fmt_pct(bp)}")
                    + visible(f" ({sub.get('best_round') or '–'})")
                ),
            )
    err = g("error")
    if err:
        t.add_row("error", Text(visible_lines(str(err)), style="red"))
    if g("summary"):
        t.add_row("summary", Text(visible_lines(str(g("summary")))))
    out.append(t)
    failing = [x for x in (tests or []) if str(x.get("status") or "").lower() not in _PASS]
    if tests is not None:
        if failing:
            out.append(_section(f"Failing tests ({len(failing)} of {len(tests)})", "bold red"))
            shown = failing[:MAX_TESTS]
            messages = any(x.get("message") for x in shown)
            ft = Table(box=None, show_header=False, padding=(0, 1), expand=True)
            ft.add_column(style="red", no_wrap=True, ratio=3)
            ft.add_column(style="dim", no_wrap=True)
            if messages:  # (without any, the names get the whole width)
                ft.add_column(ratio=2, overflow="fold")
            for x in shown:
                cells = [Text(visible(str(x.get("name") or "?"))), Text(visible(str(x.get("status") or "")))]
                ft.add_row(*cells, *([Text(visible_lines(str(x.get("message") or "")))] if messages else []))
            out.append(ft)
            if len(failing) > MAX_TESTS:
                out.append(Text(f"… {len(failing) - MAX_TESTS} more failing", style="dim italic"))
        elif tests:
            out.append(Text(f"all {len(tests)} tests passed", style="green"))
    elif data.get("failing"):
        out.append(_section(f"Failing tests ({data.get('n_failing') or len(data['failing'])})", "bold red"))
        out.append(Text("\n".join(visible(str(f)) for f in data["failing"][:MAX_TESTS]), style="red"))
    return out


def render_detail(detail: Optional[dict[str, Any]]) -> RenderableType:
    """Renderable for a detail dict: ``event`` (row of :func:`edgetui.store.queries.event_detail`),
    ``elapsed``, ``pair`` (other events of the same tool call), ``submission`` and ``tests``;
    ``folded`` = (k, n) when the event is the k-th of a row of n folded metadata events;
    ``annotations``: the user's annotations of the event (:func:`edgetui.record.annotations.list_annotations` rows)."""
    if not detail or not detail.get("event"):
        return Text("no event selected", style="dim")
    ev: dict[str, Any] = detail["event"]
    data: dict[str, Any] = ev.get("data") or {}
    kind = ev.get("kind") or "?"
    parts: list[RenderableType] = []

    title = Text()
    title.append(kind_label(kind), style=(kind_style(kind) or "bold") + " bold")
    title.append(f"  {fmt_elapsed(detail.get('elapsed'))}", style="bold")
    title.append(f"  {fmt_utc(ev.get('t'))}", style="dim")
    if ev.get("t_source"):
        title.append(visible(f" ({ev['t_source']})"), style="dim")
    parts.append(title)
    lo, hi = finite(ev.get("t_lo")), finite(ev.get("t_hi"))
    if lo is not None or hi is not None:  # placed in a gap between anchors: how far it may be off
        if lo is not None and hi is not None:
            gap = Text(f"  somewhere in {fmt_utc(lo)[11:]}–{fmt_utc(hi)[11:]} ({hi - lo:,.0f} s without an anchor)")
        else:
            gap = Text(f"  somewhere after {fmt_utc(lo)[11:]}" if lo is not None else f"  before {fmt_utc(hi)[11:]}")
        gap.stylize("dim")
        parts.append(gap)
    for a in detail.get("annotations") or []:  # the user's notes on this event (L adds / edits)
        note = Text("✎ ", style="bold magenta")
        note.append(visible(str(a.get("label") or "note")), style="bold magenta")
        if a.get("text"):
            note.append(visible_lines(f": {a['text']}"))
        if a.get("author"):
            note.append(visible(f"  ({a['author']})"), style="dim")
        parts.append(note)
    if detail.get("folded"):
        k, n = detail["folded"]
        parts.append(Text(f"┄ metadata event {k} of the {n:,} folded in this row (z shows them)", style="dim"))
    meta = []
    for k in ("tool_name", "round", "model", "segment", "level"):
        if ev.get(k) is not None:
            meta.append(f"{k.replace('_', ' ')} {ev[k]}")
    if ev.get("parent_tool_use_id"):
        meta.append(f"subagent of {ev['parent_tool_use_id']}")
    # where the record is: file and byte offset (the event's index within its record, or the index
    # past a file's end that a parser's finish() uses, is internal: never shown)
    meta.append(f"{ev.get('source')}@{ev.get('offset')}")
    parts.append(Text(visible("  ·  ".join(meta)), style="dim"))
    if ev.get("is_error"):
        parts.append(Text("✗ error", style="bold red"))
    if ev.get("summary"):
        parts.append(Text(visible_lines(str(ev["summary"])), style="italic"))

    used: set[str] = set()
    pair = detail.get("pair") or []
    if kind == "tool_call":
        parts.append(_section("Input", "bold cyan"))
        parts += _input_parts(data.get("input"))
        used.add("input")
        for r in pair:
            if r.get("kind") == "tool_result":
                rd = r.get("data") or {}
                parts.append(
                    _section(
                        "Output" + (" (error)" if r.get("is_error") else ""),
                        "bold red" if r.get("is_error") else "bold",
                    )
                )
                parts += _plain(_text_of(rd) or _json_text(rd), "red" if r.get("is_error") else "")
                if rd.get("submit_result"):
                    parts += _code(_json_text(rd["submit_result"]), "json")
    elif kind == "tool_result":
        for c in pair:
            if c.get("kind") == "tool_call":
                parts.append(_section(visible(f"Call {c.get('tool_name') or ''}".rstrip()), "bold cyan"))
                parts += _input_parts((c.get("data") or {}).get("input"))
        parts.append(
            _section(
                "Output" + (" (error)" if ev.get("is_error") else ""), "bold red" if ev.get("is_error") else "bold"
            )
        )
        txt = _text_of(data)
        parts += _plain(txt if txt is not None else "(empty)", "red" if ev.get("is_error") else "")
        used.update(_TEXT_KEYS)
    elif kind in ("judge_result", "game_result"):
        parts += _report(detail.get("submission") or {}, detail.get("tests"), data)
        used.update(data.keys())
    else:
        txt = _text_of(data)
        if txt is not None and " ".join(txt.split()) == " ".join(str(ev.get("summary") or "").split()):
            used.update(_TEXT_KEYS)  # a one-line text already shown whole as the summary
        elif txt is not None:
            label = {"thinking": "Thinking", "agent_message": "Message", "user_message": "User"}.get(kind, "Text")
            parts.append(_section(label, "bold magenta" if kind == "thinking" else "bold"))
            parts += _plain(txt, "italic" if kind == "thinking" else "")
            used.update(_TEXT_KEYS)

    toks = [(k, ev.get(f"{k}_tokens")) for k in ("input", "output", "cache_read", "cache_write")]
    if any(v is not None for _, v in toks) or ev.get("stated_cost_usd") is not None:
        names = {"input": "in", "output": "out", "cache_read": "cache read", "cache_write": "cache write"}
        tk = Text(" · ".join(f"{names[k]} {fmt_count(v or 0)}" for k, v in toks))
        if ev.get("model"):
            tk.append(visible(f"  ({ev['model']})"), style="dim")
        if ev.get("stated_cost_usd") is not None:
            tk.append(f"  stated {fmt_usd(ev['stated_cost_usd'])}", style="yellow")
        parts.append(_section("Token use", "bold yellow"))
        parts.append(tk)

    rest = {k: v for k, v in data.items() if k not in used and k not in ("uuid", "record")}
    if rest:
        parts.append(_section("Data", "dim bold"))
        parts += _code(_json_text(rest), "json")
    raw = ev.get("raw")
    if raw:
        parts.append(_section(f"Raw bytes ({len(raw):,})", "bold red"))
        parts += _plain(bytes(raw).decode("utf-8", "replace"), "dim")
    return Group(*parts)


class EventDetail(VerticalScroll):
    """Scrollable detail pane; :meth:`show` replaces its content."""

    ALLOW_MAXIMIZE = True

    DEFAULT_CSS = """
    EventDetail { background: $surface; padding: 0 1; scrollbar-size-vertical: 1; }
    EventDetail > Static { width: 1fr; }
    """

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.detail: Optional[dict[str, Any]] = None

    def compose(self):
        yield Static(Text("no event selected", style="dim"), id="detail-body")

    def show(self, detail: Optional[dict[str, Any]]) -> None:
        self.detail = detail
        self.query_one("#detail-body", Static).update(render_detail(detail))
        self.scroll_home(animate=False)
