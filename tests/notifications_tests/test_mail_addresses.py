"""Every address field holds exactly one valid address per entry, or the send fails naming the field."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import eventbus
from notifications import DeliveryError, MailMessage, Notifiable, Notification, NotificationFailedError
from notifications.channels import resolve_channel

SMUGGLED = "victim@x.test, attacker@y.test"


@dataclasses.dataclass
class Contact(Notifiable):
    id: int
    email: Any


class Note(Notification):
    def __init__(self, message: MailMessage | None = None) -> None:
        self.message = message or MailMessage(subject="note")

    def via(self, notifiable: Any) -> list[str]:
        return ["mail"]

    def to_mail(self, notifiable: Any) -> MailMessage:
        return self.message


def mail_failure(notifiable: Any, notification: Notification) -> BaseException:
    with pytest.raises(NotificationFailedError) as info:
        notifiable.notify_now(notification)
    return info.value.failures["mail"]


def test_a_comma_in_the_route_reaches_nobody(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    eventbus.configure(mail=f"smtp://127.0.0.1:{port}")
    exc = mail_failure(Contact(1, SMUGGLED), Note())
    assert isinstance(exc, DeliveryError) and exc.field == "to"  # type: ignore[attr-defined]
    assert "to" in str(exc) and SMUGGLED in str(exc)
    assert inbox.envelopes == []


@pytest.mark.parametrize("field, message", [
    ("from", MailMessage(from_=SMUGGLED)),
    ("reply_to", MailMessage(reply_to=SMUGGLED)),
    ("cc", MailMessage(cc=[SMUGGLED])),
    ("bcc", MailMessage(bcc=[SMUGGLED])),
    ("cc", MailMessage().cc("ok@x.test").cc("not-an-address")),
    ("bcc", MailMessage().bcc("someone@")),
    ("reply_to", MailMessage().reply_to("help@x.test", "Help\r\nBcc: attacker@y.test")),
])
def test_every_address_field_is_checked(field: str, message: MailMessage) -> None:
    eventbus.configure(mail="array")
    exc = mail_failure(Contact(1, "ada@example.com"), Note(message))
    assert isinstance(exc, DeliveryError) and exc.field == field  # type: ignore[attr-defined]
    assert resolve_channel("mail").transport.messages == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("route", [[SMUGGLED], {SMUGGLED: "Victim"}, "no-at-sign", "", "a@b@c.test",
                                   "<victim@x.test> attacker@y.test"])
def test_every_route_entry_is_one_address(route: Any) -> None:
    eventbus.configure(mail="array")
    exc = mail_failure(Contact(1, route), Note())
    assert getattr(exc, "field", None) == "to", exc


def test_a_bad_default_from_names_the_setting() -> None:
    eventbus.configure(mail="array", mail_from=SMUGGLED)
    exc = mail_failure(Contact(1, "ada@example.com"), Note())
    assert getattr(exc, "field", None) == "from" and "mail_from" in str(exc)


def test_names_with_commas_and_plain_entries_still_work() -> None:
    eventbus.configure(mail="array", mail_from="Shop <shop@example.com>")
    message = (MailMessage(subject="ok").cc("boss@example.com", "Doe, John").bcc("Audit <audit@example.com>")
               .reply_to("help@example.com"))
    Contact(1, {"ada@example.com": "Lovelace, Ada", "bob@example.com": None}).notify_now(Note(message))
    [mime] = resolve_channel("mail").transport.messages  # type: ignore[attr-defined]
    assert [a.addr_spec for a in mime["To"].addresses] == ["ada@example.com", "bob@example.com"]
    assert mime["To"].addresses[0].display_name == "Lovelace, Ada"
    assert [(a.display_name, a.addr_spec) for a in mime["Cc"].addresses] == [("Doe, John", "boss@example.com")]
    assert [a.addr_spec for a in mime["Bcc"].addresses] == ["audit@example.com"]
    assert mime["From"].addresses[0].addr_spec == "shop@example.com"
