"""The observer ``eventbus work`` attaches: registry heartbeat, metrics, history, recent jobs, pauses.

All writes happen in one background thread, never in a job's path: the heartbeat (the worker's
entry and, when it changed, its recent jobs) and the completed and failed jobs for the
recent-jobs store (:mod:`eventbus.tracking`, one write per batch) every
:data:`~registry.HEARTBEAT_S` seconds (the jobs sooner when a fast worker has
:data:`~eventbus.tracking.recorder.FLUSH_AT` of them waiting), and the
metrics flush every ``flush_s`` (5 s by default, ``EVENTBUS_MONITOR_INTERVAL`` to change it),
then once more when the worker stops (bounded: a server that does not answer cannot hold the
exit up). After each heartbeat it offers to take the minute's metrics snapshot
(:mod:`~eventbus.monitoring.history`: one process of all that offer writes it). Reading the paused queues (one ``get`` of a version counter) rides on the worker's
once-a-second signal check. A store that cannot be reached is logged once per outage; the worker
keeps working.

Per job the worker's thread only notes the attempt (a tuple on a queue); the noted attempts are
counted into the metrics and the recent jobs before each heartbeat and flush (by the monitor's
thread), or by the worker's thread once 1,024 are waiting.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from eventbus import config, runtime
from eventbus.errors import DeserializationError, EventBusError
from eventbus.monitoring import pausing
from eventbus.monitoring.failure_alerts import FailureAlerts
from eventbus.monitoring.history import SETTLE_S, HistoryWriter
from eventbus.monitoring.metrics import MetricsRecorder
from eventbus.monitoring.observer import ObservedWorker, WorkerObserver
from eventbus.monitoring.registry import HEARTBEAT_S, CurrentJob, FinishedJob, WorkerInfo, WorkerRegistry
from eventbus.payload import pushed_at_of
from eventbus.state.base import StateStore
from eventbus.tracking.recorder import FLUSH_AT, JobRecorder
from eventbus.tracking.records import COMPLETED, FAILED, JobRecord, exception_line

if TYPE_CHECKING:
    from eventbus.queue.base import Queue, QueueJob
    from eventbus.worker.processing import Outcome

log = logging.getLogger(__name__)

FLUSH_S = 5.0
RECENT_PER_WORKER = 50
#: How many attempts the worker notes before it counts them itself (the monitor's thread counts
#: them at every heartbeat and flush; this keeps a fast worker's notes few in between).
FOLD_AT = 1024
STOP_GRACE_S = 3.0
INTERVAL_ENV = "EVENTBUS_MONITOR_INTERVAL"


#: The name a job goes by when its payload cannot be read.
UNREADABLE = "(unreadable payload)"
#: The name a job goes by when its payload was refused: a name it gives itself is never shown.
REFUSED = "(refused payload)"


def job_name(job: QueueJob) -> str:
    """The display name a log line, a metric or a worker entry shows for ``job``: its own only
    once its payload was accepted (signature, envelope and names checked)."""
    if job.refusal is not None:
        return REFUSED
    try:
        return job.payload().display_name
    except DeserializationError:
        return UNREADABLE


#: How many different job names one worker process puts in its metrics (labels, state keys).
#: A payload names itself: without ``EVENTBUS_KEY`` anyone who can write to the queue could
#: make up a name per job and grow the metrics without bound. Past this many, the names not
#: seen yet are all counted as :data:`OTHER_JOBS`.
MAX_JOB_NAMES = 500
OTHER_JOBS = "(other jobs)"


class JobNames:
    """The names a worker's metrics use for its jobs: :func:`job_name`, at most ``limit`` of them."""

    def __init__(self, limit: int = MAX_JOB_NAMES) -> None:
        self.limit = limit
        self._known: set[str] = set()
        self._full = False
        self._lock = threading.Lock()

    def label(self, job: QueueJob) -> str:
        return self.bounded(job_name(job))

    def bounded(self, name: str) -> str:
        if name in self._known:
            return name
        with self._lock:
            if len(self._known) < self.limit:
                self._known.add(name)
                return name
            if not self._full:
                self._full = True
                log.warning("metrics: more than %d job names seen; jobs with a name not seen "
                            "before are counted as %s", self.limit, OTHER_JOBS)
        return OTHER_JOBS


