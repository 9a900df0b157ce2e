"""The driver table: connection ``{"driver": name}`` -> the :class:`~eventbus.queue.base.Queue` class.

Built in: ``redis``, ``database``, ``sync``, ``null``. A third-party package adds one with
:func:`register_driver`, or without any code in the app through the ``eventbus.drivers``
entry-point group (``mydriver = "mypkg.queue:MyQueue"``), read the first time a driver name is
not found in the table. Everything eventbus needs to know about a driver is on its class.
"""

from __future__ import annotations

import threading
from importlib.metadata import entry_points

from eventbus.errors import ConfigurationError
from eventbus.queue.base import Queue
from eventbus.queue.beanstalkd import BeanstalkdQueue
from eventbus.queue.database import DatabaseQueue
from eventbus.queue.null import NullQueue
from eventbus.queue.redis import RedisQueue
from eventbus.queue.sqs import SqsQueue
from eventbus.queue.sync import SyncQueue

ENTRY_POINT_GROUP = "eventbus.drivers"

_lock = threading.Lock()
_drivers: dict[str, type[Queue]] = {
    "redis": RedisQueue,
    "database": DatabaseQueue,
    "sync": SyncQueue,
    "null": NullQueue,
    "beanstalkd": BeanstalkdQueue,
    "sqs": SqsQueue,
}
_entry_points_loaded = False


def register_driver(name: str, queue_class: type[Queue]) -> None:
    """Make ``{"driver": name}`` build ``queue_class`` (replacing a driver of that name)."""
    if not (isinstance(queue_class, type) and issubclass(queue_class, Queue)):
        raise TypeError(f"driver {name!r} must be a subclass of eventbus.Queue, not {queue_class!r}")
    with _lock:
        _drivers[name] = queue_class


def driver_class(name: object) -> type[Queue]:
    """The Queue class registered for ``name``; ConfigurationError listing the known ones."""
    if isinstance(name, str):
        found = _drivers.get(name)
        if found is None:
            _load_entry_points()
            found = _drivers.get(name)
        if found is not None:
            return found
    raise ConfigurationError(f"unknown driver {name!r} (choose one of {', '.join(driver_names())})")


def driver_names() -> list[str]:
    """Every registered driver name, built-in ones first."""
    _load_entry_points()
    return list(_drivers)


def _load_entry_points() -> None:
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
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
