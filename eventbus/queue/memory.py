"""The memory driver: a connection's queues in this process's memory (``{"driver": "memory"}``).

For tests, scripts and examples. It keeps the whole driver contract of
:mod:`eventbus.queue.base` the way the Redis and SQL drivers do: payloads byte for byte, push
idempotent by uuid while the job exists, delayed jobs, reservations with a token that expire
after ``retry_after`` and come back, release with or without counting the attempt (one step),
``size``/``clear``/``peek``/``stats``, worker signals, and a :class:`MemoryStateStore` as the
connection's state store (so unique locks, pauses and batches work too).

**Only this process sees the jobs.** A worker started in another process (``eventbus work`` in a
terminal, a supervisor's children, a container) has a store of its own and finds nothing. Run the
jobs where they were pushed: a :class:`~eventbus.Worker` in this process (``--stop-when-empty``
to drain, see :func:`eventbus.testing.memory_queue`) or one on a thread of its own.

Every :class:`MemoryQueue` of one connection name in a process shares one store, so a second
queue object for the same connection (a worker's, a test's) sees the same jobs. The store lives
until its connection is closed (:func:`eventbus.close`, a new :func:`eventbus.configure`,
:func:`eventbus.runtime.reset`): then the jobs are gone, as on a server that was restarted
without persistence; the next use of the connection starts empty.

One lock guards a store; a condition on it wakes an idle worker (:meth:`MemoryQueue.wait`) as
soon as a job is pushed or put back. Times are this process's ``time.monotonic()`` clock.
"""

from __future__ import annotations

import collections
import dataclasses
import heapq
import itertools
import threading
import time
import uuid as uuid_module
from collections.abc import Mapping, Sequence
from typing import Any

from eventbus import runtime
from eventbus.payload import attempts_of
from eventbus.queue.base import Cancellation, JobState, Queue, QueuedJob, QueueJob, QueueStats, id_for
from eventbus.queue.capabilities import Cancellable, GivesBackAttempts, Peekable, ReportsWait, WorkerSignals
from eventbus.state.base import MemoryStateStore

__all__ = ["MemoryQueue", "MemoryStore"]

READY, DELAYED, RESERVED = "ready", "delayed", "reserved"


@dataclasses.dataclass
class _Entry:
    """One stored job: its body, live attempt count and where it is (ready, delayed, reserved).

    ``seq`` orders ready jobs (push order); each move to ready or delayed takes a new one, so
    what a heap holds about an earlier position is recognised as stale and skipped.
    """

    job_id: str
    raw: str
    attempts: int
    queued_at: float
    seq: int = 0
    state: str = READY
    due: float = 0.0
    token: str | None = None
    reserved_until: float = 0.0
    failure: str | None = None


class _NamedQueue:
    """The jobs of one queue: every entry by id, and heaps for the ready, delayed and reserved
    ones (entries that moved on are left in a heap and skipped when they come up)."""

    def __init__(self) -> None:
        self.entries: dict[str, _Entry] = {}
        self.ready: list[tuple[int, str]] = []
        self.delayed: list[tuple[float, int, str]] = []
        self.reserved: list[tuple[float, str, str]] = []

    def counts(self) -> collections.Counter[str]:
        return collections.Counter(entry.state for entry in self.entries.values())


