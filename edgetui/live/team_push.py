"""The live watcher's continuous sync with the team record (docs/team.md, "Continuous push").

The process holding the database (``edgetui watch``, the app watching runs) pushes what it recorded
and pulls the others' runs every :attr:`TeamPush.interval_s` seconds, in a thread of its own, through
a cursor of the held connection (never a second open of the file). A failure (the server down, a
conflict with the recorder's writes) is said once through ``note`` and kept as :attr:`TeamPush.error`
(a state line) until a sync succeeds again; it is retried with a doubling wait, up to ten intervals.
:meth:`TeamPush.close` stops the thread and joins it (a sync under way is finished first).
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

import duckdb

from edgetui.events import one_line
from edgetui.record import team_record
from edgetui.record.team_record import TeamConfig, TeamError

__all__ = ["TeamPush", "TeamError", "configured_team"]


def configured_team() -> Optional[TeamConfig]:
    """The team record's configuration when one is configured (``EDGETUI_TEAM_URL`` or ``team.toml``),
    else None; ``TeamError`` for a configuration that does not load (one line)."""
    return team_record.load_config() if team_record.configured() else None


class TeamPush:
    """Sync ``conn``'s database with the team record ``cfg`` every ``interval_s`` seconds (the first
    at once), in a thread started by :meth:`start`. ``note`` gets the one-line news (from that thread)."""

    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection,
        cfg: TeamConfig,
        note: Callable[[str], None],
        interval_s: Optional[float] = None,
    ):
        self.cfg = cfg
        self.interval_s = float(interval_s if interval_s is not None else cfg.push_interval_s)
        self._conn = conn.cursor()  # our own cursor of the held connection (DuckDB: one per thread)
        self._note = note
        self._stop = threading.Event()
        self._done = threading.Condition()
        self._thread: Optional[threading.Thread] = None
        #: the last failure, one line (None: the last sync went through)
        self.error: Optional[str] = None
        #: the last sync's report line
        self.last: str = ""
        #: syncs that went through, and that failed (tests wait on them: :meth:`wait_syncs`)
        self.syncs = 0
        self.failures = 0
        self._wait = self.interval_s  # the wait after a sync; doubled after each failure in a row

    def start(self) -> TeamPush:
        self._thread = threading.Thread(target=self._run, name="edgetui-team-push")  # joined by close()
        self._thread.start()
        return self

    def _run(self) -> None:
        wait = 0.0
        try:
            while not self._stop.wait(wait):
                wait = self._once()
        finally:
            self._conn.close()

    def _once(self) -> float:
        """One sync; the seconds to wait before the next."""
        try:
            report = team_record.sync(self._conn, self.cfg)
        except Exception as e:  # noqa: BLE001 - any failure is said once and retried; the watcher goes on
            text = one_line(f"team record: sync failed, retrying: {type(e).__name__}: {e}", 200)
            if self.error is None:
                self._note(text)
            self.error = text
            with self._done:
                self.failures += 1
                self._done.notify_all()
            self._wait = min(self.interval_s * 10, self._wait * 2)
            return self._wait
        if self.error is not None:
            self._note("team record: reachable again, synced")
        self.error = None
        self.last = report.line()
        with self._done:
            self.syncs += 1
            self._done.notify_all()
        self._wait = self.interval_s
        return self.interval_s

    def wait_syncs(self, n: int, timeout: float) -> bool:
        """Wait until ``n`` syncs went through in all (or ``timeout`` seconds); whether they did."""
        with self._done:
            return self._done.wait_for(lambda: self.syncs >= n, timeout)

    def wait_failures(self, n: int, timeout: float) -> bool:
        with self._done:
            return self._done.wait_for(lambda: self.failures >= n, timeout)

    def close(self) -> None:
        """Stop and join the thread (a sync under way finishes first). Idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
