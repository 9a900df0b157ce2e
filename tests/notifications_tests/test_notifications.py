"""Notifications now and queued: channels, events, failures, the database channel, fakes."""

from __future__ import annotations

import dataclasses
import signal
from typing import Any

import pytest
import redis
import sqlalchemy as sa

import eventbus
from helpers import PG_URL, database_reason, traces, wait_for
from eventbus.testing import fake_queue
from notifications import (
    AnonymousNotifiable,
    MailMessage,
    Notifiable,
    Notification,
    NotificationFailedError,
    NotificationSending,
    NotificationSent,
    OnDemandRouteError,
    SendQueuedNotifications,
    SmsMessage,
    UnknownChannelError,
    mark_as_read,
    notifications_for,
    notify,
    register_channel,
    unread_notifications_for,
)
from notifications import store
from notifications.channels import resolve_channel
from notifications.testing import fake_notifications


@eventbus.serializable
@dataclasses.dataclass
class User(Notifiable):
    id: int
    email: str | None = "ada@example.com"
    phone: str | None = "+15550100"


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[Any, Any]] = []
        self.fail = fail

    def send(self, notifiable: Any, notification: Any) -> str:
        if self.fail:
            raise RuntimeError("channel down")
        self.sent.append((notifiable, notification))
        return "ok"


class Hello(Notification):
    channels = ["mail", "sms", "database"]

    def __init__(self, text: str = "hi") -> None:
        self.text = text

    def via(self, notifiable: Any) -> list[str]:
        return list(self.channels)

    def to_mail(self, notifiable: Any) -> MailMessage:
        return MailMessage(subject=self.text)

    def to_sms(self, notifiable: Any) -> SmsMessage:
        return SmsMessage(self.text)

    def to_database(self, notifiable: Any) -> dict[str, str]:
        return {"text": self.text}


@pytest.fixture
def memory_transports() -> tuple[Any, Any]:
    eventbus.configure(mail="array", sms="array")
    return resolve_channel("mail").transport, resolve_channel("sms").provider


def test_notify_now_delivers_on_every_channel(memory_transports: tuple) -> None:
    mail, sms = memory_transports
    user = User(1)
    user.notify_now(Hello("shipped"))
    assert [m["Subject"] for m in mail.messages] == ["shipped"]
    assert [(to, m.content) for to, m in sms.messages] == [("+15550100", "shipped")]
    assert [n.data for n in notifications_for(user)] == [{"text": "shipped"}]


def test_one_failing_channel_does_not_stop_the_others(memory_transports: tuple) -> None:
    mail, _ = memory_transports
    register_channel("sms", Recorder(fail=True))
    with pytest.raises(NotificationFailedError) as info:
        User(1).notify_now(Hello())
    assert list(info.value.failures) == ["sms"] and "channel down" in str(info.value)
    assert isinstance(info.value, eventbus.EventBusError)
    assert len(mail.messages) == 1 and len(notifications_for(User(1))) == 1


def test_unknown_channel_is_an_error_before_anything_is_sent(memory_transports: tuple) -> None:
    mail, _ = memory_transports

    class Odd(Hello):
        channels = ["mail", "pigeon"]

    with pytest.raises(UnknownChannelError, match="unknown notification channel 'pigeon' .*registered: .*mail"):
        User(1).notify(Odd())
    assert mail.messages == []


def test_missing_route_skips_that_channel_with_a_warning(memory_transports: tuple, caplog: Any) -> None:
    mail, sms = memory_transports
    User(1, phone=None).notify_now(Hello())
    assert len(mail.messages) == 1 and sms.messages == []
    assert "has no sms route" in caplog.text


def test_route_overrides(memory_transports: tuple) -> None:
    mail, _ = memory_transports

    @dataclasses.dataclass
    class Team(Notifiable):
        id: int

        def route_notification_for_mail(self, notification: Any) -> dict[str, str]:
            return {"team@example.com": "The Team"}

    Team(1).notify_now(Hello(), channels=["mail"])
    assert mail.messages[0]["To"] == "The Team <team@example.com>"


