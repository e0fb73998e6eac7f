"""The judge's queue as the live side sees it (newer SForge; docs/sforge-judge.md, "The judge queue").

* A judge with ``SFORGE_JUDGE_MAX_CONCURRENT`` / ``SFORGE_JUDGE_MAX_PENDING`` grades first in, first
  out and spools each waiting archive under ``<log_dir>/judge-pending/`` until it is graded:
  :class:`PendingCount` counts the files there (the judge's whole queue, all runs of that log dir;
  the file names are not relied on). SForge 1.1.0 has no such folder: the count is None.
* A full queue answers ``503`` with ``Retry-After: 5`` and spends no round:
  :func:`refused_by_full_judge` tells such a refusal among a transcript's sforge-submit results
  (the auto-eval ticks carry ``data.judge_full``, :mod:`edgetui.parsers.runlog`).
* The rounds of one run waiting in the queue come from its ``/history`` (status ``queued``,
  :class:`edgetui.live.judge.HistoryView`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

PENDING_DIR = "judge-pending"


def refused_by_full_judge(e: Any) -> bool:
    """A tool-result event whose sforge-submit output says the judge refused it with HTTP 503."""
    r = (e.data or {}).get("submit_result") if isinstance(e.data, dict) else None
    return isinstance(r, dict) and r.get("rejected") == "judge_full"


def count_pending(folder: Path) -> Optional[int]:
    """Regular files in ``folder`` (a ``judge-pending`` folder); None when it is not a folder."""
    try:
        with os.scandir(folder) as it:
            return sum(1 for d in it if d.is_file(follow_symlinks=False))
    except OSError:  # (not a folder, or gone: None, as documented)
        return None


class PendingCount:
    """``judge-pending`` file counts of runs' log dirs, each folder counted at most every ``interval_s``.

    A run folder is ``<log_dir>/runs/<run>/<task>`` (or ``<log_dir>/runs/<machine>/<run>/<task>``):
    its log dir's queue is the first of ``<up>/judge-pending`` for ``up`` two or three levels above.
    """

    def __init__(self, interval_s: float = 5.0):
        self.interval_s = interval_s
        self._where: dict[Path, tuple[float, Optional[Path]]] = {}  # runs' parent folder -> (when, queue dir)
        self._count: dict[Path, tuple[float, Optional[int]]] = {}

    def pending_for(self, task_dir: Path, now: float) -> Optional[int]:
        """Archives waiting in the queue of the judge writing ``task_dir``'s log dir (None: no queue seen)."""
        key = task_dir.parent.parent
        hit = self._where.get(key)
        if hit is None or now - hit[0] >= self.interval_s:
            found = None
            for up in (key.parent, key.parent.parent):
                if (up / PENDING_DIR).is_dir():
                    found = up / PENDING_DIR
                    break
            hit = (now, found)
            self._where[key] = hit
        folder = hit[1]
        if folder is None:
            return None
        got = self._count.get(folder)
        if got is None or now - got[0] >= self.interval_s:
            got = (now, count_pending(folder))
            self._count[folder] = got
        return got[1]
