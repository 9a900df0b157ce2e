"""The worker on beanstalkd and SQS: the rules it follows on Redis, as users run it (a subprocess).

Tries and backoff, max_exceptions, timeouts, a worker killed mid-job, the failed store and
``eventbus retry``, signals (restart, down/up), the queue commands, two workers at once, and the
blocking idle wait. Both servers count delays in whole seconds, rounded up; the jobs' traces go
to Redis as in ``test_worker.py``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from apps import jobs
from click.testing import CliRunner
from helpers import WorkerProcess, traces, wait_for, wait_until_catching

import eventbus
from eventbus.cli import main

pytestmark = pytest.mark.integration


@dataclasses.dataclass
class Remote:
    """One connection under test, configured alike in this process and in its workers."""

    name: str
    connection: dict[str, Any]
    worker_env: dict[str, str]
    start_worker: Any

    def configure(self, **options: Any) -> None:
        self.connection = {**self.connection, **options}
        eventbus.configure(default=self.name, connections={self.name: self.connection})

    @property
    def env(self) -> dict[str, str]:
        return {**self.worker_env, "EVENTBUS_CONNECTION": self.name,
                "TEST_QUEUE_CONNECTIONS": json.dumps({self.name: self.connection})}

    def start(self, *args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        process: WorkerProcess = self.start_worker("--app", "apps.queue_servers", *args,
                                                   env={**self.env, **(env or {})})
        return process

    def run(self, *args: str, timeout: float = 60) -> tuple[int, str, str]:
        w = self.start(*args)
        code = w.wait(timeout)
        out, err = w.output()
        return code, out, err

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "eventbus", *args, "--app", "apps.queue_servers"],
                              env=self.env, capture_output=True, text=True, timeout=60)

    def rounded(self, seconds: float) -> float:
        """A delay as the server keeps it: whole seconds, rounded up."""
        step = eventbus.connection().delay_granularity_s
        return math.ceil(seconds / step) * step


@pytest.fixture(params=["beanstalkd", "sqs"])
def remote(request: pytest.FixtureRequest, redis_client: redis.Redis, worker_env: dict[str, str],
           start_worker: object) -> Iterator[Remote]:
    if request.param == "beanstalkd":
        connection = {"driver": "beanstalkd", "url": request.getfixturevalue("beanstalkd_url")}
    else:
        connection = request.getfixturevalue("sqs_connection")
    server = Remote(request.param, {**connection, "block_for": 1}, worker_env, start_worker)
    server.configure()
    yield server


def run_until(remote: Remote, condition: object, *args: str) -> tuple[int, str, str]:
    """A long-running worker, stopped with SIGTERM once ``condition()`` holds."""
    w = remote.start("--sleep", "0.05", *args)
    wait_for(condition, timeout=30)
    time.sleep(0.2)
    w.signal(signal.SIGTERM)
    code = w.wait()
    out, err = w.output()
    return code, out, err


def test_runs_jobs_and_reports_one_line_each(remote: Remote, redis_client: redis.Redis) -> None:
    for n in range(3):
        jobs.Record(n).dispatch()
    code, out, err = remote.run("--stop-when-empty", "--sleep", "0")
    assert code == 0, err
    assert traces(redis_client, "ran") == ["0", "1", "2"]
    lines = out.strip().splitlines()
    assert len(lines) == 3 and all("apps.jobs.Record [default]" in l and l.endswith("DONE") for l in lines)
    assert eventbus.connection().size() == 0


def test_queue_priority_order(remote: Remote, redis_client: redis.Redis) -> None:
    jobs.Record(1).dispatch(queue="low")
    jobs.Record(2).dispatch(queue="high")
    code, _, err = remote.run("--queue", "high,low", "--stop-when-empty")
    assert code == 0, err
    assert traces(redis_client, "ran") == ["2", "1"]


def test_retries_with_backoff_then_failed_once_and_a_record(remote: Remote, redis_client: redis.Redis) -> None:
    uuid = jobs.Flaky(7).dispatch()
    code, out, err = run_until(remote, lambda: traces(redis_client, "failed"))
    assert code == 0, err
    attempts = [a.split(":") for a in traces(redis_client, "attempt")]
    assert [a[1] for a in attempts] == ["1", "2", "3"]  # beanstalkd: reserves; SQS: receive count
    gaps = [float(attempts[i + 1][2]) - float(attempts[i][2]) for i in range(2)]
    assert gaps[0] >= remote.rounded(0.2) - 0.05 and gaps[1] >= remote.rounded(0.4) - 0.05, gaps
    assert traces(redis_client, "failed") == ["7:RuntimeError:flaky 7 failed on attempt 3"]
    assert out.count("RELEASED") == 2 and out.count("FAIL") == 1
    record = eventbus.runtime.failed_store().find(uuid)
    assert record is not None and record.queue == "default" and record.connection == remote.name
    assert record.summary == "RuntimeError: flaky 7 failed on attempt 3"
    assert "Traceback" in record.exception and json.loads(record.payload)["uuid"] == uuid
    assert eventbus.connection().size() == 0


def test_max_exceptions_fails_before_tries_run_out(remote: Remote, redis_client: redis.Redis) -> None:
    """The count survives the trip back through the server (SQS: as an attribute of a copy)."""
    jobs.MaxExceptions().dispatch()
    code, _, err = remote.run("--stop-when-empty")
    assert code == 0, err
    assert traces(redis_client, "attempt") == ["1", "2"] and traces(redis_client, "failed") == ["again"]
    assert eventbus.connection().size() == 0


def test_release_inside_handle(remote: Remote, redis_client: redis.Redis) -> None:
    jobs.Releaser().dispatch()
    code, out, err = run_until(remote, lambda: len(traces(redis_client, "attempt")) == 2)
    attempts = [a.split(":") for a in traces(redis_client, "attempt")]
    assert code == 0, err
    assert [a[0] for a in attempts] == ["1", "2"]
    assert float(attempts[1][1]) - float(attempts[0][1]) >= remote.rounded(0.5) - 0.05
    assert "RELEASED" in out and out.strip().endswith("DONE")


def test_delayed_jobs_do_not_run_early(remote: Remote, redis_client: redis.Redis) -> None:
    pushed = time.time()
    jobs.Record(1).dispatch(delay=1.5)
    w = remote.start("--sleep", "0.1")
    wait_for(lambda: traces(redis_client, "ran") == ["1"], timeout=15)
    started = float(traces(redis_client, "started")[0].split(":")[1])
    assert started - pushed >= remote.rounded(1.5) - 0.05  # 2s: rounded up, never early
    assert started - pushed < remote.rounded(1.5) + 2.0
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_timeout_interrupts_counts_and_fails_at_once(remote: Remote, redis_client: redis.Redis) -> None:
    jobs.Slow().dispatch()
    started = time.monotonic()
    code, _, err = remote.run("--stop-when-empty", "--sleep", "0")
    assert code == 0, err
    assert time.monotonic() - started < 15  # not left reserved until retry_after (90s)
    assert traces(redis_client, "attempt") == ["1", "2"]
    assert traces(redis_client, "failed") == ["JobTimeoutError:apps.jobs.Slow timed out after 1 seconds"]
    assert "timed out" in eventbus.runtime.failed_store().all()[0].summary


def test_kill_9_mid_job_and_the_job_runs_again(remote: Remote, redis_client: redis.Redis) -> None:
    """beanstalkd hands the job back the moment the killed worker's connection closes; SQS makes
    it visible again when the visibility timeout (retry_after) runs out."""
    remote.configure(retry_after=4)
    grace = {"EVENTBUS_TIMEOUT_GRACE": "1"}  # timeout 2 + grace 1 stays below retry_after 4
    jobs.Record(1, sleep=30).dispatch()
    w = remote.start("--timeout", "2", env=grace)
    wait_for(lambda: traces(redis_client, "started"), timeout=20)
    w.proc.kill()
    w.proc.wait()
    killed = time.monotonic()
    queue = eventbus.connection()
    if remote.name == "beanstalkd":
        wait_for(lambda: queue.stats().ready == 1, timeout=2)
    else:
        assert queue.stats().reserved == 1  # still in flight until the visibility timeout ends
    redis_client.delete("trace:started")
    again = remote.start("--sleep", "0.2", "--timeout", "2", "--tries", "3", env=grace)
    wait_for(lambda: traces(redis_client, "started"), timeout=20)
    if remote.name == "sqs":
        assert time.monotonic() - killed >= 4 - 0.5
    again.signal(signal.SIGTERM)
    again.wait()


def fail_then_retry_from_the_cli(remote: Remote, redis_client: redis.Redis, queue: str) -> None:
    uuid = jobs.SelfFailing().dispatch(queue=queue)
    code, _, err = remote.run("--stop-when-empty", "--queue", queue)
    assert code == 0, err
    listing = remote.cli("failed")
    assert listing.returncode == 0 and uuid in listing.stdout and remote.name in listing.stdout
    retried = remote.cli("retry", "all")
    assert retried.returncode == 0, retried.stderr
    assert eventbus.connection().size(queue) == 1 and eventbus.runtime.failed_store().all() == []
    code, _, err = remote.run("--stop-when-empty", "--queue", queue)
    assert code == 0, err
    assert traces(redis_client, "attempt") == ["1", "1"]  # attempts were reset by the retry
    [record] = eventbus.runtime.failed_store().all()
    assert record.uuid == uuid and record.queue == queue and "the upstream said no" in record.summary


def test_a_failed_job_is_recorded_and_retried_from_the_cli(remote: Remote, redis_client: redis.Redis) -> None:
    """``eventbus retry`` pushes the payload back under its uuid with attempts reset."""
    fail_then_retry_from_the_cli(remote, redis_client, "default")


@pytest.mark.parametrize("remote", ["sqs"], indirect=True)
def test_a_failed_job_on_a_fifo_queue_is_retried_at_once(remote: Remote, redis_client: redis.Redis) -> None:
    """Within the 5 minutes in which SQS drops a repeated deduplication id: retry sends a fresh one.
    (The local endpoint deduplicates only against queued messages, so the id itself is checked in
    tests/queue/test_sqs.py.)"""
    fail_then_retry_from_the_cli(remote, redis_client, "jobs.fifo")


def test_restart_command_stops_workers_after_their_job(remote: Remote) -> None:
    w = remote.start("--sleep", "0.1")
    wait_until_catching(w.proc.pid, signal.SIGTERM)
    result = remote.cli("restart")
    assert result.returncode == 0, result.stderr
    assert w.wait(15) == 0


def test_down_and_up_maintenance_mode(remote: Remote, redis_client: redis.Redis) -> None:
    assert remote.cli("down").returncode == 0
    try:
        w = remote.start("--sleep", "0.1")
        wait_until_catching(w.proc.pid, signal.SIGTERM)
        jobs.Record(1).dispatch()
        time.sleep(2.0)
        assert traces(redis_client, "ran") == []
        assert remote.cli("up").returncode == 0
        wait_for(lambda: traces(redis_client, "ran") == ["1"], timeout=15)
        w.signal(signal.SIGTERM)
        assert w.wait() == 0
    finally:
        remote.cli("up")


def test_size_clear_peek_commands(remote: Remote) -> None:
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch(queue="other")
    jobs.Record(3).dispatch(queue="other", delay=60)

    def invoke(*args: str) -> str:
        result = CliRunner().invoke(main, list(args))
        assert result.exit_code == 0, result.output
        return result.output

    name = remote.name
    listing = invoke("size")  # no --queue: every queue that holds jobs
    assert listing.splitlines()[1:] == [f"{name}:default      1        0         0     1",
                                        f"{name}:other        1        1         0     2"]
    peeked = invoke("peek").strip()
    if eventbus.connection().peekable:
        assert json.loads(peeked)["data"]["command"]["n"] == 1
    else:
        assert peeked == ""  # SQS: a look would be a receive
    cleared = 2 if eventbus.connection().clears_delayed else 1
    assert f"Cleared {cleared} jobs from {name}:other." in invoke("clear", name, "--queue", "other", "--force")
    assert eventbus.connection().size("other") == 2 - cleared


def test_two_workers_never_run_the_same_job(remote: Remote, redis_client: redis.Redis) -> None:
    eventbus.connection().bulk([eventbus.dispatching.make_payload(jobs.Counted(n)) for n in range(200)])
    a = remote.start("--stop-when-empty", "--quiet")
    b = remote.start("--stop-when-empty", "--quiet")
    assert a.wait(120) == 0 and b.wait(120) == 0
    counts = {int(k): int(v) for k, v in redis_client.hgetall("trace:count").items()}
    assert len(counts) == 200 and set(counts.values()) == {1}
    assert collections.Counter(counts.values()) == {1: 200}


def test_an_idle_worker_blocks_in_the_server_and_wakes_at_once(remote: Remote,
                                                               redis_client: redis.Redis) -> None:
    """No polling: the idle wait is a blocking reserve (beanstalkd) or a long poll (SQS)."""
    remote.configure(block_for=5)
    w = remote.start("--sleep", "5")
    wait_until_catching(w.proc.pid, signal.SIGTERM)
    time.sleep(1.5)  # now inside a 5-second blocking wait
    pushed = time.time()
    jobs.Record(1).dispatch()
    wait_for(lambda: traces(redis_client, "started"), timeout=10)
    assert float(traces(redis_client, "started")[0].split(":")[1]) - pushed < 1.5
    stopping = time.monotonic()
    w.signal(signal.SIGTERM)  # cuts the next blocking wait short
    assert w.wait() == 0 and time.monotonic() - stopping < 4
