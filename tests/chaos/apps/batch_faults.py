"""Crash points for the batch scenarios, armed by ``CHAOS_BATCH_FAULT`` in a worker process.

``kill-worker@N``: the worker SIGKILLs itself right after its N-th write to batch state has
been answered by the store. ``kill-redis@N``: it kill -9s the Redis server (``CHAOS_REDIS_PID``)
at that moment instead, and carries on. A write to batch state is a Redis write command naming a
``batch:`` key, or an SQL transaction that wrote to a batch table or a ``batch:`` row, counted
when its commit returns. The count is made below the library (redis-py's ``execute_command``,
SQLAlchemy's commit), so it names the same moments whatever the batch code looks like: before
the fix, between any two of the separate writes one outcome took; after it, around the one
atomic step and the marks that follow the pushes.
"""

from __future__ import annotations

import os
import signal
from typing import Any

ENV = "CHAOS_BATCH_FAULT"
_WRITES = frozenset({
    "SET", "SETNX", "SETEX", "PSETEX", "INCR", "INCRBY", "INCRBYFLOAT", "DECR", "DECRBY", "HSET",
    "HSETNX", "HMSET", "HDEL", "HINCRBY", "HINCRBYFLOAT", "DEL", "UNLINK", "EVAL", "EVALSHA",
    "RPUSH", "LPUSH", "LREM", "SADD", "SREM", "ZADD", "ZREM", "EXPIRE", "PEXPIRE", "FCALL",
})
_state = {"count": 0, "fired": False}


def _names_batch_key(args: tuple[Any, ...]) -> bool:
    return any(b"batch:" in (a if isinstance(a, bytes) else str(a).encode()) for a in args[1:])


def _fire(action: str) -> None:
    if _state["fired"]:
        return
    _state["fired"] = True
    if action == "kill-worker":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "kill-redis":
        os.kill(int(os.environ["CHAOS_REDIS_PID"]), signal.SIGKILL)
    else:
        raise ValueError(f"unknown batch fault {action!r}")


def _counted(action: str, at: int) -> None:
    _state["count"] += 1
    if _state["count"] == at:
        _fire(action)


def install() -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    action, _, number = spec.partition("@")
    at = int(number)
    _install_redis(action, at)
    _install_sql(action, at)


def _install_redis(action: str, at: int) -> None:
    import redis

    original = redis.Redis.execute_command

    def execute_command(self: Any, *args: Any, **options: Any) -> Any:
        result = original(self, *args, **options)
        if str(args[0]).upper() in _WRITES and _names_batch_key(args):
            _counted(action, at)
        return result

    redis.Redis.execute_command = execute_command  # type: ignore[method-assign]


def _install_sql(action: str, at: int) -> None:
    import sqlalchemy as sa
    from sqlalchemy.engine import Connection

    @sa.event.listens_for(sa.engine.Engine, "after_cursor_execute")
    def note_batch_write(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                         executemany: bool) -> None:
        text = statement.lstrip().upper()
        if not text.startswith(("INSERT", "UPDATE", "DELETE")):
            return
        if "BATCH" in text or "batch:" in repr(parameters):
            conn.info["batch_write"] = True

    @sa.event.listens_for(sa.engine.Engine, "rollback")
    def forget_batch_write(conn: Any) -> None:
        conn.info.pop("batch_write", None)

    original = Connection._commit_impl

    def commit(self: Any) -> None:
        original(self)
        if self.info.pop("batch_write", False):
            _counted(action, at)

    Connection._commit_impl = commit  # type: ignore[method-assign]
