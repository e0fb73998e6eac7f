"""Forgetting and tagging runs: the writes a user asks for by name, never as SQL.

* :func:`forget_run` removes everything recorded of a run (events, submissions, test
  results, cursors, annotations, tags, its row) and leaves a **tombstone**: the raw files
  are never touched (the runs that shared records with it count them again: :mod:`edgetui.store.repeated_records`),
  and neither an ingest of a root that holds the run nor a scan of a
  watched root brings it back, until ``edgetui ingest --unforget PATH`` (:func:`unforget_run`).
* :func:`tag_run` / :func:`untag_run` give runs names (``run_tags``), shown by ``edgetui runs``
  and matched by its ``--tag`` filter.
* ``{"op": "moments", "run_key": …}`` rebuilds a run's moments (:mod:`edgetui.record.moments_table`) and
  replies with its rows of the ``moments`` table.
* ``annotate`` (``run_key``, ``event_id`` or ``round``, ``label``, ``text``), ``annotation_edit`` /
  ``annotation_delete`` (``annotation_id``) and ``annotations_import`` (``annotations``: a JSON
  report's list) write annotations (:mod:`edgetui.record.annotations`); ``annotate`` replies
  ``{"annotation_id": …, "already": bool}`` (the same annotation already on the event: not stored again).

While another process holds the database, these travel over the holder socket as typed
requests (``{"op": "forget", "run_key": …}``; :func:`apply_request`) that the holder carries
out itself (:mod:`edgetui.store.holder_socket`).
"""

from __future__ import annotations

import re
import time
from typing import Any, Optional, cast

import duckdb

from edgetui.store import repeated_records as repeats
from edgetui.store.arrow_wire import encode_rows
from edgetui.store.holder_socket import HolderServer

from edgetui.record import annotations as an

from edgetui.record.moments_table import list_moments, rebuild_moments

#: tables whose rows belong to one run (``run_key``), emptied by forget
RUN_TABLES = (
    "events",
    "submissions",
    "test_results",
    "source_cursors",
    "annotations",
    "run_tags",
    "record_keys",
    "moments",
)
_TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}$")


def _tx(conn: duckdb.DuckDBPyConnection, fn) -> Any:
    cur = conn.cursor()
    try:
        cur.execute("BEGIN TRANSACTION")
        try:
            out = fn(cur)
            cur.execute("COMMIT")
            return out
        except BaseException:
            cur.execute("ROLLBACK")
            raise
    finally:
        cur.close()


def forget_run(conn: duckdb.DuckDBPyConnection, run_key: str, now: Optional[float] = None) -> int:
    """Forget ``run_key``: its records go, a tombstone stays (epoch UTC ``now``). Returns the
    number of events removed. Raises ``LookupError`` when no such run is recorded."""

    def go(cur) -> int:
        row = cur.execute("SELECT run_dir FROM runs WHERE run_key = ?", [run_key]).fetchall()
        if not row:
            raise LookupError(f"no recorded run {run_key!r}")
        n = cur.execute("SELECT count(*) FROM events WHERE run_key = ?", [run_key]).fetchone()[0]
        sharing = repeats.sharing_runs(cur, run_key)
        for t in RUN_TABLES:
            cur.execute(f"DELETE FROM {t} WHERE run_key = ?", [run_key])
        cur.execute("DELETE FROM runs WHERE run_key = ?", [run_key])
        for other in sharing:  # records it counted for them are now counted by the next owner
            repeats.recount(cur, other)
        cur.execute("INSERT OR REPLACE INTO tombstones VALUES (?, ?, ?)", [run_key, row[0][0], now or time.time()])
        return int(n)

    return _tx(conn, go)


def unforget_run(conn: duckdb.DuckDBPyConnection, run_key: str) -> bool:
    """Remove ``run_key``'s tombstone (the next ingest or scan records it again). Returns whether
    there was one."""

    def go(cur) -> bool:
        n = cur.execute("SELECT count(*) FROM tombstones WHERE run_key = ?", [run_key]).fetchone()[0]
        cur.execute("DELETE FROM tombstones WHERE run_key = ?", [run_key])
        return bool(n)

    return _tx(conn, go)


def forgotten(conn: duckdb.DuckDBPyConnection) -> set[str]:
    """Run keys with a tombstone."""
    return {r[0] for r in conn.execute("SELECT run_key FROM tombstones").fetchall()}


def check_tag(tag: str) -> str:
    """``tag`` if it is a valid name (letters, digits, ``_ . : + -``, up to 64), else ``ValueError``."""
    if not _TAG_RE.match(tag or ""):
        raise ValueError(f"tag {tag!r}: use letters, digits and _ . : + - (up to 64, starting with a letter or digit)")
    return tag


def tag_run(conn: duckdb.DuckDBPyConnection, run_key: str, tag: str, now: Optional[float] = None) -> bool:
    """Give ``run_key`` the name ``tag``; returns False when it had it already. Raises
    ``LookupError`` for an unknown run, ``ValueError`` for a bad name."""
    check_tag(tag)

    def go(cur) -> bool:
        if not cur.execute("SELECT 1 FROM runs WHERE run_key = ?", [run_key]).fetchall():
            raise LookupError(f"no recorded run {run_key!r}")
        if cur.execute("SELECT 1 FROM run_tags WHERE run_key = ? AND tag = ?", [run_key, tag]).fetchall():
            return False
        cur.execute("INSERT INTO run_tags VALUES (?, ?, ?)", [run_key, tag, now or time.time()])
        cur.execute("DELETE FROM meta WHERE key = ?", [untag_key(run_key, tag)])  # (a later tagging wins)
        return True

    return _tx(conn, go)


