"""The database driver: SQLite (the embedded default), PostgreSQL, MySQL/MariaDB.

:class:`DatabaseQueue` is the :class:`~eventbus.queue.base.Queue` contract on a SQL database:
it names the queues, creates the tables on first use, reports a server it cannot reach as
:class:`~eventbus.errors.ConnectionUnavailableError`, and sends a push (idempotent by uuid) or a
step fenced by a reservation's token once more when its connection turned out to be gone. Every
time (``reserved_at``, ``available_at``, the reclaim cutoff) is the database server's clock,
never a worker's. The parts with more to say have a module each:

- :mod:`~eventbus.queue.database.schema`: the tables, and what their columns are for;
- :mod:`~eventbus.queue.database.reserve`: taking jobs, one (``pop``) or many at once
  (``reserve``), and handing out alone a row that makes that fail;
- :mod:`~eventbus.queue.database.postgres`: PostgreSQL's own push and batch statements, and
  ``NOTIFY``/``LISTEN``, so an idle worker wakes at once when a job is pushed;
- :mod:`~eventbus.queue.database.wait`: an idle worker's wait;
- :mod:`~eventbus.queue.database.inspect`: what operators ask (sizes, counts, a peek) and clearing;
- :mod:`~eventbus.queue.database.aio`: pushing to PostgreSQL from an event loop.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa

from eventbus.errors import ConnectionUnavailableError
from eventbus.payload import Payload, attempts_of
from eventbus.queue.base import (
    Cancellation,
    JobState,
    Queue,
    QueuedJob,
    QueueJob,
    QueueStats,
    Reserved,
    delay_seconds,
    id_for,
    parse_signals,
)
from eventbus.queue.capabilities import (
    BatchesReservations,
    Cancellable,
    GivesBackAttempts,
    Peekable,
    ReportsWait,
    WorkerSignals,
)
from eventbus.queue.database import aio as database_async
from eventbus.queue.database.aio import AsyncPostgresPusher
from eventbus.queue.database.inspect import Inspection
from eventbus.queue.database.postgres import PostgresStatements
from eventbus.queue.database.reserve import Reservations
from eventbus.queue.database.schema import MAX_ATTEMPTS, companion_table, jobs_table, signals_table
from eventbus.queue.database.wait import IdleWait
from eventbus.sql import (
    engine_for,
    ensure_columns,
    ensure_tables,
    guarded,
    insert_ignoring_duplicates,
    push_engine_for,
    run_driver_sql,
    server_clock,
    worker_engine_for,
)
from eventbus.state.database import SqlStateStore

__all__ = ["BULK_CHUNK", "DatabaseQueue", "MAX_ATTEMPTS", "jobs_table", "signals_table"]

#: Rows a bulk push sends in one statement.
BULK_CHUNK = 1000


class DatabaseQueue(Queue, Peekable, ReportsWait, Cancellable, BatchesReservations, GivesBackAttempts,
                    WorkerSignals):
    driver = "database"
    defaults = {"queue": "default", "retry_after": 90.0, "table": "jobs"}
    example_url = "sqlite:///eventbus.sqlite3"
    holds_reservations = True

    @classmethod
    def failed_store_url(cls, config: Mapping[str, Any]) -> str | None:
        """Failed jobs live in the same database (see :meth:`failed_scope` for the table)."""
        return str(config["url"])

    @classmethod
    def failed_scope(cls, config: Mapping[str, Any]) -> dict[str, str]:
        """Failed jobs of this app go to the table named after its jobs table (``failed_jobs``
        beside ``jobs``), so apps with their own jobs tables keep their own failed records."""
        return {"table": companion_table(str(config.get("table") or "jobs"), "failed")}

    @classmethod
    def prepare_fork(cls, config: Mapping[str, Any]) -> None:
        """The URL's SQLAlchemy dialect and its database driver (psycopg, PyMySQL, ...: tens of
        milliseconds to import): loaded once by a supervisor instead of by each forked worker.
        Nothing connects."""
        dialect = sa.make_url(str(config["url"])).get_dialect()
        dialect.import_dbapi()

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        self.url: str = config["url"]
        self.engine = engine_for(self.url)
        self.worker_engine = worker_engine_for(self.url)
        self.push_engine = push_engine_for(self.url)
        self.metadata = sa.MetaData()
        self.jobs = jobs_table(self.metadata, config.get("table", "jobs"))
        self.signals_table = signals_table(self.metadata)
        self.dialect = self.engine.dialect.name
        self.now = server_clock(self.dialect)
        self._postgres = PostgresStatements(self.engine.dialect, self.jobs)
        self._ready = False
        self._reservations = Reservations(self, self.jobs, self.engine, self.worker_engine,
                                          self._postgres)
        self._idle = IdleWait(self.engine, self.worker_engine, self.jobs)
        self._inspection = Inspection(self.engine, self.jobs)

    # -- plumbing -----------------------------------------------------------------------------
    def _guard(self, action: str, fn: Any) -> Any:
        def run() -> Any:
            self._ensure_tables()
            return fn()

        return guarded(self.url, action, run)

    def _ensure_tables(self) -> None:
        if not self._ready:
            ensure_tables(self.engine, self.metadata, [self.jobs, self.signals_table])
            ensure_columns(self.engine, self.jobs, ["failure"])
            self._ready = True

    def migrate(self) -> list[str]:
        guarded(self.url, "migrate", self._ensure_tables)
        return [self.jobs.name, self.signals_table.name]

    # -- pushing ------------------------------------------------------------------------------
    def _row(self, raw: str, delay: float, payload: Payload | None) -> dict[str, Any]:
        """The row's own values; the queue, ``available_at`` and ``created_at`` are added by
        the INSERT (the times from the server's clock)."""
        attempts = payload.attempts if payload is not None else attempts_of(raw)
        return {"uuid": payload.uuid if payload is not None else id_for(raw), "payload": raw,
                "attempts": min(attempts, MAX_ATTEMPTS - 1), "delay": delay}

    def _insert(self, queue: str | None, rows: list[dict[str, Any]]) -> None:
        """Store ``rows`` in ``queue`` with one statement in autocommit: one round trip.

        A push is idempotent by uuid, so it is sent once more when the connection turned out to
        be gone (the pool has no pre-ping round trip to find that out beforehand).
        """
        name = self.queue_name(queue)
        insert = self._insert_postgresql if self.dialect == "postgresql" else self._insert_rows
        try:
            self._guard("push", lambda: insert(name, rows))
        except ConnectionUnavailableError:
            self._guard("push", lambda: insert(name, rows))

    def _insert_rows(self, name: str, rows: list[dict[str, Any]]) -> None:
        stmt = insert_ignoring_duplicates(self.engine, self.jobs, "uuid").values(
            queue=name, exceptions=0, available_at=self.now + sa.bindparam("delay", type_=sa.Double),
            created_at=self.now)
        with self.push_engine.begin() as conn:
            conn.execute(stmt, rows)

    def _insert_postgresql(self, name: str, rows: list[dict[str, Any]]) -> None:
        run_driver_sql(self.push_engine, *self.postgresql_push(name, rows))

    def postgresql_push(self, name: str, rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        """PostgreSQL's push of ``rows`` (from ``_row``) to queue ``name``: the statement, in the
        driver's parameter style, and its parameters (:meth:`PostgresStatements.push`). An async
        push runs the same statement on its own connection."""
        return self._postgres.push(name, rows)

    def push(self, payload: Payload, queue: str | None = None) -> str:
        row = self._row(payload.to_json(), 0.0, payload)
        self._insert(queue, [row])
        return str(row["uuid"])

    def later(self, delay: Any, payload: Payload, queue: str | None = None) -> str:
        row = self._row(payload.to_json(), delay_seconds(delay), payload)
        self._insert(queue, [row])
        return str(row["uuid"])

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        row = self._row(payload, delay, None)
        self._insert(queue, [row])
        return str(row["uuid"])

    def bulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        """One INSERT for many jobs (duplicates by uuid are skipped)."""
        rows = [self._row(p.to_json(), 0.0, p) for p in payloads]
        for start in range(0, len(rows), BULK_CHUNK):
            self._insert(queue, rows[start:start + BULK_CHUNK])
        return [str(r["uuid"]) for r in rows]

    # -- pushing from an event loop -----------------------------------------------------------
    @functools.cached_property
    def _async_pusher(self) -> AsyncPostgresPusher | None:
        """PostgreSQL through psycopg pushes natively from a loop (:mod:`database_async`); other
        databases take :meth:`Queue.apush`'s worker thread."""
        return AsyncPostgresPusher(self.url) if database_async.supports(self.url) else None

    async def apush(self, payload: Payload, queue: str | None = None) -> str:
        return await self._apush_rows(queue, [self._row(payload.to_json(), 0.0, payload)],
                                      lambda: super(DatabaseQueue, self).apush(payload, queue))

    async def alater(self, delay: Any, payload: Payload, queue: str | None = None) -> str:
        row = self._row(payload.to_json(), delay_seconds(delay), payload)
        return await self._apush_rows(queue, [row],
                                      lambda: super(DatabaseQueue, self).alater(delay, payload, queue))

    async def abulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        items = list(payloads)
        if self._async_pusher is None:
            return await super().abulk(items, queue)
        rows = [self._row(p.to_json(), 0.0, p) for p in items]
        for start in range(0, len(rows), BULK_CHUNK):
            await self._apush_rows(queue, rows[start:start + BULK_CHUNK], None)
        return [str(r["uuid"]) for r in rows]

    async def _apush_rows(self, queue: str | None, rows: list[dict[str, Any]],
                          fallback: Callable[[], Awaitable[str]] | None) -> str:
        pusher = self._async_pusher
        if pusher is None and fallback is not None:
            return await fallback()
        assert pusher is not None
        if not self._ready:  # the first push of the process creates the tables (sync, once)
            await asyncio.to_thread(self._guard, "push", lambda: None)
        statement, params = self.postgresql_push(self.queue_name(queue), rows)
        await pusher.insert(statement, params)
        return str(rows[0]["uuid"])

    # -- reservations (their SQL: database_reserve) -------------------------------------------
    def pop(self, queue: str | None = None) -> QueueJob | None:
        name = self.queue_name(queue)
        return self._guard("pop", lambda: self._reservations.pop(name))  # type: ignore[no-any-return]

    def delete_reserved(self, job: QueueJob) -> bool:
        return self._fenced("delete", lambda: self._reservations.delete(job))

    def reserved_deletion(self, job: QueueJob) -> Any:
        """The DELETE of ``job`` that only its reservation token can make (one row or none)."""
        return self._reservations.deletion(job)

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        return self._fenced("release", lambda: self._reservations.release(job, delay))

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """Put back and give the attempt back in one UPDATE."""
        return self._fenced("release", lambda: self._reservations.release(job, delay, uncount=True))

    def hold_failure(self, job: QueueJob, description: str) -> bool:
        """Keep the failure beside the job and restart its reservation, only for its token."""
        return self._restart_reservation(job, "keep failure", failure=description)

    def touch_reserved(self, job: QueueJob) -> bool:
        """Restart the reservation's clock, only for the job's token."""
        return self._restart_reservation(job, "extend reservation")

    def _restart_reservation(self, job: QueueJob, action: str, **values: Any) -> bool:
        started = time.monotonic()
        held = self._fenced(action, lambda: self._reservations.restart(job, **values))
        if held:
            job.reserved_until = started + self.retry_after
        return held

    def _fenced(self, action: str, fn: Any) -> bool:
        """Delete and release are fenced by the token, so one retry on a dropped connection is safe."""
        try:
            return bool(self._guard(action, fn))
        except ConnectionUnavailableError:
            return bool(self._guard(action, fn))

    # -- reserving many at once (the worker's prefetch) ---------------------------------------
    def reserve(self, queue: str | None, limit: int, *, acks: Sequence[QueueJob] = (),
                renew: Sequence[QueueJob] = (), give_back: Sequence[QueueJob] = ()) -> Reserved:
        """Settle the worker's jobs and reserve up to ``limit`` more, oldest first, in one
        statement on PostgreSQL and one transaction on SQLite and MariaDB (the contract is on
        :meth:`Queue.reserve`).

        Each reserved job gets its own token, this call's random prefix followed by the row id,
        so the statement needs no parameter per row. Everything ``pop`` guarantees holds: the
        attempt is counted (up to the maximum), expired reservations are reclaimed first, the
        times are the server's, and a row that makes the statement fail is found and handed out
        alone with its failure (then this call reserves the way ``pop`` does, one by one).
        A dropped connection is tried once more: every part is fenced by the tokens, and jobs
        a lost reply had reserved come back after ``retry_after``.
        """
        name = self.queue_name(queue)
        limit = max(int(limit), 0)
        if not (limit or acks or renew or give_back):
            return Reserved([])

        def run() -> Reserved:
            return self._reservations.reserve(name, limit, acks, renew, give_back)

        try:
            found: Reserved = self._guard("reserve", run)
        except ConnectionUnavailableError:
            found = self._guard("reserve", run)
        return found

    # -- waiting ------------------------------------------------------------------------------
    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Sleep until the next delayed job is due or ``timeout``; on PostgreSQL wake on NOTIFY."""
        due = self._guard("wait", lambda: self._idle.next_due(queues))
        self._idle.sleep(queues, timeout if due is None else min(timeout, due))

    # -- inspection (its SQL: database_inspect) -----------------------------------------------
    def size(self, queue: str | None = None) -> int:
        return int(self._guard("size", lambda: self._inspection.size(self.queue_name(queue))))

    def queues(self) -> list[str]:
        if self._is_missing_sqlite_file():
            return []
        return list(self._guard("list queues", self._inspection.queue_names))

    def stats(self, queue: str | None = None) -> QueueStats:
        name = self.queue_name(queue)
        if self._is_missing_sqlite_file():
            return QueueStats(name, 0, 0, 0)
        found: QueueStats = self._guard("stats", lambda: self._inspection.stats(name))
        return found

    def oldest_ready_age_s(self, queue: str | None = None) -> float | None:
        name = self.queue_name(queue)
        if self._is_missing_sqlite_file():
            return None
        age: float | None = self._guard("oldest ready job", lambda: self._inspection.oldest_ready_age(name))
        return age

    def clear(self, queue: str | None = None) -> int:
        return int(self._guard("clear", lambda: self._inspection.clear(self.queue_name(queue))))

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        return list(self._guard("peek", lambda: self._inspection.peek(self.queue_name(queue), limit)))

    def find(self, uuid: str, queue: str | None = None) -> QueuedJob | None:
        if self._is_missing_sqlite_file():
            return None
        found: QueuedJob | None = self._guard("find", lambda: self._inspection.find(uuid, self.queue_name(queue)))
        return found

    def list_jobs(self, state: JobState, queue: str | None = None, limit: int = 10) -> list[QueuedJob]:
        if self._is_missing_sqlite_file():
            return []
        found: list[QueuedJob] = self._guard("list jobs", lambda: self._inspection.list_jobs(
            state, self.queue_name(queue), limit))
        return found

    def cancel(self, uuid: str, queue: str | None = None) -> Cancellation:
        if self._is_missing_sqlite_file():
            return Cancellation.NOT_FOUND
        done: Cancellation = self._guard("cancel", lambda: self._inspection.cancel(uuid, self.queue_name(queue)))
        return done

    # -- worker support -----------------------------------------------------------------------
    def record_exception(self, uuid: str) -> int:
        j = self.jobs.c

        def run() -> int:
            with self.engine.begin() as conn:
                conn.execute(sa.update(self.jobs).where(j.uuid == uuid).values(
                    exceptions=j.exceptions + 1))
                return int(conn.execute(sa.select(j.exceptions).where(j.uuid == uuid)).scalar() or 0)

        return int(self._guard("record exception", run))

    def ping(self) -> None:
        def run() -> None:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))

        self._guard("connect", run)

    def close(self) -> None:
        self._idle.close()

    def state_store(self) -> SqlStateStore:
        """State lives in this database, in the table that goes with the jobs table
        (``eventbus_state`` beside ``jobs``; see :func:`companion_table`)."""
        return SqlStateStore(self.url, companion_table(self.jobs.name, "state"))

    def _signal_name(self, name: str) -> str:
        """Signals are keyed by the jobs table, so apps sharing a database keep their own."""
        return f"{self.jobs.name}:{name}"

    def signals(self) -> dict[str, float]:
        s = self.signals_table
        prefix = self._signal_name("")

        def run() -> dict[str, float]:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(s.c.name, s.c.value).where(s.c.name.startswith(prefix)))
                return parse_signals(((r.name[len(prefix):], r.value) for r in rows),
                                     self.connection_name)

        return dict(self._guard("signal check", run))

    def set_signal(self, name: str, value: float | None) -> bool:
        if self._is_missing_sqlite_file():
            return False  # no worker can be using it, and signalling must not create it
        s = self.signals_table
        key = self._signal_name(name)

        def run() -> None:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(s).where(s.c.name == key))
                if value is not None:
                    conn.execute(sa.insert(s).values(name=key, value=value))

        self._guard("signal", run)
        return True

    def _is_missing_sqlite_file(self) -> bool:
        path = self.engine.url.database if self.dialect == "sqlite" else None
        return bool(path) and path != ":memory:" and not os.path.exists(str(path))
