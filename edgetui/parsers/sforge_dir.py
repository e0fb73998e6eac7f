"""An SForge run directory (everything except ``agent_output.txt``) → RunInfo, submissions, events.

Facts used (docs/sforge-run-folders.md): §3 (layout, file schemas, lifecycle), §4
(submission folders, report.json, game folders), §3.5/§3.6 (log and tick line
formats, via :mod:`edgetui.parsers.runlog`), §9 (clocks), §7 (task JSON),
§8.1 (visualizer rules), §3.4.1 (1.1.0 redaction), §11 (missing / partial /
non-finite input).

Public API
----------
* :func:`discover` — find the runs (task dirs) under a task dir, run dir, runs
  root, log dir (``<log_dir>/runs``) or machine-grouped root.
* :func:`read_run_info` — :class:`~edgetui.records.RunInfo` of one run.
* :func:`read_submissions` / :func:`submission_events` — ``submissions/<round>/``.
* :func:`run_config_events`, :func:`started_at_events`, :func:`log_events`,
  :func:`evolve_state_events`, :func:`history_events`,
  :func:`final_result_events` — the other files as events.
* :func:`load_run` — all of the above for one run, ``run_key`` filled in.
* :func:`load_tasks`, :func:`task_info`, :func:`resolve_tasks_dir` — task JSONs.
* :func:`redact_config` — secrets out of a config object.

The submission folders are read by :mod:`edgetui.parsers.sforge_submissions` and the helpers both
use are in :mod:`edgetui.parsers.sforge_common`; their public names are re-exported here.

Conventions
-----------
* ``Event.source`` is the path relative to the task dir
  (``submissions/agent-3/report.json``; the root config is ``../run_config.json``).
* Line files use :func:`~edgetui.parsers.base.file_generation`; whole-file JSON
  documents use a hash of their full content as generation, so an overwritten
  ``report.json`` (judge restart reusing ``agent-1``) becomes a new event.
* Time sources: timestamps written *inside* files are ``recorded``
  (log lines, ``started_at``, ``report.json.submitted_at``, evolve ``at``);
  times taken from file **mtimes** (``graded_at`` fallback, ``final_result.json``,
  histories, ``run_config.json``, ``game_result.json``) are ``interpolated``,
  because mtimes do not survive copies made without ``-p``/``-t``.
* Nothing here raises on bad input: a malformed file becomes a ``parse_error``
  event (one-line reason naming the file and the byte offset) or a
  :class:`~edgetui.records.SubmissionRecord` with ``status``/``error``; missing
  files are normal and yield nothing.
"""

from __future__ import annotations

import json
import math
import os
import re

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from edgetui.events import Event, Kind, TimeSource, one_line
from edgetui.records import RunInfo, SubmissionRecord, TaskInfo, make_run_key
from edgetui.redact import redact_obj
from edgetui.times import parse_iso8601
from edgetui.parsers.run_folder_files import SMALL_FILE_LIMIT, open_run_file, reads_run_folder
from edgetui.parsers.base import file_generation, open_regular, parse_error, read_regular
from edgetui.parsers.runlog import AutoEvalTicksParser, RunAgentLogParser, local_to_epoch, redact_text
from edgetui.parsers.run_format import FormatEvidence, run_format
from edgetui.parsers.json_fields import dict_at, list_at, str_at
from edgetui.parsers.sforge_common import (  # shared with .sforge_submissions; some also imported from here
    FAILED_GRADING_SUB,
    Json,
    content_gen,
    as_finite,
    as_int,
    json_parse_error,
    file_mtime,
    read_json,
    subdirs,
    parse_line_file,
    sanitize,
)
from edgetui.parsers.sforge_submissions import (  # noqa: F401 - the submission folders; some re-exported
    FOLDER_FILES,
    folder_events,
    instance_log,
    parse_round,
    read_report_folder,
    result_summary,
    test,
    folder_signature,
    read_submissions,
    result_known_time,
    submission_events,
)

__all__ = [
    "RunLocation",
    "LoadedRun",
    "TASK_DIR_MARKERS",
    "DEFAULT_TIMEOUT_S",
    "FAILED_GRADING_SUB",
    "is_task_dir",
    "discover",
    "redact_config",
    "read_started_at",
    "read_run_info",
    "read_submissions",
    "submission_events",
    "run_config_events",
    "started_at_events",
    "log_events",
    "evolve_state_events",
    "history_events",
    "final_result_events",
    "load_run",
    "load_tasks",
    "task_info",
    "resolve_tasks_dir",
    "parse_line_file",
]

