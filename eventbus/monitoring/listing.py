"""Jobs found by tag, class, queue and status: the library side of ``eventbus jobs`` and of the
dashboard's jobs page and ``/api/jobs``.

- ``pending``: ready jobs, then delayed ones (listed as ``delayed``), read from the drivers:
  ready ones from every driver that can show them, delayed ones from the drivers that can list
  them (:class:`~eventbus.queue.capabilities.Cancellable`; for the others a problem line says so);
  ``delayed`` alone lists only those;
- ``reserved``: jobs a worker holds now, from the drivers that can list them;
- ``completed``: jobs workers finished, from the recent-jobs store (:mod:`eventbus.tracking`),
  newest first, for as long as ``configure(retention=...)`` keeps them;
- ``failed``: the failed job store, newest first.

Without a status every one is listed, in that order. A filter on tag or class reads at most
:data:`SCAN_AT_MOST` queued jobs per queue and state to find its matches: the listing is a
look for people, not an index of the queues.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from eventbus import runtime
from eventbus.errors import DeserializationError, EventBusError
from eventbus.failed.base import FailedJob
from eventbus.monitoring import failures
from eventbus.monitoring.lookup import as_count, as_text, as_time
from eventbus.monitoring.status import QueueStatus, connections, status
from eventbus.payload import MAX_TAGS, MAX_TIMESTAMP, parse_document
from eventbus.queue.base import JobState
from eventbus.queue.capabilities import Cancellable, supports
from eventbus.tracking.records import COMPLETED, FAILED, JobRecord
from eventbus.tracking.repository import MAX_LIMIT
from eventbus.tracking.stores import repository

#: The statuses a listing may ask for.
STATUSES = ("pending", "delayed", "reserved", "completed", "failed")
#: The queued states each status reads, and the name its rows carry.
QUEUED = {"pending": (JobState.READY, JobState.DELAYED), "delayed": (JobState.DELAYED,),
          "reserved": (JobState.RESERVED,)}
ROW_STATUS = {JobState.READY: "pending", JobState.DELAYED: "delayed", JobState.RESERVED: "reserved"}
COUNT_OF = {JobState.READY: "ready", JobState.DELAYED: "delayed", JobState.RESERVED: "reserved"}
DEFAULT_LIMIT = 50
#: Queued jobs read per queue and state, at most, when a filter must look at each.
SCAN_AT_MOST = 1000


@dataclasses.dataclass(frozen=True)
class JobFilter:
    """What to list: each field None for "any"."""

    tag: str | None = None
    job_class: str | None = None
    queue: str | None = None
    status: str | None = None
    limit: int = DEFAULT_LIMIT

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {self.status!r}")

    @property
    def statuses(self) -> tuple[str, ...]:
        return STATUSES[:1] + STATUSES[2:] if self.status is None else (self.status,)

    @property
    def narrows(self) -> bool:
        """A filter that each job must be looked at for (tag, class)."""
        return self.tag is not None or self.job_class is not None

    def takes(self, name: str, command: str, queue: str, tags: Iterable[str]) -> bool:
        return ((self.queue is None or queue == self.queue)
                and (self.tag is None or self.tag in tags)
                and (self.job_class is None or any(self.job_class in (n, n.rsplit(".", 1)[-1])
                                                   for n in (name, command) if n)))


@dataclasses.dataclass(frozen=True)
class ListedJob:
    """One job of a listing: ``pushed_at`` when it was pushed (when its payload says),
    ``finished_at`` when it completed or failed (None while it is queued)."""

    uuid: str
    name: str
    connection: str
    queue: str
    status: str
    tags: tuple[str, ...]
    pushed_at: float | None
    finished_at: float | None = None
    attempts: int | None = None
    runtime_s: float | None = None
    exception: str = ""

    @property
    def at(self) -> float | None:
        """When it finished, else when it was pushed: the moment a listing shows."""
        return self.finished_at if self.finished_at is not None else self.pushed_at

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tags"] = list(self.tags)
        return data


@dataclasses.dataclass(frozen=True)
class Listing:
    jobs: list[ListedJob]
    problems: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [j.to_dict() for j in self.jobs], "problems": self.problems}


def list_jobs(chosen: JobFilter, names: Sequence[str] | None = None) -> Listing:
    """The jobs ``chosen`` selects on the connections ``names`` (default: those workers consume),
    at most ``chosen.limit``; what could not be read is a problem line, not an error."""
    found: list[ListedJob] = []
    problems: list[str] = []
    queued = [s for s in chosen.statuses if s in QUEUED]
    if queued:
        current = status(names, with_failed=False)
        problems.extend(current.problems)
        for state in dict.fromkeys(state for s in queued for state in QUEUED[s]):
            found.extend(_queued(current.queues, state, chosen, chosen.limit - len(found), problems))
    if COMPLETED in chosen.statuses and len(found) < chosen.limit:
        found.extend(_completed(names, chosen, chosen.limit - len(found), problems))
    if FAILED in chosen.statuses and len(found) < chosen.limit:
        found.extend(_failed(chosen, chosen.limit - len(found), problems))
    return Listing(found[:chosen.limit], problems)


def _queued(queues: list[QueueStatus], state: JobState, chosen: JobFilter, room: int,
            problems: list[str]) -> list[ListedJob]:
    found: list[ListedJob] = []
    for q in queues:
        if room - len(found) <= 0:
            break
        if not getattr(q, COUNT_OF[state]) or (chosen.queue is not None and q.queue != chosen.queue):
            continue
        conn = runtime.connection(q.connection)
        read = SCAN_AT_MOST if chosen.narrows else room - len(found)
        try:
            if supports(conn, Cancellable):
                raws = [j.raw for j in conn.list_jobs(state, q.queue, read)]
            elif state is JobState.READY:
                raws = conn.peek(q.queue, read)
            else:
                problems.append(f"{q.connection}: the {conn.driver} driver cannot list "
                                f"{COUNT_OF[state]} jobs")
                continue
        except EventBusError as exc:
            problems.append(f"{q.connection}:{q.queue}: {exc}")
            continue
        for raw in raws:
            doc = _document(raw)
            job = _from_payload(q.connection, q.queue, ROW_STATUS[state], doc)
            if chosen.takes(job.name, _command_of(doc), q.queue, job.tags):
                found.append(job)
    return found[:room]


def _completed(names: Sequence[str] | None, chosen: JobFilter, room: int,
               problems: list[str]) -> list[ListedJob]:
    found: list[JobRecord] = []
    for name in connections(names):
        try:
            records = repository(name).recent(COMPLETED, tag=chosen.tag,
                                              limit=MAX_LIMIT if chosen.narrows or chosen.queue else room)
        except (EventBusError, TypeError) as exc:  # TypeError: a store that keeps no recent jobs
            problems.append(f"recent jobs of {name}: {exc}")
            continue
        found.extend(r for r in records if chosen.takes(r.name, r.command, r.queue, r.tags))
    found.sort(key=lambda r: r.finished_at, reverse=True)
    return [ListedJob(r.uuid, r.name, r.connection, r.queue, r.status, r.tags, r.pushed_at, r.finished_at,
                      r.attempts, r.runtime_s, r.exception) for r in found[:room]]


def _failed(chosen: JobFilter, room: int, problems: list[str]) -> list[ListedJob]:
    try:
        records: list[FailedJob] = failures.failed_jobs(queue=chosen.queue)
    except EventBusError as exc:
        problems.append(f"failed job store: {exc}")
        return []
    found = []
    for record in records:
        doc = {} if record.refused else _document(record.payload)
        tags = tags_of(doc)
        if chosen.takes(record.display_name if not record.refused else "", _command_of(doc),
                        record.queue, tags):
            found.append(ListedJob(record.uuid, record.display_name, record.connection, record.queue,
                                   FAILED, tags, as_time(doc.get("pushedAt")), record.failed_at, None, None,
                                   failures.describe(record).summary))
            if len(found) >= room:
                break
    return found


def _from_payload(connection: str, queue: str, row_status: str, doc: dict[str, Any]) -> ListedJob:
    if not doc:
        return ListedJob("?", "(unreadable payload)", connection, queue, row_status, (), None)
    uuid = doc.get("uuid")
    return ListedJob(uuid if isinstance(uuid, str) and uuid else "?",
                     as_text(doc.get("displayName")) or "(unreadable payload)", connection, queue,
                     row_status, tags_of(doc), as_time(doc.get("pushedAt")), None, as_count(doc.get("attempts")))


def tags_of(doc: dict[str, Any]) -> tuple[str, ...]:
    """The payload's ``tags`` (texts only, at most as many as a valid payload has)."""
    tags = doc.get("tags")
    if not isinstance(tags, list):
        return ()
    return tuple(t for t in tags if isinstance(t, str))[:MAX_TAGS]


def _document(raw: str) -> dict[str, Any]:
    try:
        return parse_document(raw)
    except DeserializationError:
        return {}


def _command_of(doc: dict[str, Any]) -> str:
    data = doc.get("data")
    return as_text(data.get("commandName")) or "" if isinstance(data, dict) else ""
