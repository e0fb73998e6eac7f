"""Schema 1 -> 2: secrets out of databases written by earlier edgetui versions.

Earlier versions redacted only a few key shapes (``sk-…``), so their databases can
hold GitHub tokens, AWS keys, private key blocks… in event text, ``data`` and
``raw``. :func:`rescrub_database` runs every stored text through today's rules
(:mod:`edgetui.redact`), then :func:`rewrite_file` copies the database into a new
file (``COPY FROM DATABASE``) that replaces the old one, so the blocks that held
the old values are not part of the file any more.

Crash safety: the re-scrub and the schema version move in one transaction, with
``meta.rewrite_pending = '1'``; the rewrite clears the flag in the new file before
it replaces the old one, and :func:`edgetui.store.database.open_db` finishes a pending rewrite
on the next open.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb

from edgetui.store.one_row import one_row
import orjson
import pyarrow as pa

from edgetui.redact import has_keyword, redact_bytes, redact_obj, redact_text

_BATCH = 20_000


def scrub_json_text(s: Any) -> Any:
    if s is None or not isinstance(s, str) or not has_keyword(s.encode("utf-8", "surrogatepass")):
        return s
    try:
        obj = orjson.loads(s)
    except orjson.JSONDecodeError:
        return redact_text(s)
    clean = redact_obj(obj)
    return s if clean is obj else orjson.dumps(clean, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def rescrub_database(conn: duckdb.DuckDBPyConnection) -> int:
    """Re-redact every text column of every table (the caller holds a transaction);
    returns the number of rows changed."""
    changed = 0
    # events: summary / tool_name / model / round text, data JSON, raw bytes
    last = ""
    while True:
        rows = conn.execute(
            "SELECT event_id, summary, tool_name, model, round, CAST(data AS VARCHAR), raw FROM events "
            "WHERE event_id > ? ORDER BY event_id LIMIT ?",
            [last, _BATCH],
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        upd = []
        for eid, summ, tname, model, rnd, data, raw in rows:
            new = (
                redact_text(summ),
                redact_text(tname),
                redact_text(model),
                redact_text(rnd),
                scrub_json_text(data),
                redact_bytes(raw) if raw else raw,
            )
            if new != (summ, tname, model, rnd, data, raw):
                upd.append((eid, *new))
        if upd:
            cols = list(zip(*upd))
            tbl = pa.table(
                {
                    "event_id": cols[0],
                    "summary": cols[1],
                    "tool_name": cols[2],
                    "model": cols[3],
                    "round": cols[4],
                    "data": cols[5],
                    "raw": pa.array(cols[6], pa.binary()),
                }
            )
            conn.register("_rescrub", tbl)
            try:
                conn.execute(
                    "UPDATE events SET summary = r.summary, tool_name = r.tool_name, model = r.model, "
                    "round = r.round, data = r.data, raw = r.raw FROM _rescrub r WHERE events.event_id = r.event_id"
                )
            finally:
                conn.unregister("_rescrub")
            changed += len(upd)
    # the smaller tables, row by row
    for table, key, text_cols, json_cols in (
        ("runs", ["run_key"], [], ["config", "final"]),
        ("submissions", ["run_key", "round"], ["summary", "error"], ["metrics"]),
        ("test_results", ["run_key", "round", "idx"], ["name", "message"], []),
        ("annotations", ["annotation_id"], ["text"], []),
    ):
        row_cols: list[str] = text_cols + json_cols
        sel = ", ".join(key + [f"CAST({c} AS VARCHAR)" if c in json_cols else c for c in row_cols])
        for rec in conn.execute(f"SELECT {sel} FROM {table}").fetchall():
            rec_key, rec_vals = rec[: len(key)], rec[len(key) :]
            cleaned = [redact_text(v) if c in text_cols else scrub_json_text(v) for c, v in zip(row_cols, rec_vals)]
            if list(rec_vals) != cleaned:
                sets = ", ".join(f"{c} = ?" for c in row_cols)
                where = " AND ".join(f"{c} = ?" for c in key)
                conn.execute(f"UPDATE {table} SET {sets} WHERE {where}", [*cleaned, *rec_key])
                changed += 1
    return changed


def rewrite_file(path: Path) -> None:
    """Copy the (closed) database at ``path`` into a fresh file that replaces it, clearing
    ``meta.rewrite_pending``. Raises ``duckdb.Error`` / ``OSError``; the old file stays
    untouched until the new one is complete."""
    tmp = path.with_name(path.name + ".rewrite")
    for p in (tmp, Path(str(tmp) + ".wal")):
        if p.exists():
            p.unlink()
    conn = duckdb.connect(str(tmp))
    try:
        conn.execute("ATTACH ? AS edgetui_rescrub_src (READ_ONLY)", [str(path)])
        conn.execute("COPY FROM DATABASE edgetui_rescrub_src TO " + _db_name(conn))
        conn.execute("DETACH edgetui_rescrub_src")
        conn.execute("DELETE FROM meta WHERE key = 'rewrite_pending'")
        conn.execute("CHECKPOINT")
    finally:
        conn.close()
    os.replace(tmp, path)
    wal = Path(str(path) + ".wal")
    if wal.exists():  # the old file's log: its contents are in the copy
        wal.unlink()


def _db_name(conn: duckdb.DuckDBPyConnection) -> str:
    name = one_row(conn.execute("SELECT current_database()"))[0]
    return '"' + str(name).replace('"', '""') + '"'
