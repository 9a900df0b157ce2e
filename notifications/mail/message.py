"""``MailMessage``: a fluent builder and a keyword constructor for one email.

::

    MailMessage(subject="Your order shipped").greeting("Hello Ada!").line("It is on its way.")
        .action("Track it", "https://shop.example/orders/7").salutation("The Shop")

Without ``template`` it renders the package's responsive layout (HTML, autoescaped) and a plain
text version; with ``template="orders/shipped.html"`` it renders your own Jinja2 template from the
configured template directories (a sibling ``.txt`` template gives the text part).
"""

from __future__ import annotations

import dataclasses
import mimetypes
import pathlib
import re
from typing import Any
from urllib.parse import urlsplit

LEVELS = ("info", "success", "error")
ACTION_SCHEMES = ("http", "https", "mailto")
_HEADER_NAME = re.compile(r"[!-9;-~]+")  # RFC 5322 field-name: printable ASCII except ":"
_LINE_BREAK = re.compile(r"[\r\n\x00]")
# Set by the builder's own methods (or by MIME itself); a custom header must not add a second one.
RESERVED_HEADERS = frozenset({
    "bcc", "cc", "content-disposition", "content-transfer-encoding", "content-type", "date", "from",
    "message-id", "mime-version", "reply-to", "resent-bcc", "resent-cc", "resent-from", "resent-sender",
    "resent-to", "return-path", "sender", "subject", "to", "x-tags",
})


def check_header(name: str, value: str) -> None:
    """Refuse a custom header that could add lines or recipients; ValueError names the problem."""
    if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
        raise ValueError(f"bad mail header name {name!r}: use printable ASCII without spaces or ':', "
                         "such as X-Campaign")
    if name.lower() in RESERVED_HEADERS:
        raise ValueError(f"mail header name {name!r} is set by MailMessage itself; use its own method "
                         "(subject, from_, reply_to, cc, bcc, tag)")
    if _LINE_BREAK.search(str(value)):
        raise ValueError(f"mail header value of {name!r} cannot contain line breaks")


def check_action_url(url: str) -> None:
    """Buttons link to the web or to mail only: no ``javascript:``, ``data:`` or relative links."""
    parts = urlsplit(url) if isinstance(url, str) and url == url.strip() else None
    ok = parts is not None and parts.scheme in ACTION_SCHEMES and not _LINE_BREAK.search(url) and \
        (bool(parts.netloc) if parts.scheme != "mailto" else bool(parts.path))
    if not ok:
        raise ValueError(f"bad action URL {url!r}: use an absolute http, https or mailto URL")


@dataclasses.dataclass
class Attachment:
    filename: str
    content: bytes
    mime_type: str


@dataclasses.dataclass
class MailContent:
    """What a :class:`MailMessage` holds, as plain data."""

    subject: str | None = None
    greeting: str | None = None
    intro_lines: list[str] = dataclasses.field(default_factory=list)
    action_text: str | None = None
    action_url: str | None = None
    outro_lines: list[str] = dataclasses.field(default_factory=list)
    salutation: str | None = None
    level: str = "info"
    from_address: tuple[str, str | None] | None = None
    reply_to: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    cc: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    bcc: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    attachments: list[Attachment] = dataclasses.field(default_factory=list)
    tags: list[str] = dataclasses.field(default_factory=list)
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    template: str | None = None
    context: dict[str, Any] = dataclasses.field(default_factory=dict)


class MailMessage:
    """Build an email; every method returns the message so calls chain."""

    def __init__(self, *, subject: str | None = None, greeting: str | None = None,
                 lines: list[str] | None = None, action: tuple[str, str] | None = None,
                 outro: list[str] | None = None, salutation: str | None = None, level: str = "info",
                 from_: str | tuple[str, str | None] | None = None, reply_to: str | None = None,
                 cc: list[str] | None = None, bcc: list[str] | None = None,
                 attachments: list[str | pathlib.Path] | None = None, tags: list[str] | None = None,
                 headers: dict[str, str] | None = None, template: str | None = None,
                 context: dict[str, Any] | None = None) -> None:
        self.content = MailContent(subject=subject, greeting=greeting, salutation=salutation,
                                   template=template, context=dict(context or {}), tags=list(tags or []))
        for name, value in (headers or {}).items():
            self.header(name, value)
        self.set_level(level)
        for text in lines or []:
            self.line(text)
        if action:
            self.action(*action)
        self.content.outro_lines.extend(outro or [])
        if from_:
            self.from_(*(from_ if isinstance(from_, tuple) else (from_,)))
        if reply_to:
            self.reply_to(reply_to)
        for address in cc or []:
            self.cc(address)
        for address in bcc or []:
            self.bcc(address)
        for path in attachments or []:
            self.attach(path)

    def subject(self, text: str) -> MailMessage:
        self.content.subject = text
        return self

    def greeting(self, text: str) -> MailMessage:
        self.content.greeting = text
        return self

    def line(self, text: str) -> MailMessage:
        """A paragraph: before the action button if none was added yet, after it otherwise."""
        target = self.content.outro_lines if self.content.action_text else self.content.intro_lines
        target.append(str(text))
        return self

    def lines(self, texts: list[str]) -> MailMessage:
        for text in texts:
            self.line(text)
        return self

    def action(self, text: str, url: str) -> MailMessage:
        """The button; ``url`` must be an absolute http, https or mailto URL (ValueError otherwise)."""
        check_action_url(url)
        self.content.action_text, self.content.action_url = text, url
        return self

    def salutation(self, text: str) -> MailMessage:
        self.content.salutation = text
        return self

    def set_level(self, level: str) -> MailMessage:
        if level not in LEVELS:
            raise ValueError(f"mail level must be one of {', '.join(LEVELS)}, not {level!r}")
        self.content.level = level
        return self

    def success(self) -> MailMessage:
        return self.set_level("success")

    def error(self) -> MailMessage:
        return self.set_level("error")

    def from_(self, address: str, name: str | None = None) -> MailMessage:
        self.content.from_address = (address, name)
        return self

    def reply_to(self, address: str, name: str | None = None) -> MailMessage:
        self.content.reply_to.append((address, name))
        return self

    def cc(self, address: str, name: str | None = None) -> MailMessage:
        self.content.cc.append((address, name))
        return self

    def bcc(self, address: str, name: str | None = None) -> MailMessage:
        self.content.bcc.append((address, name))
        return self

    def attach(self, path: str | pathlib.Path, *, name: str | None = None,
               mime_type: str | None = None) -> MailMessage:
        file = pathlib.Path(path)
        return self.attach_data(file.read_bytes(), name or file.name, mime_type)

    def attach_data(self, data: bytes, name: str, mime_type: str | None = None) -> MailMessage:
        guessed = mime_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
        self.content.attachments.append(Attachment(name, data, guessed))
        return self

    def tag(self, tag: str) -> MailMessage:
        self.content.tags.append(tag)
        return self

    def header(self, name: str, value: str) -> MailMessage:
        """A custom header such as ``X-Campaign``; names the builder sets itself are refused."""
        check_header(name, value)
        self.content.headers[name] = value
        return self

    def view(self, template: str, context: dict[str, Any] | None = None) -> MailMessage:
        """Render your own Jinja2 template instead of the default layout."""
        self.content.template = template
        self.content.context.update(context or {})
        return self
