"""The verbs an app calls: ``dispatch`` and its family (``dispatch_many``, ``dispatch_if``,
``dispatch_unless``, ``dispatch_sync``, ``emit_many``), each one :mod:`~eventbus.dispatching.plan`
run by :func:`~eventbus.dispatching.pushing.run`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from eventbus.dispatching import plan
from eventbus.dispatching.payloads import Destination
from eventbus.dispatching.pushing import bulk_pushes, push_command, run
from eventbus.event_bus import bus
from eventbus.queue.base import Delay


def dispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
             connection: str | None = None, after_commit: bool | None = None) -> str | None:
    """Push ``job`` to its connection and queue (arguments win over its class options).

    Returns the job's uuid, or None when the job is unique (``unique = True``) and another one
    like it is still waiting or running (``JobNotQueuedAsDuplicate`` is emitted). On the
    ``sync`` connection the job runs before this returns. With ``after_commit`` (or the job's
    own ``after_commit = True``) a push made inside an ``eventbus.after_commit()`` block waits
    for the block to end without an exception (a unique job's lock is then taken at that time).
    """
    return run(plan.dispatch(job, queue=queue, delay=delay, connection=connection, after_commit=after_commit))


def dispatch_many(jobs: Iterable[Any], *, queue: str | None = None, connection: str | None = None,
                  after_commit: bool | None = None) -> list[str]:
    """Push many jobs in one round trip per connection and queue (per 500 jobs: see
    :func:`bulk_pushes`); return their uuids in order (a unique job that was dropped as a
    duplicate has none).

    Each job keeps its own options (its own queue and connection win unless given here, its own
    delay); the arguments apply as they would to :func:`dispatch`.
    """
    uuids: list[str] = []
    with bulk_pushes():
        for job in jobs:
            ready = plan.prepare(job, queue=queue, connection=connection, after_commit=after_commit)
            if plan.collect(ready, job):  # the common case, without a plan to run
                uuids.append(ready.payload.uuid)
                continue
            uuid = run(plan.push_prepared(ready, job))
            if uuid is not None:
                uuids.append(uuid)
    return uuids


def emit_many(events: Iterable[Any]) -> list[list[Any]]:
    """Emit each event in order; the queued listeners' jobs go out in bulk (:func:`bulk_pushes`).

    Sync listeners run as with :func:`eventbus.emit`; returns each event's sync results.
    """
    with bulk_pushes():
        return [bus.emit(event) for event in events]


def dispatch_if(condition: Any, job: Any, **options: Any) -> str | None:
    """``dispatch(job, ...)`` when ``condition`` is true (a callable is called first); else None."""
    return dispatch(job, **options) if condition_holds(condition) else None


def dispatch_unless(condition: Any, job: Any, **options: Any) -> str | None:
    """``dispatch(job, ...)`` unless ``condition`` is true (a callable is called first)."""
    return None if condition_holds(condition) else dispatch(job, **options)


def condition_holds(condition: Any) -> bool:
    """Whether a ``dispatch_if``/``dispatch_unless`` condition is true (a callable is called first):
    the one rule of the jobs', chains' and batches' conditional dispatches."""
    return bool(condition() if callable(condition) else condition)


def dispatch_sync(job: Any) -> Any:
    """Run ``job`` now in this process, as the sync driver would (failed() on exception)."""
    return push_command(job, Destination.of(job, connection="sync", delay=0))
