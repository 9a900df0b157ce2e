"""Building payloads and pushing them: ``dispatch``, ``dispatch_sync``, ``chain``.

This is the API the add-ons (``listeners``, ``notifications``, third-party channels) build on to
queue their own commands: :func:`make_payload` turns a registered command into a
:class:`~eventbus.payload.Payload`, a :class:`Destination` says where it goes, and
:func:`push_command` / :func:`push_payload` send it (emitting ``JobQueued``). A connection whose
driver runs jobs inline (``sync``) runs the job here, through the worker's rules, before the push
returns. Fakes (``eventbus.testing.fake_queue``) take pushes through :data:`push_interceptors`.

(The module is not named ``dispatch`` so that ``eventbus.dispatch`` stays the function.)
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from eventbus import encryption, registry, serializer, unique
from eventbus.backoff import Exponential
from eventbus.batch_store import BatchStore, Transitions, is_member, split_id
from eventbus.errors import ConfigurationError, DeserializationError, SerializationError
from eventbus.event_bus import bus
from eventbus.events import JobNotQueuedAsDuplicate, JobQueued
from eventbus.integrations import otel
from eventbus.payload import HANDLER_NAME, NO_HEADERS, Payload, new_uuid
from eventbus.processing import run_sync_job
from eventbus.queue.base import Delay, Queue, QueueJob, delay_seconds
from eventbus.runtime import connection as get_connection
from eventbus.runtime import settings
from eventbus.timeouts import grace_s, timeout_conflict
from eventbus.transactions import defer_if_in_transaction

# -- payload building ---------------------------------------------------------------------------


def option(command: Any, name: str, default: Any = None) -> Any:
    """A class or instance option; a method of that name (``def backoff(self)``) is called."""
    value = getattr(command, name, default)
    if callable(value) and not isinstance(value, type) and name != "retry_until":
        value = value()
    return default if value is None else value


def _backoff_list(value: Any, tries: int | None = None) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, Exponential):
        return value.delays(tries)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    try:
        return [float(v) for v in value]
    except TypeError as exc:
        raise SerializationError(f"backoff must be seconds or a list of seconds, not {value!r}") from exc


def _retry_until_timestamp(value: Any) -> float | None:
    if callable(value):
        value = value()
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, dt.timedelta):
        return time.time() + value.total_seconds()
    return time.time() + float(value)


def command_name(command: Any) -> str:
    """The registered name of ``command``'s class; SerializationError when it has none."""
    name = serializer.class_name(type(command), type(command).__qualname__)
    if not registry.is_registered(name):
        raise SerializationError(
            f"{name} cannot be queued: it is not registered (subclass eventbus.Job, "
            "or decorate it with @eventbus.serializable)")
    return name


#: Values that are their own JSON (exact types: a bool or an IntEnum is not taken for an int here).
_PLAIN = frozenset({str, int, float, bool, type(None)})


