"""An SForge run directory (everything except ``agent_output.txt``) → RunInfo, submissions, events.

Facts used: sforge-format.md §2 (layout, file schemas, lifecycle), §3
(submission folders, report.json, game folders), §5.4/§5.5 (tick and log line
formats, via :mod:`edgetui.parsers.runlog`), §6.7 (clocks), §8 (task JSON),
§10.1 (visualizer rules), §11 (1.1.0 redaction), §12 (missing / partial /
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

import hashlib
import json
import math
import os
import re
from collections import Counter

import orjson
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Optional

from ..events import Event, Kind, TimeSource, one_line
from ..records import RunInfo, SubmissionRecord, TaskInfo, TestResult, make_run_key
from .base import (BOM, GENERATION_PREFIX_BYTES, LineParser, file_generation, finite_or_none, generation_of_head,
                   iter_lines, loads_lenient, open_regular, json_error_text, parse_error, read_regular)
from .runlog import (JUDGE_KEPT_LEVELS, JUDGE_KEPT_PREFIXES, AutoEvalTicksParser, JudgeLogParser, RunAgentLogParser,
                     local_to_epoch, redact_text)

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
#: Agent class default budget used by SForge when run_config.json ``timeout`` is null (§2.4).
DEFAULT_TIMEOUT_S = 3600.0
REDACTED = "<redacted>"
_IP_RE = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]*:[0-9A-Fa-f:]+)$")
_ROUND_RE = re.compile(r"^(agent|auto|game|manual)-(\d+)$")
_KIND_ORDER = {"agent": 0, "legacy": 0, "auto": 1, "game": 2, "manual": 3}
_PASS_STATUSES = {"PASSED", "PASS", "OK", "SUCCESS", "XFAIL"}
#: ``sub`` of the JUDGE_RESULT of a failed grading: its source is run_instance.log,
#: whose first line already owns (offset 0, sub 0).
FAILED_GRADING_SUB = 1_000_000


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
    """§2.2: a dir is a task dir if it has ``submissions/`` or any of the marker files."""
    try:
        if (d / "submissions").is_dir():
            return True
        return any((d / m).exists() for m in TASK_DIR_MARKERS)
    except OSError:
        return False


def _subdirs(d: Path) -> list[Path]:
    try:
        return sorted((c for c in d.iterdir() if not c.name.startswith(".") and c.is_dir()), key=lambda c: c.name)
    except OSError:
        return []


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

    Detection follows the visualizer (§2.2): a direct child of the root is a
    run dir if any of its child dirs is a task dir, else a machine-group dir
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
    children = _subdirs(p)
    tasks = [c for c in children if is_task_dir(c)]
    if tasks:  # p is a run dir
        h, layout = _group_host(p.parent, host)
        return [RunLocation(h, p.name, c.name, c, layout) for c in tasks]
    runs = p / "runs"
    if runs.is_dir() and not any(is_task_dir(c) for c in _subdirs(runs)):
        # a log dir: <log_dir>/runs/... (a *run* named "runs" has task dirs and is kept as a run)
        p, children = runs, _subdirs(runs)
    out: list[RunLocation] = []
    root_host, root_layout = _group_host(p, host)
    for entry in children:
        sub = _subdirs(entry)
        entry_tasks = [c for c in sub if is_task_dir(c)]
        if entry_tasks:
            out.extend(RunLocation(root_host, entry.name, t.name, t, root_layout) for t in entry_tasks)
            continue
        for run_dir in sub:  # entry is a machine / ip dir
            for t in _subdirs(run_dir):
                if is_task_dir(t):
                    out.append(RunLocation(entry.name, run_dir.name, t.name, t, "grouped"))
    out.sort(key=lambda r: (r.host, r.run_id, r.task_id))
    return out


# =========================================================================== small helpers


@dataclass
class _Json:
    path: Path
    rel: str
    exists: bool = False
    value: Any = None
    error: Optional[str] = None  # one-line, names the file (and byte offset)
    err_offset: int = 0
    raw: bytes = b""
    mtime: Optional[float] = None
    #: ``value`` was read by orjson's strict parser: no NaN / Infinity in it (sanitize has nothing to do)
    finite: bool = False

    @property
    def ok(self) -> bool:
        return self.exists and self.error is None

    @property
    def generation(self) -> str:
        return _content_gen(self.raw)


def _content_gen(raw: bytes) -> str:
    return hashlib.sha1(raw).hexdigest()[:16]


def _read_json(path: Path, rel: str) -> _Json:
    """Read a whole-file JSON document leniently (NaN/Infinity, BOM). Never raises."""
    j = _Json(path, rel)
    try:
        st = path.stat()
    except OSError:
        return j
    j.exists = True
    j.mtime = st.st_mtime
    try:
        raw = read_regular(path)
    except OSError as e:
        j.error = one_line(f"{rel}: unreadable: {e}", 240)
        return j
    j.raw = raw
    skip = len(BOM) if raw.startswith(BOM) else 0
    body = raw[skip:]
    if not body.strip():
        j.error = f"{rel}: empty file (0 bytes of JSON at byte {skip})"
        j.err_offset = skip
        return j
    try:
        try:
            j.value, j.finite = orjson.loads(body), True
        except orjson.JSONDecodeError:  # (NaN / Infinity tokens, integers past 64 bits, invalid JSON)
            j.value = loads_lenient(body)
    except UnicodeDecodeError as e:
        j.err_offset = skip + e.start
        j.error = one_line(f"{rel}: invalid UTF-8 at byte {j.err_offset}", 240)
    except json.JSONDecodeError as e:
        try:
            text = body.decode("utf-8")
            off = len(text[: e.pos].encode("utf-8"))
        except UnicodeDecodeError:
            off = e.pos
        j.err_offset = skip + off
        j.error = one_line(f"{rel}: {json_error_text(e.msg, j.err_offset, len(raw))}", 240)
    except (ValueError, RecursionError) as e:
        j.error = one_line(f"{rel}: invalid JSON: {e}", 240)
    return j


def _read_bytes(path: Path) -> bytes:
    """The bytes :func:`_read_json` keeps of ``path`` (``_Json.raw``): b"" when it cannot be read."""
    try:
        return read_regular(path)
    except OSError:
        return b""


def _json_parse_error(j: _Json, reason: Optional[str] = None) -> Event:
    ev = parse_error(j.rel, j.generation, 0, j.raw, reason or j.error or "invalid JSON")
    ev.data["error_offset"] = j.err_offset
    ev.summary = one_line(reason or j.error or f"{j.rel}: invalid JSON", 240)
    if j.mtime is not None:
        ev.t, ev.t_source = j.mtime, TimeSource.INTERPOLATED
    return ev


def sanitize(obj: Any) -> Any:
    """Copy of a parsed JSON value with non-finite floats replaced by ``None``."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [sanitize(v) for v in obj]
    return obj


