"""No-op tasks for the peer libraries (imported by their workers)."""

from __future__ import annotations

import dramatiq
from dramatiq.brokers.redis import RedisBroker

dramatiq.set_broker(RedisBroker(url="redis://127.0.0.1:6379/12"))


def rq_noop() -> None:
    pass


@dramatiq.actor(max_retries=0)
def dramatiq_noop() -> None:
    pass
