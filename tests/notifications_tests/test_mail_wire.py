"""The bytes a mail goes out as: the fast mail policy writes what ``email.policy.default`` writes,
and bare addresses split at the ``@`` are what the header parser would have found.

The reference is the way messages were built before the fast policy: ``email.policy.default``,
Address objects in the address headers, aiosmtplib writing the data. It takes the boundaries,
Date and Message-ID of the message it is compared with (they are random or timed).
"""

from __future__ import annotations

import asyncio
import email.message
import email.policy
from typing import Any

import aiosmtplib
import pytest
from aiosmtplib.email import extract_recipients, extract_sender, flatten_message
from hypothesis import given, settings
from hypothesis import strategies as st

import eventbus
from notifications import MailMessage, Notifiable
from notifications.mail.addresses import _BARE, parse_address, parse_pairs, parse_route, parse_with_grammar
from notifications.mail.mime import build_email
from notifications.mail.render import render
from notifications.mail.smtp import envelope, transmit
from notifications.mail._policy import MAIL_POLICY, flatten

FROM = "Shop <shop@example.com>"


def reference_build(message: MailMessage, route: Any, default_from: str,
                    like: email.message.EmailMessage) -> email.message.EmailMessage:
    """build_email as it was before the fast policy, with the boundaries, Date and Message-ID of ``like``."""
    c = message.content
    mime = email.message.EmailMessage()
    mime["Subject"] = c.subject or ""
    mime["From"] = parse_address(c.from_address[0], "from", c.from_address[1]) if c.from_address else \
        parse_address(default_from, "from")
    mime["To"] = parse_route(route)
    for header, pairs in (("Cc", c.cc), ("Reply-To", c.reply_to), ("Bcc", c.bcc)):
        if pairs:
            mime[header] = parse_pairs(pairs, header.lower())
    mime["Date"] = like["Date"]
    mime["Message-ID"] = like["Message-ID"]
    if c.tags:
        mime["X-Tags"] = ", ".join(c.tags)
    for name, value in c.headers.items():
        mime[name] = value
    html_part, text_part = render(message)
    mime.set_content(text_part)
    mime.add_alternative(html_part, subtype="html")
    for att in c.attachments:
        maintype, _, subtype = att.mime_type.partition("/")
        mime.add_attachment(att.content, maintype=maintype, subtype=subtype or "octet-stream", filename=att.filename)
    for part, model in zip(mime.walk(), like.walk(), strict=True):
        if part.is_multipart():
            part.set_boundary(model.get_boundary())
    return mime


def assert_same_wire(message: MailMessage, route: Any = "ada@example.com") -> None:
    ours = build_email(message, route, FROM)
    theirs = reference_build(message, route, FROM, like=ours)
    for utf8, eight_bit in ((False, True), (False, False), (True, True)):
        expected = flatten_message(theirs, utf8=utf8, cte_type="8bit" if eight_bit else "7bit")
        assert flatten(ours, utf8=utf8, eight_bit=eight_bit) == expected
    assert flatten(ours, bcc=True) == theirs.as_bytes(policy=email.policy.SMTP)


MESSAGES = {
    "plain": MailMessage(subject="Receipt 7").greeting("Hello").line("Thanks for your order."),
    "everything": MailMessage(subject="Welcome <aboard>", greeting="Hi", lines=["a", "b"],
                              action=("Open", "https://shop.example/a?x=1&y=2"), outro=["c"],
                              salutation="The Shop", from_=("news@example.com", "Shop News"),
                              reply_to="help@example.com", cc=["boss@example.com"], bcc=["audit@example.com"],
                              tags=["welcome", "spring"], headers={"X-Campaign": "spring 2026"})
    .attach_data(b"%PDF-1.4 fake", "invoice.pdf").attach_data("Grüße".encode(), "note.txt"),
    "non-ASCII text": MailMessage(subject="Grüße aus Köln ☕", greeting="Liebe Zoë").line("Ihre Bestellung ist unterwegs."),
    "long subject": MailMessage(subject="An unusually long subject line that goes on and on well past the "
                                        "seventy-eight characters a header line should keep to"),
    "odd spacing": MailMessage(subject="  two  spaces and a tab\there ").header("X-Note", "a  b "),
    "encoded-word look-alike": MailMessage(subject="=?utf-8?q?caf=C3=A9?= and more"),
    "empty subject": MailMessage(),
    "long custom header": MailMessage().header("X-Long", "word " * 30),
}

ROUTES = {
    "one address": "ada@example.com",
    "names with specials": {"ada@example.com": "Lovelace, Ada", "bob@example.com": 'Bob "the builder" O\'Neil'},
    "non-ASCII name": {"zoe@example.com": "Zoë Ölund"},
    "many": [f"customer{i}@example.com" for i in range(12)],
    "international domain": "ada@bücher.example",
}


@pytest.mark.parametrize("name", MESSAGES)
def test_messages_go_out_as_the_default_policy_wrote_them(name: str) -> None:
    assert_same_wire(MESSAGES[name])


@pytest.mark.parametrize("name", ROUTES)
def test_address_headers_go_out_as_the_default_policy_wrote_them(name: str) -> None:
    assert_same_wire(MESSAGES["plain"], ROUTES[name])


