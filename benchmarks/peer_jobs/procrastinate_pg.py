"""procrastinate on PostgreSQL (``procrastinate --app peer_jobs.procrastinate_pg.app worker``).

The job runs its UPDATE through procrastinate's own connection pool; its default is one job at a
time a process (``-c 1``), and ``-c 10`` is tried for the best setting.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Sequence

import procrastinate

from peer_jobs._pg import PG_URL, UPDATE, PgPeer

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=PG_URL))


@app.task(name="incr", queue="bench")
async def incr() -> None:
    await app.connector.execute_query_async(UPDATE)  # type: ignore[arg-type]


class Peer(PgPeer):
    burst = True  # its workers can stop when the queue is empty
    bulk_api = "task.batch_defer()"
    workers = "2 x procrastinate worker"
    default_setting = "-c 1"
    settings = {"-c 10": ("-c", "10")}

    def __init__(self) -> None:
        super().__init__()
        app.open()
        if self.db.execute("SELECT to_regclass('procrastinate_jobs')").fetchone() == (None,):
            app.schema_manager.apply_schema()

    def version(self) -> str:
        return importlib.metadata.version("procrastinate")

    def clear_jobs(self) -> None:
        self.db.execute("TRUNCATE procrastinate_jobs, procrastinate_events CASCADE")

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            incr.defer()

    def bulk(self, n: int) -> None:
        incr.batch_defer(*({} for _ in range(n)))

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        cli = os.path.join(os.path.dirname(sys.executable), "procrastinate")
        command = [cli, "--app", f"{__name__}.app", "worker", "-q", "bench", *(setting or ())]
        return [command + (["--one-shot"] if burst else [])] * processes

    def close(self) -> None:
        app.close()
        super().close()
