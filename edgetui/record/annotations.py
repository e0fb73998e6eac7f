"""Annotations: a label and a note on any event or moment of a run, stored in DuckDB.

Rows live in the ``annotations`` table (schema 6 adds ``label``, ``round``, ``updated_at``).
An annotation on a moment attaches to its round's ``judge_result`` event (``event_id``) and
keeps the ``round``; event ids are stable (run + source + offset), so re-ingesting the same
run gives the same ids and :func:`import_annotations` finds them again. Writes are typed
requests (:func:`edgetui.record.forget_and_tag.apply_request`), never SQL, so they work while the app holds
the database.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Iterable, Optional

from edgetui.replay.moments import DETECTOR_VERSION

__all__ = [
    "LABELS",
    "annotate",
    "add_annotation",
    "edit_annotation",
    "delete_annotation",
    "list_annotations",
    "moment_queue",
    "import_annotations",
]

#: suggested labels (any label of letters, digits, spaces and ``? - _ .`` up to 40 is accepted)
LABELS = ("reframe", "bug fix", "tuning", "reward hack?", "noise", "other")
_COLS = ("annotation_id", "run_key", "event_id", "round", "t", "label", "text", "tags", "created_at", "updated_at")


def _check_label(label: Optional[str]) -> Optional[str]:
    if label is None:
        return None
    label = label.strip()
    if not label or len(label) > 40 or not all(c.isalnum() or c in " ?-_." for c in label):
        raise ValueError(f"label {label!r}: letters, digits, spaces and ? - _ . (up to 40), e.g. " + ", ".join(LABELS))
    return label


def _event_of(conn: Any, run_key: str, event_id: Optional[str], round: Optional[str]) -> tuple[str, Optional[str], Any]:
    if not conn.execute("SELECT 1 FROM runs WHERE run_key = ?", [run_key]).fetchall():
        raise LookupError(f"no recorded run {run_key!r}")
    if event_id is None:
        if round is None:
            raise ValueError("an annotation needs an event or a round")
        row = conn.execute(
            """SELECT event_id, t FROM events WHERE run_key = ? AND round = ?
               AND kind IN ('judge_result', 'game_result') ORDER BY t NULLS LAST, event_id LIMIT 1""",
            [run_key, round],
        ).fetchall()
        if not row:
            raise LookupError(f"{run_key}: no graded round {round!r} recorded")
        return row[0][0], round, row[0][1]
    row = conn.execute(
        "SELECT round, t, kind FROM events WHERE run_key = ? AND event_id = ?", [run_key, event_id]
    ).fetchall()
    if not row:
        raise LookupError(f"{run_key}: no event {event_id!r} recorded")
    rnd = row[0][0] if row[0][2] in ("judge_result", "game_result") else round
    return event_id, rnd, row[0][1]


def annotate(
    conn: Any,
    run_key: str,
    *,
    event_id: Optional[str] = None,
    round: Optional[str] = None,
    label: Optional[str] = None,
    text: str = "",
    now: Optional[float] = None,
    annotation_id: Optional[str] = None,
) -> str:
    """Add an annotation to an event (``event_id``) or to a moment / graded round (``round``: its
    judge result). Returns its id (16 hex, from run, event, label, text and time: a given
    annotation keeps its id through export and import), or the id of the same annotation (label
    and text) already on that event: the same note twice is stored once (:func:`add_annotation`
    says which). Raises ``LookupError`` for an unknown run, event or round, ``ValueError`` for a
    bad label or neither label nor text."""
    return add_annotation(
        conn,
        run_key,
        event_id=event_id,
        round=round,
        label=label,
        text=text,
        now=now,
        annotation_id=annotation_id,
    )[0]


def add_annotation(
    conn: Any,
    run_key: str,
    *,
    event_id: Optional[str] = None,
    round: Optional[str] = None,
    label: Optional[str] = None,
    text: str = "",
    now: Optional[float] = None,
    annotation_id: Optional[str] = None,
) -> tuple[str, bool]:
    """:func:`annotate`, and whether the annotation was already there: an annotation with the same
    label and text (spaces at the ends aside) on the same event is not stored again; its id is
    returned with ``True``. (An import gives ``annotation_id``: its own id decides, as before.)"""
    label = _check_label(label)
    if not label and not (text or "").strip():
        raise ValueError("an annotation needs a label or a text")
    eid, rnd, t = _event_of(conn, run_key, event_id, round)
    if annotation_id is None:
        same = conn.execute(
            """SELECT annotation_id FROM annotations WHERE run_key = ? AND event_id = ?
               AND coalesce(label, '') = ? AND trim(coalesce(text, '')) = ? ORDER BY created_at LIMIT 1""",
            [run_key, eid, label or "", (text or "").strip()],
        ).fetchall()
        if same:
            return same[0][0], True
    created = time.time() if now is None else now
    aid = (
        annotation_id
        or hashlib.sha256("\x1f".join([run_key, eid, label or "", text or "", repr(created)]).encode()).hexdigest()[:16]
    )
    conn.execute(
        f"INSERT OR IGNORE INTO annotations ({', '.join(_COLS)}) VALUES ({', '.join('?' * len(_COLS))})",
        [aid, run_key, eid, rnd, t, label, text or "", None, created, created],
    )
    return aid, False


def edit_annotation(
    conn: Any,
    annotation_id: str,
    *,
    label: Optional[str] = None,
    text: Optional[str] = None,
    now: Optional[float] = None,
) -> bool:
    """Change an annotation's label and / or text; returns False when there is no such one."""
    if not conn.execute("SELECT 1 FROM annotations WHERE annotation_id = ?", [annotation_id]).fetchall():
        return False
    if label is not None:
        conn.execute("UPDATE annotations SET label = ? WHERE annotation_id = ?", [_check_label(label), annotation_id])
    if text is not None:
        conn.execute("UPDATE annotations SET text = ? WHERE annotation_id = ?", [text, annotation_id])
    conn.execute(
        "UPDATE annotations SET updated_at = ? WHERE annotation_id = ?",
        [time.time() if now is None else now, annotation_id],
    )
    return True


