"""The keys of whatever screen is on top, on ``F1`` (and ``?`` where no text input has the focus).

A screen with its own key list (``action_help``: the replay, the live run, the runs screen, the
picker) shows it; any other screen (compare, leaderboard, why, moments, hosts, a confirmation) gets
one made from its active bindings, so no screen is without help (titled by the screen's
``HELP_NAME``, else its class's name)."""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.screen import Screen

from edgetui.views.screens.replay_parts import HelpScreen

__all__ = ["HELP_KEYS", "binding_keys", "show_keys"]

#: the keys that open the key list on every screen (the app's bindings; ``?`` only when no input has
#: the focus: in a text input it is a character)
HELP_KEYS = "f1,question_mark"


#: actions not listed: this key list's own, and Textual's of every screen (focus moves, copy)
_LEFT_OUT = {"help", "app.help"} | {b.action for b in Screen.BINDINGS if isinstance(b, Binding)}


def binding_keys(screen: Screen) -> list[tuple[str, str]]:
    """(keys, what they do) of ``screen``'s own bindings, then the app's, that have a description
    (a widget's generic ones, the list's cursor keys, are left out), keys of one action joined with
    `` / ``, ``F1 / ?`` last."""
    by_what: dict[str, list[str]] = {}
    app = screen.app
    active = [ab for ab in screen.active_bindings.values() if ab.node is screen or ab.node is app]
    active.sort(key=lambda ab: ab.node is app)  # (stable: each in its order of definition)
    for ab in active:
        b = ab.binding
        if not b.description or b.system or b.action in _LEFT_OUT:
            continue
        shown = app.get_key_display(b)
        keys = by_what.setdefault(_lower_first(b.description), [])
        if shown not in keys:
            keys.append(shown)
    rows = [(" / ".join(keys), what) for what, keys in by_what.items()]
    rows.append(("F1 / ?", "these keys (? only where no text input has the focus)"))
    return rows


def _lower_first(what: str) -> str:
    """A description as the key lists write them: lower case first (Textual's own say "Quit"),
    an acronym (``SQL``) kept."""
    return what if what[1:2].isupper() else what[:1].lower() + what[1:]


def show_keys(app: Any) -> None:
    """``F1`` / ``?``: the top screen's key list (its own, else :func:`binding_keys`); on the key
    list itself it closes it."""
    screen = app.screen
    if isinstance(screen, HelpScreen):
        screen.dismiss(None)
        return
    own = getattr(screen, "action_help", None)
    if callable(own):
        own()
        return
    name = getattr(screen, "HELP_NAME", None) or type(screen).__name__.removesuffix("Screen") or "Screen"
    app.push_screen(HelpScreen(binding_keys(screen), title=f"{name} keys"))