def test_sending_event_can_cancel_and_sent_event_carries_the_response(memory_transports: tuple) -> None:
    mail, sms = memory_transports
    sent: list[tuple[str, Any]] = []
    eventbus.listen(NotificationSending, lambda e: False if e.channel == "sms" else None)
    eventbus.listen(NotificationSent, lambda e: sent.append((e.channel, e.response)))
    User(1).notify_now(Hello())
    assert sms.messages == [] and len(mail.messages) == 1
    assert [c for c, _ in sent] == ["mail", "database"] and sent[0][1] == "stored #1"


def test_should_send_is_the_last_word(memory_transports: tuple) -> None:
    mail, sms = memory_transports

    class MailOnly(Hello):
        def should_send(self, notifiable: Any, channel: str) -> bool:
            return channel == "mail"

    User(1).notify_now(MailOnly())
    assert len(mail.messages) == 1 and sms.messages == []


def test_on_demand_routes(memory_transports: tuple) -> None:
    mail, sms = memory_transports

    class MailAndSms(Hello):
        channels = ["mail", "sms"]

    Notification.route("mail", "guest@example.com").route("sms", "+15550111").notify(MailAndSms("hey"))
    assert mail.messages[0]["To"] == "guest@example.com" and sms.messages[0][0] == "+15550111"


def stored_rows() -> int:
    engine = sa.create_engine(store.database_url())
    try:
        with engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(store.table)).scalar_one())
    finally:
        engine.dispose()


def test_database_is_not_an_on_demand_route() -> None:
    with pytest.raises(OnDemandRouteError, match="database channel does not support on-demand"):
        Notification.route("database", 7)
    with pytest.raises(ValueError):
        Notification.route("mail", "guest@example.com").route("database", 7)


def test_on_demand_notifications_skip_the_database_channel(memory_transports: tuple) -> None:
    mail, _ = memory_transports
    store.migrate()
    guest = AnonymousNotifiable({"mail": "guest@example.com", "database": 7})  # routes given without route()
    guest.notify_now(Hello("on demand"))  # via: mail, sms, database
    assert len(mail.messages) == 1
    assert stored_rows() == 0


def test_queued_on_demand_notifications_push_no_database_job() -> None:
    class Queued(Hello):
        queued = True

    with fake_queue() as queue:
        Notification.route("mail", "guest@example.com").route("sms", "+15550111").notify(Queued())
    assert sorted(p.command.channel for p in queue.pushed) == ["mail", "sms"]


def test_custom_channels_by_name_and_by_class(memory_transports: tuple) -> None:
    slack = Recorder()
    register_channel("slack", slack)

    class Pager:
        pages: list[str] = []

        async def send(self, notifiable: Any, notification: Any) -> None:
            Pager.pages.append(notification.text)

    class Both(Hello):
        def via(self, notifiable: Any) -> list[Any]:
            return ["slack", Pager]

    notify([User(1), User(2)], Both("x"))
    assert len(slack.sent) == 2 and Pager.pages == ["x", "x"]


def test_async_notify_now(memory_transports: tuple) -> None:
    import asyncio

    mail, _ = memory_transports
    asyncio.run(User(1).anotify_now(Hello("async"), channels=["mail"]))
    assert mail.messages[0]["Subject"] == "async"


def test_anotify_sends_a_notification_that_is_not_queued_now(memory_transports: tuple) -> None:
    import asyncio

    mail, _ = memory_transports
    asyncio.run(User(1).anotify(Hello("at once")))
    asyncio.run(Notification.route("mail", "guest@example.com").anotify(Hello("on demand")))
    assert [m["Subject"] for m in mail.messages] == ["at once", "on demand"]


