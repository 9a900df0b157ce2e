"""eventbus on Redis: the jobs (``--app peer_jobs.eventbus_redis``) and how the harness drives them."""

from __future__ import annotations

import sys

import eventbus
from peer_jobs import _eventbus
from peer_jobs._redis import REDIS_URL, RedisPeer, incr, stamp

eventbus.configure(default="redis",
                   connections={"redis": {"driver": "redis", "url": REDIS_URL, "queue": "bench"}})


class Incr(eventbus.Job):
    def handle(self) -> None:
        incr()


class Stamp(eventbus.Job):
    def handle(self) -> None:
        stamp()


class Peer(RedisPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "dispatch_many(jobs)"
    workers = "eventbus work --processes 2 (defaults: adaptive prefetch up to 32, 1 job at a time each)"

    def version(self) -> str:
        return _eventbus.version()

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            eventbus.dispatch(Incr())

    def bulk(self, n: int) -> None:
        _eventbus.dispatch_many([Incr() for _ in range(n)])

    def enqueue_stamp(self) -> None:
        eventbus.dispatch(Stamp())

    def worker_commands(self, processes: int, *, burst: bool) -> list[list[str]]:
        return [_eventbus.worker_command(sys.executable, "redis", __name__, processes, burst=burst)]
