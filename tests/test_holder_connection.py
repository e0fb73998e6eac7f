"""Reading through the holder (edgetui/store/holder_connection.py), as a browser tab of
``edgetui serve`` does: the read side gives the same values as on the file, with DuckDB's own
types; a write other than a typed request is refused; a typed request is carried out by the holder.

Real things: the bundled samples in a real DuckDB file, held by a real holder socket
(:func:`edgetui.record.forget_and_tag.holder_server`) in this process; the reader talks to it over
the Unix socket as another process would.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from conftest import copy_samples_db
from edgetui.record.forget_and_tag import holder_server
from edgetui.store import queries
from edgetui.store.database import open_db
from edgetui.store.holder_connection import HolderConnection
from edgetui.store.sql_results import export_bytes
from edgetui.store.timeline_pages import first_page, load_index


@pytest.fixture
def held(samples_template, tmp_path):
    db = copy_samples_db(samples_template, tmp_path / "served.duckdb")
    conn = open_db(db)
    server = holder_server(conn, db)
    reader = HolderConnection(db)
    try:
        yield db, conn, reader
    finally:
        reader.close()
        server.close()
        conn.close()


def _gw_key(conn) -> str:
    return conn.execute("SELECT run_key FROM runs WHERE run_id LIKE 'opus48-edge%'").fetchone()[0]


def test_the_read_side_reads_the_same_through_the_holder(held):
    _, conn, reader = held
    key = _gw_key(conn)
    assert queries.list_runs(reader) == queries.list_runs(conn)
    assert queries.run_header(reader, key) == queries.run_header(conn, key)
    assert queries.submissions(reader, key) == queries.submissions(conn, key)
    assert queries.new_best_rounds(reader, key) == queries.new_best_rounds(conn, key)
    assert queries.search_events(reader, key, "reframe") == queries.search_events(conn, key, "reframe")
    direct, through = first_page(conn, key), first_page(reader, key)
    assert through == direct and len(direct.event_id) > 0
    a, b = load_index(reader, key), load_index(conn, key)  # (fetchnumpy, named parameters)
    assert a.n == b.n > 0 and a.n_timed == b.n_timed and a.t_array.tobytes() == b.t_array.tobytes()


def test_values_keep_duckdb_types_through_the_holder(held):
    _, conn, reader = held
    sql = (
        "SELECT 1.5::DECIMAL(4,2) AS d, TIMESTAMP '2026-03-12 00:59:15' AS ts, [1, 2] AS l, "
        "{'a': 1, 'b': 'x'} AS s, '\\x00\\xff'::BLOB AS b, NULL::INTEGER AS n, 'nan'::DOUBLE AS f, $k AS k"
    )
    row = reader.execute(sql, {"k": "key"}).fetchone()
    same = conn.execute(sql, {"k": "key"}).fetchone()
    assert row[:6] + row[7:] == same[:6] + same[7:] and [type(v) for v in row] == [type(v) for v in same]
    assert isinstance(row[0], Decimal) and isinstance(row[1], dt.datetime)
    assert row[2:6] == ([1, 2], {"a": 1, "b": "x"}, b"\x00\xff", None) and row[6] != row[6]
    cur = reader.cursor()
    cur.execute("SELECT run_key FROM runs ORDER BY run_key")
    assert [d[0] for d in cur.description] == ["run_key"]
    first = cur.fetchone()
    cur.execute("SELECT count(*) FROM runs")  # a new statement on a half-read cursor, as DuckDB allows
    assert cur.fetchone()[0] == len(conn.execute("SELECT run_key FROM runs").fetchall()) and first is not None
    rel = reader.sql("SELECT run_key FROM runs WHERE run_key = $rk", params={"rk": first[0]})
    assert rel.fetchall() == [first]


def test_writes_are_refused_and_typed_requests_are_carried_out_by_the_holder(held):
    _, conn, reader = held
    key = _gw_key(conn)
    with pytest.raises(RuntimeError):
        reader.execute("DELETE FROM runs")
    with pytest.raises(RuntimeError):
        reader.execute("COPY runs TO '/tmp/x.csv'")
    assert conn.execute("SELECT count(*) FROM runs WHERE run_key = ?", [key]).fetchone()[0] == 1
    reply = reader.request({"op": "annotate", "run_key": key, "round": "agent-1", "label": "reframe", "text": "t"})
    assert "ok" in reply, reply
    assert conn.execute("SELECT count(*) FROM annotations WHERE label = 'reframe'").fetchone()[0] == 1
    assert "error" in reader.request({"op": "no-such-op", "run_key": key})


def test_the_sql_screens_export_of_a_tab_is_bytes_for_the_browser(held):
    _, conn, reader = held
    n, data = export_bytes(reader, "SELECT run_key, best_score FROM runs ORDER BY run_key", "/etc/cron.d/x.csv", "csv")
    keys = [r[0] for r in conn.execute("SELECT run_key FROM runs ORDER BY run_key").fetchall()]
    assert n == len(keys) > 0
    lines = data.decode().splitlines()
    assert lines[0].replace('"', "") == "run_key,best_score" and len(lines) == n + 1
    assert keys[0] in lines[1]
    with pytest.raises(ValueError):  # the read-only rule, as for every export
        export_bytes(reader, "SELECT * FROM read_text('/etc/passwd')", "x.csv", "csv")


def test_a_full_holder_queue_is_waited_out_not_shown_as_an_error(samples_template, tmp_path, monkeypatch):
    """Tabs and commands reading at once can fill the holder's queue: a tab's read asks again."""
    import threading

    from edgetui.store import holder_socket

    monkeypatch.setattr(holder_socket, "MAX_QUEUED", 1)  # (read when the holder starts)
    db = copy_samples_db(samples_template, tmp_path / "busy.duckdb")
    conn = open_db(db)
    server = holder_server(conn, db)
    readers = [HolderConnection(db) for _ in range(8)]
    results: list = []
    try:
        sql = "SELECT count(*) FROM range(20000000) t(i) WHERE i % 7 = 3"

        def read(r: HolderConnection) -> None:
            try:
                results.append(r.execute(sql).fetchone()[0])
            except RuntimeError as e:
                results.append(str(e))

        threads = [threading.Thread(target=read, args=(r,)) for r in readers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert results == [2857143] * 8
    finally:
        for r in readers:
            r.close()
        server.close()
        conn.close()
