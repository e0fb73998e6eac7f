"""The replay screen's moment views: the list of a run's reframing moments, and the *why* of one
(actions since the previous best collapsed by kind, the agent's notes, the submission's diff).
Data comes in ready (loaded by the replay screen's workers); nothing here does I/O."""

from __future__ import annotations

import re
import textwrap
import threading
from typing import Any, Callable, Optional, Protocol, Sequence, runtime_checkable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual import work
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from edgetui.store import queries as store
from edgetui.store.database import lift_pool_on
from edgetui.replay.cursor import format_elapsed

from edgetui.control_chars import visible
from edgetui.views.widgets.fmt import visible_text
from edgetui.views.screens.confirm import ConfirmScreen
from edgetui.views.screens.replay_parts import HelpScreen
from edgetui.views.screens.screen_keys import HELP_KEYS


from edgetui.record.annotations import moment_queue
from edgetui.record.moments_table import rebuild_moments
from edgetui.store.holder_connection import HolderConnection

__all__ = [
    "MomentsScreen",
    "WhyScreen",
    "QueueScreen",
    "QueueLoaded",
    "WhyLoaded",
    "Annotated",
    "AnnotationsRead",
    "MomentsFound",
    "moment_line",
    "why_text",
    "why_head_text",
    "why_diff_text",
]


#: where a moment's wrapped line goes on in the moments list: under its elapsed time
MOMENT_INDENT = 11


def delete_annotation_question(anns: list[dict]) -> ConfirmScreen:
    """The question ``L``'s emptied prompt asks before it deletes the event's newest annotation."""
    a = anns[-1] if anns else {}
    said = (a.get("label") or "") + (f": {a['text']}" if a.get("text") else "")
    return ConfirmScreen(
        "Delete the annotation?",
        f"{said or 'the annotation'}\n\nis deleted for good (an emptied prompt deletes; esc keeps it).",
        confirm_label="Delete",
        danger=False,
    )


#: the moments list's column headings, over :func:`moment_line`'s columns (round, elapsed, best
#: before → after (+gain), then lead time, confidence and the sub-scores that moved, each named)
SCORE_HEAD = "best before → after (+gain)"


def moments_head(score_w: int = len(SCORE_HEAD)) -> str:
    """The heading line over :func:`moment_line`'s columns, its score column ``score_w`` cells wide."""
    return f"{'round':<10} {'elapsed':>8}  {SCORE_HEAD:<{score_w}}  {'lead':>7}  conf  sub-scores"


MOMENTS_HEAD = moments_head()


def score_text(m: dict) -> str:
    """A moment's best before → after (+gain), as the moments list shows it."""
    b, a, g = m.get("score_before"), m.get("score_after"), m.get("gain")
    if b is None or a is None:
        return ""
    return f"{b:g} → {a:g}" + (f" (+{g:.3g})" if g is not None else "")


def moment_line(m: dict, width: Optional[int] = None, score_w: int = len(SCORE_HEAD)) -> Text:
    """A moment in the moments list: round, elapsed, best before → after (+gain), lead time,
    confidence and every sub-score that moved, most first. ``width`` (cells, the list's): what does
    not fit goes on under the elapsed time (a hanging indent), the sub-scores wrapped between
    names; without it, one line."""
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{m['round']:<10}", style="bold magenta")
    t.append(f" {format_elapsed(m.get('elapsed_s')):>8}  ")
    b, a, g = m.get("score_before"), m.get("score_after"), m.get("gain")
    if b is not None and a is not None:
        t.append(f"{b:g} → {a:g}")
        if g is not None:
            t.append(f" (+{g:.3g})", style="green")
    t.append(" " * max(0, score_w - len(score_text(m))))  # (the lead and conf columns line up)
    # the values only, under the heading's ``lead`` and ``conf`` (a moment without a lead time: blank)
    lead = format_elapsed(m["lead_time_s"]) if m.get("lead_time_s") is not None else ""
    t.append(f"  {lead:>7}", style="dim")
    t.append(f"  {m.get('confidence') or 0:.2f}", style="dim")
    tail: list[tuple[str, str]] = [
        (f"{visible(str(k))} {x:g}→{y:g}", "cyan") for k, (x, y) in (m.get("components") or {}).items()
    ]
    if m.get("provisional"):
        tail.append(("provisional", "yellow"))
    if width is None or t.cell_len + sum(len(w) + 2 for w, _ in tail) <= width:
        for i, (w, style) in enumerate(tail):
            sep = ", " if i and style == "cyan" else "  "
            t.append(sep + w, style=style)
        return visible_text(t, one_line=True)
    # the rest on lines of their own, under the elapsed time, cut between sub-scores
    t = visible_text(t, one_line=True)
    line = t.cell_len
    for i, (w, style) in enumerate(tail):
        sep = ", " if i and style == "cyan" and tail[i - 1][1] == "cyan" else "  "
        if line + len(sep) + len(w) > width:
            t.append("," if sep == ", " else "")
            t.append("\n" + " " * MOMENT_INDENT)
            sep, line = "", MOMENT_INDENT
        t.append(sep + w, style=style)
        line += len(sep) + len(w)
    t.no_wrap = False
    return visible_text(t)