def _finite(v: Any) -> Optional[float]:
    if type(v) is float:  # (the common case first: ~100,000 calls for 60 runs' report.json tests)
        return v if math.isfinite(v) else None
    if v is None:
        return None
    return finite_or_none(v)[0] if not isinstance(v, bool) else None


def _int(v: Any) -> Optional[int]:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    return None


def _bool(v: Any) -> Optional[bool]:
    return v if isinstance(v, bool) else None


def _mtime(p: Path) -> Optional[float]:
    try:
        return p.stat().st_mtime
    except OSError:
        return None


def parse_line_file(path: Path, parser: LineParser, source: str, generation: str) -> list[Event]:
    """Run a finished line file through ``parser`` (offline). Missing file → ``[]``."""
    try:
        fp = open_regular(path)
    except OSError:
        return []
    with fp:
        return _parse_lines(fp, parser, source, generation)


def _parse_lines(fp, parser: LineParser, source: str, generation: str) -> list[Event]:
    """:func:`parse_line_file` of an open file (read from byte 0)."""
    out: list[Event] = []
    for ln in iter_lines(fp, 0, final=True):
        if ln.too_long:
            out.append(parse_error(source, generation, ln.offset, ln.data, "line longer than 20 MB"))
            continue
        out.extend(parser.feed(ln.data, ln.offset))
    out.extend(parser.finish())
    return out


# =========================================================================== secrets

_SENSITIVE_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
_HEX_TOKEN_RE = re.compile(r"^[0-9a-fA-F]{32,}$")
_OPAQUE_TOKEN_RE = re.compile(r"^[A-Za-z0-9_\-]{32,}$")


def _sensitive_key(key: str) -> bool:
    k = key.upper()
    return any(m in k for m in _SENSITIVE_MARKERS)


def _looks_secret(s: str) -> bool:
    """A whole string value that looks like a credential (long opaque token)."""
    if _HEX_TOKEN_RE.match(s):
        return True
    if _OPAQUE_TOKEN_RE.match(s):
        return any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)
    return False


