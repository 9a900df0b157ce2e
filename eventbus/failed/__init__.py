"""The failed job store: where a job goes when it fails for good (``eventbus failed``, ``retry``).

The store is chosen by URL: ``redis://...`` keeps records in Redis, ``memory`` in this process,
a database URL in the ``failed_jobs`` table. By default it sits beside the default connection's
data. :mod:`eventbus.runtime` keeps the one store a process uses.
"""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit, urlunsplit

from eventbus.failed.base import FailedJob, FailedJobStore, MemoryFailedJobStore, describe_exception
from eventbus.failed.database import DatabaseFailedJobStore
from eventbus.failed.redis import RedisFailedJobStore
from eventbus.urls import query_params

REDIS_SCHEMES = ("redis", "rediss", "unix")


def store_for(url: str) -> FailedJobStore:
    """A new store for ``url``: ``memory``, a Redis URL (``?cluster=1`` for a cluster), or SQL."""
    if url == "memory":
        return MemoryFailedJobStore()
    parts = urlsplit(url)
    if parts.scheme in REDIS_SCHEMES:
        query = query_params(parts.query)
        cluster = any(v.lower() in ("1", "true", "yes") for v in query.pop("cluster", []))
        rest = urlencode([(k, v) for k, values in query.items() for v in values])
        return RedisFailedJobStore(urlunsplit(parts._replace(query=rest)), cluster=cluster)
    return DatabaseFailedJobStore(url)


__all__ = ["DatabaseFailedJobStore", "FailedJob", "FailedJobStore", "MemoryFailedJobStore",
           "RedisFailedJobStore", "describe_exception", "store_for"]
