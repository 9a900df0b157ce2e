"""Shared by the monitoring, CLI and dashboard tests: one backend at a time, configured alike in
the test process and in worker subprocesses."""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

import eventbus
from helpers import PG_URL, REDIS_URL, database_reason

#: The backends every observability feature is tested on.
BACKENDS = ["redis", "sqlite", "postgres"]
TABLES = ("jobs", "failed_jobs", "eventbus_state", "eventbus_signals", "eventbus_job_records",
          "eventbus_job_tags", "eventbus_monitored_tags")


@dataclasses.dataclass(frozen=True)
class Backend:
    """A configured backend: its connection's name and the environment a worker needs."""

    name: str
    connection: str
    env: dict[str, str]


def empty_tables(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in TABLES:
                if sa.inspect(conn).has_table(table):
                    conn.execute(sa.text(f"DELETE FROM {table}"))
    finally:
        engine.dispose()


def use_backend(name: str, tmp_path: pathlib.Path, *, interval_s: float = 0.3) -> Backend:
    """Configure the test process for ``name``; the other built-in connection is switched off
    so that nothing looks at a server the test does not own."""
    monitor_env = {"EVENTBUS_MONITOR_INTERVAL": str(interval_s)}
    if name == "redis":
        eventbus.configure(default="redis", connections={
            "redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1},
            "database": {"driver": "null"}})
        return Backend(name, "redis", {"EVENTBUS_CONNECTION": "redis", **monitor_env})
    url = f"sqlite:///{tmp_path}/jobs.sqlite3" if name == "sqlite" else PG_URL
    if name != "sqlite":
        reason = database_reason(url)
        if reason:
            pytest.skip(reason)
        empty_tables(url)
    eventbus.configure(default="database", connections={
        "database": {"driver": "database", "url": url}, "redis": {"driver": "null"}})
    return Backend(name, "database", {"EVENTBUS_CONNECTION": "database", "TEST_DB_URL": url,
                                      **monitor_env})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serving(app: object) -> Iterator[int]:
    """Serve an ASGI app with uvicorn in a thread on a free loopback port."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,  # type: ignore[arg-type]
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise AssertionError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(10)
