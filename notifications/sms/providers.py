"""SMS providers, chosen by ``EVENTBUS_SMS_URL`` / ``configure(sms=...)``::

    log                                        one log line per message
    array                                      kept in memory (``provider.messages``), for tests
    twilio://ACCOUNT_SID:AUTH_TOKEN@api.twilio.com?from=+15550100
    vonage://API_KEY:API_SECRET@rest.nexmo.com?from=Shop
        add scheme=http to talk to a local stand-in; the host may carry a port
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

import httpx

from notifications._core import ConfigurationError, redact_url
from notifications.errors import DeliveryError
from notifications.sms.message import SmsMessage

log = logging.getLogger(__name__)


class SmsProvider(Protocol):
    """Sends one SMS; returns the provider's response. A refusal is a :class:`DeliveryError`."""

    async def send(self, to: str, message: SmsMessage) -> Any: ...


class LogProvider:
    async def send(self, to: str, message: SmsMessage) -> str:
        log.info("sms to %s from %s: %s", to, message.sender or "-", message.content)
        return f"logged sms to {to}"


class ArrayProvider:
    def __init__(self) -> None:
        self.messages: list[tuple[str, SmsMessage]] = []

    async def send(self, to: str, message: SmsMessage) -> str:
        self.messages.append((to, message))
        return f"stored #{len(self.messages)}"


class HttpProvider:
    """A provider behind an HTTP API; subclasses name their URL scheme and default host."""

    scheme: ClassVar[str]
    default_host: ClassVar[str]

    def __init__(self, base_url: str, username: str, password: str, sender: str | None,
                 timeout: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self.sender = sender
        self.timeout = timeout

    async def _post(self, path: str, **kwargs: Any) -> httpx.Response:
        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                return await client.post(self.base_url + path, **kwargs)
        except httpx.HTTPError as exc:
            raise DeliveryError(f"cannot reach SMS provider at {self.base_url}: {exc}") from exc

    async def send(self, to: str, message: SmsMessage) -> dict[str, Any]:
        raise NotImplementedError


class TwilioProvider(HttpProvider):
    """Twilio's Messages API: POST /2010-04-01/Accounts/{sid}/Messages.json, basic auth."""

    scheme = "twilio"
    default_host = "api.twilio.com"

    async def send(self, to: str, message: SmsMessage) -> dict[str, Any]:
        response = await self._post(
            f"/2010-04-01/Accounts/{self.username}/Messages.json",
            data={"To": to, "From": message.sender or self.sender or "", "Body": message.content},
            auth=(self.username, self.password))
        body = _json(response)
        if response.status_code >= 400:
            raise DeliveryError(f"Twilio refused the SMS ({response.status_code}, code "
                                f"{body.get('code')}): {body.get('message') or response.text}",
                                status=response.status_code, code=str(body.get("code")))
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
        body = _json(response)
        if response.status_code >= 400:
            raise DeliveryError(f"Vonage refused the SMS ({response.status_code}): {response.text}",
                                status=response.status_code)
        for part in body.get("messages", []):
            if str(part.get("status")) != "0":
                raise DeliveryError(f"Vonage refused the SMS (status {part.get('status')}): "
                                    f"{part.get('error-text')}", status=response.status_code,
                                    code=str(part.get("status")))
        return body


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


HTTP_PROVIDERS: dict[str, type[HttpProvider]] = {cls.scheme: cls for cls in (TwilioProvider, VonageProvider)}


def provider_from_url(url: str) -> SmsProvider:
    """Build the provider an SMS URL names; a bad URL is one clear ConfigurationError."""
    if url == "log":
        return LogProvider()
    if url == "array":
        return ArrayProvider()
    parts = urlsplit(url)
    if parts.scheme not in HTTP_PROVIDERS or not parts.username or not parts.password:
        raise ConfigurationError(f"bad SMS URL {redact_url(url)!r}: use log, array, "
                                 "twilio://SID:TOKEN@api.twilio.com?from=... or vonage://KEY:SECRET@rest.nexmo.com?from=...")
    cls = HTTP_PROVIDERS[parts.scheme]
    query = parse_qs(parts.query)
    scheme = query.get("scheme", ["https"])[-1]
    host = parts.hostname or cls.default_host
    netloc = f"{host}:{parts.port}" if parts.port else host
    return cls(f"{scheme}://{netloc}", unquote(parts.username), unquote(parts.password),
               query.get("from", [None])[-1], float(query.get("timeout", ["10"])[-1]))
