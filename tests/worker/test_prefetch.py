"""The Redis worker's prefetch: finished jobs settled and new ones reserved in one script call,
each job with its own token and deadline; what a kill -9, a SIGTERM and a long wait do to the jobs
a worker holds; the wake-up that carries the reservation.

Command counts are read on a private ``redis-server`` (its counts see this test's commands only).
"""

from __future__ import annotations

import pathlib
import signal
import time
from collections.abc import Iterator

import pytest
import redis
from apps import jobs
from chaos.servers import RedisServer
from helpers import traces, wait_for

import eventbus
from eventbus import Worker, WorkerOptions, runtime
from eventbus.worker.prefetch import Prefetcher

pytestmark = pytest.mark.integration


@pytest.fixture
def private_redis(use_redis: redis.Redis, tmp_path: pathlib.Path) -> Iterator[RedisServer]:
    """The default connection on a private ``redis-server`` (traces stay on the shared one)."""
    with RedisServer(tmp_path / "redis") as server:
        eventbus.configure(connections={"redis": {"driver": "redis", "url": server.url(), "block_for": 1}})
        yield server


def calls(client: redis.Redis, command: str) -> int:
    return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def drain(prefetch: int = 32) -> int:
    """Run a worker in this process until the queue is empty (no monitoring: only its own calls)."""
    options = WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0, prefetch=prefetch)
    return Worker(eventbus.connection(), failed=runtime.failed_store(), options=options).run()


def queue_keys_left(client: redis.Redis) -> list[bytes]:
    return [k for k in client.keys("queues:{default}*")]


def key(suffix: str = "") -> str:
    return f"queues:{{default}}{':' + suffix if suffix else ''}"


def test_a_worker_settles_and_reserves_many_jobs_per_script_call(use_redis: redis.Redis,
                                                                 private_redis: RedisServer) -> None:
    eventbus.dispatch_many(jobs.Record(n) for n in range(1000))
    client = private_redis.client()
    client.config_resetstat()
    assert drain() == 0
    assert traces(use_redis, "ran") == [str(n) for n in range(1000)]  # each once, in order
    assert calls(client, "evalsha") + calls(client, "eval") < 100  # a pop and a delete per job: 2,000
    assert queue_keys_left(client) == []  # every finished job was deleted


def test_prefetch_1_still_acknowledges_with_the_next_reservation(use_redis: redis.Redis,
                                                                  private_redis: RedisServer) -> None:
    eventbus.dispatch_many(jobs.Record(n) for n in range(100))
    client = private_redis.client()
    client.config_resetstat()
    assert drain(prefetch=1) == 0
    assert len(traces(use_redis, "ran")) == 100
    assert 100 <= calls(client, "evalsha") + calls(client, "eval") <= 102  # one request per job
    assert queue_keys_left(client) == []


def test_an_idle_worker_gets_its_job_with_the_reply_that_wakes_it(use_redis: redis.Redis,
                                                                   private_redis: RedisServer,
                                                                   start_worker: object) -> None:
    worker = start_worker("--sleep", "5", env={"EVENTBUS_REDIS_URL": private_redis.url()})
    eventbus.dispatch(jobs.Record(-1))
    wait_for(lambda: traces(use_redis, "ran") == ["-1"])
    client = private_redis.client()
    time.sleep(0.3)  # blocked on the notify list again
    client.config_resetstat()
    for n in range(10):
        eventbus.dispatch(jobs.Record(n))
        wait_for(lambda n=n: len(traces(use_redis, "ran")) == n + 2)
        time.sleep(0.05)
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0
    assert calls(client, "lpush") == 0  # no wake-up token handed back
    assert calls(client, "blpop") >= 10  # every job came with a wake-up...
    scripts = calls(client, "evalsha") + calls(client, "eval")
    assert scripts <= 10 * 3 + 8  # ...per job: its push, the reservation sent with the wait, one
    assert queue_keys_left(client) == []  # settle (and the monitor's few writes)


def test_a_woken_worker_runs_its_job_before_it_reads_the_worker_signals(
        use_redis: redis.Redis, private_redis: RedisServer, start_worker: object) -> None:
    """The once-a-second read of restart/down comes after the job that woke the worker, not
    between the wake-up and that job (it cost the idle latency's tail a round trip)."""
    worker = start_worker("--sleep", "5", env={"EVENTBUS_REDIS_URL": private_redis.url()})
    client = private_redis.client()
    eventbus.dispatch(jobs.Record(-1))
    wait_for(lambda: traces(use_redis, "ran") == ["-1"])
    for n in range(3):
        time.sleep(1.3)  # idle past the signals' second: a read is due when the next job wakes it
        before = calls(client, "hgetall")
        eventbus.dispatch(jobs.CountCalls(private_redis.url(), "hgetall"))
        wait_for(lambda n=n: len(traces(use_redis, "calls")) == n + 1)
        assert int(traces(use_redis, "calls")[n]) == before  # no signals read before the job ran
        wait_for(lambda before=before: calls(client, "hgetall") > before)  # but right after it
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0


