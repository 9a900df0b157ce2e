"""SendQueuedNotifications in a real worker: what a provider's answer does to the queued job, and
queued mail sent by a worker running jobs concurrently.

A 429 or 503 with Retry-After releases the job for that long (not the notification's backoff);
any other 4xx fails it at once, without spending the remaining tries.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import pytest
import redis

import eventbus
from helpers import traces, wait_for

pytestmark = pytest.mark.integration

APP = "notifications_tests.sms_app"


def run_worker_until(start_worker: Any, port: int, done: Any) -> None:
    env = {"EVENTBUS_SMS_URL": f"twilio://AC1:tok@127.0.0.1:{port}?scheme=http"}
    worker = start_worker("--app", APP, "--sleep", "0.05", env=env)
    wait_for(done, timeout=30)
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_releases_the_job_for_that_long(
        use_redis: redis.Redis, start_worker: Any, provider_stub: tuple, status: int) -> None:
    from notifications_tests.sms_app import Phone, Reminder

    stub, port = provider_stub
    stub.script = [(status, {"Retry-After": "2"})]
    Phone(1, "+15550123").notify(Reminder())
    run_worker_until(start_worker, port, lambda: len(stub.requests) == 2)

    first, second = stub.requests
    assert second["at"] - first["at"] >= 1.9  # Retry-After, not the 0.1 s backoff
    assert second["form"]["To"] == "+15550123"
    assert traces(use_redis, "reminder_failed") == [] and eventbus.failed_store().all() == []
    assert eventbus.connection().size("default") == 0


def test_a_client_error_fails_the_job_at_once(
        use_redis: redis.Redis, start_worker: Any, provider_stub: tuple) -> None:
    from notifications_tests.sms_app import Phone, Reminder

    stub, port = provider_stub
    Phone(1, "+19990000").notify(Reminder())  # the stub answers 400 (code 21211) for +1999...
    run_worker_until(start_worker, port, lambda: traces(use_redis, "reminder_failed"))

    assert len(stub.requests) == 1  # tries = 3, but a 400 will not change on retry
    assert traces(use_redis, "reminder_failed") == ["sms:DeliveryError:400"]
    [record] = eventbus.failed_store().all()
    assert "Reminder via sms" in record.display_name and "21211" in record.summary
    assert eventbus.connection().size("default") == 0


def test_a_concurrent_worker_sends_queued_mail_at_once_over_the_pool(
        use_redis: redis.Redis, start_worker: Any, smtp_server: tuple) -> None:
    from notifications_tests.mail_app import Receipt, Shopper

    inbox, port = smtp_server
    inbox.data_delay_s = 0.05  # the server takes a while over each mail, so the sends overlap
    for i in range(30):
        Shopper(i, f"s{i}@example.com").notify(Receipt(i))
    worker = start_worker("--app", "notifications_tests.mail_app", "--concurrency", "10", "--sleep", "0.05",
                          "--stop-when-empty", env={"EVENTBUS_MAIL_URL": f"smtp://127.0.0.1:{port}?pool=4"})
    assert worker.wait() == 0, worker.output()

    assert sorted(int(m["Subject"].split()[1]) for m in inbox.messages) == list(range(30))  # each once
    assert inbox.most_open == len(inbox.connections) == 4  # all four at once, none replaced
    assert eventbus.connection().size("default") == 0 and eventbus.failed_store().all() == []


def test_a_permanent_smtp_refusal_fails_at_once_and_a_temporary_one_is_retried(
        use_redis: redis.Redis, start_worker: Any, smtp_server: tuple) -> None:
    """5xx (550: no such user) will be refused again: the job fails on its first try. 4xx (451:
    try later) is worth the remaining tries."""
    from notifications_tests.mail_app import Invoice, Shopper

    inbox, port = smtp_server
    inbox.refused.add("gone@example.com")
    inbox.deferred.add("busy@example.com")
    Shopper(1, "gone@example.com").notify(Invoice(1))
    Shopper(2, "busy@example.com").notify(Invoice(2))
    worker = start_worker("--app", "notifications_tests.mail_app", "--sleep", "0", "--stop-when-empty",
                          env={"EVENTBUS_MAIL_URL": f"smtp://127.0.0.1:{port}"})
    assert worker.wait() == 0, worker.output()

    assert inbox.rcpt_attempts.count("gone@example.com") == 1  # tries = 3, but 550 will not change
    assert inbox.rcpt_attempts.count("busy@example.com") == 3
    failures = {r.summary for r in eventbus.failed_store().all()}
    assert any("550" in s for s in failures) and any("451" in s for s in failures), failures


def test_anotify_queues_from_a_running_loop_and_a_worker_delivers(
        use_redis: redis.Redis, start_worker: Any, smtp_server: tuple) -> None:
    """``await user.anotify(n)`` pushes a queued notification's jobs with the driver's async push
    (redis.asyncio here), from inside a running loop, as ``notify`` would from sync code."""
    from notifications.testing import fake_notifications
    from notifications_tests.mail_app import Receipt, Shopper

    inbox, port = smtp_server
    queued: list[eventbus.JobQueued] = []
    eventbus.listen(eventbus.JobQueued, queued.append)

    async def main() -> None:
        await asyncio.gather(*(Shopper(i, f"a{i}@example.com").anotify(Receipt(i)) for i in range(3)))
        faked = Shopper(9, "faked@example.com")
        with fake_notifications() as sent:  # the fakes see anotify as they see notify
            await faked.anotify(Receipt(9))
            sent.assert_sent_to(faked, Receipt)

    asyncio.run(main())
    assert eventbus.connection().size() == 3 and len(queued) == 3
    worker = start_worker("--app", "notifications_tests.mail_app", "--sleep", "0", "--stop-when-empty",
                          env={"EVENTBUS_MAIL_URL": f"smtp://127.0.0.1:{port}"})
    assert worker.wait() == 0, worker.output()
    assert sorted(m["Subject"] for m in inbox.messages) == ["Receipt 0", "Receipt 1", "Receipt 2"]
