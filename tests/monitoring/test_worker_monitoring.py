"""Workers as ``eventbus work`` runs them (subprocesses), seen through the state store:
registration and heartbeat, metrics, recent jobs, paused queues, and the log lines."""

from __future__ import annotations

import json
import pathlib
import signal
import socket
import time

import pytest
import redis

import eventbus
from apps import jobs
from eventbus import runtime
from eventbus.monitoring import pausing
from eventbus.monitoring.history import CATCH_UP_MINUTES, HistoryWriter
from eventbus.monitoring.metrics import bucket_of, read_samples, totals_by
from eventbus.monitoring.monitor import WorkerMonitor
from eventbus.monitoring.status import recent_jobs, workers_of
from eventbus.tracking import repository
from eventbus.errors import ConnectionUnavailableError
from eventbus.tracking.recorder import MAX_WAITING, JobRecorder
from eventbus.worker import Worker, WorkerOptions
from helpers import run_worker, traces, wait_for
from observing import BACKENDS, Backend, use_backend
from test_metrics import CountingStore

pytestmark = pytest.mark.integration


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def test_a_worker_registers_shows_its_job_and_leaves_when_stopped(backend: Backend, start_worker: object) -> None:
    uuid = jobs.Record(1, sleep=2.0).dispatch()
    w = start_worker("--sleep", "0.1", env=backend.env)  # type: ignore[operator]
    wait_for(lambda: any(x.job for x in workers_of(backend.connection)), timeout=30)
    [worker] = workers_of(backend.connection)
    assert (worker.name, worker.pid, worker.host) == ("default", w.proc.pid, socket.gethostname())
    assert (worker.connection, worker.queues, worker.status) == (backend.connection, ("default",), "working")
    assert worker.job is not None and (worker.job.name, worker.job.uuid) == ("apps.jobs.Record", uuid)
    assert worker.job.attempt == 1 and time.time() - worker.job.started_at < 10
    assert time.time() - worker.last_heartbeat < 5
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert workers_of(backend.connection) == []  # a clean exit removes the entry at once


def test_a_killed_workers_entry_expires(backend: Backend, start_worker: object) -> None:
    w = start_worker("--sleep", "0.1", env=backend.env)  # type: ignore[operator]
    wait_for(lambda: workers_of(backend.connection), timeout=30)
    w.kill()
    assert workers_of(backend.connection), "kill -9 leaves the entry until it expires"
    wait_for(lambda: not workers_of(backend.connection), timeout=20)  # 7.5 heartbeats of 0.3s


def test_metrics_and_recent_jobs_after_a_drain(backend: Backend, start_worker: object) -> None:
    for n in range(3):
        jobs.Record(n).dispatch()
    jobs.MaxExceptions().dispatch()  # released once, then failed
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--sleep", "0", env=backend.env)
    assert code == 0, err
    totals = totals_by(read_samples(runtime.state(), backend.connection))
    record, failing = totals[("default", "apps.jobs.Record")], totals[("default", "apps.jobs.MaxExceptions")]
    assert (record.done, record.failed, record.released, record.waited) == (3, 0, 0, 3)
    assert (failing.done, failing.failed, failing.released, failing.waited) == (0, 1, 1, 1)
    assert record.avg_runtime_s is not None and 0 < record.avg_runtime_s < 5
    assert record.avg_wait_s is not None and 0 <= record.avg_wait_s < 60
    recent = recent_jobs(backend.connection)
    assert [j.status for j in recent] == ["failed", "released", "done", "done", "done"]
    assert recent[0].attempt == 2 and recent[0].name == "apps.jobs.MaxExceptions"


