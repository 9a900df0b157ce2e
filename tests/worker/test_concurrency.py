"""``eventbus work --concurrency N`` with real worker subprocesses on Redis (and SQLite).

What is checked is what the jobs saw (how many ran at once, on which loop and thread) and what the
queue and the failed store hold afterwards: no timing assertions (the speed-up is measured in
``benchmarks/concurrency.py``).
"""

from __future__ import annotations

import signal

import pytest
import redis
from apps import jobs
from helpers import run_worker, traces, wait_for

import eventbus

pytestmark = pytest.mark.integration


def overlaps(client: redis.Redis) -> list[int]:
    return [int(v) for v in client.lrange("trace:overlap", 0, -1)]


def test_async_jobs_run_together_as_tasks_of_one_loop(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Overlapping(n, seconds=0.5) for n in range(40))
    code, out, err = run_worker(start_worker, "--concurrency", "20", "--stop-when-empty")
    assert code == 0, err
    assert sorted(int(n) for n in traces(use_redis, "ran")) == list(range(40))
    assert max(overlaps(use_redis)) >= 10  # many awaited at once in one process
    assert len(set(traces(use_redis, "loop"))) == 1  # ... on the worker's one event loop
    assert eventbus.connection().size() == 0


def test_sync_jobs_run_together_in_threads(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Overlapping(n, seconds=0.5, use_async=False) for n in range(30))
    code, out, err = run_worker(start_worker, "--concurrency", "10", "--stop-when-empty")
    assert code == 0, err
    assert sorted(int(n) for n in traces(use_redis, "ran")) == list(range(30))
    assert max(overlaps(use_redis)) >= 5
    threads = set(traces(use_redis, "thread"))
    assert 1 < len(threads) <= 10 and all(t.startswith("eventbus-job") for t in threads)


def test_one_job_at_a_time_without_concurrency(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Overlapping(n, seconds=0.05, use_async=n % 2 == 0) for n in range(10))
    code, out, err = run_worker(start_worker, "--stop-when-empty")
    assert code == 0, err
    assert max(overlaps(use_redis)) == 1 and set(traces(use_redis, "thread")) == {"MainThread"}


def test_an_async_job_is_cancelled_at_its_timeout_and_the_worker_goes_on(
        use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch(jobs.AsyncStubborn(1))
    eventbus.dispatch_many(jobs.Record(n) for n in range(5))
    code, out, err = run_worker(start_worker, "--concurrency", "4", "--stop-when-empty",
                                env={"EVENTBUS_TIMEOUT_GRACE": "1"})
    assert code == 0, err  # cancelled like an interrupted job: no recycling needed
    assert traces(use_redis, "cancelled") == ["1"]
    assert sorted(traces(use_redis, "ran")) == ["0", "1", "2", "3", "4"]  # AsyncStubborn never ran to its end
    failed = eventbus.runtime.failed_store().all()
    assert len(failed) == 1 and "JobTimeoutError" in failed[0].exception


def test_a_sync_job_past_its_timeout_is_recorded_and_the_process_recycled(
        use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch(jobs.ThreadStubborn(1))
    eventbus.dispatch_many(jobs.Record(n, sleep=0.2) for n in range(3))
    code, out, err = run_worker(start_worker, "--concurrency", "4", "--stop-when-empty",
                                env={"EVENTBUS_TIMEOUT_GRACE": "1"}, timeout=30)
    assert code == 1, err  # a thread cannot be interrupted: a fresh process takes over
    assert "could not be interrupted" in err
    assert sorted(traces(use_redis, "ran")) == ["0", "1", "2"]  # the others finished first
    failed = eventbus.runtime.failed_store().all()
    assert len(failed) == 1 and "JobTimeoutError" in failed[0].exception
    assert eventbus.connection().size() == 0


def test_sigterm_lets_the_jobs_in_flight_finish_and_leaves_the_rest_queued(
        use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Overlapping(n, seconds=1.0) for n in range(20))
    worker = start_worker("--concurrency", "5")
    wait_for(lambda: len(overlaps(use_redis)) >= 5)
    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 0
    ran = traces(use_redis, "ran")
    assert len(ran) == len(overlaps(use_redis)) >= 5  # every job it started, finished
    assert eventbus.connection().size() == 20 - len(ran)  # the rest wait, none reserved
    assert eventbus.connection().stats().reserved == 0


def test_max_jobs_counts_every_job_with_concurrency(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Overlapping(n, seconds=0.1) for n in range(30))
    code, out, err = run_worker(start_worker, "--concurrency", "4", "--max-jobs", "10")
    assert code == 0, err
    assert len(traces(use_redis, "ran")) == 10
    assert eventbus.connection().size() == 20 and eventbus.connection().stats().reserved == 0


def test_concurrency_on_a_driver_that_reserves_one_at_a_time(use_redis: redis.Redis, start_worker: object,
                                                            tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/queue.db"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}})
    eventbus.dispatch_many(jobs.Overlapping(n, seconds=0.3) for n in range(12))
    code, out, err = run_worker(start_worker, "database", "--concurrency", "6", "--stop-when-empty",
                                env={"TEST_DB_URL": url})
    assert code == 0, err
    assert sorted(int(n) for n in traces(use_redis, "ran")) == list(range(12))
    assert max(overlaps(use_redis)) >= 3
    assert eventbus.connection().size() == 0


def test_failures_and_retries_keep_their_meaning_with_concurrency(use_redis: redis.Redis,
                                                                  start_worker: object) -> None:
    eventbus.dispatch_many(jobs.Flaky(n) for n in range(3))
    code, out, err = run_worker(start_worker, "--concurrency", "3", "--max-jobs", "9", "--sleep", "0.1",
                                timeout=60)
    assert code == 0, err
    assert len(traces(use_redis, "attempt")) == 9  # three tries each, with their backoff
    assert len(eventbus.runtime.failed_store().all()) == 3
    assert eventbus.connection().size() == 0
