"""The worker's prefetch: many reservations per round trip, acknowledgements in the same request.

On a driver whose :meth:`~eventbus.queue.base.Queue.reserve` batches (Redis), one request per
refill deletes the jobs that succeeded since the last one and reserves the next few, instead of
a pop and a delete per job. Every job keeps its own token and deadline, so a worker killed with
jobs in hand loses nothing: their reservations expire after ``retry_after`` and they run again,
like any other reservation.

How many to take is adaptive: as many as the worker finishes within :data:`WINDOW_S` plus two
round trips to the server, judged from the jobs it ran and the requests it made (starting at one
and at most doubling per refill), capped by ``--prefetch``. A queue of fast jobs is drained in
batches; a queue of slow jobs is taken one at a time, so a second worker is never left idle while
this one sits on jobs it will not start for seconds. The round trips count because the worker
waits for one between batches: over a link of 50 ms a batch of 10 ms of work would leave the
worker idle five times as long as it works, while a batch worth two round trips keeps it busy
two thirds of the time (the chaos scenario ``netns-slow-links``).

The trade-offs, which docs/worker.md states too:

- A job held but not started yet waits behind the ones before it; a job pushed to a queue of higher
  priority waits for at most the held ones (at most a window's worth of work).
- A job that succeeded is deleted with the next request, not at once. A worker killed in between
  runs it again after ``retry_after`` (at-least-once, as for a worker killed just before its delete).
- No reservation runs out in hand: before a job starts, the deadlines of the held and finished
  jobs are checked against that job's timeout plus grace, and renewed in one request when short.
- A graceful stop, a pause or ``eventbus down`` gives the held jobs back to the head of their
  queue, their attempt uncounted.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence

from eventbus.errors import ConnectionUnavailableError
from eventbus.queue.base import Queue, QueueJob, Reserved
from eventbus.worker.outages import QueueOutages

log = logging.getLogger(__name__)

#: How much work (in seconds of the jobs' own running time) a worker takes in hand at once,
#: besides enough to cover ROUND_TRIPS requests to the server.
WINDOW_S = 0.01
ROUND_TRIPS = 2
#: Renew when a held reservation could otherwise run out within a job's timeout + grace + this
#: (at most a tenth of retry_after).
MARGIN_S = 2.0
#: The smoothing of the running-time average (a larger value follows changes sooner).
SMOOTHING = 0.2


class Prefetcher:
    """The jobs a worker holds (reserved, not started) and the ones it finished (not deleted yet).

    ``needs(job)`` is how long the job may still take once started (its timeout plus the
    watchdog's grace); a reservation with less than that left is renewed before the job starts.
    """

    def __init__(self, queue: Queue, *, limit: int, needs: Callable[[QueueJob], float],
                 prepare: Callable[[Sequence[QueueJob]], None] | None = None,
                 outages: QueueOutages | None = None) -> None:
        self.queue = queue
        #: Queues skipped while their server does not answer and the others' do (a cluster).
        self.outages = outages or QueueOutages()
        #: Called with each batch as it arrives (the worker parses the payloads then).
        self.prepare = prepare
        self.retry_after_s = queue.retry_after
        self.limit = max(1, limit)
        self.needs = needs
        self.held: collections.deque[QueueJob] = collections.deque()
        self.finished: list[QueueJob] = []
        self._average_s: float | None = None
        #: The smoothed time of a request to the server (reserve and acknowledge, no wait).
        self._round_trip_s = 0.0
        self._lock = threading.Lock()
        self._last_batch = 1
        #: At most the earliest deadline in hand (kept low as jobs come in, made exact when checked).
        self._floor = float("inf")
        self._queues: tuple[str, ...] = ()
        self._asked: Sequence[str] | None = None

    # -- what the worker calls ------------------------------------------------------------------
    def next_job(self, queues: Sequence[str], cap: int = 0, *, fill: bool = False) -> QueueJob | None:
        """The next job to run from ``queues`` (in priority order): a held one, or a fresh batch.

        ``cap`` (0: none) bounds how many the worker may still run (``--max-jobs``, ``--once``).
        With ``fill`` (a concurrent worker) the batch is ``cap``, its free slots: every job taken
        starts at once. Held jobs of a queue no longer in ``queues`` (paused meanwhile) are given
        back first.
        """
        if queues is not self._asked and tuple(queues) != self._queues:  # a queue was paused (or resumed)
            self._queues = tuple(queues)
            if any(job.queue_name not in queues for job in self.held):
                self.give_back([job for job in self.held if job.queue_name not in queues])
        self._asked = queues  # the worker passes one list until its queues change
        while self.held:
            job = self.held.popleft()
            try:
                if self._renewed(job):
                    return job
            except ConnectionUnavailableError:
                self.held.appendleft(job)  # still ours: the worker asks again when it answers
                raise
        fresh = self.outages.first(queues, lambda name: self._reserve(name, cap, fill))
        if fresh is None:
            self.flush()
        return fresh

    def _reserve(self, name: str, cap: int, fill: bool) -> QueueJob | None:
        """A batch from queue ``name``: hold all but the first, return that one (None: empty)."""
        reserved = self._request(name, min(cap, self.limit) if fill and cap else self._batch_size(cap))
        if not reserved.jobs:
            return None
        if self.prepare is not None:
            self.prepare(reserved.jobs)
        self._hold(reserved.jobs[1:])
        return reserved.jobs[0]

    def wait(self, queues: Sequence[str], timeout: float, cap: int = 0) -> None:
        """Wait for work; a driver that reserves as the wait ends hands the jobs over here."""
        reserved = self.queue.wait_and_reserve(queues, timeout, self._batch_size(cap))
        if reserved is not None:
            if self.prepare is not None:
                self.prepare(reserved.jobs)
            self._hold(reserved.jobs)

    def _hold(self, jobs: Sequence[QueueJob]) -> None:
        self.held.extend(jobs)
        self._floor = min([self._floor, *(job.reserved_until for job in jobs[:1])])

    def defer(self, job: QueueJob) -> None:
        """``QueueJob.defer_delete``: the job succeeded; delete it with the next request (called
        from the job's thread under ``--concurrency``)."""
        with self._lock:
            self.finished.append(job)

    def ran(self, seconds: float) -> None:
        """A job took ``seconds`` from start to report: the average that sizes the batches."""
        average = self._average_s
        self._average_s = seconds if average is None else average + SMOOTHING * (seconds - average)

    def flush(self) -> None:
        """Delete every finished job now (one request per queue). A queue whose server does not
        answer keeps its finished jobs for a later request, as long as another queue's answered."""
        with self._lock:
            names = sorted({job.queue_name for job in self.finished})
        failed: ConnectionUnavailableError | None = None
        answered = False
        for name in names:
            try:
                self._request(name, 0)
                answered = True
            except ConnectionUnavailableError as exc:
                failed = exc
        if failed is not None and not answered:
            raise failed

    def give_back(self, jobs: Sequence[QueueJob]) -> None:
        """Return held jobs to the head of their queues (their attempt uncounted); the finished
        jobs of those queues are deleted in the same request."""
        for name in sorted({job.queue_name for job in jobs}):
            mine = [job for job in jobs if job.queue_name == name]
            self._request(name, 0, give_back=mine)
            for job in mine:
                self.held.remove(job)

    def settle(self) -> None:
        """Before a stop or a pause: finished jobs deleted, held jobs given back. When the server
        does not answer, say what that means and forget them (their reservations expire)."""
        try:
            self.give_back(list(self.held))
            self.flush()
        except ConnectionUnavailableError as exc:
            log.warning("could not settle %d finished and %d held jobs (%s); they run again after "
                        "retry_after", len(self.finished), len(self.held), exc)
            self.finished.clear()
            self.held.clear()

    # -- requests -------------------------------------------------------------------------------
    def _request(self, name: str, limit: int, *, renew: Sequence[QueueJob] = (),
                 give_back: Sequence[QueueJob] = ()) -> Reserved:
        """One ``reserve`` on queue ``name`` carrying its finished jobs; they are forgotten only
        once the request went through (a retry sends them again, which their tokens make safe)."""
        with self._lock:
            acks = [job for job in self.finished if job.queue_name == name]
        asked = time.monotonic()
        reserved = self.queue.reserve(name, limit, acks=acks, renew=renew, give_back=give_back)
        took = time.monotonic() - asked
        self._round_trip_s += SMOOTHING * (took - self._round_trip_s)
        if acks:
            sent = {id(job) for job in acks}
            with self._lock:
                self.finished = [job for job in self.finished if id(job) not in sent]
        return reserved

    def _renewed(self, job: QueueJob) -> bool:
        """True when ``job`` may start: its reservation (and those of the finished jobs, still
        reserved until their delete goes out) lasts its whole run, renewed here if not. False
        when it was lost meanwhile (another worker has it now)."""
        now = time.monotonic()
        halfway = now + self.retry_after_s / 2
        if halfway < min(job.reserved_until, self._floor):
            return True  # nothing in hand is even half way to its deadline: the common case
        self._floor = self._earliest()
        if halfway < min(job.reserved_until, self._floor):
            return True
        try:
            needed = now + self.needs(job) + min(MARGIN_S, self.retry_after_s / 10)
        except Exception:  # an unreadable payload: processing fails it, without running it
            return True
        if min(job.reserved_until, self._floor) >= needed:  # _floor: exact since just above
            return True
        same_queue = [j for j in self.held if j.queue_name == job.queue_name]
        reserved = self._request(job.queue_name, 0, renew=[job, *same_queue])
        if reserved.lost:
            log.warning("%d held jobs were taken over before they started; skipping them",
                        len(reserved.lost))
            self.held = collections.deque(j for j in self.held if j.job_id not in reserved.lost)
        self.flush()
        return job.job_id not in reserved.lost

    def _earliest(self) -> float:
        """The earliest deadline among the jobs in hand and the finished ones not deleted yet."""
        with self._lock:
            finished = [j.reserved_until for j in self.finished]
        return min([*finished, *(j.reserved_until for j in self.held)], default=float("inf"))

    def _batch_size(self, cap: int) -> int:
        """Adaptive: enough to fill :data:`WINDOW_S` and two round trips at the average pace, at
        most double the last batch, at most ``limit``, at most ``cap``."""
        average = self._average_s
        wanted = (self.limit if average is None or average <= 0
                  else int((WINDOW_S + ROUND_TRIPS * self._round_trip_s) / average))
        size = max(1, min(self.limit, wanted, self._last_batch * 2))
        if cap > 0:
            size = min(size, cap)
        self._last_batch = size
        return size
