"""A Sentinel-watched Redis a scenario owns: one master, its replicas and three sentinels, all on
free loopback ports.

The master and replicas are :class:`chaos.servers.RedisServer` processes with the append-only
file on; each sentinel is ``redis-server sentinel.conf --sentinel`` with its own config file
(sentinels rewrite it as they learn the topology, so a restarted sentinel keeps what it knew).
The sentinels decide quickly, for the tests' sake: a master that does not answer for
``down_after_ms`` (1 s) is down once two of them agree, and a replica takes over.
"""

from __future__ import annotations

import pathlib
import time

import redis

from chaos.servers import REDIS_SERVER, RedisServer

SERVICE = "mymaster"


class DataNode(RedisServer):
    """The master, or a replica of ``master_port``; a full resync starts at once (Redis waits 5 s
    by default, for more replicas to share one transfer). With ``password`` every node asks for it
    (``requirepass``) and replicas give it to their master (``masterauth``)."""

    def __init__(self, directory: pathlib.Path, master_port: int | None = None, password: str = "") -> None:
        super().__init__(directory, aof=True)
        self.master_port = master_port
        self.password = password

    def command(self) -> list[str]:
        replica = ["--replicaof", "127.0.0.1", str(self.master_port)] if self.master_port else []
        secret = ["--requirepass", self.password, "--masterauth", self.password] if self.password else []
        return [*super().command(), "--repl-diskless-sync-delay", "0", *secret, *replica]

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(port=self.port, db=db, password=self.password or None, socket_timeout=5)

    def answers(self, timeout: float = 0.5) -> bool:
        try:
            return bool(self.client().ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False


class SentinelNode(RedisServer):
    """One sentinel watching ``SERVICE`` at ``master_port``."""

    def __init__(self, directory: pathlib.Path, master_port: int, *, down_after_ms: int,
                 failover_timeout_ms: int, password: str = "", own_password: str = "") -> None:
        super().__init__(directory)
        self.password = own_password
        self.config = directory / "sentinel.conf"
        if not self.config.exists():
            self.config.write_text("\n".join([
                f"port {self.port}", "bind 127.0.0.1", "protected-mode no", "daemonize no",
                f"dir {directory}", f"logfile {self.log}",
                f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2",
                f"sentinel down-after-milliseconds {SERVICE} {down_after_ms}",
                f"sentinel failover-timeout {SERVICE} {failover_timeout_ms}",
                f"sentinel parallel-syncs {SERVICE} 1",
                *([f"sentinel auth-pass {SERVICE} {password}"] if password else []),
                *([f"requirepass {own_password}", f"sentinel sentinel-pass {own_password}"] if own_password else []),
                ""]))

    def client(self, db: int = 0) -> redis.Redis:
        return redis.Redis(port=self.port, password=self.password or None, socket_timeout=5)

    def answers(self, timeout: float = 0.5) -> bool:
        try:
            return bool(self.client().ping())
        except (redis.ConnectionError, redis.TimeoutError, redis.AuthenticationError):
            return False

    def command(self) -> list[str]:
        return [REDIS_SERVER, str(self.config), "--sentinel"]


class SentinelSet:
    """A master, ``replicas`` replicas and ``sentinels`` sentinels, started by :meth:`start`."""

    def __init__(self, directory: pathlib.Path, *, replicas: int = 1, sentinels: int = 3,
                 down_after_ms: int = 1000, failover_timeout_ms: int = 3000, password: str = "",
                 sentinel_password: str = "") -> None:
        self.password, self.sentinel_password = password, sentinel_password
        self.first_master = DataNode(directory / "master", password=password)
        self.servers: list[RedisServer] = [self.first_master]
        self.servers += [DataNode(directory / f"replica{i}", self.first_master.port, password)
                         for i in range(replicas)]
        self.sentinels = [SentinelNode(directory / f"sentinel{i}", self.first_master.port,
                                       down_after_ms=down_after_ms, failover_timeout_ms=failover_timeout_ms,
                                       password=password, own_password=sentinel_password)
                          for i in range(sentinels)]

    def start(self, timeout: float = 30.0) -> SentinelSet:
        for server in [*self.servers, *self.sentinels]:
            server.start()
        deadline = time.monotonic() + timeout
        while not self._settled():
            if time.monotonic() > deadline:
                raise RuntimeError("the sentinels did not learn the replicas and each other")
            time.sleep(0.1)
        return self

    def close(self) -> None:
        for server in [*self.sentinels, *self.servers]:
            server.stop()

    def url(self, **options: str) -> str:
        if self.sentinel_password:
            options = {"sentinel_password": self.sentinel_password, **options}
        query = "&".join(f"{k}={v}" for k, v in options.items())
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        auth = f":{self.password}@" if self.password else ""
        return f"redis+sentinel://{auth}{hosts}/{SERVICE}" + (f"?{query}" if query else "")

    def _settled(self) -> bool:
        """Every sentinel sees every replica in sync and the other sentinels."""
        for sentinel in self.sentinels:
            try:
                state = sentinel.client().sentinel_master(SERVICE)
            except redis.RedisError:
                return False
            if (int(state["num-slaves"]) < len(self.servers) - 1
                    or int(state["num-other-sentinels"]) < len(self.sentinels) - 1):
                return False
        return all(self._in_sync(r) for r in self.servers[1:])

    @staticmethod
    def _in_sync(replica: RedisServer) -> bool:
        try:
            info = replica.client().info("replication")
        except redis.RedisError:
            return False
        return info.get("master_link_status") == "up"

    def master(self) -> RedisServer:
        """The server the sentinels name as master now."""
        by_port = {s.port: s for s in self.servers}
        for sentinel in self.sentinels:
            try:
                _, port = sentinel.client().sentinel_get_master_addr_by_name(SERVICE)
            except (redis.RedisError, TypeError):
                continue
            return by_port[int(port)]
        raise RuntimeError("no sentinel answers")

    def wait_failover(self, old: RedisServer, timeout: float = 30.0) -> RedisServer:
        """Wait until the sentinels name another master and it says it is one; return it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                new = self.master()
                if new is not old and new.client().info("replication").get("role") == "master":
                    return new
            except (redis.RedisError, RuntimeError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"no replica took over from port {old.port}")
