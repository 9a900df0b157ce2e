"""The recent-jobs store in SQL (SQLite, PostgreSQL, MariaDB/MySQL), beside the state table.

- ``eventbus_job_records``: one row per recorded job (connection, uuid), its status and finish
  time as columns for the listings, the whole record as JSON, and ``keep_until``;
- ``eventbus_job_tags``: one row per (connection, tag, uuid), with its own ``keep_until``;
- ``eventbus_monitored_tags``: one row per (connection, tag) watched.

An app with a jobs table of its own gets tables named after it, as its state and batches do
(``shop_jobs_job_records`` beside ``shop_jobs_state``). A batch of records is one transaction
(the rows of those uuids replaced); expired rows are deleted at most once a minute per process,
by the writer, and never read meanwhile.
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from eventbus.sql import engine_for, ensure_tables, guarded
from eventbus.tracking.records import JobRecord, keep_s, tag_keep_s
from eventbus.tracking.repository import JobRepository

_TEXT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
_NAME = sa.String(191)
_UUID = sa.String(64)
PURGE_INTERVAL_S = 60.0


def table_names(state_table: str = "eventbus_state") -> tuple[str, str, str]:
    base = state_table.removesuffix("_state")
    return f"{base}_job_records", f"{base}_job_tags", f"{base}_monitored_tags"


def tracking_tables(metadata: sa.MetaData, state_table: str = "eventbus_state") -> tuple[sa.Table, sa.Table, sa.Table]:
    names = table_names(state_table)
    records = sa.Table(
        names[0], metadata,
        sa.Column("connection", _NAME, primary_key=True),
        sa.Column("uuid", _UUID, primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("finished_at", sa.Double, nullable=False),
        sa.Column("keep_until", sa.Double, nullable=False, index=True),
        sa.Column("record", _TEXT, nullable=False),
        sa.Index(f"{names[0]}_listing", "connection", "status", "finished_at"),
    )
    tags = sa.Table(
        names[1], metadata,
        sa.Column("connection", _NAME, primary_key=True),
        sa.Column("tag", _NAME, primary_key=True),
        sa.Column("uuid", _UUID, primary_key=True),
        sa.Column("finished_at", sa.Double, nullable=False),
        sa.Column("keep_until", sa.Double, nullable=False, index=True),
        sa.Index(f"{names[1]}_listing", "connection", "tag", "finished_at"),
    )
    monitored = sa.Table(
        names[2], metadata,
        sa.Column("connection", _NAME, primary_key=True),
        sa.Column("tag", _NAME, primary_key=True),
    )
    return records, tags, monitored


class SqlJobRepository(JobRepository):
    """Recent jobs of ``connection`` in the database at ``url`` (engine shared per URL)."""

    def __init__(self, url: str, connection: str, state_table: str = "eventbus_state") -> None:
        self.url = url
        self.connection = connection
        self.engine = engine_for(url)
        self.metadata = sa.MetaData()
        self.records, self.tags, self.watched = tracking_tables(self.metadata, state_table)
        self._ready = False
        self._purged_at = 0.0

    def _run(self, action: str, fn: Any) -> Any:
        def run() -> Any:
            if not self._ready:
                ensure_tables(self.engine, self.metadata, [self.records, self.tags, self.watched])
                self._ready = True
            return fn()

        return guarded(self.url, f"recent jobs {action}", run)

    def migrate(self) -> list[str]:
        self._run("migrate", lambda: None)
        return [self.records.name, self.tags.name, self.watched.name]

    def _missing_file(self) -> bool:
        """A SQLite file that does not exist yet: reads find nothing and must not create it."""
        path = self.engine.url.database if self.engine.dialect.name == "sqlite" else None
        return bool(path) and path != ":memory:" and not os.path.exists(str(path))

    # -- writing ----------------------------------------------------------------------------------
    def _record(self, records: list[JobRecord], retention: dict[str, float], now: float) -> None:
        latest = {r.uuid: r for r in records}  # one row per uuid, the last word wins

        def run() -> None:
            with self.engine.begin() as conn:
                monitored = self._monitored_in(conn)
                uuids = sorted(latest)
                for table in (self.records, self.tags):
                    conn.execute(sa.delete(table).where(table.c.connection == self.connection,
                                                        table.c.uuid.in_(uuids)))
                conn.execute(sa.insert(self.records), [self._row(latest[u], retention, monitored) for u in uuids])
                tag_rows = [{"connection": self.connection, "tag": tag, "uuid": r.uuid,
                             "finished_at": r.finished_at,
                             "keep_until": r.finished_at + tag_keep_s(tag, retention, monitored)}
                            for r in latest.values() for tag in r.tags]
                if tag_rows:
                    conn.execute(sa.insert(self.tags), tag_rows)
                if now - self._purged_at >= PURGE_INTERVAL_S:
                    self._purged_at = now
                    for table in (self.records, self.tags):
                        conn.execute(sa.delete(table).where(table.c.keep_until <= now))

        self._run("record", run)

    def _row(self, record: JobRecord, retention: dict[str, float], monitored: set[str]) -> dict[str, Any]:
        return {"connection": self.connection, "uuid": record.uuid, "status": record.status,
                "finished_at": record.finished_at,
                "keep_until": record.finished_at + keep_s(record, retention, monitored),
                "record": record.to_json()}

    # -- reading ----------------------------------------------------------------------------------
    def _recent(self, status: str | None, tag: str | None, limit: int, now: float) -> list[JobRecord]:
        if self._missing_file():
            return []
        r = self.records.c
        query = sa.select(r.record).where(r.connection == self.connection, r.keep_until > now)
        if status is not None:
            query = query.where(r.status == status)
        if tag is not None:
            t = self.tags.c
            query = query.join(self.tags, sa.and_(t.connection == r.connection, t.uuid == r.uuid)).where(
                t.tag == tag, t.keep_until > now)
        query = query.order_by(r.finished_at.desc()).limit(limit)

        def run() -> list[JobRecord]:
            with self.engine.connect() as conn:
                found = (JobRecord.from_text(str(text)) for (text,) in conn.execute(query))
                return [record for record in found if record is not None]

        result: list[JobRecord] = self._run("list", run)
        return result

    def _find(self, uuid: str, now: float) -> JobRecord | None:
        if self._missing_file():
            return None
        r = self.records.c
        query = sa.select(r.record).where(r.connection == self.connection, r.uuid == uuid, r.keep_until > now)

        def run() -> JobRecord | None:
            with self.engine.connect() as conn:
                text = conn.execute(query).scalar()
            return None if text is None else JobRecord.from_text(str(text))

        found: JobRecord | None = self._run("find", run)
        return found

    # -- monitored tags ---------------------------------------------------------------------------
    def _monitored_in(self, conn: Any) -> set[str]:
        m = self.watched.c
        return {str(tag) for (tag,) in conn.execute(sa.select(m.tag).where(m.connection == self.connection))}

    def _insert_ignoring(self) -> Any:
        """An INSERT of a monitored tag that does nothing when the row exists."""
        dialect = self.engine.dialect.name
        if dialect == "postgresql":
            return postgresql.insert(self.watched).on_conflict_do_nothing()
        if dialect == "sqlite":
            return sqlite.insert(self.watched).on_conflict_do_nothing()
        return mysql.insert(self.watched).prefix_with("IGNORE")

    def _watch(self, tag: str) -> bool:
        def run() -> bool:
            with self.engine.begin() as conn:
                stmt = self._insert_ignoring().values(connection=self.connection, tag=tag)
                if self.engine.dialect.name in ("postgresql", "sqlite"):  # rowcount may say 1 there
                    return conn.execute(stmt.returning(self.watched.c.tag)).first() is not None
                return bool(conn.execute(stmt).rowcount)

        return bool(self._run("watch", run))

    def _unwatch(self, tag: str) -> bool:
        m = self.watched.c

        def run() -> bool:
            with self.engine.begin() as conn:
                return bool(conn.execute(sa.delete(self.watched).where(
                    m.connection == self.connection, m.tag == tag)).rowcount)

        return bool(self._run("unwatch", run))

    def _monitored(self) -> set[str]:
        if self._missing_file():
            return set()

        def run() -> set[str]:
            with self.engine.connect() as conn:
                return self._monitored_in(conn)

        found: set[str] = self._run("monitored", run)
        return found

    def _count(self, tag: str, retention: dict[str, float], now: float) -> int:
        if self._missing_file():
            return 0
        t = self.tags.c
        query = sa.select(sa.func.count()).select_from(self.tags).where(
            t.connection == self.connection, t.tag == tag, t.keep_until > now)

        def run() -> int:
            with self.engine.connect() as conn:
                return int(conn.execute(query).scalar_one())

        return int(self._run("count", run))