def make_payload(command: Any, *, display_name: str | None = None,
                 chained: Sequence[dict[str, Any]] | None = None,
                 unique: dict[str, Any] | None = None, batch_id: str | None = None,
                 chain_catch: Sequence[dict[str, Any]] | None = None,
                 chain_finally: Sequence[dict[str, Any]] | None = None, name: str | None = None) -> Payload:
    """Build the JSON payload for ``command`` from its state and options (``name``: its
    registered name, when the caller looked it up already)."""
    name = name or command_name(command)
    state = serializer.object_state(command)
    encoded = {k: v if type(v) in _PLAIN else serializer.encode(v, f"{type(command).__name__}.{k}")
               for k, v in state.items()}
    key = settings().key
    if getattr(command, "encrypted", False):
        encoded = encryption.seal(encoded, key)
    timeout = option(command, "timeout")
    tries = option(command, "tries")
    payload = Payload.checked(
        display_name=display_name or getattr(command, "display_name", None) or name,
        command_name=name,
        command=encoded,
        uuid=new_uuid(),
        job=HANDLER_NAME,
        max_tries=tries,
        max_exceptions=option(command, "max_exceptions"),
        backoff=_backoff_list(option(command, "backoff"), tries),
        timeout=float(timeout) if timeout is not None else None,
        retry_until=_retry_until_timestamp(getattr(command, "retry_until", None)),
        fail_on_timeout=bool(option(command, "fail_on_timeout", False)),
        attempts=0,
        pushed_at=time.time(),
        chained=tuple(chained or getattr(command, "_chained", None) or ()),
        unique=unique,
        batch_id=batch_id,
        chain_catch=tuple(chain_catch or ()),
        chain_finally=tuple(chain_finally or ()),
        signature=None,
        headers=NO_HEADERS,
    )
    return payload.signed(key) if key else payload


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where a command goes: connection, queue, delay (arguments win over the command's options)."""

    connection: str
    queue: str | None
    delay: float

    @classmethod
    def of(cls, command: Any, *, queue: str | None = None, delay: Delay | None = None,
           connection: str | None = None) -> Destination:
        conn = connection or option(command, "connection") or settings().default
        q = queue or option(command, "queue")
        d = delay_seconds(delay if delay is not None else option(command, "delay"))
        if d > 0 or cls is not Destination:
            return cls(conn, q, d)
        found = _DUE_NOW.get((conn, q))
        if found is None:
            if len(_DUE_NOW) >= _DUE_NOW_MAX:  # queue names made per tenant, say: start over
                _DUE_NOW.clear()
            found = _DUE_NOW[conn, q] = cls(conn, q, 0.0)
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.connection, "queue": self.queue, "delay": self.delay}


#: The destinations without a delay, shared: a destination is immutable, and a bulk push holds
#: one per job until it is sent, which the garbage collector pays for (see ``bulk_pushes``).
_DUE_NOW: dict[tuple[str, str | None], Destination] = {}
_DUE_NOW_MAX = 1024


# -- pushing ------------------------------------------------------------------------------------

#: A fake queue (eventbus.testing.fake_queue) takes pushes here instead of a driver.
push_interceptors: list[Callable[[Any, Destination, Payload], bool]] = []


def push_command(command: Any, destination: Destination, *, display_name: str | None = None,
                 chained: Sequence[dict[str, Any]] | None = None) -> str:
    """Serialize ``command`` and push it to ``destination``; emit ``JobQueued``. Returns the uuid."""
    payload = make_payload(command, display_name=display_name, chained=chained)
    return push_payload(payload, destination, command)


def push_payload(payload: Payload, destination: Destination, command: Any = None) -> str:
    """Push a built payload (fakes see it first); on an inline connection, run it now.

    Inside :func:`bulk_pushes` a push that is due now is collected instead, to go out with the
    others in one round trip per queue when the block ends. A block holding
    :data:`BULK_FLUSH_EVERY` jobs first sends those, here, before this one joins it: a send that
    fails then raises from this dispatch, and this job was not queued.
    """
    buffer = _bulk_buffer.get()
    if buffer is not None and buffer.takes(destination):
        if buffer.flush_every and len(buffer.items) >= buffer.flush_every:
            push_collected(take_collected(buffer.items))
        buffer.items.append((payload, destination, command))
        return payload.uuid
    if push_interceptors and intercepted(command, destination, payload):
        return payload.uuid
    queue = get_connection(destination.connection)
    if queue.runs_inline:
        run_inline(queue, payload.to_json(), destination.queue)
        return payload.uuid
    refuse_timeout_beyond_reservation(queue, payload)
    if otel.enabled():
        with otel.sending(destination.connection, queue.queue_name(destination.queue),
                          payload.uuid) as trace_headers:
            if trace_headers:
                payload = with_headers(payload, trace_headers)
            send(queue, payload, destination)
    else:
        send(queue, payload, destination)
    if bus.wants(JobQueued):
        bus.emit(JobQueued(destination.connection, queue.queue_name(destination.queue), payload.uuid,
                           payload.display_name, destination.delay))
    return payload.uuid


def send(queue: Queue, payload: Payload, destination: Destination) -> None:
    """The driver call itself: now, or after the destination's delay."""
    if destination.delay > 0:
        queue.later(destination.delay, payload, destination.queue)
    else:
        queue.push(payload, destination.queue)


Collected = list[tuple[Payload, Destination, Any]]


