"""The eventbus tables as SQLAlchemy metadata, for Alembic.

Alembic's autogenerate compares the database with the app's metadata and proposes dropping every
table it does not know, the eventbus tables among them. Either include them in the migrations::

    # env.py
    import notifications.store
    from eventbus.contrib.sqlalchemy import sql_metadata

    target_metadata = [Base.metadata, sql_metadata(notifications.store.metadata, url=DATABASE_URL)]

or keep them out of Alembic's sight (``eventbus migrate`` creates them)::

    context.configure(..., include_object=skip_eventbus_tables(notifications.store.metadata))
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa

from eventbus import runtime
from eventbus.batching.stores import repository as batch_repository
from eventbus.queue.database import DatabaseQueue
from eventbus.queue.drivers import driver_class
from eventbus.tracking.stores import repository as tracking_repository

IncludeObject = Callable[[Any, str | None, str, bool, Any], bool]


def _database(url: str) -> tuple[str, str | None, int | None, str | None]:
    """What identifies a database in a URL: backend, host, port, database (a SQLite path absolute)."""
    parsed = sa.make_url(url)
    name = parsed.database
    if parsed.get_backend_name() == "sqlite" and name and name != ":memory:":
        name = os.path.abspath(name)
    return parsed.get_backend_name(), parsed.host, parsed.port, name


def _eventbus_tables() -> Iterator[tuple[str, sa.MetaData]]:
    """(database URL, metadata) of every SQL table the configured connections and store use."""
    current = runtime.settings()
    for name in runtime.connection_names():
        if issubclass(driver_class(current.connections[name]["driver"]), DatabaseQueue):
            queue = runtime.connection(name)
            yield str(getattr(queue, "url")), getattr(queue, "metadata")
            for beside in (runtime.state(name), batch_repository(name), tracking_repository(name)):
                if isinstance(getattr(beside, "metadata", None), sa.MetaData):
                    yield str(getattr(beside, "url")), getattr(beside, "metadata")
    store = runtime.failed_store()
    metadata = getattr(store, "metadata", None)
    if isinstance(metadata, sa.MetaData):
        yield str(getattr(store, "url")), metadata


def sql_metadata(*also: sa.MetaData, url: str | None = None) -> sa.MetaData:
    """One ``MetaData`` with the tables eventbus keeps in SQL databases (Alembic's target).

    It has the jobs tables of every connection whose driver keeps jobs in a database, the
    ``eventbus_signals``, ``eventbus_state``, batch and recent-jobs tables beside them, and ``failed_jobs``
    when failed jobs live in one;
    then the tables of ``also`` (the add-ons': ``notifications.store.metadata``). With ``url``,
    only the eventbus tables that live in that database (the tables of ``also`` are always
    included). Read from the current configuration: call it after ``eventbus.configure``.
    """
    target = sa.MetaData()
    wanted = _database(url) if url is not None else None
    for owner, metadata in _eventbus_tables():
        if wanted is None or _database(owner) == wanted:
            _copy(metadata, target)
    for metadata in also:
        _copy(metadata, target)
    return target


def _copy(source: sa.MetaData, target: sa.MetaData) -> None:
    for table in source.tables.values():
        if table.key not in target.tables:
            table.to_metadata(target)


def skip_eventbus_tables(*also: sa.MetaData) -> IncludeObject:
    """An Alembic ``include_object`` hook that leaves the eventbus tables alone.

    Autogenerate neither creates nor drops them (nor their indexes); ``eventbus migrate`` owns
    them. ``also`` adds the add-ons' tables (``notifications.store.metadata``). The names are
    read from the configuration on first use.
    """
    names: set[str] | None = None

    def include_object(obj: Any, name: str | None, type_: str, reflected: bool,
                       compare_to: Any) -> bool:
        nonlocal names
        if names is None:
            names = set(sql_metadata(*also).tables)
        table_name = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", None)
        return table_name not in names

    return include_object
