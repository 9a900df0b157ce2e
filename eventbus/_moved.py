"""Module paths that moved when the dispatching side, the worker and the big drivers got packages
of their own, kept for one release: importing one warns (``DeprecationWarning``) and gives the
module at its new place, the same module object, so that state and patches are shared.

The same for the top-level names that went to :mod:`eventbus.ext` (what driver and handler
authors use, not apps): ``from eventbus import Queue`` still works for one release, and warns."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings

#: old path -> new path
MOVED = {
    "eventbus.async_dispatching": "eventbus.dispatching.apush",
    "eventbus.chains": "eventbus.dispatching.chains",
    "eventbus.unique": "eventbus.dispatching.unique",
    "eventbus.debounce": "eventbus.dispatching.debounce",
    "eventbus.transactions": "eventbus.dispatching.transactions",
    "eventbus.display": "eventbus.monitoring.display",
    "eventbus.worker_options": "eventbus.worker.options",
    "eventbus.worker_outcomes": "eventbus.worker.outcomes",
    "eventbus.processing": "eventbus.worker.processing",
    "eventbus.prefetch": "eventbus.worker.prefetch",
    "eventbus.concurrency": "eventbus.worker.concurrency",
    "eventbus.watchdog": "eventbus.worker.watchdog",
    "eventbus.supervisor": "eventbus.worker.supervisor",
    "eventbus.timeouts": "eventbus.worker.timeouts",
    "eventbus.queue_outages": "eventbus.worker.outages",
    "eventbus.handler": "eventbus.worker.handler",
    "eventbus.queue.redis_async": "eventbus.queue.redis.aio",
    "eventbus.queue.redis_cluster_wait": "eventbus.queue.redis.cluster_wait",
    "eventbus.queue.redis_errors": "eventbus.queue.redis.errors",
    "eventbus.queue.redis_replication": "eventbus.queue.redis.replication",
    "eventbus.queue.redis_topology": "eventbus.queue.redis.topology",
    "eventbus.queue.redis_wire": "eventbus.queue.redis.wire",
    "eventbus.queue.database_async": "eventbus.queue.database.aio",
    "eventbus.queue.database_inspect": "eventbus.queue.database.inspect",
    "eventbus.queue.database_postgres": "eventbus.queue.database.postgres",
    "eventbus.queue.database_reserve": "eventbus.queue.database.reserve",
    "eventbus.queue.database_schema": "eventbus.queue.database.schema",
    "eventbus.queue.database_wait": "eventbus.queue.database.wait",
}


#: top-level name -> the module that defines it; each is in ``eventbus.ext`` now.
MOVED_TO_EXT = {
    "CallQueuedHandler": "eventbus.worker.handler",
    "DeserializationError": "eventbus.errors",
    "Payload": "eventbus.payload",
    "Queue": "eventbus.queue.base",
    "QueueJob": "eventbus.queue.base",
    "UnsafePayloadError": "eventbus.errors",
    "register_driver": "eventbus.queue.drivers",
    "register_handler": "eventbus.worker.handler",
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None  # a placeholder: exec_module puts the real module in its place

    def exec_module(self, module: types.ModuleType) -> None:
        new = MOVED[module.__name__]
        warnings.warn(f"{module.__name__} moved to {new}; the old path will be removed in the next release",
                      DeprecationWarning, stacklevel=2)
        sys.modules[module.__name__] = importlib.import_module(new)


def install() -> None:
    """Answer imports of the old paths (once per process)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedFinder())


def top_level(name: str) -> object | None:
    """``eventbus.<name>`` for a module that moved out of the top level (``eventbus.processing``),
    imported by its old path (so it warns), or for a name that moved to ``eventbus.ext`` (with a
    warning that says so, at every use: the name is not cached); None for any other name."""
    if name in MOVED_TO_EXT:
        warnings.warn(f"eventbus.{name} moved to eventbus.ext (from eventbus.ext import {name}); the "
                      "top-level name will be removed in the next release", DeprecationWarning, stacklevel=3)
        value: object = getattr(importlib.import_module(MOVED_TO_EXT[name]), name)
        return value
    old = f"eventbus.{name}"
    return importlib.import_module(old) if old in MOVED else None
