"""Long waits: each driver tells how long its oldest ready job has waited (or says it cannot),
``configure(waits=...)`` and ``eventbus monitor --max-wait`` turn a wait past the limit into
``LongWaitDetected`` and exit code 1, on a real Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import datetime
import json
import pathlib
import subprocess
import sys
import time

import pytest
import redis
from click.testing import CliRunner, Result

import eventbus
from apps import jobs
from eventbus import runtime
from eventbus.cli import main
from eventbus.queue.drivers import driver_class, register_driver
from eventbus.queue.memory import MemoryQueue
from eventbus.testing import memory_queue
from observing import BACKENDS, Backend, use_backend

pytestmark = pytest.mark.integration


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def test_drivers_say_whether_they_can_tell_the_wait() -> None:
    told = {name: driver_class(name).reports_wait
            for name in ("redis", "database", "memory", "beanstalkd", "sqs", "sync", "null")}
    assert told == {"redis": True, "database": True, "memory": True, "beanstalkd": True,
                    "sqs": False, "sync": False, "null": False}


def test_the_oldest_ready_job_tells_the_wait(backend: Backend) -> None:
    queue = eventbus.connection()
    assert queue.oldest_ready_age_s() is None  # nothing ready
    jobs.Record(1).dispatch(delay=60)
    assert queue.oldest_ready_age_s() is None  # a delayed job does not wait yet
    jobs.Record(2).dispatch()
    time.sleep(1.2)
    jobs.Record(3).dispatch()
    assert 1.0 <= queue.oldest_ready_age_s() < 10  # type: ignore[operator]
    assert queue.oldest_ready_age_s("other") is None


def test_the_memory_driver_tells_the_wait() -> None:
    with memory_queue() as run:
        jobs.Record(1).dispatch()
        time.sleep(0.3)
        assert 0.3 <= run.queue.oldest_ready_age_s() < 5  # type: ignore[operator]


def test_monitor_max_wait_fires_long_wait_detected_and_exits_1(backend: Backend) -> None:
    conn = backend.connection
    heard: list[eventbus.LongWaitDetected] = []
    eventbus.listen(eventbus.LongWaitDetected, heard.append)
    assert invoke("monitor", "--max-wait", "1").exit_code == 0  # nothing queued: nothing waits
    jobs.Record(1).dispatch()
    quick = invoke("monitor", "--max-wait", "1")
    assert quick.exit_code == 0, quick.output
    time.sleep(1.3)
    jobs.Record(3).dispatch(queue="fresh")  # a queue whose only job has just come
    result = invoke("monitor", "--max-wait", "1")
    assert result.exit_code == 1, result.output
    lines = [line.split() for line in result.output.splitlines()]
    assert lines[0] == ["QUEUE", "STATUS", "READY", "DELAYED", "RESERVED", "SIZE", "WAITED", "LIMIT"]
    assert lines[1][:2] == [f"{conn}:default", "ALERT"] and lines[1][-1] == "1.0s"
    assert [(e.connection_name, e.queue, e.limit_s) for e in heard] == [(conn, "default", 1.0)]
    assert heard[0].wait_s >= 1.0
    rows = {r["queue"]: r for r in map(json.loads, invoke("monitor", "--max-wait", "1", "--json").output.splitlines())}
    assert rows["default"]["status"] == "ALERT" and rows["default"]["waited_s"] >= 1.0
    assert rows["default"]["max_wait_s"] == 1.0
    assert invoke("monitor", "--max-wait", "60").exit_code == 0  # a wait under the limit


def test_configured_waits_apply_per_queue_and_the_tighter_limit_wins(backend: Backend) -> None:
    conn = backend.connection
    current = runtime.settings()
    eventbus.configure(default=current.default,
                       connections={name: current.connections[name] for name in current.in_use},
                       waits={f"{conn}:default": datetime.timedelta(seconds=1), f"{conn}:slow": 3600})
    heard: list[eventbus.LongWaitDetected] = []
    eventbus.listen(eventbus.LongWaitDetected, heard.append)
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch(queue="slow")
    time.sleep(1.3)
    assert invoke("monitor").exit_code == 1
    assert [(e.queue, e.limit_s) for e in heard] == [("default", 1.0)]
    assert invoke("monitor", "--max-wait", "1").exit_code == 1  # --max-wait applies to "slow" too
    assert [(e.queue, e.limit_s) for e in heard[1:]] == [("default", 1.0), ("slow", 1.0)]


class BlindQueue(MemoryQueue):
    """A memory queue that cannot tell how long its jobs wait (as SQS cannot)."""

    reports_wait = False


def test_monitor_says_once_which_connections_cannot_tell() -> None:
    register_driver("blind-memory", BlindQueue)
    with runtime.configured(default="blind", connections={"blind": {"driver": "blind-memory"}},
                            failed="memory"):
        jobs.Record(1).dispatch()
        jobs.Record(2).dispatch(queue="other")
        assert eventbus.connection().oldest_ready_age_s() is None
        result = CliRunner().invoke(main, ["monitor", "--max-wait", "0.001", "blind:default,blind:other"])
    assert result.exit_code == 0, result.output  # no alert: it cannot know
    warning = ("eventbus: warning: connection blind cannot tell how long its jobs wait "
               "(blind-memory driver): no long-wait alerts for it")
    assert result.output.count(warning) == 1
    assert [line.split()[-2:] for line in result.output.splitlines()[-2:]] == [["?", "1ms"], ["?", "1ms"]]


@pytest.mark.parametrize("waits, message", [
    ({"default": 5}, "'waits' keys are 'connection:queue'"),
    ({"nowhere:default": 5}, "'waits' names unknown connection 'nowhere'"),
    ({"redis:default": 0}, "'waits' for 'redis:default' must be a number of seconds > 0"),
    ({"redis:default": "soon"}, "must be a number of seconds > 0, not 'soon'"),
    ([("redis:default", 5)], "'waits' must be a dict"),
])
def test_bad_waits_are_one_sentence_naming_the_key(waits: object, message: str) -> None:
    with pytest.raises(eventbus.ConfigurationError, match=message):
        eventbus.configure(waits=waits)  # type: ignore[arg-type]


def test_waits_alerts_and_cooldown_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTBUS_WAITS", "redis:default=60, database:mail=2.5")
    monkeypatch.setenv("EVENTBUS_ALERTS", "mail=ops@example.com,slack=https://hooks.slack.com/services/T/B/X")
    monkeypatch.setenv("EVENTBUS_ALERT_COOLDOWN", "30")
    current = runtime.settings()
    assert current.waits == {"redis:default": 60.0, "database:mail": 2.5}
    assert current.alerts == {"mail": "ops@example.com", "slack": "https://hooks.slack.com/services/T/B/X"}
    assert current.alert_cooldown_s == 30.0
    assert "hooks.slack.com" not in repr(current)
    monkeypatch.setenv("EVENTBUS_WAITS", "redis:default")
    with pytest.raises(eventbus.ConfigurationError, match="EVENTBUS_WAITS must hold NAME=VALUE pairs"):
        eventbus.configure()


def test_max_wait_exit_codes_as_a_subprocess(tmp_path: pathlib.Path, redis_client: redis.Redis,
                                             worker_env: dict[str, str]) -> None:
    """What cron sees: 0 nothing waits too long, 1 a job waited past --max-wait, 2 unreachable."""
    def monitor(*args: str, env: dict[str, str] = worker_env) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "eventbus", "monitor", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    use_backend("redis", tmp_path)
    assert monitor("redis:default", "--max-wait", "1").returncode == 0
    jobs.Record(1).dispatch()
    time.sleep(1.3)
    fired = monitor("redis:default", "--max-wait", "1")
    assert fired.returncode == 1 and "ALERT" in fired.stdout, fired.stderr
    assert monitor("redis:default", "--max-wait", "30").returncode == 0
    dead = monitor("redis:default", "--max-wait", "1", env={**worker_env, "EVENTBUS_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert dead.returncode == 2 and dead.stderr.startswith("eventbus: error: ")
    assert monitor("--max-wait", "0").returncode == 2  # a usage error
