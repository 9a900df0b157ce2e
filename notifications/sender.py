"""Delivering notifications: now (every channel tried, failures gathered) or through the queue.

Queued: one :class:`SendQueuedNotifications` job per notifiable and channel, so a failing channel
is retried on its own and never holds the others back. Now: every channel gets its try; the
failures are raised together afterwards as one :class:`NotificationFailedError`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable
from typing import Any

from eventbus import aio, emit_until
from eventbus.event_bus import emit
from eventbus.dispatching import Destination, push_command
from eventbus.transactions import defer_if_in_transaction
from notifications.channels import channel_name, resolve_channel
from notifications.errors import NotificationFailedError
from notifications.events import NotificationFailed, NotificationSending, NotificationSent
from notifications.queued import SendQueuedNotifications

log = logging.getLogger(__name__)

# fake_notifications() takes deliveries here: (notifiables, notification, channels, queued) -> bool
send_interceptors: list[Callable[[list[Any], Any, list[str] | None, bool], bool]] = []

ROUTED_CHANNELS = ("mail", "sms", "database")


def _as_list(notifiables: Any) -> list[Any]:
    if isinstance(notifiables, (list, tuple, set)):
        return list(notifiables)
    return [notifiables]


class NotificationSender:
    def send(self, notifiables: Any, notification: Any) -> None:
        """Queue ``notification`` when it is queued, else deliver it now."""
        if getattr(notification, "queued", False):
            self.queue(notifiables, notification)
        else:
            self.send_now(notifiables, notification)

    # -- now ----------------------------------------------------------------------------------
    def _plan(self, notifiables: Any, notification: Any, channels: list[str] | None,
              queued: bool) -> list[tuple[Any, list[str]]] | None:
        items = _as_list(notifiables)
        for intercept in send_interceptors:
            if intercept(items, notification, channels, queued):
                return None
        plan = []
        for notifiable in items:
            names = [channel_name(c) for c in (channels or notification.via(notifiable))]
            for name in names:
                resolve_channel(name)  # unknown channel: one clear error before anything is sent
            plan.append((notifiable, names))
        return plan

    def send_now(self, notifiables: Any, notification: Any, channels: list[str] | None = None) -> None:
        plan = self._plan(notifiables, notification, channels, queued=False)
        failures: dict[str, BaseException] = {}
        for notifiable, names in plan or []:
            for name in names:
                try:
                    aio.resolve(self._deliver(notifiable, notification, name))
                except Exception as exc:
                    failures[name] = exc
        if failures:
            raise NotificationFailedError(failures)

    async def asend_now(self, notifiables: Any, notification: Any, channels: list[str] | None = None) -> None:
        plan = self._plan(notifiables, notification, channels, queued=False)
        failures: dict[str, BaseException] = {}
        for notifiable, names in plan or []:
            for name in names:
                try:
                    await self._deliver(notifiable, notification, name)
                except Exception as exc:
                    failures[name] = exc
        if failures:
            raise NotificationFailedError(failures)

    async def _deliver(self, notifiable: Any, notification: Any, name: str) -> Any:
        if not notification.should_send(notifiable, name):
            return None
        if name in ROUTED_CHANNELS and notifiable.route_notification_for(name, notification) is None:
            log.warning("%s has no %s route; skipping %s on %s", type(notifiable).__name__, name,
                        type(notification).__name__, name)
            return None
        if emit_until(NotificationSending(notifiable, notification, name)) is False:
            return None
        try:
            response = resolve_channel(name).send(notifiable, notification)
            if inspect.isawaitable(response):
                response = await response
        except Exception as exc:
            emit(NotificationFailed(notifiable, notification, name, exc))
            raise
        emit(NotificationSent(notifiable, notification, name, response))
        return response

    # -- queued -------------------------------------------------------------------------------
    def queue(self, notifiables: Any, notification: Any) -> list[str]:
        """Push one SendQueuedNotifications job per notifiable and channel; return their uuids."""
        plan = self._plan(notifiables, notification, None, queued=True)
        notification.id  # fix the id before serializing: every channel shares it
        uuids: list[str] = []
        queues = notification.via_queues() or {}
        for notifiable, names in plan or []:
            delays = notification.with_delay(notifiable) or {}
            for name in names:
                job = SendQueuedNotifications(notifiable, notification, name)
                dest = Destination.of(job, queue=queues.get(name) or notification.queue,
                                      delay=delays.get(name, notification.delay),
                                      connection=notification.connection)
                def push(j: SendQueuedNotifications = job, d: Destination = dest) -> None:
                    uuids.append(push_command(j, d))

                if getattr(notification, "after_commit", False):
                    defer_if_in_transaction(push)
                else:
                    push()
        return uuids


sender = NotificationSender()


def notify(notifiables: Iterable[Any] | Any, notification: Any) -> None:
    """Send ``notification`` to many notifiables (queued when the notification is queued)."""
    sender.send(notifiables, notification)


def notify_now(notifiables: Iterable[Any] | Any, notification: Any, channels: list[str] | None = None) -> None:
    sender.send_now(notifiables, notification, channels)
