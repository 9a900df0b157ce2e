"""Batches: run a group of jobs and act when all of them are done (Laravel's ``Bus::batch``).

::

    batch = (eventbus.batch([ImportRow(1), ImportRow(2), [Resize(3), Publish(3)]])
             .name("import 42").before(Prepare(42)).progress(Tick(42)).then(ImportDone(42))
             .catch(AlertOps(42)).finally_(Cleanup(42)).allow_failures().dispatch())
    batch.id, batch.total, batch.pending, batch.failed, batch.progress, batch.failed_job_ids

A list inside the list is a chain (its steps count one each); a batch inside a chain, at any
depth, is a step that ends when its own jobs have. Callbacks are registered jobs (pushed, with
the batch available as ``self.batch()``) or functions registered with ``@listener`` (called in a
worker with the :class:`Batch`, and the failure as a :class:`~eventbus.FailedJobError` when they
take a second argument). ``before`` runs at dispatch, in the dispatching process, once the batch
is stored; ``progress`` after each job that succeeds (and each that fails, when failures are
allowed); ``then`` when every job has succeeded; ``catch`` at the first job that fails for good;
``finally_`` when every job has finished either way; ``allow_failures(callback)`` calls back at
each failure. Without ``allow_failures()`` the first failure cancels the batch: jobs still
queued see ``self.batch().cancelled`` (or use the ``SkipIfBatchCancelled`` middleware).

Each outcome is recorded in one atomic step of the connection's batch store and each callback is
pushed once, however workers die (:mod:`eventbus.batching.outcomes`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from typing import Any

from eventbus import registry
from eventbus.batching.batch import Batch, all_batches, counted, find, member_steps
from eventbus.batching.callbacks import callback_step, check_callback, run_before_callbacks
from eventbus.batching.outcomes import complete
from eventbus.batching.stores import repository
from eventbus.dispatching import bulk_pushes, condition_holds, push_interceptors, push_steps
from eventbus.errors import EventBusError
from eventbus.event_bus import bus
from eventbus.events import BatchDispatched
from eventbus.middleware.pipeline import Next
from eventbus.payload import new_uuid
from eventbus.runtime import settings

__all__ = ["Batch", "BatchPlan", "ChainedBatch", "PendingBatch", "SkipIfBatchCancelled", "all_batches", "batch",
           "find", "prune"]

Step = dict[str, Any]
#: The callbacks a batch can have, in the order a definition lists them.
CALLBACKS = ("before", "progress", "then", "catch", "finally", "failure")


class PendingBatch:
    """A batch being defined; :meth:`dispatch` stores it and pushes its jobs."""

    def __init__(self, jobs: Sequence[Any]) -> None:
        self.jobs = list(jobs)
        self.callbacks: dict[str, list[Any]] = {name: [] for name in CALLBACKS}
        self.label = ""
        self.allows_failures = False
        self.queue: str | None = None
        self.connection: str | None = None

    def before(self, *callbacks: Any) -> PendingBatch:
        """At dispatch, once the batch is stored, before its jobs are pushed (run here, now)."""
        return self._add("before", callbacks)

    def progress(self, *callbacks: Any) -> PendingBatch:
        """After each job that succeeds (and each that fails, when failures are allowed)."""
        return self._add("progress", callbacks)

    def then(self, *callbacks: Any) -> PendingBatch:
        """When every job has succeeded (not when the batch was cancelled)."""
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

    def allow_failures(self, allow: Any = True) -> PendingBatch:
        """Keep going after a failure instead of cancelling the batch. Given callbacks (one, or
        a list) instead of a bool, allow failures and call them back at each one."""
        if isinstance(allow, bool):
            self.allows_failures = allow
            return self
        self.allows_failures = True
        return self._add("failure", allow if isinstance(allow, (list, tuple)) else [allow])

    def on_queue(self, queue: str) -> PendingBatch:
        self.queue = queue
        return self

    def on_connection(self, connection: str) -> PendingBatch:
        self.connection = connection
        return self

    def as_chain_step(self, continuation: list[Step], catch: list[Step], finally_: list[Step],
                      queue: str | None, connection: str | None) -> ChainedBatch:
        """This batch as a step of a chain: a job that dispatches it. ``continuation`` (the rest of
        the chain) is pushed when the batch has finished without being cancelled; the chain's
        ``catch``/``finally_`` jobs are pushed if it was."""
        return ChainedBatch(self.plan(queue, connection, continue_chain=continuation, chain_catch=catch,
                                      chain_finally=finally_))

    def plan(self, queue: str | None = None, connection: str | None = None, **extra: Any) -> BatchPlan:
        """The batch made ready: its id, and its jobs and callbacks as ready-made payloads."""
        connection = self.connection or connection or settings().default
        queue = self.queue or queue
        batch_id = new_uuid()
        ref = f"{batch_id}@{connection}"
        description = {
            "id": batch_id, "name": self.label, "queue": queue, "connection": connection,
            "allow_failures": self.allows_failures,
            "callbacks": {kind: [callback_step(c, ref, queue, connection, kind) for c in items]
                          for kind, items in self.callbacks.items() if items},
            **extra,
        }
        return BatchPlan(batch_id, connection, description, member_steps(self.jobs, ref, queue, connection),
                         counted(self.jobs))

    def dispatch(self) -> Batch:
        """Store the batch, run its ``before`` callbacks, push its jobs, emit ``BatchDispatched``."""
        for fake in push_interceptors:
            record = getattr(fake, "record_batch", None)
            if callable(record):
                found: Batch = record(self)
                return found
        return self.plan().dispatch()

    def dispatch_if(self, condition: Any) -> Batch | None:
        """:meth:`dispatch` when ``condition`` is true (a callable is called first); else None."""
        return self.dispatch() if condition_holds(condition) else None

    def dispatch_unless(self, condition: Any) -> Batch | None:
        """:meth:`dispatch` unless ``condition`` is true (a callable is called first)."""
        return None if condition_holds(condition) else self.dispatch()


def batch(jobs: Sequence[Any]) -> PendingBatch:
    """``eventbus.batch([...]).then(...).dispatch()``; see the module docstring."""
    return PendingBatch(jobs)


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """A batch ready to be stored and pushed: everything in it is JSON, so a chain step can
    carry it (:class:`ChainedBatch`) and dispatching it twice dispatches it once."""

    id: str
    connection: str
    description: dict[str, Any]
    members: list[Step]
    #: The jobs it counts: each step of a chain counts one.
    count: int

    @property
    def ref(self) -> str:
        return f"{self.id}@{self.connection}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def dispatch(self, parent: dict[str, Any] | None = None) -> Batch:
        """Store the batch, run ``before``, push the jobs, emit ``BatchDispatched``.

        A push that fails deletes the batch again and raises (Laravel's order). Dispatching a
        plan stored already (a chain step whose job runs again after its worker died) pushes the
        same jobs under the same uuids, and neither runs ``before`` nor deletes anything."""
        store = repository(self.connection)
        stored = store.find(self.id) is not None
        description = {**self.description, "created_at": time.time(), **({"parent": parent} if parent else {})}
        due = store.create(self.id, description, self.count, owner=self.id)
        if not stored:
            run_before_callbacks(self.description.get("callbacks", {}).get("before", []))
        try:
            with bulk_pushes():
                push_steps(self.members)
        except BaseException:
            if not stored:
                store.delete(self.id)
            raise
        complete(store, self.id, due, push_steps)  # an empty batch: finished already
        found = find(self.ref)
        if found is None:
            raise EventBusError(f"batch {self.id} vanished while it was dispatched")
        bus.emit(BatchDispatched(found))
        return found


def prune(older_than_s: float | None = None, connection: str | None = None, *,
          unfinished_older_than_s: float | None = None, cancelled_older_than_s: float | None = None) -> int:
    """Remove batches; how many (``eventbus prune-batches``, Laravel's ``queue:prune-batches``).

    ``older_than_s``: finished batches that finished longer ago than that;
    ``unfinished_older_than_s``: batches still unfinished, created longer ago;
    ``cancelled_older_than_s``: cancelled batches, created longer ago."""
    now = time.time()
    removed = 0
    for found in all_batches(connection):
        if (older_than_s is not None and found.finished_at is not None and found.finished_at <= now - older_than_s) \
                or (unfinished_older_than_s is not None and found.finished_at is None
                    and found.created_at <= now - unfinished_older_than_s) \
                or (cancelled_older_than_s is not None and found.cancelled_at is not None
                    and found.created_at <= now - cancelled_older_than_s):
            removed += repository(found.connection).delete(found.id)
    return removed


@registry.serializable
class ChainedBatch:
    """A chain step that dispatches a batch; the chain goes on when the batch has finished.

    Its state is the batch made ready (:class:`BatchPlan`, plain JSON at any depth of nesting),
    with the rest of the chain in its description. Inside an outer batch, this step's own
    outcome there is the inner batch's: recorded when the inner batch finishes, not when this
    job has dispatched it.
    """

    _queue_job: Any = None
    continues_chain = True  # the chain goes on from its batch, not from this job

    def __init__(self, plan: BatchPlan) -> None:
        self.plan = plan.to_dict()
        label = plan.description.get("name") or ""
        self.display_name = f"batch {label} (chain step)".replace("  ", " ")

    def handle(self) -> None:
        plan = BatchPlan(**self.plan)
        payload = self._queue_job.payload() if self._queue_job is not None else None
        parent = None
        if payload is not None and payload.batch_id:
            parent = {"ref": payload.batch_id, "uuid": payload.uuid}
        plan.dispatch(parent)


class SkipIfBatchCancelled:
    """Middleware: a batched job whose batch was cancelled is skipped (counted as done)."""

    def handle(self, job: Any, next: Next) -> Any:
        current = job.batch() if callable(getattr(job, "batch", None)) else None
        if current is not None and current.cancelled:
            return None
        return next(job)
