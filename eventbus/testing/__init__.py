"""Fakes for your own tests: record events and pushed jobs instead of running them.

::

    with fake_events() as events:
        ship(order)
    events.assert_emitted(OrderShipped, lambda e: e.order_id == 7)

    with fake_queue() as queue:
        emit(OrderShipped(order_id=7))
    queue.assert_pushed(SendShipmentMail, times=1)

The same objects are pytest fixtures named ``events`` and ``queue`` (installed with eventbus).
Failure messages list what was emitted or pushed instead.
"""

from eventbus.testing.fakes import (
    EventFake,
    PushedJob,
    QueueFake,
    fake_events,
    fake_queue,
)

__all__ = ["EventFake", "PushedJob", "QueueFake", "fake_events", "fake_queue"]