def delete_annotation(conn: Any, annotation_id: str) -> bool:
    """Remove an annotation; returns whether there was one."""
    n = conn.execute("SELECT count(*) FROM annotations WHERE annotation_id = ?", [annotation_id]).fetchone()[0]
    conn.execute("DELETE FROM annotations WHERE annotation_id = ?", [annotation_id])
    return bool(n)


def list_annotations(conn: Any, run_key: Optional[str] = None) -> list[dict[str, Any]]:
    """Annotations (of one run, or all), by run and time."""
    sql = (
        f"SELECT {', '.join(_COLS)} FROM annotations"
        + (" WHERE run_key = ?" if run_key else "")
        + " ORDER BY run_key, t NULLS LAST, created_at"
    )
    rows = conn.execute(sql, [run_key] if run_key else []).fetchall()
    return [dict(zip(_COLS, r)) for r in rows]


def moment_queue(conn: Any, detector: str = "reframe") -> list[dict[str, Any]]:
    """Unlabelled moments across runs: one entry per (run, moment round) of the stored moments of
    ``detector`` whose round's judge result carries no labelled annotation, by run and round order."""

    rows = conn.execute(
        """SELECT m.run_key, m.round, m.elapsed_s, m.score_before, m.score_after, m.confidence
           FROM moments m WHERE m.detector = ? AND m.version = ?
             AND NOT EXISTS (SELECT 1 FROM annotations a WHERE a.run_key = m.run_key AND a.round = m.round
                             AND a.label IS NOT NULL)
           ORDER BY m.run_key, m.idx""",
        [detector, DETECTOR_VERSION],
    ).fetchall()
    return [dict(zip(("run_key", "round", "elapsed_s", "score_before", "score_after", "confidence"), r)) for r in rows]


def import_annotations(conn: Any, annotations: Iterable[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Restore annotations (e.g. a JSON report's ``annotations``): each whose run and event are
    recorded is added under its own id unless it is there already (idempotent). Returns
    (added, the ones that could not be matched, each with a ``reason``)."""
    added, unmatched = 0, []
    for a in annotations:
        try:
            aid = a.get("annotation_id")
            if aid and conn.execute("SELECT 1 FROM annotations WHERE annotation_id = ?", [aid]).fetchall():
                continue
            annotate(
                conn,
                a["run_key"],
                event_id=a.get("event_id"),
                round=None if a.get("event_id") else a.get("round"),
                label=a.get("label"),
                text=a.get("text") or "",
                now=a.get("created_at"),
                annotation_id=aid,
            )
            added += 1
        except (LookupError, ValueError, KeyError, TypeError) as e:
            unmatched.append(
                {
                    **{k: a.get(k) for k in ("annotation_id", "run_key", "event_id", "round", "label")},
                    "reason": str(e).strip("'\""),
                }
            )
    return added, unmatched
