"""Mail: rendering, MIME structure, and delivery to a real SMTP server."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import pathlib
import stat
from collections.abc import Iterator
from typing import Any

import pytest

import eventbus
from notifications import MailMessage, Notifiable, Notification, NotificationFailedError
from notifications.channels.mail import MailChannel
from notifications.mail import LogTransport, SmtpTransport, render, set_template_dirs, transport_from_url
from notifications.mail.mime import build_email


@dataclasses.dataclass
class User(Notifiable):
    id: int
    email: str | None
    phone: str | None = None


class Welcome(Notification):
    def __init__(self, name: str) -> None:
        self.name = name

    def via(self, notifiable: object) -> list[str]:
        return ["mail"]

    def to_mail(self, notifiable: object) -> MailMessage:
        return (MailMessage(subject="Welcome <aboard>").greeting(f"Hello {self.name}!")
                .line("Thanks for joining.").action("Open your account", "https://shop.example/a?x=1&y=2")
                .line("See you soon.").salutation("The Shop").cc("boss@example.com").bcc("audit@example.com")
                .reply_to("help@example.com", "Help desk").attach_data(b"%PDF-1.4 fake", "invoice.pdf")
                .tag("welcome").header("X-Campaign", "spring"))


def test_builder_and_keyword_constructor_agree() -> None:
    fluent = MailMessage().subject("S").greeting("G").line("a").action("Go", "https://x").line("b").salutation("Bye")
    keyword = MailMessage(subject="S", greeting="G", lines=["a"], action=("Go", "https://x"), outro=["b"],
                          salutation="Bye")
    assert fluent.content == keyword.content


def test_default_layout_escapes_html_and_has_a_button() -> None:
    html, text = render(MailMessage(greeting="Hi <b>you</b>").line("1 < 2").action("Go", "https://x/?a=1&b=2"))
    assert "Hi &lt;b&gt;you&lt;/b&gt;" in html and "1 &lt; 2" in html
    assert 'href="https://x/?a=1&amp;b=2"' in html and "button" in html
    assert "Hi <b>you</b>" in text and "Go: https://x/?a=1&b=2" in text


def test_bad_level_is_refused() -> None:
    with pytest.raises(ValueError, match="mail level"):
        MailMessage(level="panic")


def test_own_templates_with_text_sibling(tmp_path: pathlib.Path) -> None:
    (tmp_path / "hello.html").write_text("<p>Hi {{ name }}</p>")
    (tmp_path / "hello.txt").write_text("Hi {{ name }} (text)")
    (tmp_path / "only.html").write_text("<p>Only <a href='https://x'>link</a></p>")
    set_template_dirs(tmp_path)
    try:
        assert render(MailMessage(template="hello.html", context={"name": "<Ada>"})) == \
            ("<p>Hi &lt;Ada&gt;</p>", "Hi <Ada> (text)")
        assert render(MailMessage().view("only.html"))[1].strip() == "Only link (https://x)"
    finally:
        set_template_dirs("templates")


def test_mime_structure() -> None:
    mime = build_email(Welcome("Ada").to_mail(None), ["ada@example.com"], "Shop <shop@example.com>")
    assert mime["Subject"] == "Welcome <aboard>" and mime["From"] == "Shop <shop@example.com>"
    assert mime["Cc"] == "boss@example.com" and mime["Reply-To"] == "Help desk <help@example.com>"
    assert mime["X-Tags"] == "welcome" and mime["X-Campaign"] == "spring"
    body = mime.get_body(("plain",))
    assert body is not None and "Thanks for joining." in body.get_content()
    [attachment] = list(mime.iter_attachments())
    assert attachment.get_filename() == "invoice.pdf" and attachment.get_content_type() == "application/pdf"


def test_delivers_to_a_real_smtp_server(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    eventbus.configure(mail=f"smtp://127.0.0.1:{port}", mail_from="Shop <shop@example.com>")
    User(1, "ada@example.com").notify_now(Welcome("Ada"))
    [envelope] = inbox.envelopes
    assert envelope.mail_from == "shop@example.com"
    assert sorted(envelope.rcpt_tos) == ["ada@example.com", "audit@example.com", "boss@example.com"]
    [msg] = inbox.messages
    assert msg["Subject"] == "Welcome <aboard>" and msg["To"] == "ada@example.com" and msg["Bcc"] is None
    assert "Hello Ada!" in msg.get_body(("html",)).get_content()
    assert "Open your account: https://shop.example/a?x=1&y=2" in msg.get_body(("plain",)).get_content()
    assert [a.get_filename() for a in msg.iter_attachments()] == ["invoice.pdf"]
    assert [a.get_content() for a in msg.iter_attachments()] == [b"%PDF-1.4 fake"]


def test_starttls_with_a_self_signed_certificate_and_auth(tls_smtp_server: tuple) -> None:
    inbox, port, cert = tls_smtp_server
    eventbus.configure(mail=f"smtp://shop:s3cret@127.0.0.1:{port}?starttls=1&cafile={cert}")
    User(1, "ada@example.com").notify_now(Welcome("Ada"))
    assert len(inbox.envelopes) == 1


def test_credentials_use_starttls_by_default(lenient_tls_smtp_server: tuple) -> None:
    inbox, port, cert, auth_over_tls = lenient_tls_smtp_server
    eventbus.configure(mail=f"smtp://shop:s3cret@127.0.0.1:{port}?cafile={cert}")
    User(1, "ada@example.com").notify_now(Welcome("Ada"))
    assert auth_over_tls == [True] and len(inbox.envelopes) == 1


def test_starttls_0_sends_credentials_in_clear_with_a_warning(lenient_tls_smtp_server: tuple, caplog: Any) -> None:
    inbox, port, _, auth_over_tls = lenient_tls_smtp_server
    eventbus.configure(mail=f"smtp://shop:s3cret@127.0.0.1:{port}?starttls=0")
    with caplog.at_level(logging.WARNING, logger="notifications"):
        User(1, "ada@example.com").notify_now(Welcome("Ada"))
    assert auth_over_tls == [False] and len(inbox.envelopes) == 1
    assert "starttls=0" in caplog.text and "in clear" in caplog.text and "s3cret" not in caplog.text


def test_without_credentials_starttls_stays_opt_in(smtp_server: tuple) -> None:
    _, port = smtp_server
    transport = transport_from_url(f"smtp://127.0.0.1:{port}")
    assert isinstance(transport, SmtpTransport) and transport.settings.start_tls is False


def test_wrong_password_fails_that_channel(tls_smtp_server: tuple) -> None:
    inbox, port, cert = tls_smtp_server
    eventbus.configure(mail=f"smtp://shop:wrong@127.0.0.1:{port}?starttls=1&cafile={cert}&timeout=3")
    with pytest.raises(NotificationFailedError) as info:
        User(1, "ada@example.com").notify_now(Welcome("Ada"))
    assert "mail" in info.value.failures and inbox.envelopes == []


def test_connection_is_reused_across_messages_and_reopened_after_a_drop(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = transport_from_url(f"smtp://127.0.0.1:{port}")
    assert isinstance(transport, SmtpTransport)
    channel = MailChannel(transport)
    user = User(1, "ada@example.com")
    loop = asyncio.new_event_loop()
    try:
        for _ in range(3):
            loop.run_until_complete(channel.send(user, Welcome("Ada")))
        assert transport.connections_opened == 1 and len(inbox.sessions) == 1
        loop.run_until_complete(transport.aclose())
        loop.run_until_complete(channel.send(user, Welcome("Ada")))
        assert transport.connections_opened == 2 and len(inbox.envelopes) == 4
        off = transport_from_url(f"smtp://127.0.0.1:{port}?reuse=0")
        assert isinstance(off, SmtpTransport)
        for _ in range(2):
            loop.run_until_complete(MailChannel(off).send(user, Welcome("Ada")))
        assert off.connections_opened == 2
        loop.run_until_complete(transport.aclose())
    finally:
        loop.close()


def test_smtp_down_is_a_delivery_error() -> None:
    eventbus.configure(mail="smtp://127.0.0.1:1?timeout=2")
    with pytest.raises(NotificationFailedError, match="cannot reach SMTP server 127.0.0.1:1"):
        User(1, "ada@example.com").notify_now(Welcome("Ada"))


def test_log_transport_writes_eml(tmp_path: pathlib.Path) -> None:
    eventbus.configure(mail=f"log:{tmp_path}/outbox")
    User(1, "ada@example.com").notify_now(Welcome("Ada"))
    [eml] = list((tmp_path / "outbox").glob("*.eml"))
    assert b"Subject: Welcome <aboard>" in eml.read_bytes()
    assert isinstance(transport_from_url("log"), LogTransport)


@pytest.fixture
def usual_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def test_log_transport_files_are_private(tmp_path: pathlib.Path, usual_umask: None) -> None:
    eventbus.configure(mail=f"log:{tmp_path}/outbox")
    User(1, "ada@example.com").notify_now(Welcome("Ada"))
    [eml] = list((tmp_path / "outbox").glob("*.eml"))
    assert stat.S_IMODE(eml.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "outbox").stat().st_mode) == 0o700


def test_log_transport_leaves_an_existing_directory_alone(tmp_path: pathlib.Path, usual_umask: None) -> None:
    (tmp_path / "shared").mkdir(mode=0o755)
    eventbus.configure(mail=f"log:{tmp_path}/shared")
    User(1, "ada@example.com").notify_now(Welcome("Ada"))
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o755
    [eml] = list((tmp_path / "shared").glob("*.eml"))
    assert stat.S_IMODE(eml.stat().st_mode) == 0o600


def test_mail_url_options_are_not_form_decoded() -> None:
    transport = transport_from_url("smtp://127.0.0.1:25?cafile=/certs/mail+relay.pem")
    assert isinstance(transport, SmtpTransport) and transport.settings.cert_bundle == "/certs/mail+relay.pem"


@pytest.mark.parametrize("url, message", [
    ("smtp://h?startls=1", "unknown option 'startls'"),
    ("smtp://h?starttls=maybe", "starttls"),
    ("smtp://h?timeout=soon", "timeout"),
])
def test_bad_mail_url_options(url: str, message: str) -> None:
    with pytest.raises(eventbus.ConfigurationError, match=message):
        transport_from_url(url)


def test_bad_mail_url() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="bad mail URL 'ftp://h'"):
        transport_from_url("ftp://h")


# -- hardening: headers, templates, links, Message-ID -----------------------------------------

@pytest.mark.parametrize("name", ["X-Evil\r\nBcc", "X-Evil\nBcc", "X-Evil\n", "X Space", "X:Colon", "", "X-Ünicode",
                                  "Bcc", "to", "Content-Type", "MIME-Version"])
def test_bad_or_reserved_header_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="header name"):
        MailMessage().header(name, "attacker@y.test")
    with pytest.raises(ValueError, match="header name"):
        MailMessage(headers={name: "attacker@y.test"})


def test_header_values_cannot_break_the_line() -> None:
    with pytest.raises(ValueError, match="header value"):
        MailMessage().header("X-Campaign", "spring\r\nBcc: attacker@y.test")


def test_a_good_custom_header_is_kept() -> None:
    mime = build_email(MailMessage().header("X-Campaign", "spring"), "ada@example.com", "shop@example.com")
    assert mime["X-Campaign"] == "spring"


@pytest.mark.parametrize("name", ["hello.j2", "hello.jinja", "hello.jinja2", "hello.html.j2", "hello.xml"])
def test_jinja_templates_are_autoescaped(tmp_path: pathlib.Path, name: str) -> None:
    (tmp_path / name).write_text("<p>Hi {{ name }}</p>")
    set_template_dirs(tmp_path)
    try:
        html, _ = render(MailMessage(template=name, context={"name": "<script>x</script>"}))
    finally:
        set_template_dirs("templates")
    assert html == "<p>Hi &lt;script&gt;x&lt;/script&gt;</p>"


def test_only_text_templates_are_not_escaped(tmp_path: pathlib.Path) -> None:
    (tmp_path / "hello.html.j2").write_text("<p>Hi {{ name }}</p>")
    (tmp_path / "hello.txt").write_text("Hi {{ name }}")
    set_template_dirs(tmp_path)
    try:
        assert render(MailMessage(template="hello.html.j2", context={"name": "<Ada>"})) == \
            ("<p>Hi &lt;Ada&gt;</p>", "Hi <Ada>")
    finally:
        set_template_dirs("templates")


@pytest.mark.parametrize("url", ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
                                 "vbscript:x", "//evil.example/x", "ftp://files.example/x", " javascript:x"])
def test_action_accepts_only_web_and_mailto_links(url: str) -> None:
    with pytest.raises(ValueError, match="action URL"):
        MailMessage().action("Open", url)
    with pytest.raises(ValueError, match="action URL"):
        MailMessage(action=("Open", url))


@pytest.mark.parametrize("url", ["https://shop.example/a?x=1", "http://localhost:8000/", "mailto:help@shop.example",
                                 "HTTPS://SHOP.EXAMPLE/"])
def test_action_keeps_good_links(url: str) -> None:
    assert MailMessage().action("Open", url).content.action_url == url


def test_message_id_uses_the_from_domain() -> None:
    default = build_email(MailMessage(), "ada@example.com", "Shop <shop@shop.example>")
    assert default["Message-ID"].endswith("@shop.example>")
    own = build_email(MailMessage(from_="news@news.example"), "ada@example.com", "shop@shop.example")
    assert own["Message-ID"].endswith("@news.example>")
