"""Servers the scenarios own: a ``redis-server`` on a free port, a fresh PostgreSQL database.

Each scenario starts its own Redis (so killing, freezing or restarting it harms nobody else) and
creates its own PostgreSQL database (dropped afterwards), so scenarios never share state.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import redis
import sqlalchemy as sa

REDIS_SERVER = shutil.which("redis-server") or "redis-server"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on ``listen_host``:``port`` (127.0.0.1 unless a subclass says
    otherwise) with its data in ``directory``.

    ``aof`` turns on the append-only file with ``appendfsync always`` (every acknowledged write
    survives ``kill -9``); without it the server keeps nothing across a restart.
    """

    def __init__(self, directory: pathlib.Path, *, aof: bool = False, port: int | None = None) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.aof = aof
        self.port = port or free_port()
        #: Ports picked here may be taken by another process before the server binds them (any
        #: outgoing connection gets a port from the same range): the first start then tries others.
        self._ports_picked = port is None
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = directory / "redis.log"
        self.listen_host = "127.0.0.1"

    def url(self, db: int = 0) -> str:
        return f"redis://{self.listen_host}:{self.port}/{db}"

    @property
    def pid(self) -> int:
        assert self.proc is not None, "server not started"
        return self.proc.pid

    def command(self) -> list[str]:
        """The command line that starts this server (subclasses add their own options)."""
        return [REDIS_SERVER, "--port", str(self.port), "--bind", self.listen_host,
                "--dir", str(self.directory),
                "--save", "", "--appendonly", "yes" if self.aof else "no", "--appendfsync", "always",
                "--protected-mode", "no", "--daemonize", "no", "--logfile", str(self.log)]

    def start(self, timeout: float = 10.0) -> RedisServer:
        for attempt in range(3):
            try:
                return self._start(timeout)
            except RuntimeError as exc:
                if not self._ports_picked or attempt == 2 or "Address already in use" not in str(exc):
                    raise
                self.pick_ports()
        raise AssertionError("unreachable")

    def pick_ports(self) -> None:
        """Other free ports, before the first start (a restart keeps the ports clients know)."""
        self.port = free_port()

    def _start(self, timeout: float) -> RedisServer:
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on port {self.port} did not start: "
                                   f"{self.log.read_text() if self.log.exists() else ''}")
            time.sleep(0.02)
        self._ports_picked = False  # started: its ports stay, restarts included
        return self

    def answers(self, timeout: float = 0.5) -> bool:
        client = redis.Redis(host=self.listen_host, port=self.port, socket_timeout=timeout,
                             socket_connect_timeout=timeout)
        try:
            return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False
        finally:
            client.close()

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis.from_url(self.url(db), socket_timeout=5)

    def kill(self) -> None:
        """``kill -9``: no shutdown, no last write."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        """A clean shutdown (SIGTERM); resumes a frozen server first."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def freeze(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

    def restart(self) -> None:
        self.kill()
        self.start()

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pg_admin_url(base: str) -> str:
    """The maintenance database (``postgres``) on the server of ``base``."""
    return sa.make_url(base).set(database="postgres").render_as_string(hide_password=False)


@contextlib.contextmanager
def fresh_pg_database(base: str) -> Iterator[str]:
    """A new, empty PostgreSQL database on the server of ``base`` (dropped afterwards, even while
    worker connections are still open)."""
    name = f"eventbus_chaos_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pg_admin_url(base), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield sa.make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def terminate_pg_backends(url: str) -> int:
    """``pg_terminate_backend`` every client backend of the database in ``url``; return how many."""
    admin = sa.create_engine(pg_admin_url(url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            return int(conn.execute(sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :db AND pid <> pg_backend_pid() AND backend_type = 'client backend'"),
                {"db": sa.make_url(url).database}).scalar() or 0)
    finally:
        admin.dispose()
