"""The ``smtp`` mail transport: aiosmtplib, with a small pool of connections per event loop.

A worker running many mail jobs as tasks on one event loop sends as many messages at once as
the pool has connections (``?pool=N`` in the mail URL, default :data:`DEFAULT_POOL`); a worker
running one job at a time, or sync code calling ``notify_now``, uses one. Connections are opened
when a send needs one and none is idle, and reused across messages (``?reuse=0``: one
connection per message). An idle connection the server closed is replaced once, at the send
that finds it closed; a connection that failed in any other way than the server refusing the
message is dropped, and the next send opens a new one. No connection is shared between event
loops (they cannot be): each loop has its own pool (:class:`eventbus.aio.PerLoop`), closed on
that loop when it shuts down (``asyncio.run``), by :meth:`SmtpTransport.aclose` there, or by
:meth:`SmtpTransport.close` (``notifications.reset()``) from anywhere.

A refusal is a :class:`DeliveryError` whose ``permanent`` follows RFC 5321: a 5xx reply (550 no
such user, 554 rejected) will be given again, so the queued job fails at once instead of
spending its tries; a 4xx reply (421, 451 try later) is transient and the job is retried.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.message
import logging
import threading
from email.headerregistry import AddressHeader
from typing import cast
from urllib.parse import unquote, urlsplit

import aiosmtplib

from notifications._core import ConfigurationError, PerLoop, redact_url
from notifications._urls import UrlOptions
from notifications.errors import DeliveryError
from notifications.mail._policy import MailPolicy, flatten
from notifications.mail.addresses import is_bare

log = logging.getLogger(__name__)

SMTP_OPTIONS = ("cafile", "pool", "reuse", "starttls", "timeout", "tls", "verify")
#: Connections per event loop unless the URL says ``?pool=N``: enough for a concurrent worker to
#: keep a local relay busy, few enough for a remote server's per-client connection limit.
DEFAULT_POOL = 10
MAX_POOL = 100


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
    pool: int = DEFAULT_POOL

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
            reuse=options.flag("reuse", True),
            pool=options.whole_number("pool", DEFAULT_POOL, low=1, high=MAX_POOL))


class _Pool:
    """One event loop's connections: at most ``size`` in use at once, idle ones reused newest first."""

    def __init__(self, size: int) -> None:
        self.slots = asyncio.Semaphore(size)
        self.idle: list[aiosmtplib.SMTP] = []
        self.closed = False

    def take(self) -> aiosmtplib.SMTP | None:
        """An idle connection still open, or None (closed ones found on the way are dropped)."""
        while self.idle:
            client = self.idle.pop()
            if client.is_connected:
                return client
            client.close()
        return None

    def give_back(self, client: aiosmtplib.SMTP) -> None:
        if self.closed or not client.is_connected:
            client.close()
        else:
            self.idle.append(client)

    async def aclose(self) -> None:
        """QUIT the idle connections now; the ones in use are closed when their send ends."""
        self.closed = True
        idle, self.idle = self.idle, []
        for client in idle:
            await _quit(client)


class SmtpTransport:
    """SMTP over aiosmtplib, up to ``settings.pool`` connections per event loop (see the module)."""

    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings
        if settings.password_in_clear:
            log.warning("SMTP to %s:%s sends the password in clear (starttls=0 and no TLS); "
                        "use STARTTLS or smtps:// unless the server is on this host",
                        settings.host, settings.port)
        self._pools: PerLoop[_Pool] = PerLoop(lambda: _Pool(settings.pool), lambda pool: pool.aclose())
        self._lock = threading.Lock()  # loops in several threads may open connections at once
        self.connections_opened = 0

    async def send(self, message: email.message.EmailMessage) -> str:
        """Deliver ``message``; return the server's reply. Failures are DeliveryError."""
        pool = await self._pools.get()
        try:
            async with pool.slots:
                return await self._send_in_slot(pool, message)
        except aiosmtplib.SMTPResponseException as exc:
            raise DeliveryError(f"SMTP server refused the message: {exc.code} {exc.message}",
                                status=exc.code, permanent=is_permanent_reply(exc.code)) from exc
        except aiosmtplib.SMTPRecipientsRefused as exc:
            first = exc.recipients[0]
            raise DeliveryError(f"SMTP server refused every recipient: {first.code} {first.message}",
                                status=first.code,
                                permanent=all(is_permanent_reply(r.code) for r in exc.recipients)) from exc
        except aiosmtplib.SMTPNotSupported as exc:
            raise DeliveryError(f"SMTP server cannot take this message: {exc}", permanent=True) from exc
        except OSError as exc:  # aiosmtplib's connect, disconnect and timeout errors are OSErrors too
            raise DeliveryError(f"cannot reach SMTP server {self.settings.host}:{self.settings.port}: "
                                f"{exc}") from exc

    async def _send_in_slot(self, pool: _Pool, message: email.message.EmailMessage) -> str:
        client = pool.take()
        if client is not None:
            try:
                return await self._send_on(pool, client, message)
            except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPResponseException) as exc:
                if not _closed_while_idle(exc):
                    raise
                log.debug("SMTP connection to %s:%s was closed while idle (%s); opening a new one",
                          self.settings.host, self.settings.port, exc)
        return await self._send_on(pool, await self._connect(), message)

    async def _send_on(self, pool: _Pool, client: aiosmtplib.SMTP, message: email.message.EmailMessage) -> str:
        """Send on ``client``, then give it back to the pool; drop it if the send broke it.

        A refusal (an SMTP error answer) leaves the connection usable: aiosmtplib resets the
        transaction. Anything else (a lost connection, a timeout, a cancelled task mid-way)
        leaves it in an unknown state, so it is closed.
        """
        try:
            reply = await transmit(client, message)
        except (aiosmtplib.SMTPResponseException, aiosmtplib.SMTPRecipientsRefused):
            pool.give_back(client)
            raise
        except BaseException:
            client.close()
            raise
        if self.settings.reuse:
            pool.give_back(client)
        else:
            await _quit(client)
        return reply

    def _client(self) -> aiosmtplib.SMTP:
        s = self.settings
        return aiosmtplib.SMTP(hostname=s.host, port=s.port, username=s.username, password=s.password,
                               use_tls=s.use_tls, start_tls=s.start_tls, timeout=s.timeout,
                               validate_certs=s.validate_certs, cert_bundle=s.cert_bundle)

    async def _connect(self) -> aiosmtplib.SMTP:
        """A new connection, greeted (EHLO), so its extensions are known before the first message."""
        client = self._client()
        try:
            await client.connect()
            await _greet(client)
        except BaseException:
            client.close()
            raise
        with self._lock:
            self.connections_opened += 1
        return client

    async def aclose(self) -> None:
        """Close the running loop's connections (QUIT); the next send opens new ones."""
        await self._pools.aclose()

    def close(self) -> None:
        """Close the connections of every loop, from sync code (``notifications.reset()``)."""
        self._pools.close()