def test_a_paused_queue_is_skipped_until_resumed(backend: Backend, start_worker: object,
                                                 redis_client: redis.Redis) -> None:
    store = runtime.state()
    pausing.pause(store, backend.connection, "low")
    jobs.Record(1).dispatch(queue="low")
    jobs.Record(2).dispatch(queue="high")
    args = ("--queue", "high,low", "--stop-when-empty", "--sleep", "0")
    assert run_worker(start_worker, *args, env=backend.env)[0] == 0
    assert traces(redis_client, "ran") == ["2"] and eventbus.connection().size("low") == 1
    assert pausing.resume(store, backend.connection, "low")
    assert run_worker(start_worker, *args, env=backend.env)[0] == 0
    assert traces(redis_client, "ran") == ["2", "1"]


def test_pausing_a_queue_stops_a_running_worker_within_a_second(backend: Backend, start_worker: object,
                                                               redis_client: redis.Redis) -> None:
    w = start_worker("--sleep", "0.1", env=backend.env)  # type: ignore[operator]
    jobs.Record(1).dispatch()
    wait_for(lambda: traces(redis_client, "ran") == ["1"], timeout=30)
    pausing.pause(runtime.state(), backend.connection, "default")
    # the worker reads pauses with its once-a-second signal check, then reports itself paused
    wait_for(lambda: [x.status for x in workers_of(backend.connection)] == ["paused"], timeout=10)
    jobs.Record(2).dispatch()
    time.sleep(1.0)  # give it the chance to (wrongly) take the job
    assert traces(redis_client, "ran") == ["1"] and eventbus.connection().size() == 1
    pausing.resume(runtime.state(), backend.connection, "default")
    wait_for(lambda: traces(redis_client, "ran") == ["1", "2"], timeout=30)
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_no_store_round_trip_per_job(use_redis: redis.Redis) -> None:
    for n in range(200):
        jobs.Counted(n).dispatch()
    store = CountingStore()
    # another worker took the metrics snapshots of the last half hour (and of the next minutes)
    other, now = HistoryWriter(store, "redis"), bucket_of(time.time())
    for minute in range(now - 30 * 60, now + 5 * 60, 60):
        other.take(minute)
    store.calls.clear()
    worker = Worker(eventbus.connection(), failed=runtime.failed_store(),
                    options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0),
                    observer=WorkerMonitor(store, "redis", flush_s=60, heartbeat_s=60))
    started = time.monotonic()
    assert worker.run() == 0
    seconds = time.monotonic() - started
    assert worker.jobs_processed == 200
    checks = store.calls.count("get")  # the paused-queue check, once a second
    assert checks <= seconds + 2 and store.calls.count("scan") == 1  # listed once: nothing changed
    assert store.calls.count("add") == CATCH_UP_MINUTES  # the snapshots it offered to take, once
    assert sorted(c for c in store.calls if c not in ("get", "scan", "add")) == [
        "incr_many", "put", "put_many", "put_many", "put_many"]  # first and last heartbeat, flush
    assert totals_by(read_samples(store, "redis"))[("default", "apps.jobs.Counted")].done == 200


def test_supervised_children_register_as_name_1_to_n(use_redis: redis.Redis, start_worker: object) -> None:
    w = start_worker("--processes", "2", "--name", "pool", "--sleep", "0.1",
                     env={"EVENTBUS_MONITOR_INTERVAL": "0.3"})  # type: ignore[operator]
    wait_for(lambda: len(workers_of("redis")) == 2, timeout=30)
    found = workers_of("redis")
    assert [x.name for x in found] == ["pool-1", "pool-2"]
    assert len({x.pid for x in found}) == 2 and w.proc.pid not in {x.pid for x in found}
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    wait_for(lambda: workers_of("redis") == [], timeout=10)


