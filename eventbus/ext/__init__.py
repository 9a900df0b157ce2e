"""For the authors of drivers, handlers, middleware and integrations: what they build on.

An app needs ``eventbus`` alone (``emit``, ``dispatch``, ``Job``, ``configure``, ...). A package
that extends eventbus imports from here: the driver contract and its optional capabilities, the
payload, handler and registry hooks, the serializer's model hooks, the observer a worker calls.
These names are stable across releases like the top-level ones; the modules they come from may
move (``import eventbus`` does not import this module: nothing here costs an app anything).

A driver::

    from eventbus.ext import Cancellable, Queue, QueueJob, register_driver

    class MyQueue(Queue, Cancellable):
        driver = "mine"
        ...

    register_driver("mine", MyQueue)

See the Drivers page of the documentation (writing a driver) and ``tests/queue/test_contract.py``,
the contract every driver passes.
"""

from __future__ import annotations

from eventbus.errors import (
    ConfigurationError,
    ConnectionUnavailableError,
    DeserializationError,
    EventBusError,
    UnsafePayloadError,
)
from eventbus.failed.base import FailedJobStore
from eventbus.middleware.pipeline import Middleware, Next
from eventbus.monitoring.observer import ObservedWorker, WorkerObserver
from eventbus.payload import HANDLER_NAME, Payload, attempts_of, parse_document, pushed_at_of, uuid_of
from eventbus.queue.base import (
    Cancellation,
    Delay,
    JobState,
    Queue,
    QueuedJob,
    QueueJob,
    QueueStats,
    Reserved,
    delay_seconds,
    id_for,
    parse_signals,
    pop_up_to,
)
from eventbus.queue.capabilities import (
    AsyncPush,
    BatchesReservations,
    Cancellable,
    Capability,
    GivesBackAttempts,
    Peekable,
    ReportsWait,
    WorkerSignals,
    declared,
    supports,
)
from eventbus.queue.drivers import driver_class, driver_names, register_driver
from eventbus.registry import dotted_name, register, serializable, trust
from eventbus.runtime import observe_workers, on_configure, on_reset, trace_pushes
from eventbus.serializer import ModelAdapter, register_model, register_model_resolver
from eventbus.state.base import StateStore
from eventbus.worker.handler import CallQueuedHandler, register_handler

__all__ = [
    "AsyncPush",
    "BatchesReservations",
    "CallQueuedHandler",
    "Cancellable",
    "Cancellation",
    "Capability",
    "ConfigurationError",
    "ConnectionUnavailableError",
    "Delay",
    "DeserializationError",
    "EventBusError",
    "FailedJobStore",
    "GivesBackAttempts",
    "HANDLER_NAME",
    "JobState",
    "Middleware",
    "ModelAdapter",
    "Next",
    "ObservedWorker",
    "Payload",
    "Peekable",
    "Queue",
    "QueueJob",
    "QueueStats",
    "QueuedJob",
    "ReportsWait",
    "Reserved",
    "StateStore",
    "UnsafePayloadError",
    "WorkerObserver",
    "WorkerSignals",
    "attempts_of",
    "declared",
    "delay_seconds",
    "dotted_name",
    "driver_class",
    "driver_names",
    "id_for",
    "observe_workers",
    "on_configure",
    "on_reset",
    "parse_document",
    "parse_signals",
    "pop_up_to",
    "pushed_at_of",
    "register",
    "register_driver",
    "register_handler",
    "register_model",
    "register_model_resolver",
    "serializable",
    "supports",
    "trace_pushes",
    "trust",
    "uuid_of",
]
