"""A batch as its store has it now (:class:`Batch`), and adding jobs to it.

:func:`find` reads one; :meth:`Batch.add` counts more jobs, then pushes them. A list among the
jobs is a chain whose steps count one each; a batch among them (anything with
``as_chain_step``) is a chain of one step, done when that batch has finished.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from eventbus import registry
from eventbus.batching.records import BatchRecord, split_id
from eventbus.batching.stores import repository
from eventbus.dispatching import bulk_pushes, push_steps
from eventbus.dispatching.chains import PendingChain, step_for
from eventbus.errors import EventBusError
from eventbus.runtime import settings

Step = dict[str, Any]


class BatchProgress:
    """What a batch's counts and times say: shared by :class:`Batch` and the test fake, which
    must read alike."""

    id: str
    connection: str
    total: int
    pending: int
    failed: int
    cancelled_at: float | None
    finished_at: float | None

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.connection}"

    @property
    def processed(self) -> int:
        """Jobs that have succeeded."""
        return self.total - self.pending

    @property
    def progress(self) -> float:
        """Percent of the jobs that have succeeded (0-100)."""
        return 100.0 * self.processed / self.total if self.total else 100.0

    @property
    def cancelled(self) -> bool:
        return self.cancelled_at is not None

    @property
    def finished(self) -> bool:
        return self.finished_at is not None

    @property
    def has_failures(self) -> bool:
        return self.failed > 0


@registry.serializable
@dataclasses.dataclass(frozen=True)
class Batch(BatchProgress):
    """A batch as it is now (re-read it with :meth:`fresh`)."""

    id: str
    connection: str
    name: str
    total: int
    pending: int
    failed: int
    created_at: float
    cancelled_at: float | None = None
    finished_at: float | None = None
    #: The uuids of the jobs that failed for good, in order (steps of a chain that will never
    #: run because an earlier step failed count as failed too).
    failed_job_ids: tuple[str, ...] = ()

    @classmethod
    def of(cls, record: BatchRecord, connection: str) -> Batch:
        return cls(record.id, connection, record.name, record.total, record.pending, record.failed,
                   record.created_at, record.cancelled_at, record.finished_at, record.failed_job_ids)

    def fresh(self) -> Batch:
        found = find(self.ref)
        if found is None:
            raise EventBusError(f"batch {self.id} is gone (deleted, pruned or expired)")
        return found

    def cancel(self) -> None:
        """Cancel the batch, from one of its jobs or from anywhere else: jobs still queued that
        check ``self.batch().cancelled`` (or use ``SkipIfBatchCancelled``) stop early, and
        ``then`` will not run."""
        repository(self.connection).cancel(self.id)

    def delete(self) -> None:
        """Remove the batch from its store; its jobs still queued then run outside any batch."""
        repository(self.connection).delete(self.id)

    def add(self, jobs: Iterable[Any]) -> list[str]:
        """Add jobs to the batch (from one of its jobs, before it finishes); their uuids."""
        description = repository(self.connection).description(self.id) or {}
        return add_jobs(self.ref, list(jobs), description.get("queue"), self.connection)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "failed_job_ids": list(self.failed_job_ids),
                "processed": self.processed, "progress": self.progress, "cancelled": self.cancelled,
                "finished": self.finished}


def find(ref: str) -> Batch | None:
    """The batch ``id@connection`` (or ``id`` on the default connection), or None."""
    batch_id, connection = split_id(ref)
    connection = connection or settings().default
    record = repository(connection).find(batch_id)
    return None if record is None else Batch.of(record, connection)


def all_batches(connection: str | None = None) -> list[Batch]:
    """The batches of a connection, newest first."""
    connection = connection or settings().default
    found = (find(f"{batch_id}@{connection}") for batch_id in repository(connection).ids())
    return [b for b in found if b is not None]


def member_steps(jobs: Iterable[Any], ref: str, queue: str | None, connection: str) -> list[Step]:
    """Each job of a batch as a ready-made step: a list is a chain, a batch a one-step chain."""
    steps = []
    for job in jobs:
        if isinstance(job, (list, tuple)) or callable(getattr(job, "as_chain_step", None)):
            chain = PendingChain(list(job) if isinstance(job, (list, tuple)) else [job])
            _, payload, destination = chain.first_payload(queue, connection, batch_id=ref)
            steps.append({"destination": destination.to_dict(), "payload": payload.to_dict()})
        else:
            steps.append(step_for(job, queue, connection, batch_id=ref))
    return steps


def counted(jobs: Iterable[Any]) -> int:
    """How many jobs a batch counts: each step of a chain, each job, each nested batch once."""
    return sum(len(job) if isinstance(job, (list, tuple)) else 1 for job in jobs)


def add_jobs(ref: str, jobs: list[Any], queue: str | None, connection: str) -> list[str]:
    """Count, then push, jobs (a list inside is a chain) into the batch ``ref``."""
    batch_id, _ = split_id(ref)
    steps = member_steps(jobs, ref, queue, connection)
    if not repository(connection).add_jobs(batch_id, counted(jobs)):
        raise EventBusError(f"batch {batch_id} is gone (deleted, pruned or expired): cannot add jobs to it")
    with bulk_pushes():
        push_steps(steps)
    return [str(step["payload"]["uuid"]) for step in steps]