TASK_DIR_MARKERS = ("final_result.json", "run_agent.log", "started_at", "evolve_state.json")
#: Agent class default budget used by SForge when run_config.json ``timeout`` is null
#: (docs/sforge-run-folders.md §3.4.1).
DEFAULT_TIMEOUT_S = 3600.0
REDACTED = "<redacted>"
_IP_RE = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]*:[0-9A-Fa-f:]+)$")


# =========================================================================== discovery


@dataclass(frozen=True)
class RunLocation:
    """Where one run (host + run id + task id) lives on disk."""

    host: str
    run_id: str
    task_id: str
    task_dir: Path
    layout: str = "flat"  # "flat" <runs>/<run>/<task> | "grouped" <runs>/<ip>/<run>/<task>

    @property
    def run_key(self) -> str:
        return make_run_key(self.host, self.run_id, self.task_id)

    @property
    def run_dir(self) -> Path:
        return self.task_dir.parent


def is_task_dir(d: Path) -> bool:
    """A dir is a task dir if it has ``submissions/`` or any of the marker files
    (docs/sforge-run-folders.md §3.2)."""
    try:
        if (d / "submissions").is_dir():
            return True
        return any((d / m).exists() for m in TASK_DIR_MARKERS)
    except OSError:
        return False


def _group_host(group_dir: Path, host: str) -> tuple[str, str]:
    """(host, layout) for run dirs found directly under ``group_dir``.

    A directory given below the grouped root cannot be told apart from a flat
    ``runs/`` structurally; when ``host`` is the default and the parent's name
    is an IP address, it is taken as the machine-group level.
    """
    if host == "local" and _IP_RE.match(group_dir.name or ""):
        return group_dir.name, "grouped"
    return host, "flat"


def discover(path: str | os.PathLike, host: str = "local") -> list[RunLocation]:
    """Runs under ``path``: a task dir, a run dir, a runs root, a log dir or a grouped root.

    Detection follows the visualizer (docs/sforge-run-folders.md §3.2): a direct child of the
    root is a run dir if any of its child dirs is a task dir, else a machine-group dir
    (``<ip>/<run_id>/<task>``, the ip becomes ``host``). A ``<log_dir>`` holding
    ``runs/`` is accepted too. At most three directory levels are listed;
    dot-directories are skipped. Sorted by (host, run_id, task_id).
    """
    p = Path(path).expanduser()
    if not p.is_dir():
        return []
    if is_task_dir(p):
        h, layout = _group_host(p.parent.parent, host)
        return [RunLocation(h, p.parent.name, p.name, p, layout)]
    children = subdirs(p)
    tasks = [c for c in children if is_task_dir(c)]
    if tasks:  # p is a run dir
        h, layout = _group_host(p.parent, host)
        return [RunLocation(h, p.name, c.name, c, layout) for c in tasks]
    runs = p / "runs"
    if runs.is_dir() and not any(is_task_dir(c) for c in subdirs(runs)):
        # a log dir: <log_dir>/runs/... (a *run* named "runs" has task dirs and is kept as a run)
        p, children = runs, subdirs(runs)
    out: list[RunLocation] = []
    root_host, root_layout = _group_host(p, host)
    for entry in children:
        sub = subdirs(entry)
        entry_tasks = [c for c in sub if is_task_dir(c)]
        if entry_tasks:
            out.extend(RunLocation(root_host, entry.name, t.name, t, root_layout) for t in entry_tasks)
            continue
        for run_dir in sub:  # entry is a machine / ip dir
            for t in subdirs(run_dir):
                if is_task_dir(t):
                    out.append(RunLocation(entry.name, run_dir.name, t.name, t, "grouped"))
    out.sort(key=lambda r: (r.host, r.run_id, r.task_id))
    return out


# =========================================================================== small helpers


