"""Parts of the replay screen (:mod:`edgetui.views.screens.replay`): its messages, the prompt, the help
screen and the footer and heap helpers. Split from ``replay.py`` at this seam (it had passed 1,000
lines); everything here is re-exported there."""

from __future__ import annotations

import threading
from typing import Any, Iterable, Optional

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from edgetui.garbage_collector import COLLECTOR
from edgetui.replay.cursor import ReplayCursor
from edgetui.views.widgets.ordered_input import OrderedInput

__all__ = [
    "RunLoaded",
    "PreviewLoaded",
    "HeaderExact",
    "PagesLoaded",
    "DepthsReady",
    "LoadFailed",
    "DetailLoaded",
    "PromptInput",
    "HelpScreen",
    "FOOTER_PALETTE_WIDTH",
    "freeze_startup_heap",
    "thaw_heap",
    "fold_note",
    "fit_footer",
]


class RunLoaded(Message):
    def __init__(
        self, header: dict, cursor: ReplayCursor, subs: list[dict], moments: Optional[list[dict]] = None
    ) -> None:
        self.header, self.cursor, self.subs = header, cursor, subs
        self.moments = moments
        super().__init__()


class PreviewLoaded(Message):
    """The first page of a run, its header and chart data: painted before the whole run's index."""

    def __init__(
        self, header: dict, cursor: ReplayCursor, subs: list[dict], painted: Optional[threading.Event] = None
    ) -> None:
        self.header, self.cursor, self.subs = header, cursor, subs
        self.painted = painted  # set once the preview has been drawn
        super().__init__()


class HeaderExact(Message):
    """The header with the exact token sums (after the run's index)."""

    def __init__(self, header: dict) -> None:
        self.header = header
        super().__init__()


class PagesLoaded(Message):
    """Pages of rows of a paged timeline (:meth:`edgetui.store.timeline_pages.PagedTimeline.fetch_pages`)."""

    def __init__(self, timeline: Any, pages: dict) -> None:
        self.timeline, self.pages = timeline, pages
        super().__init__()


class DepthsReady(Message):
    """The sub-agent depths of a loaded cursor's events (computed after its first paint)."""

    def __init__(self, cursor: ReplayCursor, depth: Any) -> None:
        self.cursor, self.depth = cursor, depth
        super().__init__()


class LoadFailed(Message):
    def __init__(self, error: str) -> None:
        self.error = error
        super().__init__()


class DetailLoaded(Message):
    def __init__(self, index: int, detail: Optional[dict]) -> None:
        self.index, self.detail = index, detail
        super().__init__()


class PromptInput(OrderedInput):
    """The one-line prompt under the list (search, jump to time, an annotation); esc cancels. It
    opens with the cursor after the text it holds and nothing selected (an annotation's old text,
    a search's last query): typing goes on from it, never replaces it unasked (Textual's input
    selected it all on focus, so L on an annotated event lost its text to the first key)."""

    BINDINGS = [Binding("escape", "cancel", "cancel", show=False)]

    class Cancelled(Message):
        pass

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)

    def on_focus(self) -> None:
        self.action_end()

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())


class HelpScreen(ModalScreen[None]):
    """Keys of the replay screen."""

    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; max-width: 100%; height: auto; max-height: 100%;
        border: round $accent; background: $panel; padding: 0 1; scrollbar-size-vertical: 1; }
    HelpScreen Static { width: 100%; height: auto; }
    """

    def __init__(self, keys: Iterable[tuple[str, str]], title: str = "Replay keys") -> None:
        super().__init__()
        self.keys = list(keys)
        self.title_text = title

    def compose(self) -> ComposeResult:
        t = Table(box=None, show_header=False, padding=(0, 2))
        t.add_column(style="bold cyan", no_wrap=True)
        t.add_column()
        for k, what in self.keys:
            t.add_row(k, what)
        with VerticalScroll() as v:  # scrolls (arrows, page keys) when the terminal is short
            v.border_title = self.title_text
            v.border_subtitle = "↑↓ scroll · esc closes"
            yield Static(t)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


#: below this width the footer leaves out its "^p palette" (ctrl+p still opens it; ? lists it): at 80
#: columns the keys ran under it. (Textual's compact footer glues a key group to the next key.)
FOOTER_PALETTE_WIDTH = 96


def freeze_startup_heap(owner: object) -> bool:
    """When ``owner`` (a replay screen) mounts and nothing is frozen yet: the objects alive then
    (modules, classes, Textual's DOM and styles: the import-time heap, a few hundred thousand
    objects) are moved out of the cyclic collector's scans (:func:`gc.freeze`), after a young
    collection (``gc.collect(1)``, a few ms). Without it a full collection walked that heap in every
    first paint: 70–160 ms of the 1,000,000-event bench run's 420–940 ms (load 5), and 200–290 ms
    pauses later (a step's worst). :func:`thaw_heap` undoes it when ``owner`` unmounts, so nothing
    stays out of the collector for good (the garbage of a closed screen is collectable again). Left
    alone when something else froze the heap (the live supervisor, once caught up). Returns whether
    it froze."""
    if COLLECTOR.frozen():
        return False
    COLLECTOR.hold_frozen(owner, collect_young=True)
    return True


def thaw_heap(owner: object) -> None:
    """Undo :func:`freeze_startup_heap` if ``owner`` froze the heap (and no one else needs it frozen)."""
    COLLECTOR.release(owner)


def fold_note(cur: ReplayCursor) -> str:
    """What the events border says of folding: `` · 78 folded`` or `` · z: fold 78`` (none: "")."""
    if not cur.n_metadata:
        return ""
    return f" · {cur.n_folded:,} folded" if cur.folding else f" · z: fold {cur.n_metadata:,}"


def fit_footer(screen: Screen, width: int) -> None:
    """Make the screen's footer fit ``width`` columns: when narrow, without the palette key and in
    Textual's compact style (one space less around each key: the replay keys fit 80 columns)."""
    for f in screen.query(Footer):
        f.show_command_palette = width >= FOOTER_PALETTE_WIDTH
        f.compact = width < FOOTER_PALETTE_WIDTH
