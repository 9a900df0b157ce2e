"""The connection under test for the toolbox tests (rate limits, locks, unique jobs, releases):
Redis, SQLite or PostgreSQL, with worker subprocesses running ``apps.toolbox`` against it."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

import eventbus
from app_workers import AppWorkers
from helpers import backend_url

BACKENDS = ["redis", "sqlite", "postgres"]


class Backend(AppWorkers):
    """The connection under test and the worker processes of ``apps.toolbox`` that drain it."""

    default_workers = 2

    def __init__(self, driver: str, url: str, log: pathlib.Path) -> None:
        super().__init__(driver, url, log, app="apps.toolbox", prefix="TOOLBOX")

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
    driver, url = backend_url(kind, request, tmp_path, "toolbox", ("jobs", "eventbus_state", "failed_jobs"))
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
