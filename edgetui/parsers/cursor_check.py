"""Does a line file still hold what its saved cursor was read from? (core, no Textual)

A cursor (``source_cursors``) says where reading a file resumes: its generation (named by the
first line) and byte offset. A file cut below that offset, or replaced by another with the same
first line (a run folder deleted and made again, a rewrite while nothing watched it) must not be
resumed there: the lines before the offset would never be read, or be read under ids recorded
already. Told without reading the file: it is shorter than the offset, or (when it changed since
the cursor was saved) the places where its recorded lines start are not line starts of the file
any more (up to :data:`PROBES` of them, the last ones before the offset, one byte read each). A
copy of the same bytes (another inode, another mtime) is the same file. Not told: a file rewritten
with lines starting at exactly the recorded places.
"""

from __future__ import annotations

import os

from edgetui.parsers.base import open_regular

#: recorded line starts checked (the last ones before the cursor)
PROBES = 8

#: events at or above this ``sub`` are said of a file's end, not of a line start
_LINE_SUBS = 1 << 20


def moved_below(conn, run_key: str, source: str, cur: dict, path, st: os.stat_result) -> bool:
    """Is ``path`` (stat ``st``) no longer the file its cursor ``cur`` (a ``source_cursors`` row as
    :meth:`edgetui.record.recorder.Recorder.get_cursor` gives it) was saved on? See the module."""
    off = cur.get("offset")
    if off is None:
        return False
    off = int(off)
    if off > st.st_size:
        return True
    if off <= 3:
        return False
    if (
        cur.get("inode") == st.st_ino
        and cur.get("mtime") is not None
        and float(cur["mtime"]) == st.st_mtime
        and cur.get("size") == st.st_size
    ):
        return False  # untouched since the cursor was saved
    rows = conn.execute(
        'SELECT DISTINCT "offset" FROM events WHERE run_key = ? AND source = ? AND generation = ? '
        'AND "offset" > 3 AND "offset" < ? AND sub < ? ORDER BY "offset" DESC LIMIT ?',
        [run_key, source, cur.get("generation"), off, _LINE_SUBS, PROBES],
    ).fetchall()

    try:
        with open_regular(path) as fp:
            for o in [off, *(r[0] for r in rows)]:
                fp.seek(o - 1)
                if fp.read(1) != b"\n":
                    return True
    except OSError:  # unreadable now: not told (the read that follows says why)
        return False
    return False
