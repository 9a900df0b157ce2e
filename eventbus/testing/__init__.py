"""Fakes for your own tests: record events and pushed jobs instead of running them.

::

    with fake_events() as events:
        ship(order)
    events.assert_emitted(OrderShipped, lambda e: e.order_id == 7)

    with fake_queue() as queue:
        emit(OrderShipped(order_id=7))
    queue.assert_pushed(SendShipmentMail, times=1)

    with fake_queue() as queue:
        eventbus.batch([ImportRow(1), ImportRow(2)]).name("import").dispatch()
    queue.assert_batched(lambda batch: batch.label == "import")

``memory_queue`` runs the jobs instead, in this process, on a fresh memory connection::

    with memory_queue() as jobs:
        emit(OrderShipped(order_id=7))
        assert jobs.drain() == 1      # the queued listener ran, as a worker runs it

The fakes are pytest fixtures named ``events`` and ``queue`` (installed with eventbus).
Failure messages list what was emitted or pushed instead.
"""

from eventbus.testing.batches import BatchAssertions, BatchFake, fake_batch
from eventbus.testing.memory import MemoryQueueRun, memory_queue
from eventbus.testing.fakes import (
    EventFake,
    QueueFake,
    fake_events,
    fake_queue,
)
from eventbus.testing.pushed import PushedJob

__all__ = ["BatchAssertions", "BatchFake", "EventFake", "MemoryQueueRun", "PushedJob", "QueueFake", "fake_batch",
           "fake_events", "fake_queue", "memory_queue"]