def intercepted(command: Any, destination: Destination, payload: Payload) -> bool:
    """Whether a fake (or another interceptor) took the push instead of a driver."""
    return any(intercept(command, destination, payload) for intercept in push_interceptors)


#: A bulk_pushes block sends what it collected every this many jobs: a batch of 10,000 jobs
#: held to the end keeps 10,000 payloads alive, and the cyclic garbage collector's passes over
#: them cost a fifth of the time (one Redis script call carries 500 jobs anyway).
BULK_FLUSH_EVERY = 500


@dataclasses.dataclass
class _Buffer:
    items: Collected
    include_delayed: bool
    flush_every: int = 0  # 0: hold everything until the block ends

    def takes(self, destination: Destination) -> bool:
        return destination.delay <= 0 or self.include_delayed


#: Threads can share one block's list (``asyncio.to_thread`` copies the context): appending is
#: atomic, taking what is held is not, so takers take turns.
_taking = threading.Lock()


def take_collected(collected: Collected) -> Collected:
    """Remove and return what ``collected`` holds now (a push appended meanwhile stays)."""
    with _taking:
        held = collected[:]
        del collected[:len(held)]
    return held


_bulk_buffer: contextvars.ContextVar[_Buffer | None] = contextvars.ContextVar(
    "eventbus_bulk_pushes", default=None)


@contextlib.contextmanager
def collecting_pushes(*, include_delayed: bool = False, flush_every: int = 0) -> Iterator[Collected]:
    """Collect the pushes made inside the block instead of making them; yields the list.

    The caller sends them later with :func:`push_collected` (an async caller, off its loop).
    Without ``include_delayed`` delayed jobs are pushed at once, as they come. With
    ``flush_every`` a sync push (:func:`push_payload`, never the async path) first sends what
    the list holds once it holds that many. Blocks nest: inside an outer one, pushes go to the
    outer one's list.
    """
    outer = _bulk_buffer.get()
    if outer is not None:
        yield []
        return
    collected: Collected = []
    token = _bulk_buffer.set(_Buffer(collected, include_delayed, flush_every))
    try:
        yield collected
    finally:
        _bulk_buffer.reset(token)


