"""RQ on Redis: ``rq worker --burst`` with SimpleWorker (no fork per job), one process each."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Sequence

from rq import Queue

from peer_jobs import _redis
from peer_jobs._redis import REDIS_URL, RedisPeer


def incr() -> None:
    _redis.incr()


def stamp() -> None:
    _redis.stamp()


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "Queue.enqueue_many()"
    workers = "2 x rq worker -w SimpleWorker"
    default_setting = "one job at a time a process"

    def __init__(self) -> None:
        super().__init__()
        self.queue = Queue("bench", connection=self.redis)

    def version(self) -> str:
        return importlib.metadata.version("rq")

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            self.queue.enqueue(incr)

    def bulk(self, n: int) -> None:
        self.queue.enqueue_many([Queue.prepare_data(incr) for _ in range(n)])

    def enqueue_stamp(self) -> None:
        self.queue.enqueue(stamp)

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "rq")
        command = [cli, "worker", "-w", "rq.worker.SimpleWorker", "-u", REDIS_URL, "-q", "bench"]
        return [command + (["--burst"] if burst else [])] * processes
