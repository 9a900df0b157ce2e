"""BullMQ for Python on Redis: two ``python -m peer_jobs.bullmq_py`` worker processes, each a
``bullmq.Worker`` at its default concurrency of 1 (BullMQ has no worker command of its own: a
worker is an object the application runs).

The jobs make their ``INCR`` through redis-py's asyncio client, one per process; completed jobs are
kept (``removeOnComplete`` defaults to false), as BullMQ does by default.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from bullmq import Queue, Worker

from peer_jobs._redis import COUNTER, REDIS_URL, STAMPS, RedisPeer, async_client

QUEUE = "bench"


async def process(job: Any, token: str) -> None:
    """The one processor of the queue: the job's name says which job it is."""
    if job.name == "incr":
        await async_client().incr(COUNTER)
    elif job.name == "stamp":
        await async_client().rpush(STAMPS, repr(time.time()))


class Peer(RedisPeer):
    burst = False  # a BullMQ worker runs until closed
    bulk_api = "queue.addBulk(jobs)"
    workers = "2 x bullmq.Worker"
    default_setting = "concurrency 1"
    settings = {"concurrency 10": ("--concurrency", "10"), "concurrency 50": ("--concurrency", "50")}

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.queue = Queue(QUEUE, {"connection": REDIS_URL})

    def version(self) -> str:
        return importlib.metadata.version("bullmq")

    def dispatch(self, n: int) -> None:
        async def run() -> None:
            for _ in range(n):
                await self.queue.add("incr", {})

        self.loop.run_until_complete(run())

    def bulk(self, n: int) -> None:
        self.loop.run_until_complete(self.queue.addBulk([{"name": "incr", "data": {}} for _ in range(n)]))

    def enqueue_stamp(self) -> None:
        self.loop.run_until_complete(self.queue.add("stamp", {}))

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        return [[sys.executable, "-m", __name__, *(setting or ())]] * processes

    def close(self) -> None:
        self.loop.run_until_complete(self.queue.close())
        self.loop.close()
        super().close()


async def work(concurrency: int | None) -> None:
    """Run one worker until SIGTERM or SIGINT, then close it (jobs in hand finish first)."""
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    opts: dict[str, Any] = {"connection": REDIS_URL}
    if concurrency is not None:
        opts["concurrency"] = concurrency
    worker = Worker(QUEUE, process, opts)
    await stop.wait()
    await worker.close()


if __name__ == "__main__":
    argv = sys.argv[1:]
    asyncio.run(work(int(argv[argv.index("--concurrency") + 1]) if "--concurrency" in argv else None))
