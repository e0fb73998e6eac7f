"""Live supervision (no Textual): discovery of runs roots and containers, tailing by byte offset
into the same database, statuses, alarms, judge polling, and remote hosts joined to the
supervisor. The views read :class:`edgetui.live.model.LiveRun` snapshots only.

May import :mod:`edgetui.analysis`, :mod:`edgetui.record`, :mod:`edgetui.store.queries`,
:mod:`edgetui.hosts`, :mod:`edgetui.parsers`, :mod:`edgetui.replay` and the base modules.
"""
