"""State the live supervisor keeps per watched run and round, and the constants and patterns its parts
share (core: no Textual; see :mod:`edgetui.live.supervisor`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from edgetui.events import Event
from edgetui.redact import redact_text
from edgetui.parsers import sforge_dir as sd
from edgetui.records import RunInfo, SubmissionRecord, TaskInfo
from edgetui.hosts.container_info import ContainerInfo
from edgetui.live.tail import TailSource

TRANSCRIPT = "agent_output.txt"
RUN_LOG = "run_agent.log"
TICKS = "auto_eval_ticks.log"
DOCKER_SOURCE = "live/docker"
#: whole files of a task dir whose appearance/change re-runs the file part of the ingest
WHOLE_FILES = (
    "final_result.json",
    "started_at",
    "run_config.json",
    "evolve_state.json",
    "run_history.json",
    "game_history.json",
)
FULL_CHECK_S = 60.0  # present whole files / graded rounds are re-checked this often (overwrites)
#: events timed this long before their run's start are pointed out (see edgetui.live.run_files.RunFiles)
EARLY_EVENT_S = 86400.0
MESSAGE_TTL_S = 600.0  # a run's transient one-line message (new generation, refresh problem) shows this long

LOG_HEAD_RE = re.compile(
    rb"^(?:\xef\xbb\xbf)?(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3}) - ([A-Z]+) - ?(.*)$"
)
ENDING_RE = re.compile(r"^(?:Agent finished: |Run interrupted by user|Done: |Done \(game\))")
JUDGE_STARTED_RE = re.compile(rb"Judge container started: ([0-9a-f]{12,64})")
JUDGE_DONE_RE = re.compile(rb" - INFO - Container \S+ removed\.|Removing container |Failed to remove container ")
JUDGE_ERR_RE = re.compile(rb"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} - (?:ERROR|CRITICAL) - (.*)$", re.M)
#: the judge's end of the evaluation in run_instance.log (``run_evaluation.py``, SForge 1.1.0:
#: ``Test runtime: 25.07s, timed_out: True``; docs/sforge-run-folders.md §4.2)
TEST_RUNTIME_RE = re.compile(rb" - INFO - Test runtime: ([\d.]+)s, timed_out: (True|False)")
_STATUS_ORDER = {"running": 0, "grading": 0, "gone": 1, "aborted": 2, "finished": 3}


def stat_signature(p: str | os.PathLike[str]) -> Optional[tuple]:
    try:
        st = os.stat(p)
    except OSError:  # (gone or unreadable: no signature, as documented)
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def kind_of(e: Event) -> str:
    k = e.kind
    return k if type(k) is str else k.value


@dataclass
class RoundState:
    """One ``submissions/<round>/`` folder as watched."""

    name: str
    kind: str
    first_seen: float
    report_sig: Optional[tuple] = None
    log_sig: Optional[tuple] = None
    has_report: bool = False
    container_ids: set[str] = field(default_factory=set)
    log_terminal: bool = False  # judge cleanup or an ERROR record in run_instance.log
    log_error: Optional[str] = None
    terminal_seen: Optional[float] = None
    judge_gone_since: Optional[float] = None
    judge_seen: bool = False  # its judge container was listed by the local engine at least once
    sid: Optional[str] = None
    failed: Optional[str] = None  # reason, once the grading is known to have failed
    in_flight: bool = False
    #: the evaluation's runtime (s) when run_instance.log says it timed out (before its report.json)
    log_timed_out_s: Optional[float] = None


@dataclass
class RunState:
    key: str
    loc: sd.RunLocation
    info: RunInfo
    task: TaskInfo
    first_seen: float
    fmt: Optional[str] = None
    sources: dict[str, TailSource] = field(default_factory=dict)
    file_sigs: dict[str, Optional[tuple]] = field(default_factory=dict)
    last_full_check: float = 0.0
    subs_sig: Optional[tuple] = None
    rounds: dict[str, RoundState] = field(default_factory=dict)
    subs: list[SubmissionRecord] = field(default_factory=list)
    # transcript / logs
    pending: dict[str, float] = field(default_factory=dict)
    last_growth_t: Optional[float] = None
    last_activity_t: Optional[float] = None
    resume_times: list[float] = field(default_factory=list)
    error_times: list[float] = field(default_factory=list)
    last_error_msg: Optional[str] = None
    ending_since: Optional[float] = None
    tick_sids: dict[str, str] = field(default_factory=dict)  # submission id -> round
    tick_error_times: list[float] = field(default_factory=list)
    last_tick_error: Optional[str] = None
    judge_full_times: list[float] = field(default_factory=list)  # submissions refused with HTTP 503
    # containers
    container: Optional[ContainerInfo] = None
    container_seen_id: Optional[str] = None
    container_state: Optional[str] = None  # last recorded (running/exited/.../gone)
    container_ended_t: Optional[float] = None
    operator_action: Optional[str] = None  # "stop" / "kill" asked by the operator for the current container
    judges: list[ContainerInfo] = field(default_factory=list)
    games: list[ContainerInfo] = field(default_factory=list)
    judge_states: dict[str, str] = field(default_factory=dict)
    cpu_percent: Optional[float] = None
    mem_bytes: Optional[int] = None
    token: Optional[str] = None
    history: Any = None
    # database side
    row: dict[str, Any] = field(default_factory=dict)
    row_read_t: Optional[float] = None  # when ``row`` was read (its last_event_at is bounded by it)
    last_new_best_t: Optional[float] = None
    new_events: int = 0
    last_event_t: Optional[float] = None
    tok_delta: list[int] = field(default_factory=lambda: [0, 0, 0, 0])  # tokens since the last finalize
    cost_delta: float = 0.0
    dir_sig: Optional[int] = None
    dirty_files: bool = True
    dirty_finalize: bool = False
    last_finalize: float = 0.0
    last_full_finalize: float = 0.0  # the last finalize that recomputed the aggregates (RunFiles.refresh_files_many)
    early_events: int = 0  # events timed long before the run's start, last said (see RunFiles.finalize)
    recorded_status: Optional[str] = None
    recorded_infra: Optional[bool] = None
    #: the image digests its work and judge containers ran (in the order seen) and the
    #: ``(work_image, judge_image)`` last written to its ``runs`` row
    work_images: list[str] = field(default_factory=list)
    judge_images: list[str] = field(default_factory=list)
    recorded_images: Optional[tuple] = None
    row_sig: Optional[tuple] = None  # live figures last written to the runs row
    sub_cache: dict[str, tuple] = field(default_factory=dict)  # round -> (folder signature, its events)
    rec_cache: dict[str, tuple] = field(default_factory=dict)  # round -> (folder signature, its record)
    # state
    status: str = "running"
    deleted: bool = False
    message: Optional[str] = None
    message_t: float = 0.0  # when set; transient messages are shown for MESSAGE_TTL_S
    message_sticky: bool = False
    fmt_pending: bool = False  # agent_output.txt exists but its format cannot be told yet
    conds: list = field(default_factory=list)
    aligned: Optional[tuple] = None  # (finished, started_at, ended_at) at the last alignment (RunFiles.finalize)
    end_marked: bool = False  # the finished run's transcript end was read (its parser's finish())
    upserted_secrets: int = -1  # secrets known when ``info`` was last written to the runs row (-1: not by us)

    td: Optional[Path] = None  # the task dir (cached; loc.task_dir)
    # asleep (edgetui.live.dormant): the recorded tree signature, the cheap check's stats, the LiveRun shown
    sleep_digest: Optional[str] = None
    sleep_cheap: Optional[tuple] = None
    sleep_sig: Any = None  # TreeSignature taken while falling asleep (phase 1), else None
    sleep_t: float = 0.0
    sleep_mark: Optional[tuple] = None
    live: Any = None
    live_host_state: Optional[str] = None

    @property
    def task_dir(self) -> Path:
        td = self.loc.task_dir
        if self.td is None or (self.td is not td and self.td != td):  # same object: no Path comparison
            self.td = td if isinstance(td, Path) else Path(td)
        return self.td

    @property
    def finished(self) -> bool:
        return self.info.final is not None

    def log_ended(self) -> None:
        """Its run_agent.log gets no more lines (the harness ended): a held ERROR record is recorded
        final, as an offline ingest records it (:attr:`TailSource.ended`)."""
        src = self.sources.get(RUN_LOG)
        if src is not None:
            src.ended = True

    def settled_rounds(self) -> set[str]:
        """Rounds whose grading the run's files have ended: a ``report.json`` on disk, or a grading
        known to have failed (the judge container gone, its log ended). The judge's history, polled
        every few minutes, only adds what these cannot tell."""
        return {n for n, rd in self.rounds.items() if rd.has_report or rd.failed}

    def judge_in_flight(self) -> tuple[list[str], list[str]]:
        """``(grading, queued)``: the rounds the judge's last /history said were grading or queued,
        less the rounds the files have settled since (issue 36: a history polled every 5 minutes
        kept a run ``grading`` up to 5 minutes after its report landed)."""
        h = self.history
        if h is None or not h.ok or not h.running:
            return [], []
        settled = self.settled_rounds()
        return [r for r in h.running if r not in settled], [r for r in h.queued if r not in settled]

    def eval_timeouts(self) -> dict[str, str]:
        """Round -> what the judge says of an evaluation that ran out of the task's ``eval_timeout``:
        the round's ``report.json`` (``timed_out``, ``runtime_seconds``), else its run_instance.log
        (``Test runtime: …, timed_out: True``). SForge 1.1.0's /history has no ``timed_out``: there
        such a round is only "completed, 0 tests, no summary"."""
        out: dict[str, str] = {}
        limit = self.task.eval_timeout
        for rec in self.subs:
            if rec.timed_out:
                out[rec.round] = timed_out_text(rec.runtime_s, limit, "report.json")
        for n, rd in self.rounds.items():
            if n not in out and rd.log_timed_out_s is not None:
                out[n] = timed_out_text(rd.log_timed_out_s, limit, "run_instance.log")
        h = self.history
        if h is not None and h.ok:  # a newer judge's history says it too
            for n, why in h.timed_out.items():
                out.setdefault(n, why)
        return out


def timed_out_text(runtime_s: Optional[float], limit_s: Optional[float], where: str) -> str:
    """``evaluation timed out after 25 s (eval_timeout 25 s; report.json)``."""
    after = f" after {runtime_s:.0f} s" if isinstance(runtime_s, (int, float)) else ""
    lim = f"eval_timeout {limit_s:g} s; " if isinstance(limit_s, (int, float)) else ""
    return f"evaluation timed out{after} ({lim}{where})"


#: seconds between full rescans of the runs roots while the file watcher reports new directories (a
#: safety net: a rescan of a 750-run root is ~0.2 s of a core, 30 s made it most of an idle watch's cost)
WATCHED_DISCOVERY_S = 300.0


def plus(recorded: Optional[int], delta: int) -> Optional[int]:
    """A recorded token count plus what arrived since; None (nothing counted, as the offline ingest
    leaves it) while both are nothing."""
    if recorded is None and not delta:
        return None
    return int(recorded or 0) + delta


def mtime(p: Path) -> Optional[float]:
    try:
        return p.stat().st_mtime
    except OSError:  # (gone or unreadable: no mtime)
        return None


def set_message(rs: RunState, msg: str, now: float, sticky: bool = False) -> None:
    """Set the run's one-line message (redacted; shown for MESSAGE_TTL_S unless ``sticky``)."""
    rs.message, rs.message_t, rs.message_sticky = redact_text(msg), now, sticky
