"""Run content made safe for a terminal: control characters shown escaped, never sent.

Text from a run (a transcript's text, a tool's output, a model or tool name, a log line, a run
or task folder's name) may carry terminal control sequences: OSC 52 writes the clipboard, OSC 0
retitles the window, OSC 8 makes links, ``ESC[2J`` clears the screen, the 8-bit C1 controls
(U+0080-U+009F, e.g. CSI U+009B and OSC U+009D) do the same on terminals that read them, and the
bidi overrides, isolates and marks reorder what is shown. :func:`visible` turns each such
character into its escape (``\\x1b``, ``\\x9b``, ``\\u202e``) so that what reaches the terminal
is plain text; :func:`visible_lines` does the same but keeps newlines and tabs, for a view that
shows several lines. Machine formats written to a file or a pipe keep the bytes: they do not
pass through here.

:func:`strip_sequences` removes whole escape sequences (colour codes, OSC strings) from text a
program wrote for a terminal, for the parsers that store such output as text; whatever it does
not recognise is left for :func:`visible` to escape when shown.

No Textual or Rich here: used by the CLI, the reports, the screens and the widgets alike.
"""

from __future__ import annotations

import os
import re

__all__ = ["visible", "visible_lines", "strip_sequences", "is_visible", "make_file_visible"]

#: bidi overrides (LRE RLE PDF LRO RLO), isolates (LRI RLI FSI PDI), marks (LRM RLM ALM) and
#: the line / paragraph separators (a terminal may break a one-line row at them)
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C, 0x2028, 0x2029]


def _escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


_LINES_TABLE: dict[int, str] = {cp: _escape(cp) for cp in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *_BIDI]}
_LINES_TABLE.pop(0x0A)  # newline
_LINES_TABLE.pop(0x09)  # tab
_LINES_TABLE[0x0D] = "\\r"
_ONE_LINE_TABLE: dict[int, str] = {**_LINES_TABLE, 0x0A: "\\n", 0x09: "\\t"}


def visible(s: str) -> str:
    """``s`` on one line with every control character shown escaped, never sent to a terminal:
    ESC as ``\\x1b``, a newline as ``\\n``, a tab as ``\\t``, a carriage return as ``\\r``, DEL
    as ``\\x7f``, a C1 control as ``\\x9b``, a bidi control as ``\\u202e``."""
    if s.isprintable():  # (every character escaped here is one Python calls unprintable)
        return s
    return s.translate(_ONE_LINE_TABLE)


def visible_lines(s: str) -> str:
    """:func:`visible` keeping newlines and tabs, for a view that shows several lines."""
    return s.translate(_LINES_TABLE)


def is_visible(s: str) -> bool:
    """True when ``s`` holds nothing :func:`visible_lines` would escape."""
    return visible_lines(s) == s


#: a whole escape sequence, 7-bit or 8-bit: an OSC / DCS / SOS / PM / APC string up to its
#: terminator (BEL or ST), a CSI with its parameters, or a two-character escape
_SEQUENCE_RE = re.compile(
    r"(?:\x1b[\]P^_X]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|\x1b[ -/]*[0-~]"
)
_INTRODUCER_RE = re.compile(r"[\x1b\x90-\x9f]")


def strip_sequences(s: str) -> str:
    """``s`` without its escape sequences (colour codes, OSC strings such as titles, links and
    clipboard writes); a lone or unfinished ESC stays (and is escaped when shown)."""
    if _INTRODUCER_RE.search(s) is None:
        return s
    return _SEQUENCE_RE.sub("", s)


def make_file_visible(path: "str | os.PathLike[str]") -> None:
    """Rewrite the file at ``path`` (a private copy made for a pager) as :func:`visible_lines`
    shows it, in UTF-8: a pager told to pass raw bytes (``LESS=-R``) then shows escapes, never
    sequences. A line's ending (``\\n`` or ``\\r\\n``) stays; bytes that are not UTF-8 become
    ``\\xNN``. Raises ``OSError`` when the file cannot be read or written."""
    tmp = os.fspath(path) + ".visible"
    with open(path, "rb") as src, open(tmp, "wb") as dst:
        os.chmod(tmp, 0o600)
        for line in src:
            end = b"\r\n" if line.endswith(b"\r\n") else b"\n" if line.endswith(b"\n") else b""
            body = line[: len(line) - len(end)].decode("utf-8", "backslashreplace")
            dst.write(visible_lines(body).encode("utf-8") + end)
    os.replace(tmp, path)
