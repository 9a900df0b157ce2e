"""``Notifiable``: the mixin that lets a user (or any object) receive notifications."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from notifications import sender
from notifications.store import DatabaseNotification, notifiable_key, notifications_for, unread_notifications_for

if TYPE_CHECKING:
    from notifications.notification import Notification


class Notifiable:
    """``notify``, ``anotify``, ``notify_now``, ``anotify_now`` and the routes each channel needs.

    Default routes: ``email`` for mail, ``phone`` for sms, the object's key (``id``, or its model
    adapter's key) for database. Override ``route_notification_for_<channel>(notification)``.
    """

    def notify(self, notification: Notification) -> None:
        """Send ``notification`` now, or queue it when the notification is queued."""
        sender.send([self], notification)

    async def anotify(self, notification: Notification) -> None:
        """:meth:`notify` for async code: a queued notification's jobs are pushed with the
        driver's async push (the event loop keeps running), one sent now awaits its channels."""
        await sender.asend([self], notification)

    def notify_now(self, notification: Notification, channels: list[str] | None = None) -> None:
        """Send now on every channel (or ``channels``), even a queued notification."""
        sender.send_now([self], notification, channels)

    async def anotify_now(self, notification: Notification, channels: list[str] | None = None) -> None:
        """Like :meth:`notify_now`, awaiting async channels in the running loop."""
        await sender.asend_now([self], notification, channels)

    def route_notification_for(self, channel: str, notification: Notification | None = None) -> Any:
        """Where ``channel`` delivers to this notifiable; None means it has no such route."""
        custom = getattr(self, f"route_notification_for_{channel}", None)
        if callable(custom):
            return custom(notification)
        if channel == "mail":
            return getattr(self, "email", None)
        if channel == "sms":
            return getattr(self, "phone", None)
        if channel == "database":
            return notifiable_key(self)
        return None

    @property
    def notifications(self) -> list[DatabaseNotification]:
        """Database notifications of this notifiable, newest first."""
        return notifications_for(self)

    @property
    def unread_notifications(self) -> list[DatabaseNotification]:
        """Database notifications of this notifiable not marked as read, newest first."""
        return unread_notifications_for(self)
