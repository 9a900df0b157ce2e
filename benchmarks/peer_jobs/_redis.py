"""What every Redis peer shares: the Redis database, the counter the job increments, the stamp list.

Workers and the harness read the URL from ``BENCH_REDIS_URL`` (the harness sets it; the database is
flushed between phases, so give the benchmark a database of its own).
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12")
COUNTER = "bench:counter"
STAMPS = "bench:stamps"

_client: redis.Redis | None = None


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


class RedisPeer:
    """The harness side every Redis peer shares: reset, count, wait for a stamp."""

    backend = "redis"
    bulk_api = "n/a (no bulk API)"
    workers = ""

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
