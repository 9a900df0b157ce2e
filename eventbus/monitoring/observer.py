"""What a worker tells the code that watches it: the :class:`WorkerObserver` hooks.

The worker calls these hooks at fixed moments and nothing else: when it starts and stops, before
and after each job, and on its once-a-second signal check (which also asks which queues are
paused). Monitoring (the registry, metrics, paused queues), Prometheus and tracing are observers.
A hook must be cheap (no round trip per job) and must not raise: :class:`Observers` logs an
observer's exception and goes on, so watching a worker can never break it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob
    from eventbus.worker.options import WorkerOptions
    from eventbus.worker.processing import Outcome

log = logging.getLogger(__name__)


class ObservedWorker(Protocol):
    """What a hook may read of the worker it watches (an :class:`eventbus.Worker` is one): its
    options, its queues, and whether it is paused; not the loop that calls the hooks."""

    @property
    def options(self) -> WorkerOptions: ...
    @property
    def queues(self) -> Sequence[str]: ...
    @property
    def paused(self) -> bool: ...
    @property
    def paused_queues(self) -> frozenset[str]: ...


class WorkerObserver:
    """Hooks a worker calls; each does nothing here. Subclass and override what you need."""

    def worker_started(self, worker: ObservedWorker) -> None:
        """The worker checked its connection and is about to take its first job."""

    def worker_stopped(self, worker: ObservedWorker, status: int) -> None:
        """The worker is about to exit with ``status`` (not called for a hard exit)."""

    def job_started(self, worker: ObservedWorker, job: QueueJob) -> None:
        """A job was reserved and is about to be processed (in the worker's main thread)."""

    def job_finished(self, worker: ObservedWorker, job: QueueJob, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        """A job's attempt ended: done, released or failed."""

    def paused_queues(self, worker: ObservedWorker) -> frozenset[str] | None:
        """Queues the worker must skip, or None for "no opinion" (asked once a second)."""
        return None


class Observers(WorkerObserver):
    """Several observers as one; an observer that raises is logged and skipped.

    The per-job hooks are looked up once: an observer that does not override ``job_started`` or
    ``job_finished`` costs nothing per job (every job calls both).
    """

    def __init__(self, observers: Sequence[WorkerObserver] = ()) -> None:
        self.observers = list(observers)
        self._job_started = _overriding(self.observers, "job_started")
        self._job_finished = _overriding(self.observers, "job_finished")

    def _each(self, hook: str, *args: object) -> list[object]:
        results = []
        for observer in self.observers:
            try:
                results.append(getattr(observer, hook)(*args))
            except Exception:
                _log_failure(observer, hook)
        return results

    def worker_started(self, worker: ObservedWorker) -> None:
        self._each("worker_started", worker)

    def worker_stopped(self, worker: ObservedWorker, status: int) -> None:
        self._each("worker_stopped", worker, status)

    def job_started(self, worker: ObservedWorker, job: QueueJob) -> None:
        for observer, hook in self._job_started:
            try:
                hook(worker, job)
            except Exception:
                _log_failure(observer, "job_started")

    def job_finished(self, worker: ObservedWorker, job: QueueJob, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        for observer, hook in self._job_finished:
            try:
                hook(worker, job, outcome, runtime_s, exc)
            except Exception:
                _log_failure(observer, "job_finished")

    def paused_queues(self, worker: ObservedWorker) -> frozenset[str] | None:
        answers = [a for a in self._each("paused_queues", worker) if isinstance(a, frozenset)]
        return frozenset().union(*answers) if answers else None


def _overriding(observers: Sequence[WorkerObserver],
                hook: str) -> list[tuple[WorkerObserver, Callable[..., None]]]:
    """Each observer that does something in ``hook`` (not the base no-op), with its bound hook."""
    base = getattr(WorkerObserver, hook)
    return [(o, getattr(o, hook)) for o in observers if getattr(type(o), hook, None) is not base]


def _log_failure(observer: WorkerObserver, hook: str) -> None:
    log.exception("worker observer %s failed in %s", type(observer).__name__, hook)
