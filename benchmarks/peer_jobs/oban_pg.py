"""oban for Python on PostgreSQL (it needs Python 3.12): two ``oban start --queues bench:10``
processes; the queue's limit is the concurrency, 10 as in oban's quick start (it has no default).

The harness is an oban client (an ``Oban`` without queues, which only enqueues); the job is a
``@worker`` class the ``oban start`` processes import by name when they fetch its first job, and
makes its UPDATE through a psycopg async connection of its own, one per process.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import sys
from collections.abc import Sequence
from typing import Any

import psycopg
from oban import Oban, worker
from oban.schema import install

from peer_jobs._pg import PG_URL, UPDATE, PgPeer

_conn: psycopg.AsyncConnection[Any] | None = None


async def update() -> None:
    global _conn
    if _conn is None:
        _conn = await psycopg.AsyncConnection.connect(PG_URL, autocommit=True)
    await _conn.execute(UPDATE)


@worker(queue="bench")
class Incr:
    async def process(self, job: Any) -> None:
        await update()


class Peer(PgPeer):
    burst = False  # oban start runs until stopped
    bulk_api = "oban.enqueue_many(jobs)"
    workers = "2 x oban start"
    default_setting = "--queues bench:10"
    settings = {"--queues bench:50": ("bench:50",)}

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.pool = self.loop.run_until_complete(Oban.create_pool(dsn=PG_URL))
        if self.db.execute("SELECT to_regclass('oban_jobs')").fetchone() == (None,):
            self.loop.run_until_complete(install(self.pool))
        self.oban = Oban(pool=self.pool)

    def version(self) -> str:
        return importlib.metadata.version("oban")

    def clear_jobs(self) -> None:
        self.db.execute("TRUNCATE oban_jobs")

    def dispatch(self, n: int) -> None:
        async def run() -> None:
            for _ in range(n):
                await Incr.enqueue({})

        self.loop.run_until_complete(run())

    def bulk(self, n: int) -> None:
        self.loop.run_until_complete(self.oban.enqueue_many([Incr.new({}) for _ in range(n)]))

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "oban")
        queues = (setting or ("bench:10",))[0]
        return [[cli, "start", "--dsn", PG_URL, "--queues", queues, "--log-level", "WARNING"]] * processes

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        self.loop.close()
        super().close()
