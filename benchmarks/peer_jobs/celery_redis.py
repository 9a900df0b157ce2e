"""Celery on Redis (``celery -A peer_jobs.celery_redis worker``), prefork pool, results ignored."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Sequence

import celery

from peer_jobs import _redis
from peer_jobs._redis import REDIS_URL, RedisPeer

app = celery.Celery("bench", broker=REDIS_URL)
app.conf.update(task_ignore_result=True, task_default_queue="bench", worker_hijack_root_logger=False,
                broker_connection_retry_on_startup=True)


@app.task
def incr() -> None:
    _redis.incr()


@app.task
def stamp() -> None:
    _redis.stamp()


class Peer(RedisPeer):
    bulk_api = "group(signatures).apply_async()"
    workers = "celery worker -P prefork -c 2"
    default_setting = "prefetch multiplier 4, one job at a time a process"
    settings = {"--prefetch-multiplier 32": ("--prefetch-multiplier", "32")}

    def version(self) -> str:
        return importlib.metadata.version("celery")

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            incr.delay()

    def bulk(self, n: int) -> None:
        celery.group(incr.s() for _ in range(n)).apply_async()

    def enqueue_stamp(self) -> None:
        stamp.delay()

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "celery")
        return [[cli, "-A", __name__, "worker", "-P", "prefork", "-c", str(processes), "-Q", "bench",
                 "-l", "warning", "--without-gossip", "--without-mingle", "--without-heartbeat", *(setting or ())]]
