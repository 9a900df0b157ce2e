"""SMS providers against a local server speaking Twilio's and Vonage's documented shapes."""

from __future__ import annotations

import base64
import dataclasses

import pytest

import eventbus
from notifications import Notifiable, Notification, NotificationFailedError, SmsMessage
from notifications.sms import provider_from_url


@dataclasses.dataclass
class User(Notifiable):
    id: int
    phone: str | None


class Code(Notification):
    def __init__(self, text: str) -> None:
        self.text = text

    def via(self, notifiable: object) -> list[str]:
        return ["sms"]

    def to_sms(self, notifiable: object) -> SmsMessage:
        return SmsMessage(self.text, sender="+15550199")


LONG_UNICODE = "Zamówienie wysłane ✓ 🚚 " * 20


def test_twilio_request_shape(provider_stub: tuple) -> None:
    stub, port = provider_stub
    eventbus.configure(sms=f"twilio://AC123:tok@127.0.0.1:{port}?scheme=http&from=%2B15550100")
    User(1, "+15550123").notify_now(Code(LONG_UNICODE))
    [req] = stub.requests
    assert req["path"] == "/2010-04-01/Accounts/AC123/Messages.json"
    assert req["headers"]["Authorization"] == "Basic " + base64.b64encode(b"AC123:tok").decode()
    assert req["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert req["form"] == {"To": "+15550123", "From": "+15550199", "Body": LONG_UNICODE}


def test_twilio_error_becomes_a_clear_exception(provider_stub: tuple) -> None:
    _, port = provider_stub
    eventbus.configure(sms=f"twilio://AC123:tok@127.0.0.1:{port}?scheme=http")
    with pytest.raises(NotificationFailedError) as info:
        User(1, "+19990000").notify_now(Code("hi"))
    err = info.value.failures["sms"]
    assert "Twilio refused the SMS (400, code 21211): The 'To' number is not a valid phone number." == str(err)


def test_vonage_request_shape_and_unicode_type(provider_stub: tuple) -> None:
    stub, port = provider_stub
    eventbus.configure(sms=f"vonage://key1:secret1@127.0.0.1:{port}?scheme=http&from=Shop")
    User(1, "+15550123").notify_now(Code(LONG_UNICODE))
    [req] = stub.requests
    assert req["path"] == "/sms/json"
    assert req["form"] == {"api_key": "key1", "api_secret": "secret1", "to": "15550123", "from": "+15550199",
                           "text": LONG_UNICODE, "type": "unicode"}


def test_vonage_status_error(provider_stub: tuple) -> None:
    _, port = provider_stub
    eventbus.configure(sms=f"vonage://k:s@127.0.0.1:{port}?scheme=http")
    with pytest.raises(NotificationFailedError, match=r"Vonage refused the SMS \(status 3\): Invalid To Number"):
        User(1, "+19990000").notify_now(Code("hi"))


def test_provider_5xx(provider_stub: tuple) -> None:
    stub, port = provider_stub
    stub.fail_with = 503
    eventbus.configure(sms=f"twilio://AC1:t@127.0.0.1:{port}?scheme=http")
    with pytest.raises(NotificationFailedError, match="503"):
        User(1, "+15550123").notify_now(Code("hi"))


def test_bad_sms_url() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="bad SMS URL"):
        provider_from_url("twilio://nocredentials@host")
