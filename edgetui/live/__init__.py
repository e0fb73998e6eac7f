"""Live supervision (core, no Textual): discovery of runs roots and containers,
tailing by byte offset into the same database, statuses, alarms, judge polling.

The Textual views read :class:`edgetui.live.model.LiveRun` snapshots only.
"""
