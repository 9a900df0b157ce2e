"""What the recent-jobs store keeps of one finished job, and how long.

A worker records each job that completed or failed for good (Horizon's recent and completed
jobs): its uuid, name, queue, tags, attempts and times, and for a failure the exception's
``Type: message`` line. Never the payload: the failed job store keeps that for failures.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping
from typing import Any

from eventbus.payload import MAX_TAG_LENGTH, MAX_TAGS

COMPLETED = "completed"
FAILED = "failed"
STATUSES = (COMPLETED, FAILED)
#: The ``Type: message`` line kept for a failure is cut to this many characters.
MAX_EXCEPTION = 500
#: Built once (``json.dumps`` with options builds an encoder per call: one per finished job here).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


@dataclasses.dataclass(frozen=True)
class JobRecord:
    """One finished job (``status`` is ``completed`` or ``failed``). Times are seconds since the
    epoch on the worker's clock."""

    uuid: str
    name: str
    connection: str
    queue: str
    status: str
    tags: tuple[str, ...] = ()
    attempts: int = 0
    pushed_at: float | None = None
    started_at: float | None = None
    finished_at: float = 0.0
    runtime_s: float = 0.0
    exception: str = ""
    #: The registered class the payload names (``listeners.CallQueuedListener`` for a listener,
    #: whose ``name`` is the listener's): ``--class`` matches either.
    command: str = ""

    def to_dict(self) -> dict[str, Any]:
        # by hand: dataclasses.asdict deep-copies every value, a tenth of a record's cost
        return {"uuid": self.uuid, "name": self.name, "connection": self.connection, "queue": self.queue,
                "status": self.status, "tags": list(self.tags), "attempts": self.attempts,
                "pushed_at": self.pushed_at, "started_at": self.started_at, "finished_at": self.finished_at,
                "runtime_s": self.runtime_s, "exception": self.exception, "command": self.command}

    def to_fields(self) -> dict[str, str]:
        """The record as a Redis hash: its status and finish time, and the whole record as JSON
        (one encoding per record: the worker's monitor writes thousands a second)."""
        return {"status": self.status, "finished_at": repr(self.finished_at), "record": self.to_json()}

    def to_json(self) -> str:
        return _ENCODER.encode(self.to_dict())

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> JobRecord | None:
        """The record a hash holds (:meth:`to_fields`), or None."""
        found = {_text(k): v for k, v in fields.items()}.get("record")
        return cls.from_text(_text(found)) if found is not None else None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobRecord | None:
        """The record ``data`` describes, or None when it is not one (written by another version,
        or damaged): a listing skips it."""
        try:
            tags = tuple(str(t) for t in data.get("tags") or ())[:MAX_TAGS]
            return cls(uuid=str(data["uuid"]), name=str(data["name"]), connection=str(data["connection"]),
                       queue=str(data["queue"]), status=str(data["status"]), tags=tags,
                       attempts=int(data.get("attempts") or 0), pushed_at=_stamp(data.get("pushed_at")),
                       started_at=_stamp(data.get("started_at")),
                       finished_at=float(data.get("finished_at") or 0.0),
                       runtime_s=float(data.get("runtime_s") or 0.0),
                       exception=str(data.get("exception") or ""), command=str(data.get("command") or ""))
        except (KeyError, TypeError, ValueError):
            return None

    @classmethod
    def from_text(cls, text: str | None) -> JobRecord | None:
        if not text:
            return None
        try:
            data = json.loads(text)
        except ValueError:
            return None
        return cls.from_dict(data) if isinstance(data, dict) else None

    def is_of_class(self, job_class: str) -> bool:
        """Its name or command is ``job_class``, dotted (``shop.jobs.SendInvoice``) or bare."""
        return any(job_class in (name, name.rsplit(".", 1)[-1]) for name in (self.name, self.command) if name)


def exception_line(exc: BaseException) -> str:
    """``module.Type: message`` (its first line, at most :data:`MAX_EXCEPTION` characters), as a
    failed record's first line reads, without formatting the traceback."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    try:
        message = str(exc)
    except Exception:  # noqa: BLE001 - an exception whose __str__ fails still has a type
        message = ""
    return (f"{name}: {message}".splitlines()[0] if message else name)[:MAX_EXCEPTION]


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _stamp(value: Any) -> float | None:
    return None if value is None else float(value)


def keep_s(record: JobRecord, retention: Mapping[str, float], monitored: Collection[str]) -> float:
    """How long ``record`` is kept: its status's retention, or the ``monitored`` one when it
    carries a monitored tag and that is longer."""
    keep = retention[record.status]
    if monitored and any(tag in monitored for tag in record.tags):
        keep = max(keep, retention["monitored"])
    return keep


def tag_keep_s(tag: str, retention: Mapping[str, float], monitored: Collection[str]) -> float:
    """How long a tag's index keeps its jobs: as long as the longest-kept of them can be."""
    longest = max(retention[status] for status in STATUSES)
    return max(longest, retention["monitored"]) if tag in monitored else longest


def valid_tag(tag: str) -> str:
    """``tag`` if it can be a tag (non-empty text of at most 191 characters); ValueError else."""
    if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_LENGTH:
        raise ValueError(f"a tag is non-empty text of at most {MAX_TAG_LENGTH} characters, not {tag!r:.60}")
    return tag
