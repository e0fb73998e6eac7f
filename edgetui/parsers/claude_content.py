"""Reading what a Claude Code record holds: the text of content blocks, a tool call's one-line
brief, tool references, timestamps (ISO 8601 or epoch s / ms -> epoch seconds UTC) and token
usage (the ``usage`` object of the Anthropic Messages API). Pure functions shared by the
stream-json and session-file parsers (:mod:`edgetui.parsers.claude`); no I/O."""

from __future__ import annotations

import math
from typing import Any, Optional

import orjson

from edgetui.events import Usage, make_usage, one_line
from edgetui.times import iso8601_to_epoch

#: summaries collapse at most this many characters of a long text
SUMMARY_SCAN = 1200
SUMMARY_WIDTH = 160


def as_text(x: Any) -> Optional[str]:
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (dict, list)):
        return orjson.dumps(x).decode()
    return str(x)


def summ(text: Any, width: int = SUMMARY_WIDTH) -> str:
    """one_line() that only looks at the first SUMMARY_SCAN chars of a long text."""
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    if len(text) <= SUMMARY_SCAN:
        return one_line(text, width)
    s = one_line(text[:SUMMARY_SCAN], width)
    if not s.endswith("…"):
        s = (s[: width - 1] if len(s) >= width else s) + "…"
    return s


def _int(x: Any) -> int:
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, float) and math.isfinite(x):
        return int(x)
    return 0


def usage_of(u: Any) -> Optional[Usage]:
    if not isinstance(u, dict):
        return None
    return make_usage(
        _int(u.get("input_tokens")),
        _int(u.get("output_tokens")),
        _int(u.get("cache_read_input_tokens")),
        _int(u.get("cache_creation_input_tokens")),
    )


def usage_tuple(u: Usage) -> list[int]:
    return [u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens]


def parse_timestamp(v: Any) -> Optional[float]:
    """ISO 8601 string (:func:`edgetui.times.parse_iso8601`) or epoch s / ms (a number, or a string
    of one) -> epoch seconds UTC."""
    if isinstance(v, str):
        t = iso8601_to_epoch(v)
        if t is not None:
            return t
        try:
            return parse_timestamp(float(v))
        except ValueError:  # neither ISO 8601 nor a number: no time
            return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    if not math.isfinite(f) or f <= 0:
        return None
    if f > 1e11:  # milliseconds
        f /= 1000.0
    return f


def block_text(block: Any) -> str:
    """Text of one content block (tool_result content element)."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return "" if block is None else str(block)
    t = block.get("type")
    if t == "text":
        x = block.get("text")
        return x if isinstance(x, str) else ("" if x is None else str(x))
    if t == "tool_reference":  # a tool the result loads (tool search): the name is what it says
        name = as_text(block.get("tool_name"))
        return f"[tool_reference {name}]" if name else "[tool_reference]"
    refs = block.get("tool_references")
    if isinstance(refs, list) and refs:  # a tool search result block
        return "\n".join(block_text(b) for b in refs)
    return f"[{t or 'block'}]"


def tool_reference_names(content: Any) -> list[str]:
    """Tool names of the ``tool_reference`` blocks in a content (``{"type": "tool_reference",
    "tool_name": …}``, Anthropic's tool search), in order: a block, a list of blocks, or a tool
    search result holding ``tool_references``. Empty when there is none."""
    if isinstance(content, list):
        return [n for b in content for n in tool_reference_names(b)]
    if not isinstance(content, dict):
        return []
    if content.get("type") == "tool_reference":
        name = as_text(content.get("tool_name"))
        return [name] if name else []
    refs = content.get("tool_references")
    if isinstance(refs, list):
        return tool_reference_names(refs)
    inner = content.get("content")
    return tool_reference_names(inner) if isinstance(inner, (list, dict)) else []


def content_text(content: Any) -> str:
    """Text of a tool_result ``content``: a str, or a list of blocks joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block_text(b) for b in content)
    return block_text(content)


_BRIEF_KEYS = (
    "command",
    "file_path",
    "path",
    "pattern",
    "url",
    "query",
    "description",
    "prompt",
    "skill",
    "notebook_path",
)


def tool_brief(inp: Any) -> str:
    if isinstance(inp, dict):
        for k in _BRIEF_KEYS:
            v = inp.get(k)
            if isinstance(v, str) and v:
                return v
        if not inp:
            return ""
        try:
            return orjson.dumps(inp)[:SUMMARY_SCAN].decode("utf-8", "replace")
        except TypeError:
            return str(inp)[:SUMMARY_SCAN]
    if inp is None:
        return ""
    return str(inp)[:SUMMARY_SCAN]


def api_error_fields(o: dict[str, Any]) -> dict[str, Any]:
    """``status``, ``message``, ``attempt``, ``max_retries``, ``retry_in_ms`` of a session file's
    ``system`` / ``api_error`` record (docs/transcript-formats.md §4):
    ``{"error": {"status", "message", "formatted", ...}, "retryAttempt", "maxRetries", "retryInMs"}``;
    a field the record lacks is None."""
    err = o.get("error")
    err = err if isinstance(err, dict) else ({"message": err} if isinstance(err, str) else {})
    status = err.get("status", o.get("status"))
    message = err.get("message") or err.get("formatted")
    conn = err.get("connection")
    if not message and isinstance(conn, dict):
        message = conn.get("message") or conn.get("code")
    if not message:
        content = o.get("content")
        message = content if isinstance(content, str) and content else None
    return {
        "status": status if isinstance(status, (int, str)) and not isinstance(status, bool) else None,
        "message": as_text(message),
        "attempt": o.get("retryAttempt"),
        "max_retries": o.get("maxRetries"),
        "retry_in_ms": o.get("retryInMs"),
    }


def api_error_summary(o: dict[str, Any]) -> str:
    """``API error 3/10 (status 529): <message>`` for a ``system`` / ``api_error`` record (the
    status before the message, so a narrow list still shows it)."""
    f = api_error_fields(o)
    head = "API error"
    if f["attempt"] is not None or f["max_retries"] is not None:
        head += f" {f['attempt'] if f['attempt'] is not None else '?'}/{f['max_retries'] if f['max_retries'] is not None else '?'}"
    if f["status"] is not None:
        head += f" (status {f['status']})"
    return summ(f"{head}: {f['message'] or 'no message'}")
