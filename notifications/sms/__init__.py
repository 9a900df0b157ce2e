"""SMS messages and providers."""

from notifications.sms.message import SmsMessage
from notifications.sms.providers import (
    ArrayProvider,
    LogProvider,
    SmsProvider,
    TwilioProvider,
    VonageProvider,
    provider_from_url,
)

__all__ = ["ArrayProvider", "LogProvider", "SmsMessage", "SmsProvider", "TwilioProvider", "VonageProvider",
           "provider_from_url"]
