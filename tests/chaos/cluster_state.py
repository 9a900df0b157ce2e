"""Issue 27, defect 4: on a Redis Cluster with one master down, a state-store error inside a job
(a unique lock, a rate limit, an overlap lock, a circuit breaker, a batch counter on that master) must not count as
the job's own failure. Queues on healthy masters keep working: a job that ran stays done, its
bookkeeping is retried once the store answers, and a middleware that cannot reach its store
puts the job back without using a try.

The cluster is three masters started here on free ports, with ``cluster-require-full-coverage
no`` (as a deployment that wants its healthy slots to keep serving sets it) and an append-only
file each, so the killed master comes back with its keys. The jobs are chosen so that their
state keys live on the master that is killed, and their queue on another one.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable

from redis.cluster import RedisCluster

import eventbus
from chaos.apps.cluster_state import (
    LIMIT,
    LIMITER,
    ExclusiveWork,
    LimitedWork,
    ThrottledWork,
    UniqueWork,
    configure,
)
from chaos.apps.jobs import Work
from chaos.ledger import Entry
from chaos.scene import Result, Scene, Worker, base_env, wait_until
from chaos.servers import RedisServer
from eventbus import RateLimited, ThrottlesExceptions, WithoutOverlapping
from eventbus.dispatching import command_name, unique

CLUSTER_APP = "chaos.apps.cluster_state"
PREFIX = "queues:"  # the connection's default prefix: a state key is PREFIX + "state:" + key


class ClusterUnavailable(Exception):
    """A local cluster cannot be started here (the scenario skips with the reason)."""


def cluster_ports(count: int) -> list[int]:
    """Free ports whose cluster bus port (port + 10000) is in range."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 < 65536 and port not in ports:
            ports.append(port)
    return ports


class ClusterNode(RedisServer):
    """A cluster-enabled ``redis-server``: AOF, a 1 s node timeout, partial coverage served."""

    def start(self, timeout: float = 10.0) -> ClusterNode:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                "--save", "", "--appendonly", "yes", "--appendfsync", "always", "--protected-mode", "no",
                "--cluster-enabled", "yes", "--cluster-config-file", str(self.directory / "nodes.conf"),
                "--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
                "--daemonize", "no", "--logfile", str(self.log)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise ClusterUnavailable(f"cluster node on port {self.port} did not start")
            time.sleep(0.02)
        return self


class Cluster:
    """Three masters sharing every slot; ``url`` seeds clients at the first one."""

    def __init__(self, scene: Scene) -> None:
        if not shutil.which("redis-server") or not shutil.which("redis-cli"):
            raise ClusterUnavailable("redis-server and redis-cli are needed to start a cluster")
        self.nodes = [ClusterNode(scene.dir / f"node{i}", port=port) for i, port in enumerate(cluster_ports(3))]
        for node in self.nodes:
            scene._stack.callback(node.stop)
            node.start()
        created = subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes],
                                  "--cluster-replicas", "0", "--cluster-yes"], capture_output=True, text=True)
        if created.returncode != 0:
            raise ClusterUnavailable(f"redis-cli --cluster create failed: {created.stdout[-300:]}")
        if not wait_until(self.healthy, 20, 0.1):
            raise ClusterUnavailable("the cluster did not reach cluster_state:ok")
        self.client = RedisCluster.from_url(self.url, socket_timeout=2)
        scene._stack.callback(self.client.close)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def healthy(self) -> bool:
        return all(b"cluster_state:ok" in subprocess.run(["redis-cli", "-p", str(n.port), "cluster", "info"],
                                                         capture_output=True).stdout for n in self.nodes)

    def owner(self, key: str) -> int:
        """The port of the master that owns ``key``."""
        return int(self.client.get_node_from_key(key).port)

    def node(self, port: int) -> ClusterNode:
        return next(n for n in self.nodes if n.port == port)


class ClusterWorker(Worker):
    """``eventbus work --app chaos.apps.cluster_state ...``, its output in files."""

    def __init__(self, args: list[str], env: dict[str, str], directory: pathlib.Path, name: str) -> None:
        self.name = name
        self.out_path = directory / f"{name}.out"
        self.err_path = directory / f"{name}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--app", CLUSTER_APP, *args],
                                         env=env, cwd=directory, stdout=out, stderr=err, start_new_session=True)
        self.started_at = time.monotonic()


@dataclasses.dataclass
class Plan:
    """The jobs the scenario dispatched (their numbers, by kind), and what to look for after."""

    ns: dict[str, list[int]]
    unique_keys: list[str]
    callbacks: list[int]  # the numbers of every batch's `then` and `finally` jobs

    @property
    def jobs(self) -> list[int]:
        return [n for kind in self.ns.values() for n in kind]


