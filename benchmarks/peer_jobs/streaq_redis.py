"""streaQ on Redis streams: ``streaq run peer_jobs.streaq_redis:worker --workers 2 --burst``, its
default 16 tasks at a time a process (pickle, its default serializer).

A streaQ worker object carries its concurrency, so each setting is a worker of its own with the
same tasks (``worker``, ``worker_50``); the tasks make their ``INCR`` through the running worker's
own Redis client (coredis).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from streaq import Worker

from peer_jobs._redis import COUNTER, REDIS_URL, STAMPS, WAIT_S, RedisPeer


def make_worker(concurrency: int | None = None) -> Worker[Any]:
    """A worker on the ``bench`` queue with the benchmark's tasks (``None``: its defaults)."""
    worker: Worker[Any] = (Worker(redis_url=REDIS_URL, queue_name="bench") if concurrency is None
                           else Worker(redis_url=REDIS_URL, queue_name="bench", concurrency=concurrency))

    # silent: no log line per task (two INFO lines otherwise), as every other peer runs quiet
    @worker.task(name="incr", silent=True)
    async def incr() -> None:
        await worker.redis.incr(COUNTER)

    @worker.task(name="stamp", silent=True)
    async def stamp() -> None:
        await worker.redis.rpush(STAMPS, [repr(time.time())])

    @worker.task(name="wait", silent=True)
    async def wait() -> None:
        await asyncio.sleep(WAIT_S)
        await worker.redis.incr(COUNTER)

    return worker


worker = make_worker()
worker_50 = make_worker(50)


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "worker.enqueue_many(tasks)"
    workers = "streaq run --workers 2"
    default_setting = "concurrency 16"
    settings = {"concurrency 50": ("worker_50",)}
    async_setting = ("worker_50",)
    async_setting_label = "concurrency 50"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.opened, self.closing = asyncio.Event(), asyncio.Event()
        self.holder = self.loop.create_task(self.hold())
        self.loop.run_until_complete(self.opened.wait())

    async def hold(self) -> None:
        """Keep the worker's connection open (``async with worker``) for the peer's life: the
        calls below run in other tasks of the same loop, as an app's would."""
        async with worker:
            self.opened.set()
            await self.closing.wait()

    def version(self) -> str:
        return importlib.metadata.version("streaq")

    def dispatch(self, n: int) -> None:
        async def run() -> None:
            for _ in range(n):
                await worker.registry["incr"].enqueue()

        self.loop.run_until_complete(run())

    def bulk(self, n: int, name: str = "incr") -> None:
        task = worker.registry[name]
        self.loop.run_until_complete(worker.enqueue_many([task.enqueue() for _ in range(n)]))

    def enqueue_stamp(self) -> None:
        async def run() -> None:
            await worker.registry["stamp"].enqueue()

        self.loop.run_until_complete(run())

    def enqueue_waits(self, n: int) -> None:
        self.bulk(n, "wait")

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "streaq")
        name = (setting or ("worker",))[0]
        return [[cli, "run", f"{__name__}:{name}", "--workers", str(processes)] + (["--burst"] if burst else [])]

    def close(self) -> None:
        self.closing.set()
        self.loop.run_until_complete(self.holder)
        self.loop.close()
        super().close()
