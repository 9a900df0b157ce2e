"""A Redis Cluster a scenario owns: masters (and their replicas) on free loopback ports.

Each node is a :class:`chaos.servers.RedisServer` with cluster mode on, its own data directory,
its cluster bus on a port of its own (``cluster-port``), and the append-only file on, so a node
that is killed and started again comes back with what it acknowledged. The cluster is built with
``redis-cli --cluster create``; a scenario then kills, freezes or restarts single nodes.

``full_coverage`` is Redis's ``cluster-require-full-coverage``: with ``yes`` (the server's default)
the whole cluster refuses every command while any slot has no live master; with ``no`` the other
masters keep serving their slots, which is what a queue on a healthy master needs to go on.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import time

import redis
from redis.crc import key_slot

from chaos.servers import RedisServer, free_port

REDIS_CLI = shutil.which("redis-cli") or "redis-cli"


class ClusterNode(RedisServer):
    """One node of the cluster: a Redis server with cluster mode on."""

    def __init__(self, directory: pathlib.Path, *, node_timeout_ms: int, full_coverage: bool,
                 aof: bool = True) -> None:
        super().__init__(directory, aof=aof)
        self.bus_port = free_port()
        self.node_timeout_ms = node_timeout_ms
        self.full_coverage = full_coverage

    def pick_ports(self) -> None:
        super().pick_ports()
        self.bus_port = free_port()

    def command(self) -> list[str]:
        return [*super().command(), "--cluster-enabled", "yes", "--cluster-port", str(self.bus_port),
                "--cluster-config-file", str(self.directory / "nodes.conf"),
                "--cluster-node-timeout", str(self.node_timeout_ms),
                "--cluster-require-full-coverage", "yes" if self.full_coverage else "no",
                # a replica with stale data may still take over (the default refuses after a while)
                "--cluster-replica-validity-factor", "0",
                # a replica's full sync starts at once (the default waits 5 s for more replicas to
                # join the transfer, and a master killed meanwhile leaves an empty replica)
                "--repl-diskless-sync-delay", "0"]

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def node_id(self) -> str:
        return str(self.client().execute_command("CLUSTER", "MYID").decode())

    def role(self) -> str:
        return str(self.client().execute_command("ROLE")[0].decode())

    def in_sync(self) -> bool:
        """A master, or a replica whose link to its master is up and not in a full sync (it has
        every write its master made, and streams the next ones)."""
        try:
            info = self.client().info("replication")
        except redis.RedisError:
            return False
        if info.get("role") != "slave":
            return True
        return info.get("master_link_status") == "up" and not int(info.get("master_sync_in_progress", 0))


class Cluster:
    """``masters`` masters with ``replicas`` replicas each, started by :meth:`start`."""

    def __init__(self, directory: pathlib.Path, *, masters: int = 3, replicas: int = 0,
                 node_timeout_ms: int = 1000, full_coverage: bool = False) -> None:
        if not shutil.which("redis-cli"):
            raise RuntimeError("redis-cli is needed to create a cluster")
        self.nodes = [ClusterNode(directory / f"node{i}", node_timeout_ms=node_timeout_ms,
                                  full_coverage=full_coverage)
                      for i in range(masters * (1 + replicas))]
        self.masters_wanted = masters
        self.replicas = replicas

    def start(self, timeout: float = 30.0) -> Cluster:
        for node in self.nodes:
            node.start()
        command = [REDIS_CLI, "--cluster", "create", *[n.address for n in self.nodes],
                   "--cluster-replicas", str(self.replicas), "--cluster-yes"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout}{done.stderr}")
        self.wait_healthy(timeout)
        return self

    def close(self) -> None:
        for node in self.nodes:
            node.stop()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses --------------------------------------------------------------------------------
    def url(self, seeds: list[ClusterNode] | None = None) -> str:
        """``redis+cluster://`` with every node (or ``seeds``) as a seed."""
        return "redis+cluster://" + ",".join(n.address for n in (seeds or self.nodes))

    def live(self) -> list[ClusterNode]:
        return [n for n in self.nodes if n.alive()]

    def slots(self) -> dict[int, ClusterNode]:
        """Slot -> the master serving it, as the first live node answering sees it."""
        by_port = {n.port: n for n in self.nodes}
        for node in self.live():
            try:
                ranges = node.client().execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                continue
            owners: dict[int, ClusterNode] = {}
            for start, end, master, *_ in ranges:
                for slot in range(int(start), int(end) + 1):
                    owners[slot] = by_port[int(master[1])]
            return owners
        raise RuntimeError("no cluster node answers")

    def master_of_key(self, key: str) -> ClusterNode:
        return self.slots()[key_slot(key.encode())]

    def master_of_queue(self, queue: str, prefix: str = "queues:") -> ClusterNode:
        return self.master_of_key(f"{prefix}{{{queue}}}")

    def masters(self) -> list[ClusterNode]:
        """The nodes serving slots now, in node order."""
        serving = set(self.slots().values())
        return [n for n in self.nodes if n in serving]

    def queue_on(self, master: ClusterNode, stem: str = "q", prefix: str = "queues:") -> str:
        """The first queue name ``{stem}0``, ``{stem}1``, ... whose keys live on ``master``."""
        owners = self.slots()
        for n in range(100_000):
            name = f"{stem}{n}"
            if owners.get(key_slot(f"{prefix}{{{name}}}".encode())) is master:
                return name
        raise RuntimeError(f"no queue name on {master.address}")

    # -- health -----------------------------------------------------------------------------------
    def state_ok(self, node: ClusterNode) -> bool:
        try:
            info = node.client().execute_command("CLUSTER", "INFO").decode()
        except redis.RedisError:
            return False
        return "cluster_state:ok" in info

    def wait_healthy(self, timeout: float = 30.0) -> None:
        """Every live node says the cluster is ok and agrees on who serves each slot, and every
        live replica is in sync with its master: a failover from then on loses at most the last
        few milliseconds of writes, not everything the master held."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = self.live()
            if all(self.state_ok(n) for n in live) and self._agree() and all(n.in_sync() for n in live):
                return
            time.sleep(0.1)
        raise RuntimeError("the cluster did not become healthy")

    def _agree(self) -> bool:
        views = set()
        for node in self.live():
            try:
                ranges = node.client().execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                return False
            views.add(tuple(sorted((int(s), int(e), int(m[1])) for s, e, m, *_ in ranges)))
        return len(views) == 1 and sum(e - s + 1 for s, e, _ in next(iter(views))) == 16384

    def wait_promoted(self, old: ClusterNode, slot: int, timeout: float = 30.0) -> ClusterNode:
        """Wait until another node serves ``slot`` (one ``old`` served) and the cluster is ok;
        return that node (``old``'s replica, promoted)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                owner = self.slots()[slot]
                if owner is not old and all(self.state_ok(n) for n in self.live()):
                    return owner
            except (redis.RedisError, RuntimeError, KeyError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"no replica took over from {old.address}")

    def slot_of(self, master: ClusterNode) -> int:
        """One slot ``master`` serves."""
        return next(slot for slot, node in self.slots().items() if node is master)
