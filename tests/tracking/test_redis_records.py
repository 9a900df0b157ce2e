"""How the Redis recent-jobs store lays out its records: one hash per connection, not a key per
job, because the state's listings (``eventbus status``, the history, the dashboard) find their
keys with ``SCAN``, which reads every key of the database; records end by the server's clock,
whichever worker writes; and the hash ends with its last record."""

from __future__ import annotations

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


def test_a_writer_whose_clock_runs_ahead_drops_no_record_of_the_others(redis_client: redis.Redis) -> None:
    configure()
    store = repository("one")
    store.record([job("fresh")], RETENTION)
    # a worker whose clock is two hours ahead writes its batch: the records end by the server's
    # clock, so "fresh" keeps its hour
    store._record([job("ahead")], dict(RETENTION), time.time() + 7200)  # the writer's own now
    assert store.find("fresh") is not None


def test_the_records_hash_ends_with_its_last_record(redis_client: redis.Redis) -> None:
    configure()
    store = repository("one")
    store.record([job("a", ago_s=600), job("b", FAILED)], RETENTION)
    keys = {k.decode().rsplit(":", 1)[-1]: k for k in redis_client.keys("*")}
    for name in ("records", "expiry"):
        left_ms = redis_client.pttl(keys[name])
        assert 7200_000 - 5_000 < left_ms <= 7200_000  # the failed record's two hours