def test_queued_notification_is_one_job_per_notifiable_and_channel() -> None:
    class Queued(Hello):
        queued = True
        tries = 4

        def via_queues(self) -> dict[str, str]:
            return {"sms": "sms"}

        def with_delay(self, notifiable: Any) -> dict[str, float]:
            return {"sms": 30.0}

    with fake_queue() as queue:
        notify([User(1), User(2)], Queued())
    queue.assert_pushed(SendQueuedNotifications, times=6)
    sms_jobs = [p for p in queue.pushed if p.command.channel == "sms"]
    assert {p.queue for p in sms_jobs} == {"sms"} and {p.destination.delay for p in sms_jobs} == {30.0}
    assert {p.payload.max_tries for p in queue.pushed} == {4}
    ids = {(p.command.notifiable.id, p.command.notification.id) for p in queue.pushed}
    assert len(ids) == 2 and len({i for _, i in ids}) == 2  # one id per notifiable, shared by its channels


def test_database_channel_read_and_unread(memory_transports: tuple) -> None:
    user = User(5)
    user.notify_now(Hello("one"), channels=["database"])
    user.notify_now(Hello("two"), channels=["database"])
    assert [n.data["text"] for n in user.notifications] == ["two", "one"]
    assert mark_as_read(user.unread_notifications[0]) == 1
    assert [n.data["text"] for n in unread_notifications_for(user)] == ["one"]
    assert mark_as_read(user) == 1 and user.unread_notifications == []
    assert notifications_for(User(6)) == []


def test_database_channel_keeps_a_row_for_every_notifiable(memory_transports: tuple) -> None:
    notify([User(1), User(2)], Hello("both"))
    assert [n.data for n in notifications_for(User(1))] == [{"text": "both"}]
    assert [n.data for n in notifications_for(User(2))] == [{"text": "both"}]
    assert notifications_for(User(1))[0].id != notifications_for(User(2))[0].id


def test_one_notification_object_sent_twice_is_two_rows(memory_transports: tuple) -> None:
    note = Hello("again")
    User(1).notify_now(note, channels=["database"])
    User(2).notify_now(note, channels=["database"])
    User(1).notify_now(note, channels=["database"])
    assert len(notifications_for(User(1))) == 2 and len(notifications_for(User(2))) == 1


def test_a_retried_database_job_stores_its_row_once(memory_transports: tuple) -> None:
    class Queued(Hello):
        queued = True
        channels = ["database"]

    with fake_queue() as queue:
        notify([User(1), User(2)], Queued("queued"))
    from eventbus.dispatching import push_raw

    for pushed in queue.pushed * 2:  # every job runs twice, as after a lost acknowledgement
        push_raw("sync", pushed.payload.to_json())
    assert [n.data for n in notifications_for(User(1))] == [{"text": "queued"}]
    assert [n.data for n in notifications_for(User(2))] == [{"text": "queued"}]


def test_an_id_set_by_hand_is_kept_and_cannot_overwrite_another_notifiable(memory_transports: tuple) -> None:
    note = Hello("fixed")
    note.id = "4f9c1f5e-0000-4000-8000-000000000001"
    User(1).notify_now(note, channels=["database"])
    assert [n.id for n in notifications_for(User(1))] == [note.id]
    with pytest.raises(NotificationFailedError, match="already stored for another notifiable"):
        User(2).notify_now(note, channels=["database"])
    assert len(notifications_for(User(1))) == 1 and notifications_for(User(2)) == []


def test_database_channel_on_postgres(memory_transports: tuple) -> None:
    reason = database_reason(PG_URL)
    if reason:
        pytest.skip(reason)
    store.configure(PG_URL)
    try:
        user = User(8_000_000 + __import__("os").getpid())
        user.notify_now(Hello("pg"), channels=["database"])
        assert [n.data for n in user.unread_notifications] == [{"text": "pg"}]
        assert mark_as_read(user) == 1
    finally:
        store.configure(None)


# -- fakes ------------------------------------------------------------------------------------

