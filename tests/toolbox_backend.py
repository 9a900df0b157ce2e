"""The connection under test for the toolbox tests (rate limits, locks, unique jobs, releases):
Redis, SQLite or PostgreSQL, with worker subprocesses running ``apps.toolbox`` against it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest
import sqlalchemy as sa

import eventbus
from helpers import PG_URL, REDIS_URL, ROOT, TESTS, database_reason

BACKENDS = ["redis", "sqlite", "postgres"]


class Backend:
    def __init__(self, driver: str, url: str, log: pathlib.Path) -> None:
        self.driver, self.url, self.log = driver, url, log
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")},
                    "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", "TOOLBOX_DRIVER": driver,
                    "TOOLBOX_URL": url, "TOOLBOX_LOG": str(log), "PYTHONUNBUFFERED": "1"}
        self.workers: list[subprocess.Popen[str]] = []
        self.worker_log = open(log.with_suffix(".workers"), "a")  # noqa: SIM115 (closed by stop)

    def start_workers(self, count: int = 2, *args: str) -> None:
        for _ in range(count):
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "eventbus", "work", "--app", "apps.toolbox", "--sleep", "0.1",
                 "--quiet", "--memory", "0", "--timeout", "10", *args], env=self.env, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=self.worker_log, text=True))

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                os.killpg(w.pid, 9)
            w.wait()
        self.worker_log.close()

    def worker_output(self) -> str:
        """What the workers wrote on stderr (their log)."""
        return self.log.with_suffix(".workers").read_text()

    def lines(self, kind: str) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [line.split()[1:] for line in self.log.read_text().splitlines() if line.split()[0] == kind]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """Each test on Redis, SQLite and PostgreSQL."""
    yield from _backend(request.param, request, tmp_path, monkeypatch)


@pytest.fixture
def redis_backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    """Redis only: for behaviour the state store contract already holds on every backend."""
    yield from _backend("redis", request, tmp_path, monkeypatch)


def _backend(kind: str, request: pytest.FixtureRequest, tmp_path: pathlib.Path,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    if kind == "redis":
        request.getfixturevalue("redis_client")
        driver, url = "redis", REDIS_URL
    elif kind == "sqlite":
        driver, url = "database", f"sqlite:///{tmp_path}/toolbox.sqlite3"
    else:
        reason = database_reason(PG_URL)
        if reason:
            pytest.skip(reason)
        driver, url = "database", PG_URL
        engine = sa.create_engine(PG_URL)
        with engine.begin() as conn:
            for table in ("jobs", "eventbus_state", "failed_jobs"):
                conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()
    made = Backend(driver, url, tmp_path / "toolbox.log")
    for key, value in made.env.items():
        if key.startswith("TOOLBOX_"):
            monkeypatch.setenv(key, value)
    conn = {"driver": driver, "url": url, "retry_after": 30}
    eventbus.configure(default="toolbox", connections={"toolbox": conn})
    import apps.toolbox  # noqa: F401  # its jobs and its rate limit

    eventbus.rate_limit("toolbox-per-second", per_second=2)
    yield made
    made.stop()
