"""The failed job store contract and its record type.

A record keeps the payload exactly as it was queued, so ``retry`` can push it back unchanged
(attempts reset to 0). ``exception`` starts with a ``module.Type: message`` line, followed by the
traceback.

Failing a reserved job is one fenced step (:meth:`FailedJobStore.fail_reserved`): a worker whose
reservation token no longer holds the job writes no record and deletes nothing.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
import logging
import secrets
import time
import traceback
from typing import TYPE_CHECKING, Any

from eventbus.errors import (
    ConnectionUnavailableError,
    DeserializationError,
    EventBusError,
    UnsafePayloadError,
)
from eventbus.payload import parse_document, without_surrogates

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob

log = logging.getLogger(__name__)

#: How long failing a job keeps trying a failed store that does not answer before it leaves the
#: job reserved, with its failure beside it, to be recorded when it comes back (at most half the
#: connection's retry_after, so the job is still held when the attempt ends).
STORE_PATIENCE_S = 1.5
#: How a refused payload's failure description starts (see :func:`describe_exception`).
REFUSAL_TYPES = tuple(f"{cls.__module__}.{cls.__qualname__}:" for cls in (DeserializationError, UnsafePayloadError))


@dataclasses.dataclass(frozen=True)
class FailedJob:
    uuid: str
    connection: str
    queue: str
    payload: str
    exception: str
    failed_at: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailedJob:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})

    @property
    def refused(self) -> bool:
        """The worker refused the payload (bad signature, unknown name, unreadable envelope)."""
        return self.exception.startswith(REFUSAL_TYPES)

    @property
    def display_name(self) -> str:
        """The payload's display name; never the name a refused payload gives itself."""
        if self.refused:
            return "(refused payload)"
        try:
            doc = parse_document(self.payload)
            return str(doc.get("displayName") or doc["data"]["commandName"])
        except (DeserializationError, KeyError, TypeError):
            return "(unreadable payload)"

    @property
    def summary(self) -> str:
        """The exception's ``Type: message`` line."""
        return self.exception.splitlines()[0] if self.exception else ""


class FailOutcome(enum.Enum):
    """What :meth:`FailedJobStore.fail_reserved` did."""

    #: The record is stored and the job deleted.
    RECORDED = "recorded"
    #: This worker no longer holds the reservation: nothing was written, nothing deleted.
    NOT_HELD = "not held"
    #: The store did not answer: the job stays reserved with its failure beside it, and is
    #: recorded (not run) when it comes back after ``retry_after``.
    DEFERRED = "deferred"


