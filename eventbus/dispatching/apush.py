"""The async verbs: ``await adispatch(job)``, ``await adispatch_many(jobs)``, ``await aemit(event)``.

An async web app must never wait on a push with its event loop stopped: every other request
would wait too. These verbs run the very plans the sync ones run (:mod:`eventbus.dispatching.plan`) —
fakes and interceptors see every push, ``bulk_pushes`` and collecting blocks collect it, an
inline (``sync``) connection runs the job, a job's timeout is checked against ``retry_after``,
trace headers go into the payload, ``JobQueued`` is emitted, the uuids returned are the same —
with another runner, :func:`arun`: the push itself is awaited through the driver's
``apush``/``alater``/``abulk``:

- **redis**: ``redis.asyncio`` on the running loop, one client per loop, no thread
  (:mod:`eventbus.queue.redis.aio`);
- **database on PostgreSQL** (psycopg): psycopg's own async connection, one per loop
  (:mod:`eventbus.queue.database.aio`);
- **every other driver** (SQLite, MariaDB/MySQL, beanstalkd, SQS): the driver's sync push on a
  worker thread, :meth:`Queue.apush <eventbus.queue.base.Queue.apush>`'s default. For SQL that is
  a decision, not a gap: SQLAlchemy's async engine needs greenlet, which is not a dependency, and
  SQLite and MySQL would need async drivers that are not either; a thread hop costs far less than
  the INSERT's own commit.

Steps that are synchronous by nature run on a worker thread as well, so the loop never waits on
them: a fake's or interceptor's check (interceptors are plain callables, and may be slow), a
unique job's lock (a call to the state store), running a job inline, and an ``after_commit``
push made outside any ``after_commit`` block (a framework's transaction hook, Django's
``on_commit``, may take it, and those hooks are sync). A push that an ``after_commit`` block
holds goes out when the block ends, as a sync push: the block is a plain ``with``.

Listeners of ``JobQueued`` and ``JobNotQueuedAsDuplicate`` run as :func:`aemit` runs listeners:
on the loop, async ones awaited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from eventbus.dispatching import plan
from eventbus.dispatching.collecting import Collected, collecting_pushes
from eventbus.dispatching.payloads import Destination
from eventbus.dispatching.plan import Call, Defer, Emit, Plan, RunInline, Send, SendMany, T
from eventbus.dispatching.pushing import push_after_commit, run_inline
from eventbus.dispatching.transactions import in_after_commit_block
from eventbus.event_bus import bus
from eventbus.payload import Payload
from eventbus.queue.base import Delay

__all__ = ["adispatch", "adispatch_many", "aemit", "apush_collected", "apush_payload", "arun"]


async def arun(steps: Plan[T]) -> T:
    """Run a plan on the event loop: driver pushes and listeners awaited, blocking calls on a
    worker thread; each result (or exception) handed back to the plan."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            value = await aperform(effect)
        except BaseException as exc:  # handed to the plan, which decides (it re-raises, as a rule)
            error = exc


async def aperform(effect: plan.Effect) -> Any:
    """One effect, awaited."""
    if isinstance(effect, Send):
        if effect.destination.delay > 0:
            await effect.queue.alater(effect.destination.delay, effect.payload, effect.destination.queue)
        else:
            await effect.queue.apush(effect.payload, effect.destination.queue)
    elif isinstance(effect, Emit):
        await aemit(effect.event)
    elif isinstance(effect, SendMany):
        await effect.queue.abulk(effect.payloads, effect.queue_name)
    elif isinstance(effect, Call):
        return await asyncio.to_thread(effect)
    elif isinstance(effect, RunInline):
        return await asyncio.to_thread(run_inline, effect.queue, effect.raw, effect.queue_name)
    elif isinstance(effect, Defer):
        if in_after_commit_block():  # only held here: the block pushes when it ends
            return push_after_commit(effect.payload, effect.destination, effect.command, debounce_s=effect.debounce_s)
        return await asyncio.to_thread(push_after_commit, effect.payload, effect.destination, effect.command,
                                       debounce_s=effect.debounce_s)
    else:  # pragma: no cover - a plan yields only the effects above
        raise TypeError(f"not an effect: {effect!r}")
    return None


async def adispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
                    connection: str | None = None, after_commit: bool | None = None) -> str | None:
    """:func:`eventbus.dispatch` for a caller on an event loop: the loop keeps running while the
    job is pushed. Returns the uuid, or None for a unique job dropped as a duplicate."""
    return await arun(plan.dispatch(job, queue=queue, delay=delay, connection=connection,
                                    after_commit=after_commit))


async def adispatch_many(jobs: Iterable[Any], *, queue: str | None = None,
                         connection: str | None = None, after_commit: bool | None = None) -> list[str]:
    """:func:`eventbus.dispatch_many` for a caller on an event loop: one bulk push per connection
    and queue, awaited. Returns the uuids in order (none for a dropped duplicate)."""
    held: Collected = []
    try:
        with collecting_pushes() as held:
            uuids = [await adispatch(job, queue=queue, connection=connection, after_commit=after_commit)
                     for job in jobs]
    finally:  # what was dispatched goes out, as with bulk_pushes, even when a dispatch raised
        await apush_collected(held)
    return [uuid for uuid in uuids if uuid is not None]


async def aemit(event: Any, *payload: Any) -> list[Any]:
    """:meth:`EventBus.emit <eventbus.event_bus.EventBus.emit>` for a caller on an event loop.

    Sync listeners run as ``emit`` runs them and async ones are awaited here, in order. The
    jobs of queued listeners (and whatever the listeners dispatch) are collected while the
    listeners run and pushed together before this returns, also when a listener raised, as
    ``emit`` would have pushed them before the exception.
    """
    held: Collected = []
    try:
        with collecting_pushes(include_delayed=True) as held:
            return await bus.aemit(event, *payload)
    finally:
        await apush_collected(held)


async def apush_payload(payload: Payload, destination: Destination, command: Any = None) -> str:
    """:func:`eventbus.dispatching.push_payload`, awaited."""
    return await arun(plan.push_payload(payload, destination, command))


async def apush_collected(collected: Collected) -> None:
    """:func:`eventbus.dispatching.push_collected`, awaited: one bulk push per connection and queue."""
    await arun(plan.push_collected(collected))
