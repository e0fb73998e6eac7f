"""Run header: run id, task, model, status, best score, duration, a live run's forecast, tokens,
dollars.

Renders the header dict of :func:`edgetui.store.queries.run_header` (no I/O). Text
wraps between fields, never inside one, so nothing is cut at 80 columns.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Text
from textual.widget import Widget

from edgetui.views.widgets.fmt import STATUS_STYLE, fmt_count, fmt_hours, fmt_pct, fmt_score, fmt_usd, prior_note
from edgetui.control_chars import visible
from edgetui.quantities import lower_is_better
from edgetui.replay.cursor import format_elapsed

SEP = "  "


def _fields(head: dict[str, Any], compact: bool, narrow: bool = False) -> tuple[list[Text], list[Text]]:
    """(identity fields, figures fields) as separate Texts, wrapped as units (``narrow``: below 60
    columns, where the trajectory metrics give way to the events)."""
    ident: list[Text] = []
    run = Text()
    run.append("▍", style="bold bright_magenta")
    run.append(visible(str(head.get("run_id") or "?")), style="bold")
    host = head.get("host")
    if host and host != "local":
        run.append(f" @{visible(str(host))}", style="dim")
    ident.append(run)
    task = Text(visible(str(head.get("task_id") or "?")), style="bold cyan")
    name = head.get("task_name")
    if name and not compact and name != head.get("task_id"):
        task.append(f" · {visible(str(name))}", style="cyan")
    ident.append(task)
    model = head.get("model")
    agent = head.get("agent")
    if model or agent:
        m = Text(visible(str(model or agent)), style="")
        if agent and model and not compact:
            m.append(f" ({visible(str(agent))})", style="dim")
        ident.append(m)
    status = head.get("status") or "unknown"
    st = Text("● ", style=STATUS_STYLE.get(status, "dim"))
    st.append(visible(str(status)), style=STATUS_STYLE.get(status, ""))
    if head.get("is_sample"):
        st.append(" sample", style="dim italic")
    for flag in head.get("transcript_flags") or []:  # incomplete / interrupted / error / api-errors-only
        st.append(f" {visible(str(flag))}", style="bold red" if flag in ("error", "api-errors-only") else "bold yellow")
    ident.append(st)

    figs: list[Text] = []
    best = Text("best ", style="dim")
    score_task = head.get("score_task")
    if score_task or (score_task is None and head.get("best_score") is not None):
        best.append(fmt_score(head.get("best_score")), style="bold green")
        if lower_is_better(head):  # a minimised score (a route's length): said beside it
            best.append(" (↓ lower is better)", style="yellow")
        if head.get("best_pass_rate") is not None:
            best.append(f" pass {fmt_pct(head.get('best_pass_rate'))}", style="green")
    else:  # a pass-rate task: SForge stores the pass rate as best_score when the task has no score
        best.append(fmt_pct(head.get("best_pass_rate")), style="bold green")
    if head.get("best_round"):
        best.append(f" ({head['best_round']})", style="dim")
    if head.get("best_invalid"):  # SForge's selection picked an invalid round (replay/invalid_rounds.py)
        best.append(" invalid round", style="bold yellow")
    figs.append(best)
    dur = duration_text(head, compact)
    traj = None if narrow else trajectory_text(head.get("trajectory_metrics"), compact)
    if traj is not None:  # after the status (a short line when narrow); see header_text
        ident.append(traj)
    if dur is not None:  # beside the trajectory (the figures' line is full); narrow: only where it fits
        ident.append(dur)
    fc = head.get("forecast")
    if fc:  # a live run: its forecast at the horizon, always beside "last best persists"
        f = Text(f"{fmt_hours(fc['horizon_h'])} forecast ", style="dim")
        f.append(f"{fc['value']:.1f}", style="bold magenta")
        if fc.get("lo") is not None:
            f.append(f" [{fc['lo']:.1f}–{fc['hi']:.1f}]", style="magenta")
        f.append(f" · last best {fc['baseline']:.1f}", style="dim")
        note = prior_note(fc)
        if note and not compact:
            f.append(f" ({note})", style="dim italic")
        figs.append(f)
    sel = head.get("selection") or head.get("task_selection")
    assumed = bool(head.get("policy_assumed") or head.get("task_assumed"))
    if sel and not compact:
        s = Text(visible(str(sel)), style="dim")
        if assumed:
            s.append(" (policy assumed: no task JSON)", style="italic yellow")
        figs.append(s)
    elif assumed:  # narrow: the policy's name goes, the fact that it was assumed stays
        figs.append(Text("policy assumed", style="italic yellow"))
    tok = Text("tokens ", style="dim")
    tok.append(fmt_count(head.get("tokens")) if head.get("tokens") else "–", style="bold")
    if not compact and head.get("tokens"):
        tok.append(
            f" (in {fmt_count(head.get('tok_input'))} · out {fmt_count(head.get('tok_output'))}"
            f" · cache r {fmt_count(head.get('tok_cache_read'))} w {fmt_count(head.get('tok_cache_write'))})",
            style="dim",
        )
    figs.append(tok)
    cost, stated = head.get("cost_usd"), head.get("stated_cost_usd")
    if cost is not None or stated is not None:
        d = Text()
        if cost is not None:
            d.append(fmt_usd(cost), style="bold yellow")
            if stated is not None:
                d.append(f" · stated {fmt_usd(stated)}", style="yellow")
        else:
            d.append(fmt_usd(stated), style="bold yellow")
            d.append(" stated", style="dim")
        figs.append(d)
    return ident, figs


def duration_text(head: dict[str, Any], compact: bool) -> Optional[Text]:
    """The run's duration as :func:`edgetui.store.queries.with_durations` gives it, saying which one:
    ``ran 0:07:16 start→end · SForge runtime 0:07:00`` (wide), ``ran 7:16`` (compact: no zero hours,
    SForge's ``runtime 7:00`` only when the run has no end of its own); ``to last event`` for a run without an end. None when unknown."""
    d, sf = head.get("duration_s"), head.get("sforge_runtime_s")
    if d is None and sf is None:
        return None

    def fmt(x: float) -> str:
        if compact and 0 <= x < 3600:
            return f"{int(x) // 60}:{int(x) % 60:02d}"
        return format_elapsed(x)

    t = Text()
    if d is not None:
        t.append("ran ", style="dim")
        t.append(fmt(d), style="bold")
        if head.get("duration_to") == "last event":
            t.append("…" if compact else " to last event", style="dim")
        elif not compact:
            t.append(" start→end", style="dim")
    if sf is not None and (d is None or not compact):  # (compact: one, start→end where known)
        t.append((" · " if d is not None else "") + ("runtime " if compact else "SForge runtime "), style="dim")
        t.append(fmt(sf))
    return t


def trajectory_text(tm: Optional[dict[str, Any]], compact: bool) -> Optional[Text]:
    """The run's trajectory metrics (:mod:`edgetui.replay.trajectory_metrics`, SForge's names) in a few
    words: ``traj 3/14 improving · best +0:12:40`` (compact), with the values and SForge's
    time_to_first_improvement when wide (``… · first gain +0:02:10 · best +0:12:40 after the first
    submission``); None without any counted submission. The times count from the run's FIRST
    SUBMISSION (SForge's definition), not from its start: ``+`` and the words say so, so that they
    are not read as the elapsed times of the chart and the event list."""
    if not isinstance(tm, dict) or not tm.get("submission_count"):
        return None
    t = Text("traj ", style="dim")
    if not compact:
        field = "pass" if tm.get("value_field") == "pass_rate" else "score"
        fv = fmt_pct if field == "pass" else fmt_score
        t.append(f"{field} {fv(tm.get('initial_value'))}→{fv(tm.get('best_value'))} ", style="")
    t.append(f"{tm.get('improving_submissions')}/{tm.get('submission_count')} improving", style="bold")
    if not compact and tm.get("first_improvement_seconds") is not None:
        t.append(f" · first gain +{format_elapsed(tm['first_improvement_seconds'])}", style="dim")
    if tm.get("time_to_best_seconds") is not None:
        t.append(f" · best +{format_elapsed(tm['time_to_best_seconds'])}", style="dim")
        if not compact:
            t.append(" after the first submission", style="dim")
    elif not compact and tm.get("first_improvement_seconds") is not None:
        t.append(" after the first submission", style="dim")
    return t


def header_text(head: Optional[dict[str, Any]], width: int) -> Text:
    """The header as Text lines for a given width (fields wrap as whole units). The duration never
    takes a line of its own: beside the status (or the trajectory), else at the end of the figures'
    line; wide, in its short form (``ran 12:01:51``) when the long one fits neither, and last first
    on the figures' line."""
    if not head:
        return Text("loading run…", style="dim")
    compact = width < 110
    ident, figs = _fields(head, compact, narrow=width < 60)
    out = _layout((ident, figs), width, compact)
    if not compact and _duration_alone(out):
        long, short = duration_text(head, False), duration_text(head, True)
        if long is not None and short is not None:
            rest = [f for f in ident if f.plain != long.plain]
            for alt in (  # the short form where the long one went; else first on the figures' line
                _layout(([short if f.plain == long.plain else f for f in ident], figs), width, compact),
                _layout((rest, [short, *figs]), width, compact),
            ):
                if not _duration_alone(alt):
                    return alt
    return out


def _duration_alone(text: Text) -> bool:
    """Whether a line of ``text`` holds the duration and nothing else (fields are joined by SEP)."""
    return any(ln.startswith(("ran ", "runtime ")) and SEP not in ln for ln in text.plain.split("\n"))


def _layout(groups: tuple[list[Text], list[Text]], width: int, compact: bool) -> Text:
    """The fields of each group on lines of ``width``, a group starting a new line."""
    out = Text()
    # a duration with no room beside the status (or the trajectory) tries the figures' line: never a
    # line of its own (wide too: at 110-158 columns `ran …` wrapped alone under the identity)
    carried: list[Text] = []
    for group in groups:
        line_len = 0
        for k, f in enumerate(group + carried):
            w = f.cell_len
            duration = f.plain.startswith(("ran ", "runtime "))
            fits = not k or line_len + len(SEP) + w <= width
            if not fits and duration and f not in carried:
                carried.append(f)
                continue
            if not fits and compact and (duration or f.plain.startswith("traj ")):
                continue  # (narrow: trajectory and duration only where they fit, never a line of their own)
            if k and line_len + len(SEP) + w > width:
                out.append("\n")
                line_len = 0
            elif k:
                out.append(SEP)
                line_len += len(SEP)
            out.append_text(f)
            line_len += w
        out.append("\n")
    out.rstrip()
    return out


class RunHeader(Widget):
    """Two (or, when narrow, three or four) lines describing the run; height follows content."""

    DEFAULT_CSS = """
    RunHeader { height: auto; padding: 0 1; background: $panel; }
    """

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes)
        self.head: Optional[dict[str, Any]] = None
        self._lines: Optional[int] = None  # line count at the last layout (None: never laid out)
        self._text: Optional[tuple] = None  # (head, width, Text): the last header_text, for render

    def set_header(self, head: Optional[dict[str, Any]]) -> None:
        """Show ``head`` (a run header dict, see :func:`header_text`). A layout pass (screen-wide in
        Textual) only when the number of lines changes; otherwise only this widget is repainted
        (a live run's dollars change at every refresh)."""
        if head == self.head:
            return
        self.head = head
        lines = len(self.text().split("\n"))
        self.refresh(layout=lines != self._lines)
        self._lines = lines

    def text(self, width: Optional[int] = None) -> Text:
        """What the widget shows at ``width`` (default: its content width); built once per header
        and width (set_header counts its lines, render draws it)."""
        width = width or max(20, self.content_region.width or 80)
        hit = self._text
        if hit is not None and hit[0] is self.head and hit[1] == width:
            return hit[2]
        out = header_text(self.head, width)
        self._text = (self.head, width, out)
        return out

    def render(self) -> Text:
        return self.text()

    def get_content_height(self, container, viewport, width: int) -> int:
        self._lines = len(self.text(max(20, width)).split("\n"))
        return self._lines
