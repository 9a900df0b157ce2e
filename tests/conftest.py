"""Shared fixtures: real Redis (db 15), SQLite files, PostgreSQL and MariaDB when they answer,
and worker subprocesses."""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Iterator

import pytest
import redis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import eventbus
from eventbus import event_bus, runtime

from helpers import REDIS_URL, ROOT, TESTS, WorkerProcess  # noqa: E402

@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError as exc:
        pytest.fail(f"Redis at {REDIS_URL} is required for the tests: {exc}")
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture(autouse=True)
def clean_config(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts unconfigured, in its own directory, with no app listeners."""
    for key in list(os.environ):
        if key.startswith("EVENTBUS_") and not key.startswith("EVENTBUS_TEST_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    runtime.reset()
    yield
    event_bus.bus.forget_all()
    runtime.reset()


@pytest.fixture
def use_redis(redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> redis.Redis:
    """The default connection is Redis db 15 (retry_after 90, block_for 1)."""
    monkeypatch.setenv("EVENTBUS_REDIS_URL", REDIS_URL)
    monkeypatch.setenv("EVENTBUS_CONNECTION", "redis")
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
    return redis_client


@pytest.fixture
def worker_env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_") or k.startswith("EVENTBUS_TEST_")}
    env.update({"PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", "TEST_REDIS_URL": REDIS_URL,
                "EVENTBUS_REDIS_URL": REDIS_URL, "EVENTBUS_CONNECTION": "redis", "PYTHONUNBUFFERED": "1"})
    return env


@pytest.fixture
def start_worker(worker_env: dict[str, str]) -> Iterator[object]:
    started: list[WorkerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> WorkerProcess:
        w = WorkerProcess(list(args), {**worker_env, **(env or {})})
        started.append(w)
        return w

    yield start
    for w in started:
        w.kill()
