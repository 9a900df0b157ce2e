"""Which recent-jobs repository keeps a connection's finished jobs: the one for its state
store's class (Redis keys beside its state, tables beside its state table, memory).

The same table as :mod:`eventbus.batching.stores`: the built-in stores are named by their
dotted class name, so neither redis-py nor SQLAlchemy is imported before a connection of that
kind is used; another state store registers its repository with :func:`register_repository`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from eventbus import runtime
from eventbus.state import MemoryStateStore, StateStore
from eventbus.state.base import registered_for
from eventbus.tracking.repository import JobRepository, MemoryJobRepository

Factory = Callable[[Any, str], JobRepository]


def register_repository(state_class: type[StateStore], factory: Factory) -> None:
    """Keep the recent jobs of connections whose state store is a ``state_class`` in
    ``factory(store, connection)``."""
    tables = runtime.registries()
    with tables.lock:
        tables.job_repositories[state_class] = factory


def _factory_for(state: StateStore) -> Factory:
    tables = runtime.registries()
    found = registered_for(state, tables.job_repositories, tables.job_repositories_by_name)
    if found is None:
        raise TypeError(f"no recent-jobs repository for a {type(state).__name__}: register one with "
                        "eventbus.tracking.stores.register_repository")
    return cast(Factory, found)


def repository(connection: str | None = None) -> JobRepository:
    """The recent-jobs repository of the named (or default) connection, built once per state store."""
    name = connection or runtime.settings().default
    state = runtime.state(name)
    built = runtime.cache(__name__)  # dropped with the connections: no reset of its own
    found = built.get((id(state), name))
    if found is None or found[0] is not state:
        found = built[(id(state), name)] = (state, _factory_for(state)(state, name))
    return found[1]


@runtime.on_migrate
def _migrate() -> list[str]:
    """``eventbus migrate``: the recent-jobs tables of every connection that has workers."""
    lines = []
    for name in runtime.connection_names(with_workers=True):
        try:
            made = repository(name).migrate()
        except TypeError:  # a state store that keeps no recent jobs
            continue
        if made:
            lines.append(f"{name}: recent jobs {', '.join(made)} ready")
    return lines


def _redis_repository(state: Any, connection: str) -> JobRepository:
    # Imported here so that ``import eventbus`` does not load redis-py (or SQLAlchemy below).
    from eventbus.tracking.redis import RedisJobRepository

    return RedisJobRepository(state.redis, state.base, connection)


def _sql_repository(state: Any, connection: str) -> JobRepository:
    from eventbus.tracking.sql import SqlJobRepository

    return SqlJobRepository(state.url, connection, state.table.name)


register_repository(MemoryStateStore, lambda state, connection: MemoryJobRepository(connection))
runtime.registries().job_repositories_by_name.update({
    # keyed by the store class's dotted name so that neither redis-py nor SQLAlchemy is
    # imported before a connection of that kind is used
    "eventbus.state.redis.RedisStateStore": _redis_repository,
    "eventbus.state.database.SqlStateStore": _sql_repository,
})