def test_fake_notifications() -> None:
    user, other = User(1), User(2)
    with fake_notifications() as sent:
        user.notify(Hello("a"))
        Notification.route("mail", "x@example.com").notify(Hello("b"))
    sent.assert_sent_to(user, Hello, lambda n, channels: n.text == "a" and "sms" in channels)
    sent.assert_not_sent_to(other, Hello)
    sent.assert_sent_on_demand(Hello, lambda n, routes: routes == {"mail": "x@example.com"})
    sent.assert_count(2)
    with pytest.raises(AssertionError, match="expected no notifications"):
        sent.assert_nothing_sent()
    with pytest.raises(AssertionError, match="Hello to"):
        sent.assert_sent_to(other, Hello)


def test_notifications_fixture(notifications: Any) -> None:
    User(1).notify(Hello())
    notifications.assert_count(1)


# -- queued through Redis and a worker --------------------------------------------------------

@pytest.mark.integration
def test_queued_mail_arrives_while_failing_sms_is_retried_and_failed(
        use_redis: redis.Redis, start_worker: Any, smtp_server: tuple, provider_stub: tuple) -> None:
    from apps.notify_app import Customer, Shipped

    inbox, smtp_port = smtp_server
    stub, http_port = provider_stub
    stub.fail_with = 503
    customer = Customer(1, "Ada", "ada@example.com", "+15550100")
    customer.notify(Shipped(42))
    q = eventbus.connection()
    assert q.size("default") == 2 and q.size("mail") == 1  # one job per channel
    env = {"EVENTBUS_MAIL_URL": f"smtp://127.0.0.1:{smtp_port}",
           "EVENTBUS_SMS_URL": f"twilio://AC1:tok@127.0.0.1:{http_port}?scheme=http",
           "EVENTBUS_NOTIFICATIONS_URL": "sqlite:///notes.sqlite3", "EVENTBUS_APP": "apps.notify_app"}
    w = start_worker("--queue", "mail,default", "--sleep", "0.05", env=env)
    wait_for(lambda: traces(use_redis, "notification_failed"), timeout=30)
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert [m["Subject"] for m in inbox.messages] == ["Order 42 shipped"]
    assert len(stub.requests) == 2  # tries = 2
    assert traces(use_redis, "notification_failed") == ["sms:DeliveryError"]
    [record] = eventbus.runtime.failed_store().all()
    assert "via sms" in record.display_name and "Twilio refused the SMS (503" in record.summary
    store.configure("sqlite:///notes.sqlite3")
    try:
        assert [n.data for n in notifications_for(customer)] == [{"order_id": 42}]
    finally:
        store.configure(None)


def test_log_channel(memory_transports: tuple, caplog: Any) -> None:
    import logging

    class Logged(Hello):
        channels = ["log"]

        def to_log(self, notifiable: Any) -> str:
            return f"hello #{notifiable.id}"

    with caplog.at_level(logging.INFO, logger="notifications.log"):
        User(3).notify_now(Logged())
    assert "Logged to User: hello #3" in caplog.text
    assert resolve_channel("log").lines == ["Logged to User: hello #3"]


def test_notification_failed_event(memory_transports: tuple) -> None:
    from notifications import NotificationFailed

    register_channel("sms", Recorder(fail=True))
    failures: list[tuple[str, str]] = []
    eventbus.listen(NotificationFailed, lambda e: failures.append((e.channel, str(e.exception))))
    with pytest.raises(NotificationFailedError):
        User(1).notify_now(Hello(), channels=["sms"])
    assert failures == [("sms", "channel down")]


def test_queued_notifications_can_wait_for_the_commit() -> None:
    class AfterCommit(Hello):
        queued = True
        after_commit = True
        channels = ["mail"]

    with fake_queue() as queue:
        with eventbus.after_commit():
            User(1).notify(AfterCommit())
            queue.assert_nothing_pushed()
        queue.assert_pushed(SendQueuedNotifications, times=1)
