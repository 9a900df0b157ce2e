"""Batches in SQL (SQLite, PostgreSQL, MariaDB/MySQL): three tables, one transaction per step.

- ``eventbus_batches``: one row per batch (Laravel's ``job_batches``): counters, stamps, name,
  the callback kinds (``flags``) and the description (JSON);
- ``eventbus_batch_jobs``: each member's final outcome (``ok``/``fail``), which makes a repeated
  outcome a no-op, and the callback jobs that ran;
- ``eventbus_batch_outbox``: the callbacks made due (with the job that owns them) or pushed.

Every step that changes a batch starts by updating its row, which locks it (a row lock on
PostgreSQL and MariaDB, the write lock that ``BEGIN IMMEDIATE`` took on SQLite): steps on one
batch run one after the other, each sees the one before, and none can deadlock another. The
rules themselves are :func:`eventbus.batching.rules.record`, run inside that transaction.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from eventbus.batching import rules
from eventbus.batching.records import BatchRecord, Due, flags_of, in_push_order
from eventbus.batching.repository import BatchRepository
from eventbus.sql import engine_for, ensure_tables, guarded

_TEXT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
_ID = sa.String(64)
_KEY = sa.String(128)
CALLBACK = "callback"  # the batch_jobs rows of callback jobs that ran (not members' outcomes)


def table_names(state_table: str = "eventbus_state") -> tuple[str, str, str]:
    """The batch tables that go with a state table: ``eventbus_batches``, ``eventbus_batch_jobs``
    and ``eventbus_batch_outbox`` beside ``eventbus_state``; ``shop_jobs_batches``, ... beside
    ``shop_jobs_state`` (an app with a jobs table of its own: apps sharing a database share no
    batch, as they share no state)."""
    base = state_table.removesuffix("_state")
    return f"{base}_batches", f"{base}_batch_jobs", f"{base}_batch_outbox"


def batch_tables(metadata: sa.MetaData, state_table: str = "eventbus_state") -> tuple[sa.Table, sa.Table, sa.Table]:
    names = table_names(state_table)
    batches = sa.Table(
        names[0], metadata,
        sa.Column("id", _ID, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("description", _TEXT, nullable=False),
        sa.Column("flags", sa.String(255), nullable=False),
        sa.Column("allow_failures", sa.Boolean, nullable=False),
        sa.Column("total_jobs", sa.Integer, nullable=False),
        sa.Column("pending_jobs", sa.Integer, nullable=False),
        sa.Column("failed_jobs", sa.Integer, nullable=False),
        sa.Column("outstanding_jobs", sa.Integer, nullable=False),
        sa.Column("created_at", sa.Double, nullable=False, index=True),
        sa.Column("cancelled_at", sa.Double, nullable=True),
        sa.Column("finished_at", sa.Double, nullable=True),
    )
    jobs = sa.Table(
        names[1], metadata,
        sa.Column("batch_id", _ID, primary_key=True),
        sa.Column("uuid", _KEY, primary_key=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("at", sa.Double, nullable=False),
    )
    outbox = sa.Table(
        names[2], metadata,
        sa.Column("batch_id", _ID, primary_key=True),
        sa.Column("key", _KEY, primary_key=True),
        sa.Column("owner", _KEY, nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("failure", sa.Text, nullable=False),
    )
    return batches, jobs, outbox


class SqlBatchRepository(BatchRepository):
    """The batches in the database at ``url`` (engine shared per URL), in the tables that go
    with ``state_table`` (:func:`table_names`)."""

    def __init__(self, url: str, state_table: str = "eventbus_state") -> None:
        self.url = url
        self.engine = engine_for(url)
        self.dialect = self.engine.dialect.name
        self.metadata = sa.MetaData()
        self.batches, self.jobs, self.outbox = batch_tables(self.metadata, state_table)
        self._ready = False

    # -- plumbing ---------------------------------------------------------------------------------
    def _run(self, action: str, fn: Any) -> Any:
        def run() -> Any:
            if not self._ready:
                ensure_tables(self.engine, self.metadata, [self.batches, self.jobs, self.outbox])
                self._ready = True
            return fn()

        return guarded(self.url, f"batch {action}", run)

    def migrate(self) -> list[str]:
        self._run("migrate", lambda: None)
        return [self.batches.name, self.jobs.name, self.outbox.name]

    def _missing_file(self) -> bool:
        """A SQLite file that does not exist yet: reads find nothing and must not create it."""
        path = self.engine.url.database if self.dialect == "sqlite" else None
        return bool(path) and path != ":memory:" and not os.path.exists(str(path))

    def _insert_ignoring(self, table: sa.Table) -> Any:
        """An INSERT that does nothing when the row exists."""
        if self.dialect == "postgresql":
            return postgresql.insert(table).on_conflict_do_nothing()
        if self.dialect == "sqlite":
            return sqlite.insert(table).on_conflict_do_nothing()
        return mysql.insert(table).prefix_with("IGNORE")

    def _lock(self, conn: Any, batch_id: str) -> bool:
        """Lock the batch's row for the rest of the transaction; False when there is none."""
        b = self.batches.c
        return bool(conn.execute(sa.update(self.batches).where(b.id == batch_id)
                                 .values(total_jobs=b.total_jobs)).rowcount)

    def _owned(self, conn: Any, batch_id: str, owner: str) -> list[Due]:
        o = self.outbox.c
        rows = conn.execute(sa.select(o.key, o.failure).where(o.batch_id == batch_id, o.owner == owner,
                                                              o.state == "due"))
        return in_push_order([Due(str(key), str(failure)) for key, failure in rows])

    def _make_due(self, conn: Any, batch_id: str, owner: str, entries: Sequence[Due]) -> None:
        for due in entries:
            conn.execute(self._insert_ignoring(self.outbox).values(
                batch_id=batch_id, key=due.key, owner=owner, state="due", failure=due.failure))

    # -- the steps --------------------------------------------------------------------------------
    def create(self, batch_id: str, description: dict[str, Any], jobs: int, *, owner: str) -> list[Due]:
        created_at = float(description.get("created_at") or time.time())
        flags = flags_of(description)

        def run() -> list[Due]:
            with self.engine.begin() as conn:
                made = conn.execute(self._insert_ignoring(self.batches).values(
                    id=batch_id, name=str(description.get("name", "")),
                    description=json.dumps(description, separators=(",", ":")), flags=",".join(flags),
                    allow_failures=bool(description.get("allow_failures")), total_jobs=jobs,
                    pending_jobs=jobs, failed_jobs=0, outstanding_jobs=jobs, created_at=created_at)).rowcount
                if made and jobs == 0:
                    tally = rules.Tally(0, 0, 0, 0)
                    entries = rules.settle_empty(tally, flags, created_at)
                    conn.execute(sa.update(self.batches).where(self.batches.c.id == batch_id)
                                 .values(finished_at=tally.finished_at))
                    self._make_due(conn, batch_id, owner, entries)
                return self._owned(conn, batch_id, owner)

        return list(self._run("create", run))

    def add_jobs(self, batch_id: str, count: int) -> bool:
        b = self.batches.c

        def run() -> bool:
            with self.engine.begin() as conn:
                if not self._lock(conn, batch_id):
                    return False
                conn.execute(sa.update(self.batches).where(b.id == batch_id).values(
                    total_jobs=b.total_jobs + count, pending_jobs=b.pending_jobs + count,
                    outstanding_jobs=b.outstanding_jobs + count))
                return True

        return bool(self._run("add jobs", run))

    def record(self, batch_id: str, job_uuid: str, succeeded: bool, *, unrun: Sequence[str] = (),
               failure: str = "") -> list[Due] | None:
        def run() -> list[Due] | None:
            with self.engine.begin() as conn:
                if not self._lock(conn, batch_id):
                    return None
                self._apply(conn, batch_id, job_uuid, succeeded, unrun, failure)
                return self._owned(conn, batch_id, job_uuid)

        found: list[Due] | None = self._run("record", run)
        return found

    def _apply(self, conn: Any, batch_id: str, job_uuid: str, succeeded: bool, unrun: Sequence[str],
               failure: str) -> None:
        """Read the batch, apply the rules, write back what changed (inside the locked transaction)."""
        b, j, o = self.batches.c, self.jobs.c, self.outbox.c
        row = conn.execute(sa.select(b.flags, b.allow_failures, b.total_jobs, b.pending_jobs, b.failed_jobs,
                                     b.outstanding_jobs, b.cancelled_at, b.finished_at)
                           .where(b.id == batch_id)).one()
        tally = rules.Tally(row.total_jobs, row.pending_jobs, row.failed_jobs, row.outstanding_jobs,
                            row.cancelled_at, row.finished_at)
        uuids = [job_uuid, *unrun]
        known = {str(u): str(v) for u, v in conn.execute(
            sa.select(j.uuid, j.outcome).where(j.batch_id == batch_id, j.uuid.in_(uuids)))}
        existing = {str(k) for (k,) in conn.execute(sa.select(o.key).where(o.batch_id == batch_id))}
        now = time.time()
        effects = rules.record(tally, [f for f in str(row.flags).split(",") if f], bool(row.allow_failures),
                               known, job_uuid, succeeded, unrun=unrun, failure=failure, now=now,
                               existing=existing)
        for order, (uuid, outcome) in enumerate(effects.outcomes.items()):
            if uuid in known:
                conn.execute(sa.update(self.jobs).where(j.batch_id == batch_id, j.uuid == uuid)
                             .values(outcome=outcome, at=now + order * 1e-6))
            else:
                conn.execute(sa.insert(self.jobs).values(batch_id=batch_id, uuid=uuid, outcome=outcome,
                                                         at=now + order * 1e-6))
        conn.execute(sa.update(self.batches).where(b.id == batch_id).values(
            pending_jobs=tally.pending, failed_jobs=tally.failed, outstanding_jobs=tally.outstanding,
            cancelled_at=tally.cancelled_at, finished_at=tally.finished_at))
        self._make_due(conn, batch_id, job_uuid, effects.due)

    def mark_pushed(self, batch_id: str, keys: Sequence[str]) -> None:
        o = self.outbox.c
        if not keys:
            return

        def run() -> None:
            with self.engine.begin() as conn:
                per_job = [k for k in keys if ":" in k]
                batch_wide = [k for k in keys if ":" not in k]
                if per_job:
                    conn.execute(sa.delete(self.outbox).where(o.batch_id == batch_id, o.key.in_(per_job)))
                if batch_wide:
                    conn.execute(sa.update(self.outbox).where(o.batch_id == batch_id, o.key.in_(batch_wide))
                                 .values(state="done"))

        self._run("mark pushed", run)

    def callback_ran(self, batch_id: str, job_uuid: str) -> None:
        def run() -> None:
            with self.engine.begin() as conn:
                conn.execute(self._insert_ignoring(self.jobs).values(
                    batch_id=batch_id, uuid=f"{CALLBACK}:{job_uuid}", outcome=CALLBACK, at=time.time()))

        self._run("callback ran", run)

    def callbacks_ran(self, batch_id: str, job_uuids: Sequence[str]) -> set[str]:
        j = self.jobs.c
        if not job_uuids:
            return set()

        def run() -> set[str]:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(j.uuid).where(
                    j.batch_id == batch_id, j.uuid.in_([f"{CALLBACK}:{u}" for u in job_uuids])))
                return {str(u).split(":", 1)[1] for (u,) in rows}

        found: set[str] = self._run("callbacks ran", run)
        return found

    def cancel(self, batch_id: str) -> bool:
        b = self.batches.c

        def run() -> bool:
            with self.engine.begin() as conn:
                return bool(conn.execute(sa.update(self.batches).where(b.id == batch_id, b.cancelled_at.is_(None))
                                         .values(cancelled_at=time.time())).rowcount)

        return bool(self._run("cancel", run))

    # -- reading ------------------------------------------------------------------------------------
    def find(self, batch_id: str) -> BatchRecord | None:
        b, j = self.batches.c, self.jobs.c
        if self._missing_file():
            return None

        def run() -> BatchRecord | None:
            with self.engine.connect() as conn:
                row = conn.execute(sa.select(b.name, b.total_jobs, b.pending_jobs, b.failed_jobs, b.created_at,
                                             b.cancelled_at, b.finished_at).where(b.id == batch_id)).first()
                if row is None:
                    return None
                failed = conn.execute(sa.select(j.uuid).where(j.batch_id == batch_id, j.outcome == "fail")
                                      .order_by(j.at, j.uuid)).scalars().all() if row.failed_jobs else []
            return BatchRecord(batch_id, str(row.name), int(row.total_jobs), int(row.pending_jobs),
                               int(row.failed_jobs), float(row.created_at), row.cancelled_at, row.finished_at,
                               tuple(str(u) for u in failed))

        found: BatchRecord | None = self._run("find", run)
        return found

    def description(self, batch_id: str) -> dict[str, Any] | None:
        b = self.batches.c
        if self._missing_file():
            return None

        def run() -> dict[str, Any] | None:
            with self.engine.connect() as conn:
                text = conn.execute(sa.select(b.description).where(b.id == batch_id)).scalar()
            return json.loads(text) if text else None

        found: dict[str, Any] | None = self._run("description", run)
        return found

    def ids(self) -> list[str]:
        b = self.batches.c
        if self._missing_file():
            return []

        def run() -> list[str]:
            with self.engine.connect() as conn:
                return [str(i) for i in conn.execute(sa.select(b.id).order_by(b.created_at.desc())).scalars()]

        found: list[str] = self._run("list", run)
        return found

    def delete(self, batch_id: str) -> bool:
        def run() -> bool:
            with self.engine.begin() as conn:
                if not self._lock(conn, batch_id):
                    return False
                for table in (self.jobs, self.outbox):
                    conn.execute(sa.delete(table).where(table.c.batch_id == batch_id))
                conn.execute(sa.delete(self.batches).where(self.batches.c.id == batch_id))
                return True

        return bool(self._run("delete", run))
