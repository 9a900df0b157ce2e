"""Listeners the worker subprocess loads with --app apps.shop_listeners."""

from __future__ import annotations

import dataclasses
import time

from apps.jobs import trace
from eventbus import Event
from listeners import listener


@dataclasses.dataclass
class Shipped(Event):
    order_id: int
    items: list[int]


@dataclasses.dataclass
class Refunded(Event):
    order_id: int


@dataclasses.dataclass
class Reviewed(Event):
    order_id: int


@listener
def record_sync(event: Shipped) -> None:
    trace("sync", event.order_id)


@listener(queued=True)
class Remember:
    def should_queue(self, event: Shipped) -> bool:
        return event.order_id != 0

    def handle(self, event: Shipped) -> None:
        trace("queued", f"{event.order_id}:{event.items}")


@listener(queued=True, tries=3, backoff=0.1)
class Refund:
    def handle(self, event: Refunded) -> None:
        trace("refund_attempt", self._queue_job.attempts)  # type: ignore[attr-defined]
        raise RuntimeError("refund service down")

    def failed(self, event: Refunded, exc: BaseException) -> None:
        trace("refund_failed", f"{event.order_id}:{type(exc).__name__}:{exc}")


@listener(queued=True, delay=1.0)
def thank_reviewer(event: Reviewed) -> None:
    trace("reviewed", time.time())
