"""Shared SQLAlchemy plumbing: one engine per URL, dialect quirks, tables created on first use.

SQLite gets WAL mode, a busy timeout, and ``BEGIN IMMEDIATE`` for every transaction, so two
processes popping at once queue up on the write lock instead of both reading the same job. Its
text is read with ``surrogateescape``: a value whose bytes are not UTF-8 reaches Python (as the
Redis driver hands such a body over) instead of failing every read of its row.

Times stored for the queue come from the database's own clock (:func:`server_clock`), never
from the clock of the process that runs the statement.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from eventbus.errors import ConfigurationError, ConnectionUnavailableError, MissingDependencyError
from eventbus.urls import UNPARSEABLE, redact_url

T = TypeVar("T")

_EXTRAS = {"psycopg": "postgres", "psycopg2": "postgres", "pymysql": "mysql", "MySQLdb": "mysql",
           "mysqlclient": "mysql"}

#: Columns added to tables created by an older version, made once per process.
_ADDED = "added columns"

# Module-level, not the runtime's: the runtime's stores use this module (it sits below it in the
# import graph); runtime.close() and runtime.reset() dispose the engines through reset().
_lock = threading.Lock()
_engines: dict[str, Engine] = {}
_created: set[tuple[str, str]] = set()


def engine_for(url: str) -> Engine:
    """The engine for ``url``, built once per process."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _engines[url] = _build(url)
        return engine


def worker_engine_for(url: str) -> Engine:
    """An autocommit engine for the worker's single-statement pop, delete and release.

    No BEGIN/COMMIT and no pre-ping round trips (a dropped connection surfaces as an error the
    worker retries). On PostgreSQL its sessions commit without waiting for the WAL flush: only
    these statements run on it, and a lost one merely brings a job back (at-least-once).
    """
    if sa.make_url(url).get_backend_name() == "sqlite":
        return engine_for(url)  # one local file: the same engine, with its BEGIN IMMEDIATE
    key = "worker:" + url
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _build(url, autocommit=True)
        return engine


def push_engine_for(url: str) -> Engine:
    """An autocommit engine for pushes: one statement, one round trip, durable.

    Unlike :func:`worker_engine_for` its commits wait for the WAL flush (a pushed job must
    survive a crash of the server). No pre-ping either: a push is idempotent by uuid, so the
    caller sends it once more when the pooled connection turns out to be gone.
    """
    if sa.make_url(url).get_backend_name() == "sqlite":
        return engine_for(url)
    key = "push:" + url
    with _lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = _build(url, autocommit=True, durable=True)
        return engine


def _build(url: str, autocommit: bool = False, durable: bool = False) -> Engine:
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError) as exc:  # never echoed whole: see redact_url
        shown = redact_url(url) if "://" in url else UNPARSEABLE
        raise ConfigurationError(f"bad database URL {shown!r}: "
                                 f"{str(exc).replace(url, shown)}") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            engine = sa.create_engine(parsed, connect_args={"timeout": 30}, pool_pre_ping=False)
            path = parsed.database
            event.listen(engine, "do_connect", lambda *args: _create_private_file(path))
            _sqlite_immediate_transactions(engine)
            return engine
        if not autocommit:
            options: dict[str, Any] = {}
            if parsed.get_backend_name() in ("mysql", "mariadb"):
                options["isolation_level"] = "READ COMMITTED"  # no gap locks for the pop's locking read
            return sa.create_engine(parsed, pool_pre_ping=True, pool_recycle=3600, **options)
        engine = sa.create_engine(parsed, isolation_level="AUTOCOMMIT", pool_recycle=3600)
        if parsed.get_backend_name() == "postgresql" and not durable:
            @event.listens_for(engine, "connect")
            def relaxed(dbapi_connection: Any, record: Any) -> None:
                dbapi_connection.execute("SET synchronous_commit = off")
        return engine
    except ModuleNotFoundError as exc:
        extra = _EXTRAS.get(exc.name or "", None)
        hint = f"pip install 'eventbus[{extra}]'" if extra else f"install the {exc.name} package"
        raise MissingDependencyError(
            f"database URL {redact_url(url)!r} needs the {exc.name} driver: {hint}") from exc
    except sa.exc.NoSuchModuleError as exc:
        raise ConfigurationError(f"unknown database dialect in {redact_url(url)!r}: {exc}") from exc


