"""The *why* of a new best: what the agent did since the previous best, its own notes, and the
code diff of the submission against the previous best's.

:func:`why_of` reads a recorded run (events, submissions, the run folder's
``submissions/<round>/submission.tar.gz`` and an ``analysis.md`` someone added for SForge's
visualizer) and returns plain data; the replay screen shows it (loaded in a worker), the
report prints it. Archives are read by :mod:`edgetui.parsers.submission_archive` (refused whole when hostile);
the diff is :mod:`difflib`'s unified diff.

Everything read from the run folder (the archives' files and paths, ``analysis.md``, a refused
archive's message) is redacted with the rules of :mod:`edgetui.redact` and the run's own known
secrets (:func:`edgetui.parsers.run_secrets.run_secrets`) before it is returned, as the database's texts
are: each archive file as a whole before it is diffed (a private key across its lines), and the
whole result once more (a secret the database was written before it was known).
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, Optional

from edgetui.parsers.submission_archive import DEFAULT_LIMITS, ArchiveRefused, Limits, read_archive
from edgetui.parsers.run_folder_files import SkippedRunFile, check_run_file, read_run_file_head
from edgetui.record.moments_table import load_series
from edgetui.redact import redact_obj, redact_text
from edgetui.parsers.run_secrets import recorded_run_secrets

__all__ = ["ACTION_KINDS", "why_of", "why_diff", "diff_archives"]

#: the kinds actions are collapsed into, in display order
ACTION_KINDS = ("thinking", "messages", "reads", "edits", "tests", "commands", "other")
_TEST_RE = re.compile(r"\b(pytest|unittest|local_eval|evaluate|make|cargo\s+test|npm\s+test|go\s+test|ctest|tox)\b")
_NOTE_RE = re.compile(r"(?i)(\.md|\.txt|\.rst)$|notes?|journal|plan")
MAX_DIFF_LINES = 2000
MAX_NOTE_CHARS = 4000


def _kind(kind: str, tool: Optional[str], command: Optional[str]) -> str:
    if kind == "thinking":
        return "thinking"
    if kind == "agent_message":
        return "messages"
    if tool in ("Read", "Grep", "Glob"):
        return "reads"
    if tool in ("Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"):
        return "edits"
    if command is not None:
        return "tests" if _TEST_RE.search(command) else "commands"
    return "other"


def diff_archives(
    old: Optional[Path],
    new: Path,
    limits: Limits = DEFAULT_LIMITS,
    max_lines: int = MAX_DIFF_LINES,
    secrets: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """Unified diff of two submission archives' text files (``old`` ``None``: everything added).

    Returns ``{"files": [{"path", "status": added|removed|changed|binary, "lines": [...]}],
    "unchanged": n, "truncated": bool, "error": None}``; a refused or unreadable archive gives
    ``error`` (one line, :class:`edgetui.parsers.submission_archive.ArchiveRefused`) and no files. Paths, texts and the
    error are redacted (:mod:`edgetui.redact`, and the known values ``secrets``)."""
    try:
        a = _redacted_files(read_archive(old, limits), secrets) if old is not None else {}
        b = _redacted_files(read_archive(new, limits), secrets)
    except ArchiveRefused as e:
        return {"files": [], "unchanged": 0, "truncated": False, "error": redact_text(str(e), secrets)}
    files, budget, unchanged, truncated = [], max_lines, 0, False
    for path in sorted(set(a) | set(b)):
        x, y = a.get(path), b.get(path)
        if path in a and path in b and x == y:
            unchanged += 1
            continue
        status = "added" if path not in a else "removed" if path not in b else "changed"
        if (path in a and x is None) or (path in b and y is None):
            files.append({"path": path, "status": "binary", "lines": []})
            continue
        lines = list(
            difflib.unified_diff(
                (x or "").splitlines(), (y or "").splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=2
            )
        )
        if len(lines) > budget:
            lines, truncated = lines[: max(0, budget)], True
        budget -= len(lines)
        files.append({"path": path, "status": status, "lines": lines})
    return {"files": files, "unchanged": unchanged, "truncated": truncated, "error": None}


def _redacted_files(files: dict[str, Optional[str]], secrets: frozenset[str] | set[str]) -> dict[str, Optional[str]]:
    """An archive's files with their paths and texts redacted, each text whole (a key block across
    its lines is one match)."""
    return {redact_text(p, secrets) or p: (redact_text(t, secrets) if t else t) for p, t in files.items()}


def why_of(
    conn: Any, run_key: str, round: str, *, limits: Limits = DEFAULT_LIMITS, with_diff: bool = True
) -> dict[str, Any]:
    """Why ``round`` became the best: a dict with

    * ``round``, ``prev_round`` (the best when this round's result came, as the replay's
      milestones step: SForge's selection over the rounds known then; ``None`` for the first), ``t_from`` / ``t_to`` (epoch UTC: the previous best's submission, this one's),
      ``before`` / ``after`` (the best's plotted values);
    * ``actions``: kind (:data:`ACTION_KINDS`) → ``{"n", "examples": [summaries, last 5]}`` for
      the agent's events in (``t_from``, ``t_to``];
    * ``notes``: ``messages`` and ``thinking`` (the last 3 texts each, cut to 4,000 characters),
      ``files`` (note-like files written: path and text), ``analysis`` (the round folder's
      ``analysis.md`` when someone added one, else ``None``);
    * ``diff``: :func:`diff_archives` of the two rounds' ``submission.tar.gz``, or ``None`` when
      this round has no archive (or ``with_diff`` is false).

    Raises ``KeyError`` when the run or the round is not recorded.
    """
    series, _ = load_series(conn, run_key)
    pos = next((i for i, g in enumerate(series) if g.round == round), None)
    if pos is None:
        raise KeyError(f"{run_key}: no graded round {round!r}")
    g = series[pos]
    prev = _previous_best(conn, run_key, series, pos)
    t_from = prev.t_submit if prev is not None and prev.t_submit is not None else float("-inf")
    t_to = g.t_submit if g.t_submit is not None else float("inf")
    rows = conn.execute(
        """SELECT event_id, kind, t, tool_name, summary,
                  CASE WHEN kind IN ('thinking', 'agent_message') THEN json_extract_string(data, '$.text') END,
                  json_extract_string(data, '$.input.command'),
                  coalesce(json_extract_string(data, '$.input.file_path'), json_extract_string(data, '$.input.path')),
                  CASE WHEN tool_name = 'Write' THEN json_extract_string(data, '$.input.content') END
           FROM events WHERE run_key = ? AND kind IN ('thinking', 'agent_message', 'tool_call')
             AND t > ? AND t <= ? AND parent_tool_use_id IS NULL
           ORDER BY t, "offset", sub""",
        [run_key, t_from, t_to],
    ).fetchall()
    actions: dict[str, dict[str, Any]] = {k: {"n": 0, "examples": []} for k in ACTION_KINDS}
    msgs, thinks, files = [], [], {}
    for eid, kind, t, tool, summary, text, command, path, content in rows:
        k = _kind(kind, tool, command)
        a = actions[k]
        a["n"] += 1
        a["examples"] = (a["examples"] + [summary or ""])[-5:]
        if kind == "agent_message" and text:
            msgs.append({"event_id": eid, "t": t, "text": text[:MAX_NOTE_CHARS]})
        elif kind == "thinking" and text:
            thinks.append({"event_id": eid, "t": t, "text": text[:MAX_NOTE_CHARS]})
        if tool == "Write" and path and content is not None and _NOTE_RE.search(Path(path).name):
            files[path] = {"event_id": eid, "path": path, "text": content[:MAX_NOTE_CHARS]}
    sub_dir = _submissions_dir(conn, run_key)
    secrets = recorded_run_secrets(conn, run_key)
    analysis = None
    if sub_dir is not None:
        analysis = read_analysis(sub_dir / round / "analysis.md", sub_dir.parent.parent)
    analysis = redact_text(analysis, secrets)  # (whole: a key block across its lines is one match)
    diff = _diff(sub_dir, round, prev.round if prev is not None else None, limits, secrets) if with_diff else None
    why = {
        "run_key": run_key,
        "round": round,
        "prev_round": prev.round if prev else None,
        "t_from": None if prev is None else t_from,
        "t_to": g.t_submit,
        "before": g.best_before,
        "after": g.best,
        "actions": {k: v for k, v in actions.items() if v["n"]},
        "notes": {"messages": msgs[-3:], "thinking": thinks[-3:], "files": list(files.values()), "analysis": analysis},
        "diff": diff,
    }
    return redact_obj(why, secrets)


def read_analysis(path: Path, run_folder: Path) -> Optional[str]:
    """``analysis.md`` as shown (its first ``MAX_NOTE_CHARS * 4`` characters; a longer file says it
    was cut), a one-line note when it is not read (a link out of ``run_folder``, a FIFO…),
    None when there is none. At most ``MAX_NOTE_CHARS * 16`` bytes are read."""
    limit = MAX_NOTE_CHARS * 16
    try:
        raw, size = read_run_file_head(path, limit, folder=run_folder)
    except SkippedRunFile as e:
        return f"[analysis.md skipped: {e.reason}]"
    except OSError:  # no analysis.md (or gone since the listing): no note
        return None
    text = raw.decode("utf-8", errors="replace")
    if size > len(raw) or len(text) > MAX_NOTE_CHARS * 4:
        text = (
            text[: MAX_NOTE_CHARS * 4]
            + f"\n[analysis.md cut: its first {min(len(text), MAX_NOTE_CHARS * 4):,} characters of {size:,} bytes shown]"
        )
    return text


def _previous_best(conn: Any, run_key: str, series: list, pos: int) -> Any:
    """The best when ``series[pos]``'s result came: the ``best_round`` the submissions table gives
    the round known just before it (SForge's selection over what was known then, the replay's
    milestones; on a tie the earlier submitted round is the best, so it can differ from the
    series' own running best), else the series' last new best before it."""
    best_of = dict(conn.execute("SELECT round, best_round FROM submissions WHERE run_key = ?", [run_key]).fetchall())
    name = next((best_of[s.round] for s in reversed(series[:pos]) if best_of.get(s.round)), None)
    if name is not None:
        hit = next((s for s in series[:pos] if s.round == name), None)
        if hit is not None:
            return hit
    return next((s for s in reversed(series[:pos]) if s.is_new_best), None)


def _submissions_dir(conn: Any, run_key: str) -> Optional[Path]:
    run_dir = conn.execute("SELECT run_dir FROM runs WHERE run_key = ?", [run_key]).fetchone()
    return Path(run_dir[0]) / "submissions" if run_dir and run_dir[0] else None


def _diff(
    sub_dir: Optional[Path],
    round: str,
    prev_round: Optional[str],
    limits: Limits,
    secrets: frozenset[str] | set[str] = frozenset(),
) -> Optional[dict[str, Any]]:
    if sub_dir is None:
        return None
    new = sub_dir / round / "submission.tar.gz"
    if not _archive_to_read(new, sub_dir.parent.parent):
        return None
    old = sub_dir / prev_round / "submission.tar.gz" if prev_round is not None else None
    has_old = old is not None and _archive_to_read(old, sub_dir.parent.parent)
    diff = diff_archives(old if has_old else None, new, limits, secrets=secrets)
    diff["against"] = prev_round if has_old else None
    return diff


def _archive_to_read(path: Path, run_folder: Path) -> bool:
    """A regular file inside the run folder (:func:`edgetui.parsers.run_folder_files.check_run_file`)."""
    try:
        return check_run_file(path, folder=run_folder) is None
    except OSError:  # gone or unreadable: not an archive to read
        return False


def why_diff(conn: Any, why: dict[str, Any], *, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """``why`` (from :func:`why_of` with ``with_diff=False``) with its ``diff`` filled in: the
    same value ``why_of`` gives with the diff, read in a second step so that a view can show the
    actions and notes first (the archives are the slow part: extracted and diffed)."""
    secrets = recorded_run_secrets(conn, why["run_key"])
    diff = _diff(_submissions_dir(conn, why["run_key"]), why["round"], why["prev_round"], limits, secrets)
    return dict(why, diff=redact_obj(diff, secrets))


def why_json(why: dict[str, Any]) -> str:
    return json.dumps(why, indent=1, default=str)
