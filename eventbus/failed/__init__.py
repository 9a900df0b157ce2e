"""The failed job store: where a job goes when it fails for good (``eventbus failed``, ``retry``).

The store is chosen by URL: ``redis://...`` keeps records in Redis, a database URL in the
``failed_jobs`` table. By default it sits beside the default connection's data.
"""

from __future__ import annotations

import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from eventbus.failed.base import FailedJob, FailedJobStore, MemoryFailedJobStore, describe_exception

_lock = threading.Lock()
_stores: dict[str, FailedJobStore] = {}


def store_for(url: str) -> FailedJobStore:
    """The store for ``url`` (one per URL per process)."""
    with _lock:
        found = _stores.get(url)
        if found is None:
            found = _stores[url] = _build(url)
        return found


def _build(url: str) -> FailedJobStore:
    if url == "memory":
        return MemoryFailedJobStore()
    if url.startswith(("redis://", "rediss://", "unix://")):
        from eventbus.failed.redis import RedisFailedJobStore

        parts = urlsplit(url)
        query = parse_qsl(parts.query)
        cluster = any(k == "cluster" and v.lower() in ("1", "true", "yes") for k, v in query)
        rest = urlencode([(k, v) for k, v in query if k != "cluster"])
        return RedisFailedJobStore(urlunsplit(parts._replace(query=rest)), cluster=cluster)
    from eventbus.failed.database import DatabaseFailedJobStore

    return DatabaseFailedJobStore(url)


def store() -> FailedJobStore:
    """The configured store (``EVENTBUS_FAILED_URL`` or ``configure(failed=...)``)."""
    from eventbus.config import settings

    return store_for(settings().failed)


def reset() -> None:
    with _lock:
        stores = list(_stores.values())
        _stores.clear()
    for s in stores:
        s.close()


__all__ = ["FailedJob", "FailedJobStore", "MemoryFailedJobStore", "describe_exception", "reset",
           "store", "store_for"]
