"""Reservations in the SQL jobs table: taking jobs, one (a pop) or many at once (a prefetching
worker's reserve), and what only the holder of a reservation may do with its job.

A pop is one short transaction: pick the oldest available job with ``FOR UPDATE SKIP LOCKED`` on
PostgreSQL and MariaDB, under SQLite's write lock (``BEGIN IMMEDIATE``) there, then reserve it
and count the attempt (the count stops at the column's maximum instead of overflowing). Jobs
whose reservation is older than ``retry_after`` are made ready again first. Every time
(``reserved_at``, ``available_at``, the reclaim cutoff) is the database server's clock.

A row that makes the pop fail by itself (an error in its data, not in the connection) is
reserved on its own without counting an attempt and handed out with a ``failure`` that says
why: the worker records it as failed and goes on, and the rows behind it are not held up.

A prefetching worker calls :meth:`DatabaseQueue.reserve <eventbus.queue.database.DatabaseQueue.reserve>`
instead: it deletes the jobs that succeeded, renews or gives back held ones and reserves the next
ones in one statement on PostgreSQL (:class:`~eventbus.queue.database.postgres.PostgresStatements`),
in one transaction on SQLite and MariaDB, with everything a pop guarantees; a batch that fails
on a row falls back to the pop's path for that call.

A reservation is its token: deleting, releasing or touching a job acts only where the row still
carries the token it was reserved with, so a worker whose reservation ran out and was taken by
another changes nothing.

Apart from the queue because these paths share their pieces (what "available" means, the counted
attempt, the job a row becomes, the token test) and nothing else does; the queue keeps the
contract around them (queue names, tables created on first use, a lost server reported, one
more try where the token makes that safe).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from eventbus.queue.base import Queue, QueueJob, Reserved, pop_up_to
from eventbus.queue.database.postgres import PostgresStatements, notify
from eventbus.queue.database.schema import MAX_ATTEMPTS
from eventbus.sql import as_bytes, is_row_problem, server_clock

RECLAIM_INTERVAL_S = 1.0
#: :meth:`Reservations.reserve` gives each job the token ``prefix + str(id)``: a random prefix of
#: this many hex digits per call, the row id after it (at most 19 digits: the token fits 32).
TOKEN_PREFIX_LENGTH = 13


class Reservations:
    """The reservations of ``queue``'s jobs in table ``jobs``: taking them, and what the holder
    of one may do with it (every such step acts only where the job's token still holds).

    ``worker_engine`` (autocommit: :func:`eventbus.sql.worker_engine_for`) runs the steps that
    need no transaction: single statements, and on PostgreSQL the settling of a batch one job at a
    time; ``engine`` the transactions of several statements (MariaDB's lock, then update; a batch
    on SQLite and MariaDB; the quarantine of a row).
    """

    def __init__(self, queue: Queue, jobs: sa.Table, engine: sa.Engine, worker_engine: sa.Engine,
                 postgres: PostgresStatements) -> None:
        self.queue = queue
        self.jobs = jobs
        self.engine = engine
        self.worker_engine = worker_engine
        self.postgres = postgres
        self.dialect = engine.dialect.name
        self.now = server_clock(self.dialect)
        self._reclaimed_at: dict[str, float] = {}  # time.monotonic() of the last reclaim

    # -- one job ------------------------------------------------------------------------------
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
                j.queue == name, j.reserved_at <= self.now - self.queue.retry_after).values(reserved_at=None))

    def pop(self, name: str) -> QueueJob | None:
        """Reserve the oldest available job of queue ``name`` (None: none is ready)."""
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
        return QueueJob(queue=self.queue, queue_name=name, job_id=str(job_id), raw=raw,
                        attempts=int(attempts), token=token, stored_uuid=job_uuid, failure=failure,
                        reserved_until=started + self.queue.retry_after)

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

    # -- many at once (the worker's prefetch) -------------------------------------------------
    def reserve(self, name: str, limit: int, acks: Sequence[QueueJob], renew: Sequence[QueueJob],
                give_back: Sequence[QueueJob]) -> Reserved:
        """Settle the worker's jobs and reserve up to ``limit`` more of queue ``name`` (the
        contract is on :meth:`Queue.reserve`). Each reserved job gets its own token, this call's
        random prefix followed by the row id, so the statement needs no parameter per row."""
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
                job.reserved_until = started + self.queue.retry_after
            else:
                lost.add(job.job_id)
        return lost

    def _batch_postgresql(self, name: str, limit: int, prefix: str, acks: Sequence[QueueJob],
                          renew: Sequence[QueueJob], give_back: Sequence[QueueJob]) -> tuple[list[Any], set[int]]:
        """One statement (:meth:`PostgresStatements.reserve`) on the worker's autocommit connection."""
        return self.postgres.reserve(self.worker_engine, name, limit, prefix, acks, renew, give_back)

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
                reserved_at=None, token=None, attempts=self._uncounted()))
            if given.rowcount and self.dialect == "postgresql":
                notify(conn, give_back[0].queue_name)
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
        return Reserved(pop_up_to(limit, lambda: self.pop(name)), self._renewed(renew, kept, started))

    # -- what only the holder of a reservation may do -----------------------------------------
    def deletion(self, job: QueueJob) -> Any:
        """The DELETE of ``job`` that only its reservation token can make (one row or none)."""
        j = self.jobs.c
        return sa.delete(self.jobs).where(j.id == int(job.job_id), j.token == job.token)

    def delete(self, job: QueueJob) -> bool:
        with self.worker_engine.begin() as conn:
            return bool(conn.execute(self.deletion(job)).rowcount)

    def release(self, job: QueueJob, delay: float, *, uncount: bool = False) -> bool:
        """Make ``job`` available again after ``delay``; one available at once wakes a listener.
        With ``uncount`` the attempt its reservation counted is given back in the same UPDATE."""
        j = self.jobs.c
        values: dict[str, Any] = {"reserved_at": None, "token": None, "available_at": self.now + delay}
        if uncount:
            values["attempts"] = self._uncounted()
        with self.worker_engine.begin() as conn:
            result = conn.execute(sa.update(self.jobs).where(
                j.id == int(job.job_id), j.token == job.token).values(**values))
            if self.dialect == "postgresql" and delay <= 0 and result.rowcount:
                notify(conn, job.queue_name)
            return bool(result.rowcount)

    def _uncounted(self) -> Any:
        """The attempt count less the one a reservation counted (never below 0)."""
        j = self.jobs.c
        return sa.case((j.attempts > 0, j.attempts - 1), else_=0)

    def restart(self, job: QueueJob, **values: Any) -> bool:
        """Restart ``job``'s reservation clock (and set ``values``); False when its token no
        longer holds."""
        j = self.jobs.c
        with self.worker_engine.begin() as conn:
            return bool(conn.execute(sa.update(self.jobs).where(
                j.id == int(job.job_id), j.token == job.token).values(
                reserved_at=self.now, **values)).rowcount)
