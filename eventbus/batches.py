"""Batches: run a group of jobs and act when all of them are done (Laravel's ``Bus::batch``).

::

    batch = (eventbus.batch([ImportRow(1), ImportRow(2), [Resize(3), Publish(3)]])
             .name("import 42").then(ImportDone(42)).catch(AlertOps(42)).finally_(Cleanup(42))
             .allow_failures().dispatch())
    batch.id, batch.total, batch.pending, batch.failed, batch.progress, batch.cancelled

A list inside the list is a chain (its steps count one each). Callbacks are registered jobs
(pushed once, with the batch available as ``self.batch()``) or functions registered with
``@listener`` (called with the :class:`Batch` in a worker). ``then`` runs when every job has
succeeded, ``catch`` at the first job that fails for good, ``finally_`` when every job has
finished either way. Without ``allow_failures()`` the first failure cancels the batch: jobs
still queued see ``self.batch().cancelled`` (or use the ``SkipIfBatchCancelled`` middleware).
Counts live in the state store of the batch's connection (Redis or SQL).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from eventbus import registry
from eventbus.batch_store import CALLBACK_MARK, BatchStore, split_id
from eventbus.chains import PendingChain, step_for
from eventbus.dispatching import Destination, bulk_pushes, continue_chain_after, push_payload, push_steps
from eventbus.errors import ConfigurationError, EventBusError
from eventbus.middleware.pipeline import Next
from eventbus.payload import Payload
from eventbus.runtime import settings

CALLBACKS = ("then", "catch", "finally")


@registry.serializable
@dataclasses.dataclass(frozen=True)
class Batch:
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

    def fresh(self) -> Batch:
        found = find(self.ref)
        if found is None:
            raise EventBusError(f"batch {self.id} is gone (pruned or expired)")
        return found

    def cancel(self) -> None:
        """Cancel the batch: queued jobs that check ``self.batch().cancelled`` stop early."""
        BatchStore.of(self.connection).cancel(self.id)

    def add(self, jobs: Iterable[Any]) -> list[str]:
        """Add jobs to the batch (from one of its jobs, before it finishes); their uuids."""
        description = BatchStore.of(self.connection).description(self.id) or {}
        return add_jobs(self.ref, list(jobs), description.get("queue"), self.connection)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "processed": self.processed, "progress": self.progress,
                "cancelled": self.cancelled, "finished": self.finished}


class PendingBatch:
    """A batch being defined; :meth:`dispatch` pushes its jobs."""

    def __init__(self, jobs: Sequence[Any]) -> None:
        self.jobs = list(jobs)
        self.callbacks: dict[str, list[Any]] = {name: [] for name in CALLBACKS}
        self.label = ""
        self.allows_failures = False
        self.queue: str | None = None
        self.connection: str | None = None

    def then(self, *callbacks: Any) -> PendingBatch:
        """When every job has succeeded."""
        return self._add("then", callbacks)

    def catch(self, *callbacks: Any) -> PendingBatch:
        """At the first job that fails for good."""
        return self._add("catch", callbacks)

    def finally_(self, *callbacks: Any) -> PendingBatch:
        """When every job has finished, succeeded or failed."""
        return self._add("finally", callbacks)

    def _add(self, kind: str, callbacks: Iterable[Any]) -> PendingBatch:
        for callback in callbacks:
            check_callback(callback)
            self.callbacks[kind].append(callback)
        return self

    def name(self, label: str) -> PendingBatch:
        self.label = label
        return self

    def allow_failures(self, allow: bool = True) -> PendingBatch:
        """Keep going after a failure instead of cancelling the batch."""
        self.allows_failures = allow
        return self

    def on_queue(self, queue: str) -> PendingBatch:
        self.queue = queue
        return self

    def on_connection(self, connection: str) -> PendingBatch:
        self.connection = connection
        return self

    def as_chain_step(self, continuation: list[dict[str, Any]], catch: list[dict[str, Any]],
                      finally_: list[dict[str, Any]], queue: str | None,
                      connection: str | None) -> ChainedBatch:
        """This batch as a step of a chain: a job that dispatches it; ``continuation`` (the rest
        of the chain) is pushed when the batch has finished without being cancelled; the
        chain's ``catch``/``finally_`` jobs are pushed if it was."""
        return ChainedBatch(self, continuation, catch, finally_, queue, connection)

    def dispatch(self) -> Batch:
        """Store the batch, then push its jobs (counted first, so none can finish it early)."""
        return self.dispatch_with({})

    def dispatch_with(self, extra: dict[str, Any]) -> Batch:
        """Dispatch with more in the batch's description (a chain's continuation)."""
        connection = self.connection or settings().default
        batch_id = str(uuid.uuid4())
        ref = f"{batch_id}@{connection}"
        store = BatchStore.of(connection)
        store.create(batch_id, {
            "id": batch_id, "name": self.label, "created_at": time.time(), "queue": self.queue,
            "connection": connection, "allow_failures": self.allows_failures,
            "callbacks": {kind: [callback_step(c, ref, self.queue, connection) for c in items]
                          for kind, items in self.callbacks.items()},
            **extra,
        })
        if not self.jobs:
            store.add_jobs(batch_id, 0)
            settle_empty(ref)
        else:
            add_jobs(ref, self.jobs, self.queue, connection)
        found = find(ref)
        assert found is not None
        return found


