"""The worker's guarantees at their sharp edges, in-process on real Redis: timeouts against the
reservation, failing a job as one fenced step, a failed store that does not answer, an
acknowledgement that stalls."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from helpers import REDIS_URL

import eventbus
from eventbus import ConfigurationError, WorkerConfigurationError
from eventbus.dispatching import make_payload
from eventbus.event_bus import bus
from eventbus.failed import MemoryFailedJobStore, store_for
from eventbus.failed.base import FailedJob, FailedJobStore
from eventbus.queue.base import Queue, QueueJob
from eventbus.queue.redis import RedisQueue
from eventbus.worker import Worker, WorkerOptions
from eventbus.worker.processing import Collaborators, fail_job

pytestmark = pytest.mark.integration

RAN: list[str] = []
HOOKS: list[str] = []


class Quick(eventbus.Job):
    tries = 1

    def __init__(self, n: int = 0) -> None:
        self.n = n

    def handle(self) -> None:
        RAN.append(f"quick:{self.n}:{self.attempts}")

    def failed(self, exc: BaseException) -> None:
        HOOKS.append(f"quick:{self.n}:{type(exc).__name__}")


class Boom(Quick):
    def handle(self) -> None:
        RAN.append(f"boom:{self.n}")
        raise ValueError(f"boom {self.n}")


class LongTimeout(Quick):
    timeout = 9.5


class FittingTimeout(Quick):
    timeout = 8.5


@pytest.fixture(autouse=True)
def clean_traces() -> Iterator[None]:
    RAN.clear()
    HOOKS.clear()
    yield


@pytest.fixture
def queue(use_redis: redis.Redis) -> Queue:
    """The Redis connection with retry_after 1s (and 10s where a test says so)."""
    return configure_redis(retry_after=1.0)


def configure_redis(retry_after: float) -> Queue:
    eventbus.configure(default="redis", connections={"redis": {
        "driver": "redis", "url": REDIS_URL, "retry_after": retry_after, "block_for": 1}})
    return eventbus.connection()


def drain(queue: Queue, failed: FailedJobStore | None, **options: object) -> int:
    opts = {"stop_when_empty": True, "sleep_s": 0, "memory_mb": 0, "timeout_s": 0.5, "timeout_grace_s": 0.2,
            **options}
    return Worker(queue, failed=failed, options=WorkerOptions(**opts)).run()  # type: ignore[arg-type]


def collaborators(store: FailedJobStore) -> Collaborators:
    return Collaborators(store, bus, lambda chained: None)


# -- fault 1: a timeout that could outlive its reservation ----------------------------------------

def test_dispatch_refuses_a_job_timeout_that_with_the_grace_is_not_below_retry_after(
        use_redis: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTBUS_TIMEOUT_GRACE", "1")
    queue = configure_redis(retry_after=10)
    with pytest.raises(ConfigurationError, match=r"timeout \(9.5s\) plus the watchdog grace \(1s.* must be "
                                                 r"below the retry_after \(10s\) of connection 'redis'"):
        LongTimeout().dispatch()
    assert queue.size() == 0
    FittingTimeout().dispatch()  # 8.5 + 1 < 10
    assert queue.size() == 1


def test_the_worker_fails_without_running_a_pushed_job_whose_timeout_outlives_its_reservation(
        use_redis: redis.Redis) -> None:
    queue = configure_redis(retry_after=10)
    queue.push(make_payload(LongTimeout(1)))  # pushed as is: no dispatch-time check
    queue.push(make_payload(Quick(2)))
    store = MemoryFailedJobStore()
    assert drain(queue, store, timeout_s=5, timeout_grace_s=1) == 0
    assert RAN == ["quick:2:1"]
    [record] = store.all()
    assert record.summary.startswith("eventbus.errors.ConfigurationError: ")
    assert "LongTimeout's timeout (9.5s) plus the watchdog grace (1s" in record.summary
    assert "retry_after (10s)" in record.summary and queue.size() == 0


@pytest.mark.parametrize("timeout, grace, message", [
    (8.0, 2.0, r"worker timeout \(8s\) plus the watchdog grace \(2s, EVENTBUS_TIMEOUT_GRACE\) must be below "
               r"the retry_after \(10s\)"),
    (0.0, 2.0, r"worker timeout must be set \(0 means none\) on connection 'redis', whose reservations "
               r"expire after retry_after \(10s\)"),
])
def test_a_worker_refuses_to_start_when_timeout_and_grace_reach_retry_after(
        use_redis: redis.Redis, timeout: float, grace: float, message: str) -> None:
    configure_redis(retry_after=10)
    with pytest.raises(WorkerConfigurationError, match=message):
        Worker.for_connection(options=WorkerOptions(timeout_s=timeout, timeout_grace_s=grace))
    Worker.for_connection(options=WorkerOptions(timeout_s=7.9, timeout_grace_s=2.0))  # fits


# -- fault 2: failing a job is one fenced step ------------------------------------------------------

class CountingStore(MemoryFailedJobStore):
    """A memory store that counts every write it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def insert(self, record: FailedJob) -> bool:
        self.writes.append(record.uuid)
        return super().insert(record)


