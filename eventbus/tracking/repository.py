"""The recent-jobs store's contract, and its in-memory implementation.

One repository per connection, beside the connection's state store (Redis keys under its
prefix, tables in its database, memory for the memory driver). Workers :meth:`record` the jobs
they finished, in batches, from their monitor's thread (never in a job's path); people list
them (``eventbus jobs --status completed``, the dashboard) and watch tags (``eventbus tags``).

- A record is kept for its status's retention (``configure(retention=...)``), or the
  ``monitored`` one when it carries a monitored tag and that is longer. Old records are
  trimmed lazily: each :meth:`record` drops what has expired, and reads never return it.
- :meth:`find` reads one job's record by its uuid (``eventbus job show``, the dashboard's job
  page), while it is kept.
- Every tag of a recorded job is indexed, so ``--tag`` finds its jobs without a scan.
- A monitored tag (:meth:`watch`) keeps its jobs longer and has a :meth:`count`.
- Recording the same uuid again replaces the record (a job retried after a failure and then
  completed is listed once, as completed).
"""

from __future__ import annotations

import abc
import threading
import time
from collections.abc import Mapping, Sequence

from eventbus.tracking.records import STATUSES, JobRecord, keep_s, tag_keep_s, valid_tag

#: The most records one listing returns.
MAX_LIMIT = 1000


class JobRepository(abc.ABC):
    """Recent jobs of one connection; public methods check, ``_`` ones implement."""

    connection: str

    def record(self, records: Sequence[JobRecord], retention: Mapping[str, float]) -> None:
        """Keep ``records`` (finished jobs) for their retention; drop what has expired."""
        if records:
            self._record(list(records), dict(retention), time.time())

    def recent(self, status: str | None = None, *, tag: str | None = None,
               limit: int = 50) -> list[JobRecord]:
        """Recorded jobs, newest first: of one ``status`` (``completed``, ``failed``) or both,
        carrying ``tag`` or any, at most ``limit``."""
        if status is not None and status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
        return self._recent(status, None if tag is None else valid_tag(tag),
                            max(0, min(limit, MAX_LIMIT)), time.time())

    def find(self, uuid: str) -> JobRecord | None:
        """The record of the job ``uuid`` while it is kept (its retention not over), else None."""
        return self._find(uuid, time.time()) if uuid else None

    def watch(self, tag: str) -> bool:
        """Monitor ``tag``; False when it was monitored already."""
        return self._watch(valid_tag(tag))

    def unwatch(self, tag: str) -> bool:
        """Stop monitoring ``tag``; False when it was not monitored."""
        return self._unwatch(valid_tag(tag))

    def monitored(self) -> list[str]:
        """The monitored tags, sorted."""
        return sorted(self._monitored())

    def count(self, tag: str, retention: Mapping[str, float]) -> int:
        """How many jobs were recorded with ``tag`` within its window: the ``monitored``
        retention for a monitored tag, else the longest of the statuses' (a job whose own record
        has expired meanwhile is still counted, though no longer listed)."""
        return self._count(valid_tag(tag), dict(retention), time.time())

    def migrate(self) -> list[str]:
        """Create what the store needs (tables); the names of what was made ready."""
        return []

    # -- what an implementation provides ---------------------------------------------------------
    @abc.abstractmethod
    def _record(self, records: list[JobRecord], retention: dict[str, float], now: float) -> None: ...

    @abc.abstractmethod
    def _recent(self, status: str | None, tag: str | None, limit: int, now: float) -> list[JobRecord]: ...

    @abc.abstractmethod
    def _find(self, uuid: str, now: float) -> JobRecord | None: ...

    @abc.abstractmethod
    def _watch(self, tag: str) -> bool: ...

    @abc.abstractmethod
    def _unwatch(self, tag: str) -> bool: ...

    @abc.abstractmethod
    def _monitored(self) -> set[str]: ...

    @abc.abstractmethod
    def _count(self, tag: str, retention: dict[str, float], now: float) -> int: ...


class MemoryJobRepository(JobRepository):
    """The contract in one process (the memory driver, tests)."""

    def __init__(self, connection: str = "memory") -> None:
        self.connection = connection
        self._records: dict[str, tuple[JobRecord, float]] = {}  # uuid -> record, kept until
        self._tags: dict[str, dict[str, tuple[float, float]]] = {}  # tag -> uuid -> (finished, until)
        self._watched: set[str] = set()
        self._lock = threading.Lock()

    def _record(self, records: list[JobRecord], retention: dict[str, float], now: float) -> None:
        with self._lock:
            for record in records:
                self._records[record.uuid] = (record, record.finished_at + keep_s(record, retention, self._watched))
                for tag in record.tags:
                    until = record.finished_at + tag_keep_s(tag, retention, self._watched)
                    self._tags.setdefault(tag, {})[record.uuid] = (record.finished_at, until)
            self._trim(now)

    def _trim(self, now: float) -> None:
        for uuid in [u for u, (_, until) in self._records.items() if until <= now]:
            del self._records[uuid]
        for tag, jobs in list(self._tags.items()):
            for uuid in [u for u, (_, until) in jobs.items() if until <= now]:
                del jobs[uuid]
            if not jobs:
                del self._tags[tag]

    def _recent(self, status: str | None, tag: str | None, limit: int, now: float) -> list[JobRecord]:
        with self._lock:
            uuids = list(self._records) if tag is None else [
                u for u, (_, until) in self._tags.get(tag, {}).items() if until > now]
            found = [self._records[u] for u in uuids if u in self._records]
        live = [r for r, until in found if until > now and (status is None or r.status == status)]
        return sorted(live, key=lambda r: r.finished_at, reverse=True)[:limit]

    def _find(self, uuid: str, now: float) -> JobRecord | None:
        with self._lock:
            found = self._records.get(uuid)
        return found[0] if found is not None and found[1] > now else None

    def _watch(self, tag: str) -> bool:
        with self._lock:
            added = tag not in self._watched
            self._watched.add(tag)
            return added

    def _unwatch(self, tag: str) -> bool:
        with self._lock:
            removed = tag in self._watched
            self._watched.discard(tag)
            return removed

    def _monitored(self) -> set[str]:
        with self._lock:
            return set(self._watched)

    def _count(self, tag: str, retention: dict[str, float], now: float) -> int:
        with self._lock:
            jobs = self._tags.get(tag, {})
            return sum(1 for _, until in jobs.values() if until > now)
