"""Turning a :class:`MailMessage` into a MIME message: text and HTML alternatives, then attachments.

Address headers are written from parsed :class:`~email.headerregistry.Address` objects, one per
entry (see :mod:`notifications.mail.addresses`): each was checked to be exactly one address, and
its string form quotes what needs quoting, so the header lists exactly those addresses.

The message uses :data:`notifications.mail._policy.MAIL_POLICY`, the stdlib's default policy
without its repeated header parsing. Multipart boundaries are set here rather than by the
generator (which searches the whole message and compiles a regular expression for each one):
``=_`` and a random stem drawn once per process, then ``.0``, ``.1`` for nested parts, so a
multipart's Content-Type reads the same from one message to the next and is parsed once. A
boundary needs to be absent from the text it delimits, not secret: ``=_`` never occurs in
quoted-printable or base64, attachments are base64, and a message whose text contains the stem
gets a fresh one.
"""

from __future__ import annotations

import email.message
import email.utils
import secrets
from collections.abc import Sequence
from email.headerregistry import Address
from typing import Any

from notifications.errors import InvalidAddressError
from notifications.mail._policy import new_message
from notifications.mail.addresses import parse_address, parse_pairs, parse_route
from notifications.mail.message import MailMessage
from notifications.mail.render import render


def _sender(message: MailMessage, default_from: str) -> Address:
    if message.content.from_address:
        address, name = message.content.from_address
        return parse_address(address, "from", name)
    try:
        return parse_address(default_from, "from")
    except InvalidAddressError as exc:
        raise InvalidAddressError(f"{exc}; check the mail_from setting (EVENTBUS_MAIL_FROM)",
                                  field="from") from exc


def build_email(message: MailMessage, route: Any, default_from: str) -> email.message.EmailMessage:
    """The MIME message for ``message`` sent to ``route`` (an address, a list, or ``{address: name}``).

    Every address is checked before anything is built; a bad one raises InvalidAddressError naming
    the field. The Bcc header is included: the SMTP transport sends to it and strips it.
    """
    c = message.content
    sender, to = _sender(message, default_from), parse_route(route)
    cc, bcc, reply_to = parse_pairs(c.cc, "cc"), parse_pairs(c.bcc, "bcc"), parse_pairs(c.reply_to, "reply_to")
    html_part, text_part = render(message)
    mime = new_message()
    mime["Subject"] = c.subject or ""
    mime["From"] = _listed([sender])
    mime["To"] = _listed(to)
    for header, addresses in (("Cc", cc), ("Reply-To", reply_to), ("Bcc", bcc)):
        if addresses:
            mime[header] = _listed(addresses)
    mime["Date"] = email.utils.formatdate(localtime=True)
    mime["Message-ID"] = email.utils.make_msgid(domain=sender.domain)
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
    _set_boundaries(mime, (text_part, html_part))
    return mime


_stem = f"=_{secrets.token_hex(8)}"


def _set_boundaries(mime: email.message.EmailMessage, texts: Sequence[str]) -> None:
    """Give each multipart of ``mime`` a boundary: the process's stem, unless a text holds it."""
    stem = _stem
    while any(stem in text for text in texts):
        stem = f"=_{secrets.token_hex(8)}"
    multiparts = (part for part in mime.walk() if part.is_multipart())
    for depth, part in enumerate(multiparts):
        part.set_boundary(f"{stem}.{depth}")


def _listed(addresses: Sequence[Address]) -> str:
    """An address header's value: the checked addresses, each in its own quoted form."""
    return ", ".join(str(address) for address in addresses)
