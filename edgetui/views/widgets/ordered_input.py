"""A one-line text input whose editing keys act in order with the characters typed around them.

Textual's :class:`~textual.widgets.Input` inserts a typed character as its key arrives, but runs
its editing keys (backspace, delete, the cursor moves) as bindings, after the key has gone up to
the app and back: in a burst of keys (a fast typist, a paste of keys, a terminal's one read) the
characters after a backspace were inserted before it ran, and it deleted one of them
(``opus⌫s48⌫⌫48-e`` gave ``opuss484``). :class:`OrderedInput` runs them as they arrive."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.widgets import Input

__all__ = ["EDIT_KEYS", "OrderedInput"]

#: the input's editing keys, done as the key arrives: key -> action (Enter, and the clipboard's
#: keys, stay bindings: Enter submits after the characters before it, see the run picker)
EDIT_KEYS = {
    k.strip(): b.action
    for b in Input.BINDINGS
    if isinstance(b, Binding) and b.action not in ("submit", "copy", "cut", "paste")
    for k in b.key.split(",")
}


class OrderedInput(Input):
    """:class:`~textual.widgets.Input` with its editing keys done in the order typed."""

    async def on_key(self, event: events.Key) -> None:
        action = EDIT_KEYS.get(event.key)
        if action is not None:
            event.stop()
            event.prevent_default()  # (not Input's own handler after this one)
            await self.run_action(action)
