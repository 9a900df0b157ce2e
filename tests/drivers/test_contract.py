"""One contract for every storing driver: Redis, SQLite, PostgreSQL, MariaDB, beanstalkd, SQS.

Where a server cannot do what the contract asks, its driver says so in a class attribute
(``idempotent_push``, ``delay_granularity_s``, ``clears_delayed``, ``peekable``) and the test
checks the behaviour the driver promises instead: never a skip that hides what happens.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import eventbus
from helpers import MYSQL_URL, PG_URL, REDIS_URL, database_reason
from eventbus.payload import Payload
from eventbus.queue.base import Queue

BACKENDS = ["redis", "sqlite", "postgres", "mariadb", "beanstalkd", "sqs"]


def connection_for(request: pytest.FixtureRequest, name: str, tmp_path: object) -> dict[str, Any]:
    """The connection under test; the servers' own fixtures skip with the reason when absent."""
    if name == "redis":
        request.getfixturevalue("redis_client")
        return {"driver": "redis", "url": REDIS_URL, "retry_after": 1.0, "block_for": 1}
    if name == "beanstalkd":  # TTR 1 would leave no second outside beanstalkd's DEADLINE_SOON margin
        return {"driver": "beanstalkd", "url": request.getfixturevalue("beanstalkd_url"),
                "retry_after": 2.0, "block_for": 1}
    if name == "sqs":
        return {**request.getfixturevalue("sqs_connection"), "retry_after": 2.0, "block_for": 1}
    url = {"sqlite": f"sqlite:///{tmp_path}/q.sqlite3", "postgres": PG_URL, "mariadb": MYSQL_URL}[name]
    reason = None if name == "sqlite" else database_reason(url)
    if reason:
        pytest.skip(reason)
    return {"driver": "database", "url": url, "retry_after": 1.0, "table": "contract_jobs"}