def redact_config(obj: Any) -> Any:
    """``obj`` (a run_config.json or any JSON value) without secrets (a copy where something is
    replaced, ``obj`` itself otherwise): the one rule set of :mod:`edgetui.redact`
    (:func:`~edgetui.redact.redact_obj`), as for every other text edgetui keeps. A string under a
    credential's name (``api_key``, ``admin_secret``, ``extra_env``'s ``GITHUB_TOKEN`` /
    ``DB_PASSWORD`` / ``LICENSE_KEY``…, the strings of a list under one) becomes ``"<redacted>"``
    unless it is a number, a placeholder, a path or shorter than 4 characters; every other string
    has its credential-shaped parts replaced (``sk-…``, ``ghp_…``, bearer tokens,
    ``NAME_KEY=value``, URL passwords). Hex hashes and other data under ordinary names
    (``author``, ``commit``) stay."""
    return redact_obj(obj)


# =========================================================================== run info


@dataclass
class StartedAt:
    epoch: Optional[float] = None
    utc_offset_s: Optional[float] = None
    local_iso: Optional[str] = None
    error: Optional[str] = None
    raw: bytes = b""
    mtime: Optional[float] = None


def read_started_at(task_dir: Path) -> Optional[StartedAt]:
    """``started_at``: epoch from the LAST line; host UTC offset from line 1 vs line 2.

    ``offset = round((line1_naive_as_utc - epoch) / 900) * 900`` (15-min
    rounding absorbs line 1's truncated seconds). ``None`` if the file is missing.
    """
    p = task_dir / "started_at"
    try:
        raw = read_regular(p, SMALL_FILE_LIMIT)
    except OSError:
        return None
    sa = StartedAt(raw=raw, mtime=file_mtime(p))
    text = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        sa.error = "started_at: empty file"
        return sa
    try:
        ep = float(lines[-1])
        if not math.isfinite(ep):
            raise ValueError("not finite")
        sa.epoch = ep
    except ValueError:
        sa.error = one_line(f"started_at: last line is not an epoch number: {lines[-1]!r}", 240)
        return sa
    if len(lines) >= 2:
        sa.local_iso = lines[0]
        # the wall clock of line 1 (its first 19 characters: any fraction or zone after it is not read)
        local = parse_iso8601(lines[0][:19]) if len(lines[0]) >= 19 else None
        if local is None:
            sa.error = one_line(f"started_at: line 1 is not a local ISO time: {lines[0]!r}", 240)
        else:
            naive = local.replace(tzinfo=timezone.utc).timestamp()  # the wall clock read as UTC
            off = round((naive - ep) / 900.0) * 900.0
            if abs(off) <= 14 * 3600:
                sa.utc_offset_s = float(off)
            else:
                sa.error = one_line(f"started_at: line 1 {lines[0]!r} is {off / 3600:.1f} h away from the epoch", 240)
    return sa


