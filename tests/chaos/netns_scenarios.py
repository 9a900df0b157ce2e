"""Worker hosts cut off from Redis (issue 27, new ground), on hosts made of network namespaces.

Three hosts (:mod:`chaos.netns`): ``redis`` runs the server, ``a`` and ``b`` run one worker each;
the test process reaches the server over a link of its own that is never touched. Faults are set
on the links between ``a`` (or ``b``) and ``redis``, in one direction or both:

- ``netns-cut-long``: ``a`` is cut off for longer than ``retry_after`` while it runs a job whose
  first attempt fails. The job runs once more, on ``b``, once the reservation expired; when the
  link heals, ``a``'s late release (and, in the full tier, the late delete of a job that
  succeeded) meets a reservation it no longer holds and changes nothing: no third run.
- ``netns-cut-short``: ``a`` is cut off for less than ``retry_after`` mid-job: the job runs once.
- ``netns-asymmetric``: what ``redis`` sends to ``a`` is lost for longer than ``retry_after``
  while what ``a`` sends arrives (its commands run, their replies never come) during a drain
  (full tier: then the other direction too).
- ``netns-slow-links``: the same backlog drained by both workers over clean links, links with
  50 ms of round trip, with 1 % loss each way, and with both: the drain rate with prefetch must
  stay within 2x of the clean links'.
- ``netns-sentinel-partition``: other hosts (a master, a replica, a third sentinel): the master's
  host is partitioned from the others while a dispatcher beside it keeps pushing; what the old
  master acknowledged meanwhile is lost unless the writes are guarded (see the function).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import redis

import eventbus
from chaos import ledger as ledger_mod
from chaos.apps.jobs import FailsFirst, Work
from chaos.netns import Host, Network, NetnsRedis, why_not
from chaos.scenarios import Fault, Unavailable, account, settled
from chaos.scene import Result, Scene, Worker, wait_until
from chaos.sentinel import SERVICE
from chaos.servers import REDIS_SERVER
from chaos.target import Target


def _network(scene: Scene) -> tuple[Network, NetnsRedis]:
    reason = why_not()
    if reason:
        raise Unavailable(f"no network namespaces here: {reason}")
    net = Network(scene.dir, ["redis", "a", "b"])
    scene._stack.callback(net.close)
    net.start()
    server = NetnsRedis(scene.dir / "redis", net.hosts["redis"]).start()
    scene._stack.callback(server.stop)
    return net, server


def _worker(scene: Scene, net: Network, target: Target, host: str, timeout: float) -> Worker:
    return scene.worker(target, "--sleep", "0.1", "--timeout", f"{timeout:g}", "--quiet", name=host,
                        prefix=net.hosts[host].command())


def _starts(scene: Scene, uuid: str) -> list[ledger_mod.Entry]:
    return [e for e in scene.ledger.entries() if e.uuid == uuid and e.kind == "start"]


# -- cut off for longer than retry_after ----------------------------------------------------------

def cut_long(quick: bool = True) -> Result:
    """The link heals the moment ``b`` starts the job, so that ``a``'s late release or delete
    reaches the server while ``b`` holds the job: without the reservation's token as a fence, the
    release would queue the job again (a third run) and the delete would take it from ``b``."""
    result = Result("netns-cut-long")
    victims = [FailsFirst] if quick else [FailsFirst, Work]
    with Scene(result.scenario) as scene:
        net, server = _network(scene)
        target = Target("redis", server.url(), retry_after=6.0, block_for=1.0)
        a = _worker(scene, net, target, "a", 4.0)
        b = _worker(scene, net, target, "b", 4.0)
        uuids: list[str] = []
        faults: list[Fault] = []
        fenced, resumed = [], []
        for r, kind in enumerate(victims):
            b.signal(signal.SIGSTOP)  # a takes the victim
            job = FailsFirst(100 * r, seconds=1.5, tries=3, later_seconds=3.0) if kind is FailsFirst \
                else Work(100 * r, seconds=1.5, tries=3)
            [victim] = scene.dispatch(target, [job])
            uuids.append(victim)
            wait_until(lambda: _starts(scene, victim), 30, 0.01)
            time.sleep(0.2)
            cut_at = time.monotonic()
            net.cut("a", "redis")
            faults.append((cut_at, {victim}))
            b.signal(signal.SIGCONT)  # b takes it over once the reservation expires
            wait_until(lambda: any(e.pid == b.pid for e in _starts(scene, victim)), target.retry_after + 10, 0.01)
            net.heal("a", "redis")
            healed_at = time.monotonic()
            wait_until(lambda: victim in scene.ledger.done() and scene.size(target) == 0, 20)
            time.sleep(target.retry_after + 1.0)  # time for a stale release to come back as a third run
            starts = _starts(scene, victim)
            by_b = [e for e in starts if e.pid == b.pid]
            fenced.append(len(starts) == 2 and len(by_b) == 1 and by_b[0].t > cut_at + target.retry_after - 0.5)
            result.note(f"{kind.__name__}: runs at {', '.join(f'{e.t - cut_at:.1f}s' for e in starts)} after the "
                        f"cut ({len(by_b)} on b); the link healed at {healed_at - cut_at:.1f}s")
            b.signal(signal.SIGSTOP)  # a must take the next job: it works again
            [after] = scene.dispatch(target, [Work(100 * r + 1, seconds=0.01)])
            uuids.append(after)
            resumed.append(wait_until(lambda: any(e.pid == a.pid for e in _starts(scene, after)), 15))
            b.signal(signal.SIGCONT)
        exits = [w.name for w in (a, b) if not w.alive()]
        for w in (a, b):
            w.stop()
        account(scene, target, result, uuids, faults)
        result.check("ran-elsewhere-once", all(fenced),
                     f"per victim: ran on b after the reservation expired, and never a third time: {fenced}")
        result.check("a-works-again", all(resumed) and not exits,
                     f"a took a job after the link healed: {resumed}; exited: {exits}")
    return result


# -- cut off for less than retry_after ------------------------------------------------------------

def cut_short(quick: bool = True) -> Result:
    result = Result("netns-cut-short")
    rounds = 1 if quick else 4
    with Scene(result.scenario) as scene:
        net, server = _network(scene)
        target = Target("redis", server.url(), retry_after=8.0, block_for=1.0)
        a = _worker(scene, net, target, "a", 2.0)
        b = _worker(scene, net, target, "b", 2.0)
        uuids: list[str] = []
        acked_after: list[float] = []
        for r in range(rounds):
            b.signal(signal.SIGSTOP)
            [victim] = scene.dispatch(target, [Work(r, seconds=1.0, tries=3)])
            uuids.append(victim)
            wait_until(lambda: _starts(scene, victim), 30, 0.01)
            time.sleep(0.2)
            net.cut("a", "redis")
            b.signal(signal.SIGCONT)
            time.sleep(1.5)
            net.heal("a", "redis")
            healed = time.monotonic()
            wait_until(lambda: scene.size(target) == 0, target.retry_after + 5, 0.05)
            acked_after.append(time.monotonic() - healed)
        time.sleep(1.0)
        for w in (a, b):
            w.stop()
        account(scene, target, result, uuids, [])  # no fault may cost a duplicate here
        on_b = sum(1 for u in uuids for e in _starts(scene, u) if e.pid == b.pid)
        result.check("no-takeover", on_b == 0, f"{on_b} victims also ran on b")
        result.note(f"{rounds} cuts of 1.5s (retry_after 8s): acknowledged "
                    f"{', '.join(f'{x:.1f}s' for x in acked_after)} after the link healed")
    return result


# -- one direction lost ---------------------------------------------------------------------------

def asymmetric(quick: bool = True) -> Result:
    result = Result("netns-asymmetric")
    directions = [("redis", "a")] if quick else [("redis", "a"), ("a", "redis")]
    with Scene(result.scenario) as scene:
        net, server = _network(scene)
        target = Target("redis", server.url(), retry_after=4.0, block_for=1.0)
        a = _worker(scene, net, target, "a", 2.0)
        b = _worker(scene, net, target, "b", 2.0)
        uuids: list[str] = []
        faults: list[Fault] = []
        resumed = []
        for n, (source, dest) in enumerate(directions):
            batch = scene.dispatch(target, [Work(1000 * n + i, seconds=0.05, tries=20) for i in range(80)])
            uuids += batch
            wait_until(lambda: len(scene.ledger.done() & set(batch)) >= 15, 30)
            at = time.monotonic()
            net.cut(source, dest, both=False)
            faults.append((at, ledger_mod.in_flight(scene.ledger.entries(), at, [a.pid])))
            time.sleep(target.retry_after + 2.0)
            net.heal(source, dest)
            healed = time.monotonic()
            wait_until(settled(scene, target, batch), 30)
            late = scene.dispatch(target, [Work(1000 * n + 500 + i, seconds=0.05) for i in range(20)])
            uuids += late
            wait_until(settled(scene, target, late), 30)
            resumed.append(any(e.pid == a.pid and e.t > healed for e in scene.ledger.entries() if e.kind == "start"))
            result.note(f"{source}->{dest} lost {target.retry_after + 2:.0f}s")
        exits = [w.name for w in (a, b) if not w.alive()]
        for w in (a, b):
            w.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        result.check("a-works-again", all(resumed) and not exits,
                     f"a took jobs after healing: {resumed}; exited: {exits}")
    return result


# -- slow and lossy links -------------------------------------------------------------------------

LINKS = [("clean", 0.0, 0.0), ("50ms", 0.025, 0.0), ("1% loss", 0.0, 0.01), ("50ms+1%", 0.025, 0.01)]


def slow_links(quick: bool = True) -> Result:
    result = Result("netns-slow-links")
    jobs = 600 if quick else 3000
    with Scene(result.scenario) as scene:
        net, server = _network(scene)
        target = Target("redis", server.url(), retry_after=10.0, block_for=1.0)
        workers = [_worker(scene, net, target, host, 2.0) for host in ("a", "b")]
        uuids = scene.dispatch(target, [Work(n, seconds=0.05) for n in range(20)])  # both workers up
        wait_until(lambda: {e.pid for e in scene.ledger.entries()} >= {w.pid for w in workers}, 60)
        wait_until(settled(scene, target, uuids), 30)
        rounds = 0

        def drain(name: str) -> float:
            nonlocal rounds
            _, one_way_s, loss = next(link for link in LINKS if link[0] == name)
            for host in ("a", "b"):
                net.link(host, "redis", delay_s=one_way_s, loss=loss)
            rounds += 1
            return _drain_rate(scene, target, workers, uuids, jobs, rounds)

        clean = drain("clean")
        ratios: dict[str, list[float]] = {}
        for name, _, _ in LINKS[1:]:
            # A drain rate is a timing, and the rest of a busy machine slows some drains more than
            # others (every link is a forwarder process, chaos.netns_wire, that competes for the
            # CPUs); a link that really halves the rate does so every time. So a drain below half
            # the clean rate is measured again, each time beside a fresh clean drain that meets the
            # same load, up to SLOW_LINK_ATTEMPTS times; the best of those ratios is checked.
            ratios[name] = [drain(name) / clean]
            while ratios[name][-1] < 0.5 and len(ratios[name]) < SLOW_LINK_ATTEMPTS:
                clean = drain("clean")
                ratios[name].append(drain(name) / clean)
        for w in workers:
            w.stop()
        account(scene, target, result, uuids, [])
        for name, tried in ratios.items():
            result.check(f"rate-{name}", max(tried) >= 0.5,
                         f"{name} links drained at {', '.join(f'{r:.2f}x' for r in tried)} the clean rate")
        result.note(f"drain rate, 2 workers, prefetch: clean {clean:.0f} jobs/s; " + "; ".join(
            f"{name} {'/'.join(f'{r:.2f}x' for r in tried)}" for name, tried in ratios.items()))
    return result


SLOW_LINK_ATTEMPTS = 3


def _drain_rate(scene: Scene, target: Target, workers: Sequence[Worker], uuids: list[str], jobs: int,
                round_: int) -> float:
    """Queue ``jobs`` while the workers are stopped, let them go, and time the drain."""
    for w in workers:
        w.signal(signal.SIGSTOP)
    target.configure()
    batch = [str(u) for u in eventbus.dispatch_many(Work(10_000 * (round_ + 1) + n, seconds=0.005)
                                                    for n in range(jobs))]
    uuids += batch
    started = time.monotonic()
    for w in workers:
        w.signal(signal.SIGCONT)
    wait_until(settled(scene, target, batch), 300, 0.05)
    mine = set(batch)
    finished = max((e.t for e in scene.ledger.entries() if e.kind == "done" and e.uuid in mine),
                   default=time.monotonic())
    return jobs / max(finished - started, 1e-6)


# -- Sentinel across a partition: what asynchronous replication loses -----------------------------

class NetnsSentinel(NetnsRedis):
    """A sentinel on a host of the network, watching the master at ``master``."""

    def __init__(self, directory: Path, host: Host, master: str) -> None:
        super().__init__(directory, host, aof=False)
        self.port = 26379
        self.config = directory / "sentinel.conf"
        self.config.write_text("\n".join([
            f"port {self.port}", f"bind {host.address}", "protected-mode no", "daemonize no",
            f"dir {directory}", f"logfile {self.log}", f"sentinel monitor {SERVICE} {master} 6379 2",
            f"sentinel down-after-milliseconds {SERVICE} 1000", f"sentinel failover-timeout {SERVICE} 3000", ""]))

    def command(self) -> list[str]:
        return self.host.command(REDIS_SERVER, str(self.config), "--sentinel")


class NetnsData(NetnsRedis):
    """The master, or a replica of ``master``; ``extra`` server options (min-replicas-to-write)."""

    def __init__(self, directory: Path, host: Host, master: str | None, extra: Sequence[str]) -> None:
        super().__init__(directory, host)
        self.master, self.extra = master, list(extra)

    def command(self) -> list[str]:
        line = super().command()
        replica = ["--replicaof", self.master, "6379"] if self.master else []
        return [*line, "--repl-diskless-sync-delay", "0", *self.extra, *replica]


PARTITION_S = 4.0
GUARDS = {"async": ({}, []),
          "min-replicas": ({}, ["--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"]),
          "wait": ({"wait_replicas": 1, "wait_timeout": 0.5}, [])}


def sentinel_partition(quick: bool = True) -> Result:
    """The master's host is cut off from its replica's host and from two of three sentinels for
    4 s, while a dispatcher on the master's own host keeps pushing (it still reaches the master,
    and the sentinel beside it, which cannot fail over alone). The other side promotes the replica.
    What the old master acknowledged meanwhile is lost: measured with nothing in the way
    (``async``), with ``min-replicas-to-write 1``/``min-replicas-max-lag 1`` on the servers (the
    master refuses writes once its replica is 1 s out of reach), and with ``wait_replicas: 1`` on
    the connection (every push waits for the replica: none is acknowledged, none is lost)."""
    import json

    result = Result("netns-sentinel-partition")
    rounds = ["wait"] if quick else list(GUARDS)
    with Scene(result.scenario) as scene:
        reason = why_not()
        if reason:
            raise Unavailable(f"no network namespaces here: {reason}")
        figures = []
        for name in rounds:
            options, extra = GUARDS[name]
            net = Network(scene.dir / name, ["m", "r", "s"])
            scene._stack.callback(net.close)
            net.start()
            m, r, s = (net.hosts[h] for h in ("m", "r", "s"))
            servers = [NetnsData(scene.dir / name / "master", m, None, extra).start(),
                       NetnsData(scene.dir / name / "replica", r, m.address, extra).start()]
            sentinels = [NetnsSentinel(scene.dir / name / f"sentinel-{h.name}", h, m.address).start()
                         for h in (m, r, s)]
            for server in [*servers, *sentinels]:
                scene._stack.callback(server.stop)
            url = "redis+sentinel://" + ",".join(f"{x.address}:26379" for x in (m, r, s)) + f"/{SERVICE}"
            target = Target("redis", url, retry_after=5.0, options=json.dumps(options) if options else "")
            wait_until(lambda: _replicated(servers[1]), 30)
            stop = scene.dir / f"{name}.stop"
            env = scene.env(target, CHAOS_STOP_FILE=str(stop))
            dispatcher = subprocess.Popen(m.command(sys.executable, "-m", "chaos.apps.dispatcher"), env=env,
                                          cwd=scene.dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_until(lambda: _pushed(scene, dispatcher.pid, 0) >= 200, 60)
            cut_at = time.monotonic()
            for other in ("r", "s"):
                net.cut("m", other)
            time.sleep(PARTITION_S)
            stop.write_text("stop")
            dispatcher.wait(30)
            acked = [e for e in scene.ledger.entries() if e.kind == "pushed" and e.pid == dispatcher.pid]
            promoted = wait_until(lambda: _role(servers[1]) == "master", 20)
            kept = _kept(servers[1], [e.uuid for e in acked]) if promoted else set()
            lost = [e for e in acked if e.uuid not in kept]
            after = [e for e in acked if e.t > cut_at]
            refused = sum(1 for e in scene.ledger.entries() if e.kind == "refused" and e.pid == dispatcher.pid)
            result.enqueued += len(acked)
            result.lost += len(lost) if name == "wait" else 0
            figures.append(f"{name}: {len(lost)} of {len(acked)} acknowledged pushes lost ({len(after)} acknowledged "
                           f"during the {PARTITION_S:.0f}s partition, {refused} refused)")
            if name == "wait":
                result.check("wait-loses-nothing", promoted and not lost,
                             f"promoted: {promoted}; {len(lost)} acknowledged pushes lost with wait_replicas 1")
            else:
                result.check(f"{name}-bounded", promoted and len(lost) <= len(after),
                             f"{len(lost)} lost, {len(after)} acknowledged after the partition began")
            net.close()
        result.note("; ".join(figures))
    return result


def _replicated(replica: NetnsRedis) -> bool:
    try:
        return replica.client().info("replication").get("master_link_status") == "up"
    except redis.RedisError:
        return False


def _role(server: NetnsRedis) -> str:
    try:
        return str(server.client().info("replication").get("role"))
    except redis.RedisError:
        return "?"


def _pushed(scene: Scene, pid: int, after: float) -> int:
    return sum(1 for e in scene.ledger.entries() if e.kind == "pushed" and e.pid == pid and e.t > after)


def _kept(server: NetnsRedis, uuids: list[str]) -> set[str]:
    """The jobs among ``uuids`` the server still has (queued, or ever run: their body is kept
    until acknowledged; nothing runs here)."""
    client = server.client()
    found = client.hmget("queues:{default}:bodies", uuids) if uuids else []
    return {u for u, body in zip(uuids, found) if body is not None}
