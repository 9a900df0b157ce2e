"""arq on Redis (``arq peer_jobs.arq_redis.WorkerSettings``), its default ten jobs at a time a process.

arq's jobs are coroutines, so the job's INCR goes through arq's own asyncio Redis client. Its
settings are a class, so each concurrency setting is a subclass the worker command names.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from arq import create_pool
from arq.connections import RedisSettings

from peer_jobs._redis import COUNTER, REDIS_URL, STAMPS, WAIT_S, RedisPeer

SETTINGS = RedisSettings.from_dsn(REDIS_URL)
GATHER = 100  # arq has no bulk call: enqueue_job gathered this many at a time


async def incr(ctx: dict[str, Any]) -> None:
    await ctx["redis"].incr(COUNTER)


async def stamp(ctx: dict[str, Any]) -> None:
    await ctx["redis"].rpush(STAMPS, repr(time.time()))


async def wait(ctx: dict[str, Any]) -> None:
    await asyncio.sleep(WAIT_S)
    await ctx["redis"].incr(COUNTER)


# arq reads a settings class's own attributes only (not inherited ones): each one is whole.
class WorkerSettings:
    functions = [incr, stamp, wait]
    redis_settings = SETTINGS


class MaxJobs50:
    functions = [incr, stamp, wait]
    redis_settings = SETTINGS
    max_jobs = 50


class MaxJobs50Poll:
    functions = [incr, stamp, wait]
    redis_settings = SETTINGS
    max_jobs = 50
    poll_delay = 0.05


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    has_bulk = False  # bulk() gathers enqueue_job calls, only to fill the queue between drains
    workers = "2 x arq worker"
    default_setting = "max_jobs 10, poll_delay 0.5 s"
    settings = {"max_jobs 50": ("MaxJobs50",), "max_jobs 50, poll_delay 0.05 s": ("MaxJobs50Poll",)}
    async_setting = ("MaxJobs50",)
    async_setting_label = "max_jobs 50"

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

    def bulk(self, n: int, function: str = "incr") -> None:
        async def run() -> None:
            for start in range(0, n, GATHER):
                await asyncio.gather(*(self.pool.enqueue_job(function) for _ in range(min(GATHER, n - start))))

        self.loop.run_until_complete(run())

    def enqueue_stamp(self) -> None:
        self.loop.run_until_complete(self.pool.enqueue_job("stamp"))

    def enqueue_waits(self, n: int) -> None:
        self.bulk(n, "wait")

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "arq")
        name = (setting or ("WorkerSettings",))[0]
        return [[cli, f"{__name__}.{name}"] + (["--burst"] if burst else [])] * processes

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.aclose())
        self.loop.close()
        super().close()
