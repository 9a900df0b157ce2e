"""``fake_queue()``: what production would push, recorded instead; unique jobs and chains."""

from __future__ import annotations

import pytest

import eventbus
from eventbus.testing import fake_queue


class Reindex(eventbus.Job):
    unique = True

    def __init__(self, shop: int) -> None:
        self.shop = shop

    def unique_id(self) -> str:
        return str(self.shop)

    def handle(self) -> None:
        pass


def test_the_fake_drops_a_second_copy_of_a_unique_job_as_production_would() -> None:
    dropped: list[eventbus.JobNotQueuedAsDuplicate] = []
    eventbus.listen(eventbus.JobNotQueuedAsDuplicate, dropped.append)
    with fake_queue() as queue:
        first = Reindex(7).dispatch()
        assert first is not None
        assert Reindex(7).dispatch() is None
        assert Reindex(8).dispatch() is not None
        eventbus.dispatch_many([Reindex(7), Reindex(9)])
    queue.assert_pushed(Reindex, times=3)
    assert sorted(job.shop for job in queue.pushed_of(Reindex)) == [7, 8, 9]
    assert [event.held_by for event in dropped] == [first, first]


def test_each_fake_starts_with_no_locks_and_takes_none_in_the_real_store() -> None:
    with fake_queue() as queue:
        Reindex(1).dispatch()
    with fake_queue() as again:
        assert Reindex(1).dispatch() is not None
    queue.assert_pushed(Reindex, times=1)
    again.assert_pushed(Reindex, times=1)
    assert eventbus.runtime.state().get(queue.pushed[0].payload.unique["key"]) is None  # type: ignore[index]


class Record(eventbus.Job):
    def __init__(self, order: int) -> None:
        self.order = order

    def handle(self) -> None:
        pass


class Notify(eventbus.Job):
    def __init__(self, order: int) -> None:
        self.order = order

    def handle(self) -> None:
        pass


class Ship(eventbus.Job):
    """Run by a real worker: what it dispatches is what the fake records."""

    def __init__(self, order: int) -> None:
        self.order = order

    def handle(self) -> None:
        eventbus.chain([Record(self.order), Notify(self.order)]).dispatch()
        Notify(self.order).dispatch()


def test_chains_a_worker_job_dispatches_are_asserted_by_class_instance_or_function(
        use_redis: object) -> None:
    Ship(7).dispatch()
    with fake_queue() as queue:
        worker = eventbus.Worker.for_connection(
            options=eventbus.WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0))
        assert worker.run() == 0
    queue.assert_chained([Record, Notify])
    queue.assert_chained([Record(7), Notify(7)])
    queue.assert_chained([lambda job: job.order == 7, Notify])
    queue.assert_pushed_with_chain(Record, [Notify])
    queue.assert_pushed_with_chain(Record, [Notify(7)], lambda job: job.order == 7)
    queue.assert_pushed_without_chain(Notify)
    with pytest.raises(AssertionError, match=r"expected the chain Notify -> Record to be pushed\. "
                                             r"Pushed:\n  Record -> Notify\n  Notify"):
        queue.assert_chained([Notify, Record])
    with pytest.raises(AssertionError, match="expected the chain Record -> Notify"):
        queue.assert_chained([Record(8), Notify(8)])
    with pytest.raises(AssertionError, match="expected Record pushed with the chain Record -> Record"):
        queue.assert_pushed_with_chain(Record, [Record])
    with pytest.raises(AssertionError, match="expected Record pushed without a chain"):
        queue.assert_pushed_without_chain(Record)
    assert eventbus.connection().size() == 0