class MomentsScreen(ModalScreen[Optional[int]]):
    """The run's reframing moments; enter dismisses with the chosen one's position, esc with None."""

    BINDINGS = [Binding("escape,q,M", "dismiss_none", "close"), Binding(HELP_KEYS, "help", "keys", show=False)]
    DEFAULT_CSS = """
    MomentsScreen { align: center middle; }
    MomentsScreen > #moments-box { width: auto; min-width: 60; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $panel; }
    MomentsScreen #moments-head { width: auto; padding: 0 1; color: $text-muted; text-style: bold; }
    MomentsScreen OptionList, MomentsScreen OptionList:focus { width: auto; height: auto; max-height: 100%;
        border: none; background: $panel; }
    """

    def __init__(self, moments: list[dict], current: Optional[int] = None) -> None:
        super().__init__()
        self.moments = moments
        self.current = current

    def compose(self) -> ComposeResult:
        # the list's room: the screen less its border (2) and each option's padding (2)
        room = max(40, (self.app.size.width or 80) - 4)
        score_w = max([len(SCORE_HEAD)] + [len(score_text(m)) for m in self.moments])
        ol = OptionList(*[Option(moment_line(m, room, score_w), id=str(i)) for i, m in enumerate(self.moments)])
        with Vertical(id="moments-box") as box:
            box.border_title = f"reframing moments ({len(self.moments)})"
            box.border_subtitle = "enter: go · esc: close · ? keys"
            yield Static(moments_head(score_w), id="moments-head")  # what each column of a line is
            yield ol

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        ol.focus()
        if self.current is not None and self.moments:
            ol.highlighted = self.current

    @on(OptionList.OptionSelected)
    def _chosen(self, msg: OptionList.OptionSelected) -> None:
        self.dismiss(int(msg.option.id or 0))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def action_help(self) -> None:
        """``F1`` / ``?``: this list's keys (a modal screen: the app's own F1 does not reach it)."""
        self.app.push_screen(HelpScreen(MOMENTS_KEYS, title="Moments keys"))


#: the moments list's keys and columns (``F1`` / ``?`` on it)
MOMENTS_KEYS = [
    ("↑ ↓", "move between the run's reframing moments"),
    ("enter", "go to the moment in the replay"),
    ("esc / q / M", "close the list"),
    ("F1 / ?", "these keys"),
    ("", ""),
    ("round", "the graded round that raised the best score"),
    ("elapsed", "when in the run it was graded"),
    ("before → after", "the best score before it and after it (+gain)"),
    ("lead", "from the behaviour change's start to the new best's submission"),
    ("conf", "how sure the detection is that this was a reframing (0-1)"),
    ("sub-scores", "the sub-scores that moved, most first"),
]


#: the longest action sample shown when the view's width is not known (cells; cut at a word with …);
#: a view of known width gives each sample the rest of its line
SAMPLE_W = 70
#: how much further than a note's first line its wrapped lines start (a hanging indent: where one
#: note ends and the next begins stays plain)
HANG = 2
#: ``**bold**`` (and ``__bold__``) of a transcript's markdown: Codex's reasoning summaries are
#: ``**Title**`` lines; shown bold, without the asterisks (never read as markup: see :func:`_markdown`)
_BOLD = re.compile(r"(?<![*\w])\*\*(?=[^\s*])(.+?)(?<=[^\s*])\*\*(?![*\w])|(?<!\w)__(?=[^\s_])(.+?)(?<=[^\s_])__(?!\w)")