def test_log_lines_carry_worker_pid_attempt_and_release_delay(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.MaxExceptions().dispatch()
    w = start_worker("--stop-when-empty", "--sleep", "0", "--name", "w7")  # type: ignore[operator]
    assert w.wait() == 0
    out, _ = w.output()
    released, failed = out.strip().splitlines()
    prefix = f"w7[{w.proc.pid}] apps.jobs.MaxExceptions [default]"
    assert prefix + " 1/10 " in released and released.endswith("RELEASED (retry in 0s)")
    assert prefix + " 2/10 " in failed and failed.endswith("FAIL")


def test_log_format_json_is_one_object_per_line_on_one_stream(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.MaxExceptions().dispatch()
    jobs.Releaser().dispatch()
    w = start_worker("--stop-when-empty", "--sleep", "0", "--log-format", "json")  # type: ignore[operator]
    assert w.wait() == 0
    out, err = w.output()
    assert err == ""
    lines = [json.loads(line) for line in out.strip().splitlines()]
    job_lines = [x for x in lines if x["event"] == "job"]
    assert sorted((x["job"], x["attempt"], x["status"]) for x in job_lines) == [
        ("apps.jobs.MaxExceptions", 1, "RELEASED"), ("apps.jobs.MaxExceptions", 2, "FAIL"),
        ("apps.jobs.Releaser", 1, "RELEASED")]
    by_job = {(x["job"], x["attempt"]): x for x in job_lines}
    first = by_job[("apps.jobs.MaxExceptions", 1)]
    assert first["max_tries"] == 10 and first["delay_s"] == 0 and first["worker"] == "default"
    assert by_job[("apps.jobs.Releaser", 1)]["delay_s"] == 0.5
    assert all(x["pid"] == w.proc.pid for x in lines)
    logged = [x for x in lines if x["event"] == "log"]
    assert any("RuntimeError" in x["message"] and x["level"] == "error" for x in logged)
    assert any("Traceback" in x.get("exception", "") for x in logged)


class Quick(eventbus.Job):
    def handle(self) -> None:
        pass


def test_a_fast_worker_records_every_job_it_finished(use_redis: redis.Redis) -> None:
    """More jobs between two heartbeats than the recorder holds while the store is away
    (MAX_WAITING): they are written as they pile up, none is dropped."""
    uuids = eventbus.dispatch_many(Quick() for _ in range(MAX_WAITING * 2 + 500))
    worker = Worker(eventbus.connection(), failed=runtime.failed_store(),
                    options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0),
                    observer=WorkerMonitor(runtime.state(), "redis", flush_s=600, heartbeat_s=600))
    assert worker.run() == 0
    assert worker.jobs_processed == len(uuids)
    store = repository("redis")
    sample = sorted({*range(0, len(uuids), 25), *range(100), *range(len(uuids) - 100, len(uuids))})
    missing = [n for n in sample if store.find(uuids[n]) is None]
    assert missing == []


def test_heartbeats_keep_their_time_while_the_recent_jobs_cannot_be_written(use_redis: redis.Redis) -> None:
    """A fast worker whose recent-jobs writes fail keeps the finished jobs piled up: its
    monitor must not spend itself retrying them, and its heartbeats (what keeps the worker
    listed) and metrics flushes come at their time."""

    class Unwritable(JobRecorder):
        def flush(self) -> int:
            time.sleep(0.02)  # a store that does not answer takes a while to fail
            raise ConnectionUnavailableError("the recent-jobs store is down")

    eventbus.dispatch_many(Quick() for _ in range(MAX_WAITING * 3))
    store = CountingStore()
    monitor = WorkerMonitor(store, "redis", flush_s=0.2, heartbeat_s=0.2)
    monitor.jobs = Unwritable("redis")
    worker = Worker(eventbus.connection(), failed=runtime.failed_store(),
                    options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0), observer=monitor)
    started = time.monotonic()
    assert worker.run() == 0
    seconds = time.monotonic() - started
    assert seconds > 0.8, "too quick to need several heartbeats: make the test longer"
    assert store.calls.count("put_many") >= seconds / 0.2 / 2  # the heartbeats
    assert store.calls.count("incr_many") >= seconds / 0.2 / 2  # the metrics flushes
