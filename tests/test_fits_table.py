"""The fits table (schema version 8): `edgetui fit --store` keeps method, version, unrounded
parameters, status and flags in a real DuckDB file; a file of version 5 gains the table on open."""

from __future__ import annotations

import json

import duckdb

from conftest import SHARED_DATA, need_shared_data

from edgetui.cli.main import main


def test_stored_fits_are_the_printed_ones_unrounded(tmp_path, capsys):
    p = need_shared_data(SHARED_DATA / "edgebench_leaderboard.csv")
    db = tmp_path / "f.duckdb"
    assert main(["--db", str(db), "fit", "--csv", str(p), "--format", "json", "--bootstrap", "50", "--store"]) == 0
    recs = json.loads(capsys.readouterr().out)
    assert main(["--db", str(db), "fit", "--csv", str(p), "--format", "json", "--bootstrap", "50", "--store"]) == 0
    capsys.readouterr()
    conn = duckdb.connect(str(db), read_only=True)
    try:
        rows = conn.execute(
            "SELECT grouping, model, form, method, version, params, smax, status, flags, findings "
            "FROM fits ORDER BY model"
        ).fetchall()
    finally:
        conn.close()
    assert len(rows) == 10  # the second --store replaced the first, one row per curve
    by = {(json.loads(g)["suite"], m): r for g, m, *r in rows}
    for rec in recs:
        form, method, version, params, smax, status, flags, findings = by[(rec["suite"], rec["model"])]
        assert form == "log_sigmoid" and method == rec["method"] and version == rec["version"] == 1
        assert json.loads(params) == rec["fit"]["raw"] and smax == rec["fit"]["raw"]["Smax"]  # unrounded
        assert status == rec["fit"]["status"] and flags.split() == rec["fit"]["flags"]
        assert findings == (not rec["fit"]["flags"])


def test_version_5_file_gains_the_fits_table(tmp_path):
    from edgetui.store.database import open_db
    from edgetui.store.schema import MIGRATIONS, SCHEMA_VERSION

    db = tmp_path / "old.duckdb"
    conn = duckdb.connect(str(db))
    for v in range(1, 6):
        for stmt in MIGRATIONS.get(v, []):
            conn.execute(stmt)
    conn.execute("INSERT INTO meta VALUES ('schema_version', '5')")
    conn.close()
    conn = open_db(db)
    try:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert conn.execute("SELECT count(*) FROM fits").fetchone()[0] == 0
    finally:
        conn.close()
