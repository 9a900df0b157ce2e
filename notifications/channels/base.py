"""The ``Channel`` protocol: what ``via()`` names and the sender delivers through."""

from __future__ import annotations

from typing import Any, Protocol


class Channel(Protocol):
    """Any object with ``send(notifiable, notification)``, plain or ``async def``.

    Optional class attributes tell the sender what the channel needs: ``routed = True`` skips a
    notifiable without a route for it (with a warning); ``on_demand = False`` refuses on-demand
    recipients (``Notification.route(...)``).
    """

    def send(self, notifiable: Any, notification: Any) -> Any: ...
