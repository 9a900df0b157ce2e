"""``Notifiable``: the mixin that lets a user (or any object) receive notifications."""

from __future__ import annotations

from typing import Any

from eventbus.serializer import adapter_for


class Notifiable:
    """``notify``, ``notify_now``, ``anotify_now`` and the routes each channel needs.

    Default routes: ``email`` for mail, ``phone`` for sms, the object's key (``id``, or its model
    adapter's key) for database. Override ``route_notification_for_<channel>(notification)``.
    """

    def notify(self, notification: Any) -> None:
        """Send ``notification`` now, or queue it when the notification is queued."""
        from notifications.sender import sender

        sender.send([self], notification)

    def notify_now(self, notification: Any, channels: list[str] | None = None) -> None:
        """Send now on every channel (or ``channels``), even a queued notification."""
        from notifications.sender import sender

        sender.send_now([self], notification, channels)

    async def anotify_now(self, notification: Any, channels: list[str] | None = None) -> None:
        """Like :meth:`notify_now`, awaiting async channels in the running loop."""
        from notifications.sender import sender

        await sender.asend_now([self], notification, channels)

    def route_notification_for(self, channel: str, notification: Any = None) -> Any:
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
    def notifications(self) -> list[Any]:
        """Database notifications of this notifiable, newest first."""
        from notifications.channels.database import notifications_for

        return notifications_for(self)

    @property
    def unread_notifications(self) -> list[Any]:
        from notifications.channels.database import unread_notifications_for

        return unread_notifications_for(self)


def notifiable_key(notifiable: Any) -> Any:
    adapter = adapter_for(type(notifiable))
    if adapter is not None:
        return adapter.key(notifiable)
    return getattr(notifiable, "id", None)
