"""Seeing what the queues and workers do: the worker registry, metrics, paused queues, status.

Everything lives in each connection's state store (:mod:`eventbus.state`), so Redis and the SQL
drivers work alike and nothing else needs to run: workers write their heartbeat and metrics
there (:class:`WorkerMonitor`, attached by ``eventbus work``), and the CLI and the dashboard read
it back (:mod:`eventbus.monitoring.status`).
"""


from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventbus.monitoring.metrics import MetricsRecorder, Sample, Tally, read_samples
    from eventbus.monitoring.monitor import WorkerMonitor, default_observers
    from eventbus.monitoring.observer import Observers, WorkerObserver
    from eventbus.monitoring.registry import CurrentJob, FinishedJob, WorkerInfo, WorkerRegistry

#: Each name's module, imported when the name is first asked for: the dispatching side only
#: needs the observer hooks (tracing joins there), not the worker's monitor and its metrics.
_MODULES = {"MetricsRecorder": "metrics", "Sample": "metrics", "Tally": "metrics", "read_samples": "metrics",
            "WorkerMonitor": "monitor", "default_observers": "monitor", "Observers": "observer",
            "WorkerObserver": "observer", "CurrentJob": "registry", "FinishedJob": "registry",
            "WorkerInfo": "registry", "WorkerRegistry": "registry"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["CurrentJob", "FinishedJob", "MetricsRecorder", "Observers", "Sample", "Tally",
           "WorkerInfo", "WorkerMonitor", "WorkerObserver", "WorkerRegistry", "default_observers",
           "read_samples"]
