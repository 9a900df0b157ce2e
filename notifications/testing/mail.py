"""``fake_mail()``: every mail message built and checked as production would, then recorded
instead of sent (Laravel's ``Mail::fake``).

The mail channel still calls ``to_mail``, renders the message and checks every address, so a
template error or a bad address fails the test as it would fail the delivery; only the
transport is skipped. Each sent message is recorded with its recipients::

    with fake_mail() as mail:
        user.notify(OrderShipped(7))
    mail.assert_sent(MailMessage, lambda m: "shipped" in m.content.subject, to="ada@example.com")

Also the pytest fixture ``mail``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any

from notifications.channels import mail as mail_channel
from notifications.mail.addresses import parse_route
from notifications.mail.message import MailMessage

MailPredicate = Callable[[MailMessage], bool] | None


def _addresses(mime: EmailMessage, header: str) -> list[str]:
    value = mime.get(header)
    addresses: Iterable[Address] = getattr(value, "addresses", ()) if value is not None else ()
    return [address.addr_spec for address in addresses]


@dataclasses.dataclass(frozen=True)
class SentMail:
    """One message the mail channel would have handed to its transport."""

    message: MailMessage
    mime: EmailMessage
    notifiable: Any
    notification: Any

    @property
    def to(self) -> list[str]:
        return _addresses(self.mime, "To")

    @property
    def cc(self) -> list[str]:
        return _addresses(self.mime, "Cc")

    @property
    def bcc(self) -> list[str]:
        return _addresses(self.mime, "Bcc")

    @property
    def subject(self) -> str:
        return str(self.mime["Subject"])

    def has_to(self, route: Any) -> bool:
        """Sent to every address of ``route`` (an address, a list, or ``{address: name}``)."""
        return all(address.addr_spec in self.to for address in parse_route(route))

    def describe(self) -> str:
        return f"{type(self.message).__qualname__} {self.subject!r} to {', '.join(self.to)}"


class MailFake:
    """Records every message the mail channel sends (see the module docstring)."""

    def __init__(self) -> None:
        self.sent: list[SentMail] = []

    def __call__(self, message: MailMessage, mime: EmailMessage, notifiable: Any,
                 notification: Any) -> bool:
        self.sent.append(SentMail(message, mime, notifiable, notification))
        return True

    def sent_of(self, message_type: type = MailMessage, predicate: MailPredicate = None, *,
                to: Any = None) -> list[SentMail]:
        """The recorded mails of ``message_type`` (sent to ``to`` and matching ``predicate``)."""
        return [s for s in self.sent if isinstance(s.message, message_type)
                and (to is None or s.has_to(to)) and (predicate is None or predicate(s.message))]

    def _seen(self) -> str:
        return "\n  ".join(s.describe() for s in self.sent) or "(nothing)"

    def assert_sent(self, message_type: type = MailMessage, predicate: MailPredicate = None, *,
                    to: Any = None, times: int | None = None) -> None:
        found = len(self.sent_of(message_type, predicate, to=to))
        if (times is None and not found) or (times is not None and found != times):
            what = message_type.__qualname__ + (f" to {to!r}" if to is not None else "") + \
                (" matching the predicate" if predicate else "")
            expected = f"{times} time(s)" if times is not None else "at least once"
            raise AssertionError(f"expected {what} sent {expected}, got {found}. Sent:\n  {self._seen()}")

    def assert_not_sent(self, message_type: type = MailMessage, predicate: MailPredicate = None, *,
                        to: Any = None) -> None:
        found = self.sent_of(message_type, predicate, to=to)
        if found:
            raise AssertionError(f"{message_type.__qualname__} was sent {len(found)} time(s):\n  "
                                 + "\n  ".join(s.describe() for s in found))

    def assert_nothing_sent(self) -> None:
        if self.sent:
            raise AssertionError(f"expected no mail. Sent:\n  {self._seen()}")

    def assert_sent_count(self, count: int) -> None:
        if len(self.sent) != count:
            raise AssertionError(f"expected {count} mail(s), got {len(self.sent)}:\n  {self._seen()}")


@contextlib.contextmanager
def fake_mail() -> Iterator[MailFake]:
    """Record mail instead of sending it (every mail channel of this process)."""
    fake = MailFake()
    mail_channel.mail_interceptors.append(fake)
    try:
        yield fake
    finally:
        mail_channel.mail_interceptors.remove(fake)
