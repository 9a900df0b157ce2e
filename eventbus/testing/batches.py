"""Batch fakes for your own tests (Laravel's ``Bus::fake`` batch assertions and ``withFakeBatch``).

Inside ``fake_queue()`` a batch's ``dispatch()`` stores nothing and pushes nothing: the fake
records the :class:`~eventbus.PendingBatch` and returns a :class:`BatchFake`::

    with fake_queue() as queue:
        import_csv(path)
    queue.assert_batched(lambda batch: batch.label == "import" and len(batch.jobs) == 10)
    queue.assert_batch_count(1)

To test what a job does to its batch, give it a fake one::

    job = ImportRow(7)
    batch = fake_batch(job)            # job.batch() now returns it
    job.handle()
    assert batch.cancelled and len(batch.added) == 1
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from typing import Any

from eventbus.batches import PendingBatch
from eventbus.batching.batch import BatchProgress, counted
from eventbus.payload import new_uuid


@dataclasses.dataclass
class BatchFake(BatchProgress):
    """A batch that records what is done to it; it reads like :class:`~eventbus.Batch`."""

    id: str = dataclasses.field(default_factory=new_uuid)
    name: str = ""
    total: int = 0
    pending: int = 0
    failed: int = 0
    failed_job_ids: tuple[str, ...] = ()
    connection: str = "fake"
    created_at: float = dataclasses.field(default_factory=time.time)
    cancelled_at: float | None = None
    finished_at: float | None = None
    #: Jobs given to :meth:`add`, in order (a list inside is a chain, as given).
    added: list[Any] = dataclasses.field(default_factory=list)
    deleted: bool = False

    def fresh(self) -> BatchFake:
        return self

    def cancel(self) -> None:
        if self.cancelled_at is None:
            self.cancelled_at = time.time()

    def delete(self) -> None:
        self.deleted = True

    def add(self, jobs: Iterable[Any]) -> list[str]:
        jobs = list(jobs)
        self.added.extend(jobs)
        self.total += counted(jobs)
        self.pending += counted(jobs)
        return [new_uuid() for _ in jobs]


def fake_batch(job: Any = None, **state: Any) -> BatchFake:
    """A :class:`BatchFake` (fields given as keywords); with ``job``, ``job.batch()`` returns it."""
    fake = BatchFake(**state)
    if job is not None:
        job._fake_batch = fake
    return fake


BatchPredicate = Callable[[PendingBatch], bool] | None


class BatchAssertions:
    """The batch half of ``fake_queue()``: records dispatched batches, asserts on them."""

    @property
    def batched(self) -> list[PendingBatch]:
        """Every batch dispatched while the fake was on, in order."""
        found: list[PendingBatch] = self.__dict__.setdefault("_batched", [])
        return found

    def record_batch(self, pending: PendingBatch) -> BatchFake:
        """Take a batch's dispatch: record it, store and push nothing."""
        self.batched.append(pending)
        jobs = counted(pending.jobs)
        return BatchFake(name=pending.label, total=jobs, pending=jobs,
                         connection=pending.connection or "fake")

    def batched_matching(self, predicate: BatchPredicate = None) -> list[PendingBatch]:
        return [b for b in self.batched if predicate is None or predicate(b)]

    def _batches_seen(self) -> str:
        return "; ".join(f"{b.label or '(no name)'} with {counted(b.jobs)} jobs" for b in self.batched) or "none"

    def assert_batched(self, predicate: BatchPredicate = None) -> None:
        """A batch was dispatched (one for which ``predicate(pending_batch)`` is true)."""
        if not self.batched_matching(predicate):
            what = "a batch matching the predicate" if predicate else "a batch"
            raise AssertionError(f"expected {what} to be dispatched; dispatched: {self._batches_seen()}")

    def assert_batch_count(self, count: int) -> None:
        if len(self.batched) != count:
            raise AssertionError(f"expected {count} batches, saw {len(self.batched)}: {self._batches_seen()}")

    def assert_nothing_batched(self) -> None:
        if self.batched:
            raise AssertionError(f"expected no batches, saw {self._batches_seen()}")
