"""PgQueuer on PostgreSQL: ``pgq run peer_jobs.pgqueuer_pg:main``, its default batches of ten
(``--batch 100`` is tried for the best setting).

The job runs its UPDATE through PgQueuer's own asyncpg driver. The worker is started as
``python -m peer_jobs.pgqueuer_pg [--drain] [--batch N]``, which calls ``pgqueuer.run`` (what ``pgq run`` calls):
the ``pgq`` command of PgQueuer 1.6 fails on its ``--log-level`` option with Typer 0.29.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import sys
from collections.abc import AsyncIterator, Sequence

import asyncpg
import pgqueuer
from pgqueuer import PgQueuer
from pgqueuer.db import AsyncpgDriver
from pgqueuer.models import Job
from pgqueuer.queries import Queries
from pgqueuer.types import QueueExecutionMode

from peer_jobs._pg import PG_URL, UPDATE, PgPeer


@contextlib.asynccontextmanager
async def main() -> AsyncIterator[PgQueuer]:
    conn = await asyncpg.connect(PG_URL)
    driver = AsyncpgDriver(conn)
    pgq = PgQueuer(driver)

    @pgq.entrypoint("incr")
    async def incr(job: Job) -> None:
        await driver.execute(UPDATE)

    yield pgq
    await conn.close()


class Peer(PgPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "queries.enqueue(lists)"
    workers = "2 x pgqueuer.run"
    default_setting = "batch_size 10"
    settings = {"batch_size 100": ("--batch", "100")}

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.conn = self.loop.run_until_complete(asyncpg.connect(PG_URL))
        self.queries = Queries(AsyncpgDriver(self.conn))
        if not self.loop.run_until_complete(self.queries.schema_is_installed()):
            self.loop.run_until_complete(self.queries.install())

    def version(self) -> str:
        return importlib.metadata.version("pgqueuer")

    def clear_jobs(self) -> None:
        self.loop.run_until_complete(self.queries.clear_queue())
        self.loop.run_until_complete(self.queries.clear_queue_log())

    def dispatch(self, n: int) -> None:
        async def run() -> None:
            for _ in range(n):
                await self.queries.enqueue("incr", None)

        self.loop.run_until_complete(run())

    def bulk(self, n: int) -> None:
        self.loop.run_until_complete(self.queries.enqueue(["incr"] * n, [None] * n, [0] * n))

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        command = [sys.executable, "-m", "peer_jobs.pgqueuer_pg", *(setting or ())]
        return [command + (["--drain"] if burst else [])] * processes

    def close(self) -> None:
        self.loop.run_until_complete(self.conn.close())
        self.loop.close()
        super().close()


if __name__ == "__main__":
    mode = QueueExecutionMode.drain if "--drain" in sys.argv else QueueExecutionMode.continuous
    batch = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else 10
    asyncio.run(pgqueuer.run("peer_jobs.pgqueuer_pg:main", mode=mode, batch_size=batch))
