"""Cursors on the holder socket (edgetui/store/holder_cursors.py), with a real holder process: a
query's rows fetched a page at a time over one connection, the read-only rule kept, the caps (cursors
per connection, connections holding cursors), cursors closed when their connection drops and when
unused past the idle limit, a running query cancelled by its token or stopped by its timeout."""

from __future__ import annotations

import threading

import pytest

from edgetui.store.holder_cursors import MAX_CURSORS, MAX_SESSIONS
from edgetui.store.holder_socket import HolderCursor, ask_holder


from test_holder import _holder_process

LONG = "SELECT count(*) FROM range(1000000000000) a(i) WHERE hash(i) = 42"


def a_cursor_opens(holder) -> bool:
    """Does a new connection get a cursor from the holder now (its places not all taken)?"""
    c = HolderCursor(holder)
    try:
        c.open("SELECT 7 AS x")
        return c.fetch(1) == [(7,)]
    except RuntimeError:
        return False
    finally:
        c.close()


@pytest.fixture
def holder(tmp_path):
    db = tmp_path / "h.duckdb"
    # the idle limit and the stalled reader's shortened in the holder process (the module's value, read when it checks)
    p = _holder_process(db, extra="import edgetui.store.holder_socket as hs;hs.CURSOR_IDLE_S=1.0;hs.SEND_STALL_S=1.0;")
    yield db
    p.kill()
    p.wait()


def test_a_query_is_paged_over_one_connection(holder):
    c = HolderCursor(holder)
    try:
        assert c.open("SELECT i, 'r' || i AS s, NULL AS n FROM range(1000) t(i) ORDER BY i") == ["i", "s", "n"]
        pages = []
        while not c.done:
            pages.append(c.fetch(300))
        assert [len(p) for p in pages] == [300, 300, 300, 100]
        rows = [r for p in pages for r in p]
        assert rows[0] == (0, "r0", None) and rows[-1] == (999, "r999", None)
        assert [r[0] for r in rows] == list(range(1000))
        # a second cursor on the same connection, beside the first
        c2_cols = c.open("SELECT x FROM probe ORDER BY x")
        assert c2_cols == ["x"] and c.fetch(10) == [(1,), (2,), (3,)] and c.done
    finally:
        c.close()


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM probe",
        "COPY probe TO '/tmp/x.csv'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT 1; DROP TABLE probe",
    ],
)
def test_a_cursor_reads_only_the_database(holder, sql):
    c = HolderCursor(holder)
    try:
        with pytest.raises(RuntimeError) as e:
            c.open(sql)
        assert "\n" not in str(e.value) and str(e.value)
    finally:
        c.close()
    assert ask_holder(holder, "SELECT count(*) FROM probe").rows == [(3,)]  # nothing changed


def test_cursors_per_connection_are_capped_and_a_closed_one_frees_its_place(holder):
    c = HolderCursor(holder)
    try:
        ids = []
        for _ in range(MAX_CURSORS):
            c.open("SELECT * FROM range(10)")
            ids.append(c.id)
        with pytest.raises(RuntimeError, match=f"at most {MAX_CURSORS} cursors"):
            c.open("SELECT 1")
        c._ask({"cursor": "close", "id": ids[0]})
        c.open("SELECT 42 AS x")
        assert c.fetch(5) == [(42,)]
        with pytest.raises(RuntimeError, match="no cursor"):
            c.id = ids[0]
            c.done = False
            c.fetch(5)
    finally:
        c.close()


def test_a_dropped_connection_gives_back_its_place(holder):
    """MAX_SESSIONS connections hold cursors: the next is refused; once they drop, cursors open again
    (the holder closed theirs)."""
    held = []
    try:
        for _ in range(MAX_SESSIONS):
            c = HolderCursor(holder)
            c.open("SELECT * FROM range(100000)")
            held.append(c)
        extra = HolderCursor(holder)
        with pytest.raises(RuntimeError, match="hold cursors already"):
            extra.open("SELECT 1")
        extra.close()
    finally:
        for c in held:
            c.close()
    # the holder sees each drop when it next reads the socket: asked again until it has
    from waits import wait_for

    wait_for(lambda: a_cursor_opens(holder), what="a cursor after the others dropped")
    # plain requests were answered all along
    assert ask_holder(holder, "SELECT count(*) FROM probe").rows == [(3,)]


