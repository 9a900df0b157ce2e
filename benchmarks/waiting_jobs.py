"""The jobs of ``concurrency.py`` (a module of their own: workers import them with ``--app``).

Each waits ``BENCH_WAIT_S`` seconds (awaiting, or sleeping in its thread) and increments a counter
in the Redis of ``BENCH_CONCURRENCY_URL``, which is also the queue's connection.
"""

from __future__ import annotations

import asyncio
import os
import time

import redis

import eventbus

URL = os.environ.get("BENCH_CONCURRENCY_URL", "redis://127.0.0.1:6379/13")
COUNTER = "bench:waited"
WAIT_S = float(os.environ.get("BENCH_WAIT_S", "0.05"))
eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": URL, "queue": "io"}})
_client = redis.Redis.from_url(URL)


class AsyncWait(eventbus.Job):
    async def handle(self) -> None:
        await asyncio.sleep(WAIT_S)
        _client.incr(COUNTER)


class SyncWait(eventbus.Job):
    def handle(self) -> None:
        time.sleep(WAIT_S)
        _client.incr(COUNTER)
