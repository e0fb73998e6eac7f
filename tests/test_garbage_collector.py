"""One owner of the garbage collector's settings (edgetui/garbage_collector.py): the end of a parse's
fewer_collections scope no longer unfreezes a heap the live supervisor or a replay screen froze."""

import gc

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
