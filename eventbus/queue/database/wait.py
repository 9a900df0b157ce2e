"""How an idle worker of the SQL driver waits for work without polling the jobs table.

A worker that found nothing to do sleeps until the next delayed job is due or ``--sleep`` is up,
and wakes early when a job arrives: on PostgreSQL a push sends ``NOTIFY`` and the worker
``LISTEN``s (:class:`~eventbus.queue.database.postgres.NotifyListener`); on SQLite it watches
``PRAGMA data_version``, a local file read; MySQL/MariaDB have neither, and it sleeps.

Apart from :class:`~eventbus.queue.database.DatabaseQueue` because waiting holds connections of
its own (the LISTEN one, SQLite's watch) that outlive every statement: opened on the first wait,
closed with the queue.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from eventbus.queue.database.postgres import NotifyListener
from eventbus.sql import server_clock

SQLITE_POLL_S = 0.05


class IdleWait:
    """The waits of one connection's workers on the jobs table ``jobs``."""

    def __init__(self, engine: sa.Engine, worker_engine: sa.Engine, jobs: sa.Table) -> None:
        self.engine = engine
        self.worker_engine = worker_engine
        self.jobs = jobs
        self.dialect = engine.dialect.name
        self.now = server_clock(self.dialect)
        self.listener = NotifyListener(engine.url)
        self._sqlite_watch: Any = None

    def next_due(self, queues: Sequence[str]) -> float | None:
        """Seconds until the next waiting job is due, by the server's clock (one autocommit
        statement: no ping, BEGIN and ROLLBACK around it before every idle wait)."""
        j = self.jobs.c
        with self.worker_engine.connect() as conn:
            first = conn.execute(sa.select(sa.func.min(j.available_at) - self.now).where(
                j.queue.in_(list(queues)), j.reserved_at.is_(None))).scalar()
        return None if first is None else max(float(first), 0.0)

    def sleep(self, queues: Sequence[str], timeout: float) -> None:
        """Sleep for ``timeout``; on PostgreSQL wake on a push to one of ``queues``, on SQLite
        on any commit."""
        if timeout <= 0:
            return
        if self.dialect == "postgresql" and self.listener.wait(queues, timeout):
            return
        if self.dialect == "sqlite" and self._wait_for_sqlite_change(timeout):
            return
        time.sleep(timeout)

    def _wait_for_sqlite_change(self, timeout: float) -> bool:
        """Poll ``PRAGMA data_version`` (a local file read) until another connection commits.

        An idle SQLite worker so starts a new job within ~50ms instead of after ``--sleep``.
        Returns True once it has waited (for a commit or the whole ``timeout``), False when the
        database is not a file it can watch, so the caller sleeps instead.
        """
        path = self.engine.url.database
        if not path or path == ":memory:":
            return False
        import sqlite3

        if self._sqlite_watch is None:
            self._sqlite_watch = sqlite3.connect(path, check_same_thread=False)
        before = self._sqlite_watch.execute("PRAGMA data_version").fetchone()[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(min(SQLITE_POLL_S, max(deadline - time.monotonic(), 0)))
            if self._sqlite_watch.execute("PRAGMA data_version").fetchone()[0] != before:
                return True
        return True

    def close(self) -> None:
        self.listener.close()
        if self._sqlite_watch is not None:
            self._sqlite_watch.close()
            self._sqlite_watch = None
