"""The sync side of pushing: the runner of :mod:`eventbus.dispatching.plan`'s plans, the sync
verbs add-ons build on (:func:`push_payload`, :func:`push_command`, :func:`bulk_pushes`), and
what a finished job pushes (its chain's next step, its batch's callbacks) — which lives here
because a job run inline pushes in turn, through the same runner.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from eventbus.batching import outcomes as batch_outcomes
from eventbus.dispatching import plan
from eventbus.dispatching.collecting import BULK_FLUSH_EVERY, Collected, collecting_pushes, take_collected
from eventbus.dispatching.payloads import Destination, make_payload
from eventbus.dispatching.plan import Call, Defer, Emit, Plan, RunInline, Send, SendMany, T
from eventbus.dispatching.transactions import defer_if_in_transaction
from eventbus.errors import DeserializationError, FailedJobError
from eventbus.event_bus import bus
from eventbus.failed.base import describe_exception
from eventbus.payload import Payload
from eventbus.queue.base import Queue, QueueJob
from eventbus.runtime import connection as get_connection
from eventbus.runtime import settings
from eventbus.worker.processing import run_sync_job


def run(steps: Plan[T]) -> T:
    """Run a plan here: each effect is called in place, its result (or exception) handed back."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            value = perform(effect)
        except BaseException as exc:  # handed to the plan, which decides (it re-raises, as a rule)
            error = exc


def perform(effect: plan.Effect) -> Any:
    """One effect, made now in this thread."""
    if isinstance(effect, Send):
        send(effect.queue, effect.payload, effect.destination)
    elif isinstance(effect, Emit):
        bus.emit(effect.event)
    elif isinstance(effect, SendMany):
        effect.queue.bulk(effect.payloads, effect.queue_name)
    elif isinstance(effect, Call):
        return effect()
    elif isinstance(effect, RunInline):
        return run_inline(effect.queue, effect.raw, effect.queue_name)
    elif isinstance(effect, Defer):
        return push_after_commit(effect.payload, effect.destination, effect.command, debounce_s=effect.debounce_s)
    else:  # pragma: no cover - a plan yields only the effects above
        raise TypeError(f"not an effect: {effect!r}")
    return None


def send(queue: Queue, payload: Payload, destination: Destination) -> None:
    """The driver call itself: now, or after the destination's delay."""
    if destination.delay > 0:
        queue.later(destination.delay, payload, destination.queue)
    else:
        queue.push(payload, destination.queue)


# -- the sync verbs --------------------------------------------------------------------------------

def push_command(command: Any, destination: Destination, *, display_name: str | None = None,
                 chained: Sequence[dict[str, Any]] | None = None) -> str:
    """Serialize ``command`` and push it to ``destination``; emit ``JobQueued``. Returns the uuid."""
    payload = make_payload(command, display_name=display_name, chained=chained)
    return push_payload(payload, destination, command)


def push_payload(payload: Payload, destination: Destination, command: Any = None) -> str:
    """Push a built payload (:func:`eventbus.dispatching.plan.push_payload`)."""
    return run(plan.push_payload(payload, destination, command))


def push_unique(payload: Payload, destination: Destination, command: Any, *,
                debounce_s: float | None = None) -> str | None:
    """Push, first taking the payload's unique lock (:func:`eventbus.dispatching.plan.push_unique`)."""
    return run(plan.push_unique(payload, destination, command, debounce_s=debounce_s))


def push_collected(collected: Collected) -> None:
    """Push collected payloads grouped by connection and queue, one bulk call per group."""
    run(plan.push_collected(collected))


def push_after_commit(payload: Payload, destination: Destination, command: Any, *,
                      debounce_s: float | None = None) -> str | None:
    """Push when the enclosing transaction commits (an ``after_commit`` block, or a framework's
    transaction), or now when there is none. Returns the uuid; None when a push made now found
    a unique job's lock taken."""
    outcome: list[str | None] = [payload.uuid]

    def push() -> None:
        outcome[0] = push_unique(payload, destination, command, debounce_s=debounce_s)

    defer_if_in_transaction(push)
    return outcome[0]


