"""Fan-out: which deliveries a notification makes, and whether they happen now or through the queue.

Queued: one :class:`SendQueuedNotifications` job per notifiable and channel, so a failing channel
is retried on its own and never holds the others back. Now: every channel gets its try; the
failures are raised together afterwards as one :class:`NotificationFailedError`. Delivering one
of them is :func:`notifications.delivery.deliver`'s job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from notifications._core import Destination, adispatch, defer_if_in_transaction, push_command, run_awaitable
from notifications.channels.registry import accepts_on_demand, channel_name, resolve_channel
from notifications.delivery import deliver
from notifications.errors import NotificationFailedError
from notifications.queued import SendQueuedNotifications
from notifications.sendable import Sendable

Interceptor = Callable[[list[Any], Any, "list[str] | None", bool], bool]

# fake_notifications() takes deliveries here: (notifiables, notification, channels, queued) -> bool
send_interceptors: list[Interceptor] = []


@dataclasses.dataclass(frozen=True)
class Planned:
    """The deliveries to one notifiable: its copy of the notification (with the id its channels
    share) and the channel names, in ``via()`` order."""

    notifiable: Any
    notification: Sendable
    channels: list[str]


def _as_list(notifiables: Any) -> list[Any]:
    if isinstance(notifiables, (list, tuple, set)):
        return list(notifiables)
    return [notifiables]


def plan(notifiables: Any, notification: Sendable, channels: list[str] | None,
         queued: bool) -> list[Planned]:
    """The deliveries to make; nothing when a fake took them. An unknown channel fails here,
    before anything is sent."""
    items = _as_list(notifiables)
    if any(intercept(items, notification, channels, queued) for intercept in send_interceptors):
        return []
    planned = []
    for notifiable in items:
        names = [channel_name(c) for c in (channels or notification.via(notifiable))]
        for name in names:
            resolve_channel(name)
        names = [name for name in names if can_deliver(notifiable, name)]
        planned.append(Planned(notifiable, notification.copy_for_delivery(), names))
    return planned


def can_deliver(notifiable: Any, channel: str) -> bool:
    """False for an on-demand recipient on a channel that needs a stored notifiable (``database``)."""
    return not getattr(notifiable, "on_demand", False) or accepts_on_demand(channel)


def send(notifiables: Any, notification: Sendable) -> None:
    """Queue ``notification`` when it is queued, else deliver it now."""
    if getattr(notification, "queued", False):
        queue(notifiables, notification)
    else:
        send_now(notifiables, notification)


async def asend(notifiables: Any, notification: Sendable) -> None:
    """:func:`send` for a caller on an event loop: queued jobs are pushed without blocking it,
    and a notification sent now awaits its channels in the running loop."""
    if getattr(notification, "queued", False):
        await aqueue(notifiables, notification)
    else:
        await asend_now(notifiables, notification)


def send_now(notifiables: Any, notification: Sendable, channels: list[str] | None = None) -> None:
    """Deliver on every channel now, in this thread's event loop; see :func:`asend_now`."""
    coroutine = asend_now(notifiables, notification, channels)
    try:
        run_awaitable(coroutine)
    finally:
        coroutine.close()  # never started (called inside a running loop): no "never awaited" warning


async def asend_now(notifiables: Any, notification: Sendable, channels: list[str] | None = None) -> None:
    """Deliver on every channel now; raise one NotificationFailedError for the ones that failed."""
    failures: dict[str, BaseException] = {}
    for item in plan(notifiables, notification, channels, queued=False):
        for channel in item.channels:
            try:
                await deliver(item.notifiable, item.notification, channel)
            except Exception as exc:
                failures[channel] = exc
    if failures:
        raise NotificationFailedError(failures)


def queue(notifiables: Any, notification: Sendable) -> list[str]:
    """Push one SendQueuedNotifications job per notifiable and channel; return their uuids.

    With ``after_commit = True`` the pushes wait for the enclosing ``eventbus.after_commit()``
    block (the uuids are added when they happen).
    """
    uuids: list[str] = []
    for job, destination in queued_jobs(notifiables, notification):
        push = _pusher(job, destination, uuids)
        if notification.after_commit:
            defer_if_in_transaction(push)
        else:
            push()
    return uuids


async def aqueue(notifiables: Any, notification: Sendable) -> list[str]:
    """:func:`queue` for a caller on an event loop: each job is pushed with the driver's async
    push (``eventbus.adispatch``), so the loop keeps serving while the server answers."""
    uuids = []
    for job, destination in queued_jobs(notifiables, notification):
        uuid = await adispatch(job, queue=destination.queue, delay=destination.delay,
                               connection=destination.connection,
                               after_commit=bool(notification.after_commit))
        if uuid is not None:
            uuids.append(uuid)
    return uuids


def queued_jobs(notifiables: Any, notification: Sendable) -> list[tuple[SendQueuedNotifications, Destination]]:
    """The job for each notifiable and channel, with where and when it goes."""
    found = []
    queues = notification.via_queues() or {}
    for item in plan(notifiables, notification, None, queued=True):
        delays = notification.with_delay(item.notifiable) or {}
        for channel in item.channels:
            job = SendQueuedNotifications(item.notifiable, item.notification, channel)
            found.append((job, Destination.of(job, queue=queues.get(channel) or notification.queue,
                                              delay=delays.get(channel, notification.delay),
                                              connection=notification.connection)))
    return found


def _pusher(job: SendQueuedNotifications, destination: Destination, uuids: list[str]) -> Callable[[], None]:
    def push() -> None:
        uuids.append(push_command(job, destination))

    return push


def notify(notifiables: Iterable[Any] | Any, notification: Sendable) -> None:
    """Send ``notification`` to many notifiables (queued when the notification is queued)."""
    send(notifiables, notification)


async def anotify(notifiables: Iterable[Any] | Any, notification: Sendable) -> None:
    """:func:`notify` for a caller on an event loop (queued jobs are pushed without blocking it)."""
    await asend(notifiables, notification)


def notify_now(notifiables: Iterable[Any] | Any, notification: Sendable,
               channels: list[str] | None = None) -> None:
    """Send ``notification`` to many notifiables now, even when it is a queued notification."""
    send_now(notifiables, notification, channels)
