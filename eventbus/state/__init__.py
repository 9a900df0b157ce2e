"""The state store: atomic key/value operations with expiry beside each connection's queues.

``eventbus.runtime.state(connection)`` gives a connection's store: Redis keys under the
connection's prefix, the ``eventbus_state`` table in a database connection's database, and for
drivers without a server of their own the embedded SQLite file. Workers keep their heartbeats,
metrics and paused queues there; add-ons use it for locks, rate limits and counters.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from eventbus.state.base import MemoryStateStore, StateStore

if TYPE_CHECKING:
    from eventbus.state.database import EMBEDDED_SQLITE_URL, SqlStateStore
    from eventbus.state.redis import RedisStateStore

#: Names whose modules need a client library (SQLAlchemy, redis-py): imported on first use.
_LAZY = {"EMBEDDED_SQLITE_URL": "eventbus.state.database", "SqlStateStore": "eventbus.state.database",
         "RedisStateStore": "eventbus.state.redis"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["EMBEDDED_SQLITE_URL", "MemoryStateStore", "RedisStateStore", "SqlStateStore",
           "StateStore"]
