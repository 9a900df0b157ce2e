"""Redis specifics: hash-tagged keys, the server clock, the migration batch."""

from __future__ import annotations

import json

import redis
from helpers import REDIS_URL

import eventbus
from eventbus.payload import Payload


def payload(n: int) -> Payload:
    return Payload(display_name="T", command_name="t.J", command={"n": n})


def test_every_key_of_a_queue_shares_its_hash_tag(redis_client: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    q = eventbus.connection()
    q.push(payload(1), "emails")
    q.push(payload(3), "emails")
    q.later(60, payload(2), "emails")
    q.pop("emails")
    keys = sorted(k.decode() for k in redis_client.keys("queues:*"))
    assert keys == ["queues:{emails}", "queues:{emails}:attempts", "queues:{emails}:bodies",
                    "queues:{emails}:delayed", "queues:{emails}:notify", "queues:{emails}:reserved",
                    "queues:{emails}:tokens"]
    from redis.crc import key_slot

    assert len({key_slot(k.encode()) for k in keys}) == 1  # one cluster slot for the whole queue


def test_scores_come_from_the_server_clock(redis_client: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    q = eventbus.connection()
    seconds, micros = redis_client.time()
    q.later(100, payload(1))
    [(_, score)] = redis_client.zrange("queues:{default}:delayed", 0, -1, withscores=True)
    assert abs(score - (seconds + micros / 1e6 + 100)) < 1.0


def test_one_pop_migrates_at_most_a_batch_of_due_jobs(redis_client: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={"redis": {
        "driver": "redis", "url": REDIS_URL, "migration_batch_size": 2}})
    q = eventbus.connection()
    for n in range(5):
        q.later(0.01, payload(n))
    import time

    time.sleep(0.05)
    job = q.pop()
    assert job is not None and json.loads(job.raw)["data"]["command"]["n"] == 0
    assert redis_client.zcard("queues:{default}:delayed") == 3  # only two moved by that pop
    assert redis_client.llen("queues:{default}") == 1
    assert len([q.pop() for _ in range(4)]) == 4 and q.pop() is None


def test_an_expired_reservation_goes_back_to_the_head_of_the_queue(redis_client: redis.Redis) -> None:
    """A killed worker's job runs next, not after everything queued since (issue 9, fault 4)."""
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL,
                                                               "retry_after": 0.3}})
    q = eventbus.connection()
    q.push(payload(1))
    q.push(payload(2))
    first, second = q.pop(), q.pop()  # both workers die holding them
    assert first is not None and second is not None
    for n in range(3, 6):
        q.push(payload(n))
    import time

    time.sleep(0.4)
    got = [json.loads(q.pop().raw)["data"]["command"]["n"] for _ in range(5)]  # type: ignore[union-attr]
    assert got == [1, 2, 3, 4, 5]


def test_an_idle_worker_wakes_when_a_reservation_expires(redis_client: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL,
                                                               "retry_after": 0.5, "block_for": 5}})
    q = eventbus.connection()
    q.push(payload(1))
    assert q.pop() is not None  # its worker dies
    import time

    started = time.monotonic()
    q.wait(["default"], 5.0)
    assert time.monotonic() - started < 2.0
    assert q.pop() is not None


def test_a_bulk_push_leaves_what_one_push_per_job_leaves(redis_client: redis.Redis) -> None:
    """push_many.lua stores a chunk with four commands; the keys must match push.lua's, job by job:
    the order, bodies, attempt counts (none for 0), wake-up tokens; an id already stored, or twice
    in one chunk, is stored once."""
    import dataclasses

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    q = eventbus.connection()
    items = [dataclasses.replace(payload(n), attempts=n % 3) for n in range(1203)]  # crosses chunks
    for p in items:
        q.push(p, "one")
    q.bulk(items[:700], "many")
    q.bulk(items[690:] + items[:3], "many")  # a chunk sent again after a lost reply, and more
    assert q.bulk([items[5], items[5]], "many") == [items[5].uuid] * 2  # both already stored

    for suffix, read in [("", lambda k: redis_client.lrange(k, 0, -1)),
                         (":bodies", redis_client.hgetall), (":attempts", redis_client.hgetall),
                         (":notify", redis_client.llen)]:
        assert read(f"queues:{{many}}{suffix}") == read(f"queues:{{one}}{suffix}"), suffix
    assert redis_client.hlen("queues:{many}:attempts") == 802  # the counts of 1 and 2 only

    fresh = payload(9999)
    q.bulk([fresh, fresh], "twice")
    assert redis_client.lrange("queues:{twice}", 0, -1) == [fresh.uuid.encode()]
    assert redis_client.llen("queues:{twice}:notify") == 1


def test_reserve_takes_and_settles_more_jobs_than_lua_can_unpack_at_once(redis_client: redis.Redis) -> None:
    """reserve.lua sends each command once for a whole batch; a batch larger than Lua's stack
    (a large --prefetch, many acknowledgements) goes in slices and loses nothing."""
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    q = eventbus.connection()
    items = [payload(n) for n in range(9000)]
    q.bulk(items, "big")
    taken = q.reserve("big", 8500).jobs
    assert [job.job_id for job in taken] == [p.uuid for p in items[:8500]]
    assert {job.attempts for job in taken} == {1} and len({job.token for job in taken}) == 8500
    assert redis_client.zcard("queues:{big}:reserved") == redis_client.hlen("queues:{big}:tokens") == 8500
    assert redis_client.llen("queues:{big}:notify") == 500  # one wake-up token taken a job

    assert q.reserve("big", 0, acks=taken).jobs == []
    assert redis_client.zcard("queues:{big}:reserved") == redis_client.hlen("queues:{big}:tokens") == 0
    assert redis_client.hlen("queues:{big}:bodies") == 500 and redis_client.hlen("queues:{big}:attempts") == 0
    assert q.size("big") == 500


def test_reserve_skips_duplicate_and_bodiless_entries_and_counts_attempts(redis_client: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    q = eventbus.connection()
    first, second, third = payload(1), payload(2), payload(3)
    q.bulk([first, second, third], "dup")
    # a duplicate entry of the first job and the id of a job whose body is gone, ahead of the rest
    redis_client.lpush("queues:{dup}", "gone", first.uuid)
    redis_client.hset("queues:{dup}:attempts", second.uuid, 4)
    jobs = q.reserve("dup", 3).jobs
    assert [job.job_id for job in jobs] == [first.uuid, second.uuid, third.uuid]
    assert [job.attempts for job in jobs] == [1, 5, 1]
    assert redis_client.hgetall("queues:{dup}:attempts") == {
        first.uuid.encode(): b"1", second.uuid.encode(): b"5", third.uuid.encode(): b"1"}
    assert redis_client.llen("queues:{dup}") == 0
    assert q.reserve("dup", 3).jobs == []  # the duplicate was dropped, not reserved twice


def test_a_limit_beyond_any_queue_reserves_what_there_is(redis_client: redis.Redis) -> None:
    """The ready list is read a pass of at most 10,000 ids at a time, so a limit of 10**17 (an
    unbounded --prefetch) is never sent to LRANGE as 1e+17."""
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    q = eventbus.connection()
    items = [payload(n) for n in range(10003)]
    q.bulk(items, "all")
    assert [job.job_id for job in q.reserve("all", 10**17).jobs] == [p.uuid for p in items]
