"""Failed jobs in a SQL table ``failed_jobs`` (SQLite, PostgreSQL, MySQL/MariaDB).

When the table is in the database of the queue whose job failed, recording the failure and
deleting the job are one transaction (:meth:`DatabaseFailedJobStore.fail_reserved`).
"""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from eventbus.errors import EventBusError
from eventbus.failed.base import FailedJob, FailedJobStore, FailOutcome, alternative_record
from eventbus.queue.base import QueueJob
from eventbus.queue.database import DatabaseQueue
from eventbus.queue.database.schema import LONG_TEXT, ROW_ID
from eventbus.sql import engine_for, ensure_tables, guarded


def failed_jobs_table(metadata: sa.MetaData, name: str = "failed_jobs") -> sa.Table:
    return sa.Table(
        name, metadata,
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(100), nullable=False, unique=True),
        sa.Column("connection", sa.String(191), nullable=False),
        sa.Column("queue", sa.String(191), nullable=False),
        sa.Column("payload", LONG_TEXT, nullable=False),
        sa.Column("exception", LONG_TEXT, nullable=False),
        sa.Column("failed_at", sa.Double, nullable=False, index=True),
    )


def storable_text(text: str) -> str:
    """``text`` as an SQL text column can hold it: bytes that were not UTF-8 (kept as surrogates)
    become ``\\xNN`` escapes and NUL characters (which PostgreSQL refuses) ``\\x00``."""
    if text.isascii() and "\x00" not in text:
        return text
    fixed = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return fixed.replace("\x00", "\\x00")


class DatabaseFailedJobStore(FailedJobStore):
    def __init__(self, url: str, table: str = "failed_jobs") -> None:
        self.url = url
        self.engine = engine_for(url)
        self.metadata = sa.MetaData()
        self.table = failed_jobs_table(self.metadata, table)
        self._ready = False

    def _run(self, action: str, fn: Any) -> Any:
        def run() -> Any:
            if not self._ready:
                ensure_tables(self.engine, self.metadata, [self.table])
                self._ready = True
            return fn()

        return guarded(self.url, action, run)

    def migrate(self) -> list[str]:
        self._run("migrate", lambda: None)
        return [self.table.name]

    def insert(self, record: FailedJob) -> bool:
        def run() -> bool:
            with self.engine.begin() as conn:
                return self._insert_in(conn, record)

        try:
            return bool(self._run("record failed job", run))
        except sa.exc.IntegrityError:  # another worker stored that uuid a moment ago
            return False

    def _insert_in(self, conn: sa.Connection, record: FailedJob) -> bool:
        t = self.table
        if conn.execute(sa.select(t.c.id).where(t.c.uuid == record.uuid)).first():
            return False
        conn.execute(sa.insert(t).values(**{**record.to_dict(), "payload": storable_text(record.payload),
                                            "exception": storable_text(record.exception)}))
        return True

    def fail_reserved(self, job: QueueJob, record: FailedJob) -> FailOutcome:
        """One transaction when the job's queue is in this database; otherwise the general steps."""
        queue = job.queue
        if not (isinstance(queue, DatabaseQueue) and queue.url == self.url):
            return super().fail_reserved(job, record)
        for _ in range(5):
            try:
                outcome: FailOutcome = self._run(
                    "fail job", lambda: self._fail_in_one_transaction(queue, job, record))
                return outcome
            except sa.exc.IntegrityError:  # another worker stored that uuid a moment ago: again
                continue
        raise EventBusError(f"cannot store the failed job {record.uuid}: its id keeps colliding",
                            job_uuid=record.uuid)

    def _fail_in_one_transaction(self, queue: DatabaseQueue, job: QueueJob, record: FailedJob) -> FailOutcome:
        """Delete the job (only for its token) and store the record, or do neither."""
        with self.engine.begin() as conn:
            if not conn.execute(queue.reserved_deletion(job)).rowcount:
                return FailOutcome.NOT_HELD
            candidate = record
            while not self._insert_in(conn, candidate):  # a record is never replaced
                candidate = alternative_record(record)
            return FailOutcome.RECORDED

    def _select(self, *where: Any) -> list[FailedJob]:
        t = self.table
        cols = [t.c.uuid, t.c.connection, t.c.queue, t.c.payload, t.c.exception, t.c.failed_at]

        def run() -> list[FailedJob]:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(*cols).where(*where).order_by(t.c.failed_at.desc(),
                                                                             t.c.id.desc()))
                return [FailedJob(**row._mapping) for row in rows]

        return list(self._run("read failed jobs", run))

    def all(self) -> list[FailedJob]:
        return self._select()

    def find(self, uuid: str) -> FailedJob | None:
        found = self._select(self.table.c.uuid == uuid)
        return found[0] if found else None

    def _delete(self, action: str, *where: Any) -> int:
        def run() -> int:
            with self.engine.begin() as conn:
                return int(conn.execute(sa.delete(self.table).where(*where)).rowcount)

        return int(self._run(action, run))

    def forget(self, uuid: str) -> bool:
        return self._delete("forget failed job", self.table.c.uuid == uuid) > 0

    def flush(self, older_than_s: float | None = None) -> int:
        if older_than_s is None:
            return self._delete("flush failed jobs", sa.true())
        return self._delete("prune failed jobs", self.table.c.failed_at <= time.time() - older_than_s)
