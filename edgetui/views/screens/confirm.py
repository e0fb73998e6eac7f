"""Small modals of the live screens: a yes/no confirmation and a choice among a few names.

``ConfirmScreen`` dismisses with ``True`` only on ``y`` or the confirm button;
``n``, ``esc`` and the cancel button (focused first, so a stray Enter cancels)
dismiss with ``False``. ``ChoiceScreen`` dismisses with the chosen name or
``None``.
"""

from __future__ import annotations

from typing import Iterable, Optional

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from edgetui.views.widgets.fmt import visible_text

__all__ = ["ChoiceScreen", "ConfirmScreen", "shown_as_typed"]


def shown_as_typed(content: "str | Text", one_line: bool = False) -> Text:
    """``content`` as a Text that is never read as markup, its control characters escaped (titles
    and messages of these modals name runs and files, i.e. run content)."""
    return visible_text(Text(content) if isinstance(content, str) else content, one_line=one_line)


class ConfirmScreen(ModalScreen[bool]):
    """Ask before doing something that cannot be undone (stop / kill a container)."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape,q", "answer(False)", "no"),
        Binding("left,right,tab", "app.focus_next", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; background: $background 60%; }
    ConfirmScreen > Vertical { width: 64; max-width: 100%; height: auto; max-height: 100%;
        border: thick $error; background: $panel; padding: 0 1; }
    ConfirmScreen.-mild > Vertical { border: thick $warning; }
    ConfirmScreen #confirm-body { height: auto; margin: 1 0; }
    ConfirmScreen #confirm-buttons { height: auto; align-horizontal: right; }
    ConfirmScreen Button { margin: 0 0 0 2; min-width: 12; }
    ConfirmScreen #confirm-hint { color: $text-muted; height: 1; }
    """

    def __init__(
        self,
        title: str,
        message: str | Text,
        *,
        confirm_label: str = "Yes",
        danger: bool = True,
    ) -> None:
        super().__init__(classes="" if danger else "-mild")
        self.title_text = title
        self.message = message
        self.confirm_label = confirm_label
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical() as v:
            v.border_title = shown_as_typed(self.title_text, one_line=True)
            yield Static(shown_as_typed(self.message), id="confirm-body")
            with Horizontal(id="confirm-buttons"):
                yield Button("Cancel", id="cancel", variant="default")
                yield Button(self.confirm_label, id="confirm", variant="error" if self.danger else "warning")
            yield Static("y confirm · n / esc cancel", id="confirm-hint")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(bool(yes))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm")


class ChoiceScreen(ModalScreen[Optional[str]]):
    """Pick one of a few names (Enter); esc cancels. Disabled entries show why they cannot be chosen."""

    BINDINGS = [Binding("escape,q", "cancel", "cancel")]
    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; background: $background 60%; }
    ChoiceScreen > Vertical { width: 72; max-width: 100%; height: auto; max-height: 100%;
        border: round $primary; background: $panel; padding: 0 1; }
    ChoiceScreen OptionList { height: auto; max-height: 16; border: none; background: $panel; }
    ChoiceScreen #choice-hint { color: $text-muted; height: 1; }
    """

    def __init__(self, title: str, choices: Iterable[tuple[str, str, bool]]) -> None:
        """``choices``: (name, description, enabled)."""
        super().__init__()
        self.title_text = title
        self.choices = list(choices)

    def compose(self) -> ComposeResult:
        opts = []
        for name, desc, enabled in self.choices:
            label = Text(name, style="bold" if enabled else "dim")
            if desc:
                label.append(f"  {desc}", style="dim")
            opts.append(Option(shown_as_typed(label, one_line=True), id=name, disabled=not enabled))
        with Vertical() as v:
            v.border_title = shown_as_typed(self.title_text, one_line=True)
            yield OptionList(*opts, id="choices")
            yield Static("enter open · esc cancel", id="choice-hint")

    def on_mount(self) -> None:
        ol = self.query_one(OptionList)
        ol.focus()
        first = next((i for i, (_, _, ok) in enumerate(self.choices) if ok), None)
        if first is not None:
            ol.highlighted = first

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
