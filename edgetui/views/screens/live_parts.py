"""Parts of the live run screen that only draw what they are given (no I/O): the submissions
table (round, elapsed, pass rate, score, new-best star, status), the status line under the
header (status, elapsed / budget, container, last event) and one alarm's line."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from rich.text import Text
from textual.widgets import DataTable

from edgetui.live.model import Alarm, LiveRun
from edgetui.replay.cursor import format_elapsed

from edgetui.control_chars import visible
from edgetui.views.widgets.fmt import fmt_pct, fmt_score, visible_text
from edgetui.views.widgets.runs_cells import HOST_MARKS
from edgetui.views.widgets.runs_table import budget_bar, fmt_age, fmt_bytes, fmt_hm, status_text
from edgetui.views.screens.live_common import wrap_units
from edgetui.views.screens.replay import NARROW_WIDTH

__all__ = ["SubmissionsTable", "alarm_line", "live_status_text"]


# ---------------------------------------------------------------------------- submissions table


_SUB_STATUS = {
    "graded": ("graded", "green"),
    "failed_grading": ("failed", "bold red"),
    "bad_report": ("bad report", "red"),
    "in_flight": ("grading…", "cyan"),
}


class SubmissionsTable(DataTable):
    """Graded rounds, newest first: round, elapsed, pass rate, score, ★ new best, status."""

    DEFAULT_CSS = """
    SubmissionsTable { scrollbar-size-vertical: 1; }
    """

    def __init__(self, *, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=True)
        self.rounds: list[str] = []
        self._sig: Any = None

    def on_mount(self) -> None:
        for label, key, w, just in (
            ("round", "round", 9, "left"),
            ("elapsed", "elapsed", 9, "right"),
            ("pass", "pass", 6, "right"),
            ("score", "score", 9, "right"),
            ("★", "best", 1, "left"),
            ("status", "status", 10, "left"),
        ):
            self.add_column(Text(label, style="bold", justify=just), width=w, key=key)  # type: ignore[arg-type]

    @property
    def selected_round(self) -> Optional[str]:
        if not self.rounds or not (0 <= self.cursor_row < len(self.rounds)):
            return None
        return self.rounds[self.cursor_row]

    def set_submissions(self, subs: Sequence[dict], start: Optional[float]) -> None:
        rows = list(reversed(list(subs)))
        sig = [tuple(sorted((k, repr(v)) for k, v in s.items() if k != "metrics")) for s in rows]
        if sig == self._sig:
            return
        self._sig = sig
        keep = self.selected_round if self.cursor_row > 0 else None  # on the newest row: follow new ones
        self.clear()
        self.rounds = []
        for s in rows:
            rnd = str(s.get("round"))
            el = s.get("elapsed_s")
            if el is None and start is not None:
                t = s.get("t") or s.get("submitted_at") or s.get("graded_at")
                el = None if t is None else t - start
            label, style = _SUB_STATUS.get(s.get("status") or "", (str(s.get("status") or "–"), "dim"))
            if s.get("status") == "graded" and s.get("valid") is False:
                label, style = "invalid", "yellow"
            new_best = bool(s.get("is_new_best"))
            self.add_row(
                Text(visible(rnd), style="bold" if s.get("kind") != "auto" else "blue"),
                Text(format_elapsed(el), justify="right", style="dim"),
                Text(fmt_pct(s.get("pass_rate")), justify="right"),
                Text(fmt_score(s.get("score")), justify="right", style="bold green" if new_best else ""),
                Text("★" if new_best else "", style="bold bright_yellow"),
                Text(visible(label), style=style),
                key=rnd,
            )
            self.rounds.append(rnd)
        if keep in self.rounds:
            self.move_cursor(row=self.rounds.index(keep), animate=False)
        else:
            self.move_cursor(row=0, animate=False, scroll=False)
            self.scroll_to(y=0, animate=False)


# ---------------------------------------------------------------------------- live status


def live_status_text(live: Optional[LiveRun], now: float, width: int) -> Text:
    """The live line(s) of a run: status, elapsed / budget, last event, judges, container, resources."""
    if live is None:
        return Text("not watched live: no snapshot of this run from the supervisor yet", style="dim italic")
    compact = width < NARROW_WIDTH
    fields: list[Text] = [status_text(live, compact=False)]
    el = Text("⏱ ", style="dim")
    over = bool(live.budget_s and live.elapsed_s and live.elapsed_s > live.budget_s)
    el.append(fmt_hm(live.elapsed_s), style="bold red" if over else "bold")
    el.append(("/" if compact else " / ") + fmt_hm(live.budget_s), style="dim")
    if live.budget_s and not compact:
        el.append(" ")
        el.append_text(budget_bar(live.elapsed_s, live.budget_s, 8))
    if live.sforge_runtime_s is not None:  # which duration is which (docs/live.md, "Durations")
        el.append(" start→end · " if not compact else " · ", style="dim")
        el.append("SForge runtime " if not compact else "agent ", style="dim")
        el.append(fmt_hm(live.sforge_runtime_s))
    fields.append(el)
    age = None if live.last_event_at is None else now - live.last_event_at
    last = Text("last " if compact else "last event ", style="dim")
    last.append(fmt_age(age), style="bold" if age is None or age < 600 else "bold red")
    last.append(" ago" if age is not None else "", style="dim")
    fields.append(last)
    hs = getattr(live, "host_state", None)
    if hs and hs != "up":  # a remote host not up: the quiet is the connection's, not the agent's
        mark, style = HOST_MARKS.get(hs, ("?", "bold yellow"))
        fields.append(Text(f"{mark} host {live.host} {hs}", style=style))
    says = getattr(live, "judge_says", None)
    if says:
        fields.append(Text(says, style="cyan"))
    grading = grading_text(live)
    if grading is not None:
        fields.append(grading)
    c = live.container
    if c is not None:
        ct = Text("ctr " if compact else "container ", style="dim")
        if not compact:
            ct.append(c.name, style="")
            ct.append(" ")
        st_style = "green" if c.state == "running" else "bold red"
        ct.append(c.state or "?", style=st_style)
        if c.exit_code is not None and c.state != "running":
            ct.append(f" exit {c.exit_code}", style="red")
        if c.oom_killed:
            ct.append(" OOM", style="bold red")
        if c.restart_count:
            ct.append(f" restarts {c.restart_count}", style="yellow")
        if c.phase is not None:  # a pod (Kubernetes): its phase, why it waits or ended, node, where
            ct.append(f" {c.phase}" + (f" {c.reason}" if c.reason and not c.oom_killed else ""), style="dim")
            if c.node and not compact:
                ct.append(f" on {c.node}", style="dim")
            if not compact:
                ct.append(f" ({c.host})", style="dim")
        fields.append(ct)
    if live.cpu_percent is not None or live.mem_bytes is not None:
        r = Text()
        if live.cpu_percent is not None:
            r.append("cpu ", style="dim")
            r.append(f"{live.cpu_percent:.0f}%")
        if live.mem_bytes is not None:
            r.append("  mem " if live.cpu_percent is not None else "mem ", style="dim")
            r.append(fmt_bytes(live.mem_bytes))
            if live.container and live.container.mem_limit_bytes:
                r.append(f"/{fmt_bytes(live.container.mem_limit_bytes)}", style="dim")
        fields.append(r)
    if live.message:
        fields.append(Text(live.message, style="italic yellow"))
    return wrap_units(fields, max(20, width))


def grading_text(live: LiveRun) -> Optional[Text]:
    """``1 judge grading · judge queue 5``: judges at work for the run and the judge's whole queue
    (``judge-pending/``); None when both are 0. (The run's own queued rounds are in its status text,
    :func:`edgetui.views.widgets.runs_cells.status_text`, shown just before.)"""
    parts: list[tuple[str, str]] = []
    n = live.judges_running
    if n:
        parts.append((f"{n} judge{'s' if n > 1 else ''} grading", "bold cyan"))
    pend = getattr(live, "judge_pending", None)
    if pend:
        parts.append((f"judge queue {pend}", "yellow"))
    if not parts:
        return None
    t = Text()
    for i, (words, style) in enumerate(parts):
        if i:
            t.append(" · ", style="dim")
        t.append(words, style=style)
    return t


def alarm_line(a: Alarm, now: float, state: str = "holding") -> Text:
    """One alarm: ``⚠ 3m ago stall  message``; ``state`` = holding | acked | cleared (the last two dim,
    marked ``✓ acknowledged`` / ``cleared``)."""
    loud = state == "holding"
    t = Text(
        "⚠ " if loud else ("✓ " if state == "acked" else "· "),
        style=("bold red" if a.severity == "critical" else "bold yellow") if loud else "dim",
    )
    t.append(f"{fmt_age(now - a.t)} ago ", style="dim")
    t.append(a.rule, style="bold" if loud else "dim bold")
    if state == "acked":
        t.append(" (acknowledged)", style="dim")
    elif state == "cleared":
        t.append(" (cleared)", style="dim")
    t.append("  " + a.message, style="" if loud else "dim")
    return visible_text(t, one_line=True)
