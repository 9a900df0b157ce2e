"""What every PostgreSQL peer shares: the run's fresh database and the counter row the job updates.

The harness creates a fresh database per run, passes its URL in ``BENCH_PG_URL`` and drops it
afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import psycopg

PG_URL = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/eventbus_bench")
UPDATE = "UPDATE bench_counter SET n = n + 1"

_conn: psycopg.Connection | None = None


def connection() -> psycopg.Connection:
    """One autocommit connection per process, opened on first use (after any fork)."""
    global _conn
    if _conn is None:
        _conn = psycopg.connect(PG_URL, autocommit=True)
    return _conn


def update() -> None:
    """The benchmark job: one UPDATE of the counter row."""
    connection().execute(UPDATE)


class PgPeer:
    """The harness side every PostgreSQL peer shares: the counter table, reset, count."""

    backend = "postgres"
    bulk_api = "n/a (no bulk API)"
    has_bulk = True
    workers = ""
    default_setting = ""
    settings: Mapping[str, Sequence[str]] = {}
    async_setting: Sequence[str] | None = None
    async_setting_label = ""

    def __init__(self) -> None:
        self.db = psycopg.connect(PG_URL, autocommit=True)
        self.db.execute("CREATE TABLE IF NOT EXISTS bench_counter (n bigint NOT NULL)")
        if self.db.execute("SELECT count(*) FROM bench_counter").fetchone() == (0,):
            self.db.execute("INSERT INTO bench_counter VALUES (0)")

    def version(self) -> str:
        return ""

    def reset(self) -> None:
        self.db.execute("UPDATE bench_counter SET n = 0")
        self.clear_jobs()

    def clear_jobs(self) -> None:
        """Remove every job of the peer (each peer knows its own tables)."""

    def count(self) -> int:
        row = self.db.execute("SELECT n FROM bench_counter").fetchone()
        return int(row[0]) if row else 0

    def next_stamp(self, timeout_s: float) -> float | None:
        raise NotImplementedError("idle latency is measured on Redis only")

    def enqueue_stamp(self) -> None:
        raise NotImplementedError("idle latency is measured on Redis only")

    def close(self) -> None:
        self.db.close()
