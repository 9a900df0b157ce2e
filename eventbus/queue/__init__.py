"""Queue drivers. Each only stores and hands out payload text; see :mod:`eventbus.queue.base`."""

from eventbus.queue.base import Delay, Queue, QueueJob, Reserved, delay_seconds

__all__ = ["Delay", "Queue", "QueueJob", "Reserved", "delay_seconds"]
