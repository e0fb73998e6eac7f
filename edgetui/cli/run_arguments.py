"""What several commands share: RUN resolved to a run key (on the file, or through the holder's
read-only SQL while another process holds it), a write carried out on the file or as a typed
request to its holder, and ``--at TIME``. Used by :mod:`edgetui.cli.main` and the command modules
beside it (no Textual)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from edgetui.replay.cursor import parse_elapsed
from edgetui.store.database import DatabaseBusy, busy_because, open_db
from edgetui.store.holder_socket import ask_holder, ask_holder_op


class RowsConn:
    """Enough of a DuckDB connection (``execute(...).fetchall()`` / ``.fetchone()``) over any
    ``fetch(sql, params) -> rows``: RUN resolved through the holder's read-only SQL, or through the
    analysis commands' own reader."""

    def __init__(self, fetch):
        self.fetch = fetch

    def execute(self, sql: str, params=None):
        rows = self.fetch(sql, params)

        class _R:
            def fetchall(self_inner):
                return rows

            def fetchone(self_inner):
                return rows[0] if rows else None

        return _R()


def holder_conn(db: Path) -> RowsConn:
    """RUN resolved through the holder's read-only SQL while it holds the file."""
    return RowsConn(lambda sql, params: ask_holder(db, sql, list(params or [])).rows)


def write_op(db: Path, spec: str, host: Optional[str], op, describe=None):
    """Resolve RUN and carry out ``op(conn, run_key)`` on the file, or as a typed request to the
    process holding it (``op.__name__`` names the request). Returns (run_key, result)."""
    try:
        conn = open_db(db)
    except DatabaseBusy as busy:
        hc = holder_conn(db)
        try:
            key = resolve_run(hc, spec, host)
        except ConnectionError as why:
            raise busy_because(busy, why) from None
        if describe is not None:
            describe(hc, key)
        return key, ask_holder_op(db, op(None, key))
    try:
        key = resolve_run(conn, spec, host)
        if describe is not None:
            describe(conn, key)
        from edgetui.record.forget_and_tag import apply_request

        reply = apply_request(conn, op(conn, key))
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return key, reply["ok"]
    finally:
        conn.close()


def resolve_run(conn, spec: str, host: Optional[str] = None) -> str:
    """Map RUN (task dir / run dir / transcript path, RUN_ID or RUN_ID/TASK_ID, optional host) to a run_key.

    Raises ``LookupError`` listing the candidates when ambiguous or unknown.
    """
    p = Path(spec)
    if p.exists():  # a task dir, a run dir (several tasks) or a transcript file
        rows = conn.execute("SELECT run_key FROM runs WHERE run_dir = ?", [str(p.resolve())]).fetchall()
        if not rows and p.is_dir():
            rows = conn.execute("SELECT run_key FROM runs WHERE run_dir LIKE ?", [str(p.resolve()) + "/%"]).fetchall()
    else:
        run_id, _, task_id = spec.partition("/")
        q = "SELECT run_key FROM runs WHERE run_id = ?"
        params = [run_id]
        if task_id:
            q += " AND task_id = ?"
            params.append(task_id)
        if host:
            q += " AND host = ?"
            params.append(host)
        rows = conn.execute(q + " ORDER BY run_key", params).fetchall()
    keys = [r[0] for r in rows]
    if not keys and not p.exists():  # a unique prefix of a run id, else of a task name
        run_id, _, task_id = spec.partition("/")
        for col, val in (("run_id", run_id if not task_id else None), ("task_id", spec)):
            if not val:
                continue
            q = f"SELECT run_key FROM runs WHERE starts_with({col}, ?)"
            params = [val]
            if host:
                q += " AND host = ?"
                params.append(host)
            keys = [r[0] for r in conn.execute(q + " ORDER BY run_key", params).fetchall()]
            if keys:
                break
        if task_id and not keys:
            keys = [
                r[0]
                for r in conn.execute(
                    "SELECT run_key FROM runs WHERE starts_with(run_id, ?) AND starts_with(task_id, ?) ORDER BY run_key",
                    [run_id, task_id],
                ).fetchall()
            ]
    if not keys:
        raise LookupError(f"no recorded run matches {spec!r}; see `edgetui runs`")
    if len(keys) > 1:
        raise LookupError(f"{spec!r} is ambiguous; candidates: " + ", ".join(keys))
    return keys[0]


def parse_at(text: Optional[str]) -> Optional[float]:
    """``--at TIME`` in seconds of elapsed time (None when not given); raises ``ValueError`` naming
    the accepted forms (:func:`edgetui.replay.cursor.parse_elapsed`)."""
    if text is None:
        return None
    try:
        return parse_elapsed(text)
    except ValueError:
        raise ValueError(f"--at {text!r}: not a time; e.g. 3h20m, 2:15 (h:mm), 95m or seconds") from None
