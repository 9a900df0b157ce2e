"""The state store in SQL: table ``eventbus_state(key, value, expires_at)``.

SQLite, PostgreSQL and MariaDB/MySQL. Expiry uses the database server's clock (``expires_at`` is
written and compared as the server's epoch seconds), so workers with skewed clocks agree. An
expired row counts as absent everywhere and is purged now and then. Each operation is a single
statement where the dialect has one: an upsert (``ON CONFLICT`` / ``ON DUPLICATE KEY``) guarded
by the expiry; on MariaDB ``add`` is a short transaction (delete the expired row, then
``INSERT IGNORE``) and ``incr`` reads the new value back inside its own transaction.
The key column compares bytewise (``COLLATE "C"`` / ``utf8mb4_bin``), so keys differing only in
case are different keys and prefix scans are exact.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite

from eventbus.sql import engine_for, ensure_tables, guarded
from eventbus.state.base import MAX_KEY_LENGTH, StateStore, counter_text

log = logging.getLogger(__name__)

#: The embedded default: the SQLite file the failed job store also uses when nothing else is set.
EMBEDDED_SQLITE_URL = "sqlite:///eventbus.sqlite3"
TABLE = "eventbus_state"
PURGE_INTERVAL_S = 60.0

_KEY = (sa.String(MAX_KEY_LENGTH)
        .with_variant(sa.String(MAX_KEY_LENGTH, collation="C"), "postgresql")
        .with_variant(mysql.VARCHAR(MAX_KEY_LENGTH, charset="utf8mb4", collation="utf8mb4_bin"),
                      "mysql", "mariadb"))
_VALUE = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


def state_table(metadata: sa.MetaData, name: str = TABLE) -> sa.Table:
    return sa.Table(
        name, metadata,
        sa.Column("key", _KEY, primary_key=True),
        sa.Column("value", _VALUE, nullable=False),
        sa.Column("expires_at", sa.Double, nullable=True, index=True),
    )


def server_now(dialect: str) -> Any:
    """The database server's clock as epoch seconds (a SQL expression)."""
    if dialect == "sqlite":
        return sa.literal_column("((julianday('now') - 2440587.5) * 86400.0)")
    if dialect == "postgresql":
        return sa.literal_column("CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)")
    return sa.literal_column("UNIX_TIMESTAMP(NOW(6))")


def _prefix_upper_bound(prefix: str) -> str | None:
    """The smallest text above every key starting with ``prefix`` (None: no upper bound)."""
    while prefix and prefix[-1] == "\U0010ffff":
        prefix = prefix[:-1]
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None


