"""eventbus on Redis: the jobs (``--app peer_jobs.eventbus_redis``) and how the harness drives them."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import eventbus
from peer_jobs import _eventbus
from peer_jobs._redis import REDIS_URL, RedisPeer, incr, stamp, wait_and_incr

eventbus.configure(default="redis",
                   connections={"redis": {"driver": "redis", "url": REDIS_URL, "queue": "bench"}})


class Incr(eventbus.Job):
    def handle(self) -> None:
        incr()


class Stamp(eventbus.Job):
    def handle(self) -> None:
        stamp()


class Wait(eventbus.Job):
    """The async I/O job: an ``async def handle`` runs on the worker's event loop."""

    async def handle(self) -> None:
        await wait_and_incr()


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "dispatch_many(jobs)"
    workers = "eventbus work --processes 2"
    default_setting = "prefetch 32 (adaptive), 1 job at a time"
    settings = _eventbus.SETTINGS
    async_setting = ("--concurrency", "50")
    async_setting_label = "--concurrency 50"

    def version(self) -> str:
        return _eventbus.version()

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            eventbus.dispatch(Incr())

    def bulk(self, n: int) -> None:
        _eventbus.dispatch_many([Incr() for _ in range(n)])

    def enqueue_stamp(self) -> None:
        eventbus.dispatch(Stamp())

    def enqueue_waits(self, n: int) -> None:
        _eventbus.dispatch_many([Wait() for _ in range(n)])

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        return [_eventbus.worker_command(sys.executable, "redis", __name__, processes, burst=burst,
                                         setting=setting)]