@pytest.fixture(params=BACKENDS)
def q(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[Queue]:
    name = request.param
    eventbus.configure(default="under_test",
                       connections={"under_test": connection_for(request, name, tmp_path)})
    queue = eventbus.connection()
    if name != "sqs":  # its fixture made fresh queues (and clear on SQS ends with a 1s long poll)
        for name_ in ("default", "other"):
            queue.clear(name_)
    if name in ("postgres", "mariadb"):
        with queue.engine.begin() as c:  # type: ignore[attr-defined]
            c.execute(sa.text("DELETE FROM contract_jobs"))
    yield queue


def due_after(q: Queue, seconds: float) -> float:
    """When a job delayed by ``seconds`` becomes ready: rounded up to the driver's granularity."""
    step = type(q).delay_granularity_s
    return math.ceil(seconds / step) * step if step else seconds


def sleep_until(started: float, seconds: float) -> None:
    time.sleep(max(started + seconds - time.monotonic(), 0.0))


def payload(n: int = 0, **extra: object) -> Payload:
    return Payload(display_name="Test", command_name="test.Job", command={"n": n, **extra})


def test_push_then_pop_returns_the_same_bytes(q: Queue) -> None:
    p = payload(1, big=12345678901234567890123, empty=[], nested={"list": [[]]}, text="zażółć ✓")
    q.push(p)
    job = q.pop()
    assert job is not None and job.raw == p.to_json()
    doc = json.loads(job.raw)
    assert doc["data"]["command"]["big"] == 12345678901234567890123
    assert doc["data"]["command"]["empty"] == [] and doc["data"]["command"]["nested"] == {"list": [[]]}
    assert job.attempts == 1 and job.uuid == p.uuid


def test_pop_takes_the_oldest_first_and_queues_are_separate(q: Queue) -> None:
    for n in range(3):
        q.push(payload(n))
    q.push(payload(99), "other")
    got = [json.loads(q.pop().raw)["data"]["command"]["n"] for _ in range(3)]  # type: ignore[union-attr]
    assert got == [0, 1, 2]
    assert q.pop() is None
    assert json.loads(q.pop("other").raw)["data"]["command"]["n"] == 99  # type: ignore[union-attr]


def test_push_is_idempotent_by_uuid_while_the_job_exists(q: Queue) -> None:
    p = payload()
    q.push(p)
    q.push(p)
    if not type(q).idempotent_push:  # the server cannot deduplicate: a second copy is stored
        assert q.size() == 2
        return
    assert q.size() == 1
    job = q.pop()
    assert job is not None and job.delete()
    q.push(p)  # deleted: the uuid may be pushed again
    assert q.size() == 1


def test_delayed_jobs_wait_their_turn_with_subsecond_precision(q: Queue) -> None:
    q.later(0.6, payload(1))
    started = time.monotonic()  # after the call: the delay runs from when the server got it
    assert q.pop() is None
    assert q.size() == 1
    assert q.peek() == []  # peek shows ready jobs only
    due = due_after(q, 0.6)
    if due > 0.6:  # whole seconds on the wire: rounded up, never to the nearest (never early)
        sleep_until(started, 0.7)
        assert q.pop() is None
    sleep_until(started, due + 0.1)
    assert q.pop() is not None


def test_release_puts_the_job_back_with_its_attempts(q: Queue) -> None:
    q.push(payload())
    job = q.pop()
    assert job is not None and job.release(0)
    again = q.pop()
    assert again is not None and again.attempts == 2 and again.raw == job.raw


def test_release_with_delay(q: Queue) -> None:
    q.push(payload())
    job = q.pop()
    assert job is not None and job.release(0.5)
    started = time.monotonic()
    assert q.pop() is None
    sleep_until(started, due_after(q, 0.5) + 0.1)
    assert q.pop() is not None


def test_expired_reservation_comes_back_and_fences_the_old_holder(q: Queue) -> None:
    q.push(payload())
    first = q.pop()
    assert first is not None
    time.sleep(q.retry_after + 0.1)
    second = q.pop()
    assert second is not None and second.attempts == 2
    assert not first.release(0), "the old holder must not put a second copy back"
    assert not first.delete(), "the old holder must not delete the new holder's job"
    assert q.size() == 1
    assert second.delete()
    assert q.size() == 0 and q.pop() is None


def test_size_counts_ready_delayed_and_reserved(q: Queue) -> None:
    q.push(payload(1))
    q.push(payload(2))
    q.later(60, payload(3))
    assert q.pop() is not None
    assert q.size() == 3


def test_clear_removes_ready_and_delayed_but_not_reserved(q: Queue) -> None:
    q.push(payload(1))
    q.push(payload(2))
    q.later(60, payload(3))
    reserved = q.pop()
    delayed_left = 0 if type(q).clears_delayed else 1  # a server that hides them until due
    assert q.clear() == 2 - delayed_left
    assert q.size() == 1 + delayed_left
    assert reserved is not None and reserved.delete()
    q.push(payload(4))
    assert q.size() == 1 + delayed_left


def test_peek_shows_ready_payloads_oldest_first_without_reserving(q: Queue) -> None:
    ps = [payload(n) for n in range(3)]
    for p in ps:
        q.push(p)
    if not type(q).peekable:  # a look would be a receive, and count as an attempt
        assert q.peek(limit=2) == [] and q.stats().oldest_ready_age_s is None
        return
    assert q.peek(limit=2) == [ps[0].to_json(), ps[1].to_json()]
    assert q.pop() is not None and q.size() == 3


def test_bulk_pushes_many(q: Queue) -> None:
    ps = [payload(n) for n in range(250)]
    ids = q.bulk(ps)
    assert ids == [p.uuid for p in ps]
    assert q.size() == 250
    assert [json.loads(q.pop().raw)["data"]["command"]["n"] for _ in range(3)] == [0, 1, 2]  # type: ignore[union-attr]


def test_push_raw_stores_any_text(q: Queue) -> None:
    q.push_raw("this is not json {")
    job = q.pop()
    assert job is not None and job.raw == "this is not json {"
    uuid.UUID(job.uuid)  # a fresh id stands in for the missing uuid


def test_attempts_start_from_the_payload_count(q: Queue) -> None:
    doc = payload().to_dict()
    doc["attempts"] = 0
    q.push_raw(json.dumps(doc))
    assert q.pop().attempts == 1  # type: ignore[union-attr]


def test_exception_counts_per_job(q: Queue) -> None:
    p = payload()
    q.push(p)
    q.pop()
    assert q.record_exception(p.uuid) == 1
    assert q.record_exception(p.uuid) == 2


def test_worker_signals(q: Queue) -> None:
    q.set_signal("down", None)
    q.set_signal("restart", 123.5)
    q.set_signal("down", 1.0)
    assert q.signals() == {"restart": 123.5, "down": 1.0}
    q.set_signal("down", None)
    assert q.signals() == {"restart": 123.5}


def test_queues_and_stats_by_state(q: Queue) -> None:
    q.push(payload(1))
    q.push(payload(2))
    q.later(60, payload(3), "other")
    assert q.pop() is not None
    assert set(q.queues()) >= {"default", "other"}
    default, other = q.stats("default"), q.stats("other")
    assert (default.ready, default.delayed, default.reserved, default.size) == (1, 0, 1, 2)
    assert (other.ready, other.delayed, other.reserved) == (0, 1, 0)
    if type(q).peekable:
        assert default.oldest_ready_age_s is not None and 0 <= default.oldest_ready_age_s < 30
    assert other.oldest_ready_age_s is None


def test_the_async_push_stores_what_the_sync_push_stores(q: Queue) -> None:
    """``apush``/``alater``/``abulk`` (redis.asyncio on Redis, the sync push on a worker thread
    elsewhere) keep the contract of ``push``/``later``/``bulk``."""
    first, later, rest = payload(1, big=12345678901234567890123, empty=[]), payload(2), [payload(3), payload(4)]

    async def push() -> list[str]:
        return [await q.apush(first), await q.alater(60, later, "other"), *await q.abulk(rest)]

    assert asyncio.run(push()) == [first.uuid, later.uuid, rest[0].uuid, rest[1].uuid]
    popped = [q.pop() for _ in range(3)]
    assert [job.raw for job in popped if job] == [first.to_json(), rest[0].to_json(), rest[1].to_json()]
    assert q.pop() is None and q.pop("other") is None  # the delayed one waits
    assert q.stats("other").delayed == 1
