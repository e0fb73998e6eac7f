"""Alarm rules of the live supervisor (core, no Textual, no Docker).

* :class:`AlarmSettings` — every threshold is a user setting with a default;
  :func:`load_settings` reads them from ``<user config dir>/edgetui/alarms.toml``
  (both in :mod:`edgetui.record.user_settings`, which the offline ingest reads
  too: the abort threshold has one source).
* :class:`RunFacts` — what the supervisor knows about one run at one instant
  (plain data, filled by :mod:`edgetui.live.supervisor`).
* :func:`evaluate` — the conditions that hold now (pure function of facts,
  settings and ``now``). Each condition has a stable ``key``: a condition
  *episode* is the time its key stays in the evaluated set.
* :class:`AlarmBook` — turns conditions into alarms: an alarm is raised once
  per episode (when its key appears), not at every refresh; the episode ends
  when the key is absent from one evaluation.
* :class:`AlarmCommand` — runs the user's ``--on-alarm`` command with the
  alarm as JSON on stdin (non-blocking; failures become one-line notes).

Rules (``Alarm.rule``):

==================  ==========================================================
stall               no transcript growth for ``stall_after_s`` while no tool
                    call is pending (a tool call without its tool result — a
                    long command, a sforge-submit waiting for grading — is
                    not a stall, unless pending for ``stall_pending_max_s``)
no_new_best         no new best-so-far for ``no_new_best_after_s`` (counted
                    from the last new best, else from the run start)
container_exit      work container exited (not OOM) without final_result.json
                    (not when the operator stopped or killed it from edgetui)
oom                 work container OOM-killed (``State.OOMKilled``)
container_gone      work container vanished without final_result.json (idem)
infra_error         ERROR record in run_agent.log (one alarm per burst of
                    errors; a burst ends after ``infra_error_quiet_s``)
resume_loop         ``resume_loop_count`` auto-resumes within
                    ``resume_loop_window_s``
judge_error         the judge history reports a grading error for a round,
                    or the auto-eval tick log reports an error
grading_failed      a submission folder without report.json once its judge
                    container is gone (or its judge log ended), or when no
                    judge container ever appeared for it on an engine that
                    runs this harness's judges (``grading_start_grace_s``),
                    or still none after the task's eval timeout + 15 min;
                    or a history entry completed with total_tests 0 and no
                    summary
eval_timeout        an evaluation ran out of the task's ``eval_timeout``: the
                    round's report.json says ``timed_out`` (or its
                    run_instance.log ``Test runtime: …, timed_out: True``, or
                    a newer judge's history); said instead of
                    ``grading_failed`` (SForge 1.1.0's history only says "0
                    tests, no summary"), for agent and auto rounds alike
pod_event           a pod of the run (its work pod, its judge pods) has a
                    problem the cluster reports: an event FailedScheduling,
                    ErrImagePull, ImagePullBackOff, Evicted, FailedMount or
                    BackOff, or a status reason such as Evicted; the message
                    is the cluster's own words (one alarm per pod and reason)
judge_saturated     the judge refused submissions with HTTP 503 (its queue was
                    full: newer SForge, docs/sforge-judge.md) at least
                    ``judge_saturated_count`` times within
                    ``judge_saturated_window_s``, the last within that window
                    of now: auto-eval ticks ``error: 503 Server Error`` and
                    sforge-submit's ``ERROR: Failed to submit to judge server
                    (HTTP 503)``; one alarm per burst (key
                    ``judge_saturated@<first 503 of the burst>``)
==================  ==========================================================

Container alarms wait ``container_grace_s`` (the CLI writes
final_result.json seconds after removing the container) and are not raised
while the harness is visibly ending the run (``Agent finished`` seen in
run_agent.log) until ``finish_grace_s`` has passed.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Optional


from edgetui.events import Event, Kind, TimeSource, one_line
from edgetui.redact import redact_obj
from edgetui.live.model import Alarm, newest_per_key

from edgetui.record.user_settings import AlarmSettings, load_settings, settings_path  # noqa: F401 - public here too

ALARM_SOURCE = "live/alarms"

RULES = (
    "stall",
    "no_new_best",
    "container_exit",
    "oom",
    "container_gone",
    "infra_error",
    "resume_loop",
    "judge_error",
    "grading_failed",
    "eval_timeout",
    "judge_saturated",
    "pod_event",
)
CRITICAL_RULES = {"oom", "container_exit", "container_gone", "infra_error"}


# ---------------------------------------------------------------------------- facts and conditions


@dataclass
class RunFacts:
    """One run at one instant, as the supervisor sees it (times epoch UTC)."""

    run_key: str
    status: str = "running"
    finished: bool = False
    deleted: bool = False
    started_at: Optional[float] = None
    first_seen: Optional[float] = None
    #: when the watch began (the supervisor's start): a run that ended before it raises no alarm
    watch_started: Optional[float] = None
    has_transcript: bool = False
    last_growth_t: Optional[float] = None  # transcript growth (observed) or its mtime
    pending_calls: int = 0
    oldest_pending_t: Optional[float] = None
    last_new_best_t: Optional[float] = None
    best_round: Optional[str] = None
    resume_times: list[float] = field(default_factory=list)
    error_times: list[float] = field(default_factory=list)  # run_agent.log ERROR records
    last_error_msg: Optional[str] = None
    ending_since: Optional[float] = None  # 'Agent finished' seen (observed time)
    # work container (None = no container information for this run)
    container_id: Optional[str] = None
    container_name: Optional[str] = None
    container_state: Optional[str] = None  # running | exited | dead | ... | gone
    container_exit_code: Optional[int] = None
    container_oom: bool = False
    container_ended_t: Optional[float] = None  # when seen exited / gone
    container_finished_at: Optional[float] = None  # the engine's State.FinishedAt (epoch UTC), when inspected
    operator_action: Optional[str] = None  # "stop" / "kill": the operator ended this container from edgetui
    # grading
    failed_rounds: dict[str, str] = field(default_factory=dict)  # round -> reason (folder / history)
    judge_errors: dict[str, str] = field(default_factory=dict)  # round -> error text (history)
    eval_timeouts: dict[str, str] = field(default_factory=dict)  # round -> "evaluation timed out …"
    tick_error_times: list[float] = field(default_factory=list)
    last_tick_error: Optional[str] = None
    judge_full_times: list[float] = field(default_factory=list)  # submissions refused with HTTP 503
    ended_t: Optional[float] = None  # final_result.json written (epoch UTC; finished runs)
    harness_error: Optional[str] = None  # the harness ended before the agent started: its words
    #: (pod name, "Reason: the cluster's message") of the run's pods (Kubernetes)
    pod_problems: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Condition:
    rule: str
    key: str
    message: str
    severity: str = "warning"
    data: dict[str, Any] = field(default_factory=dict)


def fmt_age(s: float) -> str:
    s = max(0, int(s))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {(s % 3600) // 60:02d}m"


def _bursts(times: list[float], quiet: float) -> list[float]:
    """Start times of bursts: a time starts a burst if the previous one is more than ``quiet`` before."""
    out: list[float] = []
    prev = None
    for t in sorted(times):
        if prev is None or t - prev > quiet:
            out.append(t)
        prev = t
    return out


def _killed_from_outside(f: RunFacts) -> Optional[Condition]:
    """The work container died with a non-zero exit code, not OOM-killed and not by the operator,
    BEFORE the harness logged the agent's end (SForge stops its container only after "Agent
    finished"): killed from outside. Depending on the moment of the kill, SForge 1.1.0 either logs
    an ERROR (a docker exec on a dead container) or takes it for an agent that exited at once
    ("Agent exited after only 0.0s … not resuming") and ends the run normally; the second leaves
    no trace in the files, so this rule reads the engine's ``FinishedAt``."""
    if f.container_finished_at is None or f.container_oom or f.operator_action is not None:
        return None
    if f.container_exit_code in (None, 0) or f.container_state not in ("exited", "dead", "gone"):
        return None
    if f.ending_since is not None and f.ending_since < f.container_finished_at:
        return None  # the agent's end came first: the harness stopped its container (a normal end)
    cid = (f.container_id or "")[:12]
    return Condition(
        "container_exit",
        f"container_killed:{cid}",
        f"work container {f.container_name} was killed (exit {f.container_exit_code}) before the "
        "agent's end was logged: the run ended early",
        "critical",
        {"container": f.container_name, "exit_code": f.container_exit_code, "finished_at": f.container_finished_at},
    )


