"""eventbus: events, queued listeners, jobs and notifications on a reliable job queue."""

from eventbus.dispatching import chain, dispatch, dispatch_sync
from eventbus.event_bus import EventBus, aemit, bus, emit, emit_until, forget, listen, subscribe
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
from eventbus.payload import Payload
from eventbus.queue.base import Queue, QueueJob
from eventbus.queue.drivers import register_driver
from eventbus.registry import serializable, trust
from eventbus.runtime import configure, connection, failed_store, settings
from eventbus.serializer import register_model
from eventbus.transactions import after_commit
from eventbus.worker import Worker, WorkerOptions

__all__ = [
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
    "JobProcessed",
    "JobProcessing",
    "JobQueued",
    "JobReleasedAfterException",
    "JobTimeoutError",
    "Looping",
    "ManuallyFailedError",
    "MaxAttemptsExceededError",
    "MissingDependencyError",
    "ModelNotFoundError",
    "Payload",
    "Queue",
    "QueueBusy",
    "QueueJob",
    "SerializationError",
    "UnsafePayloadError",
    "Worker",
    "WorkerConfigurationError",
    "WorkerOptions",
    "WorkerStopping",
    "aemit",
    "after_commit",
    "bus",
    "chain",
    "configure",
    "connection",
    "dispatch",
    "dispatch_sync",
    "emit",
    "emit_until",
    "failed_store",
    "forget",
    "listen",
    "register_driver",
    "register_handler",
    "register_model",
    "serializable",
    "settings",
    "subscribe",
    "trust",
]
