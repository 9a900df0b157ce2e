"""Alerts that reach a person: ``eventbus monitor`` run as cron runs it (a subprocess, an app that
configures ``waits`` and ``alerts`` and never imports notifications) sends ``LongWaitDetected``
and ``QueueBusy`` by mail (a real SMTP server, aiosmtpd) and to a Slack webhook (a local HTTP
server), at most once per queue and kind per ``alert_cooldown``, on Redis and SQLite."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time
from typing import Any

import pytest
import redis

import eventbus
from eventbus import runtime
from eventbus.events import LongWaitDetected, QueueBusy
from eventbus.monitoring.alerts import send_alerts
from helpers import REDIS_URL, ROOT, TESTS
from notifications import NotificationFailedError
from notifications.alerts import QueueAlert, send_alert

pytestmark = pytest.mark.integration

APP = '''
import eventbus

eventbus.configure(
    default={default!r},
    connections={{"redis": {{"driver": "redis", "url": {redis_url!r}, "block_for": 1}},
                 "database": {{"driver": "database", "url": {sqlite_url!r}}}}},
    mail="smtp://127.0.0.1:{smtp_port}",
    waits={{"{default}:default": 1}},
    alerts={{"mail": "ops@example.com", "slack": {slack!r}}},
    alert_cooldown={cooldown},
)


class Nap(eventbus.Job):
    def handle(self) -> None:
        pass
'''


def write_app(directory: pathlib.Path, default: str, smtp_port: int, slack: str, cooldown: float = 600) -> None:
    (directory / "alertapp.py").write_text(APP.format(
        default=default, redis_url=REDIS_URL, sqlite_url=f"sqlite:///{directory}/jobs.sqlite3",
        smtp_port=smtp_port, slack=slack, cooldown=cooldown))


def env_for(directory: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": os.pathsep.join([str(directory), str(ROOT), str(TESTS)]),
                "EVENTBUS_APP": "alertapp", "PYTHONUNBUFFERED": "1"})
    return env


def run(directory: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eventbus", *args], cwd=directory, env=env_for(directory),
                          capture_output=True, text=True, timeout=120)


def push_one(directory: pathlib.Path) -> None:
    subprocess.run([sys.executable, "-c", "import alertapp\nalertapp.Nap().dispatch()\n"], cwd=directory,
                   env=env_for(directory), check=True, timeout=60)


@pytest.mark.parametrize("default", ["redis", "database"])
def test_a_long_wait_is_sent_by_mail_and_to_slack_once_per_cooldown(
        tmp_path: pathlib.Path, redis_client: redis.Redis, smtp_server: tuple, slack_stub: tuple,
        default: str) -> None:
    inbox, smtp_port = smtp_server
    stub, webhook = slack_stub
    write_app(tmp_path, default, smtp_port, webhook)
    if default == "database":
        assert run(tmp_path, "migrate").returncode == 0
    assert run(tmp_path, "monitor").returncode == 0  # nothing waits: no alert
    push_one(tmp_path)
    time.sleep(1.5)  # the job's age passes the 1 s limit

    first = run(tmp_path, "monitor")
    assert first.returncode == 1, first.stdout + first.stderr
    assert f"{default}:default" in first.stdout and "ALERT" in first.stdout
    assert f"long-wait alert about {default}:default sent" in first.stderr
    [post] = stub.posts
    header, summary, fields = post["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": f"Long wait on {default}:default"}}
    assert summary["text"]["text"].startswith(f"The oldest ready job on {default}:default has waited ")
    labels = [f["text"].split("\n")[0] for f in fields["fields"]]
    assert labels == ["*Queue*", "*Waited*", "*Limit*"] and fields["fields"][2]["text"] == "*Limit*\n1.0s"
    [mail] = inbox.messages
    assert mail["To"] == "ops@example.com" and mail["Subject"] == f"[eventbus] Long wait on {default}:default"
    assert "has waited" in mail.get_body(("plain",)).get_content()

    second = run(tmp_path, "monitor")  # a minute later, from cron, or from another host
    assert second.returncode == 1  # the queue still waits too long, and the exit code says so
    assert "not sent: one went out less than 600 s ago (alert_cooldown)" in second.stderr
    assert len(stub.posts) == 1 and len(inbox.messages) == 1  # but nobody is told twice

    busy = run(tmp_path, "monitor", "--max", "1")  # another kind of alert has its own cooldown
    assert busy.returncode == 1 and f"busy alert about {default}:default sent" in busy.stderr
    assert stub.posts[1]["blocks"][0]["text"]["text"] == f"Queue {default}:default is busy"
    assert len(inbox.messages) == 2


def test_after_the_cooldown_the_alert_goes_out_again(redis_client: redis.Redis, slack_stub: tuple) -> None:
    stub, webhook = slack_stub
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}},
                       alerts={"slack": webhook}, alert_cooldown=1)
    event = LongWaitDetected("redis", "default", 75.0, 60.0)
    assert [d.outcome for d in send_alerts([event])] == ["sent"]
    assert [d.outcome for d in send_alerts([event])] == ["held"]
    time.sleep(1.2)  # the cooldown's key expired on the server's clock
    assert [d.outcome for d in send_alerts([event])] == ["sent"]
    assert len(stub.posts) == 2


def test_a_failed_send_gives_the_cooldown_back(tmp_path: pathlib.Path, redis_client: redis.Redis,
                                               smtp_server: tuple, slack_stub: tuple) -> None:
    """A webhook that refuses for good (410: the channel was archived) is not retried within the
    run; the cooldown is not taken, so the next run tries again."""
    _, smtp_port = smtp_server
    stub, webhook = slack_stub
    stub.script = [(410, "channel_is_archived", {})]
    write_app(tmp_path, "redis", smtp_port, webhook)
    push_one(tmp_path)
    time.sleep(1.3)
    failed = run(tmp_path, "monitor")
    assert failed.returncode == 1
    assert "long-wait alert about redis:default could not be sent: NotificationFailedError" in failed.stderr
    assert "channel_is_archived" in failed.stderr and "/services/" not in failed.stderr
    assert len(stub.posts) == 1
    retried = run(tmp_path, "monitor")
    assert "long-wait alert about redis:default sent" in retried.stderr and len(stub.posts) == 2


def test_a_transient_refusal_is_retried_at_once(smtp_server: tuple, slack_stub: tuple) -> None:
    _, smtp_port = smtp_server
    stub, webhook = slack_stub
    stub.script = [(503, "busy", {"Retry-After": "1"}), (500, "oops", {})]
    eventbus.configure(mail=f"smtp://127.0.0.1:{smtp_port}", alerts={"slack": webhook})
    started = time.monotonic()
    send_alert(LongWaitDetected("redis", "default", 75.0, 60.0))
    assert len(stub.posts) == 3 and time.monotonic() - started >= 1.0  # Retry-After was honoured
    assert stub.posts[2]["text"] == ("The oldest ready job on redis:default has waited 1m 15s, longer "
                                     "than its limit of 1m 00s.")
    stub.script = [(500, "oops", {})] * 3
    with pytest.raises(NotificationFailedError):
        send_alert(QueueBusy("redis", "default", 1200, 1000))
    assert len(stub.posts) == 6  # three tries in all


def test_no_alert_is_sent_without_alerts_configured(redis_client: redis.Redis, slack_stub: tuple) -> None:
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    assert send_alerts([LongWaitDetected("redis", "default", 75.0, 60.0)]) == []


def test_the_cooldown_is_shared_through_the_state_store(redis_client: redis.Redis, slack_stub: tuple) -> None:
    """Two monitors (two processes: two stores over one Redis) send one alert between them."""
    stub, webhook = slack_stub
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}},
                       alerts={"slack": webhook}, alert_cooldown=600)
    event = LongWaitDetected("redis", "default", 75.0, 60.0)
    assert [d.outcome for d in send_alerts([event])] == ["sent"]
    runtime.close()  # as another process would: a store of its own
    assert [d.outcome for d in send_alerts([event, QueueBusy("redis", "mail", 5, 1)])] == ["held", "sent"]
    assert len(stub.posts) == 2


def test_an_alert_reads_as_a_sentence() -> None:
    alert = QueueAlert.of(QueueBusy("database", "mail", 1500, 1000))
    assert alert.summary == "database:mail holds 1,500 jobs (limit 1,000)."
    assert alert.facts == {"Queue": "database:mail", "Jobs": "1,500", "Limit": "1,000"}
    assert alert.to_sms(Any) == alert.summary


def test_a_slack_alert_route_must_be_a_url() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="'slack' route that is not a webhook URL"):
        eventbus.configure(alerts={"slack": "#ops"})
