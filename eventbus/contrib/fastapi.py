"""FastAPI (``pip install 'eventbus[fastapi]'``): :mod:`eventbus.contrib.starlette`, plus
``EventBusDep``, the dependency as an annotation::

    @app.post("/orders/{order_id}/ship")
    async def ship(order_id: int, bus: EventBusDep) -> dict[str, str]:
        return {"job": await bus.dispatch(SendInvoice(order_id))}
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from eventbus.contrib.starlette import (
    AsyncBus,
    adispatch,
    adispatch_many,
    aemit,
    get_eventbus,
    lifespan,
    mount_dashboard,
)

__all__ = ["AsyncBus", "EventBusDep", "adispatch", "adispatch_many", "aemit",
           "get_eventbus", "lifespan", "mount_dashboard"]

#: ``bus: EventBusDep`` in a route's signature: the :class:`AsyncBus` from :func:`get_eventbus`.
EventBusDep = Annotated[AsyncBus, Depends(get_eventbus)]
