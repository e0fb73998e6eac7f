"""The database file: its schema and migrations, opening and checking it, the holder's socket that
answers other edgetui processes (and reading through it, as a browser tab does: ``holder_connection``),
and the read side every view reads through (queries, timeline pages).
May import ``edgetui.parsers``, ``edgetui.replay`` and the base modules of ``edgetui``."""
