"""Notifications the worker subprocess delivers (--app apps.notify_app)."""

from __future__ import annotations

import dataclasses

from apps.jobs import trace
from eventbus import serializable
from notifications import MailMessage, Notifiable, Notification, SmsMessage


@serializable
@dataclasses.dataclass
class Customer(Notifiable):
    id: int
    name: str
    email: str
    phone: str


class Shipped(Notification):
    queued = True
    tries = 2
    backoff = 0.1

    def __init__(self, order_id: int) -> None:
        self.order_id = order_id

    def via(self, notifiable: Customer) -> list[str]:
        return ["mail", "sms", "database"]

    def via_queues(self) -> dict[str, str]:
        return {"mail": "mail"}

    def to_mail(self, notifiable: Customer) -> MailMessage:
        return MailMessage(subject=f"Order {self.order_id} shipped", greeting=f"Hi {notifiable.name}")

    def to_sms(self, notifiable: Customer) -> SmsMessage:
        return SmsMessage(f"Order {self.order_id} shipped")

    def to_database(self, notifiable: Customer) -> dict[str, int]:
        return {"order_id": self.order_id}

    def failed(self, notifiable: Customer, channel: str, exc: BaseException) -> None:
        trace("notification_failed", f"{channel}:{type(exc).__name__}")
