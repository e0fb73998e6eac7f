"""What the parts of the live supervisor share (core: no Textual): the database cursor and the
Recorder, the tailer, the settings and the clock, the runs watched in full, the notes said to the
user and the live events of a refresh. Each part (:mod:`edgetui.live.containers`,
:mod:`edgetui.live.run_files`, :mod:`edgetui.live.register`, :mod:`edgetui.live.dormant`,
:mod:`edgetui.live.run_rows`, :mod:`edgetui.live.watching`) gets this and, explicitly, the other
parts it calls; :class:`edgetui.live.supervisor.Supervisor` owns them all.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import duckdb

from edgetui.events import Event, Kind, TimeSource, one_line
from edgetui.live.alarms import AlarmSettings
from edgetui.live.run_state import DOCKER_SOURCE, RunState
from edgetui.live.tail import Tailer
from edgetui.record.recorder import Recorder
from edgetui.records import TaskInfo
from edgetui.redact import redact_text

#: a note said again within this many seconds is not shown twice
NOTE_REPEAT_S = 300.0


class Notes:
    """One-line notes for the user: redacted with the recorder's secrets, a line said in the last
    :data:`NOTE_REPEAT_S` seconds not said again. ``kept``: the last 200 ``(time, line)``;
    ``this_refresh``: the lines of the current refresh (the supervisor's messages)."""

    def __init__(self, clock: Callable[[], float], secrets: set[str]):
        self.clock = clock
        self.secrets = secrets  # the recorder's set (it grows while runs are found)
        self.kept: deque[tuple[float, str]] = deque(maxlen=200)
        self.this_refresh: list[str] = []

    def note(self, msg: str) -> None:
        msg = redact_text(msg, self.secrets) or ""
        t = self.clock()
        if any(m == msg and t - mt < NOTE_REPEAT_S for mt, m in list(self.kept)[-20:]):
            return
        self.kept.append((t, msg))
        self.this_refresh.append(msg)


class LiveEvents:
    """The events a refresh observes itself (container states, resource samples, alarms,
    acknowledgements), recorded together at its end; ``sub`` numbers keep their ids apart."""

    def __init__(self) -> None:
        self.seq = 0
        self.pending: list[Event] = []

    def next_sub(self) -> int:
        self.seq += 1
        return self.seq % 100000

    def add(self, ev: Event) -> None:
        self.pending.append(ev)

    def record(self, rs: RunState, kind: Kind, t: float, summary: str, data: dict, gen: str) -> None:
        """A container event of ``rs`` observed at ``t`` (source ``live/docker``)."""
        self.pending.append(
            Event(
                run_key=rs.key,
                kind=kind,
                source=DOCKER_SOURCE,
                generation=gen[:16],
                offset=int(t * 1000),
                sub=self.next_sub(),
                t=t,
                t_source=TimeSource.OBSERVED,
                summary=one_line(summary),
                data=data,
            )
        )


@dataclass
class WatchContext:
    """The state every part of the supervisor reads: ``runs`` are the runs watched in full (awake)
    by run key, ``root_host`` the host of the root each remote image's run was found under."""

    conn: duckdb.DuckDBPyConnection  # the supervisor's own cursor
    rec: Recorder
    tailer: Tailer
    settings: AlarmSettings
    clock: Callable[[], float]
    host: str
    tasks: dict[str, TaskInfo]
    notes: Notes
    events: LiveEvents
    runs: dict[str, RunState] = field(default_factory=dict)
    root_host: dict[str, str] = field(default_factory=dict)

    def note(self, msg: str) -> None:
        self.notes.note(msg)
