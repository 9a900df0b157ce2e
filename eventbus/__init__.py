"""eventbus: events, queued listeners, jobs and notifications on a reliable job queue."""

from eventbus.async_dispatching import adispatch, adispatch_many, aemit
from eventbus.backoff import exponential
from eventbus.batches import Batch, PendingBatch, SkipIfBatchCancelled, batch
from eventbus.batches import find as find_batch
from eventbus.chains import PendingChain, chain
from eventbus.dispatching import (
    bulk_pushes,
    dispatch,
    dispatch_if,
    dispatch_many,
    dispatch_sync,
    dispatch_unless,
    emit_many,
)
from eventbus.event_bus import EventBus, bus, emit, emit_until, forget, listen, subscribe
from eventbus.errors import (
    ConfigurationError,
    ConnectionUnavailableError,
    DeserializationError,
    EventBusError,
    JobTimeoutError,
    ManuallyFailedError,
    MaxAttemptsExceededError,
    MissingDependencyError,
    ModelNotFoundError,
    SerializationError,
    UnsafePayloadError,
    WorkerConfigurationError,
)
from eventbus.events import (
    Event,
    JobExceptionOccurred,
    JobFailed,
    JobNotQueuedAsDuplicate,
    JobProcessed,
    JobProcessing,
    JobQueued,
    JobReleasedAfterException,
    Looping,
    QueueBusy,
    WorkerStopping,
)
from eventbus.handler import CallQueuedHandler, register_handler
from eventbus.jobs import Job
from eventbus.limits import rate_limit
from eventbus.middleware import Middleware, RateLimited, Skip, ThrottlesExceptions, WithoutOverlapping
from eventbus.payload import Payload
from eventbus.queue.base import Queue, QueueJob
from eventbus.queue.drivers import register_driver
from eventbus.registry import serializable, trust
from eventbus.runtime import configure, connection, failed_store, settings
from eventbus.scheduling import Schedule, schedule
from eventbus.serializer import register_model
from eventbus.transactions import after_commit
from eventbus.worker import Worker, WorkerOptions

__all__ = [
    "Batch",
    "CallQueuedHandler",
    "ConfigurationError",
    "ConnectionUnavailableError",
    "DeserializationError",
    "Event",
    "EventBus",
    "EventBusError",
    "Job",
    "JobExceptionOccurred",
    "JobFailed",
    "JobNotQueuedAsDuplicate",
    "JobProcessed",
    "JobProcessing",
    "JobQueued",
    "JobReleasedAfterException",
    "JobTimeoutError",
    "Looping",
    "ManuallyFailedError",
    "MaxAttemptsExceededError",
    "Middleware",
    "MissingDependencyError",
    "ModelNotFoundError",
    "Payload",
    "PendingBatch",
    "PendingChain",
    "Queue",
    "QueueBusy",
    "QueueJob",
    "RateLimited",
    "Schedule",
    "SerializationError",
    "Skip",
    "SkipIfBatchCancelled",
    "ThrottlesExceptions",
    "UnsafePayloadError",
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
    "register_driver",
    "register_handler",
    "register_model",
    "schedule",
    "serializable",
    "settings",
    "subscribe",
    "trust",
]
