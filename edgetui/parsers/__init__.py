"""Parsers: raw bytes of one source file -> typed :class:`edgetui.events.Event` objects, and the
processes that parse (the parsing process, the spare one started ahead, their Arrow batches).

No parser touches the database or Textual. Line-oriented parsers follow the
:class:`edgetui.parsers.base.LineParser` protocol so the recorder (offline) and the live tailer
feed them the same way and can resume at a byte offset. Run folder files are opened through
:mod:`edgetui.parsers.run_folder_files` (never trusting a run's files).

May import :mod:`edgetui.replay` and the base modules of ``edgetui`` only.
"""
