"""How a push goes, written once for the sync verbs and the async ones.

A push is a few decisions (held by a bulk block? taken by a fake? an inline connection? a
unique lock taken? a trace context to add?) around a few calls that wait (a driver's push, a
store's lock, a listener of ``JobQueued``). The decisions are made here, in generator
functions (*plans*) that yield each waiting call as an :data:`Effect` and get its result back;
the waiting is left to whoever runs the plan: :func:`eventbus.dispatching.pushing.run` calls
each effect in place, :func:`eventbus.dispatching.apush.arun` awaits the driver's async push
and runs the other blocking calls on a worker thread, so an event loop never stops. The sync
and async verbs cannot drift apart: there is one order of steps, one set of rules.

Exceptions go back into the plan where the effect was yielded (``generator.throw``), so a plan's
``try``/``except`` around a push (a unique lock given back when the push failed) works for both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Sequence
from typing import Any, TypeVar

from eventbus import runtime
from eventbus.dispatching import debounce, unique
from eventbus.dispatching.collecting import Collected, block_taking, take_collected
from eventbus.dispatching.payloads import (
    Destination,
    command_name,
    holds_until_commit,
    make_payload,
    option,
    refuse_timeout_beyond_reservation,
    with_headers,
)
from eventbus.event_bus import bus
from eventbus.events import JobNotQueuedAsDuplicate, JobQueued
from eventbus.payload import Payload
from eventbus.queue.base import Delay, Queue
from eventbus.runtime import connection as get_connection
from eventbus.state import StateStore

T = TypeVar("T")

#: A fake queue (eventbus.testing.fake_queue) takes pushes here instead of a driver (public and
#: module-level: the fake installs and removes itself, around a test).
push_interceptors: list[Callable[[Any, Destination, Payload], bool]] = []


# -- effects: the calls that wait -----------------------------------------------------------------

@dataclasses.dataclass(slots=True)
class Call:
    """A plain call that may block (a store, an interceptor, an inline job): made in place by
    the sync runner, on a worker thread by the async one."""

    function: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __call__(self) -> Any:
        return self.function(*self.args, **self.kwargs)


@dataclasses.dataclass(slots=True)
class Send:
    """The driver's push of one payload, now or after the destination's delay."""

    queue: Queue
    payload: Payload
    destination: Destination


@dataclasses.dataclass(slots=True)
class SendMany:
    """The driver's bulk push of payloads due now, to one queue."""

    queue: Queue
    payloads: Sequence[Payload]
    queue_name: str | None


@dataclasses.dataclass(slots=True)
class Emit:
    """An event for the bus (``JobQueued``, ``JobNotQueuedAsDuplicate``): the sync runner emits
    it, the async one awaits async listeners too."""

    event: Any


@dataclasses.dataclass(slots=True)
class RunInline:
    """Run a job here and now (an inline, ``sync``, connection) under the worker's rules."""

    queue: Queue
    raw: str
    queue_name: str | None


@dataclasses.dataclass(slots=True)
class Defer:
    """Push when the enclosing transaction commits, or now when there is none
    (:func:`eventbus.dispatching.pushing.push_after_commit`)."""

    payload: Payload
    destination: Destination
    command: Any
    debounce_s: float | None


Effect = Call | Send | SendMany | Emit | RunInline | Defer
Plan = Generator[Effect, Any, T]


# -- plans -----------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class Prepared:
    """A job made ready to push: every option read (each read once: an option may be a method)
    and its payload built. Nothing has waited or changed anywhere yet."""

    payload: Payload
    destination: Destination
    window: float | None
    held: bool

    @property
    def plain(self) -> bool:
        """Pushed as is: not debounced, not unique, not held until a transaction commits."""
        return self.window is None and self.payload.unique is None and not self.held


def prepare(job: Any, *, queue: str | None = None, delay: Delay | None = None,
            connection: str | None = None, after_commit: bool | None = None) -> Prepared:
    """Read ``job``'s options and build its payload (:func:`dispatch`'s first half)."""
    window = debounce.window_of(job)
    if window is not None and delay is None and option(job, "delay") is None:
        delay = window  # a debounced job waits out its window before it may run
    destination = Destination.of(job, queue=queue, delay=delay, connection=connection)
    name = command_name(job)
    lock = unique.lock_for(job, name, destination.connection)
    payload = make_payload(job, unique=lock, name=name)
    return Prepared(payload, destination, window, holds_until_commit(job, after_commit))


def dispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
             connection: str | None = None, after_commit: bool | None = None) -> Plan[str | None]:
    """:func:`eventbus.dispatch`: build the payload, then push it now or when the transaction
    commits; the uuid, or None for a unique job dropped as a duplicate."""
    ready = prepare(job, queue=queue, delay=delay, connection=connection, after_commit=after_commit)
    return (yield from push_prepared(ready, job))


