"""A hostile or broken payload fails its own job and never the worker.

Each case is written to the queue the way an attacker with write access could (through
``push_raw``, or straight into the Redis hash for bytes that are not UTF-8), followed by a good
job. The worker must exit 0 after running the good job, with the bad one in the failed store
and nothing left reserved.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

import eventbus
from apps import jobs
from eventbus.dispatching import make_payload
from helpers import run_worker, traces

pytestmark = pytest.mark.integration


def envelope(**overrides: Any) -> str:
    doc = make_payload(jobs.Record(99)).to_dict()
    doc.update(overrides)
    return json.dumps(doc)


DEEP = 100_000
BAD_ENVELOPES = {
    "timeout text": envelope(timeout="x"),
    "maxTries text": envelope(maxTries="3"),
    "backoff text": envelope(backoff="a"),
    "backoff list of text": envelope(backoff=["a"]),
    "retryUntil list": envelope(retryUntil=[]),
    "maxExceptions object": envelope(maxExceptions={}),
    "timeout NaN": envelope(timeout=float("nan")),
    "timeout Infinity": envelope(timeout=float("inf")),
    "timeout 1e300": envelope(timeout=1e300),
    "attempts bool": envelope(attempts=True),
    "failOnTimeout text": envelope(failOnTimeout="yes"),
    "uuid number": envelope(uuid=7),
    "data list": envelope(data=[]),
    "deeply nested body": '{"uuid":"deep","data":' + "[" * DEEP + "]" * DEEP + "}",
    "deeply nested command": envelope(data={"commandName": "apps.jobs.Record",
                                            "command": {"n": json.loads("[" * 900 + "]" * 900)}}),
}


@pytest.mark.parametrize("raw", list(BAD_ENVELOPES.values()), ids=list(BAD_ENVELOPES))
def test_a_malformed_envelope_fails_its_job_and_the_worker_goes_on(
        use_redis: redis.Redis, start_worker: object, raw: str) -> None:
    eventbus.connection().push_raw(raw)
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0, err
    assert traces(use_redis, "ran") == ["1"]
    [record] = eventbus.failed_store().all()
    assert record.payload == raw
    assert eventbus.connection().size() == 0


def test_a_body_that_is_not_utf8_fails_its_job(use_redis: redis.Redis, start_worker: object) -> None:
    queue = eventbus.connection()
    body = b'{"uuid":"bin","job":"\xff\xfe","data":{}}'
    use_redis.hset("queues:{default}:bodies", "bin", body)
    use_redis.hset("queues:{default}:attempts", "bin", 0)
    use_redis.rpush("queues:{default}", "bin")
    use_redis.rpush("queues:{default}:notify", 1)
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0, err
    assert traces(use_redis, "ran") == ["1"]
    [record] = eventbus.failed_store().all()
    assert record.payload.encode("utf-8", "surrogateescape") == body  # kept byte for byte
    assert queue.size() == 0


@pytest.mark.parametrize("raw", [BAD_ENVELOPES["timeout text"], BAD_ENVELOPES["deeply nested body"]],
                         ids=["timeout text", "deeply nested body"])
def test_with_a_key_the_signature_is_checked_before_any_field_is_read(
        use_redis: redis.Redis, start_worker: object, raw: str) -> None:
    eventbus.configure(connections={"redis": {"driver": "redis", "url": _url(use_redis)}}, key="k1")
    eventbus.connection().push_raw(raw)
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet", env={"EVENTBUS_KEY": "k1"})
    assert code == 0, err
    assert traces(use_redis, "ran") == ["1"]
    [record] = eventbus.failed_store().all()
    assert record.payload == raw


def _url(client: redis.Redis) -> str:
    kw = client.connection_pool.connection_kwargs
    return f"redis://{kw['host']}:{kw['port']}/{kw['db']}"
