"""What the HTTP SMS providers share: a pooled client, posting, and reading a refusal.

Each provider keeps one ``httpx.AsyncClient`` per event loop and reuses its connections across
messages (a worker runs its jobs on one loop; a web app sends from its own), like the SMTP
transport does with its connection. The client is closed on its loop when the loop shuts down
(``asyncio.run`` and ``asyncio.Runner`` close it before they close the loop), so neither the loop
nor its sockets outlive it (:class:`eventbus.aio.PerLoop`).

A refusal becomes a :class:`DeliveryError` that tells the queued job what to do
(:func:`notifications._http.refusal`, shared with the Slack channel).
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx

from notifications._core import PerLoop
from notifications._http import refusal
from notifications.errors import DeliveryError
from notifications.sms.message import SmsMessage


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
