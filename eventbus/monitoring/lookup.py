"""One job by its uuid, wherever it is: queued (pending, delayed, reserved), failed, or
completed and still kept.

The library side of ``eventbus job show`` and the dashboard's job page. A queued job is looked
for on every queue of each connection whose driver can find one job
(:class:`~eventbus.queue.capabilities.Cancellable`), then the failed job store is asked, then each
connection's recent-jobs store (:mod:`eventbus.tracking`, for ``configure(retention=...)``). The
payload is shown the way the failed page shows it: an encrypted job's state stays sealed. The
recent-jobs store keeps no payload (its records are the class, queue, tags, attempts and times):
a job found only there says so (``payload_kept`` False) rather than showing an empty one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from eventbus import runtime
from eventbus.control import find_queued
from eventbus.errors import DeserializationError
from eventbus.failed.base import FailedJob
from eventbus.monitoring import failures
from eventbus.monitoring.status import connections
from eventbus.payload import MAX_TIMESTAMP, MAX_UUID, parse_document
from eventbus.queue.base import JobState, QueuedJob
from eventbus.queue.capabilities import Cancellable, supports
from eventbus.tracking.records import JobRecord
from eventbus.tracking.stores import repository

#: A queued job's state as the dashboard and the JSON API name it.
STATUS_OF = {JobState.READY: "pending", JobState.DELAYED: "delayed", JobState.RESERVED: "reserved"}
MAX_TAGS = 50
#: What ``eventbus job show`` and ``/api/jobs/UUID`` say when no job has the uuid.
NOT_FOUND = "no queued, failed or recently completed job with uuid {uuid}"


@dataclasses.dataclass(frozen=True)
class JobDetail:
    """One job taken apart for display: where it is, its counts and times, its payload (sealed
    state kept sealed) and, for a failed one, its exception."""

    uuid: str
    display_name: str
    connection: str
    queue: str
    status: str
    attempts: int | None
    pushed_at: float | None
    failed_at: float | None
    batch_id: str | None
    tags: list[str]
    payload: str
    sealed: bool
    exception: str = ""
    traceback: str = ""
    #: The job may be cancelled now: pending or delayed, on a driver that can, in no batch.
    cancellable: bool = False
    #: When a worker started its last attempt, finished it, and how long it ran (a job found in
    #: the recent-jobs store).
    started_at: float | None = None
    finished_at: float | None = None
    runtime_s: float | None = None
    #: False for a job found only in the recent-jobs store, which keeps no payload.
    payload_kept: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def find_job(uuid: str, names: Iterable[str] | None = None) -> JobDetail | None:
    """The job ``uuid`` on the connections ``names`` (default: those workers consume): queued,
    failed, or completed (or failed) and still in the recent-jobs store; None when there is none.
    EventBusError when a broker or store cannot be read."""
    if not uuid or len(uuid) > MAX_UUID:
        return None
    chosen = connections(names)
    for name in chosen:
        conn = runtime.connection(name)
        if not supports(conn, Cancellable):
            continue
        found = find_queued(conn, uuid, None)
        if found is not None:
            return _queued_detail(name, found, cancellable=found.state is not JobState.RESERVED)
    record = runtime.failed_store().find(uuid)
    if record is not None:
        return _failed_detail(record)
    for name in chosen:
        try:
            recorded = repository(name).find(uuid)
        except TypeError:  # a state store that keeps no recent jobs
            continue
        if recorded is not None:
            return _recorded_detail(recorded)
    return None


def _queued_detail(connection: str, found: QueuedJob, *, cancellable: bool) -> JobDetail:
    doc = _document(found.raw)
    shown, sealed = failures.shown_payload(found.raw)
    batch_id = as_text(doc.get("batchId"))
    return JobDetail(found.uuid, as_text(doc.get("displayName")) or "(unreadable payload)", connection,
                     found.queue, STATUS_OF[found.state], as_count(doc.get("attempts")),
                     as_time(doc.get("pushedAt")), None, batch_id, _tags(doc), shown, sealed,
                     cancellable=cancellable and batch_id is None)


def _failed_detail(record: FailedJob) -> JobDetail:
    described = failures.describe(record)
    doc = {} if record.refused else _document(record.payload)
    return JobDetail(record.uuid, record.display_name, record.connection, record.queue, "failed",
                     as_count(doc.get("attempts")), as_time(doc.get("pushedAt")), record.failed_at,
                     as_text(doc.get("batchId")), _tags(doc), described.payload, described.sealed,
                     described.summary, described.traceback)


def _recorded_detail(record: JobRecord) -> JobDetail:
    """A job the recent-jobs store keeps: completed (or failed, and no longer in the failed job
    store: forgotten, or pruned). Its payload is not kept."""
    return JobDetail(record.uuid, record.name, record.connection, record.queue, record.status,
                     record.attempts, record.pushed_at,
                     record.finished_at if record.status == "failed" else None, None,
                     list(record.tags), "", False, record.exception, started_at=record.started_at,
                     finished_at=record.finished_at, runtime_s=record.runtime_s, payload_kept=False)


def _document(raw: str) -> dict[str, Any]:
    try:
        return parse_document(raw)
    except DeserializationError:
        return {}


def as_text(value: Any) -> str | None:
    """A non-empty text field of a payload, else None."""
    return value if isinstance(value, str) and value else None


def as_count(value: Any) -> int | None:
    """A count field of a payload (an int that fits), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31 else None


def as_time(value: Any) -> float | None:
    """A time from a payload, when it is one (``-1e999`` and 400-digit integers are JSON numbers too)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < MAX_TIMESTAMP
    return float(value) if ok else None


def _tags(doc: dict[str, Any]) -> list[str]:
    """The payload's ``tags`` (a list of strings), if it carries any."""
    tags = doc.get("tags")
    if not isinstance(tags, list):
        return []
    return [t for t in tags if isinstance(t, str)][:MAX_TAGS]
