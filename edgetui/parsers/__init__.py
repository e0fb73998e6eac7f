"""Parsers: raw bytes of one source file -> typed :class:`edgetui.events.Event` objects.

No parser touches the database or Textual. Line-oriented parsers follow the
:class:`edgetui.parsers.base.LineParser` protocol so the recorder (offline) and
the live tailer feed them the same way and can resume at a byte offset.
"""
