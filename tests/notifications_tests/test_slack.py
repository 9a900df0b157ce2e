"""The ``slack`` channel against a local HTTP server standing in for an incoming webhook: the
Block Kit body, and what each answer does (a queued delivery run by a real worker is retried
after a 5xx, released for Retry-After after a 429, failed at once after another 4xx)."""

from __future__ import annotations

from typing import Any

import pytest

from eventbus.testing import memory_queue
from helpers import free_port
from notifications import DeliveryError, Notification, NotificationFailedError
from notifications.channels.slack import SlackMessage


class Deployed(Notification):
    def __init__(self, version: str) -> None:
        self.version = version

    def via(self, notifiable: Any) -> list[str]:
        return ["slack"]

    def to_slack(self, notifiable: Any) -> SlackMessage:
        return SlackMessage(f"Version *{self.version}* is live.", header="Deployed",
                            fields={"Version": self.version, "By": "ci"})


class QueuedDeployed(Deployed):
    queued = True
    tries = 3
    backoff = 0


class Plain(Notification):
    def via(self, notifiable: Any) -> list[str]:
        return ["slack"]

    def to_slack(self, notifiable: Any) -> str:
        return "just text"


def test_a_message_is_posted_as_block_kit(slack_stub: tuple) -> None:
    stub, url = slack_stub
    Notification.route("slack", url).notify_now(Deployed("1.4.2"))
    assert stub.paths == ["/services/T000/B000/XXXX"]
    assert stub.posts == [{
        "text": "Version *1.4.2* is live.",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": "Deployed"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "Version *1.4.2* is live."}},
            {"type": "section", "fields": [{"type": "mrkdwn", "text": "*Version*\n1.4.2"},
                                           {"type": "mrkdwn", "text": "*By*\nci"}]},
        ]}]
    Notification.route("slack", url).notify_now(Plain())
    assert stub.posts[1] == {"text": "just text", "blocks": [
        {"type": "section", "text": {"type": "mrkdwn", "text": "just text"}}]}


def test_block_kit_limits_are_kept() -> None:
    message = SlackMessage("x", header="h" * 400, fields={f"f{n}": "v" * 3000 for n in range(12)})
    header, _, fields = message.blocks()
    assert len(header["text"]["text"]) == 150 and header["text"]["text"].endswith("…")
    assert len(fields["fields"]) == 10 and all(len(f["text"]) <= 2000 for f in fields["fields"])


@pytest.mark.parametrize("status, permanent", [(400, True), (403, True), (404, True), (410, True),
                                               (408, False), (429, False), (500, False), (503, False)])
def test_an_answer_says_whether_trying_again_can_help(slack_stub: tuple, status: int, permanent: bool) -> None:
    stub, url = slack_stub
    stub.script = [(status, "invalid_token" if status == 403 else "nope", {"Retry-After": "3"})]
    with pytest.raises(NotificationFailedError) as info:
        Notification.route("slack", url).notify_now(Deployed("1"))
    error = info.value.failures["slack"]
    assert isinstance(error, DeliveryError) and error.status == status
    assert error.permanent is permanent
    assert error.retry_after == (3.0 if status in (429, 503) else None)
    assert "/services/" not in str(error)  # the webhook's path is its secret


def test_an_unreachable_webhook_is_transient() -> None:
    with pytest.raises(NotificationFailedError) as info:
        Notification.route("slack", f"http://127.0.0.1:{free_port()}/hook").notify_now(Deployed("1"))
    error = info.value.failures["slack"]
    assert isinstance(error, DeliveryError) and not error.permanent and error.status is None


def test_a_queued_message_is_retried_by_the_worker_after_a_5xx(slack_stub: tuple) -> None:
    stub, url = slack_stub
    stub.script = [(500, "oops", {})]
    with memory_queue() as run:
        Notification.route("slack", url).notify(QueuedDeployed("2.0"))
        assert stub.posts == []  # queued, not sent
        run.drain(tries=3)
        assert len(stub.posts) == 2 and run.failed() == []


def test_a_queued_message_refused_with_a_4xx_fails_at_once(slack_stub: tuple) -> None:
    stub, url = slack_stub
    stub.script = [(404, "no_service", {})]
    with memory_queue() as run:
        Notification.route("slack", url).notify(QueuedDeployed("2.0"))
        run.drain(tries=3)
        assert len(stub.posts) == 1  # no try spent on a webhook that is gone
        [record] = run.failed()
        assert "DeliveryError: the Slack webhook at 127.0.0.1 answered 404: no_service" in record.exception

