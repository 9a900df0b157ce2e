"""The ``Event`` base class and the events the queue and worker emit about themselves.

Subclassing :class:`Event` registers the class for payloads, so an event can travel to a queued
listener. Queue events are emitted through the same bus as application events: listen to
``JobFailed`` to page someone, to ``JobProcessed`` to collect metrics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from eventbus import registry

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob


class Event:
    """Base for application events. Subclasses are registered under their dotted name."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        registry.register(cls)


@dataclasses.dataclass
class JobQueued(Event):
    """A job was pushed (after the push succeeded)."""

    connection_name: str
    queue: str
    uuid: str
    display_name: str
    delay: float = 0.0


@dataclasses.dataclass
class JobNotQueuedAsDuplicate(Event):
    """A unique job was not pushed: another job holds its lock (``dispatch`` returned None)."""

    connection_name: str
    queue: str | None
    display_name: str
    unique_key: str
    held_by: str | None = None


class BatchView(Protocol):
    """What :class:`BatchDispatched` tells of its batch: an :class:`eventbus.Batch` (a protocol
    here, because the batch is built from the dispatching side, which emits these events)."""

    @property
    def id(self) -> str: ...
    @property
    def connection(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def total(self) -> int: ...
    @property
    def pending(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def ref(self) -> str: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def finished(self) -> bool: ...

    def cancel(self) -> None: ...
    def add(self, jobs: Iterable[Any]) -> list[str]: ...
    def to_dict(self) -> dict[str, Any]: ...


@dataclasses.dataclass
class BatchDispatched(Event):
    """A batch was stored and its jobs pushed (Laravel's ``BatchDispatched``)."""

    batch: BatchView


@dataclasses.dataclass
class JobDebounced(Event):
    """A debounced job was deleted without running: a later dispatch of it superseded it."""

    connection_name: str
    job: QueueJob


@dataclasses.dataclass
class JobProcessing(Event):
    """A worker reserved a job and is about to run it."""

    connection_name: str
    job: QueueJob


@dataclasses.dataclass
class JobProcessed(Event):
    """A job's attempt finished without an exception, after ``runtime_s`` seconds."""

    connection_name: str
    job: QueueJob
    runtime_s: float = 0.0


@dataclasses.dataclass
class JobExceptionOccurred(Event):
    """An attempt raised; the job will be released or failed next."""

    connection_name: str
    job: QueueJob
    exception: BaseException


@dataclasses.dataclass
class JobReleasedAfterException(Event):
    """A job was put back for another attempt after an exception."""

    connection_name: str
    job: QueueJob
    delay: float = 0.0


@dataclasses.dataclass
class JobFailed(Event):
    """A job failed for good: ``failed()`` ran and it is in the failed job store."""

    connection_name: str
    job: QueueJob
    exception: BaseException


@dataclasses.dataclass
class Looping(Event):
    """A worker is about to look for its next job."""

    connection_name: str
    queues: tuple[str, ...]


@dataclasses.dataclass
class WorkerStopping(Event):
    """A worker is about to exit with ``status``."""

    status: int


@dataclasses.dataclass
class QueueBusy(Event):
    """A queue holds ``size`` jobs, at or above the ``threshold`` of ``eventbus monitor --max``."""

    connection_name: str
    queue: str
    size: int
    threshold: int = 0


@dataclasses.dataclass
class LongWaitDetected(Event):
    """The oldest ready job of a queue has waited ``wait_s`` seconds, longer than the ``limit_s``
    of ``configure(waits=...)`` or ``eventbus monitor --max-wait`` (Horizon's event of the name)."""

    connection_name: str
    queue: str
    wait_s: float
    limit_s: float = 0.0


@dataclasses.dataclass
class JobFailedAlert(Event):
    """A job of class ``job`` failed for good, the first of its class on its connection within
    ``alert_cooldown`` seconds (sent to ``configure(alerts=...)`` by the worker that failed it).
    ``exception`` is the ``Type: message`` line; the failed job store holds the rest."""

    connection_name: str
    queue: str
    job: str
    uuid: str
    exception: str = ""
