"""Named connections: one Queue object per connection name per process, built on first use."""

from __future__ import annotations

import threading

from eventbus.config import settings
from eventbus.errors import MissingDependencyError
from eventbus.queue.base import Queue

_lock = threading.Lock()
_queues: dict[str, Queue] = {}


def connection(name: str | None = None) -> Queue:
    """The queue of the named connection (default: the configured default connection)."""
    cfg = settings()
    name = name or cfg.default
    with _lock:
        queue = _queues.get(name)
        if queue is None:
            queue = _queues[name] = build(name, cfg.connection_config(name))
        return queue


def build(name: str, config: dict) -> Queue:  # type: ignore[type-arg]
    driver = config["driver"]
    if driver == "redis":
        from eventbus.queue.redis import RedisQueue

        return RedisQueue(name, config)
    if driver == "database":
        try:
            from eventbus.queue.database import DatabaseQueue
        except ImportError as exc:  # pragma: no cover - SQLAlchemy is a hard dependency
            raise MissingDependencyError(f"the database driver needs SQLAlchemy: {exc}") from exc
        return DatabaseQueue(name, config)
    if driver == "sync":
        from eventbus.queue.sync import SyncQueue

        return SyncQueue(name, config)
    from eventbus.queue.null import NullQueue

    return NullQueue(name, config)


def reset() -> None:
    """Close and forget every connection (after configure(), and between tests)."""
    with _lock:
        queues = list(_queues.values())
        _queues.clear()
    for queue in queues:
        queue.close()
    from eventbus import failed

    failed.reset()