def _markdown(text: str) -> tuple[str, list[tuple[int, int]]]:
    """``text`` without the markers of its ``**bold**`` runs, and where those runs are in it. The
    text is run content: it goes into a :class:`Text` as plain characters, never parsed as Rich
    markup, and control characters are escaped after (:func:`visible_text`)."""
    out: list[str] = []
    bold: list[tuple[int, int]] = []
    pos = n = 0
    for m in _BOLD.finditer(text):
        out.append(text[pos : m.start()])
        n += m.start() - pos
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        out.append(inner)
        bold.append((n, n + len(inner)))
        n += len(inner)
        pos = m.end()
    out.append(text[pos:])
    return "".join(out), bold


def _append_marked(t: Text, plain: str, start: int, bold: list[tuple[int, int]], style: str) -> None:
    """Append ``plain`` (which starts at ``start`` of the text :func:`_markdown` read) in
    ``style``, its characters inside ``bold`` runs in bold too."""
    at = len(t)
    t.append(plain, style=style)
    end = start + len(plain)
    for a, b in bold:
        lo, hi = max(a, start), min(b, end)
        if lo < hi:
            t.stylize("bold", at + lo - start, at + hi - start)


def _hang(
    t: Text,
    text: str,
    first: str,
    width: Optional[int],
    style: str = "",
    first_style: str = "",
    words: bool = True,
    cont: Optional[str] = None,
    hang: int = 0,
    markdown: bool = False,
) -> None:
    """Append ``first`` then ``text`` to ``t``, continuation lines indented under the text's start
    and ``hang`` cells further (a hanging indent; ``cont``: what starts a continuation line instead
    of spaces, as wide as ``first``) when ``width`` (cells) is known; ``words``: wrap at spaces
    (prose), else cut anywhere keeping every character (code); ``markdown``: ``**bold**`` shown bold
    without its asterisks (:func:`_markdown`)."""
    t.append(first, style=first_style)
    text, bold = _markdown(text) if markdown else (text, [])
    room = (width or 0) - len(first)
    if width is None or room < 20 or len(text) <= room:
        _append_marked(t, text, 0, bold, style)
        t.append("\n")
        return
    lead = cont if cont is not None else " " * (len(first) + hang)
    rest = max(10, (width or 0) - len(lead))
    if words:
        parts = textwrap.wrap(
            text, room, break_long_words=True, break_on_hyphens=False, expand_tabs=False, replace_whitespace=False
        ) or [""]
        if len(parts) > 1 and rest != room:  # the lines after the first are narrower by the hang
            tail = text[text.find(parts[1], len(parts[0])) :]
            parts = parts[:1] + (
                textwrap.wrap(
                    tail,
                    rest,
                    break_long_words=True,
                    break_on_hyphens=False,
                    expand_tabs=False,
                    replace_whitespace=False,
                )
                or [""]
            )
    else:
        parts = [text[:room]] + [text[i : i + rest] for i in range(room, len(text), rest)]
    pos = 0
    for i, p in enumerate(parts):
        if i:
            t.append(lead, style="dim")
        start = text.find(p, pos) if p else pos
        start = pos if start < 0 else start
        _append_marked(t, p, start, bold, style)
        t.append("\n")
        pos = start + len(p)


def _sample(x: str, room: Optional[int] = None) -> str:
    """An action sample on one line, cut at a word with … to ``room`` cells (:data:`SAMPLE_W` when
    the view's width is not known)."""
    x = " ".join(x.split())
    room = SAMPLE_W if room is None else max(20, room)
    return x if len(x) <= room else textwrap.shorten(x, room, placeholder=" …", break_on_hyphens=False)


