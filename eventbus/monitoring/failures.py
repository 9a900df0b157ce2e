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
from eventbus.errors import DeserializationError
from eventbus.failed.base import FailedJob
from eventbus.payload import parse_document

SEALED = "(encrypted: the job's state is not shown)"
ENCRYPTED_MARKER = "__encrypted__"


def failed_jobs(*, queue: str | None = None, connection: str | None = None,
                limit: int | None = None) -> list[FailedJob]:
    """Failed records, newest first, of one queue and/or connection, at most ``limit``."""
    records = [r for r in runtime.failed_store().all()
               if (queue is None or r.queue == queue) and (connection is None or r.connection == connection)]
    return records if limit is None else records[:max(limit, 0)]


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


def _shown_payload(raw: str) -> tuple[str, bool]:
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
    payload, sealed = _shown_payload(record.payload)
    return FailureDetail(record, summary, rest.strip("\n"), payload, sealed)
