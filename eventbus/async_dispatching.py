"""The async verbs: ``await adispatch(job)``, ``await adispatch_many(jobs)``, ``await aemit(event)``.

An async web app must never wait on a push with its event loop stopped: every other request
would wait too. These verbs follow the sync ones of :mod:`eventbus.dispatching` step for step —
fakes and interceptors see every push, ``bulk_pushes`` and collecting blocks collect it, an
inline (``sync``) connection runs the job, a job's timeout is checked against ``retry_after``,
trace headers go into the payload, ``JobQueued`` is emitted, the uuids returned are the same —
but the push itself is awaited through the driver's ``apush``/``alater``/``abulk``:

- **redis**: ``redis.asyncio`` on the running loop, one client per loop, no thread
  (:mod:`eventbus.queue.redis_async`);
- **database on PostgreSQL** (psycopg): psycopg's own async connection, one per loop
  (:mod:`eventbus.queue.database_async`);
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

from eventbus import unique
from eventbus.dispatching import (
    Collected,
    Destination,
    collecting_pushes,
    command_name,
    hold_for_bulk,
    holds_until_commit,
    intercepted,
    make_payload,
    push_after_commit,
    push_interceptors,
    refuse_timeout_beyond_reservation,
    run_inline,
    with_headers,
)
from eventbus.event_bus import bus
from eventbus.events import JobNotQueuedAsDuplicate, JobQueued
from eventbus.integrations import otel
from eventbus.payload import Payload
from eventbus.queue.base import Delay, Queue
from eventbus.runtime import connection as get_connection
from eventbus.transactions import in_after_commit_block

__all__ = ["adispatch", "adispatch_many", "aemit", "apush_collected", "apush_payload"]


async def adispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
                    connection: str | None = None, after_commit: bool | None = None) -> str | None:
    """:func:`eventbus.dispatch` for a caller on an event loop: the loop keeps running while the
    job is pushed. Returns the uuid, or None for a unique job dropped as a duplicate."""
    destination = Destination.of(job, queue=queue, delay=delay, connection=connection)
    lock = unique.lock_for(job, command_name(job), destination.connection)
    payload = make_payload(job, unique=lock)
    if holds_until_commit(job, after_commit):
        if in_after_commit_block():  # only held here: the block pushes when it ends
            return push_after_commit(payload, destination, job)
        return await asyncio.to_thread(push_after_commit, payload, destination, job)
    return await apush_unique(payload, destination, job)


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


async def apush_unique(payload: Payload, destination: Destination, command: Any) -> str | None:
    """Push, first taking the payload's unique lock if it has one; None when it is taken."""
    if payload.unique is not None and not push_interceptors:
        if not await asyncio.to_thread(unique.acquire, command, payload):
            holder = await asyncio.to_thread(unique.holder, payload.unique)
            await aemit(JobNotQueuedAsDuplicate(destination.connection, destination.queue,
                                                payload.display_name, payload.unique["key"], holder))
            return None
    try:
        return await apush_payload(payload, destination, command)
    except BaseException:
        if payload.unique is not None:
            await asyncio.to_thread(unique.release, payload.unique, payload.uuid)
        raise


async def apush_payload(payload: Payload, destination: Destination, command: Any = None) -> str:
    """:func:`eventbus.dispatching.push_payload`, awaiting the driver's async push."""
    if hold_for_bulk(payload, destination, command) or await aintercepted(command, destination, payload):
        return payload.uuid
    queue = get_connection(destination.connection)
    if queue.runs_inline:
        await asyncio.to_thread(run_inline, queue, payload.to_json(), destination.queue)
        return payload.uuid
    refuse_timeout_beyond_reservation(queue, payload)
    resolved = queue.queue_name(destination.queue)
    with otel.sending(destination.connection, resolved, payload.uuid) as trace_headers:
        if trace_headers:
            payload = with_headers(payload, trace_headers)
        if destination.delay > 0:
            await queue.alater(destination.delay, payload, destination.queue)
        else:
            await queue.apush(payload, destination.queue)
    await aemit(JobQueued(destination.connection, resolved, payload.uuid, payload.display_name,
                          destination.delay))
    return payload.uuid


async def apush_collected(collected: Collected) -> None:
    """:func:`eventbus.dispatching.push_collected`, awaited: one bulk push per connection and queue."""
    groups: dict[tuple[str, str | None], list[Payload]] = {}
    for payload, destination, command in collected:
        if destination.delay > 0:
            await apush_payload(payload, destination, command)
        elif not await aintercepted(command, destination, payload):
            groups.setdefault((destination.connection, destination.queue), []).append(payload)
    for (name, queue_name), payloads in groups.items():
        queue = get_connection(name)
        if queue.runs_inline:
            await asyncio.to_thread(_run_each_inline, queue, payloads, queue_name)
            continue
        await queue.abulk(payloads, queue_name)
        resolved = queue.queue_name(queue_name)
        for payload in payloads:
            await aemit(JobQueued(name, resolved, payload.uuid, payload.display_name, 0.0))


async def aintercepted(command: Any, destination: Destination, payload: Payload) -> bool:
    """Whether a fake (or another interceptor) took the push; asked on a worker thread, since
    an interceptor is a plain callable that may take its time."""
    if not push_interceptors:
        return False
    return await asyncio.to_thread(intercepted, command, destination, payload)


def _run_each_inline(queue: Queue, payloads: list[Payload], queue_name: str | None) -> None:
    for payload in payloads:
        run_inline(queue, payload.to_json(), queue_name)
