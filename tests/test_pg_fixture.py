"""The test PostgreSQL itself (tests/pg_fixture.py): started, one database per test, a crash survived."""

from __future__ import annotations

import pytest

import prereqs
from pg_fixture import PgServer

pytestmark = pytest.mark.postgres


def test_each_test_has_its_own_database(pg_server, team_db):
    other = pg_server.new_database()
    assert other != team_db
    pg_server.sql("CREATE TABLE t (x int)", team_db)
    pg_server.sql("INSERT INTO t VALUES (41)", team_db)
    assert pg_server.sql("SELECT x FROM t", team_db) == [(41,)]
    # the other database has no such table
    assert pg_server.sql("SELECT count(*) FROM pg_tables WHERE tablename = 't'", other) == [(0,)]


def test_server_killed_and_started_again_keeps_committed_rows():
    server = PgServer(prereqs.need("postgres").parent)
    try:
        server.start()
        db = server.new_database()
        server.sql("CREATE TABLE t (x int)", db)
        server.sql("INSERT INTO t SELECT generate_series(1, 1000)", db)
        server.stop(kill=True)
        server.start()
        assert server.sql("SELECT count(*), sum(x) FROM t", db) == [(1000, 500500)]
    finally:
        server.close()
