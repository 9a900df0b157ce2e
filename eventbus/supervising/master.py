"""``eventbus supervise``: one master process that runs every supervisor's workers.

Each supervisor's workers are grouped in pools of :class:`~eventbus.worker.supervisor.Supervisor`
(the same one ``eventbus work --processes N`` uses: children forked after the app was imported,
a child that dies replaced with backoff): one pool per queue with ``balance`` ``auto`` or
``simple``, one pool whose workers take every queue in order with ``balance=False``. The master
runs the pools in one loop (no thread: it forks) and, about once a second:

- reads its commands in each connection's state store: ``eventbus terminate`` (finish the jobs
  in hand and exit 0), ``eventbus supervise pause|continue`` (no balancing while paused; the
  workers read the same flag and idle);
- balances each ``auto`` supervisor whose ``balance_cooldown`` has passed, by its queues' time
  to clear (:mod:`eventbus.supervising.balancing`): ready jobs from the queue, average runtime
  from the metrics the workers write. A pool that shrinks sends SIGTERM to its newest workers,
  which finish the job in hand and exit: no job is lost;
- publishes its supervisors (:mod:`eventbus.supervising.state`) for ``eventbus supervisors``;
- looks at its queues' long waits, where ``configure(waits=...)`` sets a limit, every few
  seconds (:mod:`eventbus.monitoring.wait_watch`): ``LongWaitDetected`` emitted, and sent to
  ``configure(alerts=...)`` under the cooldown ``eventbus monitor`` shares.

SIGTERM or SIGINT stop it as ``eventbus terminate`` does. A store that cannot be reached is
logged once per outage; the workers keep running meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

from eventbus import runtime
from eventbus.errors import ConfigurationError, EventBusError
from eventbus.monitoring import pausing
from eventbus.monitoring.metrics import read_samples, totals_by
from eventbus.monitoring.registry import HEARTBEAT_S
from eventbus.monitoring.wait_watch import WaitWatch
from eventbus.supervising.balancing import QueueLoad, auto_counts, simple_counts
from eventbus.supervising.options import SupervisorOptions
from eventbus.supervising.state import SupervisorRegistry, SupervisorState, terminations
from eventbus.worker.supervisor import Supervisor

log = logging.getLogger(__name__)

#: How often the master looks at its children.
TICK_S = 0.2
#: How often it reads its commands and balances.
CHECK_S = 1.0
#: The minutes of metrics a queue's average runtime is taken from.
RUNTIME_WINDOW_S = 300.0

#: Builds a (not started) pool of workers for a supervisor: its queues, its first process count.
PoolFactory = Callable[[SupervisorOptions, tuple[str, ...], int], Supervisor]


def planned_pools(options: SupervisorOptions) -> list[tuple[str, tuple[str, ...], int]]:
    """``(key, queues, processes)`` of each pool a supervisor starts with."""
    if options.balance is False:
        return [(",".join(options.queues), options.queues, options.max_processes)]
    if options.balance == "simple":
        counts = simple_counts(options.queues, options.max_processes)
    else:
        counts = {queue: options.min_processes for queue in options.queues}
    return [(queue, (queue,), counts[queue]) for queue in options.queues]


class Supervision:
    """One supervisor at work: its pools, paused or not, when it was balanced last."""

    def __init__(self, options: SupervisorOptions, pool: PoolFactory) -> None:
        self.options = options
        self.pools = {key: pool(options, queues, n) for key, queues, n in planned_pools(options)}
        self.paused = False
        self.balanced_at = time.monotonic()
        self.started_at = time.time()

    def counts(self) -> dict[str, int]:
        return {key: pool.processes for key, pool in self.pools.items()}

    def due(self, now: float) -> bool:
        """Whether an ``auto`` supervisor may change its counts now (cooldown passed, not paused)."""
        return (self.options.balance == "auto" and not self.paused
                and now - self.balanced_at >= self.options.balance_cooldown)

    def balance(self, loads: Sequence[QueueLoad], now: float) -> None:
        o = self.options
        self.balanced_at = now
        before = self.counts()
        after = auto_counts(loads, before, min_processes=o.min_processes, max_processes=o.max_processes,
                            max_shift=o.balance_max_shift)
        if after != before:
            log.info("supervisor %s: processes %s -> %s", o.name, _counts(before), _counts(after))
        for key, processes in after.items():
            self.pools[key].scale(processes)

    def state(self, host: str, pid: int, status: str) -> SupervisorState:
        o = self.options
        return SupervisorState(name=o.name, connection=o.connection, host=host, pid=pid, queues=o.queues,
                               balance=o.balance, processes=self.counts(), min_processes=o.min_processes,
                               max_processes=o.max_processes,
                               status="paused" if self.paused and status == "running" else status,
                               started_at=self.started_at, last_heartbeat=time.time())


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{key}={n}" for key, n in counts.items())


def queue_loads(options: SupervisorOptions) -> list[QueueLoad]:
    """Each queue's ready jobs and average runtime over the last minutes (from the metrics)."""
    connection = options.connection
    samples = read_samples(runtime.state(connection), connection, since=time.time() - RUNTIME_WINDOW_S)
    runtimes = {queue: tally.avg_runtime_s for (queue, _), tally in totals_by(samples, job=False).items()}
    queue = runtime.connection(connection)
    return [QueueLoad(name, queue.stats(name).ready, runtimes.get(name)) for name in options.queues]


