"""``fake_mail()``: mail built and checked as production would, recorded instead of sent."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import redis

import eventbus
from eventbus import serializable
from notifications import (
    InvalidAddressError,
    MailMessage,
    Notifiable,
    Notification,
    NotificationFailedError,
    notify,
)
from notifications.testing import MailFake, fake_mail


@serializable
@dataclasses.dataclass
class Customer(Notifiable):
    id: int
    email: str


class OrderShipped(Notification):
    queued = True

    def __init__(self, order: int) -> None:
        self.order = order

    def via(self, notifiable: Customer) -> list[str]:
        return ["mail"]

    def to_mail(self, notifiable: Customer) -> MailMessage:
        return (MailMessage(subject=f"Order {self.order} shipped").greeting("Hello")
                .line("It is on its way.").cc("sales@shop.example"))


class Invoice(MailMessage):
    """A message type of the app's own (Laravel's Mailable classes)."""


class InvoiceReady(Notification):
    def via(self, notifiable: Any) -> list[str]:
        return ["mail"]

    def to_mail(self, notifiable: Any) -> MailMessage:
        return Invoice(subject="Your invoice")


def test_a_worker_sends_the_queued_mail_into_the_fake(use_redis: redis.Redis) -> None:
    ada, bob = Customer(1, "ada@example.com"), Customer(2, "bob@example.com")
    notify([ada, bob], OrderShipped(7))
    with fake_mail() as mail:
        worker = eventbus.Worker.for_connection(
            options=eventbus.WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0))
        assert worker.run() == 0
    mail.assert_sent(MailMessage, to="ada@example.com")
    mail.assert_sent(MailMessage, lambda m: m.content.subject == "Order 7 shipped", to="bob@example.com",
                     times=1)
    mail.assert_sent_count(2)
    mail.assert_not_sent(Invoice)
    [first] = mail.sent_of(to="ada@example.com")
    assert first.cc == ["sales@shop.example"] and first.notifiable == ada
    assert isinstance(first.notification, OrderShipped) and "It is on its way." in first.mime.as_string()
    assert eventbus.failed_store().all() == []
    with pytest.raises(AssertionError, match="expected MailMessage to 'eve@example.com' sent at least once, "
                                             "got 0. Sent:\n  MailMessage 'Order 7 shipped' to"):
        mail.assert_sent(MailMessage, to="eve@example.com")


def test_message_types_bad_addresses_and_nothing_sent() -> None:
    with fake_mail() as mail:
        mail.assert_nothing_sent()
        Notification.route("mail", "ada@example.com").notify(InvoiceReady())
        with pytest.raises(NotificationFailedError) as refused:  # checked as production checks it
            Notification.route("mail", "ada@example.com, eve@evil.test").notify(InvoiceReady())
    assert isinstance(refused.value.failures["mail"], InvalidAddressError)
    mail.assert_sent(Invoice, to=["ada@example.com"], times=1)
    with pytest.raises(AssertionError, match="Invoice was sent 1 time"):
        mail.assert_not_sent(Invoice)
    with pytest.raises(AssertionError, match="expected no mail"):
        mail.assert_nothing_sent()


def test_the_mail_fixture(mail: MailFake) -> None:
    Notification.route("mail", {"ada@example.com": "Ada"}).notify(InvoiceReady())
    mail.assert_sent(Invoice, to="ada@example.com")
