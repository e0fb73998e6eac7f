"""The replay app's bounded DuckDB buffer pool (edgetui.store.database.cap_pool / pool_retry / lift_pool_on): the
limit applies while the app only replays, and a read needing more than it lifts it instead of failing."""

from __future__ import annotations

import duckdb
import pytest

from edgetui.store import database as db_mod
from edgetui.views.app import EdgeTUIApp, LiveConfig
from edgetui.store.database import lift_pool_on, open_db, pool_retry
from edgetui.views.widgets import EventList

from test_replay_app import loaded, wait_for
from test_replay_cursor import build_synthetic_run


def _limit(conn) -> str:
    return conn.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def _default_limit() -> str:
    c = duckdb.connect()
    try:
        return _limit(c)
    finally:
        c.close()


def test_pool_retry_lifts_the_limit_once_and_reads_again(tmp_path):
    conn = open_db(tmp_path / "p.duckdb")
    try:
        db_mod.cap_pool(conn, "8MB")
        assert _limit(conn) != _default_limit()
        calls = []

        def read():
            calls.append(_limit(conn))
            if len(calls) == 1:
                raise duckdb.OutOfMemoryException("Out of Memory Error: failed to pin block")
            return "rows"

        assert pool_retry(conn, read) == "rows"
        assert calls[0] != calls[1] and calls[1] == _default_limit()
        # nothing left to lift: a second out-of-memory propagates, other errors always do
        assert not lift_pool_on(conn, duckdb.OutOfMemoryException("again"))
        assert not lift_pool_on(conn, ValueError("not memory"))
        with pytest.raises(duckdb.OutOfMemoryException):
            pool_retry(conn, lambda: (_ for _ in ()).throw(duckdb.OutOfMemoryException("x")))
    finally:
        conn.close()


@pytest.mark.asyncio
async def test_replay_app_bounds_the_pool_and_live_supervision_does_not(tmp_path):
    path = tmp_path / "r.duckdb"
    rk = build_synthetic_run(path, 400, run_id="pool-run")
    app = EdgeTUIApp(path, rk)
    async with app.run_test(size=(120, 40)) as pilot:
        await loaded(pilot)
        assert _limit(app.conn) == _limit_of(db_mod.REPLAY_MEMORY_LIMIT)
    runs = tmp_path / "runs"
    runs.mkdir()
    app = EdgeTUIApp(path, live=LiveConfig([runs]))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: app.conn is not None)
        assert _limit(app.conn) == _default_limit()  # (the live ingest writes through this connection)


def _limit_of(size: str) -> str:
    """DuckDB's spelling of a memory_limit setting of ``size`` (e.g. '48MB' -> '45.7 MiB')."""
    c = duckdb.connect()
    try:
        c.execute(f"SET memory_limit = '{size}'")
        return _limit(c)
    finally:
        c.close()


@pytest.mark.asyncio
async def test_a_replay_past_a_tiny_pool_lifts_it_and_loads(tmp_path, monkeypatch):
    """At 2 MB every read of the run fails with out-of-memory (the header's aggregates, the cursor's
    index): the replay still loads, its search still finds, and the limit is DuckDB's default after."""
    path = tmp_path / "t.duckdb"
    rk = build_synthetic_run(path, 3000, run_id="tiny-pool")
    monkeypatch.setattr(db_mod, "REPLAY_MEMORY_LIMIT", "2MB")
    c = open_db(path)
    c.execute("SET memory_limit = '2MB'")
    with pytest.raises(duckdb.OutOfMemoryException):  # (the premise: this read does not fit in 2 MB)
        from edgetui.store.timeline_pages import load_index

        load_index(c, rk)
    c.close()
    app = EdgeTUIApp(path, rk)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await loaded(pilot)
        assert screen.cursor.n == 3000
        assert screen.query_one(EventList).count > 0
        assert _limit(app.conn) == _default_limit()
        await pilot.press("slash", *"band-pass", "enter")
        await wait_for(pilot, lambda: screen.cursor.query == "band-pass" and len(screen.cursor.matches) > 0)
