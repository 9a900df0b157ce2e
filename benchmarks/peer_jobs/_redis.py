"""What every Redis peer shares: the Redis database, the counter the job increments, the stamp list.

Workers and the harness read the URL from ``BENCH_REDIS_URL`` (the harness sets it; the database is
flushed between phases, so give the benchmark a database of its own).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import redis
import redis.asyncio

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
COUNTER = "bench:counter"
STAMPS = "bench:stamps"
WAIT_S = 0.05  # what an async I/O job awaits

_client: redis.Redis | None = None
_async_clients: dict[int, redis.asyncio.Redis] = {}


def client() -> redis.Redis:
    """One client per process (redis-py drops inherited connections after a fork)."""
    global _client
    if _client is None:
        _client = redis.Redis.from_url(REDIS_URL)
    return _client


def incr() -> None:
    """The benchmark job: one INCR."""
    client().incr(COUNTER)


def stamp() -> None:
    """The latency job: push the moment it ran."""
    client().rpush(STAMPS, repr(time.time()))


def async_client() -> redis.asyncio.Redis:
    """redis-py's asyncio client for peers without an async Redis client of their own: one per
    event loop, made on first use."""
    loop = id(asyncio.get_running_loop())
    if loop not in _async_clients:
        _async_clients[loop] = redis.asyncio.Redis.from_url(REDIS_URL)
    return _async_clients[loop]


async def wait_and_incr() -> None:
    """The async I/O job: await 50 ms, then one INCR."""
    await asyncio.sleep(WAIT_S)
    await async_client().incr(COUNTER)


class RedisPeer:
    """The harness side every Redis peer shares: reset, count, wait for a stamp, and the settings
    a peer without concurrency options has."""

    backend = "redis"
    bulk_api = "n/a (no bulk API)"
    has_bulk = True
    workers = ""
    default_setting = ""  # what its defaults are, in its own words
    settings: Mapping[str, Sequence[str]] = {}  # other concurrency settings tried for the best drain
    async_setting: Sequence[str] | None = None  # one process, 50 jobs at once
    async_setting_label = ""

    def __init__(self) -> None:
        self.redis = redis.Redis.from_url(REDIS_URL)

    def version(self) -> str:
        return ""

    def reset(self) -> None:
        self.redis.flushdb()

    def count(self) -> int:
        return int(self.redis.get(COUNTER) or 0)

    def next_stamp(self, timeout_s: float) -> float | None:
        item: Any = self.redis.blpop([STAMPS], timeout=timeout_s)
        return None if item is None else float(item[1])

    def close(self) -> None:
        self.redis.close()