def test_kill_9_with_prefetched_jobs_loses_none(use_redis: redis.Redis, start_worker: object) -> None:
    """Fast jobs first (the worker learns to take 32 at a time), then slower ones: it holds
    reservations it has not started when it is killed. They expire and run again (their attempt
    counted, as for any job whose worker died: hence --tries 3), none lost."""
    env = {"TEST_RETRY_AFTER": "4", "EVENTBUS_TIMEOUT_GRACE": "1"}
    eventbus.configure(connections={"redis": {"driver": "redis", "url": _url(use_redis), "retry_after": 4,
                                              "block_for": 1}})
    eventbus.dispatch_many(jobs.Record(n) for n in range(300))
    eventbus.dispatch_many(jobs.Record(n, sleep=0.1) for n in range(300, 360))
    worker = start_worker("--timeout", "2", "--tries", "3", "--quiet", env=env)
    queue = eventbus.connection()
    wait_for(lambda: len(traces(use_redis, "ran")) >= 300 and queue.stats().reserved > 3, timeout=30)
    worker.kill()
    ran_before = set(traces(use_redis, "ran"))
    assert queue.stats().reserved > 3  # it held prefetched reservations when it died
    second = start_worker("--timeout", "2", "--tries", "3", "--quiet", env=env)
    wait_for(lambda: set(traces(use_redis, "ran")) >= {str(n) for n in range(360)}, timeout=60)
    second.signal(signal.SIGTERM)
    assert second.wait(20) == 0
    assert set(traces(use_redis, "ran")) == {str(n) for n in range(360)}
    assert len(ran_before) < 360  # some had not run when the first worker died
    assert queue.size() == 0 and eventbus.runtime.failed_store().all() == []


def test_sigterm_gives_held_jobs_back_at_once_with_their_attempt_uncounted(use_redis: redis.Redis,
                                                                           start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Record(n) for n in range(300))
    eventbus.dispatch_many(jobs.Record(n, sleep=0.2) for n in range(300, 340))
    worker = start_worker("--quiet")
    wait_for(lambda: len(traces(use_redis, "ran")) >= 302, timeout=30)
    worker.signal(signal.SIGTERM)
    assert worker.wait(20) == 0
    queue = eventbus.connection()
    stats = queue.stats()
    left = 340 - len(traces(use_redis, "ran"))
    assert stats.reserved == 0 and stats.ready == left > 0  # back at once, not after retry_after
    attempts = use_redis.hvals(key("attempts"))
    assert all(int(a) == 0 for a in attempts)  # the attempts of the given-back jobs were uncounted
    code = start_worker("--stop-when-empty", "--quiet").wait(30)
    assert code == 0
    assert sorted(int(n) for n in traces(use_redis, "ran")) == list(range(340))


def test_held_reservations_are_renewed_before_they_could_run_out(use_redis: redis.Redis) -> None:
    """retry_after 3 s and jobs that may run 0.5 s: after 2.4 s in hand, the held reservations are
    renewed before the next job starts; one taken over meanwhile is skipped, not run twice."""
    eventbus.configure(connections={"redis": {"driver": "redis", "url": _url(use_redis), "retry_after": 3}})
    queue = eventbus.connection()
    eventbus.dispatch_many(jobs.Record(n) for n in range(4))
    prefetcher = Prefetcher(queue, limit=4, needs=lambda job: 0.5)
    first = prefetcher.next_job(["default"], 4, fill=True)
    assert first is not None and len(prefetcher.held) == 3
    following, stolen = prefetcher.held[0], prefetcher.held[-1]
    before = {m.decode(): s for m, s in use_redis.zrange(key("reserved"), 0, -1, withscores=True)}
    use_redis.hset(key("tokens"), stolen.job_id, "another-worker")  # as if it expired and was taken
    assert prefetcher.next_job(["default"]) is following and following.reserved_until == first.reserved_until
    time.sleep(2.4)  # 3 - 2.4 < 0.5 + the margin: the next start must renew
    second = prefetcher.next_job(["default"])
    assert second is not None and second is not stolen
    after = {m.decode(): s for m, s in use_redis.zrange(key("reserved"), 0, -1, withscores=True)}
    assert after[second.job_id] > before[second.job_id] + 2.0  # renewed on the server
    assert second.reserved_until > time.monotonic() + 2.5  # ...and here
    assert not prefetcher.held  # the stolen one was dropped, not run
    assert after[stolen.job_id] == before[stolen.job_id]  # and left alone


def _url(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs['db']}"