class MemoryStore:
    """Everything one memory connection holds: queues, exception counts, worker signals, state."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: Notified whenever a job may have become ready (push, release, give back).
        self.changed = threading.Condition(self.lock)
        self.queues: dict[str, _NamedQueue] = collections.defaultdict(_NamedQueue)
        self.exceptions: collections.Counter[str] = collections.Counter()
        self.signals: dict[str, float] = {}
        self.state = MemoryStateStore()
        self._seq = itertools.count(1)

    def next_seq(self) -> int:
        return next(self._seq)


def _store_for(connection_name: str) -> MemoryStore:
    """The store of ``connection_name`` in this process, made on first use; a new configuration
    starts with none (they are kept in the runtime's :func:`~eventbus.runtime.cache`)."""
    store: MemoryStore = runtime.cache(__name__).setdefault(connection_name, MemoryStore())
    return store


class MemoryQueue(Queue, Peekable, ReportsWait, Cancellable, GivesBackAttempts, WorkerSignals):
    """The driver contract in one process's memory; see the module docstring (only this process
    sees the jobs)."""

    driver = "memory"
    defaults = {"queue": "default", "retry_after": 90.0}
    holds_reservations = True
    shared_between_processes = False

    @classmethod
    def failed_store_url(cls, config: Mapping[str, Any]) -> str | None:
        """Failed jobs stay in this process too (a :class:`~eventbus.failed.MemoryFailedJobStore`)."""
        return "memory"

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        self.store = _store_for(connection_name)

    # -- pushing ------------------------------------------------------------------------------
    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        """Store ``payload`` as is (ready, or due after ``delay`` seconds); a uuid that is still
        queued adds nothing."""
        job_id = id_for(payload)
        now = time.monotonic()
        with self.store.changed:
            named = self.store.queues[self.queue_name(queue)]
            if job_id not in named.entries:
                entry = named.entries[job_id] = _Entry(job_id, payload, attempts_of(payload), now)
                self._put_back(named, entry, delay, now)
        return job_id

    def _put_back(self, named: _NamedQueue, entry: _Entry, delay: float, now: float,
                  seq: int | None = None, *, keep_token: bool = False) -> None:
        """Make ``entry`` ready (behind the others, or at ``seq``), or delayed by ``delay``;
        wake the waiting workers when it is ready. The store's lock is held."""
        entry.seq = seq or self.store.next_seq()
        entry.token = entry.token if keep_token else None
        if delay > 0:
            entry.state, entry.due = DELAYED, now + delay
            heapq.heappush(named.delayed, (entry.due, entry.seq, entry.job_id))
        else:
            entry.state = READY
            heapq.heappush(named.ready, (entry.seq, entry.job_id))
        self.store.changed.notify_all()

    # -- popping ------------------------------------------------------------------------------
    def pop(self, queue: str | None = None) -> QueueJob | None:
        """Reserve the oldest ready job (due delayed jobs and expired reservations first become
        ready, behind those already waiting), count its attempt and give it a fresh token."""
        name = self.queue_name(queue)
        now = time.monotonic()
        with self.store.lock:
            named = self.store.queues[name]
            self._make_due_ready(named, now)
            entry = self._oldest_ready(named)
            if entry is None:
                return None
            entry.state, entry.token = RESERVED, uuid_module.uuid4().hex
            entry.attempts += 1
            self._reserve_until(named, entry, now + self.retry_after)
            return QueueJob(queue=self, queue_name=name, job_id=entry.job_id, raw=entry.raw,
                            attempts=entry.attempts, token=entry.token, failure=entry.failure,
                            reserved_until=entry.reserved_until)

    def _make_due_ready(self, named: _NamedQueue, now: float) -> None:
        """Due delayed jobs and jobs whose reservation ran out join the ready ones. The latter
        keep their token until a pop replaces it, so the old holder can still delete a job it
        finished (as on SQL)."""
        while named.delayed and named.delayed[0][0] <= now:
            _, seq, job_id = heapq.heappop(named.delayed)
            entry = named.entries.get(job_id)
            if entry is not None and entry.state == DELAYED and entry.seq == seq:
                self._put_back(named, entry, 0.0, now)
        while named.reserved and named.reserved[0][0] <= now:
            until, job_id, token = heapq.heappop(named.reserved)
            entry = named.entries.get(job_id)
            if entry is not None and entry.state == RESERVED and entry.token == token \
                    and entry.reserved_until == until:
                self._put_back(named, entry, 0.0, now, keep_token=True)

    @staticmethod
    def _oldest_ready(named: _NamedQueue) -> _Entry | None:
        while named.ready:
            seq, job_id = heapq.heappop(named.ready)
            entry = named.entries.get(job_id)
            if entry is not None and entry.state == READY and entry.seq == seq:
                return entry
        return None

    @staticmethod
    def _reserve_until(named: _NamedQueue, entry: _Entry, until: float) -> None:
        entry.reserved_until = until
        heapq.heappush(named.reserved, (until, entry.job_id, entry.token or ""))

    def _held(self, job: QueueJob) -> tuple[_NamedQueue, _Entry] | None:
        """``job``'s queue and entry while ``job``'s token still holds the reservation. A
        reservation that ran out still holds until another pop takes the job (the old holder may
        still delete a job it finished). The store's lock is held."""
        named = self.store.queues.get(job.queue_name)
        entry = named.entries.get(job.job_id) if named is not None else None
        if named is None or entry is None or not job.token or entry.token != job.token:
            return None
        return named, entry

    # -- what only the holder of a reservation may do -----------------------------------------
    def delete_reserved(self, job: QueueJob) -> bool:
        with self.store.lock:
            held = self._held(job)
            if held is not None:
                del held[0].entries[job.job_id]
            return held is not None

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        """Put the job back behind the waiting ones (after ``delay``), its attempt counted."""
        with self.store.lock:
            held = self._held(job)
            if held is not None:
                self._put_back(*held, delay, time.monotonic())
            return held is not None

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """Put the job back and give back the attempt its pop counted, under one lock. Without
        a delay it keeps its place at the head of the queue (it never ran)."""
        with self.store.lock:
            held = self._held(job)
            if held is None:
                return False
            named, entry = held
            entry.attempts = max(entry.attempts - 1, 0)
            self._put_back(named, entry, delay, time.monotonic(), seq=None if delay > 0 else entry.seq)
            return True

    def hold_failure(self, job: QueueJob, description: str) -> bool:
        """Keep ``description`` beside the job and restart its reservation, for its token only."""
        return self._restart_reservation(job, failure=description)

    def touch_reserved(self, job: QueueJob) -> bool:
        """Give the job another ``retry_after``, for its token only."""
        return self._restart_reservation(job)

    def _restart_reservation(self, job: QueueJob, failure: str | None = None) -> bool:
        with self.store.lock:
            held = self._held(job)
            if held is None:
                return False
            named, entry = held
            entry.state = RESERVED  # it may have run out and be ready again, the token kept
            entry.failure = failure if failure is not None else entry.failure
            self._reserve_until(named, entry, time.monotonic() + self.retry_after)
            job.reserved_until = entry.reserved_until
            return True

    # -- waiting ------------------------------------------------------------------------------
    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block until a job is pushed or put back, the next delayed job or reservation is due,
        or ``timeout`` passes."""
        with self.store.changed:
            now = time.monotonic()
            soonest = min((self._next_change(self.store.queues[name], now) for name in queues),
                          default=timeout)
            remaining = min(timeout, soonest)
            if remaining > 0:
                self.store.changed.wait(remaining)

    def _next_change(self, named: _NamedQueue, now: float) -> float:
        """Seconds until a job of ``named`` may be ready (0: one is)."""
        if any(entry.state == READY for entry in named.entries.values()):
            return 0.0
        times = [named.delayed[0][0]] if named.delayed else []
        times += [named.reserved[0][0]] if named.reserved else []
        return max(min(times) - now, 0.0) if times else float("inf")

    def abandon_wait(self) -> None:
        """Nothing to drop: a wait holds no connection (and closing would lose the jobs)."""

    # -- inspection ---------------------------------------------------------------------------
    def size(self, queue: str | None = None) -> int:
        with self.store.lock:
            named = self.store.queues.get(self.queue_name(queue))
            return len(named.entries) if named is not None else 0

    def queues(self) -> list[str]:
        with self.store.lock:
            return sorted(name for name, named in self.store.queues.items() if named.entries)

    def stats(self, queue: str | None = None) -> QueueStats:
        name = self.queue_name(queue)
        now = time.monotonic()
        with self.store.lock:
            named = self.store.queues[name]
            self._make_due_ready(named, now)
            counts = named.counts()
            ages = [now - entry.queued_at for entry in named.entries.values() if entry.state == READY]
        return QueueStats(name, counts[READY], counts[DELAYED], counts[RESERVED],
                          max(ages) if ages else None)

    def clear(self, queue: str | None = None) -> int:
        """Remove the ready and delayed jobs (reserved ones stay with their holders)."""
        with self.store.lock:
            named = self.store.queues[self.queue_name(queue)]
            doomed = [job_id for job_id, entry in named.entries.items() if entry.state != RESERVED]
            for job_id in doomed:
                del named.entries[job_id]
            named.ready.clear()
            named.delayed.clear()
            return len(doomed)

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        with self.store.lock:
            named = self.store.queues[self.queue_name(queue)]
            self._make_due_ready(named, time.monotonic())
            ready = sorted((e for e in named.entries.values() if e.state == READY), key=lambda e: e.seq)
            return [entry.raw for entry in ready[:max(limit, 0)]]

    def find(self, uuid: str, queue: str | None = None) -> QueuedJob | None:
        name = self.queue_name(queue)
        with self.store.lock:
            named = self.store.queues.get(name)
            entry = named.entries.get(uuid) if named is not None else None
            if named is None or entry is None:
                return None
            self._make_due_ready(named, time.monotonic())
            return QueuedJob(uuid, name, JobState(entry.state), entry.raw)

    def list_jobs(self, state: JobState, queue: str | None = None, limit: int = 10) -> list[QueuedJob]:
        name = self.queue_name(queue)
        order = {READY: lambda e: (e.seq,), DELAYED: lambda e: (e.due, e.seq),
                 RESERVED: lambda e: (e.reserved_until, e.seq)}[state.value]
        with self.store.lock:
            named = self.store.queues.get(name)
            if named is None:
                return []
            self._make_due_ready(named, time.monotonic())
            chosen = sorted((e for e in named.entries.values() if e.state == state.value), key=order)
            return [QueuedJob(e.job_id, name, state, e.raw) for e in chosen[:max(limit, 0)]]

    def cancel(self, uuid: str, queue: str | None = None) -> Cancellation:
        """Drop the entry; its places in the heaps are skipped as stale when they come up."""
        with self.store.lock:
            named = self.store.queues.get(self.queue_name(queue))
            entry = named.entries.get(uuid) if named is not None else None
            if named is None or entry is None:
                return Cancellation.NOT_FOUND
            self._make_due_ready(named, time.monotonic())
            if entry.state == RESERVED:
                return Cancellation.RESERVED
            del named.entries[uuid]
            return Cancellation.CANCELLED

    # -- worker support -----------------------------------------------------------------------
    def record_exception(self, uuid: str) -> int:
        with self.store.lock:
            self.store.exceptions[uuid] += 1
            return self.store.exceptions[uuid]

    def forget_exceptions(self, uuid: str) -> None:
        with self.store.lock:
            self.store.exceptions.pop(uuid, None)

    def startup_warnings(self) -> list[str]:
        return [f"connection {self.connection_name!r} keeps its jobs in this process's memory: "
                "this worker runs only jobs pushed in its own process"]

    def state_store(self) -> MemoryStateStore:
        """The connection's state (locks, pauses, batches) lives beside its jobs, in memory."""
        return self.store.state

    def signals(self) -> dict[str, float]:
        with self.store.lock:
            return dict(self.store.signals)

    def set_signal(self, name: str, value: float | None) -> bool:
        """Signal the workers of this process (no other process can see this connection)."""
        with self.store.lock:
            if value is None:
                self.store.signals.pop(name, None)
            else:
                self.store.signals[name] = float(value)
        return True

    def close(self) -> None:
        """Forget the connection's store: the jobs, state and signals are gone, and the next
        queue object of this connection starts empty (objects still holding the store keep it)."""
        stores = runtime.cache(__name__)
        if stores.get(self.connection_name) is self.store:
            stores.pop(self.connection_name, None)
