"""edgetui: supervise and replay long-horizon SForge / EdgeBench agent runs.

Packages by stage, each importing only those below it (checked by tests/test_contracts.py from
pyproject.toml's [tool.importlinter]; the map is at the top of DESIGN.md):

    cli        the ``edgetui`` command line
    views      the Textual app, screens and widgets (the only Textual importers)
    live       the supervisor: runs roots, containers, judge polling, alarms, as they happen
    analysis   curves, the forecast's prior, the why of a new best, reports
    record     the ingest, the Recorder (the only writer of the DuckDB file), derived rows
    store      the database file, its schema, the holder socket, the read side
    hosts      where runs live: this machine, SSH hosts, container engines
    parsers    bytes of one source -> typed events; the parsing process
    replay     time logic without I/O: cursor, selection, rescale, moments, fits (edgetui.replay)

The modules directly in this package are the base every stage uses: the event model
(:mod:`edgetui.events`), records, user errors, control characters, redaction, Python-version
differences, the one ISO-8601 time parser (:mod:`edgetui.times`) and the samples' location; they import nothing of the stages.
"""

__version__ = "0.1.0"