def batch(jobs: Sequence[Any]) -> PendingBatch:
    """``eventbus.batch([...]).then(...).dispatch()``; see the module docstring."""
    return PendingBatch(jobs)


def add_jobs(ref: str, jobs: list[Any], queue: str | None, connection: str) -> list[str]:
    """Count, then push, jobs (a list inside is a chain) into the batch ``ref``."""
    batch_id, _ = split_id(ref)
    steps = sum(len(job) if isinstance(job, (list, tuple)) else 1 for job in jobs)
    BatchStore.of(connection).add_jobs(batch_id, steps)
    uuids = []
    with bulk_pushes():
        for job in jobs:
            if isinstance(job, (list, tuple)):
                first, payload, destination = PendingChain(job).first_payload(queue, connection, batch_id=ref)
            else:
                step = step_for(job, queue, connection, batch_id=ref)
                payload = _payload(step)
                destination = Destination(**step["destination"])
            uuids.append(push_payload(payload, destination))
    return uuids


def _payload(step: dict[str, Any]) -> Payload:
    return Payload.from_dict(step["payload"])


def settle_empty(ref: str) -> None:
    """An empty batch is finished at once: ``then`` and ``finally`` run."""
    batch_id, connection = split_id(ref)
    store = BatchStore.of(connection)
    description = store.description(batch_id) or {}
    store.state.add(store.key(batch_id, "finished_at"), repr(time.time()))
    for kind in ("then", "finally"):
        if store.state.add(store.key(batch_id, "fired", kind), "1"):
            push_steps(description.get("callbacks", {}).get(kind, []))
    continue_chain_after(store, batch_id, description)


def find(ref: str) -> Batch | None:
    """The batch ``id@connection`` (or ``id`` on the default connection), or None."""
    batch_id, connection = split_id(ref)
    connection = connection or settings().default
    store = BatchStore.of(connection)
    description = store.description(batch_id)
    if description is None:
        return None
    counts = store.counts(batch_id)
    return Batch(id=batch_id, connection=connection, name=description.get("name", ""),
                 total=counts.total, pending=counts.pending, failed=counts.failed,
                 created_at=float(description.get("created_at", 0.0)),
                 cancelled_at=store.stamp(batch_id, "cancelled_at"),
                 finished_at=store.stamp(batch_id, "finished_at"))


