"""The ``sms`` channel: ``to_sms(notifiable)`` -> an :class:`SmsMessage` -> the configured provider."""

from __future__ import annotations

from typing import Any, ClassVar

from notifications._core import settings
from notifications.sms.message import SmsMessage
from notifications.sms.providers import SmsProvider, provider_from_url


class SmsChannel:
    """Sends ``to_sms`` messages (an :class:`SmsMessage` or plain text) through a provider."""

    routed: ClassVar[bool] = True  # no phone number, no SMS: skipped with a warning

    def __init__(self, provider: SmsProvider | None = None) -> None:
        self.provider: SmsProvider = provider if provider is not None else provider_from_url(settings().sms)

    async def send(self, notifiable: Any, notification: Any) -> Any:
        to = notifiable.route_notification_for("sms", notification)
        message = notification.to_sms(notifiable)
        if isinstance(message, str):
            message = SmsMessage(message)
        return await self.provider.send(str(to), message)

    def close(self) -> None:
        """Release the provider's pooled connections (called when the channel is forgotten)."""
        close = getattr(self.provider, "close", None)
        if callable(close):
            close()
