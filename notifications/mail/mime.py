"""Turning a :class:`MailMessage` into a MIME message: text and HTML alternatives, then attachments."""

from __future__ import annotations

import email.message
import email.utils
from typing import Any

from notifications.mail.message import MailMessage
from notifications.mail.render import render


def _address(pair: tuple[str, str | None]) -> str:
    return email.utils.formataddr((pair[1] or "", pair[0]))


def recipients(route: Any) -> list[str]:
    """The ``To`` entries a mail route stands for: an address, a list of them, or ``{address: name}``."""
    if isinstance(route, dict):
        return [email.utils.formataddr((name or "", addr)) for addr, name in route.items()]
    if isinstance(route, (list, tuple)):
        return [str(r) for r in route]
    return [str(route)]


def build_email(message: MailMessage, to: list[str], default_from: str) -> email.message.EmailMessage:
    """The MIME message for ``message`` sent to ``to``; Bcc is left to :func:`add_bcc`."""
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


def add_bcc(mime: email.message.EmailMessage, message: MailMessage) -> None:
    """Bcc goes in a header the SMTP transport sends to and strips (as smtplib does)."""
    if message.content.bcc:
        mime["Bcc"] = ", ".join(_address(a) for a in message.content.bcc)
