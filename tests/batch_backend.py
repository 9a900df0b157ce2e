"""The connection a batch test runs on (Redis, SQLite, PostgreSQL) and its worker processes."""

from __future__ import annotations

import collections
import pathlib
import subprocess
from collections.abc import Iterator

import pytest

import eventbus
from app_workers import AppWorkers
from helpers import backend_url

BACKENDS = ["redis", "sqlite", "postgres"]
#: Tables a PostgreSQL run starts without (the database is shared by the test session).
TABLES = ("jobs", "eventbus_state", "failed_jobs", "eventbus_batches", "eventbus_batch_jobs",
          "eventbus_batch_outbox")


class Backend(AppWorkers):
    """The connection under test and the worker processes of ``apps.batching`` that drain it."""

    def __init__(self, driver: str, url: str, log: pathlib.Path) -> None:
        super().__init__(driver, url, log, app="apps.batching", prefix="BATCHES")

    def drain(self) -> None:
        """Run one worker until the queue is empty (``--stop-when-empty``)."""
        subprocess.run(self.command("--stop-when-empty", sleep="0"), env=self.env, stdout=subprocess.DEVNULL,
                       stderr=self.worker_log, timeout=120, check=True)

    def lines(self, kind: str) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [line.split()[1:-2] for line in self.log.read_text().splitlines() if line.split()[0] == kind]

    def order(self, kind: str = "ran") -> list[str]:
        """The first field of each ``kind`` line, in the order they were written (by time)."""
        rows = [line.split() for line in self.log.read_text().splitlines()] if self.log.exists() else []
        return [r[1] for r in sorted((r for r in rows if r[0] == kind), key=lambda r: float(r[-1]))]

    def callbacks(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = collections.defaultdict(list)
        for fields in self.lines("callback"):
            found[fields[0]].append(fields[1])
        return dict(found)

    def ran(self) -> list[str]:
        return sorted(fields[0] for fields in self.lines("ran"))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[Backend]:
    driver, url = backend_url(request.param, request, tmp_path, "batches", TABLES)
    made = Backend(driver, url, tmp_path / "batches.log")
    for key, value in made.env.items():
        if key.startswith("BATCHES_"):
            monkeypatch.setenv(key, value)
    eventbus.configure(default="batches", connections={"batches": {"driver": driver, "url": url, "retry_after": 30}})
    import apps.batching  # noqa: F401  # its jobs and callbacks

    yield made
    made.stop()
