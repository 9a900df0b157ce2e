"""The null driver: accepts everything and keeps nothing (Laravel's NullQueue).

It is also the smallest complete driver: the shape a new driver file takes (facts as class
attributes, the abstract methods of :class:`~eventbus.queue.base.Queue`), plus one line in
:mod:`eventbus.queue.drivers`.
"""

from __future__ import annotations

from eventbus.queue.base import Queue, QueueJob, id_for
from eventbus.queue.capabilities import Peekable


class NullQueue(Queue, Peekable):
    driver = "null"
    not_cancellable_because = "nothing is ever queued on it"

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        return id_for(payload)

    def pop(self, queue: str | None = None) -> QueueJob | None:
        return None

    def delete_reserved(self, job: QueueJob) -> bool:
        return True

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        return True

    def size(self, queue: str | None = None) -> int:
        return 0

    def clear(self, queue: str | None = None) -> int:
        return 0

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        return []

    def record_exception(self, uuid: str) -> int:
        return 0