@contextlib.contextmanager
def bulk_pushes() -> Iterator[None]:
    """Collect the pushes made inside the block and send them together, when it ends and every
    :data:`~eventbus.dispatching.collecting.BULK_FLUSH_EVERY` jobs before that.

    Every job due now (dispatches, queued listeners, queued notifications) goes out in one round
    trip per connection and queue (Redis: one script call per 500 jobs; SQL: one INSERT per
    500 rows) instead of one each; inline (``sync``) jobs run then too. Delayed jobs are pushed
    as they come. The collected jobs are pushed even when the block raises (they were
    dispatched); use ``after_commit`` for pushes that depend on a transaction. Blocks nest: the
    outermost one sends, including what the sending sets off (a ``JobQueued`` listener's or an
    inline job's own dispatches).
    """
    with collecting_pushes(flush_every=BULK_FLUSH_EVERY) as collected:
        try:
            yield
        finally:
            while collected:
                push_collected(take_collected(collected))


def push_raw(connection: str | None, raw: str, queue: str | None = None) -> str:
    """Push a stored payload as it is (``eventbus retry``); on an inline connection, run it now."""
    target = get_connection(connection)
    if target.runs_inline:
        return run_inline(target, raw, queue)
    return target.push_raw(raw, queue)


# -- what a finished job pushes --------------------------------------------------------------------

def dispatch_next_in_chain(chained: Sequence[dict[str, Any]]) -> None:
    """Push the next job of a chain, carrying the rest of the chain with it."""
    if not chained:
        return
    head, rest = chained[0], chained[1:]
    payload = Payload.from_dict(head["payload"]).replace(chained=rest, key=settings().key)
    push_payload(payload, Destination(**head["destination"]))


def push_steps(steps: Sequence[dict[str, Any]]) -> None:
    """Push ready-made ``{"destination", "payload"}`` steps (chain and batch callbacks) as they are."""
    for step in steps:
        push_payload(Payload.from_dict(step["payload"]), Destination(**step["destination"]))


def after_success(job: QueueJob) -> None:
    """A job succeeded (it is deleted after this): count it in its batch, and end its chain if
    it was the last step."""
    payload = job.payload()
    batch_outcomes.record_success(payload, push_steps)
    if not payload.chained and payload.chain_finally:
        push_steps(payload.chain_finally)


def ran_already(job: QueueJob) -> bool:
    """A job that came back ran to the end already (a batch callback whose batch noted its run)."""
    return batch_outcomes.ran_already(job.payload())


def after_failure(job: QueueJob, exc: BaseException) -> None:
    """A job failed for good (its record is written and it is deleted after this): count it
    (and the chain steps that will never run) in its batch, and push its chain's ``catch`` and
    ``finally_`` jobs.

    A failure that comes back to be recorded (a :class:`FailedJobError`: its failed store did
    not answer, see :func:`eventbus.worker.processing.record_earlier_failure`) pushed its chain's jobs
    when it failed; only its batch, whose steps may be repeated, hears of it again."""
    try:
        payload = job.payload()
    except DeserializationError:
        return  # an unreadable payload belongs to no batch or chain we could name
    failure = exc.description if isinstance(exc, FailedJobError) else describe_exception(exc)
    batch_outcomes.record_failure(payload, failure, push_steps)
    if not isinstance(exc, FailedJobError):
        push_steps([*payload.chain_catch, *payload.chain_finally])


def run_inline(queue: Queue, raw: str, queue_name: str | None) -> str:
    """Run a job in this process under the sync rules (exceptions propagate after failed())."""
    job = queue.inline_job(raw, queue_name)
    run_sync_job(job, continue_chain=dispatch_next_in_chain, bus=bus,
                 after_success=after_success, after_failure=after_failure)
    return str(job.job_id)
