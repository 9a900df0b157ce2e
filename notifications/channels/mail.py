"""The ``mail`` channel: ``to_mail(notifiable)`` -> MIME message -> the configured transport."""

from __future__ import annotations

import email.message
import email.utils
from typing import Any

from eventbus.runtime import settings
from notifications.mail.message import MailMessage
from notifications.mail.render import render
from notifications.mail.transports import transport_from_url


def _address(pair: tuple[str, str | None]) -> str:
    return email.utils.formataddr((pair[1] or "", pair[0]))


def _recipients(route: Any) -> list[str]:
    if isinstance(route, dict):
        return [email.utils.formataddr((name or "", addr)) for addr, name in route.items()]
    if isinstance(route, (list, tuple)):
        return [str(r) for r in route]
    return [str(route)]


def build_email(message: MailMessage, to: list[str], default_from: str) -> email.message.EmailMessage:
    """The MIME message: text and HTML alternatives, then attachments."""
    c = message.content
    html_part, text_part = render(message)
    mime = email.message.EmailMessage()
    mime["Subject"] = c.subject or ""
    mime["From"] = _address(c.from_address) if c.from_address else default_from
    mime["To"] = ", ".join(to)
    if c.cc:
        mime["Cc"] = ", ".join(_address(a) for a in c.cc)
    if c.reply_to:
        mime["Reply-To"] = ", ".join(_address(a) for a in c.reply_to)
    mime["Date"] = email.utils.formatdate(localtime=True)
    mime["Message-ID"] = email.utils.make_msgid(domain="eventbus.local")
    if c.tags:
        mime["X-Tags"] = ", ".join(c.tags)
    for name, value in c.headers.items():
        mime[name] = value
    mime.set_content(text_part)
    mime.add_alternative(html_part, subtype="html")
    for att in c.attachments:
        maintype, _, subtype = att.mime_type.partition("/")
        mime.add_attachment(att.content, maintype=maintype, subtype=subtype or "octet-stream",
                            filename=att.filename)
    return mime


class MailChannel:
    """Sends ``to_mail`` messages through a transport (default: from ``EVENTBUS_MAIL_URL``)."""

    def __init__(self, transport: Any = None, from_address: str | None = None) -> None:
        self.transport = transport if transport is not None else transport_from_url(settings().mail)
        self.from_address = from_address or settings().mail_from

    async def send(self, notifiable: Any, notification: Any) -> Any:
        route = notifiable.route_notification_for("mail", notification)
        message = notification.to_mail(notifiable)
        if not isinstance(message, MailMessage):
            raise TypeError(f"{type(notification).__qualname__}.to_mail() must return a MailMessage")
        mime = build_email(message, _recipients(route), self.from_address)
        if message.content.bcc:  # SMTP sends to Bcc and strips the header (as smtplib does)
            mime["Bcc"] = ", ".join(_address(a) for a in message.content.bcc)
        return await self.transport.send(mime)
