"""Where a connection's batches live: the :class:`BatchRepository` seam and its in-memory
implementation (:mod:`eventbus.batching.stores` picks one for a connection).

Every method is one atomic step in its store (a Lua script on Redis, one transaction in SQL, a
lock in memory), so a process that dies between two calls leaves a consistent batch behind, and
every step may be repeated: creating a batch that exists, recording an outcome recorded before, or marking a callback pushed twice changes nothing.
What a caller must finish after a step (push the callbacks it made due, then mark them) it gets
back again from the same step repeated, so a worker that dies in between leaves the work to the
next attempt of the same job (see :mod:`eventbus.batching.outcomes`).
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import threading
import time
from collections.abc import Sequence
from typing import Any

from eventbus.batching import rules
from eventbus.batching.records import BatchRecord, Due, flags_of, in_push_order


class BatchRepository(abc.ABC):
    """The batches of one connection; see the module docstring for the contract."""

    @abc.abstractmethod
    def create(self, batch_id: str, description: dict[str, Any], jobs: int, *, owner: str) -> list[Due]:
        """Store a batch counting ``jobs`` jobs, unless it exists. A batch of no jobs is finished
        at once: its ``then``/``finally``/chain callbacks come back due, owned by ``owner``."""

    @abc.abstractmethod
    def add_jobs(self, batch_id: str, count: int) -> bool:
        """Count ``count`` more jobs (before they are pushed, so none can finish the batch early);
        False when the batch is gone."""

    @abc.abstractmethod
    def record(self, batch_id: str, job_uuid: str, succeeded: bool, *, unrun: Sequence[str] = (),
               failure: str = "") -> list[Due] | None:
        """Record a job's final outcome (:mod:`eventbus.batching.rules`). Returns every callback
        due and not yet marked pushed that ``job_uuid``'s outcomes made due (made now, or by an
        earlier attempt of the same job that died before pushing them); None when the batch is
        gone."""

    @abc.abstractmethod
    def mark_pushed(self, batch_id: str, keys: Sequence[str]) -> None:
        """The callbacks under ``keys`` were pushed: never hand them out again."""

    @abc.abstractmethod
    def callback_ran(self, batch_id: str, job_uuid: str) -> None:
        """A callback job of the batch succeeded (so a repeated push can see it ran)."""

    @abc.abstractmethod
    def callbacks_ran(self, batch_id: str, job_uuids: Sequence[str]) -> set[str]:
        """Which of ``job_uuids`` (callback jobs) have succeeded."""

    @abc.abstractmethod
    def cancel(self, batch_id: str) -> bool:
        """Stamp the batch cancelled; False when it already was (or is gone)."""

    @abc.abstractmethod
    def find(self, batch_id: str) -> BatchRecord | None: ...

    @abc.abstractmethod
    def description(self, batch_id: str) -> dict[str, Any] | None:
        """What the batch was created with: name, options, callbacks as ready-made jobs."""

    @abc.abstractmethod
    def ids(self) -> list[str]:
        """Every batch, newest first (for listings and pruning, not per job)."""

    @abc.abstractmethod
    def delete(self, batch_id: str) -> bool:
        """Remove the batch; its jobs still queued then belong to no batch."""

    def migrate(self) -> list[str]:
        """Create what the store needs (tables); the names made ready."""
        return []


# -- in memory -------------------------------------------------------------------------------------

@dataclasses.dataclass
class _Batch:
    description: dict[str, Any]
    flags: list[str]
    tally: rules.Tally
    created_at: float
    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)
    failed_ids: list[str] = dataclasses.field(default_factory=list)
    outbox: dict[str, tuple[str, Due] | None] = dataclasses.field(default_factory=dict)  # None: pushed
    callbacks_ran: set[str] = dataclasses.field(default_factory=set)


class MemoryBatchRepository(BatchRepository):
    """The contract in one process: a dict and a lock (tests, the sync driver in a script)."""

    def __init__(self) -> None:
        self._batches: dict[str, _Batch] = {}
        self._lock = threading.Lock()

    def create(self, batch_id: str, description: dict[str, Any], jobs: int, *, owner: str) -> list[Due]:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is None:
                found = self._batches[batch_id] = _Batch(
                    copy.deepcopy(description), flags_of(description), rules.Tally(jobs, jobs, 0, jobs),
                    float(description.get("created_at") or time.time()))
                if jobs == 0:
                    for due in rules.settle_empty(found.tally, found.flags, time.time()):
                        found.outbox[due.key] = (owner, due)
            return self._owned(found, owner)

    def add_jobs(self, batch_id: str, count: int) -> bool:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is None:
                return False
            found.tally.total += count
            found.tally.pending += count
            found.tally.outstanding += count
            return True

    def record(self, batch_id: str, job_uuid: str, succeeded: bool, *, unrun: Sequence[str] = (),
               failure: str = "") -> list[Due] | None:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is None:
                return None
            effects = rules.record(found.tally, found.flags, bool(found.description.get("allow_failures")),
                                   found.outcomes, job_uuid, succeeded, unrun=unrun, failure=failure,
                                   now=time.time(), existing=found.outbox.keys())
            found.outcomes.update(effects.outcomes)
            found.failed_ids = [u for u in found.failed_ids if u not in effects.failed_removed]
            found.failed_ids += effects.failed_added
            for due in effects.due:
                found.outbox[due.key] = (job_uuid, due)
            return self._owned(found, job_uuid)

    @staticmethod
    def _owned(found: _Batch, owner: str) -> list[Due]:
        return in_push_order([entry[1] for entry in found.outbox.values() if entry is not None and entry[0] == owner])

    def mark_pushed(self, batch_id: str, keys: Sequence[str]) -> None:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is None:
                return
            for key in keys:
                if ":" in key:  # a per-job callback: its job's outcome never makes it due again
                    found.outbox.pop(key, None)
                else:
                    found.outbox[key] = None

    def callback_ran(self, batch_id: str, job_uuid: str) -> None:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is not None:
                found.callbacks_ran.add(job_uuid)

    def callbacks_ran(self, batch_id: str, job_uuids: Sequence[str]) -> set[str]:
        with self._lock:
            found = self._batches.get(batch_id)
            return set(job_uuids) & found.callbacks_ran if found is not None else set()

    def cancel(self, batch_id: str) -> bool:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is None or found.tally.cancelled_at is not None:
                return False
            found.tally.cancelled_at = time.time()
            return True

    def find(self, batch_id: str) -> BatchRecord | None:
        with self._lock:
            found = self._batches.get(batch_id)
            if found is None:
                return None
            t = found.tally
            return BatchRecord(batch_id, str(found.description.get("name", "")), t.total, t.pending, t.failed,
                               found.created_at, t.cancelled_at, t.finished_at, tuple(found.failed_ids))

    def description(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._batches.get(batch_id)
            return copy.deepcopy(found.description) if found is not None else None

    def ids(self) -> list[str]:
        with self._lock:
            return [i for i, _ in sorted(self._batches.items(), key=lambda kv: kv[1].created_at, reverse=True)]

    def delete(self, batch_id: str) -> bool:
        with self._lock:
            return self._batches.pop(batch_id, None) is not None
