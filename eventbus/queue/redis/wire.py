"""The Redis driver's hot path: one script call per request, on a connection of its own.

redis-py 8 runs every command through its pool, retry, observability and response-callback
layers: about 19 µs of CPU per ``EVALSHA`` on this project's benchmark machine, against 8.4 µs
for the same call packed by hiredis and written to a redis-py connection held here
(``benchmarks/redis_paths.py``; the socket client of this project's own that this replaced took
7.6 µs, a difference of about 3% of a dispatch). That difference is most of a dispatch and a
third of a worker's turn, so the calls made once per job (push, reserve) come here; everything
else stays on redis-py.

The connection itself is redis-py's, made from the same pool options as the driver's client:
TLS (``rediss://``), Unix sockets, credentials, the client name, timeouts, and for Sentinel the
master the sentinels name (redis-py's ``SentinelManagedConnection``, which drops a connection to
a demoted master). Errors are redis-py's. What is skipped is the pool (one connection per thread
and process here; a forked child opens its own), retries (the driver decides what a lost
connection means) and response callbacks (the scripts' replies are read as they are).
``EVALSHA`` falls back to ``EVAL`` when the server lost its scripts. Clusters use redis-py
throughout (:func:`supports`): a command goes to the node of its slot.

Pipelining: :meth:`Wire.pipeline` writes several commands at once and reads their replies in
order, which is how a worker's blocking wait carries the reservation that follows it (see
``RedisQueue.wait_and_reserve``).
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import hiredis
import redis
from redis.connection import AbstractConnection
from redis.exceptions import NoScriptError


def supports(url: str, cluster: bool) -> bool:
    """Whether the hot path can serve ``url``: one server (TCP, TLS or a Unix socket) or a
    Sentinel's master, not a cluster (whose commands go to the node of their slot)."""
    return not cluster


def no_script(reply: Any) -> bool:
    """Whether an error reply is NOSCRIPT (the server lost its scripts: the call did not run)."""
    return isinstance(reply, NoScriptError) or (isinstance(reply, Exception) and str(reply).startswith("NOSCRIPT"))


#: How long opening a connection may take.
CONNECT_TIMEOUT_S = 5.0


class Script:
    """A Lua script known by its SHA1, as the server keeps it."""

    __slots__ = ("source", "sha")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()


#: Counts the forks of this process's line: a connection made before a fork is not used after it
#: (the parent's socket would be shared), and comparing this is cheaper than ``os.getpid()``,
#: a system call, on every command.
_forks = 0  # module-level: a fork happens to the process, whatever its configuration


def _forked() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):  # where there is no fork, there is nothing to count
    os.register_at_fork(after_in_child=_forked)


@functools.cache
def _parameters(kind: type) -> frozenset[str]:
    """The keyword arguments a redis-py connection class takes (its own and its base's)."""
    names: set[str] = set()
    for klass in kind.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None:
            names.update(inspect.signature(init).parameters)
    return frozenset(names - {"self", "args", "kwargs"})


