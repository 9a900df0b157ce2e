"""beanstalkd and SQS against what anyone who can write to them can send: message attributes
and signal documents are validated like a payload's envelope (a bad one fails one message, never
a worker), a command the server rejects never leaves the connection out of step, and a delay
no server can keep is an EventBusError."""

from __future__ import annotations

import base64
import json
from typing import Any

import greenstalk
import pytest
import redis
from apps import jobs
from helpers import address_of, run_worker, sqs_client, traces

import eventbus
from eventbus import EventBusError
from eventbus.payload import Payload
from eventbus.queue.beanstalkd import BeanstalkdQueue
from eventbus.queue.sqs import ATTEMPTS, ENCODING, EXCEPTIONS

pytestmark = pytest.mark.integration


def payload(n: int = 0) -> Payload:
    return Payload(display_name="Test", command_name="test.Job", command={"n": n})


def worker_env(name: str, connection: dict[str, Any]) -> dict[str, str]:
    return {"EVENTBUS_CONNECTION": name, "TEST_QUEUE_CONNECTIONS": json.dumps({name: connection})}


def drain(start_worker: object, name: str, connection: dict[str, Any]) -> str:
    code, _, err = run_worker(start_worker, "--app", "apps.queue_servers", "--stop-when-empty", "--quiet",
                              env=worker_env(name, connection))
    assert code == 0, err
    return err


# -- beanstalkd ------------------------------------------------------------------------------------

@pytest.fixture
def bean(beanstalkd_url: str) -> tuple[BeanstalkdQueue, dict[str, Any]]:
    connection = {"driver": "beanstalkd", "url": beanstalkd_url, "block_for": 1}
    eventbus.configure(default="b", connections={"b": connection})
    queue = eventbus.connection()
    assert isinstance(queue, BeanstalkdQueue)
    return queue, connection


def put_raw(url: str, tube: str, body: bytes) -> None:
    with greenstalk.Client(address_of(url), encoding=None, use=tube) as client:
        client.put(body)


def test_a_deep_document_in_the_signal_tube_never_stops_a_worker(
        bean: tuple[BeanstalkdQueue, dict[str, Any]], redis_client: redis.Redis, start_worker: object) -> None:
    queue, connection = bean
    deep = 32_000  # what the server's default job size allows: deeper than any parser's stack
    put_raw(connection["url"], queue.signal_tube, b'{"restart":' + b"[" * deep + b"]" * deep + b"}")
    assert queue.signals() == {}
    jobs.Record(1).dispatch()
    drain(start_worker, "b", connection)
    assert traces(redis_client, "ran") == ["1"]
    queue.set_signal("restart", 5.0)  # the bad document is replaced, not a reason to fail
    assert queue.signals() == {"restart": 5.0}


def test_a_put_the_server_rejects_leaves_the_connection_in_step(
        bean: tuple[BeanstalkdQueue, dict[str, Any]]) -> None:
    queue, _ = bean
    with pytest.raises(EventBusError, match="at most 4294967295 seconds"):
        queue.later(1e300, payload(1))
    with pytest.raises(greenstalk.BadFormatError), queue.producer.session("test") as client:
        client.put(b'{"uuid":"x"}', 2**40, 0, 60)  # a priority the protocol cannot carry
    assert queue.push(payload(2)) and queue.push(payload(3))
    assert queue.size() == 2
    assert [json.loads(raw)["data"]["command"]["n"] for raw in queue.peek(limit=5)] == [2, 3]


@pytest.mark.parametrize("delay", [float("inf"), float("nan"), -float("inf"), 10**400])
def test_a_delay_no_server_can_keep_is_an_eventbus_error(bean: tuple[BeanstalkdQueue, dict[str, Any]],
                                                         delay: float) -> None:
    queue, _ = bean
    with pytest.raises(EventBusError, match="finite number of seconds"):
        queue.later(delay, payload())
    with pytest.raises(EventBusError, match="finite number of seconds"):
        jobs.Record(1).dispatch(delay=delay)
    assert queue.size() == 0


# -- SQS -------------------------------------------------------------------------------------------

def attribute(value: str, kind: str = "String") -> dict[str, str]:
    return {"DataType": kind, "StringValue": value}


GOOD_BODY = Payload(display_name="apps.jobs.Record", command_name="apps.jobs.Record",
                    command={"n": 99, "sleep": 0.0}).to_json()
BAD_MESSAGES = {
    "attempts not whole": (GOOD_BODY, {ATTEMPTS: attribute("1.5", "Number")}, "eventbus.attempts"),
    "attempts huge": (GOOD_BODY, {ATTEMPTS: attribute("9" * 38, "Number")}, "eventbus.attempts"),
    "attempts text": (GOOD_BODY, {ATTEMPTS: attribute("x")}, "eventbus.attempts"),
    "exceptions text": (GOOD_BODY, {EXCEPTIONS: attribute("x")}, "eventbus.exceptions"),
    "base64 that is not": ("not base64 at all!", {ENCODING: attribute("base64")}, "not base64"),
    "unknown encoding": (GOOD_BODY, {ENCODING: attribute("rot13")}, "eventbus.encoding"),
    "base64 of bytes that are not UTF-8": (base64.b64encode(b'{"uuid":"\xff"}').decode(),
                                           {ENCODING: attribute("base64")}, "not UTF-8"),
}


@pytest.mark.parametrize("case", list(BAD_MESSAGES))
def test_bad_message_attributes_fail_that_message_only(case: str, sqs_connection: dict[str, Any],
                                                       redis_client: redis.Redis, start_worker: object) -> None:
    body, attributes, reason = BAD_MESSAGES[case]
    connection = {**sqs_connection, "block_for": 1}
    eventbus.configure(default="s", connections={"s": connection})
    client: Any = sqs_client(connection["endpoint_url"])
    client.send_message(QueueUrl=f"{connection['prefix']}/default", MessageBody=body,
                        MessageAttributes=attributes)
    client.close()
    jobs.Record(1).dispatch()
    drain(start_worker, "s", connection)
    assert traces(redis_client, "ran") == ["1"]
    [record] = eventbus.failed_store().all()
    assert reason in record.summary and record.display_name == "(refused payload)"
    assert eventbus.connection().size() == 0


@pytest.mark.parametrize("delay", [float("inf"), float("nan")])
def test_an_infinite_delay_on_sqs_is_an_eventbus_error(sqs_connection: dict[str, Any], delay: float) -> None:
    eventbus.configure(default="s", connections={"s": sqs_connection})
    with pytest.raises(EventBusError, match="finite number of seconds"):
        eventbus.connection().later(delay, payload())
    with pytest.raises(EventBusError, match="finite number of seconds"):
        eventbus.connection().push_raw(payload().to_json(), delay=delay)
