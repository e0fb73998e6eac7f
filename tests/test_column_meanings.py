"""Every column of every table and ready-made view has its meaning as DuckDB's own comment
(edgetui/store/column_meanings.py, schema version 13), and the SQL screen's schema shows it."""

from __future__ import annotations

from edgetui.store.column_meanings import BY_TABLE, SHARED
from edgetui.store.database import open_db
from edgetui.store.schema import SCHEMA_VERSION
from edgetui.store.sql_results import schema_entries

_COLUMNS = (
    "SELECT c.table_name, c.column_name, c.comment FROM duckdb_columns() c "
    "WHERE c.database_name = current_database() AND c.schema_name = 'main' ORDER BY 1, 2"
)


def test_no_column_of_a_new_database_lacks_a_meaning(tmp_path):
    conn = open_db(tmp_path / "new.duckdb")
    try:
        cols = conn.execute(_COLUMNS).fetchall()
        tables = {t for t, _, _ in cols}
        views = {v for (v,) in conn.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()}
        assert {"runs", "events", "submissions", "fits", "moments"} <= tables and "best_so_far" in views
        assert views <= tables  # (the views' columns are among them)
        missing = [f"{t}.{c}" for t, c, comment in cols if not (comment or "").strip()]
        assert missing == []
        # a name's shared meaning is not used where the table says otherwise
        comments = {(t, c): comment for t, c, comment in cols}
        assert comments[("runs", "agent")] == BY_TABLE[("runs", "agent")]
        assert comments[("submissions", "run_key")] == SHARED["run_key"]
    finally:
        conn.close()


def test_a_version_12_file_gets_the_meanings_on_open(tmp_path):
    db = tmp_path / "v12.duckdb"
    conn = open_db(db)
    for t, c, _ in conn.execute(_COLUMNS).fetchall():  # as a version 12 file had them: most columns bare
        conn.execute(f'COMMENT ON COLUMN "{t}"."{c}" IS NULL')
    conn.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")
    assert conn.execute("SELECT count(*) FROM duckdb_columns() WHERE comment IS NOT NULL").fetchone()[0] == 0
    conn.close()
    conn = open_db(db)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        missing = [f"{t}.{c}" for t, c, comment in conn.execute(_COLUMNS).fetchall() if not comment]
        assert missing == []
    finally:
        conn.close()


def test_the_schema_tree_reads_every_meaning(tmp_path):
    conn = open_db(tmp_path / "s.duckdb")
    try:
        entries = schema_entries(conn)
    finally:
        conn.close()
    assert entries and all(e["meaning"] for e in entries)
    bare = [f"{e['name']}.{c}" for e in entries for c, _, meaning in e["columns"] if not meaning]
    assert bare == []
    runs = next(e for e in entries if e["name"] == "runs")
    assert ("agent", "VARCHAR", BY_TABLE[("runs", "agent")]) in runs["columns"]
