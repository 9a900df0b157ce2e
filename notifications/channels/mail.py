"""The ``mail`` channel: ``to_mail(notifiable)`` -> MIME message -> the configured transport."""

from __future__ import annotations

from collections.abc import Callable
from email.message import EmailMessage
from typing import Any, ClassVar

from notifications._core import settings
from notifications.mail.message import MailMessage
from notifications.mail.mime import build_email
from notifications.mail.transports import MailTransport, transport_from_url


#: A mail fake (``notifications.testing.fake_mail``) takes each built message here instead of
#: the transport: ``intercept(message, mime, notifiable, notification)`` returns True when it did.
MailInterceptor = Callable[[MailMessage, EmailMessage, Any, Any], bool]
mail_interceptors: list[MailInterceptor] = []


class MailChannel:
    """Sends ``to_mail`` messages through a transport (default: from ``EVENTBUS_MAIL_URL``)."""

    routed: ClassVar[bool] = True  # no address, no mail: skipped with a warning

    def __init__(self, transport: MailTransport | None = None, from_address: str | None = None) -> None:
        self.transport: MailTransport = transport if transport is not None else transport_from_url(settings().mail)
        self.from_address = from_address or settings().mail_from

    async def send(self, notifiable: Any, notification: Any) -> str:
        route = notifiable.route_notification_for("mail", notification)
        message = notification.to_mail(notifiable)
        if not isinstance(message, MailMessage):
            raise TypeError(f"{type(notification).__qualname__}.to_mail() must return a MailMessage")
        mime = build_email(message, route, self.from_address)
        if any(intercept(message, mime, notifiable, notification) for intercept in mail_interceptors):
            return str(mime["Message-ID"])
        return await self.transport.send(mime)

    def close(self) -> None:
        """Release the transport's pooled connections (called when the channel is forgotten)."""
        close = getattr(self.transport, "close", None)
        if callable(close):
            close()
