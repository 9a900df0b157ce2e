"""The ``Event`` base class and the events the queue and worker emit about themselves.

Subclassing :class:`Event` registers the class for payloads, so an event can travel to a queued
listener. Queue events are emitted through the same bus as application events: listen to
``JobFailed`` to page someone, to ``JobProcessed`` to collect metrics.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

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