def why_head_text(why: dict[str, Any], width: Optional[int] = None) -> Text:
    """The cheap part of a why (:func:`edgetui.analysis.why_new_best.why_of`'s dict): the jump, the actions since
    the previous best by kind, the agent's notes. ``width``: the view's width in cells (long lines
    wrap under their own indent; ``None``: not wrapped here)."""
    t = Text()
    b, a = why.get("before"), why.get("after")
    t.append(f"{why['round']}", style="bold magenta")
    if b is not None and a is not None:
        t.append(f"  best {b:g} → {a:g}")
    elif a is not None:  # the first graded round: nothing before it
        t.append(f"  first best {a:g}")
    t.append(f"  since {why.get('prev_round') or 'the start'}\n\n", style="dim")
    t.append("What the agent did\n", style="bold underline")
    for kind, a_ in (why.get("actions") or {}).items():
        head = f"  {kind:<9} {a_['n']:>4}  "
        for i, x in enumerate(a_["examples"][-2:]):
            plain = " ".join(x.split())
            if kind in ("thinking", "messages"):  # prose: a Codex summary's **Title**, its words only
                plain = _markdown(plain)[0]
            _hang(
                t,
                _sample(plain, None if width is None else width - len(head)),
                head if i == 0 else " " * len(head),
                width,
                style="dim",
                first_style="bold",
            )
        if not a_["examples"]:
            t.append(head.rstrip() + "\n", style="bold")
    notes = why.get("notes") or {}
    if notes.get("analysis"):
        t.append("\nanalysis.md\n", style="bold underline")
        for line in notes["analysis"].rstrip().split("\n"):
            _hang(t, line.strip(), "  " + " " * (len(line) - len(line.lstrip())), width, hang=HANG, markdown=True)
    for key, title in (("thinking", "Its thinking"), ("messages", "Its last messages")):
        if notes.get(key):
            t.append(f"\n{title}\n", style="bold underline")
            for n in notes[key]:
                for j, line in enumerate(n["text"].strip().split("\n")):
                    _hang(t, line.strip(), "  " if j == 0 else "    ", width, hang=HANG, markdown=True)
    for f in notes.get("files") or []:
        t.append(f"\nNote file {f['path']}\n", style="bold underline")
        for line in f["text"].rstrip().split("\n"):
            _hang(t, line.strip(), "  " + " " * (len(line) - len(line.lstrip())), width, hang=HANG, markdown=True)
    return visible_text(t)


def why_diff_text(why: dict[str, Any], width: Optional[int] = None) -> Text:
    """The code part of a why: the submission's diff against the previous best's (or why there
    is none; ``why["diff_pending"]``: the archives are still being read). ``width`` as for
    :func:`why_head_text` (a diff line too long goes on under its own indent, every character kept)."""
    t = Text()
    t.append("\nCode\n", style="bold underline")
    d = why.get("diff")
    if why.get("diff_pending"):
        t.append("  reading the submission archives…\n", style="dim")
    elif d is None:
        t.append("  no submission.tar.gz for this round: no diff\n", style="dim")
    elif d.get("error"):
        t.append(f"  {d['error']}\n", style="bold red")
    else:
        against = d.get("against") or "nothing (first archive)"
        t.append(
            f"  submission.tar.gz against {against}: {len(d['files'])} file(s) changed, "
            f"{d['unchanged']} unchanged" + (" (diff cut)" if d.get("truncated") else "") + "\n",
            style="dim",
        )
        for f in d["files"]:
            t.append(f"  {f['status']:<8} {f['path']}\n", style="bold")
            for line in f["lines"]:
                style = (
                    "green"
                    if line.startswith("+") and not line.startswith("+++")
                    else "red"
                    if line.startswith("-") and not line.startswith("---")
                    else "cyan"
                    if line.startswith("@@")
                    else ""
                )
                _hang(t, line[1:], "    " + line[:1], width, style=style, first_style=style, words=False, cont="    ↪")
    return visible_text(t)


def why_text(why: dict[str, Any]) -> Text:
    """The whole why as one text (:func:`why_head_text` then :func:`why_diff_text`)."""
    return why_head_text(why) + why_diff_text(why)