@contextlib.contextmanager
def bulk_pushes() -> Iterator[None]:
    """Collect the pushes made inside the block and send them together, when it ends and every
    :data:`BULK_FLUSH_EVERY` jobs before that.

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


def push_collected(collected: Collected) -> None:
    """Push collected payloads grouped by connection and queue, one bulk call per group."""
    groups: dict[tuple[str, str | None], list[Payload]] = {}
    for payload, destination, command in collected:
        if destination.delay > 0:
            push_payload(payload, destination, command)
            continue
        if intercepted(command, destination, payload):
            continue
        groups.setdefault((destination.connection, destination.queue), []).append(payload)
    for (conn, queue_name), payloads in groups.items():
        queue = get_connection(conn)
        if queue.runs_inline:
            for payload in payloads:
                run_inline(queue, payload.to_json(), queue_name)
            continue
        queue.bulk(payloads, queue_name)
        if bus.wants(JobQueued):
            resolved = queue.queue_name(queue_name)
            for payload in payloads:
                bus.emit(JobQueued(conn, resolved, payload.uuid, payload.display_name, 0.0))


def with_headers(payload: Payload, headers: dict[str, str]) -> Payload:
    """The payload with ``headers`` added, signed again when payloads are signed."""
    payload = dataclasses.replace(payload, headers={**payload.headers, **headers}, signature=None)
    key = settings().key
    return payload.signed(key) if key else payload


def refuse_timeout_beyond_reservation(queue: Queue, payload: Payload) -> None:
    """A job's own timeout plus the watchdog grace must be below the connection's retry_after
    (see :mod:`eventbus.timeouts`): refuse it here, where the mistake is made."""
    if payload.timeout is None or not queue.holds_reservations:
        return
    problem = timeout_conflict(f"{payload.display_name}'s timeout", payload.timeout, grace_s(),
                               queue.retry_after, queue.connection_name,
                               "Lower the job's timeout or raise retry_after.")
    if problem is not None:
        raise ConfigurationError(problem, job_uuid=payload.uuid, connection=queue.connection_name)


def push_raw(connection: str | None, raw: str, queue: str | None = None) -> str:
    """Push a stored payload as it is (``eventbus retry``); on an inline connection, run it now."""
    target = get_connection(connection)
    if target.runs_inline:
        return run_inline(target, raw, queue)
    return target.push_raw(raw, queue)


def dispatch_next_in_chain(chained: Sequence[dict[str, Any]]) -> None:
    """Push the next job of a chain, carrying the rest of the chain with it."""
    if not chained:
        return
    head, rest = chained[0], chained[1:]
    payload = Payload.from_dict(head["payload"])
    payload = dataclasses.replace(payload, chained=tuple(rest), signature=None)
    key = settings().key
    push_payload(payload.signed(key) if key else payload, Destination(**head["destination"]))


def push_steps(steps: Sequence[dict[str, Any]]) -> None:
    """Push ready-made ``{"destination", "payload"}`` steps (chain and batch callbacks) as they are."""
    for step in steps:
        push_payload(Payload.from_dict(step["payload"]), Destination(**step["destination"]))


# -- what a finished job sets off -----------------------------------------------------------

def after_success(job: QueueJob) -> None:
    """A job succeeded: count it in its batch, and end its chain if it was the last step."""
    payload = job.payload()
    if payload.batch_id and is_member(payload.batch_id):
        batch_id, connection = split_id(payload.batch_id)
        settle_batch(payload.batch_id, BatchStore.of(connection).record_success(batch_id, payload.uuid))
    if not payload.chained and payload.chain_finally:
        push_steps(payload.chain_finally)


def after_failure(job: QueueJob, exc: BaseException) -> None:
    """A job failed for good: count it (and the chain steps that will never run) in its batch,
    and push its chain's ``catch`` and ``finally_`` jobs."""
    try:
        payload = job.payload()
    except DeserializationError:
        return  # an unreadable payload belongs to no batch or chain we could name
    if payload.batch_id and is_member(payload.batch_id):
        batch_id, connection = split_id(payload.batch_id)
        unrun = [str(step["payload"].get("uuid")) for step in payload.chained]
        settle_batch(payload.batch_id,
                     BatchStore.of(connection).record_failure(batch_id, payload.uuid, unrun))
    push_steps([*payload.chain_catch, *payload.chain_finally])


def settle_batch(ref: str, transitions: Transitions) -> None:
    """Push the callbacks an outcome made due (each transition is seen by one caller only)."""
    batch_id, connection = split_id(ref)
    store = BatchStore.of(connection)
    description = store.description(batch_id) or {}
    callbacks = description.get("callbacks", {})
    if transitions.first_failure:
        if not description.get("allow_failures"):
            store.cancel(batch_id)
        push_steps(callbacks.get("catch", []))
    if transitions.all_succeeded:
        push_steps(callbacks.get("then", []))
    if transitions.all_finished:
        push_steps(callbacks.get("finally", []))
        continue_chain_after(store, batch_id, description)


def continue_chain_after(store: BatchStore, batch_id: str, description: dict[str, Any]) -> None:
    """A batch that was a chain step has finished: the chain goes on, or, when the batch was
    cancelled, ends with its ``catch`` and ``finally_`` jobs."""
    if store.stamp(batch_id, "cancelled_at") is None:
        push_steps(description.get("continue_chain") or [])  # the next step, carrying the rest
    else:
        push_steps([*description.get("chain_catch", []), *description.get("chain_finally", [])])


def run_inline(queue: Queue, raw: str, queue_name: str | None) -> str:
    """Run a job in this process under the sync rules (exceptions propagate after failed())."""
    job = queue.inline_job(raw, queue_name)
    run_sync_job(job, continue_chain=dispatch_next_in_chain, bus=bus,
                 after_success=after_success, after_failure=after_failure)
    return str(job.job_id)


# -- the public verbs ---------------------------------------------------------------------------

def dispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
             connection: str | None = None, after_commit: bool | None = None) -> str | None:
    """Push ``job`` to its connection and queue (arguments win over its class options).

    Returns the job's uuid, or None when the job is unique (``unique = True``) and another one
    like it is still waiting or running (``JobNotQueuedAsDuplicate`` is emitted). On the
    ``sync`` connection the job runs before this returns. With ``after_commit`` (or the job's
    own ``after_commit = True``) a push made inside an ``eventbus.after_commit()`` block waits
    for the block to end without an exception (a unique job's lock is then taken at that time).
    """
    destination = Destination.of(job, queue=queue, delay=delay, connection=connection)
    name = command_name(job)
    lock = unique.lock_for(job, name, destination.connection)
    payload = make_payload(job, unique=lock, name=name)
    if holds_until_commit(job, after_commit):
        return push_after_commit(payload, destination, job)
    return push_unique(payload, destination, job)


def push_after_commit(payload: Payload, destination: Destination, command: Any) -> str | None:
    """Push when the enclosing transaction commits (an ``after_commit`` block, or a framework's
    transaction), or now when there is none. Returns the uuid; None when a push made now found
    a unique job's lock taken."""
    outcome: list[str | None] = [payload.uuid]

    def push() -> None:
        outcome[0] = push_unique(payload, destination, command)

    defer_if_in_transaction(push)
    return outcome[0]


def push_unique(payload: Payload, destination: Destination, command: Any) -> str | None:
    """Push, first taking the payload's unique lock if it has one; None when it is taken."""
    if payload.unique is not None and not push_interceptors and not unique.acquire(command, payload):
        bus.emit(JobNotQueuedAsDuplicate(destination.connection, destination.queue,
                                         payload.display_name, payload.unique["key"],
                                         unique.holder(payload.unique)))
        return None
    try:
        return push_payload(payload, destination, command)
    except BaseException:
        unique.release(payload.unique, payload.uuid)
        raise


def dispatch_many(jobs: Iterable[Any], *, queue: str | None = None, connection: str | None = None,
                  after_commit: bool | None = None) -> list[str]:
    """Push many jobs in one round trip per connection and queue (per 500 jobs: see
    :func:`bulk_pushes`); return their uuids in order (a unique job that was dropped as a
    duplicate has none).

    Each job keeps its own options (its own queue and connection win unless given here, its own
    delay); the arguments apply as they would to :func:`dispatch`.
    """
    with bulk_pushes():
        return [uuid for uuid in (dispatch(job, queue=queue, connection=connection,
                                           after_commit=after_commit) for job in jobs)
                if uuid is not None]


def emit_many(events: Iterable[Any]) -> list[list[Any]]:
    """Emit each event in order; the queued listeners' jobs go out in bulk (:func:`bulk_pushes`).

    Sync listeners run as with :func:`eventbus.emit`; returns each event's sync results.
    """
    with bulk_pushes():
        return [bus.emit(event) for event in events]


def dispatch_if(condition: Any, job: Any, **options: Any) -> str | None:
    """``dispatch(job, ...)`` when ``condition`` is true (a callable is called first); else None."""
    return dispatch(job, **options) if _truth(condition) else None


def dispatch_unless(condition: Any, job: Any, **options: Any) -> str | None:
    """``dispatch(job, ...)`` unless ``condition`` is true (a callable is called first)."""
    return None if _truth(condition) else dispatch(job, **options)


def _truth(condition: Any) -> bool:
    return bool(condition() if callable(condition) else condition)


def holds_until_commit(command: Any, after_commit: bool | None = None) -> bool:
    """The call's ``after_commit`` if given, else the command's own option."""
    return bool(option(command, "after_commit", False) if after_commit is None else after_commit)


def dispatch_sync(job: Any) -> Any:
    """Run ``job`` now in this process, as the sync driver would (failed() on exception)."""
    return push_command(job, Destination.of(job, connection="sync", delay=0))


def hold_for_bulk(payload: Payload, destination: Destination, command: Any = None) -> bool:
    """Collect the push for the enclosing :func:`bulk_pushes` / :func:`collecting_pushes`
    block when there is one that takes it; True when held. The async path
    (:mod:`eventbus.async_dispatching`) asks this before it pushes: it never sends from here
    (that would block its event loop), so an async caller's block sends everything at its end."""
    buffer = _bulk_buffer.get()
    if buffer is None or not buffer.takes(destination):
        return False
    buffer.items.append((payload, destination, command))
    return True