def is_permanent_reply(code: int) -> bool:
    """A 5xx SMTP reply: the server will refuse the same message again (RFC 5321, 4.2.1)."""
    return 500 <= code < 600


def _closed_while_idle(exc: aiosmtplib.SMTPException) -> bool:
    """Did a reused connection turn out closed: gone, or its server's 421 timeout answer waiting in it?"""
    return isinstance(exc, aiosmtplib.SMTPServerDisconnected) or \
        (isinstance(exc, aiosmtplib.SMTPResponseException) and exc.code == 421)


async def _greet(client: aiosmtplib.SMTP) -> None:
    """EHLO, or HELO for a server that does not speak ESMTP (what aiosmtplib does before a send)."""
    if client.is_ehlo_or_helo_needed:
        try:
            await client.ehlo()
        except aiosmtplib.SMTPHeloError:
            if not client.is_connected:
                raise
            await client.helo()


async def _quit(client: aiosmtplib.SMTP) -> None:
    if client.is_connected:
        try:
            await client.quit()
        except (aiosmtplib.SMTPException, OSError):
            pass  # a connection that fails while closing is closed enough
    client.close()


async def transmit(client: aiosmtplib.SMTP, message: email.message.EmailMessage) -> str:
    """Send ``message`` on a connected ``client``; return the server's reply to the data.

    What aiosmtplib's ``send_message`` does (envelope from the headers, SMTPUTF8 and 8BITMIME
    when needed and offered, Bcc left out of the data), with the message written by
    :func:`notifications.mail._policy.flatten` for messages built on that policy. Others,
    and resent messages, go through ``send_message`` itself.
    """
    if not isinstance(message.policy, MailPolicy) or "Resent-Date" in message:
        _, reply = await client.send_message(message)
        return reply
    sender, recipients = envelope(message)
    await _greet(client)
    utf8 = not (sender + "".join(recipients)).isascii()
    options = []
    if utf8:
        if not client.supports_extension("smtputf8"):
            raise aiosmtplib.SMTPNotSupported("an address is not ASCII and the server does not offer SMTPUTF8")
        options.append("SMTPUTF8")
    eight_bit = client.supports_extension("8bitmime")
    if eight_bit:
        options.append("BODY=8BITMIME")
    data = flatten(message, utf8=utf8, eight_bit=eight_bit)
    _, reply = await client.sendmail(sender, recipients, data, mail_options=options)
    return reply


def envelope(message: email.message.EmailMessage) -> tuple[str, list[str]]:
    """(sender, recipients) of ``message``: Sender or From; To, Cc and Bcc. ValueError without them.

    A header value that is one bare address is taken as it is (what the parser would read from
    it); the others are parsed.
    """
    found: dict[str, list[str]] = {name: [] for name in _ENVELOPE}
    for name, value in message.raw_items():
        addresses = found.get(name.lower())
        if addresses is not None:
            if type(value) is str and is_bare(value):
                addresses.append(value)
            else:
                header = cast(AddressHeader, message.policy.header_fetch_parse(name, value))
                addresses.extend(address.addr_spec for address in header.addresses)
    senders = found["sender"] or found["from"]
    recipients = found["to"] + found["cc"] + found["bcc"]
    if not senders or not recipients:
        raise ValueError("a message needs a From (or Sender) and at least one To, Cc or Bcc address")
    return senders[0], recipients


_ENVELOPE = ("sender", "from", "to", "cc", "bcc")
