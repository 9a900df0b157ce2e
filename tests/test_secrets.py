"""Secrets never printed: a password in any URL-valued option (the SQS ``endpoint_url`` too) is
hidden in ``repr(settings())`` and in connection errors, and a database URL SQLAlchemy cannot
read is never echoed (it may be a password pasted in the wrong place)."""

from __future__ import annotations

import pytest

import eventbus
from eventbus import runtime
from eventbus.errors import ConfigurationError, ConnectionUnavailableError
from eventbus.urls import redact_url
from helpers import free_port

SECRET = "s3cret-Pa55"


def test_a_password_in_any_url_option_is_hidden_in_the_settings_repr() -> None:
    eventbus.configure(connections={"s": {"driver": "sqs", "endpoint_url": f"http://user:{SECRET}@127.0.0.1:4566",
                                          "key": "AKIA", "secret": SECRET, "region": "us-east-1"}})
    shown = repr(runtime.settings())
    assert SECRET not in shown and "http://user:***@127.0.0.1:4566" in shown


def test_an_sqs_connect_error_hides_the_endpoints_password() -> None:
    pytest.importorskip("boto3")
    endpoint = f"http://user:{SECRET}@127.0.0.1:{free_port()}"
    eventbus.configure(default="s", connections={"s": {
        "driver": "sqs", "endpoint_url": endpoint, "key": "k", "secret": "x", "region": "us-east-1",
        "prefix": f"{endpoint}/000000000000"}})
    for call in (eventbus.connection().ping, eventbus.connection().size):
        with pytest.raises(ConnectionUnavailableError) as caught:
            call()
        assert SECRET not in str(caught.value) and "user:***@" in str(caught.value)


@pytest.mark.parametrize("url", [f"postgresql:/u:{SECRET}@db/app", f"u:{SECRET}@db/app", SECRET,
                                 f"postgresql://u:{SECRET}@db:notaport/app"])
def test_a_database_url_that_cannot_be_read_is_never_printed(url: str) -> None:
    eventbus.configure(default="null", failed=url)
    with pytest.raises(ConfigurationError) as caught:
        eventbus.failed_store().all()
    assert SECRET not in str(caught.value) and "bad database URL" in str(caught.value)


@pytest.mark.parametrize("text", [f"postgresql:/u:{SECRET}@db/app", f"u:{SECRET}@db", f"mailto:{SECRET}",
                                  f"smtp://u:{SECRET}@[::1/"])
def test_redact_url_never_echoes_what_it_cannot_read(text: str) -> None:
    assert SECRET not in redact_url(text)


def test_redact_url_keeps_plain_words_and_urls_without_secrets() -> None:
    assert [redact_url(u) for u in ("log", "memory", "sqlite:///x.db", "redis://h:6379/0")] == [
        "log", "memory", "sqlite:///x.db", "redis://h:6379/0"]