def push_prepared(ready: Prepared, job: Any) -> Plan[str | None]:
    """:func:`dispatch`'s second half: push a prepared job now, or when the transaction commits."""
    if ready.held:
        deferred: str | None = yield Defer(ready.payload, ready.destination, job, ready.window)
        return deferred
    return (yield from push_unique(ready.payload, ready.destination, job, debounce_s=ready.window))


def collect(ready: Prepared, job: Any) -> bool:
    """Add a plain prepared job to the enclosing bulk block's list, in place, when the block
    takes it and has room: what :func:`push_prepared` comes to for such a job, without running a
    plan (a bulk push of plain jobs spends a quarter of its time on running the plans). False
    when the job needs its plan (then nothing was done)."""
    if not ready.plain:
        return False
    buffer = block_taking(ready.destination)
    if buffer is None or buffer.full:
        return False
    buffer.items.append((ready.payload, ready.destination, job))
    return True


def push_payload(payload: Payload, destination: Destination, command: Any = None) -> Plan[str]:
    """Push a built payload (fakes see it first); on an inline connection, run it now.

    Inside a ``bulk_pushes`` block a push that is due now is collected instead, to go out with
    the others in one round trip per queue when the block ends; a block holding ``flush_every``
    jobs first sends those, here, before this one joins it: a send that fails then raises from
    this dispatch, and this job was not queued."""
    buffer = block_taking(destination)
    if buffer is not None:
        if buffer.full:
            yield from push_collected(take_collected(buffer.items))
        buffer.items.append((payload, destination, command))
        return payload.uuid
    if push_interceptors and (yield Call(intercepted, (command, destination, payload))):
        return payload.uuid
    queue = get_connection(destination.connection)
    if queue.runs_inline:
        yield RunInline(queue, payload.to_json(), destination.queue)
        return payload.uuid
    refuse_timeout_beyond_reservation(queue, payload)
    tracer = runtime.push_tracer()
    if tracer is not None:
        with tracer(destination.connection, queue.queue_name(destination.queue), payload.uuid) as trace_headers:
            if trace_headers:
                payload = with_headers(payload, trace_headers)
            yield Send(queue, payload, destination)
    else:
        yield Send(queue, payload, destination)
    if bus.wants(JobQueued):
        yield Emit(JobQueued(destination.connection, queue.queue_name(destination.queue), payload.uuid,
                             payload.display_name, destination.delay))
    return payload.uuid


def push_unique(payload: Payload, destination: Destination, command: Any, *,
                debounce_s: float | None = None) -> Plan[str | None]:
    """Push, first taking the payload's unique lock if it has one; None when it is taken. With
    ``debounce_s`` (a debounced job's dispatch), first supersede the same job still waiting.

    Under a fake queue locks are taken in the fake's own store, so a test sees the duplicate
    dropped as production would, and no real store is touched."""
    store = fake_locks()
    debounces = None if debounce_s is None else (store or runtime.state(destination.connection))
    if debounces is not None:
        yield Call(debounce.claim, (command, payload.command_name, float(debounce_s or 0), payload.uuid, debounces))
    if payload.unique is not None and not (yield Call(unique.acquire, (command, payload), {"store": store})):
        holder = yield Call(unique.holder, (payload.unique,), {"store": store})
        yield Emit(JobNotQueuedAsDuplicate(destination.connection, destination.queue, payload.display_name,
                                           payload.unique["key"], holder))
        return None
    try:
        return (yield from push_payload(payload, destination, command))
    except BaseException:
        if payload.unique is not None:
            yield Call(unique.release, (payload.unique, payload.uuid), {"store": store})
        if debounces is not None:
            yield Call(debounce.withdraw, (command, payload.command_name, payload.uuid, debounces))
        raise


def push_collected(collected: Collected) -> Plan[None]:
    """Push collected payloads grouped by connection and queue, one bulk call per group."""
    groups: dict[tuple[str, str | None], list[Payload]] = {}
    for payload, destination, command in collected:
        if destination.delay > 0:
            yield from push_payload(payload, destination, command)
            continue
        if push_interceptors and (yield Call(intercepted, (command, destination, payload))):
            continue
        groups.setdefault((destination.connection, destination.queue), []).append(payload)
    for (name, queue_name), payloads in groups.items():
        queue = get_connection(name)
        if queue.runs_inline:
            for payload in payloads:
                yield RunInline(queue, payload.to_json(), queue_name)
            continue
        yield SendMany(queue, payloads, queue_name)
        if bus.wants(JobQueued):
            resolved = queue.queue_name(queue_name)
            for payload in payloads:
                yield Emit(JobQueued(name, resolved, payload.uuid, payload.display_name, 0.0))


def intercepted(command: Any, destination: Destination, payload: Payload) -> bool:
    """Whether a fake (or another interceptor) took the push instead of a driver."""
    return any(intercept(command, destination, payload) for intercept in push_interceptors)


def fake_locks() -> StateStore | None:
    """The unique locks of the innermost fake queue that keeps its own (None: no fake)."""
    for intercept in reversed(push_interceptors):
        store = getattr(intercept, "unique_locks", None)
        if isinstance(store, StateStore):
            return store
    return None
