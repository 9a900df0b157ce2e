"""The failed job store: where a job goes when it fails for good (``eventbus failed``, ``retry``).

The store is chosen by URL: ``redis://...`` keeps records in Redis, ``memory`` in this process,
a database URL in the ``failed_jobs`` table. By default it sits beside the default connection's
data. :mod:`eventbus.runtime` keeps the one store a process uses.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from eventbus.failed.base import FailedJob, FailedJobStore, MemoryFailedJobStore, describe_exception
from eventbus.urls import last_param, query_params

if TYPE_CHECKING:
    from eventbus.failed.database import DatabaseFailedJobStore
    from eventbus.failed.redis import RedisFailedJobStore

#: Stores whose modules need a client library (SQLAlchemy, redis-py): imported on first use.
_LAZY = {"DatabaseFailedJobStore": "eventbus.failed.database", "RedisFailedJobStore": "eventbus.failed.redis"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: The Redis driver's URL schemes (``eventbus.queue.redis.topology.SCHEMES``), named here too so
#: that choosing a store imports no redis-py (a test keeps the two lists equal).
REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster", "redis+sentinel",
                 "rediss+sentinel")
#: Query parameters of a failed store URL that eventbus reads (and never passes to the client).
SCOPE_PARAMS = {"redis": ("cluster", "prefix"), "sql": ("table",)}


def store_for(url: str, scope: Mapping[str, str] | None = None) -> FailedJobStore:
    """A new store for ``url``: ``memory``, a Redis URL, or a database URL.

    A store is scoped, so that apps sharing one Redis database or one SQL database never see
    each other's records: on Redis its keys start with a prefix (``?prefix=shop:``), in SQL its
    records live in their own table (``?table=shop_jobs_failed``). Without those in the URL the
    store takes ``scope`` (what the default connection says: its Redis ``prefix``, or the table
    named after its jobs table), and without that the defaults (``queues:``, ``failed_jobs``).
    ``redis+cluster://`` and ``redis+sentinel://`` URLs (or ``?cluster=1`` on a seed's
    ``redis://`` URL) reach a cluster or the master a set of sentinels names.
    """
    if url == "memory":
        return MemoryFailedJobStore()
    scope = scope or {}
    is_redis = urlsplit(url).scheme in REDIS_SCHEMES
    bare, params = _without_params(url, SCOPE_PARAMS["redis" if is_redis else "sql"])
    if is_redis:
        from eventbus.failed.redis import RedisFailedJobStore  # redis-py: imported on first use

        cluster = any(v.lower() in ("1", "true", "yes") for v in params.get("cluster", []))
        prefix = last_param(params, "prefix") or scope.get("prefix") or "queues:"
        return RedisFailedJobStore(bare, prefix=prefix, cluster=cluster)
    from eventbus.failed.database import DatabaseFailedJobStore  # SQLAlchemy: imported on first use

    return DatabaseFailedJobStore(bare, table=last_param(params, "table") or scope.get("table") or "failed_jobs")


def prepare_fork(url: str) -> None:
    """Load the store module ``url`` needs (and its scripts) before a supervisor forks its
    workers, each of which opens the store; nothing connects."""
    if url == "memory":
        return
    if urlsplit(url).scheme in REDIS_SCHEMES:
        from eventbus.failed import redis as failed_redis

        failed_redis.prepare_fork()
    else:
        from eventbus.failed import database as failed_database  # noqa: F401 - for the children


def _without_params(url: str, names: tuple[str, ...]) -> tuple[str, dict[str, list[str]]]:
    """``url`` without the query parameters ``names`` (untouched when it has none of them), and
    their values."""
    base, mark, query = url.partition("?")
    if not mark:
        return url, {}
    params = query_params(query)
    taken = {name: params.pop(name) for name in names if name in params}
    if not taken:
        return url, {}
    rest = urlencode([(k, v) for k, values in params.items() for v in values])
    return (f"{base}?{rest}" if rest else base), taken


__all__ = ["DatabaseFailedJobStore", "FailedJob", "FailedJobStore", "MemoryFailedJobStore",
           "RedisFailedJobStore", "describe_exception", "prepare_fork", "store_for"]
