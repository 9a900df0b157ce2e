"""An idle worker's wait on a Redis Cluster: one blocking pop per queue, all at once.

On one server a worker blocks on the notify lists of all its queues with one ``BLPOP``. On a
cluster one command cannot span hash slots, and the queues of a worker live in different slots,
often on different masters; blocking on the first queue only left a push to any other queue
waiting until that ``BLPOP`` timed out (0.5-0.8 s instead of 2 ms; issue 27 point 8).

Here each queue gets its own connection to the master of its slot and its own ``BLPOP``, sent
together; the first reply ends the wait. The others are then cut short with ``CLIENT UNBLOCK``
(sent from a second connection to their node), which makes a blocked ``BLPOP`` return as if it
had timed out, so no connection is dropped and no wake-up token is taken and thrown away: a
``BLPOP`` that took one in the meantime returns it, and its queue counts as woken too. A node
that refuses ``CLIENT UNBLOCK`` (a managed server that renamed ``CLIENT``) has those connections
closed instead.

Connections are plain sockets (:mod:`eventbus.queue.redis.wire`), kept per node between waits.
A node that does not answer is left out of the wait (its queues are the worker's skipped ones,
see :mod:`eventbus.worker.outages`); a reply that is an error (a ``MOVED`` after a failover) counts
as a wake-up, so the reservation that follows, through the cluster client, meets it and refreshes
the client's map of the slots. ``rediss+cluster://`` (TLS) is not served here: such a worker blocks
on its first queue only, as before.
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from typing import Any

import redis

from eventbus.queue.redis import wire as redis_wire

Node = tuple[str, int]
#: Every read and write of these connections but the wait itself: a node answers these at once,
#: and a frozen one must not hold the worker for a whole command timeout per wait.
TIMEOUT_S = 1.0


def supports(url: str) -> bool:
    """Plain TCP (the URL of a cluster's first seed, as :mod:`redis_topology` writes it)."""
    return url.startswith("redis://")


class _Blocker:
    """One connection that sends ``BLPOP``: its node, and its client id for ``CLIENT UNBLOCK``."""

    def __init__(self, conn: redis_wire.Connection, node: Node) -> None:
        self.conn = conn
        self.node = node
        reply = conn.roundtrip([("CLIENT", "ID")])[0]
        self.client_id = None if isinstance(reply, Exception) else int(reply)


class ClusterWait:
    """Blocking waits on several queues of one cluster (see the module docstring)."""

    def __init__(self, options: dict[str, Any], *, name: str, margin_s: float = 10.0,
                 timeout_s: float = TIMEOUT_S) -> None:
        #: The data nodes' connection options (credentials, options) without host, port or db.
        self.options = {k: v for k, v in options.items() if k not in ("host", "port", "db", "path")}
        self.name = name
        self.margin_s = margin_s
        #: Every read and write but the wait itself (which select() bounds) gives up after this.
        self.timeout_s = timeout_s
        self._idle: dict[Node, list[_Blocker]] = {}
        self._control: dict[Node, redis_wire.Connection] = {}

    def wait(self, targets: Sequence[tuple[str, str, Node]], timeout: float) -> set[str]:
        """Block until one of the ``(queue, notify key, node)`` targets has a wake-up token or
        ``timeout`` passes; return the queues whose token was taken. Raises
        ``redis.ConnectionError`` when no node answers at all."""
        waiting: list[tuple[str, _Blocker]] = []
        failure: Exception | None = None
        for queue, key, node in targets:
            try:
                blocker = self._blocker(node)
                blocker.conn.send([("BLPOP", key, f"{max(timeout, 0.01):.3f}")])
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                failure = exc
                continue
            waiting.append((queue, blocker))
        if not waiting:
            raise failure or redis.ConnectionError("no queue to wait on")
        try:
            return self._first_reply(waiting, timeout + self.margin_s)
        except BaseException:  # interrupted (a stop signal): the pops are still pending
            for _, blocker in waiting:
                blocker.conn.close()
            raise

    def _first_reply(self, waiting: list[tuple[str, _Blocker]], limit_s: float) -> set[str]:
        ready, _, _ = select.select([b.conn.sock for _, b in waiting], [], [], limit_s)
        if not ready:  # the server did not answer within the pops' own timeout and more
            for _, blocker in waiting:
                blocker.conn.close()
            raise redis.TimeoutError("timed out waiting for a blocking pop")
        woken: set[str] = set()
        done = [(q, b) for q, b in waiting if b.conn.sock in ready]
        pending = [(q, b) for q, b in waiting if b.conn.sock not in ready]
        for queue, blocker in done:
            if self._took_token(blocker):
                woken.add(queue)
        self._unblock([b for _, b in pending])
        for queue, blocker in pending:
            if not blocker.conn.broken and self._took_token(blocker):
                woken.add(queue)
        for _, blocker in waiting:
            if not blocker.conn.broken:
                self._idle.setdefault(blocker.node, []).append(blocker)
        return woken

    @staticmethod
    def _took_token(blocker: _Blocker) -> bool:
        """Read the pop's reply: a token (or an error, which the reservation after it will meet
        through the cluster client) wakes its queue; nil (timed out, or cut short) does not."""
        try:
            reply = blocker.conn.read(1)[0]
        except (redis.ConnectionError, redis.TimeoutError):
            return False
        return reply is not None

    def _unblock(self, blockers: Sequence[_Blocker]) -> None:
        """``CLIENT UNBLOCK`` each pending pop, one request per node; close what cannot be."""
        by_node: dict[Node, list[_Blocker]] = {}
        for blocker in blockers:
            by_node.setdefault(blocker.node, []).append(blocker)
        for node, group in by_node.items():
            ids = [b.client_id for b in group]
            try:
                if None in ids:
                    raise redis.ResponseError("CLIENT ID was refused")
                control = self._control_for(node)
                replies = control.roundtrip([("CLIENT", "UNBLOCK", i) for i in ids])
                if any(isinstance(r, Exception) for r in replies):
                    raise redis.ResponseError(str(replies))
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                for blocker in group:
                    blocker.conn.close()
                continue

    def _blocker(self, node: Node) -> _Blocker:
        idle = self._idle.get(node)
        while idle:
            blocker = idle.pop()
            if not blocker.conn.stale:
                return blocker
        return _Blocker(self._connect(node), node)

    def _control_for(self, node: Node) -> redis_wire.Connection:
        conn = self._control.get(node)
        if conn is None or conn.stale:
            conn = self._control[node] = self._connect(node)
        return conn

    def _connect(self, node: Node) -> redis_wire.Connection:
        return redis_wire.Connection.to({**self.options, "host": node[0], "port": node[1]}, self.timeout_s, self.name)

    def close(self) -> None:
        for group in self._idle.values():
            for blocker in group:
                blocker.conn.close()
        for conn in self._control.values():
            conn.close()
        self._idle.clear()
        self._control.clear()
