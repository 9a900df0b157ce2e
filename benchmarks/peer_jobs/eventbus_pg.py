"""eventbus's database driver on PostgreSQL (``--app peer_jobs.eventbus_pg``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import eventbus
from peer_jobs import _eventbus
from peer_jobs._pg import PG_URL, PgPeer, update

eventbus.configure(default="database", connections={"database": {
    "driver": "database", "url": PG_URL.replace("postgresql://", "postgresql+psycopg://", 1), "queue": "bench"}})


class Incr(eventbus.Job):
    def handle(self) -> None:
        update()


class Peer(PgPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "dispatch_many(jobs)"
    workers = "eventbus work database --processes 2"
    default_setting = "prefetch 32 (adaptive, through reserve()), 1 job at a time"
    settings = {"--prefetch 128": ("--prefetch", "128")}

    def version(self) -> str:
        return _eventbus.version()

    def clear_jobs(self) -> None:
        eventbus.connection().clear()

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            eventbus.dispatch(Incr())

    def bulk(self, n: int) -> None:
        _eventbus.dispatch_many([Incr() for _ in range(n)])

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        return [_eventbus.worker_command(sys.executable, "database", __name__, processes, burst=burst,
                                         setting=setting)]