#: ``meta`` keys of tags removed here and not yet pushed to a team record: prefix, run key, tag
UNTAG_PREFIX = "team_untag\t"


def untag_key(run_key: str, tag: str) -> str:
    return f"{UNTAG_PREFIX}{run_key}\t{tag}"


def untag_run(conn: duckdb.DuckDBPyConnection, run_key: str, tag: str) -> bool:
    """Take the name ``tag`` from ``run_key``; returns whether it had it."""

    def go(cur) -> bool:
        n = cur.execute("SELECT count(*) FROM run_tags WHERE run_key = ? AND tag = ?", [run_key, tag]).fetchone()[0]
        cur.execute("DELETE FROM run_tags WHERE run_key = ? AND tag = ?", [run_key, tag])
        if n:  # the removal, for the team record's next push (edgetui/record/team_record.py)
            cur.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [untag_key(run_key, tag), repr(time.time())])
        return bool(n)

    return _tx(conn, go)


#: the typed requests the holder carries out for other processes
OPS = (
    "forget",
    "unforget",
    "tag",
    "untag",
    "moments",
    "annotate",
    "annotation_edit",
    "annotation_delete",
    "annotations_import",
)
#: requests about an annotation (by ``annotation_id``) or a batch: no ``run_key``
_NO_RUN_OPS = ("annotation_edit", "annotation_delete", "annotations_import")


def _plain_moment(row: dict) -> dict:
    """A ``moments`` row as JSON values (NaN / inf as ``None``)."""
    out = {}
    for k, v in row.items():
        if isinstance(v, float) and not (v == v and abs(v) != float("inf")):
            v = None
        out[k] = v
    return out


def _annotation_op(conn: duckdb.DuckDBPyConnection, op: str, req: dict) -> Any:

    def opt(name: str) -> Optional[str]:
        v = req.get(name)
        if v is not None and not isinstance(v, str):
            raise ValueError(f"{name} must be text")
        return v

    if op == "annotate":  # the id, and whether the same annotation was already on the event
        aid, already = an.add_annotation(
            conn,
            req["run_key"],
            event_id=opt("event_id"),
            round=opt("round"),
            label=opt("label"),
            text=opt("text") or "",
        )
        return {"annotation_id": aid, "already": already}
    if op == "annotation_edit":
        return an.edit_annotation(conn, str(req.get("annotation_id")), label=opt("label"), text=opt("text"))
    if op == "annotation_delete":
        return an.delete_annotation(conn, str(req.get("annotation_id")))
    items = req.get("annotations")
    if not isinstance(items, list) or not all(isinstance(a, dict) for a in items):
        raise ValueError("annotations_import needs a list of annotations")
    added, unmatched = an.import_annotations(conn, items)
    return {"added": added, "unmatched": unmatched}


def apply_request(conn: duckdb.DuckDBPyConnection, req: dict) -> dict:
    """Carry out one typed request (``{"op": …, "run_key": …, "tag": …}``); the reply is
    ``{"ok": value}`` or ``{"error": one line}``. Never raises."""
    op = req.get("op")
    key = req.get("run_key")
    try:
        if op not in OPS or (op not in _NO_RUN_OPS and not isinstance(key, str)):
            raise ValueError(f"unknown request {op!r}")
        if op in ("annotate", "annotation_edit", "annotation_delete", "annotations_import"):
            return {"ok": _annotation_op(conn, op, req)}
        key = cast(str, key)  # (the other ops need a run key: checked above)
        if op == "forget":
            return {"ok": forget_run(conn, key)}
        if op == "unforget":
            return {"ok": unforget_run(conn, key)}
        if op == "moments":  # rebuild the run's moments, reply with them (the moments table's rows)
            if not conn.execute("SELECT 1 FROM runs WHERE run_key = ?", [key]).fetchall():
                raise LookupError(f"no recorded run {key!r}")
            rebuild_moments(conn, key)
            return {"ok": [_plain_moment(r) for r in list_moments(conn, key)]}
        tag = req.get("tag")
        if not isinstance(tag, str):
            raise ValueError("a tag request needs a tag")
        return {"ok": tag_run(conn, key, tag) if op == "tag" else untag_run(conn, key, tag)}
    except (LookupError, ValueError) as e:
        return {"error": str(e).strip("'\"")}
    except duckdb.Error as e:
        return {"error": " ".join(str(e).split())}


def holder_server(conn: duckdb.DuckDBPyConnection, db_path) -> HolderServer:
    """The holder socket of a process holding ``db_path`` through ``conn``, carrying out the typed
    requests of other edgetui processes on ``conn`` (:func:`apply_request`)."""
    return HolderServer(conn, db_path, on_request=lambda req: apply_request(conn, req), encode_arrow=encode_rows)
