"""taskiq with taskiq-redis's ``RedisStreamBroker`` (the one its README starts with, and the one of
its brokers that acknowledges): ``taskiq worker peer_jobs.taskiq_redis:broker``, its default two
worker processes with up to 100 async tasks each, no result backend.

taskiq gives a task no Redis client, so the jobs make their ``INCR`` through redis-py's asyncio
client, one per worker process.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
import time
from collections.abc import Sequence

from taskiq_redis import RedisStreamBroker

from peer_jobs._redis import COUNTER, REDIS_URL, STAMPS, RedisPeer, async_client, wait_and_incr

broker = RedisStreamBroker(url=REDIS_URL, queue_name="bench")


@broker.task(task_name="incr")
async def incr() -> None:
    await async_client().incr(COUNTER)


@broker.task(task_name="stamp")
async def stamp() -> None:
    await async_client().rpush(STAMPS, repr(time.time()))


@broker.task(task_name="wait")
async def wait() -> None:
    await wait_and_incr()


class Peer(RedisPeer):
    burst = False  # a taskiq worker runs until stopped
    has_bulk = False
    workers = "taskiq worker --workers 2"
    default_setting = "--max-async-tasks 100, xread_count 100"
    settings = {"--max-async-tasks 10": ("--max-async-tasks", "10")}
    async_setting = ("--max-async-tasks", "50")
    async_setting_label = "--max-async-tasks 50"

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(broker.startup())

    def version(self) -> str:
        return importlib.metadata.version("taskiq") + " + taskiq-redis " + importlib.metadata.version("taskiq-redis")

    def reset(self) -> None:
        """Flush, then declare the stream's consumer group again, as a client starting on a fresh
        Redis does (the group starts at the stream's end, so it must exist before the jobs)."""
        super().reset()
        self.loop.run_until_complete(broker.startup())

    def dispatch(self, n: int, task: str = "incr") -> None:
        kicked = {"incr": incr, "wait": wait}[task]

        async def run() -> None:
            for _ in range(n):
                await kicked.kiq()

        self.loop.run_until_complete(run())

    def enqueue_stamp(self) -> None:
        self.loop.run_until_complete(stamp.kiq())

    def enqueue_waits(self, n: int) -> None:
        self.dispatch(n, "wait")

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "taskiq")
        return [[cli, "worker", f"{__name__}:broker", "--workers", str(processes), "--log-level", "WARNING",
                 *(setting or ())]]

    def close(self) -> None:
        self.loop.run_until_complete(broker.shutdown())
        self.loop.close()
        super().close()