def test_an_idle_cursor_is_closed_by_the_holder(holder):
    import time

    c = HolderCursor(holder)
    try:
        c.open("SELECT * FROM range(1000)")
        assert len(c.fetch(10)) == 10
        time.sleep(3.0)  # past the holder's idle limit (1 s here), checked every half second
        with pytest.raises(RuntimeError, match="unused"):
            c.fetch(10)
    except ConnectionError:  # the session itself dropped once it held no cursor: also an expiry
        pass
    finally:
        c.close()


def test_a_running_query_is_cancelled_by_its_token(holder):
    c = HolderCursor(holder, timeout=60.0)
    errors: list[str] = []

    def run() -> None:
        try:
            c.open(LONG)
        except RuntimeError as e:
            errors.append(str(e))

    t = threading.Thread(target=run)
    t.start()
    from waits import wait_for

    # the cancel is sent until it finds the query running (it may not have started yet)
    def cancelled() -> bool:
        c.cancel()
        t.join(0.2)
        return not t.is_alive()

    wait_for(cancelled, what="the query cancelled")
    assert errors and "cancelled" in errors[0]
    # the connection is still usable
    c.open("SELECT 5 AS x")
    assert c.fetch(1) == [(5,)]
    c.close()


def test_a_query_past_its_timeout_is_stopped(holder):
    c = HolderCursor(holder)
    try:
        with pytest.raises(RuntimeError, match=r"stopped after 0\.5 s \(--timeout\)"):
            c.open(LONG, query_timeout=0.5)
    finally:
        c.close()
    with pytest.raises(RuntimeError, match=r"stopped after 0\.5 s \(--timeout\)"):
        ask_holder(holder, LONG, query_timeout=0.5)


def test_edgetui_sql_timeout_stops_a_query_directly_and_through_the_holder(holder, tmp_path, capsys):
    from edgetui.cli.main import main
    from edgetui.store.database import open_db

    free = tmp_path / "free.duckdb"
    open_db(free).close()
    for db in (free, holder):
        assert main(["--db", str(db), "sql", LONG, "--timeout", "0.5"]) != 0
        err = capsys.readouterr().err
        assert "stopped after 0.5 s (--timeout)" in err and len(err.strip().splitlines()) == 1
        assert main(["--db", str(db), "sql", "SELECT 6 * 7 AS x", "--timeout", "5", "--format", "csv"]) == 0
        assert capsys.readouterr().out.split() == ["x", "42"]
    with pytest.raises(SystemExit):
        main(["--db", str(free), "sql", "SELECT 1", "--timeout", "0"])
    assert "above 0" in capsys.readouterr().err


def test_a_connection_dropped_while_its_query_runs_gives_back_its_place(holder):
    """The holder's worker ends a session whose connection went while its query ran (its cursors with
    it): until then the session counts against the cap, after it a new one opens."""
    import json
    import time

    from waits import wait_for

    held = []
    try:
        for _ in range(MAX_SESSIONS - 1):
            h = HolderCursor(holder)
            h.open("SELECT 1")
            held.append(h)
        c = HolderCursor(holder)
        c.open("SELECT * FROM range(10)")  # a cursor it holds
        assert c.sock is not None
        c.sock.sendall(json.dumps({"cursor": "open", "sql": LONG, "timeout": 8}).encode() + b"\n")
        time.sleep(0.3)  # (the query under way in the holder)
        c.close()
        late = HolderCursor(holder)
        with pytest.raises(RuntimeError, match="hold cursors already"):
            late.open("SELECT 1")  # the dropped session still counts while its query runs
        late.close()

        wait_for(lambda: a_cursor_opens(holder), timeout=30, what="the dropped session's place given back")
    finally:
        for h in held:
            h.close()


def test_a_session_that_stops_reading_is_dropped_with_its_cursors(holder):
    """A client that takes nothing of a large page is dropped (after SEND_STALL_S, 1 s here) and its
    session ends with it: its place under the cap comes back."""
    import json

    from waits import wait_for

    held = []
    try:
        for _ in range(MAX_SESSIONS - 1):
            h = HolderCursor(holder)
            h.open("SELECT 1")
            held.append(h)
        c = HolderCursor(holder)
        c.open("SELECT repeat('x', 2000) AS wide FROM range(20000)")
        assert c.sock is not None
        c.sock.sendall(json.dumps({"cursor": "fetch", "id": c.id, "n": 10000}).encode() + b"\n")  # ~20 MB, unread

        wait_for(lambda: a_cursor_opens(holder), timeout=30, what="the stalled session's place given back")
        c.close()
    finally:
        for h in held:
            h.close()
