"""Huey on Redis (``huey_consumer peer_jobs.huey_redis.huey``)."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Sequence

from huey import RedisHuey

from peer_jobs import _redis
from peer_jobs._redis import REDIS_URL, RedisPeer

huey = RedisHuey("bench", url=REDIS_URL, results=False)


@huey.task()
def incr() -> None:
    _redis.incr()


@huey.task()
def stamp() -> None:
    _redis.stamp()


class Peer(RedisPeer):
    bulk_api = "task.map()"
    workers = "huey_consumer -w 2 -k process"
    default_setting = "one job at a time a process"

    def version(self) -> str:
        return importlib.metadata.version("huey")

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            incr()

    def bulk(self, n: int) -> None:
        incr.map(() for _ in range(n))

    def enqueue_stamp(self) -> None:
        stamp()

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        consumer = os.path.join(os.path.dirname(sys.executable), "huey_consumer")
        return [[consumer, f"{__name__}.huey", "-w", str(processes), "-k", "process", "-q"]]
