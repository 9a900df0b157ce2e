"""Pushing to Redis from an event loop: ``redis.asyncio``, one client per running loop.

:meth:`RedisQueue.apush <eventbus.queue.redis.RedisQueue.apush>`, ``alater`` and ``abulk`` land
here, so ``await eventbus.adispatch(job)`` never blocks the loop nor hops to a thread. The pushes
are the sync driver's: the same scripts (``push.lua``, ``push_many.lua``) with the keys and
arguments the queue builds for its own push, sent with ``EVALSHA`` and loaded first when the
server does not know them (after a restart or ``SCRIPT FLUSH``).

What the sync driver promises holds here too. A push is idempotent by uuid, so one whose
connection was lost (``redis.TimeoutError`` included) is sent again, a few times, before it
fails with the same :class:`~eventbus.errors.ConnectionUnavailableError`; the client itself
never retries a command on its own. A script the server does not know is sent with ``EVAL``
(redis-py's own script objects would ``SCRIPT LOAD`` it first, on every master of a cluster, which
fails while one of them is down). With ``wait_replicas`` the push is followed, on the same
connection, by ``WAIT``, and :class:`~eventbus.errors.NotReplicatedError` says when too few
replicas acknowledged it.

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
from redis._parsers.commands import AsyncCommandsParser
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError

from eventbus.aio import PerLoop
from eventbus.errors import ConnectionUnavailableError, NotReplicatedError
from eventbus.queue.redis import replication as redis_replication
from eventbus.queue.redis import topology as redis_topology
from eventbus.queue.redis.errors import LOST_CONNECTION, unavailable
from eventbus.queue.redis.wire import Script

T = TypeVar("T")
#: Connections one loop's client opens at most; more concurrent pushes wait for a free one.
MAX_CONNECTIONS = 32
#: How often a push is sent across lost connections before it fails.
ATTEMPTS = 3


@dataclasses.dataclass
class LoopClient:
    """One loop's client."""

    redis: Any

    async def aclose(self) -> None:
        await self.redis.aclose()


def async_client_for(topology: redis_topology.Topology, *, socket_timeout_s: float, name: str) -> Any:
    """A ``redis.asyncio`` client for ``topology`` that never retries on its own, with a bounded
    pool (a cluster: per node; Sentinel: redis-py's own pool).

    Waiting for a free connection has no deadline of its own: every command on the connections
    it waits for gives up after ``socket_timeout_s``.
    """
    options: dict[str, Any] = {"client_name": name, "retry": Retry(NoBackoff(), 0),
                               "socket_timeout": socket_timeout_s, "socket_connect_timeout": 5.0}
    if topology.kind == redis_topology.CLUSTER:
        seeds = [ClusterNode(host, port) for host, port in topology.nodes[1:]]
        client = RedisCluster.from_url(topology.url, startup_nodes=seeds, max_connections=MAX_CONNECTIONS,
                                       **options)
        client.commands_parser = LiveCommandsParser(client)
        return client
    options.update(redis_topology.driver_identity())
    if topology.kind == redis_topology.SENTINEL:
        return redis_topology.sentinel_manager(topology, Sentinel, options).master_for(topology.service)
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        topology.url, max_connections=MAX_CONNECTIONS, timeout=None, health_check_interval=30, **options)
    return redis.asyncio.Redis.from_pool(pool)


class LiveCommandsParser(AsyncCommandsParser):
    """Asks ``COMMAND`` of the first master that answers while the cluster client starts.

    redis-py's asyncio cluster client asks its default node only, the master of slot 0, and
    cannot start while that master is down: no async push would reach the cluster's other
    masters (the sync client tries other masters too, see ``redis_topology.ClusterClient``).
    """

    def __init__(self, cluster: RedisCluster) -> None:
        super().__init__()
        self.cluster = cluster

    async def initialize(self, node: Any = None) -> None:
        failure: BaseException | None = None
        for candidate in [node, *self.cluster.get_primaries()]:
            if candidate is None:
                continue
            try:
                await super().initialize(candidate)
                return
            except LOST_CONNECTION as exc:
                failure = exc
        raise failure or redis.ConnectionError("no master of the cluster answers")


