"""The database driver: SQLite (the embedded default), PostgreSQL, MySQL/MariaDB.

Table ``jobs`` holds Laravel's columns plus four the guarantees need: ``uuid`` (unique, so a
push is idempotent), ``token`` (the current reservation, so only its holder may delete or
release), ``exceptions`` (the max_exceptions count) and ``failure`` (a failure kept beside a job
while its record could not be written). A pop is one short transaction: pick the oldest
available job (or one whose reservation is older than ``retry_after``) with
``FOR UPDATE SKIP LOCKED`` on PostgreSQL and MariaDB, under SQLite's write lock (``BEGIN
IMMEDIATE``) there, then reserve it and count the attempt (the count stops at the column's
maximum instead of overflowing). Every time (``reserved_at``, ``available_at``, the reclaim
cutoff) is the database server's clock, never a worker's.

A row that makes the pop fail by itself (an error in its data, not in the connection) is
reserved on its own without counting an attempt and handed out with a ``failure`` that says
why: the worker records it as failed and goes on, and the rows behind it are not held up.

A prefetching worker calls :meth:`DatabaseQueue.reserve` instead: it deletes the jobs that
succeeded, renews or gives back held ones and reserves the next ones in one statement on
PostgreSQL (data-modifying CTEs around ``UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP
LOCKED) RETURNING``), in one transaction on SQLite and MariaDB, with everything a pop
guarantees; a batch that fails on a row falls back to the pop's path for that call.

On PostgreSQL a push also sends ``NOTIFY eventbus_jobs`` and idle workers ``LISTEN``, so they
wake at once instead of after ``--sleep``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from eventbus.payload import Payload, attempts_of
from eventbus.queue import database_async
from eventbus.queue.database_async import AsyncPostgresPusher
from eventbus.queue.base import (
    Queue,
    QueueJob,
    QueueStats,
    Reserved,
    delay_seconds,
    id_for,
    parse_signals,
)
from eventbus.errors import ConnectionUnavailableError
from eventbus.sql import (
    as_bytes,
    engine_for,
    ensure_columns,
    ensure_tables,
    guarded,
    insert_ignoring_duplicates,
    is_row_problem,
    push_engine_for,
    run_driver_sql,
    server_clock,
    worker_engine_for,
)
from eventbus.state.database import SqlStateStore

NOTIFY_CHANNEL = "eventbus_jobs"
RECLAIM_INTERVAL_S = 1.0
SQLITE_POLL_S = 0.05
#: The attempts column is a 32-bit integer everywhere: the count stops here.
MAX_ATTEMPTS = 2**31 - 1
#: :meth:`DatabaseQueue.reserve` gives each job the token ``prefix + str(id)``: a random prefix of
#: this many hex digits per call, the row id after it (at most 19 digits: the token fits 32).
TOKEN_PREFIX_LENGTH = 13
#: Rows a bulk push sends in one statement.
BULK_CHUNK = 1000
_LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql")


def jobs_table(metadata: sa.MetaData, name: str = "jobs") -> sa.Table:
    return sa.Table(
        name, metadata,
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
                  autoincrement=True),
        sa.Column("uuid", sa.String(64), nullable=False, unique=True),
        sa.Column("queue", sa.String(191), nullable=False),
        sa.Column("payload", _LONG_TEXT, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, default=0),
        sa.Column("exceptions", sa.Integer, nullable=False, default=0),
        sa.Column("token", sa.String(32), nullable=True),
        sa.Column("reserved_at", sa.Double, nullable=True),
        sa.Column("available_at", sa.Double, nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("failure", _LONG_TEXT, nullable=True),
        # Ready jobs in id order: a partial index where the database has them, so a pop is an
        # ordered scan that stops at the first row (MySQL/MariaDB get the plain (queue, id) index).
        sa.Index(f"{name}_ready_index", "queue", "id", postgresql_where=sa.text("reserved_at IS NULL"),
                 sqlite_where=sa.text("reserved_at IS NULL")),
        sa.Index(f"{name}_reserved_index", "queue", "reserved_at"),
    )


#: PostgreSQL's push of one or many rows: one statement whose parameters are four arrays, rows
#: numbered in the order given (ids, and so pops, follow it), NOTIFY sent only when a row was added.
#: Arrays go in binary (``%(name)b``): psycopg's text format quotes every element in Python,
#: about 25 times slower for a thousand JSON payloads.
_PG_INSERT = """
WITH added AS (
    INSERT INTO {jobs} (uuid, queue, payload, attempts, exceptions, available_at, created_at)
    SELECT r.uuid, %(queue)s, r.payload, r.attempts, 0, {now} + r.delay, {now}
    FROM unnest(CAST(%(uuids)b AS text[]), CAST(%(payloads)b AS text[]),
                CAST(%(attempts)b AS integer[]), CAST(%(delays)b AS double precision[]))
         WITH ORDINALITY AS r(uuid, payload, attempts, delay, n)
    ORDER BY r.n
    ON CONFLICT (uuid) DO NOTHING
    RETURNING 1
)
SELECT pg_notify(%(channel)s, %(queue)s) FROM (SELECT FROM added LIMIT 1) AS any_added
"""

#: PostgreSQL's push of one row: as above, with plain parameters (dumping four arrays of one
#: element costs a single push about a tenth of its client time).
_PG_INSERT_ONE = """
WITH added AS (
    INSERT INTO {jobs} (uuid, queue, payload, attempts, exceptions, available_at, created_at)
    VALUES (%(uuid)s, %(queue)s, %(payload)s, %(attempts)s, 0, {now} + %(delay)s, {now})
    ON CONFLICT (uuid) DO NOTHING
    RETURNING 1
)
SELECT pg_notify(%(channel)s, %(queue)s) FROM (SELECT FROM added LIMIT 1) AS any_added
"""

#: PostgreSQL's :meth:`DatabaseQueue.reserve`: one statement, so one round trip and one
#: transaction. The rows to take are a FROM item (not ``id IN (subquery)``), so the locking
#: subquery runs once whatever the plan. Every part acts only where the job's token still holds (``id = ANY(ids) AND
#: token = ANY(tokens)`` is the pairwise test: a token is only ever given to one row). The held
#: jobs are kept out of ``taken`` so that no row is changed twice by the statement (one whose
#: reservation was reclaimed but not taken again is ready, and still carries its token).
_PG_RESERVE = """
WITH acked AS (
    DELETE FROM {jobs}
    WHERE id = ANY(CAST(%(ack_ids)b AS bigint[])) AND token = ANY(CAST(%(ack_tokens)b AS text[]))
), renewed AS (
    UPDATE {jobs} SET reserved_at = {now}
    WHERE id = ANY(CAST(%(renew_ids)b AS bigint[])) AND token = ANY(CAST(%(renew_tokens)b AS text[]))
    RETURNING id
), given AS (
    UPDATE {jobs} SET reserved_at = NULL, token = NULL, attempts = GREATEST(attempts - 1, 0)
    WHERE id = ANY(CAST(%(give_ids)b AS bigint[])) AND token = ANY(CAST(%(give_tokens)b AS text[]))
    RETURNING id
), taken AS (
    UPDATE {jobs} AS j SET reserved_at = {now}, token = %(prefix)s || j.id,
        attempts = CASE WHEN j.attempts < {max_attempts} THEN j.attempts + 1 ELSE j.attempts END
    FROM (
        SELECT id FROM {jobs}
        WHERE queue = %(queue)s AND reserved_at IS NULL AND available_at <= {now}
          AND id <> ALL(CAST(%(held)b AS bigint[]))
        ORDER BY id LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED) AS picked
    WHERE j.id = picked.id
    RETURNING j.id, j.uuid, j.payload, j.attempts, j.failure
), notified AS (
    SELECT pg_notify(%(channel)s, %(queue)s) FROM (SELECT FROM given LIMIT 1) AS any_given
)
SELECT 'taken', id, uuid, payload, attempts, failure FROM taken
UNION ALL SELECT 'renewed', id, NULL, NULL, NULL, NULL FROM renewed
UNION ALL SELECT 'notified', NULL, NULL, NULL, NULL, NULL FROM notified
"""


def signals_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table("eventbus_signals", metadata,
                    sa.Column("name", sa.String(191), primary_key=True),
                    sa.Column("value", sa.Double, nullable=False))



class DatabaseQueue(Queue):
    driver = "database"
    defaults = {"queue": "default", "retry_after": 90.0, "table": "jobs"}
    example_url = "sqlite:///eventbus.sqlite3"
    holds_reservations = True
    has_workers = True

    @classmethod
    def failed_store_url(cls, config: Mapping[str, Any]) -> str | None:
        """Failed jobs live in the same database, table ``failed_jobs``."""
        return str(config["url"])

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
        self._ready = False
        self._listener: Any = None
        self._listen_lock = threading.Lock()
        self._reclaimed_at: dict[str, float] = {}  # time.monotonic() of the last reclaim
        self._sqlite_watch: Any = None

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

    def _postgresql(self, template: str) -> str:
        """One of the PostgreSQL statements above, for this table, with the server's clock."""
        dialect = self.engine.dialect
        return template.format(jobs=dialect.identifier_preparer.format_table(self.jobs),
                               now=self.now.compile(dialect=dialect), max_attempts=MAX_ATTEMPTS)

    @functools.cached_property
    def _pg_insert(self) -> str:
        return self._postgresql(_PG_INSERT)

    @functools.cached_property
    def _pg_insert_one(self) -> str:
        return self._postgresql(_PG_INSERT_ONE)

    @functools.cached_property
    def _pg_reserve(self) -> str:
        return self._postgresql(_PG_RESERVE)

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
        driver's parameter style, and its parameters. One INSERT that sends NOTIFY when it added a
        row; many rows go as four arrays (``... SELECT FROM unnest(...)``, in their order), one row
        as plain parameters. An async push runs the same statement on its own connection."""
        if len(rows) == 1:
            [row] = rows
            return self._pg_insert_one, {"queue": name, "channel": NOTIFY_CHANNEL, "uuid": row["uuid"],
                                         "payload": row["payload"], "attempts": row["attempts"],
                                         "delay": float(row["delay"])}
        return self._pg_insert, {"queue": name, "channel": NOTIFY_CHANNEL,
                                 "uuids": [r["uuid"] for r in rows], "payloads": [r["payload"] for r in rows],
                                 "attempts": [r["attempts"] for r in rows],
                                 "delays": [float(r["delay"]) for r in rows]}

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

    # -- pushing from an event loop --------------------------------------------------------------
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

    # -- popping ------------------------------------------------------------------------------
    def _available(self, name: str) -> Any:
        j = self.jobs.c
        return sa.and_(j.queue == name, j.reserved_at.is_(None), j.available_at <= self.now)

    def _reclaim_expired(self, name: str) -> None:
        """Make jobs whose reservation is older than retry_after ready again (at most once a second).

        A separate statement, not an OR in the pop query: that OR forces PostgreSQL into a bitmap
        scan over every dead index entry a busy queue leaves behind, on every pop. The token is
        kept, so the old holder can still delete a job it finished; a new pop replaces it.
        """
        now = time.monotonic()
        if now - self._reclaimed_at.get(name, -RECLAIM_INTERVAL_S) < RECLAIM_INTERVAL_S:
            return
        self._reclaimed_at[name] = now
        j = self.jobs.c
        with self.worker_engine.begin() as conn:
            conn.execute(sa.update(self.jobs).where(
                j.queue == name, j.reserved_at <= self.now - self.retry_after).values(reserved_at=None))

    def pop(self, queue: str | None = None) -> QueueJob | None:
        name = self.queue_name(queue)
        return self._guard("pop", lambda: self._pop(name))  # type: ignore[no-any-return]

    def _pop(self, name: str) -> QueueJob | None:
        token = uuid.uuid4().hex
        self._reclaim_expired(name)
        started = time.monotonic()
        try:
            row = self._reserve(name, token)
        except sa.exc.DBAPIError as exc:
            if not is_row_problem(exc):
                raise
            return self._reserve_head_alone(name, token, exc, started)
        return None if row is None else self._job(name, token, row, started)

    def _job(self, name: str, token: str, row: Sequence[Any], started: float) -> QueueJob:
        """The job of a reserved row ``(id, uuid, payload, attempts, failure)``; its reservation
        runs out ``retry_after`` after ``started`` (this process's clock, read before the request)."""
        job_id, job_uuid, raw, attempts, failure = row
        return QueueJob(queue=self, queue_name=name, job_id=str(job_id), raw=raw, attempts=int(attempts),
                        token=token, stored_uuid=job_uuid, failure=failure,
                        reserved_until=started + self.retry_after)

    def _counted(self) -> Any:
        """The attempts column after a reservation counts one (it stops at the maximum)."""
        j = self.jobs.c
        return sa.case((j.attempts < MAX_ATTEMPTS, j.attempts + 1), else_=j.attempts)

    def _reserve(self, name: str, token: str, only: int | None = None) -> Any:
        """Reserve the oldest available job (or job ``only``): its row, or None when none is ready."""
        j = self.jobs.c
        oldest = sa.select(j.id).where(self._available(name)).order_by(j.id).limit(1)
        if only is not None:
            oldest = oldest.where(j.id == only)
        if self.dialect != "sqlite":
            oldest = oldest.with_for_update(skip_locked=True)
        reserve = sa.update(self.jobs).values(reserved_at=self.now, token=token, attempts=self._counted())
        columns = (j.id, j.uuid, j.payload, j.attempts, j.failure)
        if self.dialect in ("postgresql", "sqlite"):  # one statement: UPDATE ... RETURNING
            with self.worker_engine.begin() as conn:
                return conn.execute(reserve.where(j.id == oldest.scalar_subquery()).returning(*columns)).first()
        with self.engine.begin() as conn:  # MariaDB/MySQL have no UPDATE ... RETURNING: lock, then update
            found = conn.execute(oldest).scalar()
            if found is None:
                return None
            conn.execute(reserve.where(j.id == found))
            return conn.execute(sa.select(*columns).where(j.id == found)).first()

    def _reserve_head_alone(self, name: str, token: str, error: sa.exc.DBAPIError,
                            started: float) -> QueueJob | None:
        """The pop failed on something in the data. Try the oldest ready row by itself: when it
        fails again, that row is the cause, and it is handed out to be failed (:meth:`_quarantine`)."""
        j = self.jobs.c
        with self.engine.connect() as conn:
            head = conn.execute(sa.select(j.id).where(self._available(name)).order_by(j.id).limit(1)).scalar()
        if head is None:
            raise error
        try:
            row = self._reserve(name, token, only=int(head))
        except sa.exc.DBAPIError as again:
            if not is_row_problem(again):
                raise
            return self._quarantine(name, token, int(head), again, started)
        return None if row is None else self._job(name, token, row, started)

    def _quarantine(self, name: str, token: str, row_id: int, error: sa.exc.DBAPIError,
                    started: float) -> QueueJob | None:
        """Reserve row ``row_id`` without counting an attempt and read its payload as bytes (what
        no decoding can refuse); the job carries the error as its failure, so the worker records
        it without running it."""
        j = self.jobs.c
        with self.engine.begin() as conn:
            taken = conn.execute(sa.update(self.jobs).where(j.id == row_id, j.reserved_at.is_(None))
                                 .values(reserved_at=self.now, token=token)).rowcount
            if not taken:
                return None  # another worker took it meanwhile
            job_uuid, body = conn.execute(sa.select(j.uuid, as_bytes(self.dialect, j.payload))
                                          .where(j.id == row_id)).one()
        reason = str(error.orig).strip().splitlines()[0] if error.orig is not None else str(error)
        failure = (f"eventbus.errors.DeserializationError: row {row_id} of table {self.jobs.name} cannot "
                   f"be reserved: {type(error.orig).__name__}: {reason}")
        raw = bytes(body).decode("utf-8", "surrogateescape")
        return self._job(name, token, (row_id, job_uuid, raw, 0, failure), started)

    def delete_reserved(self, job: QueueJob) -> bool:
        def run() -> bool:
            with self.worker_engine.begin() as conn:
                return bool(conn.execute(self.reserved_deletion(job)).rowcount)

        return self._fenced("delete", run)

    def reserved_deletion(self, job: QueueJob) -> Any:
        """The DELETE of ``job`` that only its reservation token can make (one row or none)."""
        j = self.jobs.c
        return sa.delete(self.jobs).where(j.id == int(job.job_id), j.token == job.token)

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        j = self.jobs.c

        def run() -> bool:
            with self.worker_engine.begin() as conn:
                result = conn.execute(sa.update(self.jobs).where(
                    j.id == int(job.job_id), j.token == job.token).values(
                    reserved_at=None, token=None, available_at=self.now + delay))
                if self.dialect == "postgresql" and delay <= 0 and result.rowcount:
                    conn.execute(sa.text("SELECT pg_notify(:c, :q)"),
                                 {"c": NOTIFY_CHANNEL, "q": job.queue_name})
                return bool(result.rowcount)

        return self._fenced("release", run)

    def uncount_attempt(self, job: QueueJob) -> None:
        j = self.jobs.c

        def run() -> None:
            with self.worker_engine.begin() as conn:
                conn.execute(sa.update(self.jobs).where(j.id == int(job.job_id), j.attempts > 0)
                             .values(attempts=j.attempts - 1))

        self._guard("uncount attempt", run)

    def hold_failure(self, job: QueueJob, description: str) -> bool:
        """Keep the failure beside the job and restart its reservation, only for its token."""
        return self._restart_reservation(job, "keep failure", failure=description)

    def touch_reserved(self, job: QueueJob) -> bool:
        """Restart the reservation's clock, only for the job's token."""
        return self._restart_reservation(job, "extend reservation")

    def _restart_reservation(self, job: QueueJob, action: str, **values: Any) -> bool:
        j = self.jobs.c
        started = time.monotonic()

        def run() -> bool:
            with self.worker_engine.begin() as conn:
                return bool(conn.execute(sa.update(self.jobs).where(
                    j.id == int(job.job_id), j.token == job.token).values(
                    reserved_at=self.now, **values)).rowcount)

        held = self._fenced(action, run)
        if held:
            job.reserved_until = started + self.retry_after
        return held

    def _fenced(self, action: str, fn: Any) -> bool:
        """Delete and release are fenced by the token, so one retry on a dropped connection is safe."""
        try:
            return bool(self._guard(action, fn))
        except ConnectionUnavailableError:
            return bool(self._guard(action, fn))

    # -- reserving many at once (the worker's prefetch) ----------------------------------------
    batches_reservations = True

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
            return self._reserve_many(name, limit, acks, renew, give_back)

        try:
            found: Reserved = self._guard("reserve", run)
        except ConnectionUnavailableError:
            found = self._guard("reserve", run)
        return found

    def _reserve_many(self, name: str, limit: int, acks: Sequence[QueueJob], renew: Sequence[QueueJob],
                      give_back: Sequence[QueueJob]) -> Reserved:
        if limit:
            self._reclaim_expired(name)
        started = time.monotonic()
        prefix = uuid.uuid4().hex[:TOKEN_PREFIX_LENGTH]
        batch = self._batch_postgresql if self.dialect == "postgresql" else self._batch_in_transaction
        try:
            rows, kept = batch(name, limit, prefix, acks, renew, give_back)
        except sa.exc.DBAPIError as exc:
            if not is_row_problem(exc):
                raise
            return self._reserve_one_by_one(name, limit, acks, renew, give_back, started)
        jobs = [self._job(name, f"{prefix}{row[0]}", row, started) for row in sorted(rows, key=lambda r: r[0])]
        return Reserved(jobs, self._renewed(renew, kept, started))

    def _renewed(self, renew: Sequence[QueueJob], kept: set[int], started: float) -> set[str]:
        """Move the deadline of the renewed jobs still held; the ids of the others (lost)."""
        lost: set[str] = set()
        for job in renew:
            if int(job.job_id) in kept:
                job.reserved_until = started + self.retry_after
            else:
                lost.add(job.job_id)
        return lost

    def _batch_postgresql(self, name: str, limit: int, prefix: str, acks: Sequence[QueueJob],
                          renew: Sequence[QueueJob], give_back: Sequence[QueueJob]) -> tuple[list[Any], set[int]]:
        """:data:`_PG_RESERVE` on the worker's autocommit connection, straight on the driver."""
        params = {"queue": name, "limit": limit, "prefix": prefix, "channel": NOTIFY_CHANNEL,
                  "held": [int(job.job_id) for part in (acks, renew, give_back) for job in part],
                  "ack_ids": [int(job.job_id) for job in acks], "ack_tokens": [job.token for job in acks],
                  "renew_ids": [int(job.job_id) for job in renew], "renew_tokens": [job.token for job in renew],
                  "give_ids": [int(job.job_id) for job in give_back],
                  "give_tokens": [job.token for job in give_back]}
        result = run_driver_sql(self.worker_engine, self._pg_reserve, params)
        return ([row[1:] for row in result if row[0] == "taken"],
                {int(row[1]) for row in result if row[0] == "renewed"})

    def _batch_in_transaction(self, name: str, limit: int, prefix: str, acks: Sequence[QueueJob],
                              renew: Sequence[QueueJob], give_back: Sequence[QueueJob]
                              ) -> tuple[list[Any], set[int]]:
        """SQLite (under its write lock) and MariaDB: the statements one after the other, in one
        transaction; only those with something to do are sent."""
        with self.engine.begin() as conn:
            kept = self._settle(conn, acks, renew, give_back)
            held = [int(job.job_id) for part in (acks, renew, give_back) for job in part]
            rows = self._take(conn, name, limit, prefix, held) if limit else []
        return rows, kept

    def _holding(self, jobs: Sequence[QueueJob]) -> tuple[Any, Any]:
        """The rows of ``jobs`` whose token still holds (pairwise: a token names one row only)."""
        j = self.jobs.c
        return j.id.in_([int(job.job_id) for job in jobs]), j.token.in_([job.token for job in jobs])

    def _settle(self, conn: sa.Connection, acks: Sequence[QueueJob], renew: Sequence[QueueJob],
                give_back: Sequence[QueueJob]) -> set[int]:
        """Delete ``acks``, renew ``renew``, give back ``give_back`` (each only where its token
        holds); the ids of the renewed jobs still held."""
        j = self.jobs.c
        if acks:
            conn.execute(sa.delete(self.jobs).where(*self._holding(acks)))
        kept: set[int] = set()
        if renew:
            conn.execute(sa.update(self.jobs).where(*self._holding(renew)).values(reserved_at=self.now))
            kept = {int(i) for i in conn.execute(sa.select(j.id).where(*self._holding(renew))).scalars()}
        if give_back:
            given = conn.execute(sa.update(self.jobs).where(*self._holding(give_back)).values(
                reserved_at=None, token=None, attempts=sa.case((j.attempts > 0, j.attempts - 1), else_=0)))
            if given.rowcount and self.dialect == "postgresql":
                conn.execute(sa.text("SELECT pg_notify(:c, :q)"),
                             {"c": NOTIFY_CHANNEL, "q": give_back[0].queue_name})
        return kept

    def _take(self, conn: sa.Connection, name: str, limit: int, prefix: str, held: list[int]) -> list[Any]:
        """Reserve up to ``limit`` of the oldest available rows (none of ``held``): their rows."""
        j = self.jobs.c
        oldest = sa.select(j.id).where(self._available(name)).order_by(j.id).limit(limit)
        if held:
            oldest = oldest.where(j.id.not_in(held))
        token = sa.literal(prefix, sa.String) + sa.cast(j.id, sa.String)
        reserve = sa.update(self.jobs).values(reserved_at=self.now, token=token, attempts=self._counted())
        columns = (j.id, j.uuid, j.payload, j.attempts, j.failure)
        if self.dialect == "sqlite":
            return list(conn.execute(reserve.where(j.id.in_(oldest)).returning(*columns)).all())
        found = list(conn.execute(oldest.with_for_update(skip_locked=True)).scalars())  # no RETURNING
        if not found:
            return []
        conn.execute(reserve.where(j.id.in_(found)))
        return list(conn.execute(sa.select(*columns).where(j.id.in_(found))).all())

    def _reserve_one_by_one(self, name: str, limit: int, acks: Sequence[QueueJob], renew: Sequence[QueueJob],
                            give_back: Sequence[QueueJob], started: float) -> Reserved:
        """The batch failed on a row: settle the held jobs by themselves, then reserve the way
        ``pop`` does, which finds the row and hands it out alone with its failure."""
        engine = self.worker_engine if self.dialect == "postgresql" else self.engine
        with engine.begin() as conn:
            kept = self._settle(conn, acks, renew, give_back)
        jobs: list[QueueJob] = []
        while len(jobs) < limit:
            job = self._pop(name)
            if job is None:
                break
            jobs.append(job)
        return Reserved(jobs, self._renewed(renew, kept, started))

    # -- waiting ------------------------------------------------------------------------------
    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Sleep until the next delayed job is due or ``timeout``; on PostgreSQL wake on NOTIFY."""
        due = self._guard("wait", lambda: self._next_due(queues))
        if due is not None:
            timeout = min(timeout, due)
        if timeout <= 0:
            return
        if self.dialect == "postgresql" and self._wait_for_notify(queues, timeout):
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

    def _next_due(self, queues: Sequence[str]) -> float | None:
        """Seconds until the next waiting job is due, by the server's clock (one autocommit
        statement: no ping, BEGIN and ROLLBACK around it before every idle wait)."""
        j = self.jobs.c
        with self.worker_engine.connect() as conn:
            first = conn.execute(sa.select(sa.func.min(j.available_at) - self.now).where(
                j.queue.in_(list(queues)), j.reserved_at.is_(None))).scalar()
        return None if first is None else max(float(first), 0.0)

    def _wait_for_notify(self, queues: Sequence[str], timeout: float) -> bool:
        """Block on LISTEN until a push to one of ``queues`` or ``timeout`` (a push to another
        queue does not wake the worker). False when LISTEN is not available."""
        deadline = time.monotonic() + timeout
        with self._listen_lock:
            try:
                if self._listener is None:
                    import psycopg

                    params = self.engine.url.set(drivername="postgresql").render_as_string(
                        hide_password=False)
                    self._listener = psycopg.connect(params, autocommit=True)
                    self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
                while (left := deadline - time.monotonic()) > 0:
                    if any(n.payload in queues for n in self._listener.notifies(timeout=left, stop_after=1)):
                        break
                return True
            except Exception:  # fall back to sleeping; the next pop reports a real outage
                self._close_listener()
                return False

    def _close_listener(self) -> None:
        if self._listener is not None:
            try:
                self._listener.close()
            except Exception:
                pass
            self._listener = None

    # -- inspection ---------------------------------------------------------------------------
    def _scalar(self, action: str, stmt: Any) -> Any:
        def run() -> Any:
            with self.engine.connect() as conn:
                return conn.execute(stmt).scalar()

        return self._guard(action, run)

    def size(self, queue: str | None = None) -> int:
        j = self.jobs.c
        return int(self._scalar("size", sa.select(sa.func.count()).where(
            j.queue == self.queue_name(queue))))

    def queues(self) -> list[str]:
        j = self.jobs.c
        if self._is_missing_sqlite_file():
            return []

        def run() -> list[str]:
            with self.engine.connect() as conn:
                return sorted(r[0] for r in conn.execute(sa.select(j.queue).distinct()))

        return list(self._guard("list queues", run))

    def stats(self, queue: str | None = None) -> QueueStats:
        j = self.jobs.c
        name = self.queue_name(queue)
        if self._is_missing_sqlite_file():
            return QueueStats(name, 0, 0, 0)
        reserved = j.reserved_at.is_not(None)
        ready = sa.and_(j.reserved_at.is_(None), j.available_at <= self.now)
        delayed = sa.and_(j.reserved_at.is_(None), j.available_at > self.now)

        def count(condition: Any) -> Any:
            return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)

        oldest = self.now - sa.func.min(sa.case((ready, j.created_at), else_=None))
        stmt = sa.select(count(ready), count(delayed), count(reserved), oldest).where(j.queue == name)

        def run() -> QueueStats:
            with self.engine.connect() as conn:
                n_ready, n_delayed, n_reserved, age = conn.execute(stmt).one()
            return QueueStats(name, int(n_ready), int(n_delayed), int(n_reserved),
                              max(float(age), 0.0) if age is not None else None)

        found: QueueStats = self._guard("stats", run)
        return found

    def clear(self, queue: str | None = None) -> int:
        j = self.jobs.c

        def run() -> int:
            with self.engine.begin() as conn:
                return int(conn.execute(sa.delete(self.jobs).where(
                    j.queue == self.queue_name(queue), j.reserved_at.is_(None))).rowcount)

        return int(self._guard("clear", run))

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        j = self.jobs.c

        def run() -> list[str]:
            with self.engine.connect() as conn:
                return [r.payload for r in conn.execute(
                    sa.select(j.payload).where(j.queue == self.queue_name(queue),
                                               j.reserved_at.is_(None),
                                               j.available_at <= self.now)
                    .order_by(j.id).limit(limit))]

        return list(self._guard("peek", run))

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
        with self._listen_lock:
            self._close_listener()
        if self._sqlite_watch is not None:
            self._sqlite_watch.close()
            self._sqlite_watch = None

    def state_store(self) -> SqlStateStore:
        """State lives in this database, table ``eventbus_state``."""
        return SqlStateStore(self.url)

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
