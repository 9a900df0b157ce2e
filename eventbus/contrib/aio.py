"""``await adispatch(job)`` and ``await aemit(event)``: queueing from an event loop without blocking it.

The drivers' clients are synchronous today (redis-py, SQLAlchemy), so a push is a network round
trip that would stall every other request of an async app. Here the push runs on a worker thread
through :func:`offload` — the one place to switch to a native async push once the drivers have
one. Everything else happens as with the synchronous verbs: the context (``after_commit`` blocks,
``bulk_pushes``) is the caller's, the returned uuids are the same, fakes see every push.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from eventbus import dispatching
from eventbus.dispatching import dispatch, dispatch_many
from eventbus.event_bus import bus
from eventbus.queue.base import Delay

__all__ = ["adispatch", "adispatch_many", "aemit", "offload"]

T = TypeVar("T")


async def offload(push: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run the synchronous ``push(*args, **kwargs)`` without blocking the running loop.

    A copy of the caller's context goes along (``asyncio.to_thread``), so ``after_commit`` holds
    and ``bulk_pushes`` blocks around the call apply as they would to a synchronous push.
    """
    return await asyncio.to_thread(push, *args, **kwargs)


async def adispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
                    connection: str | None = None, after_commit: bool | None = None) -> str | None:
    """:func:`eventbus.dispatch`, awaited: the push happens off the loop. Returns the uuid
    (None for a unique job dropped as a duplicate)."""
    return await offload(dispatch, job, queue=queue, delay=delay, connection=connection,
                         after_commit=after_commit)


async def adispatch_many(jobs: Iterable[Any], *, queue: str | None = None,
                         connection: str | None = None, after_commit: bool | None = None) -> list[str]:
    """:func:`eventbus.dispatch_many`, awaited: one bulk push per queue, off the loop."""
    return await offload(dispatch_many, list(jobs), queue=queue, connection=connection,
                         after_commit=after_commit)


async def aemit(event: Any, *payload: Any) -> list[Any]:
    """:func:`eventbus.aemit` whose queued listeners are pushed off the loop.

    Sync listeners run as ``emit`` runs them and async ones are awaited here, in order; the
    pushes of the queued listeners (and of anything they dispatch) are collected while the
    listeners run, then made together on a worker thread before this returns — also when a
    listener raised, as ``emit`` would have pushed them before the exception.
    """
    with dispatching.collecting_pushes(include_delayed=True) as held:
        try:
            return await bus.aemit(event, *payload)
        finally:
            if held:
                await offload(dispatching.push_collected, list(held))
