"""The ``slack`` channel: ``to_slack(notifiable)`` -> a :class:`SlackMessage` -> an incoming webhook.

The route is the webhook's URL (``https://hooks.slack.com/services/...``): a notifiable's
``route_notification_for_slack``, or ``Notification.route("slack", url)``. The message is posted
as JSON in Block Kit form: a header, an optional section of text and a section of fields, with
``text`` as the fallback Slack shows in notifications.

Slack answers 200 ``ok``, or refuses: 429 and 503 carry ``retry_after`` (the queued job is
released for that long), any other 4xx but 408 is permanent (an archived channel, a revoked
webhook: the job fails at once), a 5xx or a connection that failed is retried with the job's
backoff (:func:`notifications._http.refusal`, as the HTTP SMS providers do).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

import httpx

from notifications._core import PerLoop
from notifications._http import refusal
from notifications.errors import DeliveryError

#: Block Kit's limits: a header's text, a field's text, fields in one section.
HEADER_MAX, FIELD_MAX, FIELDS_MAX, TEXT_MAX = 150, 2000, 10, 3000


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclasses.dataclass(frozen=True)
class SlackMessage:
    """One Slack message: ``header`` (plain text), ``text`` (mrkdwn, also the fallback shown in
    notifications) and ``fields`` (label -> value, shown two by two; at most 10)."""

    text: str
    header: str | None = None
    fields: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def blocks(self) -> list[dict[str, Any]]:
        """The Block Kit blocks: a header, the text, the fields (each only when given)."""
        blocks: list[dict[str, Any]] = []
        if self.header:
            blocks.append({"type": "header",
                           "text": {"type": "plain_text", "text": _cut(self.header, HEADER_MAX)}})
        if self.text:
            blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": _cut(self.text, TEXT_MAX)}})
        if self.fields:
            blocks.append({"type": "section", "fields": [
                {"type": "mrkdwn", "text": _cut(f"*{label}*\n{value}", FIELD_MAX)}
                for label, value in list(self.fields.items())[:FIELDS_MAX]]})
        return blocks

    def to_dict(self) -> dict[str, Any]:
        """The JSON body an incoming webhook takes."""
        return {"text": self.text or self.header or "", "blocks": self.blocks()}


class SlackChannel:
    """Posts ``to_slack`` messages (a :class:`SlackMessage` or plain text) to a webhook URL.

    One ``httpx.AsyncClient`` per event loop, reused across messages and closed with its loop.
    """

    routed: ClassVar[bool] = True  # no webhook URL, no message: skipped with a warning

    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._clients: PerLoop[httpx.AsyncClient] = PerLoop(
            lambda: httpx.AsyncClient(timeout=self.timeout), lambda client: client.aclose())

    async def send(self, notifiable: Any, notification: Any) -> str:
        url = str(notifiable.route_notification_for("slack", notification))
        message = notification.to_slack(notifiable)
        if isinstance(message, str):
            message = SlackMessage(message)
        if not isinstance(message, SlackMessage):
            raise TypeError(f"{type(notification).__qualname__}.to_slack() must return a SlackMessage or text")
        return await self.post(url, message)

    async def post(self, url: str, message: SlackMessage) -> str:
        """Post ``message`` to the webhook ``url``; Slack's answer (``ok``) or a DeliveryError."""
        if not url.startswith(("https://", "http://")):
            raise DeliveryError(f"a Slack webhook URL starts with https://, not {url[:12]!r}",
                                permanent=True)
        try:
            client = await self._clients.get()
            response = await client.post(url, json=message.to_dict())
        except httpx.HTTPError as exc:
            raise DeliveryError(f"cannot reach the Slack webhook at {_host(url)}: {exc}") from exc
        if response.status_code != 200:
            raise refusal(f"the Slack webhook at {_host(url)} answered {response.status_code}: "
                          f"{response.text[:200]}", response, code=response.text[:60] or None)
        return response.text

    async def aclose(self) -> None:
        await self._clients.aclose()

    def close(self) -> None:
        """Close the clients of every event loop (called when the channel is forgotten)."""
        self._clients.close()


def _host(url: str) -> str:
    """Where a webhook points, without its path: the path is the secret."""
    return httpx.URL(url).host or "?"
