"""What the HTTP SMS providers share: a pooled client, posting, and reading a refusal.

Each provider keeps one ``httpx.AsyncClient`` per event loop and reuses its connections across
messages (a worker runs its jobs on one loop; a web app sends from its own), like the SMTP
transport does with its connection. The client is closed on its loop when the loop shuts down
(``asyncio.run`` and ``asyncio.Runner`` close it before they close the loop), so neither the loop
nor its sockets outlive it (:class:`eventbus.aio.PerLoop`).

A refusal becomes a :class:`DeliveryError` that tells the queued job what to do: 429 and 503 carry
``retry_after`` from the Retry-After header (seconds or an HTTP date); any other 4xx except 408
(request timeout) is ``permanent``, since the same request will be refused again.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any, ClassVar

import httpx

from notifications._core import PerLoop
from notifications.errors import DeliveryError
from notifications.sms.message import SmsMessage

WAIT_STATUSES = (429, 503)
TRANSIENT_CLIENT_STATUSES = (408, 429)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (``120`` or an HTTP date); None when absent or unreadable."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def refusal(message: str, response: httpx.Response, code: str | None = None) -> DeliveryError:
    """The DeliveryError for a provider's error answer, with ``retry_after`` and ``permanent`` set."""
    status = response.status_code
    wait = retry_after_seconds(response.headers.get("Retry-After")) if status in WAIT_STATUSES else None
    permanent = 400 <= status < 500 and status not in TRANSIENT_CLIENT_STATUSES
    return DeliveryError(message, status=status, code=code, retry_after=wait, permanent=permanent)


def json_body(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object, or ``{}`` when it is not one."""
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


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
        self._clients: PerLoop[httpx.AsyncClient] = PerLoop(
            lambda: httpx.AsyncClient(timeout=self.timeout), lambda client: client.aclose())

    @property
    def clients_opened(self) -> int:
        """How many clients were made: one per event loop (and one more after each close)."""
        return self._clients.opened

    async def _post(self, path: str, **kwargs: Any) -> httpx.Response:
        try:
            client = await self._clients.get()
            return await client.post(self.base_url + path, **kwargs)
        except httpx.HTTPError as exc:
            raise DeliveryError(f"cannot reach SMS provider at {self.base_url}: {exc}") from exc

    async def aclose(self) -> None:
        """Close this event loop's client and its connections (the next send opens a new one)."""
        await self._clients.aclose()

    def close(self) -> None:
        """Close the clients of every event loop, from sync code (``notifications.reset()``)."""
        self._clients.close()

    async def send(self, to: str, message: SmsMessage) -> dict[str, Any]:
        raise NotImplementedError
