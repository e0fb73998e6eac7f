"""Number, time and kind formatting shared by the widgets (pure functions, no I/O)."""

from __future__ import annotations

from typing import Any, Optional

from rich.text import Span, Text

from edgetui.control_chars import visible, visible_lines
from edgetui.quantities import (  # noqa: F401  (one formatter per quantity, shared with the command line)
    finite,
    fmt_best,
    fmt_count,
    fmt_hours,
    fmt_pct,
    fmt_score,
    fmt_subs,
    fmt_usd,
    fmt_utc,
    plural,
)

from edgetui.replay.cursor import format_elapsed

__all__ = [
    "visible_text",
    "KIND_LABEL",
    "set_border",
    "text_sig",
    "KIND_STYLE",
    "STATUS_STYLE",
    "fmt_best",
    "fmt_count",
    "fmt_hours",
    "fmt_subs",
    "plural",
    "fmt_elapsed",
    "fmt_pct",
    "fmt_score",
    "fmt_usd",
    "fmt_utc",
    "kind_label",
    "kind_style",
    "prior_note",
]

fmt_elapsed = format_elapsed

#: Short labels of event kinds for the 12-column kind column.
KIND_LABEL = {
    "run_config": "config",
    "run_start": "run start",
    "run_end": "run end",
    "segment_start": "segment ▶",
    "segment_end": "segment ■",
    "resume": "resume",
    "log": "log",
    "infra_error": "INFRA ERR",
    "session_init": "session",
    "agent_message": "message",
    "user_message": "user",
    "thinking": "thinking",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "stop_hook_block": "stop hook",
    "compaction": "compaction",
    "system": "system",
    "token_usage": "tokens",
    "agent_result": "agent result",
    "agent_error": "agent error",
    "submission_sent": "submit →",
    "judge_result": "graded",
    "auto_eval_sample": "auto-eval",
    "auto_eval_error": "auto-eval err",
    "game_step": "game step",
    "game_result": "game graded",
    "container_state": "container",
    "resource_sample": "resources",
    "alarm": "ALARM",
    "annotation": "note",
    "parse_error": "parse error",
}

#: Rich styles of event kinds (ANSI colour names so Textual themes map them).
KIND_STYLE = {
    "tool_call": "cyan",
    "tool_result": "dim",
    "thinking": "magenta italic",
    "agent_message": "",
    "user_message": "blue",
    "judge_result": "bold green",
    "game_result": "bold green",
    "submission_sent": "yellow",
    "auto_eval_sample": "green",
    "infra_error": "bold red",
    "agent_error": "red",
    "auto_eval_error": "red",
    "parse_error": "red",
    "alarm": "bold red",
    "stop_hook_block": "yellow",
    "resume": "bold yellow",
    "segment_start": "bold blue",
    "segment_end": "blue",
    "run_start": "bold blue",
    "run_end": "bold blue",
    "compaction": "yellow",
    "log": "dim",
    "system": "dim",
    "token_usage": "dim",
    "resource_sample": "dim",
    "container_state": "blue",
    "annotation": "bold yellow",
}

STATUS_STYLE = {
    "running": "bold green",
    "completed": "green",
    "finished": "green",
    "aborted": "red",
    "failed": "red",
    "error": "red",
    "infra_error": "red",
    "stalled": "yellow",
}


def kind_label(kind: Optional[str]) -> str:
    return KIND_LABEL.get(kind or "", (kind or "?").replace("_", " "))


def kind_style(kind: Optional[str]) -> str:
    return KIND_STYLE.get(kind or "", "")


def text_sig(text: Any) -> tuple:
    """What a Rich ``Text`` shows (plain text, base style, styled spans): equal signatures draw alike."""
    return (
        text.plain,
        str(getattr(text, "style", "")),
        tuple((s.start, s.end, str(s.style)) for s in getattr(text, "spans", ())),
    )


