"""A queued SMS notification the worker subprocess delivers (--app notifications_tests.sms_app)."""

from __future__ import annotations

import dataclasses

from apps.jobs import trace
from eventbus import serializable
from notifications import Notifiable, Notification, SmsMessage


@serializable
@dataclasses.dataclass
class Phone(Notifiable):
    id: int
    phone: str


class Reminder(Notification):
    queued = True
    tries = 3
    backoff = 0.1

    def via(self, notifiable: Phone) -> list[str]:
        return ["sms"]

    def to_sms(self, notifiable: Phone) -> SmsMessage:
        return SmsMessage("Your order ships today", sender="+15550199")

    def failed(self, notifiable: Phone, channel: str, exc: BaseException) -> None:
        trace("reminder_failed", f"{channel}:{type(exc).__name__}:{getattr(exc, 'status', None)}")
