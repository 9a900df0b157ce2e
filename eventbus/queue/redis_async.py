"""Pushing to Redis from an event loop: ``redis.asyncio``, one client per running loop.

:meth:`RedisQueue.apush <eventbus.queue.redis.RedisQueue.apush>`, ``alater`` and ``abulk`` land
here, so ``await eventbus.adispatch(job)`` never blocks the loop nor hops to a thread. The pushes
are the sync driver's: the same scripts (``push.lua``, ``push_many.lua``) with the keys and
arguments the queue builds for its own push, sent with ``EVALSHA`` and loaded first when the
server does not know them (after a restart or ``SCRIPT FLUSH``).

What the sync driver promises holds here too. A push is idempotent by uuid, so one whose
connection was lost (``redis.TimeoutError`` included) is sent again, a few times, before it
fails with the same :class:`~eventbus.errors.ConnectionUnavailableError`; the client itself
never retries a command on its own.

Clients: a client of ``redis.asyncio`` belongs to the loop it first ran on, so every loop gets
its own (:class:`eventbus.aio.PerLoop`), closed on that loop when the loop shuts down. Each has a
bounded pool: a burst of concurrent pushes queues for :data:`MAX_CONNECTIONS` connections
instead of opening one socket per push.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from importlib import resources
from typing import Any, TypeVar

import redis
import redis.asyncio
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from eventbus.aio import PerLoop
from eventbus.errors import ConnectionUnavailableError
from eventbus.queue.redis_errors import LOST_CONNECTION, unavailable

T = TypeVar("T")
#: What counts as a lost connection (as for the sync driver): the push is sent again.
#: Connections one loop's client opens at most; more concurrent pushes wait for a free one.
MAX_CONNECTIONS = 32
#: How often a push is sent across lost connections before it fails.
ATTEMPTS = 3


def _script(name: str) -> str:
    return resources.files("eventbus.queue").joinpath(f"lua/{name}.lua").read_text()


@dataclasses.dataclass
class LoopClient:
    """One loop's client and the scripts registered on it."""

    redis: Any
    push: Any
    push_many: Any

    async def aclose(self) -> None:
        await self.redis.aclose()


def async_client_for(url: str, *, socket_timeout_s: float, name: str, cluster: bool = False) -> Any:
    """A ``redis.asyncio`` client that never retries on its own, with a bounded pool.

    Waiting for a free connection has no deadline of its own: every command on the connections
    it waits for gives up after ``socket_timeout_s``.
    """
    options: dict[str, Any] = {"client_name": name, "retry": Retry(NoBackoff(), 0),
                               "socket_timeout": socket_timeout_s, "socket_connect_timeout": 5.0}
    if cluster:
        return RedisCluster.from_url(url, max_connections=MAX_CONNECTIONS, **options)
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url, max_connections=MAX_CONNECTIONS, timeout=None, health_check_interval=30, **options)
    return redis.asyncio.Redis.from_pool(pool)


class AsyncPusher:
    """The async push of one Redis connection: scripts run on the running loop's own client."""

    def __init__(self, url: str, connection_name: str, *, cluster: bool, socket_timeout_s: float,
                 chunk: int) -> None:
        self.url = url
        self.connection_name = connection_name
        self.cluster = cluster
        self.socket_timeout_s = socket_timeout_s
        self.chunk = chunk
        self.clients: PerLoop[LoopClient] = PerLoop(self._client, LoopClient.aclose)

    def _client(self) -> LoopClient:
        client = async_client_for(self.url, socket_timeout_s=self.socket_timeout_s,
                                  name=f"eventbus:{self.connection_name}", cluster=self.cluster)
        return LoopClient(client, client.register_script(_script("push")),
                          client.register_script(_script("push_many")))

    async def push(self, keys: Sequence[str], args: Sequence[Any]) -> str:
        """Run ``push.lua`` with ``keys``/``args`` as :meth:`RedisQueue._push_args` builds them."""
        await self._idempotent("push", lambda c: c.push(keys=keys, args=args))
        return str(args[0])

    async def bulk(self, keys: Sequence[str], items: Sequence[tuple[str, str, int]]) -> list[str]:
        """Run ``push_many.lua`` once per ``chunk`` of ``(uuid, body, attempts)`` items."""
        for start in range(0, len(items), self.chunk):
            args = [value for item in items[start:start + self.chunk] for value in item]

            def push_chunk(c: LoopClient, chunk: list[Any] = args) -> Awaitable[Any]:
                return c.push_many(keys=keys, args=chunk)  # type: ignore[no-any-return]

            await self._idempotent("bulk push", push_chunk)
        return [uuid for uuid, _, _ in items]

    async def _call(self, action: str, call: Callable[[LoopClient], Awaitable[T]]) -> T:
        try:
            return await call(await self.clients.get())
        except LOST_CONNECTION as exc:
            raise unavailable(self.url, self.connection_name, action, exc) from exc

    async def _idempotent(self, action: str, call: Callable[[LoopClient], Awaitable[T]]) -> T:
        """Send an idempotent call again across a lost connection, a few times, backing off."""
        for attempt in range(ATTEMPTS):
            try:
                return await self._call(action, call)
            except ConnectionUnavailableError:
                if attempt == ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")
