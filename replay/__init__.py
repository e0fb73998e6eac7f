"""Time logic shared by live and replay views: cursor, best-so-far, moments, fits.

The repository's ``replay/`` folder, installed as ``edgetui.replay`` (pyproject's package-dir), so
it cannot collide with another package named ``replay``. Logic without I/O: it may import only
the base modules of ``edgetui`` (:mod:`edgetui.records`), never a stage above it.

The interface the views, moments and analysis build on is the paged cursor
(:class:`edgetui.replay.cursor.ReplayCursor` over an :class:`edgetui.store.timeline_pages.PagedTimeline`): every event's
time and position, the marks it moves between (graded rounds, new bests, moments, folds), and
event columns only for the pages read (``None`` elsewhere). Code here takes positions and times
from the cursor, or plain rows from the database (:mod:`edgetui.record.moments_table` loads the detectors'
inputs by SQL), and never iterates a run's event columns: a run can hold a million events.
"""
