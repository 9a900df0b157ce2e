"""Which batch repository keeps a connection's batches: the one for its state store's class.

Batches live where the connection keeps its state: beside its queues on Redis, in its database
on SQL, in the embedded SQLite file for drivers without a server of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from eventbus import runtime
from eventbus.batching.repository import BatchRepository, MemoryBatchRepository
from eventbus.state import MemoryStateStore, StateStore
from eventbus.state.base import registered_for

Factory = Callable[[Any], BatchRepository]


def register_repository(state_class: type[StateStore], factory: Factory) -> None:
    """Keep the batches of connections whose state store is a ``state_class`` in ``factory(store)``."""
    tables = runtime.registries()
    with tables.lock:
        tables.batch_repositories[state_class] = factory


def _factory_for(state: StateStore) -> Factory:
    tables = runtime.registries()
    found = registered_for(state, tables.batch_repositories, tables.batch_repositories_by_name)
    if found is None:
        raise TypeError(f"no batch repository for a {type(state).__name__}: register one with "
                        "eventbus.batching.stores.register_repository")
    return cast(Factory, found)


def repository(connection: str | None = None) -> BatchRepository:
    """The batch repository of the named (or default) connection, built once per state store."""
    state = runtime.state(connection)
    built = runtime.cache(__name__)  # dropped with the connections: no reset of its own
    found = built.get(id(state))
    if found is None or found[0] is not state:
        found = built[id(state)] = (state, _factory_for(state)(state))
    return found[1]


@runtime.on_migrate
def _migrate() -> list[str]:
    """``eventbus migrate``: the batch tables of every connection that has workers."""
    lines = []
    for name in runtime.connection_names(with_workers=True):
        made = repository(name).migrate()
        if made:
            lines.append(f"{name}: batches {', '.join(made)} ready")
    return lines


def _redis_repository(state: Any) -> BatchRepository:
    # Imported here so that ``import eventbus`` does not load redis-py (or SQLAlchemy below).
    from eventbus.batching.redis import RedisBatchRepository

    return RedisBatchRepository(state.redis, state.base, name=state.name)


def _sql_repository(state: Any) -> BatchRepository:
    from eventbus.batching.sql import SqlBatchRepository

    return SqlBatchRepository(state.url, state.table.name)


register_repository(MemoryStateStore, lambda state: MemoryBatchRepository())
runtime.registries().batch_repositories_by_name.update({
    # keyed by the store class's dotted name so that neither redis-py nor SQLAlchemy is
    # imported before a connection of that kind is used
    "eventbus.state.redis.RedisStateStore": _redis_repository,
    "eventbus.state.database.SqlStateStore": _sql_repository,
})
