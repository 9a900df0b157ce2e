"""eventbus: events, queued listeners, jobs and notifications on a reliable job queue.

The names here are what an app uses; what the authors of drivers, handlers, middleware and
integrations build on is in :mod:`eventbus.ext`.

Importing it is cheap (``benchmarks/import_time.py``): what only a worker, the scheduler or one
driver needs (the worker loop, cron parsing, SQLAlchemy, redis-py) is imported on first use.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventbus.dispatching.apush import adispatch, adispatch_many, aemit
    from eventbus.scheduling import Schedule
    from eventbus.worker import Worker, WorkerOptions

    #: The app's default schedule (``eventbus.scheduling.schedule``).
    schedule: Schedule

#: The version of the distribution (``pyproject.toml`` reads it from here; ``eventbus --version``).
__version__ = "0.1.0"

from eventbus import _moved  # noqa: E402 - first: the old module paths answer from here on

_moved.install()

from eventbus.backoff import exponential
from eventbus.batches import Batch, PendingBatch, SkipIfBatchCancelled, batch
from eventbus.batches import find as find_batch
from eventbus.dispatching import (
    bulk_pushes,
    dispatch,
    dispatch_if,
    dispatch_many,
    dispatch_sync,
    dispatch_unless,
    emit_many,
)
from eventbus.dispatching.chains import PendingChain, chain
from eventbus.dispatching.transactions import after_commit
from eventbus.errors import (
    ConfigurationError,
    ConnectionUnavailableError,
    EventBusError,
    FailedJobError,
    JobTimeoutError,
    ManuallyFailedError,
    MaxAttemptsExceededError,
    MissingDependencyError,
    ModelNotFoundError,
    NotReplicatedError,
    SerializationError,
    WorkerConfigurationError,
)
from eventbus.event_bus import EventBus, bus, emit, emit_until, forget, listen, subscribe
from eventbus.events import (
    BatchDispatched,
    Event,
    JobDebounced,
    JobExceptionOccurred,
    JobFailed,
    JobFailedAlert,
    JobNotQueuedAsDuplicate,
    JobProcessed,
    JobProcessing,
    JobQueued,
    JobReleasedAfterException,
    LongWaitDetected,
    Looping,
    QueueBusy,
    WorkerStopping,
)
from eventbus.jobs import Job
from eventbus.limits import Limit, rate_limit
from eventbus.middleware import Middleware, RateLimited, Skip, ThrottlesExceptions, WithoutOverlapping
from eventbus.registry import serializable, trust
from eventbus.runtime import configure, connection, failed_store, settings
from eventbus.serializer import register_model

#: Names whose modules only a worker or the scheduler needs: imported when first asked for.
#: Imported on first use: the scheduler, the worker, and the async verbs (which need asyncio).
_LAZY = {"Schedule": "eventbus.scheduling", "schedule": "eventbus.scheduling",
         "Worker": "eventbus.worker", "WorkerOptions": "eventbus.worker",
         "adispatch": "eventbus.dispatching.apush", "adispatch_many": "eventbus.dispatching.apush",
         "aemit": "eventbus.dispatching.apush"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    moved = _moved.top_level(name)
    if moved is not None:
        return moved
    raise AttributeError(f"module 'eventbus' has no attribute {name!r}")


__all__ = [
    "Batch",
    "BatchDispatched",
    "ConfigurationError",
    "ConnectionUnavailableError",
    "Event",
    "EventBus",
    "EventBusError",
    "FailedJobError",
    "Job",
    "JobDebounced",
    "JobExceptionOccurred",
    "JobFailed",
    "JobFailedAlert",
    "JobNotQueuedAsDuplicate",
    "JobProcessed",
    "JobProcessing",
    "JobQueued",
    "JobReleasedAfterException",
    "JobTimeoutError",
    "Limit",
    "LongWaitDetected",
    "Looping",
    "ManuallyFailedError",
    "MaxAttemptsExceededError",
    "Middleware",
    "MissingDependencyError",
    "ModelNotFoundError",
    "NotReplicatedError",
    "PendingBatch",
    "PendingChain",
    "QueueBusy",
    "RateLimited",
    "Schedule",
    "SerializationError",
    "Skip",
    "SkipIfBatchCancelled",
    "ThrottlesExceptions",
    "WithoutOverlapping",
    "Worker",
    "WorkerConfigurationError",
    "WorkerOptions",
    "WorkerStopping",
    "adispatch",
    "adispatch_many",
    "aemit",
    "after_commit",
    "batch",
    "bulk_pushes",
    "bus",
    "chain",
    "configure",
    "connection",
    "dispatch",
    "dispatch_if",
    "dispatch_many",
    "dispatch_sync",
    "dispatch_unless",
    "emit",
    "emit_many",
    "emit_until",
    "exponential",
    "failed_store",
    "find_batch",
    "forget",
    "listen",
    "rate_limit",
    "register_model",
    "schedule",
    "serializable",
    "settings",
    "subscribe",
    "trust",
]
