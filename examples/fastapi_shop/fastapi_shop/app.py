"""The FastAPI app: ``POST /orders/{order_id}/ship`` ships an order.

The database work runs in the thread pool and commits there; then ``await bus.emit(...)`` runs
the audit listener and pushes NotifyCustomer without blocking the event loop. Settings:
``SHOP_DATABASE_URL`` for the shop's tables (default ``shop.sqlite3`` beside this package), and
eventbus's from the ``EVENTBUS_*`` environment: with nothing set, the queue is
``eventbus.sqlite3`` in the working directory and mail is written to ``storage/mail``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException
from starlette.concurrency import run_in_threadpool

from eventbus.contrib.fastapi import EventBusDep, lifespan
from fastapi_shop.models import ship_order
from fastapi_shop.shop import OrderShipped

app = FastAPI(title="shop", lifespan=lifespan())


@app.post("/orders/{order_id}/ship")
async def ship(order_id: int, bus: EventBusDep) -> dict[str, Any]:
    order = await run_in_threadpool(ship_order, order_id)
    if order is None:
        raise HTTPException(status_code=404, detail=f"no order {order_id}")
    await bus.emit(OrderShipped(order))   # audit runs now; NotifyCustomer is queued
    return {"order_id": order.id, "shipped": True}
