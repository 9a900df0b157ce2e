"""The ``--app`` of the workers of the cluster-state scenarios: a Redis Cluster connection named
``chaos`` (``CHAOS_CLUSTER_URL``) and jobs whose locks, limits and batch counters live in the
cluster's state store (see :mod:`chaos.cluster_state`)."""

from __future__ import annotations

import os
from typing import Any

import eventbus
from chaos.apps.jobs import Work
from eventbus import Limit, RateLimited, ThrottlesExceptions, WithoutOverlapping

CONNECTION = "chaos"


def configure() -> None:
    url = os.environ["CHAOS_CLUSTER_URL"]
    eventbus.configure(default=CONNECTION, failed=f"{url}?cluster=1", connections={CONNECTION: {
        "driver": "redis", "url": url, "cluster": True, "block_for": 1.0,
        "retry_after": float(os.environ.get("CHAOS_RETRY_AFTER", "3"))}})


LIMITER = "cluster-hourly"
#: Far above what the scenario sends: a job only has to reach its counter.
LIMIT = Limit.per_hour(10_000)
eventbus.rate_limit(LIMITER, lambda job: LIMIT.by(job.limit_key))


class UniqueWork(Work):
    """A unique job: its lock is taken at dispatch and released after it ran."""

    unique = True
    unique_for = 12

    def __init__(self, n: int, unique_key: str, **options: Any) -> None:
        super().__init__(n, **options)
        self.unique_key = unique_key

    def unique_id(self) -> str:
        return self.unique_key


class LimitedWork(Work):
    """Counted in a rate limit far above what the scenario sends: it only has to reach it."""

    def __init__(self, n: int, limit_key: str, **options: Any) -> None:
        super().__init__(n, **options)
        self.limit_key = limit_key

    def middleware(self) -> list[Any]:
        return [RateLimited(LIMITER)]


class ExclusiveWork(Work):
    """Takes an overlap lock of its own key (nobody else contends for it)."""

    def __init__(self, n: int, lock_key: str, **options: Any) -> None:
        super().__init__(n, **options)
        self.lock_key = lock_key

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping(self.lock_key, expire_after=30)]


class ThrottledWork(Work):
    """Behind a circuit breaker of its own key (it never raises: the circuit stays closed)."""

    def __init__(self, n: int, throttle_key: str, **options: Any) -> None:
        super().__init__(n, **options)
        self.throttle_key = throttle_key

    def middleware(self) -> list[Any]:
        return [ThrottlesExceptions(10, 60).by(self.throttle_key)]


if os.environ.get("CHAOS_CLUSTER_URL"):
    configure()
