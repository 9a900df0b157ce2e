"""Tagged jobs for the tests of ``eventbus jobs``, ``eventbus tags`` and the failure alerts.

Configured from the environment the test gives the worker: TEST_DB_URL (else Redis at
EVENTBUS_REDIS_URL) for the queue, TEST_SLACK_URL and TEST_SMTP_PORT for alerts,
TEST_KEEP_COMPLETED for ``retention={"completed": ...}``, and
``silenced`` naming :class:`Quiet`'s sibling :class:`Hushed`.
"""

from __future__ import annotations

import os
from typing import Any

import eventbus

_alerts = {"slack": os.environ["TEST_SLACK_URL"]} if os.environ.get("TEST_SLACK_URL") else {}
if os.environ.get("TEST_SMTP_PORT"):
    _alerts["mail"] = "ops@example.com"
_settings: dict[str, Any] = {
    "silenced": ["apps.tagged.Hushed"], "alerts": _alerts,
    "mail": f"smtp://127.0.0.1:{os.environ['TEST_SMTP_PORT']}" if os.environ.get("TEST_SMTP_PORT") else None}
if os.environ.get("TEST_KEEP_COMPLETED"):
    _settings["retention"] = {"completed": float(os.environ["TEST_KEEP_COMPLETED"])}
if os.environ.get("TEST_DB_URL"):
    eventbus.configure(default="database", connections={
        "database": {"driver": "database", "url": os.environ["TEST_DB_URL"]}, "redis": {"driver": "null"}},
        **_settings)
else:
    eventbus.configure(default="redis", connections={
        "redis": {"driver": "redis", "url": os.environ.get("EVENTBUS_REDIS_URL", "redis://127.0.0.1:6379/15"),
                  "block_for": 1},
        "database": {"driver": "null"}}, **_settings)


class Order(eventbus.Job):
    """Tagged with its order and customer; fails when told to."""

    def __init__(self, order_id: int, customer: str, fail: bool = False) -> None:
        self.order_id = order_id
        self.customer = customer
        self.fail = fail

    def tags(self) -> list[str]:
        return [f"order:{self.order_id}", f"customer:{self.customer}"]

    def handle(self) -> None:
        if self.fail:
            raise RuntimeError(f"order {self.order_id} cannot ship")


class Invoice(eventbus.Job):
    """Another class of failing job (failure alerts are per class)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def tags(self) -> list[str]:
        return ["invoices"]

    def handle(self) -> None:
        raise ValueError(f"invoice {self.n} does not add up")


class Quiet(eventbus.Job):
    """Silenced by its class: never listed as completed."""

    silenced = True

    def tags(self) -> list[str]:
        return ["customer:ada"]

    def handle(self) -> None:
        pass


class Hushed(eventbus.Job):
    """Silenced by configure(silenced=[...])."""

    def tags(self) -> list[str]:
        return ["customer:ada"]

    def handle(self) -> None:
        pass


class Untagged(eventbus.Job):
    """No tags at all: with ``retention={"completed": 0}`` its completion is not even recorded."""

    def handle(self) -> None:
        pass
