"""Pushing to PostgreSQL from an event loop: psycopg's own async connection, one per running loop.

:meth:`DatabaseQueue.apush <eventbus.queue.database.DatabaseQueue.apush>` (and ``alater``,
``abulk``) land here for a ``postgresql+psycopg`` URL, so ``await eventbus.adispatch(job)`` on
PostgreSQL never blocks the loop nor hops to a thread. The statement is the sync driver's own
push (one ``INSERT ... SELECT FROM unnest(...)`` that also sends the ``NOTIFY``, in autocommit),
with the same parameters.

Why psycopg directly and not SQLAlchemy's async engine: that one needs greenlet, which neither
SQLAlchemy nor eventbus depends on, and the push is one statement the driver already writes out.
Other databases (SQLite, MariaDB/MySQL) push on a worker thread (:meth:`Queue.apush`'s default):
their async drivers are not dependencies either.

What the sync push promises holds: a push is idempotent by uuid, so one whose connection turned
out to be gone is sent once more on a fresh connection; a server that cannot be reached raises
:class:`~eventbus.errors.ConnectionUnavailableError` with the same message as the sync driver.
Each loop has one connection; concurrent pushes on a loop take turns on it (a push is one short
statement).
"""

from __future__ import annotations

import asyncio
from typing import Any

import sqlalchemy as sa

from eventbus.aio import PerLoop
from eventbus.errors import ConnectionUnavailableError
from eventbus.urls import redact_url

#: How often a push is sent across lost connections before it fails.
ATTEMPTS = 2


def supports(url: str) -> bool:
    """Whether ``url`` is PostgreSQL through psycopg (3), whose async connection this uses."""
    try:
        parsed = sa.engine.make_url(url)
    except sa.exc.ArgumentError:
        return False
    return parsed.get_backend_name() == "postgresql" and parsed.get_driver_name() == "psycopg"


def conninfo(url: str) -> str:
    """The SQLAlchemy URL as a libpq connection URI (``postgresql://...``)."""
    return sa.engine.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class _LoopConnection:
    """One loop's connection, opened on first use and again after it was lost."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.conn: Any = None
        self.lock: asyncio.Lock | None = None

    async def execute(self, statement: str, params: dict[str, Any]) -> None:
        import psycopg

        if self.lock is None:
            self.lock = asyncio.Lock()
        async with self.lock:
            if self.conn is None or self.conn.closed:
                self.conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
            try:
                await self.conn.execute(statement, params)
            except BaseException:
                await self.aclose()  # out of step or gone: the next push opens a fresh one
                raise

    async def aclose(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None and not conn.closed:
            await conn.close()


class AsyncPostgresPusher:
    """The async pushes of one PostgreSQL connection: the statements the sync driver builds
    (:meth:`DatabaseQueue.postgresql_push`), sent on each loop's own connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        dsn = conninfo(url)
        self.connections: PerLoop[_LoopConnection] = PerLoop(lambda: _LoopConnection(dsn),
                                                             lambda c: c.aclose())

    async def insert(self, statement: str, params: dict[str, Any]) -> None:
        """Run a push ``statement`` with ``params``: again once on a fresh connection when the
        first one was lost (idempotent by uuid), else ConnectionUnavailableError."""
        import psycopg

        for attempt in range(ATTEMPTS):
            connection = await self.connections.get()
            try:
                await connection.execute(statement, params)
                return
            except (psycopg.OperationalError, psycopg.InterfaceError, OSError) as exc:
                if attempt == ATTEMPTS - 1:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise ConnectionUnavailableError(
                        f"cannot reach database at {redact_url(self.url)} (push): {first}") from exc
