"""The connection a batch test runs on (Redis, SQLite, PostgreSQL) and its worker processes."""

from __future__ import annotations

import collections
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
#: Tables a PostgreSQL run starts without (the database is shared by the test session).
TABLES = ("jobs", "eventbus_state", "failed_jobs", "eventbus_batches", "eventbus_batch_jobs",
          "eventbus_batch_outbox")


class Backend:
    """The connection under test and the worker processes that drain it."""

    def __init__(self, driver: str, url: str, log: pathlib.Path) -> None:
        self.driver, self.url, self.log = driver, url, log
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")},
                    "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", "BATCHES_DRIVER": driver,
                    "BATCHES_URL": url, "BATCHES_LOG": str(log), "PYTHONUNBUFFERED": "1"}
        self.workers: list[subprocess.Popen[str]] = []
        self.worker_log = open(log.with_suffix(".workers"), "a")  # noqa: SIM115 (closed by stop)

    def start_workers(self, count: int = 1, *args: str, env: dict[str, str] | None = None) -> None:
        """Worker processes (their options after the defaults win); ``env`` adds variables."""
        for _ in range(count):
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "eventbus", "work", "--app", "apps.batching", "--sleep", "0.1",
                 "--quiet", "--memory", "0", "--timeout", "10", *args], env={**self.env, **(env or {})},
                start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=self.worker_log, text=True))

    def drain(self) -> None:
        """Run one worker until the queue is empty (``--stop-when-empty``)."""
        subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "apps.batching", "--sleep", "0",
                        "--quiet", "--memory", "0", "--timeout", "10", "--stop-when-empty"],
                       env=self.env, stdout=subprocess.DEVNULL, stderr=self.worker_log, timeout=120, check=True)

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                os.killpg(w.pid, 9)
            w.wait()
        self.worker_log.close()

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
    kind = request.param
    if kind == "redis":
        request.getfixturevalue("redis_client")
        driver, url = "redis", REDIS_URL
    elif kind == "sqlite":
        driver, url = "database", f"sqlite:///{tmp_path}/batches.sqlite3"
    else:
        reason = database_reason(PG_URL)
        if reason:
            pytest.skip(reason)
        driver, url = "database", PG_URL
        engine = sa.create_engine(PG_URL)
        with engine.begin() as conn:
            for table in TABLES:
                conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        engine.dispose()
    made = Backend(driver, url, tmp_path / "batches.log")
    for key, value in made.env.items():
        if key.startswith("BATCHES_"):
            monkeypatch.setenv(key, value)
    eventbus.configure(default="batches", connections={"batches": {"driver": driver, "url": url, "retry_after": 30}})
    import apps.batching  # noqa: F401  # its jobs and callbacks

    yield made
    made.stop()
