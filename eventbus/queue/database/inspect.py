"""What operators ask of the SQL jobs table: sizes, queue names, counts by state, a peek; and clearing.

``eventbus size``, ``status``, ``peek``, ``clear`` and the dashboard come here; no worker does.
Apart from :class:`~eventbus.queue.database.DatabaseQueue`, whose file then follows a job's path
(push, reserve, settle, wait), because these statements read a whole queue at once and answer
with the server's clock, for people: their cost and their shape are another concern.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from eventbus.queue.base import Cancellation, JobState, QueuedJob, QueueStats
from eventbus.sql import server_clock


class Inspection:
    """The operators' statements on table ``jobs``, each on a connection of its own from ``engine``."""

    def __init__(self, engine: sa.Engine, jobs: sa.Table) -> None:
        self.engine = engine
        self.jobs = jobs
        self.now = server_clock(engine.dialect.name)

    def size(self, name: str) -> int:
        """Ready, delayed and reserved jobs of queue ``name``."""
        j = self.jobs.c
        with self.engine.connect() as conn:
            count: Any = conn.execute(sa.select(sa.func.count()).where(j.queue == name)).scalar()
        return int(count)

    def queue_names(self) -> list[str]:
        """The queues that hold jobs, sorted."""
        j = self.jobs.c
        with self.engine.connect() as conn:
            return sorted(r[0] for r in conn.execute(sa.select(j.queue).distinct()))

    def stats(self, name: str) -> QueueStats:
        """The counts of queue ``name`` by state, and the age of its oldest ready job: one statement."""
        j = self.jobs.c
        reserved = j.reserved_at.is_not(None)
        ready = sa.and_(j.reserved_at.is_(None), j.available_at <= self.now)
        delayed = sa.and_(j.reserved_at.is_(None), j.available_at > self.now)

        def count(condition: Any) -> Any:
            return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)

        oldest = self.now - sa.func.min(sa.case((ready, j.created_at), else_=None))
        stmt = sa.select(count(ready), count(delayed), count(reserved), oldest).where(j.queue == name)
        with self.engine.connect() as conn:
            n_ready, n_delayed, n_reserved, age = conn.execute(stmt).one()
        return QueueStats(name, int(n_ready), int(n_delayed), int(n_reserved),
                          max(float(age), 0.0) if age is not None else None)

    def oldest_ready_age(self, name: str) -> float | None:
        """Seconds since the oldest ready job of queue ``name`` became available (pushed, or due
        after a delay or a release: ``min(available_at)``, as Laravel's database queue tells)."""
        j = self.jobs.c
        stmt = sa.select(self.now - sa.func.min(j.available_at)).where(
            j.queue == name, j.reserved_at.is_(None), j.available_at <= self.now)
        with self.engine.connect() as conn:
            age = conn.execute(stmt).scalar()
        return max(float(age), 0.0) if age is not None else None

    def clear(self, name: str) -> int:
        """Delete the ready and delayed jobs of queue ``name`` (reserved ones stay): how many."""
        j = self.jobs.c
        with self.engine.begin() as conn:
            return int(conn.execute(sa.delete(self.jobs).where(
                j.queue == name, j.reserved_at.is_(None))).rowcount)

    def peek(self, name: str, limit: int) -> list[str]:
        """The payloads of up to ``limit`` ready jobs of queue ``name``, oldest first."""
        j = self.jobs.c
        with self.engine.connect() as conn:
            return [r.payload for r in conn.execute(
                sa.select(j.payload).where(j.queue == name, j.reserved_at.is_(None),
                                           j.available_at <= self.now)
                .order_by(j.id).limit(limit))]

    def find(self, uuid: str, name: str) -> QueuedJob | None:
        """The job ``uuid`` of queue ``name`` and its state, by the server's clock."""
        j = self.jobs.c
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(j.payload, j.reserved_at, j.available_at > self.now)
                               .where(j.uuid == uuid, j.queue == name)).first()
        if row is None:
            return None
        state = JobState.RESERVED if row[1] is not None else JobState.DELAYED if row[2] else JobState.READY
        return QueuedJob(uuid, name, state, row[0])

    def list_jobs(self, state: JobState, name: str, limit: int) -> list[QueuedJob]:
        """Up to ``limit`` jobs of queue ``name`` in ``state``, by the server's clock: ready ones
        oldest first, delayed ones soonest due first, reserved ones soonest reserved first."""
        j = self.jobs.c
        where, order = {
            JobState.READY: (sa.and_(j.reserved_at.is_(None), j.available_at <= self.now), (j.id,)),
            JobState.DELAYED: (sa.and_(j.reserved_at.is_(None), j.available_at > self.now), (j.available_at, j.id)),
            JobState.RESERVED: (j.reserved_at.is_not(None), (j.reserved_at, j.id)),
        }[state]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(j.uuid, j.payload).where(j.queue == name, where)
                                .order_by(*order).limit(max(limit, 0)))
            return [QueuedJob(r.uuid, name, state, r.payload) for r in rows]

    def cancel(self, uuid: str, name: str) -> Cancellation:
        """Delete the row of job ``uuid`` unless a worker holds it: one statement, then (when it
        deleted nothing) a look at why."""
        j = self.jobs.c
        with self.engine.begin() as conn:
            deleted = conn.execute(sa.delete(self.jobs).where(
                j.uuid == uuid, j.queue == name, j.reserved_at.is_(None))).rowcount
            if deleted:
                return Cancellation.CANCELLED
            held = conn.execute(sa.select(j.id).where(j.uuid == uuid, j.queue == name)).first()
        return Cancellation.RESERVED if held is not None else Cancellation.NOT_FOUND
