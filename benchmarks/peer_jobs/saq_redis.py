"""saq on Redis: ``saq peer_jobs.saq_redis.settings --workers 2``, its default ten jobs at a time a
process.

saq's settings are a dict the CLI imports by name, so each way of running is a dict of its own:
``settings`` (until stopped: the latency phase), ``burst`` (stops when the queue is empty; saq
wants a dequeue timeout for that) and ``burst_50`` (50 jobs at a time). The jobs make their
``INCR`` through the queue's own asyncio Redis client.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from saq import Queue

from peer_jobs._redis import COUNTER, REDIS_URL, STAMPS, WAIT_S, RedisPeer

queue = Queue.from_url(REDIS_URL, name="bench")


async def incr(ctx: dict[str, Any]) -> None:
    await queue.redis.incr(COUNTER)  # type: ignore[attr-defined]


async def stamp(ctx: dict[str, Any]) -> None:
    await queue.redis.rpush(STAMPS, repr(time.time()))  # type: ignore[attr-defined]


async def wait(ctx: dict[str, Any]) -> None:
    await asyncio.sleep(WAIT_S)
    await queue.redis.incr(COUNTER)  # type: ignore[attr-defined]


settings = {"queue": queue, "functions": [incr, stamp, wait]}
burst = {**settings, "burst": True, "dequeue_timeout": 0.5}
burst_50 = {**burst, "concurrency": 50}


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    has_bulk = False  # Queue.map() waits for the results; enqueue() is the way in
    workers = "saq --workers 2"
    default_setting = "concurrency 10"
    settings = {"concurrency 50": ("burst_50",)}
    async_setting = ("burst_50",)
    async_setting_label = "concurrency 50"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(queue.connect())

    def version(self) -> str:
        return importlib.metadata.version("saq")

    def dispatch(self, n: int, function: str = "incr") -> None:
        async def run() -> None:
            for _ in range(n):
                await queue.enqueue(function)

        self.loop.run_until_complete(run())

    def enqueue_stamp(self) -> None:
        self.loop.run_until_complete(queue.enqueue("stamp"))

    def enqueue_waits(self, n: int) -> None:
        self.dispatch(n, "wait")

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "saq")
        name = (setting or ("burst",))[0] if burst else "settings"
        return [[cli, f"{__name__}.{name}", "--workers", str(processes), "--quiet"]]

    def close(self) -> None:
        self.loop.run_until_complete(queue.disconnect())
        self.loop.close()
        super().close()
