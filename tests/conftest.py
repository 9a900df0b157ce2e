"""Shared fixtures: real Redis (db 15; 14 on the second xdist worker, see tests/parallel.py),
SQLite files, PostgreSQL and MariaDB when they answer, and worker subprocesses."""

from __future__ import annotations

import logging
import os
import pathlib
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from parallel import give_each_worker_its_servers  # noqa: E402

give_each_worker_its_servers()  # before helpers reads the servers' URLs

from helpers import (  # noqa: E402
    BEANSTALKD_URL,
    REDIS_URL,
    ROOT,
    SQS_ACCOUNT,
    SQS_QUEUES,
    TESTS,
    BeanstalkdServer,
    WorkerProcess,
    beanstalkd_reason,
    empty_beanstalkd,
    reset_moto,
    sqs_client,
)

import eventbus
from eventbus import event_bus, runtime


@pytest.fixture(scope="session", autouse=True)
def _hypothesis_regex_imported_before_any_test() -> None:
    """Import (and assertion-rewrite) Hypothesis's regex strategies once, before the tests, not
    first inside a ``@given`` test: there Python 3.11 can fail to parse the module ("AST
    constructor recursion depth mismatch") while Hypothesis has changed the recursion limit.
    (Not at conftest import: Hypothesis warns about work done while plugins load.)"""
    try:
        import hypothesis.strategies._internal.regex  # noqa: F401
    except ImportError:  # pragma: no cover - hypothesis is in the test extra
        pass


def pytest_report_header() -> list[str]:
    """Say up front which queue servers the beanstalkd and SQS tests will use, or why they skip."""
    if BEANSTALKD_URL:
        beanstalkd = f"{BEANSTALKD_URL} ({beanstalkd_reason(BEANSTALKD_URL) or 'answers'})"
    else:
        found = shutil.which("beanstalkd")
        local = "beanstalk://127.0.0.1:11300"
        beanstalkd = (f"a private {found} per session" if found else
                      f"{local} (no binary to start a private one)" if not beanstalkd_reason(local) else
                      "not installed and nothing answers on 11300: its tests skip")
    try:
        import moto.server  # noqa: F401

        sqs = "moto's ThreadedMotoServer on a free loopback port"
    except ImportError as exc:
        sqs = f"moto[server] missing ({exc}): its tests skip"
    return [f"beanstalkd: {beanstalkd}", f"SQS: {sqs}"]


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
    """The default connection is the test Redis database (retry_after 90, block_for 1)."""
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


@pytest.fixture(scope="session")
def beanstalkd_server() -> Iterator[str]:
    """The URL of a beanstalkd for this session: EVENTBUS_TEST_BEANSTALKD_URL, else a private one
    (started here, so no other user of 11300 sees the tests' jobs and signals)."""
    if BEANSTALKD_URL:
        reason = beanstalkd_reason(BEANSTALKD_URL)
        if reason:
            pytest.skip(f"EVENTBUS_TEST_BEANSTALKD_URL: {reason}")
        yield BEANSTALKD_URL
        return
    try:
        server = BeanstalkdServer()
    except (OSError, RuntimeError) as exc:
        local = "beanstalk://127.0.0.1:11300"  # no binary here, but maybe a server (.ci/run's)
        if beanstalkd_reason(local) is not None:
            pytest.skip(f"cannot start beanstalkd ({exc}), and {beanstalkd_reason(local)}")
        yield local
        return
    yield server.url
    server.stop()


@pytest.fixture
def beanstalkd_url(beanstalkd_server: str) -> Iterator[str]:
    """The session's beanstalkd, empty before and after the test."""
    pytest.importorskip("greenstalk", reason="the beanstalkd driver needs greenstalk (eventbus[beanstalkd])")
    empty_beanstalkd(beanstalkd_server)
    yield beanstalkd_server
    runtime.reset()  # close this test's connections first: their reservations return
    empty_beanstalkd(beanstalkd_server)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's SQS in server mode, in this process, on a free loopback port."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        pytest.skip(f"the SQS tests need moto[server] (pip install -e '.[test]'): {exc}")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        server.start()
    except Exception as exc:  # noqa: BLE001 - any failure means: skip with the reason
        pytest.skip(f"cannot start moto's SQS server: {exc}")
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def sqs_connection(moto_endpoint: str) -> dict[str, Any]:
    """An ``sqs`` connection on a fresh local endpoint holding the queues in SQS_QUEUES."""
    reset_moto(moto_endpoint)
    client: Any = sqs_client(moto_endpoint)
    for name in SQS_QUEUES:
        client.create_queue(QueueName=name, Attributes={"FifoQueue": "true"} if name.endswith(".fifo") else {})
    client.close()
    return {"driver": "sqs", "endpoint_url": moto_endpoint, "key": "testing", "secret": "testing",
            "region": "us-east-1", "prefix": f"{moto_endpoint}/{SQS_ACCOUNT}"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The chaos scenarios run on one xdist worker, one after another (``--dist loadgroup``):
    each loads the machine with servers and worker processes of its own, and their timing checks
    assume no second scenario beside them."""
    chaos = pathlib.Path(__file__).resolve().parent / "chaos"
    for item in items:
        if chaos in pathlib.Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.xdist_group("chaos"))
