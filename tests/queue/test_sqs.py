"""What the SQS driver does beyond the shared contract, on moto's local SQS endpoint.

What the local endpoint cannot show (IAM, real network timeouts, AWS refusing an old receipt
handle, the 5-minute FIFO deduplication after a delete, PurgeQueue's limits, eventually
consistent counts, short polls that miss messages) is listed in docs/drivers.md; the driver's side
of those is tested here where it can be observed (e.g. the deduplication id each push sends).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import pytest
from helpers import free_port, sqs_client

import eventbus
from eventbus import ConfigurationError, ConnectionUnavailableError, EventBusError, MissingDependencyError
from eventbus.payload import Payload
from eventbus.queue.sqs import ATTEMPTS, ENCODING, SqsQueue, _batches, wire_body

pytestmark = pytest.mark.integration


def payload(n: int = 0, **extra: Any) -> Payload:
    return Payload(display_name="Test", command_name="test.Job", command={"n": n}, **extra)


def configure(conn: dict[str, Any], **options: Any) -> SqsQueue:
    eventbus.configure(default="s", connections={"s": {**conn, **options}})
    q = eventbus.connection()
    assert isinstance(q, SqsQueue)
    return q


def receive_raw(conn: dict[str, Any], queue: str, *attributes: str) -> dict[str, Any]:
    """One message as SQS holds it (made visible again at once)."""
    client: Any = sqs_client(conn["endpoint_url"])
    url = f"{conn['prefix']}/{queue}"
    [message] = client.receive_message(QueueUrl=url, MessageAttributeNames=["All"],
                                       MessageSystemAttributeNames=list(attributes))["Messages"]
    client.change_message_visibility(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"],
                                     VisibilityTimeout=0)
    client.close()
    return dict(message)


def test_queue_names_become_urls_as_laravel_builds_them(sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection, prefix="https://sqs.eu-west-1.amazonaws.com/123/", suffix="-prod")
    assert q.queue_url("mail") == "https://sqs.eu-west-1.amazonaws.com/123/mail-prod"
    assert q.queue_url("mail-prod") == "https://sqs.eu-west-1.amazonaws.com/123/mail-prod"
    assert q.queue_url("jobs.fifo") == "https://sqs.eu-west-1.amazonaws.com/123/jobs-prod.fifo"
    assert q.queue_url("https://elsewhere/9/x") == "https://elsewhere/9/x"
    assert q._name_of("https://sqs.eu-west-1.amazonaws.com/123/jobs-prod.fifo") == "jobs.fifo"
    assert q._name_of("https://sqs.eu-west-1.amazonaws.com/123/other") is None  # not our suffix
    with pytest.raises(ConfigurationError, match="cannot be an SQS queue on connection 's'"):
        q.push(payload(), "queues:default")


@pytest.mark.parametrize("options, message", [
    ({"url": "https://sqs"}, "takes 'prefix' .* not 'url'"),
    ({"retry_after": 0}, "more than 0 and at most 43200"),
    ({"retry_after": 50_000}, "more than 0 and at most 43200"),
    ({"block_for": 21}, "at most 20 seconds"),
    ({"queue": "a b"}, "cannot be an SQS queue"),
    ({"secret": 5}, "'secret' must be text"),
])
def test_options_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        eventbus.configure(connections={"s": {"driver": "sqs", **options}})


def test_without_boto3_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    eventbus.configure(default="s", connections={"s": {"driver": "sqs"}})
    with pytest.raises(MissingDependencyError, match=r"pip install 'eventbus\[sqs\]'"):
        eventbus.connection()


def test_without_a_prefix_the_url_is_asked_for_and_a_missing_queue_says_so(
        sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection, prefix="")
    q.push(payload(1))
    job = q.pop()
    assert job is not None and job.delete()
    with pytest.raises(EventBusError, match="queue 'nope' of connection 's' does not exist .* create it"):
        q.push(payload(), "nope")
    assert q.size("nope") == 0 and q.stats("nope").size == 0  # inspection: nothing there
    q.ping()


def test_an_unreachable_endpoint_is_a_lost_connection(sqs_connection: dict[str, Any]) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    q = configure(sqs_connection, endpoint_url=dead, prefix=f"{dead}/123456789012")
    for call in (lambda: q.push(payload()), q.pop, q.ping):
        with pytest.raises(ConnectionUnavailableError, match=f"cannot reach SQS at {dead}"):
            call()


def test_delays_beyond_15_minutes_and_on_fifo_queues_are_refused(sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection)
    q.later(900, payload(1))  # the longest SQS keeps
    with pytest.raises(EventBusError, match="at most 900 seconds .* asked for 900.5s"):
        q.later(900.5, payload(2))
    with pytest.raises(EventBusError, match="FIFO queue 'jobs.fifo' cannot delay one message"):
        q.later(1, payload(3), "jobs.fifo")
    assert q.stats().delayed == 1 and q.size("jobs.fifo") == 0


def test_fifo_deduplicates_a_push_by_uuid_but_never_a_retry(sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection)
    p = payload()
    q.push(p, "jobs.fifo")
    q.push(p, "jobs.fifo")
    assert q.size("jobs.fifo") == 1
    first = receive_raw(sqs_connection, "jobs.fifo", "MessageDeduplicationId", "MessageGroupId")
    assert first["Attributes"] == {"MessageDeduplicationId": p.uuid, "MessageGroupId": "jobs.fifo"}
    job = q.pop("jobs.fifo")
    assert job is not None and job.delete()
    q.push_raw(p.to_json(), "jobs.fifo")  # what `eventbus retry` does, under the same uuid
    retried = receive_raw(sqs_connection, "jobs.fifo", "MessageDeduplicationId")
    assert retried["Attributes"]["MessageDeduplicationId"] != p.uuid  # AWS would drop a repeat


def test_bodies_sqs_would_refuse_travel_encoded(sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection)
    for raw in ("nul \x00, escape \x1b, not a character \ufffe", "", "zażółć ✓ {"):
        q.push_raw(raw)
        held = receive_raw(sqs_connection, "default")
        body, attributes = wire_body(raw)
        assert held["Body"] == body and (ENCODING in held.get("MessageAttributes", {})) == bool(attributes)
        job = q.pop()
        assert job is not None and job.raw == raw and job.attempts == 2  # the raw receive counted
        assert job.delete()


def test_the_attempt_count_at_push_travels_as_an_attribute(sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection)
    q.push(payload(attempts=4))
    assert receive_raw(sqs_connection, "default")["MessageAttributes"][ATTEMPTS]["StringValue"] == "4"
    job = q.pop()
    assert job is not None and job.attempts == 6  # 4 + two receives


def test_max_exceptions_count_travels_with_the_message(sqs_connection: dict[str, Any]) -> None:
    """Another worker process (here another connection object) sees the count and attempts."""
    conn = {**sqs_connection, "retry_after": 30}
    eventbus.configure(connections={"a": conn, "b": conn})
    a, b = eventbus.connection("a"), eventbus.connection("b")
    p = payload(max_exceptions=3)
    a.push(p)
    job = a.pop()
    assert job is not None and a.record_exception(p.uuid) == 1 and job.release(0)
    again = b.pop()
    assert again is not None and again.attempts == 2 and again.raw == p.to_json()
    assert b.record_exception(p.uuid) == 2 and again.release(1)
    assert b.pop() is None  # the copy keeps the release delay
    time.sleep(1.1)
    third = a.pop()
    assert third is not None and third.attempts == 3 and a.record_exception(p.uuid) == 3
    assert third.delete() and a.size() == 0


def test_a_release_without_running_keeps_its_place_on_a_fifo_queue_and_uses_the_try(
        sqs_connection: dict[str, Any]) -> None:
    """On a FIFO queue the release is ChangeMessageVisibility (a copy would go behind the rest
    of its group), so the attempt counts; the first job of the group stays first."""
    q = configure(sqs_connection)
    first, second = payload(1), payload(2)
    q.push(first, "jobs.fifo")
    q.push(second, "jobs.fifo")
    job = q.pop("jobs.fifo")
    assert job is not None and job.uuid == first.uuid
    assert job.release(0, counts_attempt=False)
    again = q.pop("jobs.fifo")
    assert again is not None and again.uuid == first.uuid and again.attempts == 2
    assert again.delete()


def test_touch_keeps_a_long_job_hidden(sqs_connection: dict[str, Any]) -> None:
    conn = {**sqs_connection, "retry_after": 2}
    eventbus.configure(connections={"a": conn, "b": conn})
    a, b = eventbus.connection("a"), eventbus.connection("b")
    a.push(payload())
    job = a.pop()
    assert job is not None
    time.sleep(1.2)
    assert job.touch()
    time.sleep(1.3)  # past the first visibility timeout, within the second
    assert b.pop() is None and b.stats().reserved == 1
    assert job.delete() and not job.touch()


def test_the_idle_wait_long_polls_and_hands_its_message_to_the_next_pop(
        sqs_connection: dict[str, Any]) -> None:
    import threading

    conn = {**sqs_connection, "block_for": 5}
    eventbus.configure(connections={"a": conn, "b": conn})
    a, b = eventbus.connection("a"), eventbus.connection("b")
    threading.Timer(0.5, lambda: b.push(payload(1))).start()
    started = time.monotonic()
    a.wait(["default"], 5)
    assert time.monotonic() - started < 2.0
    job = a.pop()
    assert job is not None and job.attempts == 1 and job.delete()


def test_closing_hands_back_the_message_the_idle_wait_received(sqs_connection: dict[str, Any]) -> None:
    conn = {**sqs_connection, "block_for": 1}
    eventbus.configure(connections={"a": conn, "b": conn})
    a, b = eventbus.connection("a"), eventbus.connection("b")
    b.push(payload())
    a.wait(["default"], 1)
    a.close()  # a worker told to stop while idle
    job = b.pop()
    assert job is not None and job.attempts == 2  # visible at once; the receive was an attempt


def test_signals_live_in_the_default_queues_tags(sqs_connection: dict[str, Any]) -> None:
    q = configure(sqs_connection)
    q.set_signal("restart", 7.5)
    tags = sqs_client(sqs_connection["endpoint_url"]).list_queue_tags(  # type: ignore[attr-defined]
        QueueUrl=f"{sqs_connection['prefix']}/default")["Tags"]
    assert tags == {"eventbus:signal:restart": "7.5"}
    missing = configure(sqs_connection, queue="missing")
    assert missing.signals() == {}
    with pytest.raises(EventBusError, match="'missing' .* does not exist"):
        missing.set_signal("restart", 1.0)


def test_batches_hold_at_most_10_messages_and_1_mib() -> None:
    small = [{"MessageBody": "x", "MessageAttributes": {}} for _ in range(25)]
    assert [len(b) for b in _batches(small)] == [10, 10, 5]
    big = [{"MessageBody": "x" * 400_000, "MessageAttributes": {}} for _ in range(5)]
    assert [len(b) for b in _batches(big)] == [2, 2, 1]
