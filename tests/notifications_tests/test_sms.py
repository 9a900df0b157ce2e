"""SMS providers against a local server speaking Twilio's and Vonage's documented shapes."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import datetime as dt
import email.utils
import gc
import time
import weakref

import pytest

import eventbus
from notifications import DeliveryError, Notifiable, Notification, NotificationFailedError, SmsMessage
from notifications.sms import TwilioProvider, VonageProvider, provider_from_url


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


class Plain(Code):
    def to_sms(self, notifiable: object) -> SmsMessage:
        return SmsMessage(self.text)


def test_the_readme_twilio_url_keeps_the_plus_of_the_sender(provider_stub: tuple) -> None:
    stub, port = provider_stub
    eventbus.configure(sms=f"twilio://AC123:tok@127.0.0.1:{port}?scheme=http&from=+15550100")
    User(1, "+15550123").notify_now(Plain("hi"))
    assert stub.requests[0]["form"]["From"] == "+15550100"


@pytest.mark.parametrize("url, message", [
    ("twilio://AC1:t@api.twilio.com?form=+1555", "unknown option 'form'"),
    ("twilio://AC1:t@api.twilio.com?timeout=soon", "timeout"),
    ("vonage://k:s@rest.nexmo.com?scheme=gopher", "scheme"),
])
def test_bad_sms_url_options(url: str, message: str) -> None:
    with pytest.raises(eventbus.ConfigurationError, match=message):
        provider_from_url(url)


# -- answers that say "later" or "never" ------------------------------------------------------

@pytest.mark.parametrize("status, retry_after, expected", [(429, "7", 7.0), (503, "2", 2.0), (503, None, None)])
def test_throttling_answers_carry_retry_after(provider_stub: tuple, status: int, retry_after: str | None,
                                             expected: float | None) -> None:
    stub, port = provider_stub
    stub.script = [(status, {"Retry-After": retry_after} if retry_after else {})]
    eventbus.configure(sms=f"twilio://AC1:t@127.0.0.1:{port}?scheme=http")
    with pytest.raises(NotificationFailedError) as info:
        User(1, "+15550123").notify_now(Code("hi"))
    err = info.value.failures["sms"]
    assert isinstance(err, DeliveryError) and err.status == status
    assert err.retry_after == expected and err.permanent is False


def test_retry_after_as_an_http_date(provider_stub: tuple) -> None:
    stub, port = provider_stub
    later = email.utils.format_datetime(dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30), usegmt=True)
    stub.script = [(429, {"Retry-After": later})]
    eventbus.configure(sms=f"vonage://k:s@127.0.0.1:{port}?scheme=http")
    with pytest.raises(NotificationFailedError) as info:
        User(1, "+15550123").notify_now(Code("hi"))
    retry_after = info.value.failures["sms"].retry_after  # type: ignore[attr-defined]
    assert 25 <= retry_after <= 31


@pytest.mark.parametrize("status, permanent", [(400, True), (401, True), (404, True), (422, True),
                                               (429, False), (408, False), (500, False), (503, False)])
def test_client_errors_are_permanent(provider_stub: tuple, status: int, permanent: bool) -> None:
    stub, port = provider_stub
    stub.script = [(status, {})]
    eventbus.configure(sms=f"twilio://AC1:t@127.0.0.1:{port}?scheme=http")
    with pytest.raises(NotificationFailedError) as info:
        User(1, "+15550123").notify_now(Code("hi"))
    assert info.value.failures["sms"].permanent is permanent  # type: ignore[attr-defined]


# -- one pooled client per event loop ---------------------------------------------------------

def test_one_pooled_connection_per_event_loop(provider_stub: tuple) -> None:
    stub, port = provider_stub
    provider = provider_from_url(f"twilio://AC1:t@127.0.0.1:{port}?scheme=http")
    assert isinstance(provider, TwilioProvider)
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        for _ in range(3):
            first.run_until_complete(provider.send("+15550123", SmsMessage("hi")))
        second.run_until_complete(provider.send("+15550123", SmsMessage("hi")))
        first.run_until_complete(provider.send("+15550123", SmsMessage("hi")))
        clients = [r["client"] for r in stub.requests]
        assert len(set(clients[:3])) == 1 and clients[4] == clients[0]  # reused on its loop
        assert clients[3] != clients[0]  # another loop, another client
        assert provider.clients_opened == 2
    finally:
        first.run_until_complete(provider.aclose())
        second.run_until_complete(provider.aclose())
        first.close()
        second.close()


def test_many_messages_share_one_connection_closed_when_the_loop_ends(provider_stub: tuple) -> None:
    stub, port = provider_stub
    provider = provider_from_url(f"twilio://AC1:t@127.0.0.1:{port}?scheme=http")
    assert isinstance(provider, TwilioProvider)
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []

    async def app() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        for n in range(25):
            await provider.send("+15550123", SmsMessage(f"code {n}"))

    asyncio.run(app())
    [address] = {r["client"] for r in stub.requests}  # 25 messages, one connection
    assert len(stub.requests) == 25 and provider.clients_opened == 1
    assert provider._clients.values() == []  # the loop closed its client on the way out
    deadline = time.monotonic() + 5
    while address not in stub.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert address in stub.closed  # and the server saw the connection end
    gc.collect()
    assert loops[0]() is None  # nothing keeps the finished loop alive

    asyncio.run(app())  # a new loop, a new client
    assert provider.clients_opened == 2 and len({r["client"] for r in stub.requests}) == 2


def test_a_closed_client_is_replaced(provider_stub: tuple) -> None:
    stub, port = provider_stub
    provider = provider_from_url(f"vonage://k:s@127.0.0.1:{port}?scheme=http")
    assert isinstance(provider, VonageProvider)

    async def twice() -> None:
        await provider.send("+15550123", SmsMessage("hi"))
        await provider.aclose()
        await provider.send("+15550123", SmsMessage("hi"))
        await provider.aclose()

    asyncio.run(twice())
    assert provider.clients_opened == 2 and len(stub.requests) == 2
