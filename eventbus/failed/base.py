"""The failed job store contract and its record type.

A record keeps the payload exactly as it was queued, so ``retry`` can push it back unchanged
(attempts reset to 0). ``exception`` starts with a ``module.Type: message`` line, followed by the
traceback.
"""

from __future__ import annotations

import abc
import dataclasses
import secrets
import time
import traceback
from typing import Any

from eventbus.errors import DeserializationError, EventBusError
from eventbus.payload import parse_document


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
    def display_name(self) -> str:
        try:
            doc = parse_document(self.payload)
            return str(doc.get("displayName") or doc["data"]["commandName"])
        except (DeserializationError, KeyError, TypeError):
            return "(unreadable payload)"

    @property
    def summary(self) -> str:
        """The exception's ``Type: message`` line."""
        return self.exception.splitlines()[0] if self.exception else ""


def describe_exception(exc: BaseException) -> str:
    """``module.Type: message`` then the full traceback (chained causes included)."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    first = f"{name}: {exc}".splitlines()[0] if str(exc) else name
    return first + "\n\n" + "".join(traceback.format_exception(exc))


class FailedJobStore(abc.ABC):
    """Where jobs go when they fail for good. Records are keyed by the job's uuid."""

    def log(self, connection: str, queue: str, payload: str, exception: str, uuid: str) -> FailedJob:
        """Record a failure; returns the record as stored (see :meth:`add` for its uuid)."""
        record = FailedJob(uuid=uuid, connection=connection, queue=queue, payload=payload,
                           exception=exception, failed_at=time.time())
        return self.add(record)

    def add(self, record: FailedJob) -> FailedJob:
        """Store ``record`` under its uuid, or under a fresh id made from it when that uuid is taken.

        A record is never replaced: uuids are chosen by whoever pushed the job, so a second job
        failing with the uuid of an earlier failure (a forged one, or a retried job that failed
        again before its record was removed) must not erase the first record.
        """
        candidate = record
        for _ in range(5):
            if self.insert(candidate):
                return candidate
            candidate = dataclasses.replace(record, uuid=f"{record.uuid}~{secrets.token_hex(4)}")
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
