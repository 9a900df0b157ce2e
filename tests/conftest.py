"""Shared fixtures: real Redis (db 15), SQLite files, PostgreSQL and MariaDB when they answer,
and worker subprocesses."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis

import eventbus
from eventbus import config, dispatcher

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = pathlib.Path(__file__).resolve().parent
REDIS_URL = os.environ.get("EVENTBUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PG_URL = os.environ.get("EVENTBUS_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("EVENTBUS_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")

sys.path.insert(0, str(TESTS))


def _answers(url: str) -> str | None:
    """None when the database answers, else the reason."""
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: skip with the reason
        return f"{url.split('@')[-1]} does not answer: {str(exc).splitlines()[0]}"


_availability: dict[str, str | None] = {}


def database_reason(url: str) -> str | None:
    if url not in _availability:
        _availability[url] = _answers(url)
    return _availability[url]


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
    config.reset()
    yield
    dispatcher.bus.forget_all()
    config.reset()


@pytest.fixture
def use_redis(redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> redis.Redis:
    """The default connection is Redis db 15 (retry_after 90, block_for 1)."""
    monkeypatch.setenv("EVENTBUS_REDIS_URL", REDIS_URL)
    monkeypatch.setenv("EVENTBUS_CONNECTION", "redis")
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
    return redis_client


class WorkerProcess:
    """``eventbus work`` in a subprocess, its output captured."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--app", "apps.jobs", *args],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"worker did not exit in {timeout}s\nstdout:\n{out}\nstderr:\n{err}")

    def output(self) -> tuple[str, str]:
        out, err = self.proc.communicate()
        return out, err

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


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


def run_worker(start_worker: object, *args: str, env: dict[str, str] | None = None,
               timeout: float = 60) -> tuple[int, str, str]:
    """Run a worker to completion; return (exit code, stdout, stderr)."""
    w = start_worker(*args, env=env)  # type: ignore[operator]
    code = w.wait(timeout)
    out, err = w.output()
    return code, out, err


def wait_for(predicate: object, timeout: float = 15.0, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def traces(client: redis.Redis, kind: str) -> list[str]:
    return [v.decode() for v in client.lrange(f"trace:{kind}", 0, -1)]


__all__ = ["run_worker", "signal", "traces", "wait_for"]