def _saturated(times: list[float], s: AlarmSettings, now: float) -> Optional[Condition]:
    """``judge_saturated`` while at least ``judge_saturated_count`` 503 refusals fall within one
    ``judge_saturated_window_s`` and the last is within that window of ``now``."""
    k = max(1, s.judge_saturated_count)
    ts = sorted(times)
    if len(ts) < k or now - ts[-1] > s.judge_saturated_window_s:
        return None
    if ts[-1] - ts[-k] > s.judge_saturated_window_s:
        return None
    start = _bursts(ts, s.judge_saturated_window_s)[-1]
    n = sum(1 for t in ts if t >= start)
    return Condition(
        "judge_saturated",
        f"judge_saturated@{int(start)}",
        f"judge saturated: {n} submissions refused with HTTP 503 (queue full) since "
        f"{fmt_age(now - start)} ago, the last {fmt_age(now - ts[-1])} ago",
        "warning",
        {"refusals": n, "first_t": start, "last_t": ts[-1]},
    )


def evaluate(f: RunFacts, s: AlarmSettings, now: float) -> list[Condition]:
    """Conditions holding for run ``f`` at ``now``.

    Finished and deleted runs have none; aborted runs only the container rules
    (an exit or OOM kill is what made them aborted).
    """
    out: list[Condition] = []
    if f.deleted:
        return out
    killed = _killed_from_outside(f)
    if f.finished and f.ended_t is not None and f.watch_started is not None and f.ended_t < f.watch_started:
        # over before this watch began (final_result.json older than the watch's start): what happened
        # then is shown (status, flags, events), not alarmed; alarms are for what happens while
        # watching (issue 36, item 6)
        return out
    if f.finished:
        # a run that ENDED by an infrastructure error (SForge logs the ERROR, removes the work
        # container and writes final_result.json within a second) raises its alarm, once per run:
        # the key is the ERROR burst's, so an alarm already raised for it while the run went on
        # (the ERROR tailed before final_result.json) is the same alarm, not a second one
        if f.error_times and f.ended_t is not None and max(f.error_times) >= f.ended_t - 60:
            start = _bursts(f.error_times, s.infra_error_quiet_s)[-1]
            out.append(
                Condition(
                    "infra_error",
                    f"infra_error@{int(start)}",
                    one_line(f"run ended by an infrastructure error: {f.last_error_msg or '?'}", 200),
                    "critical",
                    {"error_t": max(f.error_times), "ended_t": f.ended_t},
                )
            )
        elif killed is not None:  # no ERROR: SForge took the dead container for an agent that exited
            out.append(killed)
        return out
    if f.harness_error and f.container_state in ("running", "restarting", "paused"):
        out.append(
            Condition(
                "orphaned_container",
                f"orphaned:{(f.container_id or '')[:12]}",
                one_line(
                    f"work container {f.container_name} still running after the harness ended: {f.harness_error}", 200
                ),
                "critical",
                {"container": f.container_name},
            )
        )
    ending_grace = f.ending_since is not None and now - f.ending_since < s.finish_grace_s
    cid = (f.container_id or "")[:12]
    # ---- pods: what the cluster says, in its words
    seen_pod_keys: set[str] = set()
    for pod, line in f.pod_problems:
        reason = line.partition(":")[0]
        key = f"pod_event:{pod}:{reason}"
        if key in seen_pod_keys:
            continue
        seen_pod_keys.add(key)
        out.append(
            Condition(
                "pod_event",
                key,
                one_line(f"pod {pod}: {line}", 240),
                "critical" if reason in ("Evicted", "FailedScheduling") else "warning",
                {"pod": pod, "reason": reason},
            )
        )
    # ---- work container
    if f.container_oom:
        out.append(
            Condition(
                "oom",
                f"oom:{cid}",
                f"work container {f.container_name} was OOM-killed"
                + (f" (exit {f.container_exit_code})" if f.container_exit_code is not None else ""),
                "critical",
                {"container": f.container_name, "exit_code": f.container_exit_code},
            )
        )
    elif f.operator_action is not None and f.container_state in ("exited", "dead", "gone"):
        pass  # the operator stopped or killed it (asked and confirmed): expected, not an alarm
    elif f.container_state in ("exited", "dead") and f.container_ended_t is not None:
        if now - f.container_ended_t >= s.container_grace_s and not ending_grace:
            out.append(
                Condition(
                    "container_exit",
                    f"container_exit:{cid}",
                    f"work container {f.container_name} exited with code {f.container_exit_code} "
                    "and no final_result.json",
                    "critical",
                    {"container": f.container_name, "exit_code": f.container_exit_code},
                )
            )
    elif f.container_state == "gone" and f.container_ended_t is not None:
        if now - f.container_ended_t >= s.container_grace_s and not ending_grace:
            out.append(
                Condition(
                    "container_gone",
                    f"container_gone:{cid}",
                    f"work container {f.container_name} vanished without final_result.json",
                    "critical",
                    {"container": f.container_name},
                )
            )
    if f.status not in ("running", "grading", "gone"):
        return out  # aborted: only what happened to its container
    container_alive = f.container_state in (None, "running", "restarting", "paused", "created")
    # ---- stall
    if f.has_transcript and container_alive and f.ending_since is None and f.last_growth_t is not None:
        idle = now - f.last_growth_t
        if idle >= s.stall_after_s:
            pending_ok = f.pending_calls > 0 and (
                s.stall_pending_max_s is None
                or f.oldest_pending_t is None
                or now - f.oldest_pending_t < s.stall_pending_max_s
            )
            if not pending_ok:
                why = (
                    "no tool call pending"
                    if f.pending_calls == 0
                    else f"tool call pending for {fmt_age(now - (f.oldest_pending_t or now))}"
                )
                out.append(
                    Condition(
                        "stall",
                        "stall",
                        f"no transcript growth for {fmt_age(idle)} ({why})",
                        "warning",
                        {"idle_s": round(idle, 1), "pending_calls": f.pending_calls},
                    )
                )
    # ---- no new best
    ref = f.last_new_best_t if f.last_new_best_t is not None else (f.started_at or f.first_seen)
    if ref is not None and f.ending_since is None and container_alive:
        age = now - ref
        if age >= s.no_new_best_after_s:
            what = (
                f"since {f.best_round}" if f.last_new_best_t is not None and f.best_round else "since the run started"
            )
            out.append(
                Condition(
                    "no_new_best",
                    "no_new_best",
                    f"no new best for {fmt_age(age)} ({what})",
                    "warning",
                    {"since_s": round(age, 1), "best_round": f.best_round},
                )
            )
    # ---- infra errors (one alarm per burst)
    if f.error_times:
        start = _bursts(f.error_times, s.infra_error_quiet_s)[-1]
        out.append(
            Condition(
                "infra_error",
                f"infra_error@{int(start)}",
                one_line(f"ERROR in run_agent.log: {f.last_error_msg or '?'}", 200),
                "critical",
                {"first_t": start, "count": len(f.error_times)},
            )
        )
    # ---- resume loop
    k = max(1, s.resume_loop_count)
    rt = sorted(f.resume_times)
    if len(rt) >= k and rt[-1] - rt[-k] <= s.resume_loop_window_s and now - rt[-1] <= s.resume_loop_window_s:
        out.append(
            Condition(
                "resume_loop",
                "resume_loop",
                f"{k} auto-resumes within {fmt_age(rt[-1] - rt[-k])} (last {fmt_age(now - rt[-1])} ago)",
                "warning",
                {"resumes": len(rt), "window_s": s.resume_loop_window_s},
            )
        )
    # ---- grading
    for rnd, err in sorted(f.judge_errors.items()):
        out.append(
            Condition(
                "judge_error",
                f"grading:{rnd}",
                one_line(f"judge error on {rnd}: {err}", 200),
                "warning",
                {"round": rnd},
            )
        )
    for rnd, why in sorted(f.eval_timeouts.items()):
        out.append(
            Condition("eval_timeout", f"eval_timeout:{rnd}", one_line(f"{rnd}: {why}", 200), "warning", {"round": rnd})
        )
    for rnd, why in sorted(f.failed_rounds.items()):
        if rnd in f.judge_errors or rnd in f.eval_timeouts:
            continue
        out.append(
            Condition(
                "grading_failed",
                f"grading:{rnd}",
                one_line(f"grading of {rnd} failed: {why}", 200),
                "warning",
                {"round": rnd},
            )
        )
    sat = _saturated(f.judge_full_times, s, now)
    if sat is not None:
        out.append(sat)
    if f.tick_error_times:
        start = _bursts(f.tick_error_times, s.infra_error_quiet_s)[-1]
        out.append(
            Condition(
                "judge_error",
                f"auto_eval@{int(start)}",
                one_line(f"auto-eval error: {f.last_tick_error or '?'}", 200),
                "warning",
                {"first_t": start},
            )
        )
    return out


