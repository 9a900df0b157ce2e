"""The worker wing: the loop (:mod:`~eventbus.worker.loop`), its options and outcomes, the
processing rules (:mod:`~eventbus.worker.processing`), the handler that runs every queued
command, prefetch, concurrency, the timeout and the watchdog, the supervisor of ``--processes``
and the record of queue outages.

``Worker`` and ``WorkerOptions`` are exported here, imported on first use: the dispatching side
reaches :mod:`~eventbus.worker.processing` (a sync connection runs jobs in the caller) without
loading the loop.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventbus.worker.loop import (
        EXIT_ERROR,
        EXIT_MEMORY,
        EXIT_OK,
        RECONNECT_FIRST_S,
        RECONNECT_MAX_S,
        Worker,
    )
    from eventbus.worker.options import DEFAULT_PREFETCH, WorkerOptions

#: The wing's modules: ``from eventbus.worker import processing`` imports the one named.
SUBMODULES = frozenset({"loop", "options", "outcomes", "processing", "prefetch", "concurrency",
                        "watchdog", "supervisor", "timeouts", "outages", "handler"})
_FROM_OPTIONS = frozenset({"WorkerOptions", "DEFAULT_PREFETCH", "memory_mb"})


def __getattr__(name: str) -> Any:
    if name in SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM_OPTIONS:
        return getattr(importlib.import_module(f"{__name__}.options"), name)
    if not name.startswith("__"):
        loop = importlib.import_module(f"{__name__}.loop")
        if hasattr(loop, name):
            return getattr(loop, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DEFAULT_PREFETCH", "EXIT_ERROR", "EXIT_MEMORY", "EXIT_OK", "RECONNECT_FIRST_S",
           "RECONNECT_MAX_S", "Worker", "WorkerOptions"]
