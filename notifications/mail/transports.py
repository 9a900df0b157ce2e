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
        connection per message). Option values are not form-decoded (``+`` stays ``+``); an
        unknown option is a ConfigurationError.

The SMTP transport keeps one connection per event loop and reuses it across messages (a worker
runs its jobs on one loop), reconnecting once when the server dropped it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.message
import email.policy
import logging
import os
import pathlib
import time
import uuid
from typing import Protocol
from urllib.parse import unquote, urlsplit

import aiosmtplib

from notifications._core import ConfigurationError, redact_url
from notifications._urls import UrlOptions
from notifications.errors import DeliveryError

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
            file.write(message.as_bytes(policy=email.policy.SMTP))
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


SMTP_OPTIONS = ("cafile", "reuse", "starttls", "timeout", "tls", "verify")


@dataclasses.dataclass
class SmtpSettings:
    host: str
    port: int
    username: str | None = None
    password: str | None = None
    use_tls: bool = False
    start_tls: bool = False
    timeout: float = 30.0
    validate_certs: bool = True
    cert_bundle: str | None = None
    reuse: bool = True

    @property
    def password_in_clear(self) -> bool:
        """Would the password cross the network unencrypted (no TLS, no STARTTLS)?"""
        return self.password is not None and not self.use_tls and not self.start_tls

    @classmethod
    def from_url(cls, url: str) -> SmtpSettings:
        """Parse ``smtp://`` or ``smtps://`` (nothing connects); a bad URL is a ConfigurationError.

        With credentials and no implicit TLS, STARTTLS is on unless the URL says ``starttls=0``.
        """
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ConfigurationError(f"bad mail URL {redact_url(url)!r}: use log, log:DIR, array, "
                                     "smtp://user:pass@host:port?starttls=1 or smtps://...")
        options = UrlOptions(url, "mail", SMTP_OPTIONS)
        implicit = parts.scheme == "smtps" or options.flag("tls", False)
        credentials = parts.username is not None
        return cls(
            host=parts.hostname, port=parts.port or (465 if implicit else 25),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            use_tls=implicit, start_tls=options.flag("starttls", credentials and not implicit),
            timeout=options.seconds("timeout", 30.0),
            validate_certs=options.flag("verify", True),
            cert_bundle=options.text("cafile"),
            reuse=options.flag("reuse", True))


class SmtpTransport:
    """SMTP over aiosmtplib, one reused connection per event loop."""

    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings
        if settings.password_in_clear:
            log.warning("SMTP to %s:%s sends the password in clear (starttls=0 and no TLS); "
                        "use STARTTLS or smtps:// unless the server is on this host",
                        settings.host, settings.port)
        self._clients: dict[int, tuple[aiosmtplib.SMTP, asyncio.Lock]] = {}
        self.connections_opened = 0

    def _client(self) -> aiosmtplib.SMTP:
        s = self.settings
        return aiosmtplib.SMTP(hostname=s.host, port=s.port, username=s.username, password=s.password,
                               use_tls=s.use_tls, start_tls=s.start_tls, timeout=s.timeout,
                               validate_certs=s.validate_certs, cert_bundle=s.cert_bundle)

    async def _connected(self, loop_id: int) -> tuple[aiosmtplib.SMTP, asyncio.Lock]:
        entry = self._clients.get(loop_id)
        if entry is None:
            entry = self._clients[loop_id] = (self._client(), asyncio.Lock())
        client, _ = entry
        if not client.is_connected:
            await client.connect()
            self.connections_opened += 1
        return entry

    async def send(self, message: email.message.EmailMessage) -> str:
        loop_id = id(asyncio.get_running_loop())
        try:
            return await self._send_once(loop_id, message)
        except aiosmtplib.SMTPServerDisconnected:
            self._clients.pop(loop_id, None)  # dropped while idle: one fresh connection
            return await self._send_once(loop_id, message)
        except (aiosmtplib.SMTPConnectError, aiosmtplib.SMTPConnectTimeoutError, OSError) as exc:
            self._clients.pop(loop_id, None)
            raise DeliveryError(f"cannot reach SMTP server {self.settings.host}:{self.settings.port}: {exc}") from exc
        except aiosmtplib.SMTPResponseException as exc:
            raise DeliveryError(f"SMTP server refused the message: {exc.code} {exc.message}",
                                status=exc.code) from exc

    async def _send_once(self, loop_id: int, message: email.message.EmailMessage) -> str:
        client, lock = await self._connected(loop_id)
        async with lock:
            _, reply = await client.send_message(message)
            if not self.settings.reuse:
                await self.close_loop(loop_id)
            return reply

    def close(self) -> None:
        """Drop every loop's connection without QUIT, from sync code (``notifications.reset()``)."""
        clients, self._clients = list(self._clients.values()), {}
        for client, _ in clients:
            client.close()

    async def close_loop(self, loop_id: int) -> None:
        entry = self._clients.pop(loop_id, None)
        if entry is not None and entry[0].is_connected:
            try:
                await entry[0].quit()
            except aiosmtplib.SMTPException:
                entry[0].close()


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
