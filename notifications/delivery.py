"""Delivering one notification to one notifiable on one channel.

The steps, in Laravel's order: ``should_send`` has the last word; a channel that needs a route
skips a notifiable without one (with a warning); a ``NotificationSending`` listener returning
``False`` cancels; then the channel sends, followed by ``NotificationSent`` with its response or
``NotificationFailed`` with the exception, which then propagates to the caller.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from notifications._core import emit, emit_until
from notifications.channels.registry import needs_route, resolve_channel
from notifications.events import NotificationFailed, NotificationSending, NotificationSent
from notifications.sendable import Sendable

log = logging.getLogger(__name__)


def has_route(notifiable: Any, notification: Sendable, channel: str) -> bool:
    """False (and a warning) when the channel needs a route and the notifiable has none."""
    if not needs_route(channel) or notifiable.route_notification_for(channel, notification) is not None:
        return True
    log.warning("%s has no %s route; skipping %s on %s", type(notifiable).__name__, channel,
                type(notification).__name__, channel)
    return False


async def deliver(notifiable: Any, notification: Sendable, channel: str) -> Any:
    """Send ``notification`` to ``notifiable`` on ``channel``; return the channel's response.

    Returns None without sending when ``should_send``, a missing route or a ``NotificationSending``
    listener says no. The channel's exception propagates after ``NotificationFailed``.
    """
    if not notification.should_send(notifiable, channel) or not has_route(notifiable, notification, channel):
        return None
    if emit_until(NotificationSending(notifiable, notification, channel)) is False:
        return None
    try:
        response = resolve_channel(channel).send(notifiable, notification)
        if inspect.isawaitable(response):
            response = await response
    except Exception as exc:
        emit(NotificationFailed(notifiable, notification, channel, exc))
        raise
    emit(NotificationSent(notifiable, notification, channel, response))
    return response
