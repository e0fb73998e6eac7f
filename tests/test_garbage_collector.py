"""One owner of the garbage collector's settings (edgetui/garbage_collector.py): the end of a parse's
fewer_collections scope no longer unfreezes a heap the live supervisor or a replay screen froze."""

import gc
import time

import pytest

from edgetui.garbage_collector import GarbageCollector


@pytest.fixture
def collector():
    gc.unfreeze()  # whatever an earlier test in this worker left frozen
    before = gc.get_threshold()
    yield GarbageCollector()
    gc.unfreeze()
    gc.set_threshold(*before)


def test_a_parse_ending_keeps_a_holders_freeze(collector):
    supervisor = object()
    collector.hold_frozen(supervisor)
    frozen = gc.get_freeze_count()
    assert frozen > 0
    with collector.fewer_collections():
        assert gc.get_threshold()[0] == 200_000
    assert gc.get_freeze_count() >= frozen  # before: the scope's end unfroze the supervisor's heap
    collector.release(supervisor)
    assert gc.get_freeze_count() == 0


def test_scopes_and_holders_unfreeze_only_with_the_last(collector):
    thresholds = gc.get_threshold()
    screen, other = object(), object()
    with collector.fewer_collections():
        collector.hold_frozen(screen)
        with collector.fewer_collections():  # nested: one setting
            pass
        assert gc.get_threshold()[0] == 200_000 and gc.get_freeze_count() > 0
    assert gc.get_threshold() == thresholds and gc.get_freeze_count() > 0  # the screen still holds
    collector.release(other)  # not a holder: changes nothing
    assert gc.get_freeze_count() > 0 and collector.frozen()
    collector.release(screen)
    assert gc.get_freeze_count() == 0 and not collector.frozen()


def test_a_stopped_supervisor_gives_its_frozen_heap_back(tmp_path):
    """The live supervisor freezes the heap once caught up, for its lifetime: stopped, it releases
    it (a replay opened later in the same process froze nothing while a stopped watcher's hold
    stayed, and a closed watcher's garbage stayed out of the collector)."""
    from edgetui.garbage_collector import COLLECTOR
    from edgetui.live.supervisor import Supervisor
    from edgetui.store.database import open_db

    root = tmp_path / "runs"
    root.mkdir()
    conn = open_db(tmp_path / "live.duckdb")
    sup = Supervisor(conn, [root], docker_client=None)
    try:
        th, stop = sup.start(interval=0.05, poll=True)
        deadline = time.monotonic() + 60
        while not COLLECTOR.frozen() and time.monotonic() < deadline:
            stop.wait(0.02)
        assert COLLECTOR.frozen()  # caught up (nothing to read): frozen for as long as it runs
        stop.set()
        th.join(30)
        assert not th.is_alive()
        assert not COLLECTOR.frozen() and gc.get_freeze_count() == 0
    finally:
        sup.close()
        conn.close()