class Master:
    """Runs supervisors until SIGTERM, SIGINT or ``eventbus terminate``; :meth:`run` returns 0
    once every worker finished its job in hand."""

    def __init__(self, supervisors: Sequence[SupervisorOptions], pool: PoolFactory, *,
                 heartbeat_s: float = HEARTBEAT_S) -> None:
        self.supervising = [Supervision(options, pool) for options in supervisors]
        self.heartbeat_s = heartbeat_s
        self.stopping = False
        self.host, self.pid = socket.gethostname(), os.getpid()
        self._terminations: dict[str, str | None] = {}
        self._unreachable: set[str] = set()
        self._published_at = 0.0
        #: Long waits of the supervisors' queues (None once alerts turned out not to be sendable).
        self.waits: WaitWatch | None = WaitWatch(
            (s.options.connection, queue) for s in self.supervising for queue in s.options.queues)

    @property
    def connections(self) -> list[str]:
        return sorted({s.options.connection for s in self.supervising})

    @property
    def pools(self) -> list[Supervisor]:
        return [pool for s in self.supervising for pool in s.pools.values()]

    def run(self) -> int:
        previous = {signum: signal.signal(signum, self._on_stop) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            for connection in self.connections:  # what ``terminate`` said before this master started
                with self._reaching(connection):
                    self._terminations[connection] = terminations(runtime.state(connection), connection)
            for pool in self.pools:
                pool.start()
            log.info("supervising %s", "; ".join(f"{s.options.name}: {_counts(s.counts())}"
                                                  for s in self.supervising))
            self._loop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._publish("stopped")
        return 0

    def _loop(self) -> None:
        checked_at = 0.0
        while not self.stopping or any(pool.busy() for pool in self.pools):
            time.sleep(TICK_S)
            for pool in self.pools:
                pool.tend()
            now = time.monotonic()
            if not self.stopping and now - checked_at >= CHECK_S:
                checked_at = now
                self.check(now)

    def check(self, now: float) -> None:
        """Read the commands, balance what is due, publish the state when its heartbeat is due."""
        for connection in self.connections:
            with self._reaching(connection):
                self._read_commands(connection)
        if self.stopping:
            return
        for supervision in self.supervising:
            if supervision.due(now):
                with self._reaching(supervision.options.connection):
                    supervision.balance(queue_loads(supervision.options), now)
        if now - self._published_at >= self.heartbeat_s:
            self._published_at = now
            self._publish("running")
        self._watch_waits(now)

    def _watch_waits(self, now: float) -> None:
        """Emit (and send) ``LongWaitDetected`` for the queues that wait past their limit."""
        if self.waits is None or not self.waits.due(now):
            return
        for connection in self.waits.connections:
            with self._reaching(connection):
                try:
                    self.waits.check(connection, now)
                except ConfigurationError as exc:  # alerts configured, but nothing can send them
                    log.error("supervise: long waits are not watched: %s", exc)
                    self.waits = None
                    return

    def _read_commands(self, connection: str) -> None:
        store = runtime.state(connection)
        count = terminations(store, connection)
        if connection not in self._terminations:  # unreachable at the start: from now on
            self._terminations[connection] = count
        elif count != self._terminations[connection]:
            log.info("terminate: finishing the jobs in hand, then exiting")
            self.stop()
            return
        paused = pausing.paused_supervisors(store, connection)
        for supervision in self.supervising:
            if supervision.options.connection == connection:
                was, supervision.paused = supervision.paused, supervision.options.name in paused
                if was != supervision.paused:
                    self._published_at = 0.0  # shown at once, not at the next heartbeat
                    log.info("supervisor %s %s", supervision.options.name,
                             "paused" if supervision.paused else "continues")

    def stop(self) -> None:
        """Every worker finishes its job in hand and exits; none is started again."""
        self.stopping = True
        for pool in self.pools:
            pool.stop()

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop()

    def _publish(self, status: str) -> None:
        for connection in self.connections:
            states = [s.state(self.host, self.pid, status) for s in self.supervising
                      if s.options.connection == connection]
            with self._reaching(connection):
                registry = SupervisorRegistry(runtime.state(connection), connection,
                                              heartbeat_s=self.heartbeat_s)
                if status == "stopped":
                    for state in states:
                        registry.remove(state)
                else:
                    registry.publish(states)

    @contextlib.contextmanager
    def _reaching(self, connection: str) -> Iterator[None]:
        """Log an unreachable store once per outage; the workers keep running meanwhile."""
        try:
            yield
        except EventBusError as exc:
            if connection not in self._unreachable:
                log.warning("supervise: connection %s cannot be reached (%s); the workers keep "
                            "their numbers until it answers", connection, exc)
            self._unreachable.add(connection)
            return
        if connection in self._unreachable:
            log.warning("supervise: connection %s answers again", connection)
            self._unreachable.discard(connection)