class Connection:
    """One redis-py connection written to and read from directly: redis-py makes it (the socket,
    TLS, a Unix socket, credentials, Sentinel's lookup of the master, the handshake) and reads
    its replies with hiredis; the pool, the retries and the response callbacks are skipped.
    Closed for good on any error but an error reply."""

    def __init__(self, conn: AbstractConnection) -> None:
        self.forks = _forks
        self.conn = conn
        self.broken = False
        try:
            conn.connect()  # type: ignore[no-untyped-call]
        except BaseException:
            self.close()
            raise

    @classmethod
    def to(cls, options: dict[str, Any], timeout: float | None, name: str) -> Connection:
        """A connection to one node made from redis-py URL options (``host``/``port`` or ``path``)."""
        kind: Any = redis.UnixDomainSocketConnection if options.get("path") else redis.Connection
        accepted = _parameters(kind)
        given = {k: v for k, v in options.items() if k in accepted}  # a URL's other options are not the socket's
        return cls(kind(**{**given, "socket_timeout": timeout, "socket_connect_timeout": CONNECT_TIMEOUT_S,
                           "client_name": name}))

    @property
    def sock(self) -> Any:
        """The socket, for ``select()`` over several connections."""
        return self.conn._sock

    def roundtrip(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Write every command, then read one reply each (error replies come back as values)."""
        self.send(commands)
        return self.read(len(commands))

    def send(self, commands: Sequence[Sequence[Any]]) -> None:
        """Write the commands without reading their replies (:meth:`read` does)."""
        try:
            if len(commands) == 1:  # most requests: one script call
                self.conn.send_packed_command([hiredis.pack_command(tuple(commands[0]))],  # type: ignore[no-untyped-call]
                                              check_health=False)
            else:
                self.conn.send_packed_command(  # type: ignore[no-untyped-call]
                    [b"".join(hiredis.pack_command(tuple(c)) for c in commands)], check_health=False)
        except BaseException:  # redis-py closed it (a lost socket, a signal mid-write)
            self.close()
            raise

    def read(self, count: int = 1) -> list[Any]:
        """The next ``count`` replies (error replies come back as values)."""
        replies: list[Any] = []
        try:
            while len(replies) < count:
                try:
                    replies.append(self.conn.read_response())
                except redis.ResponseError as exc:  # a whole reply was read: the stream is in step
                    replies.append(exc)
        except BaseException:  # interrupted mid-reply, or lost: the stream is out of step now
            self.close()
            raise
        return replies

    @property
    def stale(self) -> bool:
        """Closed, or made before a fork of this process (the parent's socket): open a new one."""
        return self.broken or self.forks != _forks

    def close(self) -> None:
        self.broken = True
        try:
            self.conn.disconnect()  # type: ignore[no-untyped-call]
        except Exception:  # noqa: BLE001 - closing what is lost already
            pass


class Wire:
    """Connections to one Redis URL for the hot path, one per thread (and per process)."""

    def __init__(self, url: str, *, timeout: float | None, name: str,
                 pool: redis.ConnectionPool | None = None) -> None:
        #: How redis-py would connect: the URL's pool (or the client's own, for Sentinel).
        self.pool = pool if pool is not None else redis.ConnectionPool.from_url(url)
        self.timeout = timeout
        self.name = name
        self._local = threading.local()

    def _connection(self) -> Connection:
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None or conn.stale:
            kwargs = {**self.pool.connection_kwargs, "socket_timeout": self.timeout,
                      "socket_connect_timeout": CONNECT_TIMEOUT_S, "client_name": self.name}
            conn = Connection(self.pool.connection_class(**kwargs))
            self._local.conn = conn
        return conn

    def call(self, *command: Any) -> Any:
        """One command; an error reply raises (redis.ResponseError)."""
        reply = self._connection().roundtrip([command])[0]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def run(self, script: Script, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """``EVALSHA``, or ``EVAL`` when the server does not have the script (a restart, a
        ``SCRIPT FLUSH``): a NOSCRIPT reply means it did not run, so sending it again is safe."""
        try:
            return self.call("EVALSHA", script.sha, len(keys), *keys, *args)
        except redis.ResponseError as exc:
            if not no_script(exc):
                raise
        return self.call("EVAL", script.source, len(keys), *keys, *args)

    def pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Several commands in one write; their replies in order (error replies as values)."""
        return self._connection().roundtrip(commands)

    def stream(self, commands: Iterable[Sequence[Any]]) -> list[Any]:
        """Write each command as soon as ``commands`` makes it, then read every reply in order
        (error replies as values): the server runs one command while the caller makes the next.

        When making a command fails, the replies of those written are read first (the
        connection stays in step), then the error goes on.
        """
        conn = self._connection()
        sent = 0
        try:
            for command in commands:
                conn.send([command])
                sent += 1
        except BaseException:
            if sent and not conn.broken:
                conn.read(sent)
            raise
        return conn.read(sent)

    def close(self) -> None:
        """Close this thread's connection (another thread's closes when that thread ends)."""
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
