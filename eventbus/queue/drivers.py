"""The driver table: connection ``{"driver": name}`` -> the :class:`~eventbus.queue.base.Queue` class.

Built in: ``redis``, ``database``, ``beanstalkd``, ``sqs``, ``memory``, ``sync``, ``null``. The table holds
``"module:Class"`` paths (kombu's ``TRANSPORT_ALIASES``): a driver's module, and the client
library it needs (redis-py, SQLAlchemy, ...), is imported the first time a connection names it,
so ``import eventbus`` stays cheap. A third-party package adds one with :func:`register_driver`,
or without any code in the app through the ``eventbus.drivers`` entry-point group
(``mydriver = "mypkg.queue:MyQueue"``), read the first time a driver name is not found in the
table. Everything eventbus needs to know about a driver is on its class.
"""

from __future__ import annotations

import importlib
import threading

from eventbus.errors import ConfigurationError
from eventbus.queue.base import Queue

ENTRY_POINT_GROUP = "eventbus.drivers"

# Module-level, not the runtime's: config validates driver names here and the runtime imports
# config, so this table sits below it in the import graph.
_lock = threading.Lock()
_drivers: dict[str, type[Queue] | str] = {
    "redis": "eventbus.queue.redis:RedisQueue",
    "database": "eventbus.queue.database:DatabaseQueue",
    "sync": "eventbus.queue.sync:SyncQueue",
    "null": "eventbus.queue.null:NullQueue",
    "beanstalkd": "eventbus.queue.beanstalkd:BeanstalkdQueue",
    "sqs": "eventbus.queue.sqs:SqsQueue",
    "memory": "eventbus.queue.memory:MemoryQueue",
}
_entry_points_loaded = False


def register_driver(name: str, queue_class: type[Queue]) -> None:
    """Make ``{"driver": name}`` build ``queue_class`` (replacing a driver of that name)."""
    if not (isinstance(queue_class, type) and issubclass(queue_class, Queue)):
        raise TypeError(f"driver {name!r} must be a subclass of eventbus.ext.Queue, not {queue_class!r}")
    with _lock:
        _drivers[name] = queue_class


def driver_class(name: object) -> type[Queue]:
    """The Queue class registered for ``name``; ConfigurationError listing the known ones."""
    if isinstance(name, str):
        found = _drivers.get(name)
        if found is None:
            _load_entry_points()
            found = _drivers.get(name)
        if isinstance(found, str):
            found = _import_driver(name, found)
        if found is not None:
            return found
    raise ConfigurationError(f"unknown driver {name!r} (choose one of {', '.join(driver_names())})")


def driver_names() -> list[str]:
    """Every registered driver name, built-in ones first."""
    _load_entry_points()
    return list(_drivers)


def _import_driver(name: str, path: str) -> type[Queue]:
    """Import a built-in driver's class from its ``module:Class`` path, once."""
    module, _, attr = path.partition(":")
    cls: type[Queue] = getattr(importlib.import_module(module), attr)
    with _lock:
        if _drivers.get(name) == path:
            _drivers[name] = cls
    return cls


def _load_entry_points() -> None:
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
    from importlib.metadata import entry_points  # only when a driver name is not built in

    found = list(entry_points(group=ENTRY_POINT_GROUP))
    for entry in found:
        if entry.name in _drivers:
            continue
        try:
            register_driver(entry.name, entry.load())
        except (ImportError, AttributeError, TypeError) as exc:
            raise ConfigurationError(
                f"the {ENTRY_POINT_GROUP} entry point {entry.name!r} ({entry.value}) cannot be "
                f"loaded: {exc}") from exc