def redact_config(obj: Any, _under_sensitive: bool = False) -> Any:
    """Copy of ``obj`` (a run_config.json or any JSON value) without secrets.

    * a non-empty string under a key containing KEY / TOKEN / SECRET / PASSWORD /
      CREDENTIAL / AUTH (``api_key``, ``admin_secret``, ``extra_env`` entries…)
      becomes ``"<redacted>"``; dicts under such keys are walked normally (so a
      task *named* ``token_bucket`` keeps its config), lists have their strings
      redacted;
    * any other string has credential-looking parts replaced (``sk-…``,
      ``ghp_…``, bearer tokens, ``NAME_KEY=value``, URL passwords) and is
      replaced whole when it is a long opaque token (≥ 32 chars, hex, or
      mixed-case letters + digits without spaces).
    """
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            ks = str(k)
            sens = _sensitive_key(ks)
            if sens and isinstance(v, str):
                out[ks] = REDACTED if v else v
            elif sens and isinstance(v, list):
                out[ks] = redact_config(v, True)
            else:
                out[ks] = redact_config(v, False)
        return out
    if isinstance(obj, list):
        return [redact_config(v, _under_sensitive) for v in obj]
    if isinstance(obj, str):
        if _under_sensitive and obj:
            return REDACTED
        if obj == REDACTED:
            return obj
        if _looks_secret(obj):
            return REDACTED
        return redact_text(obj)
    return obj


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
        raw = read_regular(p)
    except OSError:
        return None
    sa = StartedAt(raw=raw, mtime=_mtime(p))
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
        try:
            naive = datetime.strptime(lines[0][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
            off = round((naive - ep) / 900.0) * 900.0
            if abs(off) <= 14 * 3600:
                sa.utc_offset_s = float(off)
            else:
                sa.error = one_line(f"started_at: line 1 {lines[0]!r} is {off / 3600:.1f} h away from the epoch", 240)
        except ValueError:
            sa.error = one_line(f"started_at: line 1 is not a local ISO time: {lines[0]!r}", 240)
    return sa


def infer_log_offset(path: Path) -> Optional[float]:
    """The UTC offset (seconds, 15-minute steps) of the host that writes ``run_agent.log``, from
    the file itself: its last line's naive local time against the file's mtime (the moment that
    line was written). For a run without ``started_at`` (which gives the offset exactly,
    sforge-format.md §2): never the offset of the process edgetui runs in. Only for a log seen
    growing (the live supervisor): a copied file's mtime says nothing. None when the log has no
    timed line, or the two are more than 14 h apart."""
    try:
        with open_regular(path) as f:
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


_LOG_TS_RE = re.compile(rb"^(?:\xef\xbb\xbf)?(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3}) - ")
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
            if s.agent is None and b"Running agent: " in line:
                cmd = line.split(b"Running agent: ", 1)[1].decode("utf-8", "replace").lstrip()
                for word, name in _AGENT_PEEK:
                    if cmd == word or cmd.startswith(word + " ") or cmd.startswith(word + "\n"):
                        s.agent = name
                        break
            m = _LOG_TS_RE.match(line)
            if m:
                try:
                    s.last_naive = local_to_epoch(tuple(g.decode() for g in m.group(1, 2, 3, 4, 5, 6)), int(m.group(7)), None)
                except ValueError:
                    pass
                rest = line[m.end():].decode("utf-8", "replace")
                level, _, msg = rest.partition(" - ")
                s.last_level, s.last_message = level.strip(), msg.strip()
                s.traceback_after_last = False
            elif line.startswith(b"Traceback (most recent call last)"):
                s.traceback_after_last = True
    return s


def harness_error_of(scan: "_LogScan") -> Optional[str]:
    """The harness's own words when run_agent.log ends on an ERROR record (with its traceback or
    without): SForge 1.1.0 crashes in run_agent's ``finally`` on any early error and writes
    nothing else (sforge-format.md; a genuine run without sudo shows it). None otherwise."""
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


def _read_config(task_dir: Path) -> tuple[Optional[dict[str, Any]], list[_Json], Optional[dict[str, Any]]]:
    """(per-task config, files read, root-level info) — per-task file first, else root tasks[task]."""
    read: list[_Json] = []
    own = _read_json(task_dir / "run_config.json", "run_config.json")
    if own.exists:
        read.append(own)
    if own.ok and isinstance(own.value, dict):
        return own.value, read, None
    root = _read_json(task_dir.parent / "run_config.json", "../run_config.json")
    if root.exists:
        read.append(root)
    if root.ok and isinstance(root.value, dict):
        tasks = root.value.get("tasks")
        info = {k: root.value.get(k) for k in ("run_id", "experiment", "stagger")}
        if isinstance(tasks, dict) and isinstance(tasks.get(task_dir.name), dict):
            return tasks[task_dir.name], read, info
        return None, read, info
    return None, read, None


def read_run_info(loc: RunLocation) -> RunInfo:
    """RunInfo of one run from its top-level files (no transcript). Never raises.

    ``config`` = run_config.json (per-task, else the root file's ``tasks[task]``)
    through :func:`redact_config`; ``timeout_s`` = its ``timeout`` or 3600 s when
    null (§2.4, only when a config exists); ``agent``/``model`` from the config,
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
    fj = _read_json(td / "final_result.json", "final_result.json")
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
        log_mtime=_mtime(td / "run_agent.log"),
        unreadable=_final_unreadable(fj) if final is None else None,
    )
    if config is not None:
        t = _finite(config.get("timeout"))
        info.timeout_s = t if t is not None and t > 0 else DEFAULT_TIMEOUT_S
        ei = _finite(config.get("eval_interval"))
        info.eval_interval_s = ei
        info.agent = config.get("agent") if isinstance(config.get("agent"), str) else None
        info.model = config.get("model") if isinstance(config.get("model"), str) else None
    if final is not None:
        if info.agent is None and isinstance(final.get("agent"), str) and final.get("agent"):
            info.agent = final["agent"]
        if info.model is None and isinstance(final.get("model"), str) and final.get("model"):
            info.model = final["model"]
        rc = _int(final.get("resume_count"))
        info.resume_count = rc if rc is not None else (scan.resumes if scan.exists else None)
        last_t = scan.last_naive - (offset or 0.0) if scan.last_naive is not None else None
        info.ended_at = _end_time(fj.mtime, info.started_at, last_t, _finite(final.get("runtime_seconds")))
    elif scan.exists:
        info.resume_count = scan.resumes
    if info.agent is None:
        info.agent = scan.agent
    return info


def _final_unreadable(fj: _Json) -> Optional[str]:
    """Why a final_result.json that exists gives no final result (one line), else None."""
    if not fj.exists:
        return None
    why = fj.error or f"{fj.rel}: not a JSON object"
    return one_line(f"final_result.json could not be read ({why.removeprefix(fj.rel + ': ')})", 200)


# =========================================================================== submissions


def _parse_round(name: str) -> Optional[tuple[str, int]]:
    if name.isdigit():
        return "legacy", int(name)
    m = _ROUND_RE.match(name)
    if m:
        return m.group(1), int(m.group(2))
    return None


def _evolve_seen(task_dir: Path) -> dict[str, float]:
    j = _read_json(task_dir / "evolve_state.json", "evolve_state.json")
    out: dict[str, float] = {}
    if not (j.ok and isinstance(j.value, dict)):
        return out
    subs = j.value.get("submissions")
    if not isinstance(subs, list):
        return out
    for s in subs:
        if isinstance(s, dict) and isinstance(s.get("round"), str):
            at = _finite(s.get("at"))
            if at is not None and at > 0:
                out[s["round"]] = at
    return out


def _test(item: dict[str, Any], origin: str) -> TestResult:
    g = item.get
    name, status, msg, score, weight = g("name"), g("status"), g("message"), g("score"), g("weight")
    # (positional: name, status, message, score, weight, origin; the values checked here, the
    # common types first: ~300,000 calls a 750-run root)
    return TestResult(name if type(name) is str else ("" if name is None else str(name)),
                      status if type(status) is str else ("" if status is None else str(status)),
                      msg if msg is None or type(msg) is str else str(msg),
                      None if score is None else _finite(score), None if weight is None else _finite(weight), origin)


def _tests_of_report(d: dict[str, Any]) -> list[TestResult]:
    """details (all parsers) + test_details items not already in details (legacy parsers repeat them)."""
    details = d.get("details") if isinstance(d.get("details"), list) else []
    tdetails = d.get("test_details") if isinstance(d.get("test_details"), list) else []
    out: list[TestResult] = []
    seen: Counter[tuple[str, str]] = Counter()
    for it in details:
        if isinstance(it, dict):
            tr = _test(it, "details")
            out.append(tr)
            seen[(tr.name, tr.status)] += 1
    for it in tdetails:
        if isinstance(it, dict):
            name, status = it.get("name"), it.get("status")  # (as _test makes them: a repeat is not built)
            key = ("" if name is None else str(name), "" if status is None else str(status))
            if seen[key] > 0:
                seen[key] -= 1
                continue
            out.append(_test(it, "test_details"))
    return out


@dataclass
class _JudgeLog:
    """What a submission folder uses of its ``run_instance.log``: ``events``, every event a
    :class:`~edgetui.parsers.runlog.RunAgentLogParser` gives of it that the folder may record
    (:class:`~edgetui.parsers.runlog.JudgeLogParser`: the others are never built); ``judge_end``,
    when the judge ended (epoch s UTC: its last ``Result:`` line, else its last timed record; None
    without either); ``generation`` of the file ("" when missing or without a complete line)."""

    events: list[Event]
    judge_end: Optional[float]
    generation: str


def _instance_log(entry: Path, rel_dir: str, utc_offset_s: Optional[float]) -> _JudgeLog:
    """Read ``entry/run_instance.log`` once (its generation from the same open file)."""
    try:
        fp = open_regular(entry / "run_instance.log")
    except OSError:
        return _JudgeLog([], None, "")
    with fp:
        gen = generation_of_head(fp.read(GENERATION_PREFIX_BYTES)) or ""
        parser = JudgeLogParser(f"{rel_dir}/run_instance.log", gen, utc_offset_s)
        events = _parse_lines(fp, parser, parser.source, gen)
    results = [e.t for e in events if e.t is not None and e.kind != Kind.PARSE_ERROR
               and str(e.data.get("message", "")).startswith(_RESULT_PREFIX)]
    return _JudgeLog(events, results[-1] if results else parser.end_t, gen)


def _last_instance_error(events: list[Event]) -> Optional[Event]:
    errs = [e for e in events if e.data.get("error")]
    return errs[-1] if errs else None


def _read_report_folder(entry: Path, rec: SubmissionRecord, tests: bool = True) -> None:
    rel_dir = f"submissions/{entry.name}"
    rj = _read_json(entry / "report.json", f"{rel_dir}/report.json")
    if not rj.exists:
        rec.status = "failed_grading"
        err = _last_instance_error(_instance_log(entry, rel_dir, None).events)
        rec.error = one_line(err.summary, 300) if err is not None and err.summary else "no report.json"
        return
    rec.graded_at = rj.mtime
    if rj.error is not None:
        rec.status, rec.error = "bad_report", rj.error
        return
    d = rj.value
    if not isinstance(d, dict):
        rec.status = "bad_report"
        rec.error = f"{rj.rel}: not a JSON object (got {type(d).__name__}) at byte 0"
        return
    rec.status = "graded"
    sid = d.get("submission_id")
    rec.submission_id = str(sid) if sid not in (None, "") else None
    rec.total_tests = _int(d.get("total_tests"))
    rec.passed = _int(d.get("passed"))
    rec.failed = _int(d.get("failed"))
    rec.errors = _int(d.get("errors"))
    rec.pass_rate = _finite(d.get("pass_rate"))
    rec.score, rec.score_flag = finite_or_none(d.get("score"))
    rec.score_0_100 = _finite(d.get("score_0_100"))
    rec.valid = _bool(d.get("valid"))
    rec.timed_out = _bool(d.get("timed_out"))
    rec.runtime_s = _finite(d.get("runtime_seconds"))
    summ = d.get("summary")
    rec.summary = summ if isinstance(summ, str) else (None if summ is None else str(summ))
    m = d.get("metrics")
    rec.metrics = (m if rj.finite else sanitize(m)) if isinstance(m, dict) else {}  # (orjson: nothing to sanitize)
    sub_at = _finite(d.get("submitted_at"))
    rec.submitted_at = sub_at if sub_at is not None and sub_at > 0 else None
    if tests:
        rec.tests = _tests_of_report(d)


def _last_step(path: Path) -> tuple[Optional[dict[str, Any]], int]:
    last: Optional[dict[str, Any]] = None
    n = 0
    try:
        fp = open_regular(path)
    except OSError:
        return None, 0
    with fp:
        for ln in iter_lines(fp, 0, final=True):
            if ln.too_long or not ln.data.strip():
                continue
            try:
                v = loads_lenient(ln.data)
            except ValueError:
                continue
            if isinstance(v, dict):
                last, n = v, n + 1
    return last, n


def _fill_game(rec: SubmissionRecord, d: dict[str, Any]) -> None:
    max_score = _finite(d.get("max_score"))
    final = d.get("final_score", d.get("score"))
    score, flag = finite_or_none(final)
    rec.score, rec.score_flag = score, flag
    rec.max_score = max_score
    pr = _finite(d.get("pass_rate"))
    if pr is None and score is not None and max_score is not None:
        pr = score / max_score if max_score > 0 else 0.0
    rec.pass_rate = pr
    moves = _int(d.get("moves", d.get("move")))
    rec.metrics = {k: v for k, v in (("moves", moves), ("peak_score", _finite(d.get("peak_score")))) if v is not None}
    sid = d.get("session_id")
    rec.submission_id = str(sid) if sid else None


def _read_game_folder(entry: Path, rec: SubmissionRecord) -> None:
    rel_dir = f"submissions/{entry.name}"
    gj = _read_json(entry / "game_result.json", f"{rel_dir}/game_result.json")
    if gj.exists:
        rec.graded_at = gj.mtime
        if gj.error is not None:
            rec.status, rec.error = "bad_report", gj.error
        elif not isinstance(gj.value, dict):
            rec.status, rec.error = "bad_report", f"{gj.rel}: not a JSON object at byte 0"
        else:
            rec.status = "graded"
            _fill_game(rec, gj.value)
        return
    rec.status = "in_flight"
    last, _ = _last_step(entry / "steps.jsonl")
    if last is not None:
        _fill_game(rec, last)


#: The files of a submission folder whose size / mtime / inode make its signature (read_submissions cache).
FOLDER_FILES = ("report.json", "run_instance.log", "test_output.txt", "game_result.json", "steps.jsonl")


def folder_signature(entry: Path) -> tuple:
    """(size, mtime_ns, inode) of each of :data:`FOLDER_FILES` in a submission folder (None when absent)."""
    out = []
    for name in FOLDER_FILES:
        try:
            st = os.stat(os.path.join(entry, name))
            out.append((st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _cached(cache: Optional[dict[str, tuple]], fresh: dict[str, tuple], name: str, key: Any,
            build: Callable[[], Any]) -> Any:
    """``build()`` unless ``cache`` holds ``name`` under the same ``key``; what is used goes into ``fresh``
    (which replaces the cache afterwards, so folders that vanished drop out)."""
    hit = cache.get(name) if cache is not None else None
    if hit is not None and hit[0] == key:
        fresh[name] = hit
        return hit[1]
    value = build()
    fresh[name] = (key, value)
    return value


def _replace(cache: Optional[dict[str, tuple]], fresh: dict[str, tuple]) -> None:
    if cache is not None:
        cache.clear()
        cache.update(fresh)


def _read_folder(entry: Path, kind: str, n: Optional[int], tests: bool = True) -> SubmissionRecord:
    rec = SubmissionRecord(round=entry.name, kind=kind, n=n)
    try:
        if kind == "game":
            _read_game_folder(entry, rec)
        else:
            if tests:
                _read_report_folder(entry, rec)
            else:
                _read_report_folder(entry, rec, tests=False)
    except Exception as e:  # noqa: BLE001 - last resort: one bad folder must not stop the run
        rec.status = "bad_report"
        rec.error = one_line(f"submissions/{entry.name}: {type(e).__name__}: {e}", 240)
    return rec


def read_submissions(task_dir: Path, cache: Optional[dict[str, tuple]] = None, *,
                     tests: bool = True) -> list[SubmissionRecord]:
    """One record per ``submissions/<round>/`` folder (agent-N, auto-N, game-N, manual-N, legacy integers).

    Other folder names are ignored (as the visualizer does). Sorted by time
    (``submitted_at``, else ``seen_at``, else ``graded_at``; unknown last), then
    kind and N. Never raises. ``cache`` (a dict the caller keeps between calls,
    e.g. the live supervisor) skips re-reading folders whose files did not
    change (:func:`folder_signature`). ``tests=False`` leaves every record's ``tests`` empty
    (report.json's per-test results not parsed: ~40 % of the read, for a caller that keeps the
    recorded test results; not with ``cache``, whose records must be complete).
    """
    task_dir = Path(task_dir)
    tests = tests or cache is not None
    out: list[SubmissionRecord] = []
    seen = _evolve_seen(task_dir)
    fresh: dict[str, tuple] = {}
    for entry in _subdirs(task_dir / "submissions"):
        parsed = _parse_round(entry.name)
        if parsed is None:
            continue
        kind, n = parsed
        if cache is None:
            rec = _read_folder(entry, kind, n, tests)
        else:  # the cached record stays as read; the caller gets a copy (seen_at is set below)
            rec = _cached(cache, fresh, entry.name, folder_signature(entry),
                          lambda: _read_folder(entry, kind, n)).model_copy()
        if kind in ("agent", "legacy") and entry.name in seen:
            rec.seen_at = seen[entry.name]
        out.append(rec)

    def key(r: SubmissionRecord) -> tuple[Any, ...]:
        t = r.submitted_at if r.submitted_at is not None else (r.seen_at if r.seen_at is not None else r.graded_at)
        return (t is None, t or 0.0, _KIND_ORDER.get(r.kind, 9), r.n or 0, r.round)

    out.sort(key=key)
    _replace(cache, fresh)
    return out


def _is_pass(status: str) -> bool:
    return status.upper() in _PASS_STATUSES


def _judge_data(rec: SubmissionRecord) -> dict[str, Any]:
    failing = [t.name for t in rec.tests if not _is_pass(t.status)]
    return {
        "status": rec.status,
        "kind": rec.kind,
        "n": rec.n,
        "submission_id": rec.submission_id,
        "pass_rate": rec.pass_rate,
        "score": rec.score,
        "score_flag": rec.score_flag,
        "score_0_100": rec.score_0_100,
        "max_score": rec.max_score,
        "valid": rec.valid,
        "summary": rec.summary,
        "total_tests": rec.total_tests,
        "passed": rec.passed,
        "failed": rec.failed,
        "errors": rec.errors,
        "timed_out": rec.timed_out,
        "runtime_s": rec.runtime_s,
        "submitted_at": rec.submitted_at,
        "graded_at": rec.graded_at,
        "seen_at": rec.seen_at,
        "failing": failing[:50],
        "n_failing": len(failing),
        "error": rec.error,
        "metrics": rec.metrics,
    }


def _result_summary(rec: SubmissionRecord) -> str:
    if rec.status == "failed_grading":
        return one_line(f"{rec.round} failed grading: {rec.error}")
    if rec.status == "bad_report":
        return one_line(f"{rec.round} bad report: {rec.error}")
    parts = [f"{rec.round} graded"]
    if rec.pass_rate is not None:
        parts.append(f"pass {rec.pass_rate * 100:.1f}%")
    if rec.score is not None and not math.isfinite(rec.score):
        parts.append("score –")  # a report's NaN / inf score: no score, not the word "nan"
    elif rec.score is not None:
        parts.append(f"score {rec.score:g}" + (f"/{rec.max_score:g}" if rec.max_score is not None else ""))
    elif rec.score_flag:  # (a NaN or non-numeric score is shown as "–", not the word "nan")
        parts.append("score –" if rec.score_flag in ("nan", "non_numeric") else f"score {rec.score_flag}")
    if rec.valid is False:
        parts.append("INVALID")
    return one_line(", ".join(parts))


def _step_events(entry: Path, rel_dir: str, rnd: str) -> list[Event]:
    p = entry / "steps.jsonl"
    src = f"{rel_dir}/steps.jsonl"
    gen = file_generation(p) or ""
    out: list[Event] = []
    try:
        fp = open_regular(p)
    except OSError:
        return out
    with fp:
        for ln in iter_lines(fp, 0, final=True):
            if not ln.data.strip():
                continue
            if ln.too_long:
                out.append(parse_error(src, gen, ln.offset, ln.data, "line longer than 20 MB"))
                continue
            try:
                v = loads_lenient(ln.data)
            except ValueError as e:
                out.append(parse_error(src, gen, ln.offset, ln.data, f"invalid JSON: {e}"))
                continue
            if not isinstance(v, dict):
                out.append(parse_error(src, gen, ln.offset, ln.data, "step is not a JSON object"))
                continue
            v = sanitize(v)
            act = one_line(v.get("action"), 60)
            summ = f"{rnd} move {v.get('move')}: {act} → {v.get('score')}/{v.get('max_score')}"
            out.append(Event(kind=Kind.GAME_STEP, source=src, generation=gen, offset=ln.offset, round=rnd, summary=one_line(summ), data=v))
    return out


_KEPT_INSTANCE_PREFIXES = JUDGE_KEPT_PREFIXES


def submission_events(task_dir: Path, records: Iterable[SubmissionRecord], utc_offset_s: Optional[float],
                      cache: Optional[dict[str, tuple]] = None) -> list[Event]:
    """Events of the submission folders described by ``records`` (from :func:`read_submissions`).
    ``cache`` (kept by the caller between calls, e.g. the live supervisor) re-reads only the folders
    whose files or record changed; the events returned are then copies (callers may re-time them).

    Per non-game record one JUDGE_RESULT (``round`` set; ``data`` = pass_rate,
    score, valid, summary, ``failing`` (first 50 non-passing test names),
    status, error, ``submitted_at``, ``known_by``…): source ``report.json`` (or
    ``run_instance.log`` when grading failed), offset 0; ``t`` = when the result
    was known (:func:`result_known_time`: evolve ``at`` for agent rounds, else the
    judge log's ``Result:`` line, else the report mtime), or, for failed grading,
    the time of the last ERROR record of run_instance.log (recorded). The
    submission itself is the round's ``sforge-submit`` call / auto-eval tick, at
    ``submitted_at``. A bad report.json also gives a parse_error (sub 0; the
    JUDGE_RESULT is then sub 1).
    From run_instance.log: ERROR records (kind LOG, level ERROR, with
    traceback), WARNING lines and the ``Result:`` / ``Test runtime:`` /
    ``Judge container started:`` lines, as LOG events with ``round``; judge
    local times use ``utc_offset_s`` (judge and runner on one host).
    Game folders: GAME_RESULT from game_result.json (mtime, interpolated), one
    GAME_STEP per steps.jsonl line (no time).
    """
    task_dir = Path(task_dir)
    if cache is None:
        return _folder_events(task_dir, records, utc_offset_s)
    fresh: dict[str, tuple] = {}
    out: list[Event] = []
    for rec in records:
        key = (rec.model_dump_json(), utc_offset_s, folder_signature(task_dir / "submissions" / rec.round))
        evs = _cached(cache, fresh, rec.round, key, lambda rec=rec: _folder_events(task_dir, [rec], utc_offset_s))
        out.extend(e.model_copy() for e in evs)
    _replace(cache, fresh)
    return out


_RESULT_PREFIX = "Result:"
#: the judge's end is trusted as a result time only this long (s) past ``submitted_at`` plus the
#: eval's runtime (container start, archive, teardown take seconds): a log read with the wrong
#: UTC offset (the run's offset unknown) falls back to the report's mtime instead
JUDGE_SETUP_MAX_S = 900.0


def result_known_time(rec: SubmissionRecord, judge_end: Optional[float]
                      ) -> tuple[Optional[float], Optional[str], Optional[str]]:
    """When a graded round's result was known: ``(t, t_source, known_by)`` (epoch seconds UTC).

    * agent (and legacy) rounds: ``evolve_state.json`` ``at`` (``seen_at``), the moment the
      agent saw the result — SForge's visualizer times agent rounds so (sforge-format.md §10.1);
      ``known_by = "evolve_state"``, recorded;
    * otherwise (auto rounds; an agent round before ``evolve_state.json`` is written, which the
      harness does at the end): the judge's end in ``run_instance.log``, its ``Result:`` line
      (else its last timed record, the judge container's end); ``"judge_log"``, recorded;
      trusted between ``submitted_at`` and ``submitted_at`` + runtime + :data:`JUDGE_SETUP_MAX_S`;
    * else the ``report.json`` mtime (``graded_at``), trusted in the same window;
      ``"report_mtime"``, interpolated;
    * else (a copied or checked-out folder: every mtime is the copy's) ``submitted_at`` plus the
      eval's ``runtime_seconds``; ``"submitted_at+runtime"``, interpolated;
    * nothing known: ``(None, None, None)``.

    Never ``submitted_at``: that is when grading began, not when its result was known.
    ``judge_end``: the judge's end read from the round's ``run_instance.log`` (epoch s UTC, or None:
    :attr:`_JudgeLog.judge_end`).
    """
    if rec.kind in ("agent", "legacy") and rec.seen_at is not None:
        return rec.seen_at, TimeSource.RECORDED, "evolve_state"

    def plausible(t: float) -> bool:
        return rec.submitted_at is None or \
            rec.submitted_at - 1.0 <= t <= rec.submitted_at + (rec.runtime_s or 0.0) + JUDGE_SETUP_MAX_S

    if judge_end is not None and plausible(judge_end):
        return judge_end, TimeSource.RECORDED, "judge_log"
    if rec.graded_at is not None and plausible(rec.graded_at):
        return rec.graded_at, TimeSource.INTERPOLATED, "report_mtime"
    if rec.submitted_at is not None:  # a copied or checked-out folder's mtime: grading start + its runtime
        return rec.submitted_at + (rec.runtime_s or 0.0), TimeSource.INTERPOLATED, "submitted_at+runtime"
    return None, None, None


def _folder_events(task_dir: Path, records: Iterable[SubmissionRecord], utc_offset_s: Optional[float]) -> list[Event]:
    out: list[Event] = []
    for rec in records:
        entry = task_dir / "submissions" / rec.round
        rel_dir = f"submissions/{rec.round}"
        if rec.kind == "game":
            gj = _read_json(entry / "game_result.json", f"{rel_dir}/game_result.json")
            if gj.exists and rec.status != "graded":
                out.append(_json_parse_error(gj, rec.error))
            elif gj.exists:
                out.append(
                    Event(
                        kind=Kind.GAME_RESULT,
                        source=gj.rel,
                        generation=gj.generation,
                        t=gj.mtime,
                        t_source=TimeSource.INTERPOLATED if gj.mtime is not None else None,
                        round=rec.round,
                        summary=_result_summary(rec),
                        data=_judge_data(rec),
                    )
                )
            out.extend(_step_events(entry, rel_dir, rec.round))
            continue

        judge = _instance_log(entry, rel_dir, utc_offset_s)
        inst = judge.events
        data = _judge_data(rec)
        if rec.status == "failed_grading":
            err = _last_instance_error(inst)
            p = entry / "run_instance.log"
            if err is not None:
                t, ts = err.t, TimeSource.RECORDED
            else:
                t = _mtime(p) or _mtime(entry)
                ts = TimeSource.INTERPOLATED if t is not None else None
            if utc_offset_s is None and err is not None:
                data["tz_assumed"] = True
            out.append(
                Event(
                    kind=Kind.JUDGE_RESULT,
                    source=f"{rel_dir}/run_instance.log",
                    generation=judge.generation,
                    sub=FAILED_GRADING_SUB,
                    t=t,
                    t_source=ts,
                    round=rec.round,
                    level="ERROR",
                    is_error=True,
                    summary=_result_summary(rec),
                    data=data,
                )
            )
        else:
            rel = f"{rel_dir}/report.json"
            sub = 0
            if rec.status == "bad_report":
                rj = _read_json(entry / "report.json", rel)
                out.append(_json_parse_error(rj, rec.error))
                gen = rj.generation
                sub = 1
            else:  # (read as _read_json would, not parsed again: its bytes' generation is all it gives)
                gen = _content_gen(_read_bytes(entry / "report.json"))
            t, ts, known_by = result_known_time(rec, judge.judge_end)
            data["known_by"] = known_by
            if known_by == "judge_log" and utc_offset_s is None:
                data["tz_assumed"] = True
            out.append(
                Event(
                    kind=Kind.JUDGE_RESULT,
                    source=rel,
                    generation=gen,
                    sub=sub,
                    t=t,
                    t_source=ts,
                    round=rec.round,
                    level="ERROR" if rec.status != "graded" else None,
                    is_error=rec.status != "graded",
                    summary=_result_summary(rec),
                    data=data,
                )
            )
        for ev in inst:
            msg = str(ev.data.get("message", ""))
            keep = (
                ev.kind == Kind.PARSE_ERROR
                or ev.level in JUDGE_KEPT_LEVELS
                or msg.startswith(_KEPT_INSTANCE_PREFIXES)
            )
            if keep:
                ev.round = rec.round
                out.append(ev)
    return out


# =========================================================================== other files as events


def run_config_events(task_dir: Path) -> list[Event]:
    """RUN_CONFIG with the redacted config (per-task file, else root ``tasks[task]``); bad JSON → parse_error."""
    task_dir = Path(task_dir)
    cfg, read, root_info = _read_config(task_dir)
    out: list[Event] = []
    for j in read:
        if j.error is not None:
            out.append(_json_parse_error(j))
        elif not isinstance(j.value, dict):
            out.append(_json_parse_error(j, f"{j.rel}: not a JSON object at byte 0"))
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
            generation=_content_gen(json.dumps(red, sort_keys=True).encode()),
            t=src.mtime,
            t_source=TimeSource.INTERPOLATED if src.mtime is not None else None,
            summary=one_line(f"run config: {summ}"),
            agent_format=None,
            model=red.get("model") if isinstance(red.get("model"), str) else None,
            data=data,
        )
    )
    return out


def started_at_events(task_dir: Path) -> list[Event]:
    """RUN_START at the ``started_at`` epoch (recorded); a bad file → parse_error."""
    sa = read_started_at(Path(task_dir))
    if sa is None:
        return []
    gen = _content_gen(sa.raw)
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
    out.extend(parse_line_file(p, AutoEvalTicksParser("auto_eval_ticks.log", gen, utc_offset_s), "auto_eval_ticks.log", gen))
    return out


def evolve_state_events(task_dir: Path) -> list[Event]:
    """evolve_state.json: sub 0 = LOG summary (best_*; mtime, interpolated); sub i = entry i-1

    as a LOG event with ``round`` and ``data.evolve_entry`` (pass_rate, score, at):
    ``t`` = ``at`` (container clock when the agent saw the result, recorded).
    """
    j = _read_json(Path(task_dir) / "evolve_state.json", "evolve_state.json")
    if not j.exists:
        return []
    if j.error is not None:
        return [_json_parse_error(j)]
    if not isinstance(j.value, dict):
        return [_json_parse_error(j, f"{j.rel}: not a JSON object at byte 0")]
    v = sanitize(j.value)
    subs = v.get("submissions") if isinstance(v.get("submissions"), list) else []
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
            out.append(parse_error(j.rel, j.generation, 0, json.dumps(s).encode(), f"{j.rel}: submissions[{i - 1}] is not an object", sub=i))
            continue
        at = _finite(s.get("at"))
        rnd = s.get("round") if isinstance(s.get("round"), str) else None
        pr = _finite(s.get("pass_rate"))
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
        j = _read_json(Path(task_dir) / name, name)
        if not j.exists:
            continue
        if j.error is not None:
            out.append(_json_parse_error(j))
            continue
        if not isinstance(j.value, dict):
            out.append(_json_parse_error(j, f"{j.rel}: not a JSON object at byte 0"))
            continue
        h = sanitize(j.value)
        entries = h.get("entries") if isinstance(h.get("entries"), list) else []
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


def final_result_events(task_dir: Path, started_at: Optional[float] = None, last_log_t: Optional[float] = None) -> list[Event]:
    """final_result.json → RUN_END (``data`` = the object, non-finite → null).

    ``t`` = file mtime when plausible (see :func:`_end_time`; needs the last
    run_agent.log time ``last_log_t``), ``t_source`` interpolated (an mtime is
    not written by SForge and is lost by copies). A partial / corrupt file
    (§12.2: possibly mid-write) → parse_error.
    """
    j = _read_json(Path(task_dir) / "final_result.json", "final_result.json")
    if not j.exists:
        return []
    if j.error is not None:
        return [_json_parse_error(j)]
    if not isinstance(j.value, dict):
        return [_json_parse_error(j, f"{j.rel}: not a JSON object at byte 0")]
    v = sanitize(j.value)
    t = _end_time(j.mtime, started_at, last_log_t, _finite(v.get("runtime_seconds")))
    pr = _finite(v.get("best_pass_rate"))
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
            model=v.get("model") if isinstance(v.get("model"), str) else None,
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
    judge = d.get("judge") if isinstance(d.get("judge"), dict) else {}
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    cat = d.get("category") if d.get("category") is not None else meta.get("category")
    sel = judge.get("selection")
    dirn = judge.get("score_direction")
    rescale = judge.get("rescale")
    et = _int(judge.get("eval_timeout"))
    return TaskInfo(
        task_id=stem,
        name=str(d["name"]) if d.get("name") is not None else None,
        category=str(cat) if cat is not None else None,
        selection=sel if isinstance(sel, str) and sel else "pass_rate_first",
        score_direction=dirn if isinstance(dirn, str) and dirn else "maximize",
        rescale=sanitize(rescale) if isinstance(rescale, dict) else None,
        parser=judge.get("parser") if isinstance(judge.get("parser"), str) else None,
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
        j = _read_json(f, str(f))
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