def all_batches(connection: str | None = None) -> list[Batch]:
    """The batches of a connection, newest first."""
    connection = connection or settings().default
    found = (find(f"{batch_id}@{connection}") for batch_id in BatchStore.of(connection).ids())
    return [b for b in found if b is not None]


def prune(older_than_s: float, connection: str | None = None) -> int:
    """Remove finished (or cancelled) batches older than ``older_than_s`` seconds; how many."""
    cutoff = time.time() - older_than_s
    removed = 0
    for found in all_batches(connection):
        ended = found.finished_at or found.cancelled_at
        if ended is not None and ended <= cutoff:
            BatchStore.of(found.connection).forget(found.id)
            removed += 1
    return removed


# -- callbacks ------------------------------------------------------------------------------

def check_callback(callback: Any) -> None:
    """A callback is a registered job instance or a function registered with ``@listener``."""
    if isinstance(callback, type) or not callable(callback) and not registry.is_registered(
            registry.dotted_name(type(callback))):
        raise ConfigurationError(f"a batch callback must be a job instance or a @listener function, "
                                 f"not {callback!r}")
    if callable(callback) and not hasattr(callback, "handle"):
        registry.resolve_listener(registry.dotted_name(callback))  # refuses unregistered functions


def callback_step(callback: Any, ref: str, queue: str | None, connection: str) -> dict[str, Any]:
    """A callback as a ready-made job that can read its batch but is not counted in it."""
    job = callback if hasattr(callback, "handle") else CallBatchCallback(registry.dotted_name(callback))
    return step_for(job, queue, connection, batch_id=ref + CALLBACK_MARK)


@registry.serializable
class CallBatchCallback:
    """Calls a ``@listener`` function with the batch, in a worker."""

    _queue_job: Any = None

    def __init__(self, listener: str) -> None:
        self.listener = listener
        self.display_name = f"{listener} (batch callback)"

    def handle(self) -> None:
        entry = registry.resolve_listener(self.listener)
        if isinstance(entry.target, type) or entry.method:
            raise EventBusError(f"batch callback {self.listener} must be a function")
        ref = self._queue_job.payload().batch_id if self._queue_job is not None else None
        entry.target(find(ref) if ref else None)


@registry.serializable
class ChainedBatch:
    """A chain step that dispatches a batch; the chain goes on when the batch has finished.

    Its state is the batch's definition (jobs and callbacks as tagged JSON, like any job's) and
    the rest of the chain as ready-made payloads.
    """

    _queue_job: Any = None
    continues_chain = True  # the chain goes on from its batch, not from this job

    def __init__(self, pending: PendingBatch, continuation: list[dict[str, Any]],
                 catch: list[dict[str, Any]], finally_: list[dict[str, Any]], queue: str | None,
                 connection: str | None) -> None:
        self.jobs = pending.jobs
        self.callbacks = pending.callbacks
        self.label = pending.label
        self.allows_failures = pending.allows_failures
        self.batch_queue = pending.queue or queue
        self.batch_connection = pending.connection or connection
        self.continuation = continuation
        self.chain_catch = catch
        self.chain_finally = finally_
        self.display_name = f"batch {pending.label or ''} (chain step)".replace("  ", " ")

    def handle(self) -> None:
        pending = PendingBatch(self.jobs)
        pending.callbacks, pending.label = self.callbacks, self.label
        pending.allows_failures, pending.queue = self.allows_failures, self.batch_queue
        pending.connection = self.batch_connection
        pending.dispatch_with({"continue_chain": self.continuation, "chain_catch": self.chain_catch,
                               "chain_finally": self.chain_finally})


class SkipIfBatchCancelled:
    """Middleware: a batched job whose batch was cancelled is skipped (counted as done)."""

    def handle(self, job: Any, next: Next) -> Any:
        current = job.batch() if callable(getattr(job, "batch", None)) else None
        if current is not None and current.cancelled:
            return None
        return next(job)