header_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=120)


@settings(max_examples=150, deadline=None)
@given(subject=header_text, header=header_text)
def test_any_subject_and_header_value_go_out_as_before(subject: str, header: str) -> None:
    assert_same_wire(MailMessage(subject=subject).header("X-Any", header))


@pytest.mark.parametrize("name", ROUTES)
def test_the_envelope_is_what_aiosmtplib_reads_from_the_headers(name: str) -> None:
    mime = build_email(MESSAGES["everything"], ROUTES[name], FROM)
    assert envelope(mime) == (extract_sender(mime), extract_recipients(mime))


def test_reading_a_header_gives_the_same_object_as_the_default_policy() -> None:
    mime = build_email(MESSAGES["everything"], ROUTES["names with specials"], FROM)
    assert mime.policy is MAIL_POLICY
    assert [a.addr_spec for a in mime["To"].addresses] == ["ada@example.com", "bob@example.com"]
    assert mime["To"].addresses[0].display_name == "Lovelace, Ada"
    assert mime["From"] == "Shop News <news@example.com>" and mime.get_content_type() == "multipart/mixed"
    assert envelope(mime) == ("news@example.com", ["ada@example.com", "bob@example.com", "boss@example.com",
                                                   "audit@example.com"])


# -- bare addresses -----------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.from_regex(_BARE, fullmatch=True))
def test_a_bare_address_splits_as_the_header_parser_reads_it(entry: str) -> None:
    fast = parse_address(entry, "to")
    parsed = parse_with_grammar(entry, "to")
    assert (fast.display_name, fast.username, fast.domain) == (parsed.display_name, parsed.username, parsed.domain)


@pytest.mark.parametrize("entry", ["ada@example.com", "first.last+tag@sub.example.co.uk", "o'neil@example.com",
                                   "a!#$%&'*+/=^_`{|}~?-@localhost", "x@1.2.3.4"])
def test_common_bare_addresses_take_the_fast_way(entry: str) -> None:
    assert _BARE.fullmatch(entry)
    assert str(parse_address(entry, "to")) == str(parse_with_grammar(entry, "to"))


@pytest.mark.parametrize("entry", ["a..b@example.com", ".a@example.com", "a@example..com", "=?utf-8?q?a?=@example.com",
                                   "Ada <ada@example.com>", "ada@[127.0.0.1]", '"a b"@example.com'])
def test_anything_else_is_left_to_the_parser(entry: str) -> None:
    assert not _BARE.fullmatch(entry)


# -- non-ASCII addresses over SMTP ----------------------------------------------------------------

class Shopper(Notifiable):
    def __init__(self, email: str) -> None:
        self.email = email


def test_an_international_domain_goes_out_with_smtputf8(smtp_server: tuple) -> None:
    from notifications_tests.test_mail import Welcome

    inbox, port = smtp_server
    eventbus.configure(mail=f"smtp://127.0.0.1:{port}", mail_from="shop@example.com")
    Shopper("ada@bücher.example").notify_now(Welcome("Ada"))
    [envelope_] = inbox.envelopes
    assert "ada@bücher.example" in envelope_.rcpt_tos and "SMTPUTF8" in envelope_.mail_options


def test_without_smtputf8_a_non_ascii_address_fails_for_good(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    mime = build_email(MESSAGES["plain"], "ada@bücher.example", "shop@example.com")

    async def send() -> None:
        client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port)
        await client.connect()
        await client.ehlo()
        client.esmtp_extensions.pop("smtputf8", None)  # as a server that does not offer it
        try:
            await transmit(client, mime)
        finally:
            client.close()

    with pytest.raises(aiosmtplib.SMTPNotSupported):
        asyncio.run(send())
    assert inbox.envelopes == []


# -- boundaries -----------------------------------------------------------------------------------

def boundaries(mime: email.message.EmailMessage) -> list[str]:
    return [str(part.get_boundary()) for part in mime.walk() if part.is_multipart()]


def test_nested_multiparts_get_distinct_boundaries_none_a_prefix_of_another() -> None:
    mime = build_email(MESSAGES["everything"], "ada@example.com", FROM)
    outer, inner = boundaries(mime)
    assert mime.get_content_type() == "multipart/mixed" and outer != inner
    assert not outer.startswith(inner) and not inner.startswith(outer)


def test_a_text_holding_the_boundary_stem_gets_another_boundary() -> None:
    from notifications.mail import mime as mime_module

    stem = mime_module._stem
    usual = build_email(MESSAGES["plain"], "ada@example.com", FROM)
    assert boundaries(usual) == [f"{stem}.0"]  # the same from one message to the next
    crafted = MailMessage(subject="x").line(f"--{stem}.0").line(f"--{stem}.0--")
    mime = build_email(crafted, "ada@example.com", FROM)
    [boundary] = boundaries(mime)
    assert stem not in boundary
    parsed = email.message_from_bytes(flatten(mime), policy=email.policy.default)
    text = parsed.get_body(("plain",))
    assert text is not None and f"--{stem}.0--" in text.get_content()
    assert [p.get_content_type() for p in parsed.iter_parts()] == ["text/plain", "text/html"]
