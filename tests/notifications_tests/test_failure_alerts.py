"""Failure alerts from real workers: the first job of a class that fails for good within
``alert_cooldown`` is sent to the alert routes (a Slack webhook on a local HTTP server, mail to
a real SMTP server); later failures of that class, from this worker or another one, are held;
successful jobs send nothing. On Redis, SQLite and PostgreSQL (the cooldown lives in each
connection's state store)."""

from __future__ import annotations

import pathlib

import pytest
import redis

import eventbus
from apps import tagged
from eventbus.events import JobFailedAlert
from eventbus.monitoring.alerts import cooldown_key, send_alerts, subject_of
from helpers import REDIS_URL, run_worker, wait_for
from notifications.alerts import QueueAlert
from observing import BACKENDS, Backend, use_backend

pytestmark = pytest.mark.integration


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def work(start_worker: object, backend: Backend, **env: str) -> str:
    code, out, err = run_worker(start_worker, "--app", "apps.tagged", "--stop-when-empty", "--sleep", "0",
                                env={**backend.env, "TEST_DB_URL": backend.env.get("TEST_DB_URL", ""), **env})
    assert code == 0, (out, err)
    return err


def test_the_first_failure_of_each_class_is_alerted_once_per_cooldown(
        backend: Backend, start_worker: object, slack_stub: tuple, smtp_server: tuple) -> None:
    stub, webhook = slack_stub
    inbox, smtp_port = smtp_server
    alerting = {"TEST_SLACK_URL": webhook, "TEST_SMTP_PORT": str(smtp_port)}

    # Given two failing orders, a failing invoice and two jobs that succeed
    first = tagged.Order(1, "ada", fail=True).dispatch()
    tagged.Order(2, "ada", fail=True).dispatch()
    invoice = tagged.Invoice(1).dispatch()
    tagged.Order(3, "bob").dispatch()
    tagged.Quiet().dispatch()

    # When a worker runs them: one alert per failing class, none for the successes
    err = work(start_worker, backend, **alerting)
    assert f"job-failed alert about apps.tagged.Order on {backend.connection} sent" in err
    assert f"job-failed alert about apps.tagged.Invoice on {backend.connection} sent" in err
    wait_for(lambda: len(stub.posts) == 2 and len(inbox.messages) == 2, timeout=30)
    headers = sorted(post["blocks"][0]["text"]["text"] for post in stub.posts)
    assert headers == ["apps.tagged.Invoice failed", "apps.tagged.Order failed"]
    order = next(p for p in stub.posts if p["blocks"][0]["text"]["text"] == "apps.tagged.Order failed")
    facts = {f["text"].split("\n")[0]: f["text"].split("\n", 1)[1] for f in order["blocks"][2]["fields"]}
    assert facts == {"*Queue*": f"{backend.connection}:default", "*Job*": "apps.tagged.Order",
                     "*UUID*": first, "*Exception*": "RuntimeError: order 1 cannot ship"}
    subjects = sorted(m["Subject"] for m in inbox.messages)
    assert subjects == ["[eventbus] apps.tagged.Invoice failed", "[eventbus] apps.tagged.Order failed"]
    assert any(invoice in m.get_body(("plain",)).get_content() for m in inbox.messages)

    # And another worker failing the same class within the cooldown holds its alert back
    tagged.Order(4, "ada", fail=True).dispatch()
    err = work(start_worker, backend, **alerting)
    assert "job-failed alert about apps.tagged.Order" in err and "not sent: one went out less than" in err
    assert len(stub.posts) == 2 and len(inbox.messages) == 2


def test_without_alerts_a_failing_worker_sends_nothing(backend: Backend, start_worker: object,
                                                       slack_stub: tuple) -> None:
    stub, _ = slack_stub
    tagged.Order(1, "ada", fail=True).dispatch()
    err = work(start_worker, backend)
    assert "alert" not in err and stub.posts == []


def test_a_failure_alert_has_its_own_cooldown_per_class(redis_client: redis.Redis, slack_stub: tuple) -> None:
    stub, webhook = slack_stub
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}},
                       alerts={"slack": webhook})
    order = JobFailedAlert("redis", "default", "shop.Order", "u-1", "RuntimeError: no")
    invoice = JobFailedAlert("redis", "mail", "shop.Invoice", "u-2", "")
    assert [d.outcome for d in send_alerts([order, invoice, order])] == ["sent", "sent", "held"]
    assert cooldown_key(order) != cooldown_key(invoice) and subject_of(order) == "shop.Order on redis"
    assert len(stub.posts) == 2
    long_name = JobFailedAlert("redis", "default", "x" * 400, "u-3", "")  # a name past a key's length
    assert [d.outcome for d in send_alerts([long_name])] == ["sent"]
    alert = QueueAlert.of(invoice)
    assert alert.title == "shop.Invoice failed" and alert.facts["Exception"] == "-"
