"""The state store: atomic key/value operations with expiry beside each connection's queues.

``eventbus.runtime.state(connection)`` gives a connection's store: Redis keys under the
connection's prefix, the ``eventbus_state`` table in a database connection's database, and for
drivers without a server of their own the embedded SQLite file. Workers keep their heartbeats,
metrics and paused queues there; add-ons use it for locks, rate limits and counters.
"""

from eventbus.state.base import MemoryStateStore, StateStore
from eventbus.state.database import EMBEDDED_SQLITE_URL, SqlStateStore
from eventbus.state.redis import RedisStateStore

__all__ = ["EMBEDDED_SQLITE_URL", "MemoryStateStore", "RedisStateStore", "SqlStateStore",
           "StateStore"]
