"""The user's settings file (``<user config dir>/edgetui/alarms.toml``): the alarm rules'
thresholds and the supervisor's timings, and the one source of SForge's abort threshold
(``abort_after_s``) for the live supervisor and the offline ingest alike (docs/live.md).

* :class:`AlarmSettings` — every threshold is a user setting with a default; a default taken
  from the environment (``SFORGE_VIZ_ABORT_THRESHOLD``, ``EDGETUI_MIN_REFRESH_S``) is read
  when the settings are built, not when this module is imported.
* :func:`load_settings` reads them from ``alarms.toml`` (or ``.json``, or an explicit path).
  Unknown keys are rejected with a one-line message naming the file.
"""

from __future__ import annotations

import contextvars
import json
import os
from pathlib import Path
from typing import Optional

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import tomllib
from edgetui.events import one_line
from edgetui.parsers.base import read_regular

__all__ = ["AlarmSettings", "settings_path", "load_settings"]


class AlarmSettings(BaseModel):
    """Thresholds of the alarm rules and the supervisor's timings (all seconds)."""

    model_config = ConfigDict(extra="forbid")

    stall_after_s: float = Field(900.0, description="no transcript growth for this long (no tool call pending) = stall")
    stall_pending_max_s: Optional[float] = Field(
        10800.0, description="a tool call pending longer than this no longer excuses silence (None = always excuses)"
    )
    no_new_best_after_s: float = Field(7200.0, description="no new best-so-far for this long")
    resume_loop_count: int = Field(3, description="this many auto-resumes ...")
    resume_loop_window_s: float = Field(1800.0, description="... within this window = resume loop")
    infra_error_quiet_s: float = Field(600.0, description="ERROR lines closer than this belong to one alarm")
    container_grace_s: float = Field(60.0, description="wait for final_result.json after a work container ends")
    finish_grace_s: float = Field(1500.0, description="after 'Agent finished': drain (<= 15 min) + cleanup allowance")
    grading_grace_s: float = Field(10.0, description="judge container gone this long without report.json = failed")
    grading_start_grace_s: float = Field(
        300.0,
        description="a submission folder whose judge container never appeared this long (on an engine "
        "where judges are seen) without report.json = failed",
    )
    judge_saturated_count: int = Field(3, description="this many submissions refused by a full judge (HTTP 503) ...")
    judge_saturated_window_s: float = Field(900.0, description="... within this window = judge saturated")
    abort_after_s: float = Field(
        default_factory=lambda: float(os.environ.get("SFORGE_VIZ_ABORT_THRESHOLD", 7200)),
        description="no growth for this long and no running container = aborted (SForge's threshold)",
    )
    # timings of the supervisor itself
    min_refresh_s: float = Field(
        default_factory=lambda: float(os.environ.get("EDGETUI_MIN_REFRESH_S", 0.6)),
        description="refreshes woken by file changes come at most this often (busy runs: lines are batched)",
    )
    duckdb_threads: int = Field(
        0,
        description="DuckDB worker threads of the database while supervising (every refresh runs many "
        "small queries); 0 keeps DuckDB's default (one per core). 1 measured no clear gain "
        "on a 2-core machine (whole app 26.5 / 34.3 % vs 25.8 / 26.3 % of a core, interleaved)",
    )
    discovery_interval_s: float = Field(
        2.0,
        description="rescan the runs roots at most this often (while the file watcher runs, new runs "
        "come from the paths it sees added and the full rescan is every 30 s)",
    )
    docker_interval_s: float = Field(1.0, description="list the engine's containers at most this often")
    docker_retry_s: float = Field(5.0, description="retry an unavailable engine this often")
    docker_list_s: float = Field(
        30.0,
        description="while the engine's events stream is read, list its containers only on events and "
        "this often (a safety net)",
    )
    docker_events_window_s: float = Field(
        5.0,
        description="the events stream is asked in windows this long (a stopped engine is noticed "
        "within one); 0 = no events stream: list at every refresh",
    )
    dormant_after_s: float = Field(
        120.0,
        description="a finished or aborted run quiet this long (nothing pending, no container running) "
        "goes to sleep: no per-refresh work until a change under its directory wakes it",
    )
    dormant_check_s: float = Field(
        300.0,
        description="asleep runs' cheap stat check (their directory, submissions/ and logs) runs this "
        "often while the file watcher runs (dormant_poll_s while stat polling instead)",
    )
    dormant_poll_s: float = Field(10.0, description="... and this often without the file watcher")
    dormant_full_s: float = Field(
        1800.0,
        description="each asleep run's full tree signature is taken again this often (spread over "
        "refreshes): a report rewritten inside a submission folder wakes it",
    )
    max_poll_s: float = Field(
        10.0,
        description="without the file watcher (its limit reached, --poll), refreshes that find nothing "
        "new double their interval up to this",
    )
    stats_interval_s: float = Field(10.0, description="CPU/memory sample of each running work container (0 = off)")
    finalize_interval_s: float = Field(
        300.0,
        description="full recompute (alignment, exact tokens/cost) of a growing run at most this often; "
        "live token/cost figures are added up as lines arrive",
    )
    finalize_min_interval_s: float = Field(2.0, description="... and after a submission/final file change")
    row_refresh_s: float = Field(
        10.0,
        description="live figures of a growing run's runs-table row (events, last event, tokens, cost) "
        "are written this often",
    )
    max_finalize_per_poll: int = Field(8, description="aggregate recomputations per refresh (the rest wait)")
    max_first_refresh_per_poll: int = Field(
        150,
        description="... and besides them, first refreshes of runs just registered (a start-up, runs woken): "
        "done together, a fixed number of statements for them (the rest wait for the next)",
    )
    judge_interval_s: float = Field(
        300.0,
        description="judge /history poll per run (and once after each new "
        "submission folder); each poll writes the admin secret into the judge's log",
    )
    judge_timeout_s: float = Field(3.0, description="HTTP timeout of one /history request")


def settings_path() -> Path:

    return Path(platformdirs.user_config_dir("edgetui")) / "alarms.toml"


def load_settings(path: Optional[Path] = None, messages: Optional[list[str]] = None) -> AlarmSettings:
    """Settings from ``path`` (TOML or JSON), else the user config dir
    (``alarms.toml`` or ``alarms.json``), else the defaults.

    A bad file never raises: its problem is appended to ``messages`` (one
    line) and the defaults are used.
    """
    if path is None:
        base = settings_path()
        cands = [base, base.with_suffix(".json")]
    else:
        cands = [Path(path).expanduser()]
    for p in cands:
        if not p.exists():
            if path is not None and messages is not None:
                messages.append(f"{p}: no such settings file; using default alarm settings")
            continue
        try:
            # in an empty context: read while a run folder is (the offline ingest's finalize), the
            # user's file is not that folder's and must not fall under its no-link-out rule
            raw = contextvars.Context().run(read_regular, p)
            if p.suffix.lower() == ".json":
                data = json.loads(raw or b"{}")
            else:
                data = tomllib.loads(raw.decode("utf-8"))
            if isinstance(data, dict) and isinstance(data.get("alarms"), dict):
                data = {**{k: v for k, v in data.items() if k != "alarms"}, **data["alarms"]}
            return AlarmSettings(**data)
        except (OSError, ValueError, ValidationError, TypeError) as e:
            if messages is not None:
                err = e.errors()[0] if isinstance(e, ValidationError) else None
                why = f"{'.'.join(map(str, err['loc']))}: {err['msg']}" if err else str(e)
                messages.append(one_line(f"{p}: {why}; using default alarm settings", 240))
            return AlarmSettings()
    return AlarmSettings()
