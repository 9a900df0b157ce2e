"""SendQueuedNotifications in a real worker: what a provider's answer does to the queued job, and
queued mail sent by a worker running jobs concurrently.

A 429 or 503 with Retry-After releases the job for that long (not the notification's backoff);
any other 4xx fails it at once, without spending the remaining tries.
"""

from __future__ import annotations

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