def taken_over(queue: Queue) -> tuple[QueueJob, QueueJob]:
    """A job popped by a worker whose reservation then expired, and the same job popped again."""
    queue.push(make_payload(Quick(1)))
    stale = queue.pop()
    assert stale is not None
    time.sleep(queue.retry_after + 0.1)
    current = queue.pop()
    assert current is not None and current.job_id == stale.job_id
    return stale, current


def test_a_worker_that_lost_the_reservation_writes_no_failed_record_at_all(queue: Queue) -> None:
    stale, current = taken_over(queue)
    store = CountingStore()
    fail_job(stale, RuntimeError("too late"), collaborators(store))
    assert store.writes == [] and HOOKS == []
    assert current.delete(), "the job still belongs to the worker that took it over"


def test_on_the_queues_own_redis_a_stale_failure_changes_nothing(queue: Queue) -> None:
    stale, current = taken_over(queue)
    store = store_for(REDIS_URL)
    fail_job(stale, RuntimeError("too late"), collaborators(store))
    assert store.all() == [] and HOOKS == []
    assert current.delete()


def test_on_the_queues_own_redis_failing_is_one_script_and_the_record_is_listed(
        queue: Queue, use_redis: redis.Redis) -> None:
    queue.push(make_payload(Boom(3)))
    store = eventbus.runtime.failed_store()
    assert drain(queue, store) == 0
    [record] = store.all()
    assert record.summary == "ValueError: boom 3" and HOOKS == ["quick:3:ValueError"]
    assert use_redis.hexists("queues:{default}:failed", record.uuid)  # beside its queue, one slot
    assert store.find(record.uuid) == record and queue.size() == 0
    assert store.forget(record.uuid) and store.all() == []


# -- fault 8: the failed store does not answer -------------------------------------------------------

def test_a_failure_survives_a_failed_store_outage_and_is_recorded_when_the_job_comes_back(
        queue: Queue) -> None:
    queue.push(make_payload(Boom(7)))
    down = store_for("redis://127.0.0.1:1/0")
    assert drain(queue, down) == 0  # the worker stays up
    assert RAN == ["boom:7"] and HOOKS == ["quick:7:ValueError"]  # failed() once, with the real exception
    assert queue.size() == 1  # still reserved, its failure beside it
    time.sleep(queue.retry_after + 0.1)
    up = MemoryFailedJobStore()
    assert drain(queue, up) == 0
    [record] = up.all()
    assert record.summary == "ValueError: boom 7" and "Traceback" in record.exception
    assert RAN == ["boom:7"] and HOOKS == ["quick:7:ValueError"]  # not run again, no second hook
    assert queue.size() == 0


def test_a_store_that_does_not_answer_raises_connection_unavailable(use_redis: redis.Redis) -> None:
    with pytest.raises(eventbus.ConnectionUnavailableError, match="cannot reach the failed job store"):
        store_for("redis://127.0.0.1:1/0").all()


# -- fault 3: the acknowledgement runs outside the job's timeout ------------------------------------

class StallingAcks(RedisQueue):
    """A Redis connection whose server stalls for 0.8 s whenever a job is acknowledged."""

    def delete_reserved(self, job: QueueJob) -> bool:
        time.sleep(0.8)
        return super().delete_reserved(job)


def test_an_acknowledgement_slower_than_the_timeout_leaves_a_finished_job_done(
        use_redis: redis.Redis) -> None:
    config = RedisQueue.validate_config("redis", {"driver": "redis", "url": REDIS_URL, "retry_after": 5})
    queue = StallingAcks("redis", config)
    queue.push(make_payload(Quick(1)))
    store = MemoryFailedJobStore()
    assert drain(queue, store, timeout_s=0.3, timeout_grace_s=2.0) == 0
    assert RAN == ["quick:1:1"] and HOOKS == [] and store.all() == []
    assert queue.size() == 0


# -- fault 11: a Redis without persistence ---------------------------------------------------------

def test_a_worker_is_warned_about_redis_without_persistence(tmp_path: object) -> None:
    from chaos.servers import RedisServer

    for aof in (False, True):
        with RedisServer(tmp_path / f"aof-{aof}", aof=aof) as server:  # type: ignore[operator]
            config = RedisQueue.validate_config("r", {"driver": "redis", "url": server.url()})
            queue = RedisQueue("r", config)
            warnings = queue.startup_warnings()
            queue.close()
        if aof:
            assert warnings == []
        else:
            [warning] = warnings
            assert "without persistence (appendonly no)" in warning and "appendonly yes" in warning