class WhyScreen(Screen[None]):
    """The why of one new best (scrolls; esc closes). ``]`` / ``[`` step to the next / previous
    milestone (new best) along the score curve: ``step(round)`` asks the replay screen to load
    that one's why, which it hands back through :meth:`show`.

    A screen of its own, not an overlay (an overlay redraws the replay under it, dimmed: ~40 ms
    more per paint here), and painted in two frames: the jump, actions and notes first, the diff
    (the long part) in the frame after, or when the worker reading the archives hands it over."""

    BINDINGS = [
        Binding("escape,q,w", "close", "close"),
        Binding("right_square_bracket", "milestone(1)", "next milestone"),
        Binding("left_square_bracket", "milestone(-1)", "previous milestone"),
    ]
    DEFAULT_CSS = """
    WhyScreen > VerticalScroll { width: 100%; height: 1fr; border: round $accent; padding: 0 1;
        scrollbar-gutter: stable; }
    WhyScreen Static { width: 100%; height: auto; }
    """

    def __init__(
        self, why: dict[str, Any], rounds: Sequence[str] = (), step: Optional[Callable[[str], None]] = None
    ) -> None:
        super().__init__()
        self.why = why
        self.rounds = list(rounds)
        self.step = step
        #: the why whose diff is drawn (``None``: not yet)
        self.diff_shown: Optional[dict[str, Any]] = None
        #: the milestone last asked for and not shown yet: keys pressed faster than the reads
        #: step on from it
        self.asked: Optional[str] = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(why_head_text(self.why, self._text_width()), id="why-body")
            yield Static("", id="why-diff")

    def on_mount(self) -> None:
        self._titles()
        self.query_one(VerticalScroll).focus()
        self.call_after_refresh(self._draw_diff, self.why)

    def _text_width(self) -> int:
        """Cells a line of the view holds: the screen's width less the border (2), padding (2) and
        the scrollbar's gutter (2, kept whether or not the text scrolls: the width does not change
        when a long diff arrives)."""
        return max(20, (self.app.size.width or 80) - 6)

    def on_resize(self) -> None:
        w = self._text_width()
        if w != getattr(self, "_drawn_w", w):
            self.query_one("#why-body", Static).update(why_head_text(self.why, w))
            if self.diff_shown is not None:
                self.query_one("#why-diff", Static).update(why_diff_text(self.diff_shown, w))
        self._drawn_w = w

    def body_text(self) -> str:
        """What the view shows, as plain text (both parts)."""
        return "".join(str(self.query_one(f"#{i}", Static).render()) for i in ("why-body", "why-diff"))

    def _draw_diff(self, why: dict[str, Any]) -> None:
        if why is not self.why:  # another milestone was shown meanwhile
            return
        self.query_one("#why-diff", Static).update(why_diff_text(why, self._text_width()))
        self.diff_shown = None if why.get("diff_pending") else why

    def _titles(self) -> None:
        v = self.query_one(VerticalScroll)
        v.border_title = Text(visible(f"why {self.why['round']}"))
        pos = (
            f"milestone {self.rounds.index(self.why['round']) + 1}/{len(self.rounds)} · [ ] step · "
            if self.why["round"] in self.rounds
            else ""
        )
        v.border_subtitle = pos + "↑↓ scroll · esc closes"

    def show(self, why: dict[str, Any]) -> None:
        """Show another round's why in place (the next milestone), or the same round's with its
        diff read (the head is not drawn again then)."""
        same = why["round"] == self.why["round"] and not why.get("diff_pending") and self.why.get("diff_pending")
        self.why = why
        if why["round"] == self.asked:
            self.asked = None
        if same:
            self._draw_diff(why)
            return
        self.query_one("#why-body", Static).update(why_head_text(why, self._text_width()))
        self.query_one("#why-diff", Static).update("")
        self.diff_shown = None
        self.query_one(VerticalScroll).scroll_home(animate=False)
        self._titles()
        self.call_after_refresh(self._draw_diff, why)

    def action_milestone(self, direction: int) -> None:
        here = self.asked or self.why["round"]
        if self.step is None or here not in self.rounds:
            return
        k = self.rounds.index(here) + direction
        if 0 <= k < len(self.rounds):
            self.asked = self.rounds[k]
            self.step(self.rounds[k])
        else:
            self.notify("no later milestone" if direction > 0 else "no earlier milestone", timeout=2)

    def action_close(self) -> None:
        self.dismiss(None)


class QueueLoaded(Message):
    def __init__(self, entries: list[dict], error: Optional[str] = None) -> None:
        self.entries, self.error = entries, error
        super().__init__()


@runtime_checkable
class BuildsMoments(Protocol):
    """An app that keeps which runs' moments the queue built (:attr:`edgetui.views.app.EdgeTUIApp.moments_built`):
    each run's once per app."""

    moments_built: set[str]


