"""The Redis driver's hot path: one script call per request, straight over the socket.

redis-py 8 runs every command through its pool, retry, observability and response-callback
layers: about 75 µs of CPU per call on this project's benchmark machine, against 25 µs for the same
EVALSHA packed by hiredis and written to a socket this module holds (``benchmarks/README.md``).
That difference is most of a dispatch and a third of a worker's turn, so the calls made once per job
(push, reserve) come here; everything else stays on redis-py.

What it keeps of a client, and no more: one connection per thread and process (a forked child
opens its own), the URL's host or Unix socket, database, user and password, the client name,
socket timeouts, ``EVALSHA`` that falls back to ``EVAL`` when the server lost its scripts, and
redis-py's exception classes, so the driver's handling of a lost connection is the same on both
paths. ``rediss://`` URLs and clusters use redis-py throughout (:func:`supports`).

Pipelining: :meth:`Wire.pipeline` writes several commands at once and reads their replies in
order, which is how a worker's blocking wait carries the reservation that follows it (see
``RedisQueue.wait_and_reserve``).
"""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import hiredis
import redis
from redis.connection import parse_url

#: ``redis.ResponseError`` for error replies; hiredis builds it with the server's message.
_REPLY_ERROR = redis.ResponseError


def supports(url: str, cluster: bool) -> bool:
    """Whether the hot path can serve ``url``: plain TCP or a Unix socket, not TLS or a cluster."""
    return not cluster and urlsplit(url).scheme in ("redis", "unix")


class Script:
    """A Lua script known by its SHA1, as the server keeps it."""

    __slots__ = ("source", "sha")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()


#: Counts the forks of this process's line: a connection made before a fork is not used after it
#: (the parent's socket would be shared), and comparing this is cheaper than ``os.getpid()``,
#: a system call, on every command.
_forks = 0


def _forked() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):  # where there is no fork, there is nothing to count
    os.register_at_fork(after_in_child=_forked)


class _Connection:
    """One socket and its reply parser; closed for good on any error."""

    def __init__(self, options: dict[str, Any], timeout: float | None, name: str) -> None:
        self.forks = _forks
        path = options.get("path")
        try:
            if path:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(5.0)
                sock.connect(path)
            else:
                sock = socket.create_connection((options.get("host", "localhost"), options.get("port", 6379)),
                                                timeout=5.0)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            raise redis.ConnectionError(f"cannot connect: {exc}") from exc
        sock.settimeout(timeout)
        self.sock = sock
        self.reader = hiredis.Reader(replyError=_REPLY_ERROR)
        self.broken = False
        handshake: list[tuple[Any, ...]] = []
        password = options.get("password")
        if password is not None:
            username = options.get("username")
            handshake.append(("AUTH", username, password) if username else ("AUTH", password))
        handshake.append(("CLIENT", "SETNAME", name))
        if options.get("db"):
            handshake.append(("SELECT", options["db"]))
        for reply in self.roundtrip(handshake):
            if isinstance(reply, Exception):
                self.close()
                raise redis.ConnectionError(f"the server refused the connection: {reply}")

    def roundtrip(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Write every command, then read one reply each (error replies come back as values)."""
        try:
            if len(commands) == 1:  # most requests: one script call
                self.sock.sendall(hiredis.pack_command(tuple(commands[0])))
            else:
                self.sock.sendall(b"".join(hiredis.pack_command(tuple(command)) for command in commands))
            replies: list[Any] = []
            while len(replies) < len(commands):
                reply = self.reader.gets()
                if reply is False:
                    data = self.sock.recv(65536)
                    if not data:
                        raise redis.ConnectionError("the server closed the connection")
                    self.reader.feed(data)
                    continue
                replies.append(reply)
            return replies
        except socket.timeout as exc:
            self.close()
            raise redis.TimeoutError("timed out waiting for a reply") from exc
        except OSError as exc:
            self.close()
            raise redis.ConnectionError(f"lost the connection: {exc}") from exc
        except BaseException:  # interrupted mid-reply (a signal): the stream is out of step now
            self.close()
            raise

    def close(self) -> None:
        self.broken = True
        try:
            self.sock.close()
        except OSError:
            pass


class Wire:
    """Connections to one Redis URL for the hot path, one per thread (and per process)."""

    def __init__(self, url: str, *, timeout: float | None, name: str) -> None:
        self.options: dict[str, Any] = parse_url(url)  # type: ignore[no-untyped-call]
        if "path" not in self.options and urlsplit(url).username and "username" not in self.options:
            self.options["username"] = unquote(urlsplit(url).username or "")
        self.timeout = timeout
        self.name = name
        self._local = threading.local()

    def _connection(self) -> _Connection:
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is None or conn.broken or conn.forks != _forks:
            conn = _Connection(self.options, self.timeout, self.name)
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
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return self.call("EVAL", script.source, len(keys), *keys, *args)

    def pipeline(self, commands: Sequence[Sequence[Any]]) -> list[Any]:
        """Several commands in one write; their replies in order (error replies as values)."""
        return self._connection().roundtrip(commands)

    def close(self) -> None:
        """Close this thread's connection (another thread's closes when that thread ends)."""
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
