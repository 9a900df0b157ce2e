"""A queued mail notification the worker subprocess delivers (--app notifications_tests.mail_app)."""

from __future__ import annotations

import dataclasses

from eventbus import serializable
from notifications import MailMessage, Notifiable, Notification


@serializable
@dataclasses.dataclass
class Shopper(Notifiable):
    id: int
    email: str


class Receipt(Notification):
    queued = True

    def __init__(self, n: int) -> None:
        self.n = n

    def via(self, notifiable: Shopper) -> list[str]:
        return ["mail"]

    def to_mail(self, notifiable: Shopper) -> MailMessage:
        return MailMessage(subject=f"Receipt {self.n}").greeting("Hello").line("Thanks for your order.")


class Invoice(Receipt):
    """Three tries, no wait between them: what a refusal does shows in how often it is sent."""

    tries = 3
    backoff = 0
