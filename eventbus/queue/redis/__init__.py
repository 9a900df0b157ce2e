"""The ``redis`` driver: one server, a Cluster or Sentinel (:mod:`~eventbus.queue.redis.topology`),
the queue itself (:mod:`~eventbus.queue.redis.queue`), its fast path over a socket
(:mod:`~eventbus.queue.redis.wire`), how a job's body is stored
(:mod:`~eventbus.queue.redis.bodies`), pushes from an event loop (:mod:`~eventbus.queue.redis.aio`),
idle waits on a cluster (:mod:`~eventbus.queue.redis.cluster_wait`), ``WAIT`` for replicas
(:mod:`~eventbus.queue.redis.replication`) and which errors are a lost connection
(:mod:`~eventbus.queue.redis.errors`). Importing it imports redis-py.

The driver class is imported on first use, so that a module of the wing (its errors, say)
can be imported without the whole driver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventbus.queue.redis.queue import RedisQueue, client_for, load_script

__all__ = ["RedisQueue", "client_for", "load_script"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("eventbus.queue.redis.queue"), name)