def run_driver_sql(engine: Engine, sql: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Run one statement written for the DBAPI driver on a pooled connection of ``engine``, as
    ``Connection.exec_driver_sql`` would, and return its rows (none for a statement without).

    It goes straight to the driver's cursor: SQLAlchemy's execution context and result wrapping
    cost about as much client time as a loopback round trip, which is what the worker's
    reservation and a push are left with. Errors come out as SQLAlchemy raises them (a
    ``DBAPIError`` subclass; a lost connection is invalidated and says so), so :func:`guarded`
    and :func:`is_row_problem` treat them alike.
    """
    dialect = engine.dialect
    with engine.connect() as conn:
        dbapi_connection = conn.connection.dbapi_connection
        try:
            with dbapi_connection.cursor() as cursor:  # type: ignore[union-attr]
                cursor.execute(sql, params)
                return list(cursor.fetchall()) if cursor.description else []
        except dialect.loaded_dbapi.Error as exc:
            lost = dialect.is_disconnect(exc, dbapi_connection, None)
            if lost:
                conn.invalidate(exc)
            raise sa.exc.DBAPIError.instance(sql, params, exc, dialect.loaded_dbapi.Error,
                                             connection_invalidated=lost, dialect=dialect) from exc


def _create_private_file(path: str | None) -> None:
    """Create a new SQLite file readable by its owner only: it holds every queued payload.

    SQLite gives the ``-wal`` and ``-shm`` files it makes beside it the same permissions.
    """
    if not path or path == ":memory:" or path.startswith("file:") or os.path.exists(path):
        return
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass  # another process created it a moment ago
    except OSError as exc:
        raise ConfigurationError(f"cannot create the SQLite file {path!r}: {exc.strerror}") from exc


def _sqlite_immediate_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, begin transactions, and begin them IMMEDIATE (write lock)."""

    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None
        dbapi_connection.text_factory = _lenient_text
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def _lenient_text(data: bytes) -> str:
    """SQLite text as str, bytes that are not UTF-8 kept as surrogates (never an error)."""
    return data.decode("utf-8", "surrogateescape")


def server_clock(dialect: str) -> Any:
    """Seconds since the epoch by the database server's clock, as an SQL expression.

    Workers on several hosts stamp and compare reservations with one clock, so one whose clock
    runs ahead cannot take jobs that others still hold. SQLite's ``julianday('now')`` is read
    by the SQLite library itself, whatever the process's ``time.time`` says.
    """
    if dialect == "postgresql":
        return sa.cast(sa.extract("epoch", sa.func.now()), sa.Double)
    if dialect == "sqlite":
        return (sa.func.julianday("now") - 2440587.5) * 86400.0
    if dialect in ("mysql", "mariadb"):
        return sa.cast(sa.func.unix_timestamp(sa.func.now(sa.literal_column("6"))), sa.Double)
    return sa.literal(time.time(), sa.Double)  # an unknown dialect: this process's clock


def as_bytes(dialect: str, column: Any) -> Any:
    """``column`` (text) read as its stored bytes, which no text decoding can refuse."""
    if dialect == "postgresql":
        return sa.func.convert_to(column, sa.literal_column("'UTF8'"))
    return sa.cast(column, sa.LargeBinary)


_TRANSIENT_WORDS = ("deadlock", "lock wait timeout", "database is locked", "could not serialize")
TRANSIENT_RETRIES = 5


def is_transient(exc: BaseException) -> bool:
    """A deadlock or lock timeout: the transaction was rolled back and may simply run again."""
    return isinstance(exc, sa.exc.DBAPIError) and any(w in str(exc.orig).lower() for w in _TRANSIENT_WORDS)


def guarded(url: str, action: str, fn: Callable[[], T]) -> T:
    """Run ``fn``; retry it after a deadlock; a lost or refused connection becomes
    ConnectionUnavailableError (the message names the URL without its password)."""
    for attempt in range(TRANSIENT_RETRIES):
        try:
            return _translated(url, action, fn)
        except sa.exc.DBAPIError as exc:
            if not is_transient(exc) or attempt == TRANSIENT_RETRIES - 1:
                raise
            time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
    raise AssertionError("unreachable")


def _translated(url: str, action: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
        if _is_connection_problem(exc):
            raise ConnectionUnavailableError(
                f"cannot reach database at {redact_url(url)} ({action}): {_first_line(exc)}") from exc
        raise
    except sa.exc.DBAPIError as exc:
        if exc.connection_invalidated:
            raise ConnectionUnavailableError(
                f"lost the database connection to {redact_url(url)} ({action})") from exc
        raise


_CONNECTION_WORDS = ("connect", "connection", "server closed", "gone away", "unable to open",
                     "timeout expired", "terminating", "network", "broken pipe", "no route")


def is_row_problem(exc: BaseException) -> bool:
    """A statement failed for a reason that may lie in the data it met (a value out of range,
    bytes that are not text), not in the connection, a lock or a deadlock."""
    return (isinstance(exc, sa.exc.DBAPIError) and not is_transient(exc)
            and not _is_connection_problem(exc))


def _is_connection_problem(exc: sa.exc.DBAPIError) -> bool:
    text = str(exc.orig).lower()
    if any(w in text for w in _TRANSIENT_WORDS):
        return False
    return exc.connection_invalidated or any(w in text for w in _CONNECTION_WORDS)


def _first_line(exc: BaseException) -> str:
    return str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__


def ensure_tables(engine: Engine, metadata: sa.MetaData, tables: Iterable[sa.Table]) -> None:
    """Create ``tables`` if missing, once per process; tolerate a concurrent creator."""
    todo = [t for t in tables if (str(engine.url), t.name) not in _created]
    if not todo:
        return
    try:
        metadata.create_all(engine, tables=todo, checkfirst=True)
    except (sa.exc.ProgrammingError, sa.exc.OperationalError, sa.exc.IntegrityError) as exc:
        if "exist" not in str(exc).lower():  # another process created it a moment ago
            raise
    _created.update((str(engine.url), t.name) for t in todo)


def ensure_columns(engine: Engine, table: sa.Table, names: Iterable[str]) -> None:
    """Add columns that a table made by an older version lacks (once per process)."""
    key = (str(engine.url), f"{table.name}:{_ADDED}")
    if key in _created:
        return
    existing = {c["name"] for c in sa.inspect(engine).get_columns(table.name)}
    preparer = engine.dialect.identifier_preparer
    for name in names:
        if name in existing:
            continue
        kind = table.c[name].type.compile(dialect=engine.dialect)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text(f"ALTER TABLE {preparer.format_table(table)} "
                                     f"ADD COLUMN {preparer.quote(name)} {kind}"))
        except (sa.exc.ProgrammingError, sa.exc.OperationalError) as exc:
            if "duplicate" not in str(exc).lower() and "exist" not in str(exc).lower():
                raise  # not another process adding it a moment ago
    _created.add(key)


def insert_ignoring_duplicates(engine: Engine, table: sa.Table, key: str) -> Any:
    """An INSERT that skips rows whose ``key`` already exists, in the engine's dialect."""
    name = engine.dialect.name
    if name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        return pg_insert(table).on_conflict_do_nothing(index_elements=[key])
    if name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table).on_conflict_do_nothing(index_elements=[key])
    if name in ("mysql", "mariadb"):
        return sa.insert(table).prefix_with("IGNORE")
    return sa.insert(table)


def _forget_pools_in_child() -> None:
    """In a forked child: the pooled connections are the parent's (its sockets, its SQLite file
    handles); drop them unclosed, so that the child opens its own and the parent keeps its. The
    lock is made anew: another thread of the parent may have held it at the fork."""
    global _lock
    _lock = threading.Lock()
    for engine in list(_engines.values()):
        engine.dispose(close=False)


if hasattr(os, "register_at_fork"):  # where there is no fork, there is nothing to forget
    os.register_at_fork(after_in_child=_forget_pools_in_child)


def reset() -> None:
    with _lock:
        engines = list(_engines.values())
        _engines.clear()
        _created.clear()
    for engine in engines:
        engine.dispose()