_STATUSES = {"DONE": "done", "FAIL": "failed"}
#: The attempts the recent-jobs store keeps, by outcome.
_RECORDED = {"DONE": COMPLETED, "FAIL": FAILED}


def status_of(outcome: Outcome) -> str:
    return _STATUSES.get(outcome._value_, "released")


def _wait_s(attempt: int, pushed: float | None, started_at: float) -> float | None:
    """How long a first attempt waited in its queue (later attempts waited for their backoff)."""
    return max(started_at - pushed, 0.0) if pushed is not None and pushed > 0 and attempt <= 1 else None


def flush_interval_from_env() -> float:
    try:
        value = float(config.env(INTERVAL_ENV) or FLUSH_S)
    except ValueError:
        value = FLUSH_S
    return value if value > 0 else FLUSH_S


class WorkerMonitor(WorkerObserver):
    """Keeps one worker visible: its registry entry, its metrics, its recent jobs."""

    def __init__(self, store: StateStore, connection: str, *, flush_s: float | None = None,
                 heartbeat_s: float | None = None, queue: Queue | None = None) -> None:
        self.store = store
        self.connection = connection
        self.recorder = MetricsRecorder(connection)
        #: The finished jobs for the recent-jobs store, written at each heartbeat (and between
        #: heartbeats once FLUSH_AT wait).
        self.jobs = JobRecorder(connection)
        self.names = JobNames()
        self.flush_s = flush_s if flush_s is not None else flush_interval_from_env()
        self.heartbeat_s = heartbeat_s if heartbeat_s is not None else min(HEARTBEAT_S, self.flush_s)
        self.registry = WorkerRegistry(store, connection, heartbeat_s=self.heartbeat_s)
        self.paused = pausing.PausedQueues(store, connection)
        #: Waits for the other workers' flushes too (their interval is likely this one's).
        self.history = HistoryWriter(store, connection, queue=queue,
                                     settle_s=max(SETTLE_S, 2 * self.flush_s))
        self.info: WorkerInfo | None = None
        self._lock = threading.Lock()
        #: (uuid, queue, attempt, name, status, runtime, wait, finished at, worker) of the latest attempts.
        self._recent: collections.deque[tuple[str, str, int, str, str, float, float | None, float, str]] = \
            collections.deque(maxlen=RECENT_PER_WORKER)
        self._recent_version = 0
        #: Attempts noted by the worker's thread, not counted yet (see :meth:`fold`).
        self._finished: collections.deque[tuple[Any, ...]] = collections.deque()
        self._folding = threading.Lock()
        self._written_version = 0
        self._job_started_at = 0.0
        self._current: QueueJob | None = None
        self._processed = 0
        self._failed = 0
        self._stop = threading.Event()
        #: Set when the finished jobs pile up (FLUSH_AT) or the worker stops: wakes the thread.
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    # -- the hooks ------------------------------------------------------------------------------
    def worker_started(self, worker: ObservedWorker) -> None:
        self.info = WorkerInfo(name=worker.options.name, host=socket.gethostname(), pid=os.getpid(),
                               connection=self.connection, queues=tuple(worker.queues),
                               started_at=time.time(), supervisor=worker.options.supervisor)
        self._thread = threading.Thread(target=self._report, args=(worker,), daemon=True,
                                        name="eventbus-monitor")
        self._thread.start()

    def worker_stopped(self, worker: ObservedWorker, status: int) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(STOP_GRACE_S)

    def job_started(self, worker: ObservedWorker, job: QueueJob) -> None:
        # Only the job and the moment: the entry is built in the background thread (snapshot)
        self._job_started_at = time.time()
        self._current = job

    def job_finished(self, worker: ObservedWorker, job: QueueJob, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        """Note the attempt's facts, to be counted in a batch later (:meth:`fold`): a job costs
        its worker a tuple, not the metrics' and the recent list's bookkeeping."""
        tags: tuple[str, ...]
        try:  # the name, the uuid and the push time from one look at the payload
            payload = job.payload()
        except DeserializationError:
            name, uuid, tags, command = job_name(job), job.uuid, (), ""
            pushed = pushed_at_of(job.raw) if job.attempts <= 1 else None
        else:
            name, uuid, pushed = self.names.bounded(payload.display_name), payload.uuid, payload.pushed_at
            tags, command = payload.tags, payload.command_name
        # the raw facts only (not the job itself, which would keep bodies and payloads alive)
        self._finished.append((uuid, job.queue_name, job.attempts, name, outcome, runtime_s, pushed,
                               self._job_started_at, time.time(), worker.options.name, tags, command,
                               exception_line(exc) if exc is not None and outcome._value_ == "FAIL" else ""))
        self._current = None
        if len(self._finished) >= FOLD_AT:  # the thread is late (or not running): keep memory flat
            self.fold()

    def fold(self) -> None:
        """Count the attempts noted since the last fold: metrics, recent jobs, totals (one fold
        at a time: the worker's thread and the monitor's may both call it)."""
        with self._folding:
            finished, taken = self._finished, []
            while finished:
                taken.append(finished.popleft())  # only under this lock: never empty here
            if taken:
                self._count(taken)

    def _count(self, taken: list[tuple[Any, ...]]) -> None:
        counted = [(queue, name, status_of(outcome), runtime_s, _wait_s(attempt, pushed, started_at), at)
                   for _, queue, attempt, name, outcome, runtime_s, pushed, started_at, at, *_ in taken]
        self.jobs.add(self._records(taken))
        if self.jobs.waiting >= FLUSH_AT:  # a fast worker: write them before the next heartbeat
            self._wake.set()
        self.recorder.record_many(counted)
        statuses = [status for _, _, status, _, _, _ in counted]
        recent = [(uuid, queue, attempt, name, status, runtime_s, wait_s, at, worker_name)
                  for (uuid, queue, attempt, name, _, runtime_s, _, _, at, worker_name, *_),
                  (_, _, status, _, wait_s, _) in zip(taken[-RECENT_PER_WORKER:],
                                                      counted[-RECENT_PER_WORKER:])]
        with self._lock:
            self._recent.extendleft(recent)
            self._recent_version += 1
            self._processed += len(statuses) - statuses.count("released")
            self._failed += statuses.count("failed")

    def _records(self, taken: list[tuple[Any, ...]]) -> list[JobRecord]:
        """The completed and failed jobs among ``taken``, for the recent-jobs store (released
        attempts are not finished). A status kept 0 seconds (``retention={"completed": 0}``) is
        not built at all, but for jobs with tags: one of them may be monitored, which the store
        knows."""
        records = []
        kept = runtime.settings().retention_s
        for (uuid, queue, attempt, name, outcome, runtime_s, pushed, started_at, at, _, tags, command,
             exc) in taken:
            status = _RECORDED.get(outcome._value_)
            if status is not None and (tags or kept[status] > 0):
                records.append(JobRecord(
                    uuid=uuid, name=name, connection=self.connection, queue=queue, status=status,
                    tags=tags, attempts=attempt, pushed_at=pushed, started_at=started_at,
                    finished_at=at, runtime_s=runtime_s, command=command, exception=exc))
        return records

    def paused_queues(self, worker: ObservedWorker) -> frozenset[str] | None:
        """The paused queues; every queue of the worker while its supervisor is paused."""
        try:
            paused = self.paused.current()
            supervisor = worker.options.supervisor
            return paused | frozenset(worker.queues) if supervisor and self.paused.supervisor_paused(supervisor) \
                else paused
        except EventBusError as exc:
            log.debug("cannot read paused queues: %s", exc)
            return None

    # -- the background thread ------------------------------------------------------------------
    def _current_job(self) -> CurrentJob | None:
        """What the worker runs now, described (the worker's thread only records the job)."""
        job = self._current
        if job is None:
            return None
        return CurrentJob(name=job_name(job), uuid=job.uuid, queue=job.queue_name,
                          attempt=job.attempts, started_at=self._job_started_at)

    def snapshot(self, worker: ObservedWorker) -> tuple[WorkerInfo | None, list[FinishedJob] | None, int]:
        """The entry to write now, the recent jobs if they changed since the last write, and
        their version (see :meth:`_heartbeat`)."""
        self.fold()
        current = self._current_job()
        with self._lock:
            info = self.info
            if info is None:
                return None, None, 0
            status = "working" if current is not None else "idle"
            if current is None and (worker.paused or set(worker.queues) <= worker.paused_queues):
                status = "paused"
            info = dataclasses.replace(info, status=status, last_heartbeat=time.time(), job=current,
                                       processed=self._processed, failed=self._failed)
            changed = self._recent_version != self._written_version
            recent = list(self._recent) if changed else None
            version = self._recent_version
        entries = None if recent is None else [
            FinishedJob(uuid=uuid, name=name, queue=queue, status=outcome, attempt=attempt,
                        runtime_s=runtime_s, wait_s=wait_s, finished_at=at, worker=worker_name,
                        connection=self.connection)
            for uuid, queue, attempt, name, outcome, runtime_s, wait_s, at, worker_name in recent]
        return info, entries, version

    def _report(self, worker: ObservedWorker) -> None:
        flushed_at = beat_at = time.monotonic()
        self._safely(lambda: self._heartbeat(worker), self.history.take_due)  # visible at once
        while True:
            self._wake.wait(max(beat_at + self.heartbeat_s - time.monotonic(), 0.0))
            if self._stop.is_set():
                break
            self._wake.clear()
            if time.monotonic() < beat_at + self.heartbeat_s:
                # woken early: finished jobs piled up. Written now, unless the store is failing
                # (the heartbeat's round tries again, at its time); the heartbeat keeps its time.
                if not self._failing and self.jobs.waiting >= FLUSH_AT:
                    self._safely(self._flush_jobs, early=True)
                continue
            beat_at = time.monotonic()
            due = beat_at - flushed_at >= self.flush_s
            if due:
                flushed_at = beat_at
            self._safely(lambda: self._heartbeat(worker), self._flush_jobs,
                         *((self._flush_metrics,) if due else ()), self.history.take_due)
        self._safely(self._flush_metrics, self._flush_jobs, lambda: self._heartbeat(worker, final=True))

    def _flush_metrics(self) -> None:
        self.fold()
        self.recorder.flush(self.store)

    def _flush_jobs(self) -> None:
        self.fold()
        self.jobs.flush()

    def _heartbeat(self, worker: ObservedWorker, final: bool = False) -> None:
        info, recent, version = self.snapshot(worker)
        if info is None:
            return
        if not final or recent is not None:
            self.registry.heartbeat(info, recent)
        with self._lock:
            self._written_version = max(self._written_version, version)
        if final:
            self.registry.remove(info)

    def _safely(self, *actions: Callable[[], object], early: bool = False) -> None:
        """Run one round of writes; a broken store never stops the worker. The store is said to
        be back only when a whole round worked: some writes of a round may have nothing to do
        (nothing to flush, no minute due) and succeed without reaching the store, and an outage
        must not be logged as over and begun again at every heartbeat. An ``early`` round (the
        finished jobs only, between heartbeats) may find the store failing, never back."""
        failure: Exception | None = None
        for action in actions:
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - logged once per outage below
                failure = failure or exc
        if failure is not None:
            if not self._failing:
                log.warning("worker monitoring cannot write to the state store of %r (retrying): %s",
                            self.connection, failure)
            self._failing = True
            return
        if early:
            return
        if self._failing:
            log.info("worker monitoring writes to the state store of %r again", self.connection)
        self._failing = False


def default_observers(queue: Queue, store: StateStore) -> list[WorkerObserver]:
    """What ``eventbus work`` watches a worker with: the monitor, the failure alerts when alerts
    are configured, and what the integrations add (tracing, when enabled:
    :func:`eventbus.runtime.observe_workers`)."""
    observers: list[WorkerObserver] = [WorkerMonitor(store, queue.connection_name, queue=queue)]
    if runtime.settings().alerts:
        observers.append(FailureAlerts(queue.connection_name, job_name))
    observers.extend(runtime.worker_observers())
    return observers
