"""Mail transports: ``smtp`` (aiosmtplib), ``log`` (.eml files), ``array`` (in memory).

Chosen by URL (``EVENTBUS_MAIL_URL`` or ``configure(mail=...)``)::

    log                      .eml files in ./storage/mail, one log line each
    log:/var/mail/outbox     .eml files in that directory
    array                    kept in memory (``transport.messages``), for tests
    smtp://user:pass@host:587?timeout=10            STARTTLS, required when there are credentials
    smtp://host:25                                  no credentials: plain SMTP (starttls=1 to upgrade)
    smtps://user:pass@host:465                      implicit TLS
        extra query options: starttls=0 (send credentials in clear, with a warning: only for a
        server on this host), verify=0 (accept any certificate), cafile=PATH, reuse=0 (a new
        connection per message), pool=N (at most N connections per event loop, default 10).
        Option values are not form-decoded (``+`` stays ``+``); an unknown option is a
        ConfigurationError.

The SMTP transport (:mod:`notifications.mail.smtp`) keeps a small pool of connections per event
loop and reuses them across messages; concurrent sends on one loop use up to ``pool`` of them.
"""

from __future__ import annotations

import email.message
import logging
import os
import pathlib
import time
import uuid
from typing import Protocol

from notifications.mail._policy import flatten
from notifications.mail.smtp import SmtpSettings, SmtpTransport

log = logging.getLogger(__name__)


class MailTransport(Protocol):
    async def send(self, message: email.message.EmailMessage) -> str:
        """Deliver ``message``; return a transport response (e.g. the SMTP reply)."""
        ...


class ArrayTransport:
    """Keeps every message in ``messages`` (a real transport, for tests and previews)."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []

    async def send(self, message: email.message.EmailMessage) -> str:
        self.messages.append(message)
        return f"stored #{len(self.messages)}"


class LogTransport:
    """Writes each message as an .eml file and logs where it went.

    Mail holds personal data (and reset links), so the files are readable by their owner only
    (0600), and a directory this transport creates is too (0700); an existing one is left alone.
    """

    def __init__(self, directory: str | pathlib.Path = "storage/mail") -> None:
        self.directory = pathlib.Path(directory)
        self.last_path: pathlib.Path | None = None

    async def send(self, message: email.message.EmailMessage) -> str:
        self._ensure_directory()
        path = self.directory / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}.eml"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as file:
            file.write(flatten(message, bcc=True))
        self.last_path = path
        log.info("mail to %s, subject %r, written to %s", message["To"], message["Subject"], path)
        return str(path)

    def _ensure_directory(self) -> None:
        if self.directory.is_dir():
            return
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.directory.mkdir(mode=0o700)
        except FileExistsError:
            return  # made a moment ago by another process: its mode is its business
        os.chmod(self.directory, 0o700)  # whatever the umask


def _log_directory(url: str) -> str | None:
    """The directory of a ``log`` or ``log:DIR`` URL; None for any other URL."""
    if url == "log":
        return "storage/mail"
    if url.startswith("log:"):
        return url[4:].removeprefix("//") or "storage/mail"
    return None


def check_mail_url(url: str) -> None:
    """Raise ConfigurationError for a bad mail URL without building anything."""
    if url != "array" and _log_directory(url) is None:
        SmtpSettings.from_url(url)


def transport_from_url(url: str) -> MailTransport:
    """Build the transport a mail URL names; a bad URL is one clear ConfigurationError."""
    if url == "array":
        return ArrayTransport()
    directory = _log_directory(url)
    if directory is not None:
        return LogTransport(directory)
    return SmtpTransport(SmtpSettings.from_url(url))

