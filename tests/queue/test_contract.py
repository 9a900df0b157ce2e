"""One contract for every storing driver: Redis, SQLite, PostgreSQL, MariaDB, beanstalkd, SQS, memory.

Where a server cannot do what the contract asks, its driver says so: in a class attribute
(``idempotent_push``, ``delay_granularity_s``, ``clears_delayed``), or by not declaring a
capability (:mod:`eventbus.queue.capabilities`: ``Peekable``, ``Cancellable``, ...), and the test
checks the behaviour the driver promises instead: never a skip that hides what happens. A
driver that declares a capability is held to it.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from helpers import MYSQL_URL, PG_URL, REDIS_URL, database_reason

import eventbus
from eventbus.errors import EventBusError
from eventbus.payload import Payload
from eventbus.queue.base import Cancellation, JobState, Queue, QueueJob
from eventbus.queue.capabilities import (
    CAPABILITIES,
    FLAGS,
    AsyncPush,
    BatchesReservations,
    Cancellable,
    GivesBackAttempts,
    Peekable,
    ReportsWait,
    WorkerSignals,
    declared,
    supports,
)

BACKENDS = ["redis", "sqlite", "postgres", "mariadb", "beanstalkd", "sqs", "memory"]


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
    if name == "memory":  # configure() closed the last test's connection: this one starts empty
        return {"driver": "memory", "retry_after": 1.0}
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


def test_a_release_without_running_gives_the_attempt_back(q: Queue) -> None:
    """``release(counts_attempt=False)``: the job comes back as the same attempt, in one step
    (on a driver that cannot give an attempt back, it says so and the attempt is used)."""
    p = payload(1, big=12345678901234567890123)
    q.push(p)
    job = q.pop()
    assert job is not None and job.attempts == 1
    assert job.release(0, counts_attempt=False)
    again = q.pop()
    assert again is not None and again.uuid == p.uuid and json.loads(again.raw) == json.loads(job.raw)
    assert again.attempts == (1 if supports(q, GivesBackAttempts) else 2)
    assert not job.release(0, counts_attempt=False), "a former holder gives nothing back"
    assert again.delete() and q.size() == 0


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
    if not supports(q, Peekable):  # a look would be a receive, and count as an attempt
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
    assert supports(q, WorkerSignals), "every storing driver has workers"
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
    if supports(q, Peekable):
        assert default.oldest_ready_age_s is not None and 0 <= default.oldest_ready_age_s < 30
    assert other.oldest_ready_age_s is None


def test_the_oldest_ready_job_tells_how_long_it_waited(q: Queue) -> None:
    """``oldest_ready_age_s``: what a long-wait alert reads; None from a driver that cannot tell."""
    assert q.oldest_ready_age_s() is None
    q.later(60, payload(1))
    assert q.oldest_ready_age_s() is None  # delayed: not waiting yet
    q.push(payload(2))
    time.sleep(0.3)
    q.push(payload(3))
    age = q.oldest_ready_age_s()
    if supports(q, ReportsWait):
        assert age is not None and 0.25 <= age < 30
    else:
        assert age is None


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


#: What a driver declaring the capability must implement itself: the base class's fallback for
#: each of these does not do the job (it raises, pops one at a time, or takes a thread).
OWN_METHODS = {Cancellable: ("find", "list_jobs", "cancel"), BatchesReservations: ("reserve",),
               GivesBackAttempts: ("release_uncounted",), WorkerSignals: ("signals", "set_signal"),
               AsyncPush: ("apush",), Peekable: ("peek",), ReportsWait: ()}


def test_a_declared_capability_is_its_protocol_and_its_old_flag(q: Queue) -> None:
    """What a driver declares is what ``supports`` answers and what the flag of earlier releases
    says, and the driver implements the protocol's methods itself (the behaviour each promises
    is held by the tests around this one)."""
    capabilities = declared(q)
    assert capabilities, f"the {q.driver} driver declares no capability"
    for capability in CAPABILITIES:
        flag = FLAGS.get(capability)
        if flag is not None:
            assert getattr(type(q), flag) is (capability in capabilities), (q.driver, flag)
        if capability in capabilities:
            assert isinstance(q, capability)
            for method in OWN_METHODS[capability]:
                assert getattr(type(q), method) is not getattr(Queue, method), (q.driver, method)


# -- one job found by its uuid and cancelled (drivers that declare ``Cancellable``) ----------------

def test_cancel_removes_a_ready_or_delayed_job_never_a_reserved_one(q: Queue) -> None:
    if not supports(q, Cancellable):  # it says so, in one sentence, and touches nothing
        with pytest.raises(EventBusError, match=f"the {q.driver} driver cannot cancel one job: "):
            q.cancel(str(uuid.uuid4()))
        return
    held, ready, kept, delayed = payload(1), payload(2), payload(3), payload(4)
    for p in (held, ready, kept):
        q.push(p)
    q.later(60, delayed)
    job = q.pop()
    assert job is not None and n_of(job) == 1
    found = {p.uuid: q.find(p.uuid) for p in (held, ready, delayed)}
    assert {u: (f.state, f.queue) for u, f in found.items() if f} == {
        held.uuid: (JobState.RESERVED, "default"), ready.uuid: (JobState.READY, "default"),
        delayed.uuid: (JobState.DELAYED, "default")}
    assert json.loads(found[ready.uuid].raw)["uuid"] == ready.uuid  # type: ignore[union-attr]
    assert q.find(str(uuid.uuid4())) is None and q.find(kept.uuid, "other") is None
    assert q.cancel(ready.uuid) is Cancellation.CANCELLED
    assert q.cancel(delayed.uuid) is Cancellation.CANCELLED
    assert q.cancel(held.uuid) is Cancellation.RESERVED  # its worker has it: left alone
    assert q.cancel(ready.uuid) is Cancellation.NOT_FOUND and q.find(ready.uuid) is None
    assert q.cancel(kept.uuid, "other") is Cancellation.NOT_FOUND  # another queue's uuid
    assert q.size() == 2 and q.stats().delayed == 0
    nxt = q.pop()
    assert nxt is not None and n_of(nxt) == 3 and q.pop() is None
    assert job.delete() and nxt.delete()
    q.push(ready)  # a cancelled uuid may be pushed again
    again = q.pop()
    assert again is not None and n_of(again) == 2


def test_list_jobs_shows_each_state_in_order_without_touching_them(q: Queue) -> None:
    if not supports(q, Cancellable):  # listing jobs by state goes with finding one by its uuid
        with pytest.raises(EventBusError, match=f"the {q.driver} driver cannot cancel one job: "):
            q.list_jobs(JobState.DELAYED)
        return
    held, first, second, soon, late, elsewhere = (payload(n) for n in range(1, 7))
    for p in (held, first, second):
        q.push(p)
    q.later(120, late)
    q.later(60, soon)
    q.push(elsewhere, "other")
    job = q.pop()
    assert job is not None and n_of(job) == 1

    def listed(state: JobState, queue: str | None = None, limit: int = 10) -> list[tuple[str, str, JobState]]:
        return [(f.uuid, f.queue, f.state) for f in q.list_jobs(state, queue, limit)]

    assert listed(JobState.READY) == [(first.uuid, "default", JobState.READY), (second.uuid, "default", JobState.READY)]
    assert listed(JobState.DELAYED) == [(soon.uuid, "default", JobState.DELAYED), (late.uuid, "default", JobState.DELAYED)]
    assert listed(JobState.RESERVED) == [(held.uuid, "default", JobState.RESERVED)]
    assert listed(JobState.READY, limit=1) == [(first.uuid, "default", JobState.READY)]
    assert listed(JobState.READY, "other") == [(elsewhere.uuid, "other", JobState.READY)]
    assert listed(JobState.DELAYED, "nowhere") == []
    assert json.loads(q.list_jobs(JobState.DELAYED, limit=1)[0].raw)["uuid"] == soon.uuid
    assert q.stats().ready == 2 and q.stats().delayed == 2 and q.stats().reserved == 1  # nothing moved
    assert job.delete()


# -- reserve(): many jobs and the settling of finished ones in one request -------------------------

def n_of(job: QueueJob) -> int:
    return int(json.loads(job.raw)["data"]["command"]["n"])


def keeps_attempt_count(q: Queue) -> bool:
    """The driver can give back an attempt it counted (in place on Redis and SQL; beanstalkd and
    SQS, which count deliveries themselves, put back a copy that counts one fewer)."""
    return supports(q, GivesBackAttempts)


def test_reserve_takes_many_oldest_first_each_with_its_own_token(q: Queue) -> None:
    for n in range(5):
        q.push(payload(n))
    before = time.monotonic()
    got = q.reserve(None, 3)
    after = time.monotonic()
    assert [n_of(job) for job in got.jobs] == [0, 1, 2] and got.lost == set()
    assert all(job.attempts == 1 for job in got.jobs)
    assert len({job.token for job in got.jobs}) == 3 and all(job.token for job in got.jobs)
    if supports(q, BatchesReservations):  # the worker's prefetch renews by this deadline
        assert all(before + q.retry_after <= job.reserved_until <= after + q.retry_after for job in got.jobs)
    rest = q.reserve(None, 10)
    assert [n_of(job) for job in rest.jobs] == [3, 4]
    assert q.reserve(None, 10).jobs == [] and q.size() == 5


def test_reserve_acks_delete_only_jobs_still_held_and_expired_ones_come_back(q: Queue) -> None:
    for n in range(3):
        q.push(payload(n))
    first = q.reserve(None, 2).jobs
    time.sleep(q.retry_after + 0.1)
    second = q.reserve(None, 5).jobs
    assert sorted((n_of(job), job.attempts) for job in second) == [(0, 2), (1, 2), (2, 1)]
    assert q.reserve(None, 0, acks=first).jobs == []
    assert q.size() == 3, "acks by a former holder must not delete the new holder's jobs"
    q.reserve(None, 0, acks=second)
    assert q.size() == 0 and q.reserve(None, 5).jobs == []


def test_reserve_renews_held_jobs_and_reports_the_lost_ones(q: Queue) -> None:
    q.push(payload(0))
    q.push(payload(1))
    kept, dropped = q.reserve(None, 2).jobs
    time.sleep(q.retry_after * 0.7)
    deadline = kept.reserved_until
    renewed = q.reserve(None, 0, renew=[kept])
    if renewed.lost:  # a driver that cannot extend a reservation reports it as not held
        assert renewed.lost == {kept.job_id} and not supports(q, BatchesReservations)
        return
    if supports(q, BatchesReservations):
        assert kept.reserved_until > deadline
    time.sleep(q.retry_after * 0.7)  # dropped's reservation ran out, kept's did not
    taken = q.reserve(None, 5).jobs
    assert [(n_of(job), job.attempts) for job in taken] == [(1, 2)]
    assert q.reserve(None, 0, renew=[kept, dropped]).lost == {dropped.job_id}
    q.reserve(None, 0, acks=[kept, *taken])
    assert q.size() == 0


def test_reserve_gives_back_held_jobs_without_counting_their_attempt(q: Queue) -> None:
    for n in range(3):
        q.push(payload(n))
    a, b, c = q.reserve(None, 3).jobs
    assert q.reserve(None, 0, acks=[c], give_back=[a, b]).jobs == []
    again = q.reserve(None, 5).jobs
    attempts = 1 if keeps_attempt_count(q) else 2
    assert sorted((n_of(job), job.attempts) for job in again) == [(0, attempts), (1, attempts)]
    assert q.reserve(None, 0, give_back=[a]).jobs == [] and q.reserve(None, 5).jobs == [], \
        "a job given back by a former holder stays with its new holder"
    q.reserve(None, 0, acks=again)
    assert q.size() == 0


def test_two_reservers_at_once_never_get_the_same_job(q: Queue) -> None:
    pushed = {p.uuid for p in [payload(n) for n in range(120)] if q.push(p)}
    queues = [q, type(q)(q.connection_name, q.config)]
    seen: list[list[str]] = [[], []]

    def drain(queue: Queue, into: list[str]) -> None:
        acks: list[QueueJob] = []
        while True:
            got = queue.reserve(None, 7, acks=acks)
            if not got.jobs:
                return
            into.extend(job.uuid for job in got.jobs)
            acks = got.jobs

    threads = [threading.Thread(target=drain, args=(queue, into)) for queue, into in zip(queues, seen)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    queues[1].close()
    assert sorted(seen[0] + seen[1]) == sorted(pushed), "a job was reserved twice, or never"
    assert q.size() == 0