# ---------------------------------------------------------------------------- episodes


class AlarmBook:
    """Raises each condition once per episode; remembers what is active per run."""

    def __init__(self) -> None:
        self.active: dict[str, set[str]] = {}
        self.history: dict[str, list[Alarm]] = {}

    def preload(self, run_key: str, keys: set[str], alarms: list[Alarm]) -> None:
        """Alarms recorded by an earlier session: their keys count as active until seen false once."""
        self.active.setdefault(run_key, set()).update(keys)
        hist = self.history.setdefault(run_key, [])
        hist[:0] = alarms
        del hist[:-50]

    def update(self, run_key: str, conds: list[Condition], now: float) -> list[Alarm]:
        prev = self.active.get(run_key, set())
        new: list[Alarm] = []
        keys = set()
        for c in conds:
            keys.add(c.key)
            if c.key in prev:
                continue
            new.append(
                Alarm(
                    run_key=run_key,
                    rule=c.rule,
                    severity=c.severity,
                    t=now,
                    message=c.message,
                    data={"rule": c.rule, "severity": c.severity, "key": c.key, **c.data},
                )
            )
        self.active[run_key] = keys
        if new:
            hist = self.history.setdefault(run_key, [])
            hist.extend(new)
            del hist[:-50]
        return new

    def acknowledge(self, run_key: str, keys: Optional[set[str]], now: float) -> list[Alarm]:
        """Mark the newest alarm of each active condition of ``run_key`` (only ``keys`` when given)
        as acknowledged at ``now``; returns the alarms newly acknowledged. An acknowledged alarm
        stops counting (banner, row) until its condition clears and is raised again."""
        active = self.active.get(run_key, set())
        want = active if keys is None else (active & set(keys))
        out = []
        for k, a in newest_per_key(self.history.get(run_key, [])).items():
            if k in want and a.acked_at is None:
                a.acked_at = now
                out.append(a)
        return out

    def restore_ack(self, run_key: str, key: str, t: float) -> None:
        """An acknowledgement recorded by an earlier session (applies to alarms raised before ``t``)."""
        for a in self.history.get(run_key, []):
            if a.key == key and a.t <= t and a.acked_at is None:
                a.acked_at = t


