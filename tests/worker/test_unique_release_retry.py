"""A unique job's lock release that could not reach its store is tried again by the worker,
not only by the next release of another unique job in the same process.

Found by ``cluster-replica-failover``: the last unique job a worker ran finished while the master
holding its lock was down; the release was kept, but nothing else released a lock in that
worker afterwards, so it never tried again and the lock stayed for ``unique_for`` (a day by
default), refusing every later dispatch of that job."""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from chaos.servers import RedisServer
from helpers import REDIS_URL

import eventbus
from eventbus import Worker, WorkerOptions, runtime
from eventbus.dispatching import unique

pytestmark = pytest.mark.integration

#: The lock store's server, for the job to take down while it runs.
SERVER: dict[str, RedisServer] = {}


class TakesItsLockStoreDown(eventbus.Job):
    """A unique job whose lock lives on the ``locks`` connection; it stops that server while it
    runs, so its release after it succeeded finds no server."""

    unique = True
    unique_via = "locks"
    unique_for = 600

    def handle(self) -> None:
        SERVER["locks"].kill()


@pytest.fixture
def lock_server(use_redis: redis.Redis, tmp_path: pathlib.Path) -> Iterator[RedisServer]:
    """The queue on the shared test Redis, the unique locks on a private one (its AOF keeps the
    lock across the kill)."""
    with RedisServer(tmp_path / "locks", aof=True) as server:
        SERVER["locks"] = server
        eventbus.configure(connections={
            "redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1},
            "locks": {"driver": "redis", "url": server.url()}})
        yield server
        SERVER.clear()
        server.stop()


def lock_key(server: RedisServer) -> list[bytes]:
    return [k for k in server.client().keys("*") if b"unique" in k]


def worker(**options: Any) -> Worker:
    return Worker(eventbus.connection("redis"), failed=runtime.failed_store(),
                  options=WorkerOptions(memory_mb=0, **options))


def run_job_with_its_lock_store_down(server: RedisServer) -> None:
    assert TakesItsLockStoreDown().dispatch() is not None
    assert lock_key(server) != []
    assert worker(stop_when_empty=True, sleep_s=0).run() == 0
    assert not server.answers()
    assert unique.retry_pending() == 1  # kept: the store is still down
    server.start()
    assert lock_key(server) != []  # the AOF kept it


def test_a_stopping_worker_tries_its_kept_releases_again(lock_server: RedisServer) -> None:
    run_job_with_its_lock_store_down(lock_server)
    assert worker(stop_when_empty=True, sleep_s=0).run() == 0  # nothing to run; it stops
    assert lock_key(lock_server) == [], "the kept release was never tried again"
    assert TakesItsLockStoreDown().dispatch() is not None


def test_an_idle_worker_tries_its_kept_releases_again(lock_server: RedisServer) -> None:
    run_job_with_its_lock_store_down(lock_server)
    released_at: list[float] = []

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not released_at:
            if lock_key(lock_server) == []:
                released_at.append(time.monotonic())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    started = time.monotonic()
    watcher.start()
    assert worker(sleep_s=0.2, max_time_s=unique.RETRY_PENDING_EVERY_S + 3).run() == 0
    stopped = time.monotonic()
    watcher.join()
    assert released_at, "the kept release was never tried again"
    assert released_at[0] - started <= unique.RETRY_PENDING_EVERY_S + 1.5 and released_at[0] < stopped
