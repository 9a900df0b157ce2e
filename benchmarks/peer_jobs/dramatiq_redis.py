"""Dramatiq on Redis (``dramatiq peer_jobs.dramatiq_redis``), its default eight threads a process."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Sequence

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from peer_jobs import _redis
from peer_jobs._redis import REDIS_URL, RedisPeer

dramatiq.set_broker(RedisBroker(url=REDIS_URL))


@dramatiq.actor(queue_name="bench", max_retries=0)
def incr() -> None:
    _redis.incr()


@dramatiq.actor(queue_name="bench", max_retries=0)
def stamp() -> None:
    _redis.stamp()


class Peer(RedisPeer):
    bulk_api = "group(messages).run()"
    workers = "dramatiq --processes 2"
    default_setting = "--threads 8"
    settings = {"--threads 1": ("--threads", "1"), "--threads 32": ("--threads", "32")}

    def version(self) -> str:
        return importlib.metadata.version("dramatiq")

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            incr.send()

    def bulk(self, n: int) -> None:
        dramatiq.group(incr.message() for _ in range(n)).run()

    def enqueue_stamp(self) -> None:
        stamp.send()

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "dramatiq")
        return [[cli, __name__, "--processes", str(processes), *(setting or ("--threads", "8")),
                 "--queues", "bench"]]