class QueueScreen(Screen):
    """The queue of unlabelled reframing moments across runs (one entry per run and moment): enter
    opens the run's replay at the moment (``L`` there labels it); back here, the labelled ones are
    gone. Moments are built first for runs that have none stored (in a worker, once per app)."""

    BINDINGS = [Binding("escape,q", "back", "back"), Binding("f5", "reload", "reload")]
    DEFAULT_CSS = """
    QueueScreen OptionList { height: 1fr; border: round $accent; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.entries: list[dict] = []

    def compose(self) -> ComposeResult:
        ol = OptionList(id="queue")
        ol.border_title = "unlabelled reframing moments"
        yield ol
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(OptionList).loading = True
        self._load()

    def on_screen_resume(self) -> None:
        if self.entries:
            self._load()

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="moments-queue", exit_on_error=False)
    def _load(self) -> None:
        try:
            conn = self.app.conn  # type: ignore[attr-defined]
            app = self.app
            built = app.moments_built if isinstance(app, BuildsMoments) else set()
            todo = store.runs_without_moments(conn, min_graded=5)
            for key in todo:
                if key not in built:
                    built.add(key)
                    if isinstance(conn, HolderConnection):  # a browser tab: the holder builds them
                        conn.request({"op": "moments", "run_key": key})
                        continue
                    try:
                        rebuild_moments(conn, key)
                    except Exception as e:  # noqa: BLE001  (a read-only database: the stored ones only)
                        if lift_pool_on(conn, e):  # (a bounded buffer pool, lifted: read again)
                            built.discard(key)
                            self.app.call_from_thread(self._load)
                            return
            self.post_message(QueueLoaded(moment_queue(conn)))
        except Exception as e:  # noqa: BLE001 - shown, never crashes the app
            if lift_pool_on(getattr(self.app, "conn", None), e):
                self.app.call_from_thread(self._load)
                return
            self.post_message(QueueLoaded([], f"{type(e).__name__}: {e}"))

    @on(QueueLoaded)
    def _on_loaded(self, msg: QueueLoaded) -> None:
        ol = self.query_one(OptionList)
        ol.loading = False
        if msg.error:
            self.notify(msg.error, severity="error", timeout=6)
        self.entries = msg.entries
        ol.clear_options()
        for i, e in enumerate(msg.entries):
            t = Text(no_wrap=True, overflow="ellipsis")
            t.append(f"{e['run_key']}  ", style="bold")
            t.append(f"{e['round']:<10}", style="bold magenta")
            t.append(
                f" {format_elapsed(e.get('elapsed_s')):>8}  {e['score_before']:g} → {e['score_after']:g}"
                f"  conf {e.get('confidence') or 0:.2f}"
            )
            ol.add_option(Option(visible_text(t, one_line=True), id=str(i)))
        if msg.entries:
            ol.highlighted = 0
        ol.border_subtitle = (
            f"{len(msg.entries)} to label · enter: open at the moment (L labels it) · esc: back"
            if msg.entries
            else "nothing left to label"
        )
        ol.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, msg: OptionList.OptionSelected) -> None:
        e = self.entries[int(msg.option.id or 0)]
        self.app.open_moment(e["run_key"], e["round"])  # type: ignore[attr-defined]

    def action_back(self) -> None:
        self.app.pop_screen()


class WhyLoaded(Message):
    """A round's why (``why["diff_pending"]``: without its diff yet; ``painted`` is set once it is
    on screen), or the error that stopped its read."""

    def __init__(
        self,
        round: str,
        why: Optional[dict],
        error: Optional[str] = None,
        prefetch: bool = False,
        painted: Optional[threading.Event] = None,
    ) -> None:
        self.round, self.why, self.error, self.prefetch, self.painted = round, why, error, prefetch, painted
        super().__init__()


class MomentsFound(Message):
    """The run's reframing moments, read after the run itself (the replay paints first)."""

    def __init__(self, moments: list[dict], not_detected: Optional[str] = None) -> None:
        self.moments = moments
        #: why the moments were not detected (none stored, and the run too big to detect them in the app)
        self.not_detected = not_detected
        super().__init__()


class Annotated(Message):
    def __init__(self, where: str, reply: dict) -> None:
        self.where, self.reply = where, reply
        super().__init__()


class AnnotationsRead(Message):
    """The run's annotations: event id → its annotations, oldest first."""

    def __init__(self, by_event: dict[str, list[dict]]) -> None:
        self.by_event = by_event
        super().__init__()
