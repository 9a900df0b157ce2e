"""``await adispatch(job)`` and ``await aemit(event)``: queueing from an event loop without blocking it.

The verbs live in the core (:mod:`eventbus.dispatching.apush`, also ``eventbus.adispatch``,
``eventbus.adispatch_many``, ``eventbus.aemit``) and are re-exported here for the integrations.
Redis pushes go through ``redis.asyncio`` on the running loop; other drivers push on a worker
thread. Everything else happens as with the synchronous verbs: the context (``after_commit``
blocks, ``bulk_pushes``) is the caller's, the returned uuids are the same, fakes see every push.

:func:`offload` runs any other synchronous call (building a connection, closing them) off the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from eventbus.dispatching.apush import adispatch, adispatch_many, aemit

__all__ = ["adispatch", "adispatch_many", "aemit", "offload"]

T = TypeVar("T")


async def offload(push: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run the synchronous ``push(*args, **kwargs)`` without blocking the running loop.

    A copy of the caller's context goes along (``asyncio.to_thread``), so ``after_commit`` holds
    and ``bulk_pushes`` blocks around the call apply as they would to a synchronous push.
    """
    return await asyncio.to_thread(push, *args, **kwargs)
