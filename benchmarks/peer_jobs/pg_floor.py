"""The PostgreSQL floor: bare psycopg loops, no queue library: the least a job that is acknowledged
after it ran can cost with this job on this server.

- dispatch: one ``INSERT`` a job (autocommit), a small JSON body;
- bulk: the same ``INSERT`` through ``executemany`` (psycopg pipelines it), 1,000 rows a call;
- drain: ``python -m peer_jobs.pg_floor --drain``: one transaction a job that takes the oldest row
  (``DELETE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)``), runs the job's ``UPDATE``
  and commits, so the job and its acknowledgement are one commit (a worker that dies mid-job
  rolls back, and the row is taken again);
- the drain is bounded by the commits of the one counter row that every job updates: each commit
  waits for its WAL flush, and the row's lock makes the two workers take turns.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import uuid
from collections.abc import Sequence

import psycopg

from peer_jobs._pg import PG_URL, UPDATE, PgPeer

TABLE = "floor_jobs"
CREATE = f"CREATE TABLE IF NOT EXISTS {TABLE} (id bigserial PRIMARY KEY, payload text NOT NULL)"
INSERT = f"INSERT INTO {TABLE} (payload) VALUES (%s)"
TAKE = (f"DELETE FROM {TABLE} WHERE id = (SELECT id FROM {TABLE} ORDER BY id "
        "FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING payload")
BULK_ROWS = 1000


def body() -> str:
    return json.dumps({"uuid": uuid.uuid4().hex, "job": "incr"})


class Peer(PgPeer):
    burst = True
    bulk_api = f"executemany(INSERT), {BULK_ROWS:,} rows a call"
    workers = "2 x DELETE ... SKIP LOCKED, UPDATE, COMMIT loop"
    default_setting = "one job a transaction"

    def __init__(self) -> None:
        super().__init__()
        self.db.execute(CREATE)

    def version(self) -> str:
        return "psycopg " + importlib.metadata.version("psycopg")

    def clear_jobs(self) -> None:
        self.db.execute(f"TRUNCATE {TABLE}")

    def dispatch(self, n: int) -> None:
        for _ in range(n):
            self.db.execute(INSERT, (body(),))

    def bulk(self, n: int) -> None:
        with self.db.cursor() as cursor:
            for start in range(0, n, BULK_ROWS):
                cursor.executemany(INSERT, [(body(),) for _ in range(min(BULK_ROWS, n - start))])

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        return [[sys.executable, "-m", "peer_jobs.pg_floor", *(["--drain"] if burst else [])]] * processes


def drain(stop_when_empty: bool) -> None:
    """Take, run and acknowledge jobs, one transaction each, until the table is empty (or forever)."""
    import time

    with psycopg.connect(PG_URL) as conn:
        conn.execute(CREATE)
        conn.commit()
        while True:
            taken = conn.execute(TAKE).fetchone()
            if taken is None:
                conn.rollback()
                if stop_when_empty:
                    return
                time.sleep(0.05)
                continue
            conn.execute(UPDATE)
            conn.commit()


if __name__ == "__main__":
    drain("--drain" in sys.argv)
