"""SMS providers, chosen by ``EVENTBUS_SMS_URL`` / ``configure(sms=...)``::

    log                                        one log line per message
    array                                      kept in memory (``provider.messages``), for tests
    twilio://ACCOUNT_SID:AUTH_TOKEN@api.twilio.com?from=+15550100
    vonage://API_KEY:API_SECRET@rest.nexmo.com?from=Shop
        options: from=SENDER, timeout=SECONDS (default 10), scheme=http to talk to a local
        stand-in; the host may carry a port. Option values are not form-decoded: ``+`` is a plus.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from notifications._core import ConfigurationError, redact_url
from notifications._http import refusal
from notifications._urls import UrlOptions
from notifications.sms.http import HttpProvider, json_body
from notifications.sms.message import SmsMessage

log = logging.getLogger(__name__)


class SmsProvider(Protocol):
    """Sends one SMS; returns the provider's response. A refusal is a :class:`DeliveryError`."""

    async def send(self, to: str, message: SmsMessage) -> Any: ...


class LogProvider:
    """Logs each message instead of sending it (the default)."""

    async def send(self, to: str, message: SmsMessage) -> str:
        log.info("sms to %s from %s: %s", to, message.sender or "-", message.content)
        return f"logged sms to {to}"


class ArrayProvider:
    """Keeps every message in ``messages`` (a real provider, for tests and previews)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, SmsMessage]] = []

    async def send(self, to: str, message: SmsMessage) -> str:
        self.messages.append((to, message))
        return f"stored #{len(self.messages)}"


class TwilioProvider(HttpProvider):
    """Twilio's Messages API: POST /2010-04-01/Accounts/{sid}/Messages.json, basic auth."""

    scheme = "twilio"
    default_host = "api.twilio.com"

    async def send(self, to: str, message: SmsMessage) -> dict[str, Any]:
        response = await self._post(
            f"/2010-04-01/Accounts/{self.username}/Messages.json",
            data={"To": to, "From": message.sender or self.sender or "", "Body": message.content},
            auth=(self.username, self.password))
        body = json_body(response)
        if response.status_code >= 400:
            raise refusal(f"Twilio refused the SMS ({response.status_code}, code {body.get('code')}): "
                          f"{body.get('message') or response.text}", response, str(body.get("code")))
        return body


class VonageProvider(HttpProvider):
    """Vonage's SMS API: POST /sms/json with api_key and api_secret; status "0" is success."""

    scheme = "vonage"
    default_host = "rest.nexmo.com"

    async def send(self, to: str, message: SmsMessage) -> dict[str, Any]:
        data = {"api_key": self.username, "api_secret": self.password, "to": to.lstrip("+"),
                "from": message.sender or self.sender or "", "text": message.content}
        if not message.content.isascii():
            data["type"] = "unicode"
        response = await self._post("/sms/json", data=data)
        body = json_body(response)
        if response.status_code >= 400:
            raise refusal(f"Vonage refused the SMS ({response.status_code}): {response.text}", response)
        for part in body.get("messages", []):
            if str(part.get("status")) != "0":
                raise refusal(f"Vonage refused the SMS (status {part.get('status')}): {part.get('error-text')}",
                              response, str(part.get("status")))
        return body


HTTP_PROVIDERS: dict[str, type[HttpProvider]] = {cls.scheme: cls for cls in (TwilioProvider, VonageProvider)}
OPTIONS = ("from", "scheme", "timeout")


def provider_from_url(url: str) -> SmsProvider:
    """Build the provider an SMS URL names (nothing connects); a bad URL is a ConfigurationError."""
    if url == "log":
        return LogProvider()
    if url == "array":
        return ArrayProvider()
    parts = urlsplit(url)
    if parts.scheme not in HTTP_PROVIDERS or not parts.username or not parts.password:
        raise ConfigurationError(f"bad SMS URL {redact_url(url)!r}: use log, array, "
                                 "twilio://SID:TOKEN@api.twilio.com?from=... or vonage://KEY:SECRET@rest.nexmo.com?from=...")
    cls = HTTP_PROVIDERS[parts.scheme]
    options = UrlOptions(url, "SMS", OPTIONS)
    host = parts.hostname or cls.default_host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return cls(f"{options.choice('scheme', ('https', 'http'))}://{netloc}", unquote(parts.username),
               unquote(parts.password), options.text("from"), options.seconds("timeout", 10.0))
