"""The secret values a run's own files name, to be replaced wherever they occur.

A run's ``run_config.json`` (the task's and the run's) holds its ``api_key`` and ``extra_env``;
the log dir holds the judge's admin secret (``<log_dir>/.judge-admin-secret``,
docs/sforge-run-folders.md §2.2); ``SFORGE_ADMIN_SECRET`` names it in the environment. An agent
that echoes one of them (``env``, ``cat ~/.config``) writes it where no rule of :mod:`edgetui.redact` would know it: the
recorder, the why view, the reports, the pager's copy and ``--on-alarm`` replace these values as
well. Which config values count is :func:`edgetui.redact.secret_values` (the names of the one rule
set: ``author`` is not a credential's name).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from edgetui.error_log import note_swallowed
from edgetui.parsers.base import loads_lenient, read_regular
from edgetui.parsers.run_folder_files import SMALL_FILE_LIMIT, read_run_file, reads_run_folder
from edgetui.redact import REDACTED, secret_values

__all__ = ["run_secrets", "recorded_run_secrets"]


def run_secrets(task_dir: "Path | str | None", *, environment: bool = False) -> set[str]:
    """Secret values found in the run folder ``task_dir`` before redaction: the credential-named
    values of its and its run's ``run_config.json`` and the judge admin secret of a log dir up to
    five levels above; ``environment``: ``SFORGE_ADMIN_SECRET`` too. Unreadable or absent files give
    nothing (never raises)."""
    found: set[str] = set()
    if environment:
        env = os.environ.get("SFORGE_ADMIN_SECRET")
        if env and len(env) >= 6 and env != REDACTED:
            found.add(env)
    if task_dir is None:
        return found
    task_dir = Path(task_dir)
    for cfg in (task_dir / "run_config.json", task_dir.parent / "run_config.json"):
        try:
            found |= secret_values(loads_lenient(read_regular(cfg)))
        except FileNotFoundError:  # no such config: no secrets from it
            pass
        except (OSError, ValueError, RecursionError):
            note_swallowed("a run_config.json not read: its secrets are unknown to the redaction")
    for up in list(task_dir.parents)[:5]:
        v = _read_secret_file(up / ".judge-admin-secret")
        if v:
            found.add(v)
    return found


def recorded_run_secrets(conn: Any, run_key: str) -> set[str]:
    """:func:`run_secrets` of a recorded run (its ``runs.run_dir``), ``SFORGE_ADMIN_SECRET`` included:
    for what is shown or written from a run's files after it was recorded (the why view, reports)."""
    row = conn.execute("SELECT run_dir FROM runs WHERE run_key = ?", [run_key]).fetchone()
    return run_secrets(row[0] if row and row[0] else None, environment=True)


def _read_secret_file(path: Path) -> Optional[str]:
    try:
        # (the log dir's file, above the run folder: it stays in its own folder; a FIFO is skipped)
        v = read_run_file(path, limit=SMALL_FILE_LIMIT, folder=path.parent).decode("utf-8", "replace").strip()
    except FileNotFoundError:  # no judge admin secret at this level
        return None
    except OSError:
        note_swallowed("a .judge-admin-secret not read: its value is unknown to the redaction")
        return None
    return v if len(v) >= 6 and v != REDACTED else None


@reads_run_folder(lambda task_dir: Path(task_dir).parent)
def raw_secrets(task_dir: Path) -> set[str]:
    """Secret values found in a run's files before redaction (:func:`edgetui.parsers.run_secrets.run_secrets`):
    run_config.json's credential-named values (``api_key``, ``extra_env``'s), and the judge admin
    secret of the log dir. Used to scrub every other text (a key echoed by the agent) before it is
    written."""
    return run_secrets(task_dir)
