"""The SQL driver's tables: ``jobs`` and ``eventbus_signals``.

Every statement of the driver is written against these columns: the SQLAlchemy ones, the
PostgreSQL text in :mod:`~eventbus.queue.database.postgres` and the async push that runs it. So
what each column holds, and why it is there, is said once, here, apart from the code that moves
jobs through them.

Table ``jobs`` holds Laravel's columns plus four the guarantees need: ``uuid`` (unique, so a
push is idempotent), ``token`` (the current reservation, so only its holder may delete or
release), ``exceptions`` (the max_exceptions count) and ``failure`` (a failure kept beside a job
while its record could not be written). The times are seconds since the epoch by the database
server's clock, never a worker's.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

#: The attempts column is a 32-bit integer everywhere: the count stops here.
MAX_ATTEMPTS = 2**31 - 1
#: Text with no practical length limit (MySQL/MariaDB's TEXT stops at 64 KB); payloads and
#: tracebacks go in it, here and in the failed-job table.
LONG_TEXT = sa.Text().with_variant(mysql.LONGTEXT(), "mysql")
#: The id of a row, here and in the failed-job table: 64-bit, but SQLite's own INTEGER there
#: (only an INTEGER PRIMARY KEY is SQLite's autoincrementing rowid).
ROW_ID = sa.BigInteger().with_variant(sa.Integer, "sqlite")


#: The names the tables that go with the default ``jobs`` table have always had.
_DEFAULT_COMPANIONS = {"failed": "failed_jobs", "state": "eventbus_state"}


def companion_table(jobs: str, role: str) -> str:
    """The name of the ``role`` table (``failed``, ``state``) that goes with the jobs table ``jobs``.

    Beside the default ``jobs`` table they keep their usual names (``failed_jobs``,
    ``eventbus_state``); beside any other they are named after it (``shop_jobs`` ->
    ``shop_jobs_failed``, ``shop_jobs_state``). So two apps that share a database, each with a
    jobs table of its own, share no failed record, lock, counter, batch or worker entry either.
    """
    return _DEFAULT_COMPANIONS[role] if jobs == "jobs" else f"{jobs}_{role}"


def jobs_table(metadata: sa.MetaData, name: str = "jobs") -> sa.Table:
    return sa.Table(
        name, metadata,
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("uuid", sa.String(64), nullable=False, unique=True),
        sa.Column("queue", sa.String(191), nullable=False),
        sa.Column("payload", LONG_TEXT, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, default=0),
        sa.Column("exceptions", sa.Integer, nullable=False, default=0),
        sa.Column("token", sa.String(32), nullable=True),
        sa.Column("reserved_at", sa.Double, nullable=True),
        sa.Column("available_at", sa.Double, nullable=False),
        sa.Column("created_at", sa.Double, nullable=False),
        sa.Column("failure", LONG_TEXT, nullable=True),
        # Ready jobs in id order: a partial index where the database has them, so a pop is an
        # ordered scan that stops at the first row (MySQL/MariaDB get the plain (queue, id) index).
        sa.Index(f"{name}_ready_index", "queue", "id", postgresql_where=sa.text("reserved_at IS NULL"),
                 sqlite_where=sa.text("reserved_at IS NULL")),
        sa.Index(f"{name}_reserved_index", "queue", "reserved_at"),
    )


def signals_table(metadata: sa.MetaData) -> sa.Table:
    return sa.Table("eventbus_signals", metadata,
                    sa.Column("name", sa.String(191), primary_key=True),
                    sa.Column("value", sa.Double, nullable=False))