def describe_exception(exc: BaseException) -> str:
    """``module.Type: message`` then the full traceback (chained causes included)."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    first = f"{name}: {exc}".splitlines()[0] if str(exc) else name
    return first + "\n\n" + "".join(traceback.format_exception(exc))


def refusal_description(reason: str) -> str:
    """How a payload refused before it was read is described in its failed record (a driver
    that finds a message it cannot hand over as it is: a bad attribute, a body it cannot decode)."""
    return describe_exception(DeserializationError(reason))


class FailedJobStore(abc.ABC):
    """Where jobs go when they fail for good. Records are keyed by the job's uuid."""

    def log(self, connection: str, queue: str, payload: str, exception: str, uuid: str) -> FailedJob:
        """Record a failure; returns the record as stored (see :meth:`add` for its uuid)."""
        record = FailedJob(uuid=uuid, connection=connection, queue=queue, payload=payload,
                           exception=exception, failed_at=time.time())
        return self.add(record)

    def fail_reserved(self, job: QueueJob, record: FailedJob) -> FailOutcome:
        """Store ``record`` and delete the reserved ``job``, only while ``job``'s token holds it.

        Stores that share a server with the queue do both in one script or transaction. This
        general version, for a store elsewhere, fences in three steps:

        1. the queue keeps the job reserved, with the failure beside it, only for this token
           (:meth:`Queue.hold_failure`) — a worker that lost the reservation stops here, having
           written nothing;
        2. the record is stored (tried for ``STORE_PATIENCE_S``, at most half of ``retry_after``);
        3. the job is deleted (fenced by the same token).

        That order loses nothing: until step 3 the job and its failure are still in the queue,
        under a reservation that expires. If this worker dies, or the store does not answer, the
        job comes back after ``retry_after`` and the worker that pops it records the failure it
        carries, without running the job again. The worst case is a second record of the same
        failure (step 2 done, step 3 lost), never a lost one.
        """
        if not job.queue.hold_failure(job, record.exception):
            return FailOutcome.NOT_HELD
        try:
            self.add_patiently(record, min(STORE_PATIENCE_S, job.queue.retry_after / 2))
        except ConnectionUnavailableError as exc:
            log.warning("job %s failed for good but the failed store does not answer (%s); it stays "
                        "reserved and is recorded when it comes back", job.uuid, exc)
            return FailOutcome.DEFERRED
        job.delete()
        return FailOutcome.RECORDED

    def add_patiently(self, record: FailedJob, patience_s: float = STORE_PATIENCE_S) -> FailedJob:
        """:meth:`add`, tried again while the store does not answer, for up to ``patience_s``."""
        deadline = time.monotonic() + patience_s
        delay = 0.1
        while True:
            try:
                return self.add(record)
            except ConnectionUnavailableError:
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def add(self, record: FailedJob) -> FailedJob:
        """Store ``record`` under its uuid, or under a fresh id made from it when that uuid is taken.

        A record is never replaced: uuids are chosen by whoever pushed the job, so a second job
        failing with the uuid of an earlier failure (a forged one, or a retried job that failed
        again before its record was removed) must not erase the first record.
        """
        record = dataclasses.replace(record, uuid=without_surrogates(record.uuid))  # any store keeps it
        candidate = record
        for _ in range(5):
            if self.insert(candidate):
                return candidate
            candidate = alternative_record(record)
        raise EventBusError(f"cannot store the failed job {record.uuid}: its id keeps colliding",
                            job_uuid=record.uuid)

    @abc.abstractmethod
    def insert(self, record: FailedJob) -> bool:
        """Store ``record`` unless a record with its uuid exists; True when stored."""

    @abc.abstractmethod
    def all(self) -> list[FailedJob]:
        """Every record, newest first."""

    @abc.abstractmethod
    def find(self, uuid: str) -> FailedJob | None: ...

    @abc.abstractmethod
    def forget(self, uuid: str) -> bool: ...

    @abc.abstractmethod
    def flush(self, older_than_s: float | None = None) -> int:
        """Delete every record (or those older than ``older_than_s`` seconds); return how many."""

    def close(self) -> None:
        pass


def record_for(job: QueueJob, description: str) -> FailedJob:
    """The failed record of a reserved job: its payload as queued and the failure's description."""
    return FailedJob(uuid=job.uuid, connection=job.connection_name, queue=job.queue_name,
                     payload=job.raw, exception=description, failed_at=time.time())


def alternative_record(record: FailedJob) -> FailedJob:
    """The same record under a fresh id made from its uuid (for when the uuid is taken)."""
    return dataclasses.replace(record, uuid=f"{record.uuid}~{secrets.token_hex(4)}")


class MemoryFailedJobStore(FailedJobStore):
    """A real in-process store (for tests and the sync driver)."""

    def __init__(self) -> None:
        self.records: dict[str, FailedJob] = {}

    def insert(self, record: FailedJob) -> bool:
        if record.uuid in self.records:
            return False
        self.records[record.uuid] = record
        return True

    def all(self) -> list[FailedJob]:
        return sorted(self.records.values(), key=lambda r: r.failed_at, reverse=True)

    def find(self, uuid: str) -> FailedJob | None:
        return self.records.get(uuid)

    def forget(self, uuid: str) -> bool:
        return self.records.pop(uuid, None) is not None

    def flush(self, older_than_s: float | None = None) -> int:
        cutoff = time.time() - older_than_s if older_than_s is not None else float("inf")
        doomed = [u for u, r in self.records.items() if r.failed_at <= cutoff]
        for uuid in doomed:
            del self.records[uuid]
        return len(doomed)