def set_static(widget: Any, content: Any) -> bool:
    """``widget.update(content)`` only when the content changed (plain text and styles); without a
    layout pass when the number of lines is unchanged (the widget keeps its size). Returns whether it
    updated. Saves a screen-wide layout refresh per update on screens refreshed several times a second.
    Text is shown as typed (a ``str`` is not read as markup) with control characters escaped."""
    if isinstance(content, str):
        content = Text(content)
    if isinstance(content, Text):
        content = visible_text(content)
    if isinstance(content, str):
        sig: Any = ("s", content)
        lines = content.count("\n")
    else:
        plain = getattr(content, "plain", None)
        if plain is None:
            widget.update(content)
            return True
        sig = text_sig(content)
        lines = plain.count("\n")
    old = getattr(widget, "_edgetui_sig", None)
    if old is not None and old[0] == sig:
        return False
    widget.update(content, layout=old is None or old[1] != lines)
    widget._edgetui_sig = (sig, lines)
    return True


def set_border(widget: Any, title: Any = None, subtitle: Any = None) -> bool:
    """Set ``widget``'s border title / subtitle (str or Text; ``None`` leaves one as it is) only when
    what it shows changed: each assignment repaints the whole widget, so a table refreshed twice a
    second would otherwise redraw every row it shows. Returns whether anything was set. A title is
    shown as typed (a ``str`` is not read as markup) with control characters escaped."""
    done = False
    for attr, value in (("border_title", title), ("border_subtitle", subtitle)):
        if value is None:
            continue
        value = visible_text(Text(value) if isinstance(value, str) else value, one_line=True)
        sig = text_sig(value) if isinstance(value, Text) else value
        key = f"_edgetui_{attr}"
        held = getattr(widget, key, None)  # (what we set, the label object Textual made of it)
        if held is not None and held[0] == sig and held[1] is getattr(widget, f"_{attr}", None):
            continue  # unchanged, and nobody else set the label since
        setattr(widget, attr, value)
        setattr(widget, key, (sig, getattr(widget, f"_{attr}", None)))
        done = True
    return done


def prior_note(forecast: Optional[dict]) -> Optional[str]:
    """What a live forecast's prior is still waiting for (``edgetui.analysis.forecast_prior.header_forecast``'s
    ``prior_level`` and ``prior_pending``): ``default prior: fitting 20 earlier runs`` while none of
    its feeding runs has a stored fit, ``prior: fitting 1 earlier run`` while some have (or a stored
    fit is being re-checked); ``None`` when the prior is complete."""
    n = len((forecast or {}).get("prior_pending") or ())
    if not n:
        return None
    runs = f"{n} earlier run{'s' if n != 1 else ''}"
    if (forecast or {}).get("prior_level") == "default":
        return f"default prior: fitting {runs}"
    return f"prior: fitting {runs}"


def visible_text(text: Text, one_line: bool = False) -> Text:
    """``text`` (a Rich ``Text`` built from run content) with its control characters shown escaped
    (:func:`edgetui.control_chars.visible_lines`, or :func:`~edgetui.control_chars.visible` with
    ``one_line``), its styles kept on the same characters. ``text`` itself when nothing changes."""
    escape = visible if one_line else visible_lines
    plain = text.plain
    if escape(plain) == plain:
        return text
    cuts = sorted({0, len(plain), *(x for s in text.spans for x in (s.start, s.end) if 0 <= x <= len(plain))})
    pos: dict[int, int] = {}
    pieces: list[str] = []
    n = 0
    for a, b in zip(cuts, cuts[1:]):
        pos[a] = n
        piece = escape(plain[a:b])
        pieces.append(piece)
        n += len(piece)
    pos[cuts[-1]] = n
    spans = [Span(pos[s.start], pos[s.end], s.style) for s in text.spans if s.start in pos and s.end in pos]
    return Text(
        "".join(pieces),
        style=text.style,
        justify=text.justify,
        overflow=text.overflow,
        no_wrap=text.no_wrap,
        end=text.end,
        tab_size=text.tab_size,
        spans=spans,
    )
