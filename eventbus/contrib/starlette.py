"""Starlette and FastAPI (``pip install 'eventbus[fastapi]'``): lifespan, async verbs, dependency.

::

    import eventbus
    from fastapi import FastAPI
    from eventbus.contrib.fastapi import AsyncBus, EventBusDep, lifespan

    eventbus.configure(default="redis")          # module level: the worker imports this module
    app = FastAPI(lifespan=lifespan())

    @app.post("/orders/{order_id}/ship")
    async def ship(order_id: int, bus: EventBusDep) -> dict[str, str]:
        await bus.emit(OrderShipped(order_id))    # queued listeners pushed off the loop
        return {"job": await bus.dispatch(SendInvoice(order_id))}

- :func:`lifespan` builds the default connection at startup (a bad setting fails the start, not
  the first request) and closes every connection, store and engine at shutdown; it can wrap the
  app's own lifespan (``then=``).
- :func:`adispatch`, :func:`adispatch_many`, :func:`aemit` never block the loop
  (:mod:`eventbus.contrib.aio`).
- :func:`get_eventbus` is the dependency routes take (:class:`AsyncBus`); tests replace it with
  ``app.dependency_overrides[get_eventbus] = ...``, or keep it and use ``fake_queue()``.
- :func:`mount_dashboard` mounts the eventbus dashboard (an ASGI app) under a path.

Nothing here imports FastAPI: it works for any Starlette app (and other ASGI frameworks whose
lifespan is an async context manager taking the app).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any

from eventbus import runtime
from eventbus.contrib.aio import adispatch, adispatch_many, aemit, offload
from eventbus.dashboard import create_app
from eventbus.queue.base import Delay

__all__ = ["AsyncBus", "adispatch", "adispatch_many", "aemit", "get_eventbus",
           "lifespan", "mount_dashboard"]

Lifespan = Callable[[Any], contextlib.AbstractAsyncContextManager[Any]]



def lifespan(settings: Mapping[str, Any] | None = None, *, then: Lifespan | None = None) -> Lifespan:
    """A lifespan for ``FastAPI(lifespan=...)`` / ``Starlette(lifespan=...)``.

    At startup: ``eventbus.configure(**settings)`` when ``settings`` are given (a worker does not
    run the lifespan: configure in the module it imports when it must see the same settings),
    then the default connection is built, so a bad setting stops the start. At shutdown every
    connection, store and engine is closed (the settings stay). ``then`` is the app's own
    lifespan, run inside; what it yields (Starlette's lifespan state) is passed on.
    """

    @contextlib.asynccontextmanager
    async def run(app: Any) -> AsyncIterator[Any]:
        if settings is not None:
            runtime.configure(**settings)
        await offload(runtime.connection)
        try:
            if then is None:
                yield None
            else:
                async with then(app) as state:
                    yield state
        finally:
            await offload(runtime.close)

    return run


class AsyncBus:
    """The async verbs, as a route receives them from :func:`get_eventbus`.

    Subclass it in tests and override the dependency to record or redirect what a route queues.
    """

    async def dispatch(self, job: Any, *, queue: str | None = None, delay: Delay | None = None,
                       connection: str | None = None, after_commit: bool | None = None) -> str | None:
        return await adispatch(job, queue=queue, delay=delay, connection=connection,
                               after_commit=after_commit)

    async def dispatch_many(self, jobs: Iterable[Any], *, queue: str | None = None,
                            connection: str | None = None) -> list[str]:
        return await adispatch_many(jobs, queue=queue, connection=connection)

    async def emit(self, event: Any, *payload: Any) -> list[Any]:
        return await aemit(event, *payload)


_bus = AsyncBus()


def get_eventbus() -> AsyncBus:
    """The dependency: ``bus: AsyncBus = Depends(get_eventbus)``."""
    return _bus


def mount_dashboard(app: Any, path: str = "/eventbus", **options: Any) -> None:
    """Serve the eventbus dashboard under ``path`` of ``app`` (``app.mount``).

    ``options`` go to the dashboard's ``create_app`` (its authorization, for one). Protect the
    path as you protect the rest of your admin pages.
    """
    app.mount(path, create_app(**options), name="eventbus-dashboard")
