"""Notification errors, all under ``eventbus.EventBusError``::

    EventBusError
    ├── NotificationFailedError   notify_now(): one or more channels failed (``.failures``)
    ├── DeliveryError             a transport or provider refused one message
    │   └── InvalidAddressError   an address field holds something other than one address per entry
    ├── OnDemandRouteError        Notification.route() with a channel that needs a real notifiable
    └── ConfigurationError
        └── UnknownChannelError   via() names a channel nobody registered
"""

from __future__ import annotations

from notifications._core import ConfigurationError, EventBusError


class NotificationFailedError(EventBusError):
    """One or more channels failed. ``failures`` maps channel name to its exception.

    Raised after every other channel had its try, so one broken channel never stops the rest.
    """

    def __init__(self, failures: dict[str, BaseException]) -> None:
        details = "; ".join(f"{name}: {type(exc).__name__}: {exc}" for name, exc in failures.items())
        super().__init__(f"notification failed on channel(s) {', '.join(failures)} ({details})")
        self.failures = failures


class UnknownChannelError(ConfigurationError):
    """A notification's ``via()`` names a channel that is not registered."""


class DeliveryError(EventBusError):
    """A transport or provider refused a message (SMTP error, provider error response).

    ``status`` and ``code`` are the answer's status and the provider's error code. What the
    queued job does with it: ``retry_after`` (seconds, from a 429 or 503 with Retry-After)
    releases it for that long; ``permanent`` (the same message will be refused again, e.g. a 4xx
    answer or a bad address) fails it at once; otherwise it is retried with its backoff.
    """

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 retry_after: float | None = None, permanent: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.retry_after = retry_after
        self.permanent = permanent


class InvalidAddressError(DeliveryError):
    """A mail address entry is not exactly one valid address; ``field`` names where it was
    (``to``, ``from``, ``reply_to``, ``cc``, ``bcc``). Nothing was sent."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, permanent=True)
        self.field = field


class OnDemandRouteError(EventBusError, ValueError):
    """An on-demand recipient (``Notification.route(channel, ...)``) was given a channel that
    cannot deliver to one, such as ``database``: its rows belong to a stored notifiable."""


__all__ = ["DeliveryError", "InvalidAddressError", "NotificationFailedError", "OnDemandRouteError",
           "UnknownChannelError"]