def ack_event(a: Alarm, now: float, seq: int = 0) -> Event:
    """The ``alarm`` event recording that the operator acknowledged ``a`` (``data.ack`` true)."""
    gen = hashlib.sha1(("ack:" + a.key).encode()).hexdigest()[:16]
    return Event(
        run_key=a.run_key,
        kind=Kind.ALARM,
        source=ALARM_SOURCE,
        generation=gen,
        offset=int(now * 1000),
        sub=seq,
        t=now,
        t_source=TimeSource.OBSERVED,
        level="info",
        summary=one_line(f"alarm {a.rule} acknowledged: {a.message}"),
        data={"ack": True, "key": a.key, "rule": a.rule, "raised_at": a.t, "message": a.message},
    )


def alarm_event(a: Alarm, seq: int = 0) -> Event:
    """The ``alarm`` event recording ``a`` (stable id from run, key and time)."""
    gen = hashlib.sha1(str(a.data.get("key", a.rule)).encode()).hexdigest()[:16]
    return Event(
        run_key=a.run_key,
        kind=Kind.ALARM,
        source=ALARM_SOURCE,
        generation=gen,
        offset=int(a.t * 1000),
        sub=seq,
        t=a.t,
        t_source=TimeSource.OBSERVED,
        level="critical" if a.severity == "critical" else "warning",
        summary=one_line(f"alarm {a.rule}: {a.message}"),
        data={**a.data, "message": a.message},
    )


