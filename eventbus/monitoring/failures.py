"""Failed jobs as people read them: filtered lists, and one record taken apart.

A record's ``exception`` is the ``Type: message`` line, a blank line, then the traceback; the
payload is shown as indented JSON. The state of an encrypted job stays sealed: its ``command``
is replaced by a marker, never decrypted for display.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from eventbus import runtime
from eventbus.errors import DeserializationError, EventBusError
from eventbus.failed.base import FailedJob
from eventbus.payload import parse_document

SEALED = "(encrypted: the job's state is not shown)"
ENCRYPTED_MARKER = "__encrypted__"


def failed_jobs(*, queue: str | None = None, connection: str | None = None, job_class: str | None = None,
                limit: int | None = None) -> list[FailedJob]:
    """Failed records, newest first, of one queue, connection and/or job class (see
    :func:`is_of_class`), at most ``limit``."""
    records = [r for r in runtime.failed_store().all()
               if (queue is None or r.queue == queue) and (connection is None or r.connection == connection)
               and (job_class is None or is_of_class(r, job_class))]
    return records if limit is None else records[:max(limit, 0)]


def job_names(record: FailedJob) -> set[str]:
    """The names a failed job goes by: its display name and its command name (none for a
    refused or unreadable payload: what such a payload calls itself is not believed)."""
    if record.refused:
        return set()
    try:
        doc = parse_document(record.payload)
    except DeserializationError:
        return set()
    data = doc.get("data")
    names = (doc.get("displayName"), data.get("commandName") if isinstance(data, dict) else None)
    return {name for name in names if isinstance(name, str) and name}


def is_of_class(record: FailedJob, job_class: str) -> bool:
    """The job's display name or command name is ``job_class``, dotted (``shop.jobs.SendInvoice``)
    or bare (``SendInvoice``)."""
    return any(job_class in (name, name.rsplit(".", 1)[-1]) for name in job_names(record))


def failed_between(first: str, last: str) -> list[FailedJob]:
    """The failed records ordered by failure time, oldest first, from the one with uuid ``first``
    to the one with uuid ``last``, both included (given in either order).

    Raises EventBusError naming each uuid that is not a failed job.
    """
    records = sorted(runtime.failed_store().all(), key=lambda r: (r.failed_at, r.uuid))
    position = {r.uuid: i for i, r in enumerate(records)}
    missing = [u for u in dict.fromkeys((first, last)) if u not in position]
    if missing:
        raise EventBusError(f"no failed job with uuid {', '.join(missing)} (eventbus failed lists them)",
                            job_uuid=missing[0])
    start, end = sorted((position[first], position[last]))
    return records[start:end + 1]


@dataclasses.dataclass(frozen=True)
class FailureDetail:
    """One failed record taken apart for display."""

    record: FailedJob
    summary: str
    traceback: str
    payload: str
    sealed: bool

    def to_dict(self) -> dict[str, Any]:
        return {**self.record.to_dict(), "display_name": self.record.display_name,
                "summary": self.summary, "traceback": self.traceback,
                "payload": self.payload, "sealed": self.sealed}


def shown_payload(raw: str) -> tuple[str, bool]:
    """The payload as indented JSON with an encrypted job's state replaced by a marker; and
    whether it was sealed. A body that is not JSON is shown as it is."""
    try:
        doc = parse_document(raw)
    except DeserializationError:
        return raw, False
    data = doc.get("data")
    command = data.get("command") if isinstance(data, dict) else None
    sealed = isinstance(command, dict) and set(command) == {ENCRYPTED_MARKER}
    if sealed and isinstance(data, dict):
        doc = {**doc, "data": {**data, "command": SEALED}}
    return json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False), sealed


def describe(record: FailedJob) -> FailureDetail:
    """The record's exception line, traceback and payload (sealed state kept sealed)."""
    summary, _, rest = record.exception.partition("\n")
    payload, sealed = shown_payload(record.payload)
    return FailureDetail(record, summary, rest.strip("\n"), payload, sealed)
