"""Seeing what the queues and workers do: the worker registry, metrics, paused queues, status.

Everything lives in each connection's state store (:mod:`eventbus.state`), so Redis and the SQL
drivers work alike and nothing else needs to run: workers write their heartbeat and metrics
there (:class:`WorkerMonitor`, attached by ``eventbus work``), and the CLI and the dashboard read
it back (:mod:`eventbus.monitoring.status`).
"""

from eventbus.monitoring.metrics import MetricsRecorder, Sample, Tally, read_samples
from eventbus.monitoring.monitor import WorkerMonitor, default_observers
from eventbus.monitoring.observer import Observers, WorkerObserver
from eventbus.monitoring.registry import CurrentJob, FinishedJob, WorkerInfo, WorkerRegistry

__all__ = ["CurrentJob", "FinishedJob", "MetricsRecorder", "Observers", "Sample", "Tally",
           "WorkerInfo", "WorkerMonitor", "WorkerObserver", "WorkerRegistry", "default_observers",
           "read_samples"]