def infer_log_offset(path: Path) -> Optional[float]:
    """The UTC offset (seconds, 15-minute steps) of the host that writes ``run_agent.log``, from
    the file itself: its last line's naive local time against the file's mtime (the moment that
    line was written). For a run without ``started_at`` (which gives the offset exactly,
    docs/sforge-run-folders.md §3.4.3): never the offset of the process edgetui runs in. Only for
    a log seen growing (the live supervisor): a copied file's mtime says nothing. None when the
    log has no timed line, or the two are more than 14 h apart."""
    try:
        with open_run_file(path, folder=Path(path).parent.parent) as f:
            st = os.fstat(f.fileno())
            f.seek(max(0, st.st_size - 65536))
            tail = f.read()
    except OSError:
        return None
    stamps = [m for m in map(_LOG_TS_RE.match, tail.splitlines()) if m]
    if not stamps:
        return None
    y, mo, d, h, mi, sec = (int(x) for x in stamps[-1].group(1, 2, 3, 4, 5, 6))
    try:
        naive = datetime(y, mo, d, h, mi, sec, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None
    off = round((naive - st.st_mtime) / 900.0) * 900.0
    return float(off) if abs(off) <= 14 * 3600 else None


@dataclass
class _LogScan:
    exists: bool = False
    infra_error: bool = False
    resumes: int = 0
    agent: Optional[str] = None
    last_naive: Optional[float] = None  # last timestamp, naive local read as UTC
    last_level: Optional[str] = None  # level of the last timed record
    last_message: Optional[str] = None  # its message (first line)
    traceback_after_last: bool = False  # "Traceback (most recent call last):" after the last timed record
    sandbox: bool = False  # a line of the managed-sandbox (E2B) backend


_LOG_TS_RE = re.compile(rb"^(?:\xef\xbb\xbf)?(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3}) - ")
#: run_agent.log words of SForge's E2B backend (sforge/harness/backend/e2b_backend.py, run_agent.py
#: after 1.1.0): its sandbox cleanup, network isolation and template check
_SANDBOX_WORDS = (b"Killing sandbox ", b"e2b network isolation", b"E2B Template for", b"E2B Sandbox")
_AGENT_PEEK = (("claude", "claude-code"), ("codex", "codex"), ("opencode", "opencode"), ("aider", "aider"))


def _scan_run_agent_log(path: Path) -> _LogScan:
    s = _LogScan()
    try:
        fp = open_regular(path)
    except OSError:
        return s
    s.exists = True
    with fp:
        for line in fp:
            if b" - ERROR - " in line:
                s.infra_error = True
            if b"Resuming agent (attempt" in line:
                s.resumes += 1
            if not s.sandbox and any(w in line for w in _SANDBOX_WORDS):
                s.sandbox = True
            if s.agent is None and b"Running agent: " in line:
                cmd = line.split(b"Running agent: ", 1)[1].decode("utf-8", "replace").lstrip()
                for word, name in _AGENT_PEEK:
                    if cmd == word or cmd.startswith(word + " ") or cmd.startswith(word + "\n"):
                        s.agent = name
                        break
            m = _LOG_TS_RE.match(line)
            if m:
                try:
                    s.last_naive = local_to_epoch(
                        tuple(g.decode() for g in m.group(1, 2, 3, 4, 5, 6)), int(m.group(7)), None
                    )
                except ValueError:
                    pass
                rest = line[m.end() :].decode("utf-8", "replace")
                level, _, msg = rest.partition(" - ")
                s.last_level, s.last_message = level.strip(), msg.strip()
                s.traceback_after_last = False
            elif line.startswith(b"Traceback (most recent call last)"):
                s.traceback_after_last = True
    return s


def harness_error_of(scan: "_LogScan") -> Optional[str]:
    """The harness's own words when run_agent.log ends on an ERROR record (with its traceback or
    without): SForge 1.1.0 crashes in run_agent's ``finally`` on any early error and writes
    nothing else (docs/sforge-run-folders.md §3.7; a genuine run without sudo shows it). None
    otherwise."""
    if scan.last_level in ("ERROR", "CRITICAL") and scan.last_message:
        return redact_text(scan.last_message) + (" (traceback in run_agent.log)" if scan.traceback_after_last else "")
    return None


def _end_time(
    mtime: Optional[float], started_at: Optional[float], last_log_t: Optional[float], runtime_s: Optional[float]
) -> Optional[float]:
    """Time the run ended (final_result.json written), from its mtime if plausible.

    The CLI writes final_result.json seconds after run_agent.log's last line,
    so the mtime is trusted when it lies within [last log line − 60 s,
    last log line + 1 h]; otherwise (copied tree) the last log time is used.
    Without a log: the mtime if not before ``started_at``, else
    ``started_at + runtime_seconds``.
    """
    if last_log_t is not None:
        if mtime is not None and last_log_t - 60 <= mtime <= last_log_t + 3600:
            return mtime
        return last_log_t
    if mtime is not None and (started_at is None or mtime >= started_at):
        return mtime
    if started_at is not None and runtime_s is not None:
        return started_at + runtime_s
    return mtime


def _read_config(task_dir: Path) -> tuple[Optional[dict[str, Any]], list[Json], Optional[dict[str, Any]]]:
    """(per-task config, files read, root-level info) — per-task file first, else root tasks[task]."""
    read: list[Json] = []
    own = read_json(task_dir / "run_config.json", "run_config.json")
    if own.exists:
        read.append(own)
    if own.ok and isinstance(own.value, dict):
        return own.value, read, None
    root = read_json(task_dir.parent / "run_config.json", "../run_config.json")
    if root.exists:
        read.append(root)
    if root.ok and isinstance(root.value, dict):
        tasks = root.value.get("tasks")
        info = {k: root.value.get(k) for k in ("run_id", "experiment", "stagger")}
        if isinstance(tasks, dict) and isinstance(tasks.get(task_dir.name), dict):
            return tasks[task_dir.name], read, info
        return None, read, info
    return None, read, None


@reads_run_folder(lambda loc, *a, **k: Path(loc.task_dir).parent)
def read_run_info(loc: RunLocation) -> RunInfo:
    """RunInfo of one run from its top-level files (no transcript). Never raises.

    ``config`` = run_config.json (per-task, else the root file's ``tasks[task]``)
    through :func:`redact_config`; ``timeout_s`` = its ``timeout`` or 3600 s when
    null (§3.4.1, only when a config exists); ``agent``/``model`` from the config,
    else final_result.json, else the ``Running agent:`` line; ``started_at`` and
    ``utc_offset_s`` from ``started_at``; ``final`` = final_result.json (non-finite
    numbers → null; None if missing / unparsable / not an object);
    ``infra_error`` = any `` - ERROR - `` line in run_agent.log; ``resume_count``
    from final_result.json, else the count of ``Resuming agent`` lines (None
    without either file); ``ended_at`` as in :func:`final_result_events`.
    """
    td = loc.task_dir
    cfg, _, _ = _read_config(td)
    config = redact_config(sanitize(cfg)) if isinstance(cfg, dict) else None
    sa = read_started_at(td)
    fj = read_json(td / "final_result.json", "final_result.json")
    final = sanitize(fj.value) if fj.ok and isinstance(fj.value, dict) else None
    scan = _scan_run_agent_log(td / "run_agent.log")
    offset = sa.utc_offset_s if sa else None

    info = RunInfo(
        host=loc.host,
        run_id=loc.run_id,
        task_id=loc.task_id,
        run_dir=str(td.absolute()),
        layout=loc.layout,
        config=config,
        utc_offset_s=offset,
        started_at=sa.epoch if sa else None,
        final=final,
        infra_error=scan.infra_error,
        harness_error=harness_error_of(scan) if sa is None and final is None else None,
        log_mtime=file_mtime(td / "run_agent.log"),
        unreadable=_final_unreadable(fj) if final is None else None,
    )
    hj = read_json(td / "run_history.json", "run_history.json")
    info.format = run_format(FormatEvidence(history=hj.value if hj.ok and isinstance(hj.value, dict) else None))
    if config is not None:
        t = as_finite(config.get("timeout"))
        info.timeout_s = t if t is not None and t > 0 else DEFAULT_TIMEOUT_S
        ei = as_finite(config.get("eval_interval"))
        info.eval_interval_s = ei
        info.agent = str_at(config, "agent")
        info.model = str_at(config, "model")
    if final is not None:
        if info.agent is None and isinstance(final.get("agent"), str) and final.get("agent"):
            info.agent = final["agent"]
        if info.model is None and isinstance(final.get("model"), str) and final.get("model"):
            info.model = final["model"]
        rc = as_int(final.get("resume_count"))
        info.resume_count = rc if rc is not None else (scan.resumes if scan.exists else None)
        last_t = scan.last_naive - (offset or 0.0) if scan.last_naive is not None else None
        info.ended_at = _end_time(fj.mtime, info.started_at, last_t, as_finite(final.get("runtime_seconds")))
    elif scan.exists:
        info.resume_count = scan.resumes
    if info.agent is None:
        info.agent = scan.agent
    info.backend = run_backend(config, scan)
    return info


def run_backend(config: Optional[dict[str, Any]], scan: "_LogScan") -> Optional[str]:
    """``"e2b"`` when the run's files say it ran on managed sandboxes (newer SForge,
    docs/sforge-judge.md "Managed sandboxes"): its config's ``backend``, a judge URL on E2B's
    gateway, or the backend's lines in run_agent.log; else the config's ``backend`` or None."""
    b = config.get("backend") if isinstance(config, dict) else None
    if isinstance(b, str) and b:
        return b
    url = config.get("judge_url") if isinstance(config, dict) else None
    if isinstance(url, str) and (".e2b.app" in url or ".e2b.dev" in url):
        return "e2b"
    return "e2b" if scan.sandbox else None


def _final_unreadable(fj: Json) -> Optional[str]:
    """Why a final_result.json that exists gives no final result (one line), else None."""
    if not fj.exists:
        return None
    why = fj.error or f"{fj.rel}: not a JSON object"
    return one_line(f"final_result.json could not be read ({why.removeprefix(fj.rel + ': ')})", 200)


# =========================================================================== submissions


def run_config_events(task_dir: Path) -> list[Event]:
    """RUN_CONFIG with the redacted config (per-task file, else root ``tasks[task]``); bad JSON → parse_error."""
    task_dir = Path(task_dir)
    cfg, read, root_info = _read_config(task_dir)
    out: list[Event] = []
    for j in read:
        if j.error is not None:
            out.append(json_parse_error(j))
        elif not isinstance(j.value, dict):
            out.append(json_parse_error(j, f"{j.rel}: not a JSON object at byte 0"))
    if cfg is None:
        return out
    src = read[-1]
    red = redact_config(sanitize(cfg))
    data: dict[str, Any] = {"config": red}
    if root_info is not None:
        data["root"] = redact_config(sanitize(root_info))
    summ = ", ".join(f"{k}={red.get(k)}" for k in ("agent", "model", "timeout", "eval_interval") if k in red)
    out.append(
        Event(
            kind=Kind.RUN_CONFIG,
            source=src.rel,
            generation=content_gen(json.dumps(red, sort_keys=True).encode()),
            t=src.mtime,
            t_source=TimeSource.INTERPOLATED if src.mtime is not None else None,
            summary=one_line(f"run config: {summ}"),
            agent_format=None,
            model=str_at(red, "model"),
            data=data,
        )
    )
    return out


def started_at_events(task_dir: Path) -> list[Event]:
    """RUN_START at the ``started_at`` epoch (recorded); a bad file → parse_error."""
    sa = read_started_at(Path(task_dir))
    if sa is None:
        return []
    gen = content_gen(sa.raw)
    out: list[Event] = []
    if sa.epoch is None:
        return [parse_error("started_at", gen, 0, sa.raw, sa.error or "no epoch")]
    if sa.error:
        out.append(parse_error("started_at", gen, 0, sa.raw, sa.error, sub=1))
    out.append(
        Event(
            kind=Kind.RUN_START,
            source="started_at",
            generation=gen,
            t=sa.epoch,
            t_source=TimeSource.RECORDED,
            segment=0,
            summary=one_line(f"run started (host local {sa.local_iso}, UTC offset {sa.utc_offset_s})"),
            data={"epoch": sa.epoch, "local_iso": sa.local_iso, "utc_offset_s": sa.utc_offset_s},
        )
    )
    return out


def log_events(task_dir: Path, utc_offset_s: Optional[float]) -> list[Event]:
    """run_agent.log (RunAgentLogParser) and auto_eval_ticks.log (AutoEvalTicksParser), read to the end.

    The legacy ``auto_eval_daemon.log`` has no documented line format and is
    not parsed.
    """
    task_dir = Path(task_dir)
    out: list[Event] = []
    p = task_dir / "run_agent.log"
    gen = file_generation(p) or ""
    out.extend(parse_line_file(p, RunAgentLogParser("run_agent.log", gen, utc_offset_s), "run_agent.log", gen))
    p = task_dir / "auto_eval_ticks.log"
    gen = file_generation(p) or ""
    out.extend(
        parse_line_file(p, AutoEvalTicksParser("auto_eval_ticks.log", gen, utc_offset_s), "auto_eval_ticks.log", gen)
    )
    return out


def evolve_state_events(task_dir: Path) -> list[Event]:
    """evolve_state.json: sub 0 = LOG summary (best_*; mtime, interpolated); sub i = entry i-1

    as a LOG event with ``round`` and ``data.evolve_entry`` (pass_rate, score, at):
    ``t`` = ``at`` (container clock when the agent saw the result, recorded).
    """
    j = read_json(Path(task_dir) / "evolve_state.json", "evolve_state.json")
    if not j.exists:
        return []
    if j.error is not None:
        return [json_parse_error(j)]
    if not isinstance(j.value, dict):
        return [json_parse_error(j, f"{j.rel}: not a JSON object at byte 0")]
    v = sanitize(j.value)
    subs = list_at(v, "submissions")
    head = {k: v.get(k) for k in ("best_pass_rate", "best_score", "best_round")}
    out = [
        Event(
            kind=Kind.LOG,
            source=j.rel,
            generation=j.generation,
            t=j.mtime,
            t_source=TimeSource.INTERPOLATED if j.mtime is not None else None,
            summary=one_line(f"evolve state: {len(subs)} agent submissions, best {head.get('best_round') or '-'}"),
            data={"evolve_state": head, "n_submissions": len(subs)},
        )
    ]
    for i, s in enumerate(subs, start=1):
        if not isinstance(s, dict):
            out.append(
                parse_error(
                    j.rel,
                    j.generation,
                    0,
                    json.dumps(s).encode(),
                    f"{j.rel}: submissions[{i - 1}] is not an object",
                    sub=i,
                )
            )
            continue
        at = as_finite(s.get("at"))
        rnd = str_at(s, "round")
        pr = as_finite(s.get("pass_rate"))
        prs = f"{pr * 100:.1f}%" if pr is not None else "?"
        out.append(
            Event(
                kind=Kind.LOG,
                source=j.rel,
                generation=j.generation,
                sub=i,
                t=at if at and at > 0 else None,
                t_source=TimeSource.RECORDED if at and at > 0 else None,
                round=rnd,
                summary=one_line(f"agent saw result of {rnd}: pass {prs}, score {s.get('score')}"),
                data={"evolve_entry": s},
            )
        )
    return out


def history_events(task_dir: Path) -> list[Event]:
    """run_history.json / game_history.json: one LOG event each with ``data.history``

    (the judge /history object; non-finite numbers → null; game entries'
    ``steps`` lists dropped — they are in steps.jsonl). ``t`` = mtime, interpolated.
    """
    out: list[Event] = []
    for name in ("run_history.json", "game_history.json"):
        j = read_json(Path(task_dir) / name, name)
        if not j.exists:
            continue
        if j.error is not None:
            out.append(json_parse_error(j))
            continue
        if not isinstance(j.value, dict):
            out.append(json_parse_error(j, f"{j.rel}: not a JSON object at byte 0"))
            continue
        h = sanitize(j.value)
        entries = list_at(h, "entries")
        dropped = False
        slim = []
        for e in entries:
            if isinstance(e, dict) and "steps" in e:
                e = {k: v for k, v in e.items() if k != "steps"}
                dropped = True
            slim.append(e)
        if entries:
            h["entries"] = slim
        summ = f"judge history ({name}): {len(entries)} entries, best {h.get('best_round') or '-'} pass {h.get('best_pass_rate')} score {h.get('best_score')}"
        out.append(
            Event(
                kind=Kind.LOG,
                source=j.rel,
                generation=j.generation,
                t=j.mtime,
                t_source=TimeSource.INTERPOLATED if j.mtime is not None else None,
                summary=one_line(summ),
                data={"history": h, "history_file": name, **({"steps_omitted": True} if dropped else {})},
            )
        )
    return out


def final_result_events(
    task_dir: Path, started_at: Optional[float] = None, last_log_t: Optional[float] = None
) -> list[Event]:
    """final_result.json → RUN_END (``data`` = the object, non-finite → null).

    ``t`` = file mtime when plausible (see :func:`_end_time`; needs the last
    run_agent.log time ``last_log_t``), ``t_source`` interpolated (an mtime is
    not written by SForge and is lost by copies). A partial / corrupt file
    (docs/sforge-run-folders.md §11.2: possibly mid-write) → parse_error.
    """
    j = read_json(Path(task_dir) / "final_result.json", "final_result.json")
    if not j.exists:
        return []
    if j.error is not None:
        return [json_parse_error(j)]
    if not isinstance(j.value, dict):
        return [json_parse_error(j, f"{j.rel}: not a JSON object at byte 0")]
    v = sanitize(j.value)
    t = _end_time(j.mtime, started_at, last_log_t, as_finite(v.get("runtime_seconds")))
    pr = as_finite(v.get("best_pass_rate"))
    prs = f"{pr * 100:.1f}%" if pr is not None else "?"
    summ = f"run ended: best {prs} ({v.get('best_round') or '-'}), score {v.get('best_score')}, timed_out={v.get('timed_out')}"
    return [
        Event(
            kind=Kind.RUN_END,
            source=j.rel,
            generation=j.generation,
            t=t,
            t_source=TimeSource.INTERPOLATED if t is not None else None,
            summary=one_line(summ),
            model=str_at(v, "model"),
            data=v,
        )
    ]


# =========================================================================== one run, all at once


@dataclass
class LoadedRun:
    location: RunLocation
    info: RunInfo
    submissions: list[SubmissionRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


@reads_run_folder(lambda loc, *a, **k: Path(loc.task_dir).parent)
def load_run(loc: RunLocation) -> LoadedRun:
    """RunInfo + submissions + every event of the run's files except agent_output.txt.

    ``run_key`` is set on every event. Order: config, start, logs, submissions,
    evolve state, histories, end (not sorted by time).
    """
    td = loc.task_dir
    info = read_run_info(loc)
    events: list[Event] = []
    events.extend(run_config_events(td))
    events.extend(started_at_events(td))
    logs = log_events(td, info.utc_offset_s)
    events.extend(logs)
    subs = read_submissions(td)
    events.extend(submission_events(td, subs, info.utc_offset_s))
    events.extend(evolve_state_events(td))
    events.extend(history_events(td))
    last_log_t = max((e.t for e in logs if e.source == "run_agent.log" and e.t is not None), default=None)
    events.extend(final_result_events(td, info.started_at, last_log_t))
    key = loc.run_key
    for e in events:
        e.run_key = key
    return LoadedRun(loc, info, subs, events)


# =========================================================================== task JSONs


def resolve_tasks_dir(cli_value: Optional[str | os.PathLike] = None) -> Optional[Path]:
    """``--tasks-dir`` if given, else ``$SFORGE_TASKS_DIR``, else ``./tasks`` if it is a directory.

    Explicit values are returned as given (``~`` expanded) even when missing,
    so the caller can report a wrong path instead of silently ignoring it.
    """
    if cli_value:
        return Path(cli_value).expanduser()
    env = os.environ.get("SFORGE_TASKS_DIR")
    if env:
        return Path(env).expanduser()
    p = Path("tasks")
    return p if p.is_dir() else None


def _task_from_json(stem: str, d: dict[str, Any], path: Path) -> TaskInfo:
    judge = dict_at(d, "judge")
    meta = dict_at(d, "metadata")
    cat = d.get("category") if d.get("category") is not None else meta.get("category")
    sel = judge.get("selection")
    dirn = judge.get("score_direction")
    rescale = judge.get("rescale")
    et = as_int(judge.get("eval_timeout"))
    return TaskInfo(
        task_id=stem,
        name=str(d["name"]) if d.get("name") is not None else None,
        category=str(cat) if cat is not None else None,
        selection=sel if isinstance(sel, str) and sel else "pass_rate_first",
        score_direction=dirn if isinstance(dirn, str) and dirn else "maximize",
        rescale=sanitize(rescale) if isinstance(rescale, dict) else None,
        parser=str_at(judge, "parser"),
        game_mode=bool(d.get("game_mode", False)),
        eval_timeout=et if et is not None else 600,
        source_path=str(path),
        assumed=False,
    )


def load_tasks(tasks_dir: Optional[str | os.PathLike], errors: Optional[list[str]] = None) -> dict[str, TaskInfo]:
    """``<tasks_dir>/*.json`` → {task_id: TaskInfo} (keyed by file stem, as the CLI and the visualizer;

    also by the JSON's ``task_id`` when it differs and is not taken). A bad
    file is skipped with a one-line message appended to ``errors``.
    """
    out: dict[str, TaskInfo] = {}
    if not tasks_dir:
        return out
    d = Path(tasks_dir).expanduser()
    try:
        files = sorted(d.glob("*.json"))
    except OSError as e:
        if errors is not None:
            errors.append(one_line(f"{d}: {e}", 240))
        return out
    for f in files:
        j = read_json(f, str(f))
        if j.error is not None or not isinstance(j.value, dict):
            if errors is not None:
                errors.append(j.error or f"{f}: not a JSON object at byte 0")
            continue
        try:
            ti = _task_from_json(f.stem, j.value, f)
        except Exception as e:  # noqa: BLE001 - validation of odd field types
            if errors is not None:
                errors.append(one_line(f"{f}: {type(e).__name__}: {e}", 240))
            continue
        out[f.stem] = ti
        tid = j.value.get("task_id")
        if isinstance(tid, str) and tid and tid != f.stem and tid not in out:
            out[tid] = ti.model_copy(update={"task_id": tid})
    return out


def task_info(task_id: str, tasks: Optional[dict[str, TaskInfo]]) -> TaskInfo:
    """The task's TaskInfo, or SForge's defaults (pass_rate_first, maximize, no rescale) with ``assumed=True``."""
    if tasks and task_id in tasks:
        return tasks[task_id]
    return TaskInfo(task_id=task_id, assumed=True)
