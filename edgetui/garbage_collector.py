"""The one place that changes the cyclic garbage collector's settings (``gc.freeze``, thresholds).

The collector is one per process, so its settings are: three users changed them on their own and
undid each other (the end of a parse's :func:`fewer_collections` unfroze the heap the live
supervisor had frozen for good, or the one a replay screen had frozen while it was open).
:data:`COLLECTOR` keeps who needs what: the heap is unfrozen only when no holder and no
:func:`fewer_collections` scope needs it frozen any more, and the thresholds come back when the
last scope ends. ``gc.freeze`` cannot be undone for a part of the heap, so a holder's release
while another still holds leaves everything frozen until the last one goes.
"""

import gc
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

__all__ = ["GarbageCollector", "COLLECTOR", "fewer_collections"]

#: the thresholds while a big file is parsed (see :meth:`GarbageCollector.fewer_collections`)
PARSE_THRESHOLDS = (200_000, 50, 50)


class GarbageCollector:
    """Who holds the heap frozen, and the scopes of relaxed thresholds; see the module's text."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: set[int] = set()  # id() of the owners that froze the heap for their lifetime
        self._scopes = 0  # open fewer_collections scopes
        self._thresholds: Optional[tuple[int, int, int]] = None  # before the first open scope

    def frozen(self) -> bool:
        """Is anything frozen (by a holder, a scope, or anyone calling ``gc.freeze`` directly)?"""
        return bool(self._holders or self._scopes or gc.get_freeze_count())

    def hold_frozen(self, owner: object, collect_young: bool = False) -> None:
        """Move the objects alive now out of the collector's scans until ``owner`` releases
        (:meth:`release`); ``collect_young`` first frees the young garbage (``gc.collect(1)``)."""
        with self._lock:
            if collect_young:
                gc.collect(1)
            gc.freeze()
            self._holders.add(id(owner))

    def release(self, owner: object) -> None:
        """``owner`` no longer needs the heap frozen: unfrozen if no one else does."""
        with self._lock:
            if id(owner) in self._holders:
                self._holders.discard(id(owner))
                self._unfreeze_if_unneeded()

    def _unfreeze_if_unneeded(self) -> None:
        if not self._holders and not self._scopes:
            gc.unfreeze()

    @contextmanager
    def fewer_collections(self) -> Iterator[None]:
        """Cyclic GC mostly off while a big file is parsed: the parsers allocate millions of
        short-lived containers (freed by reference counting) and the default thresholds made the
        collector rescan every live batch thousands of times (~30 % of parse + Arrow time). Objects
        alive before are frozen out of the scans; collections still run, rarely. Scopes that overlap
        (nested, or in several threads) share the first one's setting, restored when the last one
        ends: the offline ingest holds one around all its runs (one scope per transcript cost a full
        collection of every live object at each of its ends: ~1 ms a transcript, 608 in
        bench_scale's root)."""
        with self._lock:
            if not self._scopes:
                self._thresholds = gc.get_threshold()
                gc.freeze()
                gc.set_threshold(*PARSE_THRESHOLDS)
            self._scopes += 1
        try:
            yield
        finally:
            with self._lock:
                self._scopes -= 1
                if not self._scopes:
                    if self._thresholds is not None:
                        gc.set_threshold(*self._thresholds)
                    self._unfreeze_if_unneeded()


#: the process's one collector, so its one owner
COLLECTOR = GarbageCollector()
fewer_collections = COLLECTOR.fewer_collections