_SCRIPTS: dict[str, Script] = {}


def _script(name: str) -> Script:
    if name not in _SCRIPTS:
        _SCRIPTS[name] = Script(resources.files("eventbus.queue").joinpath(f"lua/{name}.lua").read_text())
    return _SCRIPTS[name]


class AsyncPusher:
    """The async push of one Redis connection: scripts run on the running loop's own client."""

    def __init__(self, topology: redis_topology.Topology, connection_name: str, *, socket_timeout_s: float,
                 chunk: int, wait_replicas: int = 0, wait_timeout_ms: int = 1000, url: str = "") -> None:
        self.topology = topology
        #: The connection's URL as configured, for messages.
        self.url = url or topology.url
        self.connection_name = connection_name
        self.socket_timeout_s = socket_timeout_s
        self.chunk = chunk
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self.clients: PerLoop[LoopClient] = PerLoop(self._client, LoopClient.aclose)

    def _client(self) -> LoopClient:
        return LoopClient(async_client_for(self.topology, socket_timeout_s=self.socket_timeout_s,
                                           name=f"eventbus:{self.connection_name}"))

    async def push(self, keys: Sequence[str], args: Sequence[Any]) -> str:
        """Run ``push.lua`` with ``keys``/``args`` as :meth:`RedisQueue._push_args` builds them."""
        await self._idempotent("push", lambda c: self._run(c, "push", keys, args))
        return str(args[0])

    async def bulk(self, keys: Sequence[str], items: Sequence[tuple[str, str, int]]) -> list[str]:
        """Run ``push_many.lua`` once per ``chunk`` of ``(uuid, body, attempts)`` items."""
        for start in range(0, len(items), self.chunk):
            args = [value for item in items[start:start + self.chunk] for value in item]

            def push_chunk(c: LoopClient, chunk: list[Any] = args) -> Awaitable[Any]:
                return self._run(c, "push_many", keys, chunk)

            await self._idempotent("bulk push", push_chunk)
        return [uuid for uuid, _, _ in items]

    async def _run(self, client: LoopClient, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        """``EVALSHA``, ``EVAL`` when the server lacks the script (NOSCRIPT: it did not run);
        with ``wait_replicas``, ``WAIT`` after it on the same connection."""
        script = _script(name)
        if not self.wait_replicas:
            try:
                return await client.redis.evalsha(script.sha, len(keys), *keys, *args)
            except NoScriptError:
                return await client.redis.eval(script.source, len(keys), *keys, *args)
        for command in ("EVALSHA", "EVAL"):
            pipe = client.redis.pipeline(transaction=False)
            pipe.execute_command(command, script.sha if command == "EVALSHA" else script.source, len(keys),
                                 *keys, *args)
            pipe.execute_command(*redis_replication.wait_command(self.wait_replicas, self.wait_timeout_ms))
            reply, acked = await pipe.execute(raise_on_error=False)
            if not isinstance(reply, NoScriptError):
                break
        if isinstance(reply, Exception):
            raise reply
        redis_replication.judge(acked, self.wait_replicas, self.wait_timeout_ms, str(args[0]), self.connection_name)
        return reply

    async def _call(self, action: str, call: Callable[[LoopClient], Awaitable[T]]) -> T:
        try:
            return await call(await self.clients.get())
        except LOST_CONNECTION as exc:
            raise unavailable(self.url, self.connection_name, action, exc) from exc

    async def _idempotent(self, action: str, call: Callable[[LoopClient], Awaitable[T]]) -> T:
        """Send an idempotent call again across a lost connection, a few times, backing off (not a
        push that was not replicated in time: see the sync driver)."""
        for attempt in range(ATTEMPTS):
            try:
                return await self._call(action, call)
            except NotReplicatedError:
                raise
            except ConnectionUnavailableError:
                if attempt == ATTEMPTS - 1:
                    raise
                await asyncio.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")