class SqlStateStore(StateStore):
    """State in the ``eventbus_state`` table of the database at ``url`` (engine shared per URL)."""

    def __init__(self, url: str, table: str = TABLE) -> None:
        self.url = url
        self.engine = engine_for(url)
        self.dialect = self.engine.dialect.name
        self.metadata = sa.MetaData()
        self.table = state_table(self.metadata, table)
        self._ready = False
        self._purged_at = time.monotonic()
        self.now = server_now(self.dialect)

    # -- plumbing ---------------------------------------------------------------------------------
    def _missing_file(self) -> bool:
        """A SQLite file that does not exist yet: reads find nothing and must not create it."""
        path = self.engine.url.database if self.dialect == "sqlite" else None
        return bool(path) and path != ":memory:" and not os.path.exists(str(path))

    def _run(self, action: str, fn: Any) -> Any:
        def run() -> Any:
            if not self._ready:
                ensure_tables(self.engine, self.metadata, [self.table])
                self._ready = True
            return fn()

        return guarded(self.url, f"state {action}", run)

    def migrate(self) -> list[str]:
        self._run("migrate", lambda: None)
        return [self.table.name]

    def _live(self) -> Any:
        t = self.table.c
        return sa.or_(t.expires_at.is_(None), t.expires_at > self.now)

    def _expired(self) -> Any:
        t = self.table.c
        return sa.and_(t.expires_at.is_not(None), t.expires_at <= self.now)

    def _expires(self, ttl_s: float | None) -> Any:
        return sa.null() if ttl_s is None else self.now + sa.literal(ttl_s, sa.Double)

    def _insert(self) -> Any:
        if self.dialect == "postgresql":
            return postgresql.insert(self.table)
        if self.dialect == "sqlite":
            return sqlite.insert(self.table)
        return mysql.insert(self.table)

    def _maybe_purge(self) -> None:
        """Delete expired rows at most once a minute per store (they already count as absent)."""
        if time.monotonic() - self._purged_at < PURGE_INTERVAL_S:
            return
        self._purged_at = time.monotonic()
        try:
            with self.engine.begin() as conn:
                conn.execute(sa.delete(self.table).where(self._expired()))
        except sa.exc.DBAPIError as exc:
            log.debug("purging expired state rows failed (retried later): %s", exc)

    # -- the statements ---------------------------------------------------------------------------
    def _upsert(self, key: str, value: str, ttl_s: float | None) -> Any:
        ins = self._insert().values(key=key, value=value, expires_at=self._expires(ttl_s))
        if self.dialect in ("postgresql", "sqlite"):
            return ins.on_conflict_do_update(
                index_elements=[self.table.c.key],
                set_={"value": ins.excluded.value, "expires_at": ins.excluded.expires_at})
        return ins.on_duplicate_key_update(value=ins.inserted.value,
                                           expires_at=ins.inserted.expires_at)

    def _incr_statement(self, key: str, amount: float, ttl_s: float | None) -> Any:
        t = self.table.c
        ins = self._insert().values(key=key, value=counter_text(amount),
                                    expires_at=self._expires(ttl_s))
        if self.dialect in ("postgresql", "sqlite"):
            number = sa.cast(t.value, sa.Double if self.dialect == "postgresql" else sa.Float)
            return ins.on_conflict_do_update(
                index_elements=[self.table.c.key],
                set_={"value": sa.case((self._expired(), ins.excluded.value),
                                       else_=sa.cast(number + amount, sa.Text)),
                      "expires_at": sa.case((self._expired(), ins.excluded.expires_at),
                                            else_=t.expires_at)},
            ).returning(t.value)
        # MySQL evaluates the assignments left to right: value first, while expires_at is old
        number = sa.cast(t.value, mysql.DOUBLE())
        return ins.on_duplicate_key_update([
            ("value", sa.case((self._expired(), ins.inserted.value),
                              else_=sa.func.concat(number + amount))),
            ("expires_at", sa.case((self._expired(), ins.inserted.expires_at), else_=t.expires_at)),
        ])

    def _incr_in(self, conn: Any, key: str, amount: float, ttl_s: float | None) -> float:
        result = conn.execute(self._incr_statement(key, amount, ttl_s))
        if self.dialect in ("postgresql", "sqlite"):
            return float(result.scalar_one())
        return float(conn.execute(sa.select(self.table.c.value).where(
            self.table.c.key == key)).scalar_one())

    # -- the operations ---------------------------------------------------------------------------
    def _get(self, key: str) -> str | None:
        t = self.table.c
        if self._missing_file():
            return None

        def run() -> str | None:
            with self.engine.connect() as conn:
                found = conn.execute(sa.select(t.value).where(t.key == key, self._live())).scalar()
                return None if found is None else str(found)

        result: str | None = self._run("get", run)
        return result

    def _put(self, key: str, value: str, ttl_s: float | None) -> None:
        self._put_many({key: value}, ttl_s)

    def _put_many(self, items: dict[str, str], ttl_s: float | None) -> None:
        def run() -> None:
            with self.engine.begin() as conn:
                for key in sorted(items):  # one lock order for every writer: no deadlock
                    conn.execute(self._upsert(key, items[key], ttl_s))

        self._run("put", run)
        self._maybe_purge()

    def _add(self, key: str, value: str, ttl_s: float | None) -> bool:
        t = self.table.c

        def run() -> bool:
            with self.engine.begin() as conn:
                if self.dialect in ("postgresql", "sqlite"):
                    ins = self._insert().values(key=key, value=value, expires_at=self._expires(ttl_s))
                    stmt = ins.on_conflict_do_update(
                        index_elements=[self.table.c.key],
                        set_={"value": ins.excluded.value, "expires_at": ins.excluded.expires_at},
                        where=self._expired()).returning(t.key)
                    return conn.execute(stmt).first() is not None
                conn.execute(sa.delete(self.table).where(t.key == key, self._expired()))
                stmt = self._insert().prefix_with("IGNORE").values(
                    key=key, value=value, expires_at=self._expires(ttl_s))
                return bool(conn.execute(stmt).rowcount)

        added = bool(self._run("add", run))
        self._maybe_purge()
        return added

    def _delete_where(self, action: str, *where: Any) -> bool:
        def run() -> bool:
            with self.engine.begin() as conn:
                return bool(conn.execute(sa.delete(self.table).where(*where)).rowcount)

        return bool(self._run(action, run))

    def _delete(self, key: str) -> bool:
        t = self.table.c
        live = self._delete_where("delete", t.key == key, self._live())
        if not live:
            self._delete_where("delete", t.key == key)  # an expired leftover
        return live

    def _delete_if(self, key: str, value: str) -> bool:
        t = self.table.c
        return self._delete_where("delete_if", t.key == key, t.value == value, self._live())

    def _incr(self, key: str, amount: float, ttl_s: float | None) -> float:
        def run() -> float:
            with self.engine.begin() as conn:
                return self._incr_in(conn, key, amount, ttl_s)

        total = float(self._run("incr", run))
        self._maybe_purge()
        return total

    def _incr_many(self, amounts: dict[str, float], ttl_s: float | None) -> None:
        def run() -> None:
            with self.engine.begin() as conn:
                for key in sorted(amounts):  # one lock order for every writer: no deadlock
                    conn.execute(self._incr_statement(key, amounts[key], ttl_s))

        self._run("incr", run)
        self._maybe_purge()

    def _scan(self, prefix: str) -> dict[str, str]:
        t = self.table.c
        if self._missing_file():
            return {}
        where = [self._live()]
        if prefix:
            where.append(t.key >= prefix)
            upper = _prefix_upper_bound(prefix)
            if upper is not None:
                where.append(t.key < upper)

        def run() -> dict[str, str]:
            with self.engine.connect() as conn:
                rows = conn.execute(sa.select(t.key, t.value).where(*where).order_by(t.key))
                return {str(k): str(v) for k, v in rows if str(k).startswith(prefix)}

        found: dict[str, str] = self._run("scan", run)
        return found
