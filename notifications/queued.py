"""``SendQueuedNotifications``: the job that delivers one notification on one channel."""

from __future__ import annotations

from typing import Any

from notifications._core import InteractsWithQueue, RateLimited, adapter_for, dotted_name, serializable
from notifications.delivery import deliver
from notifications.errors import DeliveryError


@serializable
class SendQueuedNotifications(InteractsWithQueue):
    """Delivers ``notification`` to ``notifiable`` on ``channel`` in the worker.

    Retries, timeout and backoff come from the notification. A refusal that says when to come
    back (``DeliveryError.retry_after``: a 429 or 503 with Retry-After) releases the job for that
    long; one that will not change (``DeliveryError.permanent``: another 4xx, a bad address) fails
    it at once; any other exception is retried with the backoff. ``notification.failed(notifiable,
    channel, exc)`` runs once when the delivery has failed for good.
    """

    def __init__(self, notifiable: Any, notification: Any, channel: str) -> None:
        self.notifiable = notifiable
        self.notification = notification
        self.channel = channel
        self.display_name = (f"{type(notification).__module__}.{type(notification).__qualname__}"
                             f" via {channel}")

    # The queue options are the notification's, read when the job is pushed (into the payload's
    # envelope, where the worker reads them); they do not travel a second time in the command.
    @property
    def tries(self) -> Any:
        return getattr(self.notification, "tries", None)

    @property
    def backoff(self) -> Any:
        return getattr(self.notification, "backoff", None)

    @property
    def timeout(self) -> Any:
        return getattr(self.notification, "timeout", None)

    @property
    def max_exceptions(self) -> Any:
        return getattr(self.notification, "max_exceptions", None)

    def tags(self) -> list[str]:
        """The notification's class, the notifiable as ``Class:key`` (its model key, else its
        ``id``; an on-demand notifiable has neither), then the notification's own
        ``tags(notifiable)`` when it has one."""
        found = [dotted_name(type(self.notification))]
        adapter = adapter_for(type(self.notifiable))
        key = adapter.key(self.notifiable) if adapter is not None else getattr(self.notifiable, "id", None)
        if isinstance(key, (str, int)) and not isinstance(key, bool):
            found.append(f"{dotted_name(type(self.notifiable))}:{key}")
        own = getattr(type(self.notification), "tags", None)
        if callable(own):
            found.extend(self.notification.tags(self.notifiable))
        return list(dict.fromkeys(found))

    def middleware(self) -> list[Any]:
        """The channel's rate limit (``rate_limits = {"mail": "mails"}`` on the notification names
        a limiter defined with ``eventbus.rate_limit``), then the notification's own
        ``middleware(notifiable, channel)``."""
        limits = getattr(self.notification, "rate_limits", None) or {}
        limiter = limits.get(self.channel) if isinstance(limits, dict) else None
        own = getattr(self.notification, "middleware", None)
        return ([RateLimited(limiter)] if limiter else []) + \
            (list(own(self.notifiable, self.channel)) if callable(own) else [])

    async def handle(self) -> None:
        try:
            await deliver(self.notifiable, self.notification, self.channel)
        except DeliveryError as exc:
            if exc.retry_after is not None:
                self.release(exc.retry_after)
            elif exc.permanent:
                self.fail(exc)
            else:
                raise

    def failed(self, exc: BaseException) -> None:
        hook = getattr(self.notification, "failed", None)
        if callable(hook):
            hook(self.notifiable, self.channel, exc)
