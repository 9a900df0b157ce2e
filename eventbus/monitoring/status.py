"""What the queues and workers are doing now: the read side of ``eventbus status``, ``workers``,
``monitor`` and the dashboard.

Every connection that workers consume is looked at (or the ones named). A queue is listed when it
holds jobs now, held jobs in the last day (workers note each queue they took jobs from), or is
paused. A connection that cannot be reached is reported as a problem; the others are still shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from eventbus import runtime
from eventbus.errors import EventBusError
from eventbus.monitoring import keys, pausing
from eventbus.monitoring.registry import FinishedJob, WorkerInfo, WorkerRegistry
from eventbus.queue.base import QueueStats
from eventbus.state.base import StateStore


@dataclasses.dataclass(frozen=True)
class QueueStatus:
    """One queue: its counts, the age of its oldest ready job, whether it is paused."""

    connection: str
    queue: str
    ready: int
    delayed: int
    reserved: int
    oldest_ready_age_s: float | None
    paused: bool = False

    @property
    def size(self) -> int:
        return self.ready + self.delayed + self.reserved

    @classmethod
    def of(cls, connection: str, stats: QueueStats, paused: bool) -> QueueStatus:
        return cls(connection, stats.queue, stats.ready, stats.delayed, stats.reserved,
                   stats.oldest_ready_age_s, paused)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "size": self.size}


#: Exit codes of ``eventbus status`` (and ``monitor``), for health checks and cron alerts.
HEALTHY, NEEDS_ATTENTION, UNREACHABLE = 0, 1, 2


@dataclasses.dataclass(frozen=True)
class Status:
    """Queues, workers, failed jobs, and what could not be read."""

    queues: list[QueueStatus]
    workers: list[WorkerInfo]
    failed: int | None
    problems: list[str]
    #: The connections looked at.
    connections: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"queues": [q.to_dict() for q in self.queues],
                "workers": [w.to_dict() for w in self.workers],
                "failed": self.failed, "problems": self.problems}

    def alerts(self, *, max_size: int | None = None, min_workers: int = 0) -> list[str]:
        """What needs an operator: each queue holding ``max_size`` jobs or more, each connection
        with fewer than ``min_workers`` live workers."""
        found = [f"queue {q.connection}:{q.queue} holds {q.size:,} jobs (limit {max_size:,})"
                 for q in self.queues if max_size is not None and q.size >= max_size]
        for name in self.connections:
            running = sum(1 for w in self.workers if w.connection == name)
            if running < min_workers:
                found.append(f"connection {name} has {running} live workers (at least {min_workers} expected)")
        return found

    def exit_code(self, *, max_size: int | None = None, min_workers: int = 0) -> int:
        """:data:`UNREACHABLE` when a broker or store could not be read, else
        :data:`NEEDS_ATTENTION` when there are :meth:`alerts`, else :data:`HEALTHY`."""
        if self.problems:
            return UNREACHABLE
        return NEEDS_ATTENTION if self.alerts(max_size=max_size, min_workers=min_workers) else HEALTHY


def connections(names: Iterable[str] | None = None) -> list[str]:
    """The connections to look at: those named, else every connection workers consume."""
    chosen = list(names or [])
    return chosen or runtime.connection_names(with_workers=True)


def seen_queues(store: StateStore, connection: str) -> set[str]:
    prefix = keys.queues(connection)
    return {keys.unpart(key[len(prefix):]) for key in store.scan(prefix)}


def queue_statuses(connection: str) -> list[QueueStatus]:
    """Every queue of ``connection`` that holds or held jobs, or is paused."""
    queue, store = runtime.connection(connection), runtime.state(connection)
    paused = pausing.paused_queues(store, connection)
    names = set(queue.queues()) | seen_queues(store, connection) | paused
    return [QueueStatus.of(connection, queue.stats(name), name in paused) for name in sorted(names)]


def workers_of(connection: str) -> list[WorkerInfo]:
    return WorkerRegistry(runtime.state(connection), connection).workers()


def recent_jobs(connection: str) -> list[FinishedJob]:
    return WorkerRegistry(runtime.state(connection), connection).recent_jobs()


def failed_count() -> int:
    return len(runtime.failed_store().all())


def status(names: Iterable[str] | None = None, *, with_failed: bool = True) -> Status:
    """Queues and workers of the connections, and the failed job count."""
    queues: list[QueueStatus] = []
    workers: list[WorkerInfo] = []
    problems: list[str] = []
    watched = connections(names)
    for name in watched:
        try:
            queues.extend(queue_statuses(name))
            workers.extend(workers_of(name))
        except EventBusError as exc:
            problems.append(f"{name}: {exc}")
    failed = None
    if with_failed:
        try:
            failed = failed_count()
        except EventBusError as exc:
            problems.append(f"failed job store: {exc}")
    return Status(queues, workers, failed, problems, watched)
