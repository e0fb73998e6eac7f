"""Analysis of recorded runs and published tables (no Textual): score at h hours, the
EdgeBench-style leaderboard, log-sigmoid fits and their look-alikes, back-tests and learning
speed. See docs/analysis.md and DESIGN.md for the definitions used.

Built, like all of :mod:`replay`, on the paged cursor's interface (:mod:`edgetui.replay.cursor`,
:class:`edgetui.store.timeline_pages.PagedTimeline`): analyses take submissions and event rows from SQL (plain
rows, read by what asks for them), and a view's positions, times and marks from its cursor, never
a run's event columns whole (a run can hold a million events)."""
