"""The hooks the core's runtime calls: reset, migrate, validate_settings."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

import pytest
import sqlalchemy as sa

import eventbus
import notifications
from helpers import wait_for
from notifications import MailMessage, Notifiable, Notification, SmsMessage, register_channel, store
from notifications.channels import resolve_channel


@dataclasses.dataclass
class User(Notifiable):
    id: int
    email: str = "ada@example.com"
    phone: str = "+15550100"


class Ping(Notification):
    def via(self, notifiable: Any) -> list[str]:
        return ["mail", "sms"]

    def to_mail(self, notifiable: Any) -> MailMessage:
        return MailMessage(subject="ping")

    def to_sms(self, notifiable: Any) -> SmsMessage:
        return SmsMessage("ping")


def test_reset_makes_a_second_configure_take_effect(tmp_path: pathlib.Path) -> None:
    eventbus.configure(mail="array", sms="array")
    User(1).notify_now(Ping())
    first_mail, first_sms = resolve_channel("mail").transport, resolve_channel("sms").provider  # type: ignore[attr-defined]

    eventbus.configure(mail=f"log:{tmp_path}/outbox", sms="array")
    notifications.reset()
    User(1).notify_now(Ping())

    assert len(first_mail.messages) == 1 and len(first_sms.messages) == 1  # nothing more for the old ones
    assert len(list((tmp_path / "outbox").glob("*.eml"))) == 1
    second_sms = resolve_channel("sms").provider  # type: ignore[attr-defined]
    assert second_sms is not first_sms and len(second_sms.messages) == 1


def test_reset_closes_the_pooled_connections_it_forgets(provider_stub: tuple, smtp_server: tuple) -> None:
    _, http_port = provider_stub
    inbox, smtp_port = smtp_server
    eventbus.configure(mail=f"smtp://127.0.0.1:{smtp_port}", sms=f"twilio://AC1:t@127.0.0.1:{http_port}?scheme=http")
    User(1).notify_now(Ping())
    [http_client] = list(resolve_channel("sms").provider._clients.values())  # type: ignore[attr-defined]
    assert not http_client.is_closed and inbox.open_connections == 1
    notifications.reset()
    assert http_client.is_closed
    wait_for(lambda: inbox.open_connections == 0, timeout=5)


def test_reset_keeps_channels_registered_by_hand() -> None:
    class Pager:
        def send(self, notifiable: Any, notification: Any) -> None: ...

    pager = Pager()
    register_channel("pager", pager)
    notifications.reset()
    assert resolve_channel("pager") is pager


def test_migrate_creates_the_notifications_table(tmp_path: pathlib.Path) -> None:
    url = f"sqlite:///{tmp_path}/notes.sqlite3"
    store.configure(url)
    try:
        assert notifications.migrate() == ["notifications"]
        engine = sa.create_engine(url)
        try:
            assert "notifications" in sa.inspect(engine).get_table_names()
        finally:
            engine.dispose()
        assert notifications.migrate() == ["notifications"]  # a second run is harmless
    finally:
        store.configure(None)


@pytest.mark.parametrize("mail, sms", [
    ("log", "log"), ("array", "array"), ("log:outbox", "log"),
    ("smtp://127.0.0.1:25", "twilio://AC1:tok@api.twilio.com?from=%2B15550100"),
    ("smtps://u:p@mail.example:465", "vonage://k:s@rest.nexmo.com?from=Shop"),
    ("smtp://u:p@127.0.0.1:25?starttls=0", "log"),
])
def test_validate_settings_accepts_good_urls_without_touching_anything(
        tmp_path: pathlib.Path, caplog: Any, mail: str, sms: str) -> None:
    notifications.validate_settings(mail, sms)
    assert list(tmp_path.iterdir()) == []  # no outbox directory, no file
    assert caplog.records == []


@pytest.mark.parametrize("mail, sms, message", [
    ("ftp://h", "log", "bad mail URL 'ftp://h'"),
    ("smtp://", "log", "bad mail URL"),
    ("log", "twilio://nocredentials@host", "bad SMS URL"),
    ("log", "carrier-pigeon", "bad SMS URL"),
    ("smtp://h?startls=1", "log", "bad mail URL .*unknown option 'startls'"),
    ("log", "twilio://AC1:t@api.twilio.com?timeout=-1", "bad SMS URL .*timeout"),
])
def test_validate_settings_refuses_bad_urls(mail: str, sms: str, message: str) -> None:
    with pytest.raises(eventbus.ConfigurationError, match=message):
        notifications.validate_settings(mail, sms)


def test_a_second_configure_takes_effect_without_calling_reset(tmp_path: pathlib.Path) -> None:
    """The core's configure() reaches notifications through its on_reset hook."""
    eventbus.configure(mail="array", sms="array")
    User(1).notify_now(Ping())
    first_mail = resolve_channel("mail").transport  # type: ignore[attr-defined]
    eventbus.configure(mail=f"log:{tmp_path}/outbox", sms="log")
    User(1).notify_now(Ping())
    assert len(first_mail.messages) == 1
    assert len(list((tmp_path / "outbox").glob("*.eml"))) == 1


def test_a_bad_mail_or_sms_url_is_an_error_at_configure() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="mail"):
        eventbus.configure(mail="smtp:/nohost")
    with pytest.raises(eventbus.ConfigurationError, match="SMS"):
        eventbus.configure(sms="twilio://only-a-host")


def test_eventbus_migrate_creates_every_table_notifications_included(tmp_path: pathlib.Path) -> None:
    from click.testing import CliRunner

    from eventbus.cli import main

    url = f"sqlite:///{tmp_path}/app.sqlite3"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}},
                       failed=url)
    result = CliRunner().invoke(main, ["migrate"])
    assert result.exit_code == 0, result.output
    assert "notifications" in result.output
    engine = sa.create_engine(url)
    try:
        tables = set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
    assert {"jobs", "failed_jobs", "notifications", "eventbus_signals"} <= tables