# ---------------------------------------------------------------------------- --on-alarm command


class AlarmCommand:
    """Runs ``cmd`` (through the shell) once per alarm with the alarm JSON on stdin.

    Never blocks the caller and never raises: a command that cannot start or
    exits non-zero becomes a one-line note in :attr:`notes` (collected by the
    supervisor into its messages).
    """

    def __init__(self, cmd: Optional[str], secrets: Optional[set[str]] = None):
        self.cmd = cmd
        #: known secret values replaced in the JSON too (the recorder's set: it grows while runs are watched)
        self.secrets: set[str] = secrets if secrets is not None else set()
        self.procs: list[tuple[subprocess.Popen, str]] = []
        self.notes: list[str] = []

    def fire(self, payload: dict[str, Any]) -> None:
        if not self.cmd:
            return
        data = (
            json.dumps(redact_obj(payload, frozenset(list(self.secrets))), default=str).encode() + b"\n"
        )  # no secret leaves
        try:
            p = subprocess.Popen(
                self.cmd,
                shell=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            self.notes.append(one_line(f"--on-alarm command could not start: {e.strerror or e}", 200))
            return
        try:
            assert p.stdin is not None
            p.stdin.write(data)  # < 64 KiB: fits the pipe buffer, never blocks
            p.stdin.close()
        except OSError:
            pass  # the command did not read its stdin: its business
        self.procs.append((p, str(payload.get("rule"))))
        self.reap()

    def reap(self) -> None:
        keep = []
        for p, rule in self.procs:
            rc = p.poll()
            if rc is None:
                keep.append((p, rule))
            elif rc != 0:
                self.notes.append(f"--on-alarm command exited with status {rc} (alarm {rule})")
        self.procs = keep

    def wait(self, timeout: float = 5.0) -> None:
        """Wait for started commands (tests, shutdown)."""
        end = time.monotonic() + timeout
        for p, _ in self.procs:
            try:
                p.wait(max(0.0, end - time.monotonic()))
            except subprocess.TimeoutExpired:  # (still running: reap() keeps it for a later look)
                pass
        self.reap()
