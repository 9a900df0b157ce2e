"""``Notification``: what to say, on which channels, and how to queue it.

Subclasses are registered for payloads automatically, so a queued notification travels as JSON.
Options are class attributes (``queued``, ``connection``, ``queue``, ``delay``, ``tries``,
``backoff``, ``timeout``, ``after_commit``); ``via_queues()`` and ``with_delay()`` refine queue
and delay per channel.
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from typing import Any, ClassVar, Self

from notifications import sender
from notifications._core import option_names, refuse_misspelt_options, register, serializable
from notifications.channels.registry import accepts_on_demand
from notifications.errors import OnDemandRouteError


class Notification:
    """Base class for notifications."""

    queued: ClassVar[bool] = False
    connection: ClassVar[str | None] = None
    queue: ClassVar[str | None] = None
    delay: ClassVar[Any] = None
    tries: ClassVar[int | None] = None
    backoff: ClassVar[Any] = None
    timeout: ClassVar[float | None] = None
    after_commit: ClassVar[bool] = False
    #: A rate limiter per channel, e.g. ``{"mail": "mails"}`` after
    #: ``eventbus.rate_limit("mails", per_second=10)``: queued deliveries on that channel keep to
    #: it across every worker.
    rate_limits: ClassVar[dict[str, str]] = {}
    max_exceptions: ClassVar[int | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        refuse_misspelt_options(cls, NOTIFICATION_OPTIONS, "notification")
        register(cls)

    @property
    def id(self) -> str:
        """The uuid of this notification's deliveries to one notifiable, shared by its channels.

        Sending gives each notifiable a copy with a fresh id (Laravel's rule), so rows of the
        database channel never collide. An id you set (``notification.id = ...``) is kept instead,
        for every notifiable. Reading the id of a notification not sent yet gives a uuid that
        sending does not reuse.
        """
        value = self.__dict__.get("id") or self.__dict__.get("_id")
        if value:
            return str(value)
        return str(self.__dict__.setdefault("_unsent_id", str(uuid.uuid4())))

    @id.setter
    def id(self, value: str) -> None:
        self.__dict__["id"] = str(value)

    def copy_for_delivery(self) -> Self:
        """A shallow copy for one notifiable's deliveries: its own id, unless one was set."""
        delivered = copy.copy(self)
        delivered.__dict__.pop("_unsent_id", None)
        delivered.__dict__["id"] = str(self.__dict__.get("id") or self.__dict__.get("_id") or uuid.uuid4())
        return delivered

    def via(self, notifiable: Any) -> list[Any]:
        """Channel names (or channel classes) to deliver on."""
        return []

    def should_send(self, notifiable: Any, channel: str) -> bool:
        """Last word before a channel delivers; checked when the delivery happens (also queued)."""
        return True

    def via_queues(self) -> dict[str, str]:
        """Queue per channel, e.g. ``{"mail": "mail", "sms": "sms"}``."""
        return {}

    def with_delay(self, notifiable: Any) -> dict[str, Any]:
        """Delay per channel, e.g. ``{"sms": timedelta(minutes=5)}``."""
        return {}

    def to_dict(self, notifiable: Any) -> dict[str, Any]:
        """Data for the database channel when ``to_database`` is not defined."""
        raise NotImplementedError(f"{type(self).__qualname__} needs to_database() or to_dict()")

    def failed(self, notifiable: Any, channel: str, exc: BaseException) -> None:
        """Called once when a queued delivery on ``channel`` has failed for good."""

    @staticmethod
    def route(channel: str, route: Any) -> AnonymousNotifiable:
        """An on-demand recipient: ``Notification.route("mail", "a@b.c").notify(n)``."""
        return AnonymousNotifiable().route(channel, route)


#: Every option a notification class may set (the class attributes declared on :class:`Notification`).
NOTIFICATION_OPTIONS = option_names(Notification)


@serializable
@dataclasses.dataclass
class AnonymousNotifiable:
    """A recipient that is only a set of routes (Laravel's on-demand notifications).

    Channels that need a stored notifiable (``database``) refuse it: :meth:`route` raises, and
    the sender skips them for it.
    """

    on_demand: ClassVar[bool] = True
    routes: dict[str, Any] = dataclasses.field(default_factory=dict)

    def route(self, channel: str, route: Any) -> AnonymousNotifiable:
        """Deliver on ``channel`` to ``route`` (an address, a phone number, ...)."""
        if not accepts_on_demand(channel):
            raise OnDemandRouteError(f"the {channel} channel does not support on-demand notifications: "
                                     "notify a notifiable that is stored instead")
        self.routes[channel] = route
        return self

    def route_notification_for(self, channel: str, notification: Any = None) -> Any:
        return self.routes.get(channel)

    def notify(self, notification: Notification) -> None:
        """Send ``notification`` now, or queue it when the notification is queued."""
        sender.send([self], notification)

    async def anotify(self, notification: Notification) -> None:
        """:meth:`notify` for async code (queued jobs are pushed without blocking the loop)."""
        await sender.asend([self], notification)

    def notify_now(self, notification: Notification, channels: list[str] | None = None) -> None:
        """Send now on every channel (or ``channels``), even a queued notification."""
        sender.send_now([self], notification, channels)

    async def anotify_now(self, notification: Notification, channels: list[str] | None = None) -> None:
        """Like :meth:`notify_now`, awaiting async channels in the running loop."""
        await sender.asend_now([self], notification, channels)
