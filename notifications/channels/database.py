"""The ``database`` channel: a row per notification and notifiable in the ``notifications`` table."""

from __future__ import annotations

from typing import Any, ClassVar

from notifications._core import dotted_name
from notifications.store import save


class DatabaseChannel:
    """Stores ``to_database(notifiable)`` (or ``to_dict``) under the notification's id."""

    routed: ClassVar[bool] = True  # the route is the notifiable's key; without one, nothing to store
    on_demand: ClassVar[bool] = False  # a row belongs to a stored notifiable, never to bare routes

    def send(self, notifiable: Any, notification: Any) -> str:
        to_database = getattr(notification, "to_database", None)
        data = to_database(notifiable) if callable(to_database) else notification.to_dict(notifiable)
        owner = notifiable.route_notification_for("database", notification)
        return save(notification.id, dotted_name(type(notification)), notifiable, owner, data)
