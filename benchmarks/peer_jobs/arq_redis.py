"""arq on Redis (``arq peer_jobs.arq_redis.WorkerSettings``), its default ten jobs at a time a process.

arq's jobs are coroutines, so the job's INCR goes through arq's own asyncio Redis client.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
import time
from typing import Any

from arq import create_pool
from arq.connections import RedisSettings

from peer_jobs._redis import COUNTER, REDIS_URL, STAMPS, RedisPeer

SETTINGS = RedisSettings.from_dsn(REDIS_URL)
GATHER = 100  # arq has no bulk call: enqueue_job gathered this many at a time


async def incr(ctx: dict[str, Any]) -> None:
    await ctx["redis"].incr(COUNTER)


async def stamp(ctx: dict[str, Any]) -> None:
    await ctx["redis"].rpush(STAMPS, repr(time.time()))


class WorkerSettings:
    functions = [incr, stamp]
    redis_settings = SETTINGS


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = f"asyncio.gather(enqueue_job) x {GATHER}"
    workers = "2 x arq worker (max_jobs 10)"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.pool = self.loop.run_until_complete(create_pool(SETTINGS))

    def version(self) -> str:
        return importlib.metadata.version("arq")

    def dispatch(self, n: int) -> None:
        async def run() -> None:
            for _ in range(n):
                await self.pool.enqueue_job("incr")

        self.loop.run_until_complete(run())

    def bulk(self, n: int) -> None:
        async def run() -> None:
            for start in range(0, n, GATHER):
                await asyncio.gather(*(self.pool.enqueue_job("incr") for _ in range(min(GATHER, n - start))))

        self.loop.run_until_complete(run())

    def enqueue_stamp(self) -> None:
        self.loop.run_until_complete(self.pool.enqueue_job("stamp"))

    def worker_commands(self, processes: int, *, burst: bool) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "arq")
        return [[cli, f"{__name__}.WorkerSettings"] + (["--burst"] if burst else [])] * processes

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.aclose())
        self.loop.close()
        super().close()
