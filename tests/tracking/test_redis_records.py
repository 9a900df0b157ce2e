"""How the Redis recent-jobs store lays out its records: one hash per connection, not a key per
job, because the state's listings (``eventbus status``, the history, the dashboard) find their
keys with ``SCAN``, which reads every key of the database; and the records the first release
kept in a hash each are still read until they expire."""

from __future__ import annotations

import json
import time

import redis

import eventbus
from eventbus.tracking import COMPLETED, FAILED, JobRecord, repository
from helpers import REDIS_URL

RETENTION = {"completed": 3600.0, "failed": 7200.0, "monitored": 86400.0}


def job(uuid: str, status: str = COMPLETED, *, ago_s: float = 0.0, tags: tuple[str, ...] = ()) -> JobRecord:
    finished = time.time() - ago_s
    return JobRecord(uuid=uuid, name="shop.jobs.Ship", connection="one", queue="default", status=status,
                     tags=tags, attempts=1, pushed_at=finished - 1, started_at=finished - 0.5,
                     finished_at=finished, runtime_s=0.5, command="shop.jobs.Ship")


def configure() -> None:
    eventbus.configure(default="one", connections={"one": {"driver": "redis", "url": REDIS_URL}})


def test_recording_many_jobs_adds_no_key_per_job(redis_client: redis.Redis) -> None:
    configure()
    store = repository("one")
    store.record([job("first"), job("failed-first", FAILED)], RETENTION)
    keys_before = redis_client.dbsize()
    store.record([job(f"job-{n}", FAILED if n % 10 == 0 else COMPLETED) for n in range(500)], RETENTION)
    assert redis_client.dbsize() == keys_before  # before: one key per job, 500 more
    assert len(store.recent(limit=1000)) == 502
    assert store.find("job-7") is not None and store.find("job-10").status == FAILED  # type: ignore[union-attr]


def test_a_record_past_its_retention_is_not_read_and_is_dropped_by_the_next_write(
        redis_client: redis.Redis) -> None:
    configure()
    store = repository("one")
    store.record([job("soon", ago_s=3600 - 1.0), job("stays")], RETENTION)
    assert store.find("soon") is not None
    time.sleep(1.2)  # its hour ends: no read sees it, though no write has run since
    assert store.find("soon") is None
    assert [r.uuid for r in store.recent(COMPLETED)] == ["stays"]
    [records] = [k for k in redis_client.keys("*") if k.endswith(b":records")]
    assert redis_client.hexists(records, "soon")
    store.record([job("later")], RETENTION)  # the next write drops it
    assert not redis_client.hexists(records, "soon") and redis_client.hlen(records) == 2


def test_records_kept_by_the_first_release_are_still_found_until_they_expire(
        redis_client: redis.Redis) -> None:
    configure()
    store = repository("one")
    store.record([job("new")], RETENTION)
    [index] = [k.decode() for k in redis_client.keys("*") if k.endswith(b":completed")]
    base = index[: -len("completed")]
    old = job("old", ago_s=5)
    redis_client.hset(f"{base}job:old", mapping=old.to_fields())  # as the first release wrote it
    redis_client.expire(f"{base}job:old", 3600)
    redis_client.zadd(index, {"old": old.finished_at})
    assert store.find("old") == old
    assert [r.uuid for r in store.recent(COMPLETED)] == ["new", "old"]
    redis_client.delete(f"{base}job:old")  # it expired
    assert store.find("old") is None and [r.uuid for r in store.recent(COMPLETED)] == ["new"]
    assert json.loads(redis_client.hget(f"{base}records", "new"))["uuid"] == "new"