def dispatch_plan(cluster: Cluster, victim: int, quick: bool) -> Plan:
    """Per kind, jobs whose state key is on ``victim``; plain jobs; and batches (whose keys are
    spread over the masters: most batches have some of them on ``victim``)."""
    count = 6 if quick else 20
    names = (f"key-{i}" for i in itertools.count())

    def on_victim(key: str) -> bool:
        return cluster.owner(f"{PREFIX}state:{key}") == victim

    def first(fits: Callable[[str], bool]) -> list[str]:
        return list(itertools.islice((name for name in names if fits(name)), count))

    def lock_of(key: str) -> str:
        job = UniqueWork(0, key)
        found = unique.lock_for(job, command_name(job), "chaos")
        assert found is not None
        return str(found["key"])

    window = int(time.time() // LIMIT.window_s)
    unique_keys = first(lambda k: on_victim(lock_of(k)))
    limit_keys = first(lambda k: on_victim(RateLimited(LIMITER)._key(LIMIT.by(k), window)))
    lock_keys = first(lambda k: on_victim(WithoutOverlapping(k).lock_key(ExclusiveWork(0, k))))
    throttle_keys = first(lambda k: on_victim(ThrottlesExceptions().by(k).key(ThrottledWork(0, k)) + ":open"))
    numbers = itertools.count(1)
    kinds: dict[str, list[Work]] = {
        "unique": [UniqueWork(next(numbers), k, tries=1) for k in unique_keys],
        "limited": [LimitedWork(next(numbers), k, tries=1) for k in limit_keys],
        "exclusive": [ExclusiveWork(next(numbers), k, tries=1) for k in lock_keys],
        "throttled": [ThrottledWork(next(numbers), k, tries=1) for k in throttle_keys],
        "plain": [Work(next(numbers), tries=1) for _ in range(count)]}
    for jobs in kinds.values():
        assert all(eventbus.dispatch(job) is not None for job in jobs)
    batched, callbacks = [], []
    for b in range(4 if quick else 10):
        then = 9000 + 10 * b
        members = [Work(next(numbers), tries=1) for _ in range(3)]
        eventbus.batch(members).then(Work(then, tries=1)).finally_(Work(then + 1, tries=1)).dispatch()
        batched += [member.n for member in members]
        callbacks += [then, then + 1]
    return Plan({**{kind: [job.n for job in jobs] for kind, jobs in kinds.items()}, "batched": batched},
                unique_keys, callbacks)


def state_master_down(quick: bool = True) -> Result:
    """Kill the master that owns the jobs' state keys (not their queue's), run the jobs, bring
    the master back: every job runs once and stays done, none fails or uses up a try, every
    batch finishes with its callbacks once, and the unique locks are let go."""
    from chaos.scenarios import Unavailable

    result = Result("cluster-state-master-down")
    down_s = 4.0 if quick else 20.0
    with Scene(result.scenario) as scene:
        try:
            cluster = Cluster(scene)
        except ClusterUnavailable as exc:
            raise Unavailable(str(exc)) from exc
        env = {**base_env(), "CHAOS_LEDGER": scene.ledger.path, "CHAOS_CLUSTER_URL": cluster.url,
               "CHAOS_RETRY_AFTER": "3"}
        os.environ["CHAOS_CLUSTER_URL"] = cluster.url
        try:
            configure()
            # neither the queue's master nor the seed the URL names (a dead seed is defect 7)
            spared = {cluster.owner(f"{PREFIX}{{default}}"), cluster.nodes[0].port}
            victim = next(n.port for n in cluster.nodes if n.port not in spared)
            plan = dispatch_plan(cluster, victim, quick)
            cluster.node(victim).kill()
            killed = time.monotonic()
            workers = [ClusterWorker(["--sleep", "0.1", "--timeout", "1", "--quiet"], env, scene.dir, f"worker{i}")
                       for i in range(2)]
            scene.workers += workers
            time.sleep(down_s)
            cluster.node(victim).start()
            wait_until(cluster.healthy, 20, 0.1)
            back = time.monotonic()
            drained = wait_until(lambda: finished(scene, plan), 30 if quick else 120, 0.2)
            result.note(f"master {victim} down {back - killed:.1f}s; " +
                        (f"drained {time.monotonic() - back:.1f}s after it came back" if drained else "not drained"))
            entries = scene.ledger.entries()
            for w in workers:
                w.stop()
            judge(result, plan, entries)
        finally:
            os.environ.pop("CHAOS_CLUSTER_URL", None)
    return result


def finished(scene: Scene, plan: Plan) -> bool:
    done = {int(e.n) for e in scene.ledger.entries() if e.kind == "done"}
    return set(plan.jobs) <= done and set(plan.callbacks) <= done


def judge(result: Result, plan: Plan, entries: list[Entry]) -> None:
    runs = Counter(int(e.n) for e in entries if e.kind == "done")
    jobs = plan.jobs
    result.enqueued = len(jobs)
    result.executed_once = sum(runs[n] == 1 for n in jobs)
    result.lost = sum(runs[n] == 0 for n in jobs)
    result.duplicated = sum(runs[n] > 1 for n in jobs)
    hooks = [e for e in entries if e.kind == "hook"]
    try:
        failed = [f"{r.display_name}: {r.summary}" for r in eventbus.failed_store().all()]
    except eventbus.EventBusError as exc:
        failed = [f"(the failed store does not answer: {exc})"]
    result.check("no-failures", not hooks and not failed,
                 f"{len(hooks)} failed() hooks ran; {len(failed)} failed records: {failed[:2]}")
    for kind, ns in plan.ns.items():
        once = sum(runs[n] == 1 for n in ns)
        result.check(f"{kind}-once", once == len(ns), f"{once} of {len(ns)} {kind} jobs ran exactly once")
    fired = {n: runs[n] for n in plan.callbacks}
    result.check("batches-finished", all(count == 1 for count in fired.values()),
                 f"batch callbacks (n: runs): {sorted(fired.items())}")
    held = locks_still_held(plan, timeout=UniqueWork.unique_for + 5)
    result.check("unique-locks-released", held == 0,
                 f"{held} of {len(plan.unique_keys)} unique locks still held after unique_for")


def locks_still_held(plan: Plan, timeout: float) -> int:
    """How many unique ids are still locked once ``timeout`` has passed (or none are)."""
    def held() -> int:
        count = 0
        for key in plan.unique_keys:
            job = UniqueWork(0, key)
            lock = unique.lock_for(job, command_name(job), "chaos")
            count += lock is not None and unique.holder(lock) is not None
        return count

    wait_until(lambda: held() == 0, timeout, 0.5)
    return held()
