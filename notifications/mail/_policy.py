"""The email policy the mail channel builds and writes its messages with: the stdlib's, made cheap.

With ``email.policy.default`` most of a mail notification's cost in a worker went to headers:
the stdlib parses a value into a header object when it is set, parses it again from scratch each
time it is read (writing one message reads Content-Type about ten times), re-folds every header
when the message is written, and makes a new header class with ``type()`` on each of those steps.

:class:`MailPolicy` keeps the stdlib's behaviour and output and removes the repeated work:

- a short, printable-ASCII value (words separated by single spaces, no encoded-word marker
  ``=?``, fitting one line) is stored as the string it was given, as the stdlib itself stores a
  header it read from bytes, and written as is, which is what folding it would have produced;
- reading a stored string parses it once per distinct value (header objects are immutable), as
  the stdlib would parse it each time;
- each header class is made once per header name.

Anything else (non-ASCII text, a long value, an Address object) takes the stdlib's way, so the
bytes written are the same as ``email.policy.default``'s (``tests/notifications_tests`` compares
them). :func:`flatten` writes a message for SMTP: CRLF line ends, Bcc left out.
"""

from __future__ import annotations

import copy
import email.message
import functools
import io
import re
import sys
from email.generator import BytesGenerator
from email.headerregistry import BaseHeader, HeaderRegistry
from email.policy import EmailPolicy
from typing import Any

_PLAIN = re.compile(r"[!-~]+(?: [!-~]+)*")


class _HeaderClasses(HeaderRegistry):
    """The stdlib's registry, making each header class once instead of on every lookup."""

    def __init__(self) -> None:
        super().__init__()
        self._made: dict[str, type[BaseHeader]] = {}

    def __getitem__(self, name: str) -> type[BaseHeader]:
        key = name.lower()
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = super().__getitem__(name)
        return made

    def map_to_type(self, name: str, cls: Any) -> None:
        super().map_to_type(name, cls)
        self._made.pop(name.lower(), None)


@functools.lru_cache(maxsize=1024)
def _parsed(factory: Any, name: str, value: str) -> Any:
    return factory(name, value)


class MailPolicy(EmailPolicy):
    """``email.policy.default`` that keeps short plain header values as strings (see the module)."""

    def _plain(self, name: str, value: object) -> bool:
        """Is ``value`` a string (not a header object) that folding would write unchanged on one line?"""
        return (type(value) is str and len(name) + 2 + len(value) <= (self.max_line_length or sys.maxsize)
                and "=?" not in value and _PLAIN.fullmatch(value) is not None)

    def header_store_parse(self, name: str, value: Any) -> tuple[str, Any]:
        if self._plain(name, value):
            return name, value
        return super().header_store_parse(name, value)

    def header_fetch_parse(self, name: str, value: Any) -> Any:
        if type(value) is str and "\n" not in value and "\r" not in value:  # else the stdlib unfolds it first
            return _parsed(self.header_factory, name, value)
        return super().header_fetch_parse(name, value)


MAIL_POLICY = MailPolicy(header_factory=_HeaderClasses())
_SMTP_POLICIES = {(utf8, cte): MAIL_POLICY.clone(linesep="\r\n", utf8=utf8, cte_type=cte)
                  for utf8 in (False, True) for cte in ("7bit", "8bit")}


def new_message() -> email.message.EmailMessage:
    """An empty message on :data:`MAIL_POLICY`."""
    return email.message.EmailMessage(policy=MAIL_POLICY)


def flatten(message: email.message.EmailMessage, *, utf8: bool = False, eight_bit: bool = True,
            bcc: bool = False) -> bytes:
    """``message`` as SMTP DATA: CRLF line ends, without its Bcc and Resent-Bcc headers.

    ``utf8`` when the server takes SMTPUTF8 and the message needs it; ``eight_bit`` when the
    server takes 8BITMIME (else 8-bit parts are re-encoded to 7 bits); ``bcc`` keeps the Bcc
    headers (for a copy on disk). The same bytes as aiosmtplib's ``send_message`` writes (and
    ``as_bytes(policy=email.policy.SMTP)`` with ``bcc``), without the repeated header parsing.
    """
    outgoing = message
    if not bcc:
        outgoing = copy.copy(message)
        del outgoing["Bcc"]
        del outgoing["Resent-Bcc"]
    with io.BytesIO() as out:
        policy = _SMTP_POLICIES[utf8, "8bit" if eight_bit else "7bit"]
        BytesGenerator(out, policy=policy).flatten(outgoing)
        return out.getvalue()
