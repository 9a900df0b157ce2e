"""``eventbus work --concurrency N``: up to N jobs at once in one worker process.

Each job runs in a thread of a pool of N, through the same processing as a job of a plain worker
(its reservation, tries, backoff, failure and acknowledgement are its own). A job whose
``handle`` (or middleware, or listener) is ``async def`` hands its coroutine to the worker's one
event loop, running in a thread of its own: many async jobs then wait on their I/O together as
tasks of that loop and share what is bound to it (an SMTP connection pool, an HTTP client).

Timeouts. ``SIGALRM`` reaches the main thread only, so under concurrency:

- an async job is cancelled at its timeout (``asyncio`` cancellation inside the loop) and fails
  with :class:`~eventbus.errors.JobTimeoutError` like an interrupted job, and the worker goes on;
- a sync job cannot be interrupted in its thread. At its timeout its attempt is recorded as timed
  out (released with its backoff, or failed when its tries are used up or ``fail_on_timeout``),
  the worker takes no more jobs, lets the others finish, and exits with status 1 so that its
  supervisor starts a fresh process: the same rule as the watchdog of a plain worker, which ends a
  job that ignores the alarm. An async job that ignores its cancellation (a loop blocked by sync
  code) is handled the same way after the grace.

Signals, ``--max-jobs``, ``--memory`` and a graceful stop keep their meaning: the worker stops
taking jobs and waits for those in flight before it exits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from eventbus import aio
from eventbus.errors import JobTimeoutError
from eventbus.monitoring.monitor import job_name
from eventbus.queue.base import QueueJob
from eventbus.worker.processing import Watch

log = logging.getLogger(__name__)

#: How often the deadlines of the jobs in flight are checked.
CHECK_INTERVAL_S = 0.1


class InFlight:
    """One job running in a thread, and whether the worker gave up on it."""

    __slots__ = ("job", "abandoned", "shared")

    def __init__(self, job: QueueJob) -> None:
        self.job = job
        self.abandoned = False
        #: While the job's own code runs: its deadline and whether it waits on the loop now.
        self.shared: aio.SharedLoop | None = None


class RunsJobs(Protocol):
    """What the pool needs of its worker (an :class:`eventbus.Worker` is one): to run one job
    under a watch of the pool's own, and to record the attempt of one that could not be stopped."""

    def run_job(self, job: QueueJob, *, watch: Watch | None = None) -> Any: ...

    def record_timed_out(self, job: QueueJob, exc: JobTimeoutError) -> None: ...


class ConcurrentRunner:
    """The pool, the event loop and the deadlines of one worker running jobs concurrently."""

    def __init__(self, worker: RunsJobs, concurrency: int, grace_s: float) -> None:
        self.worker = worker
        self.concurrency = concurrency
        self.grace_s = grace_s
        self.pool = concurrent.futures.ThreadPoolExecutor(concurrency, thread_name_prefix="eventbus-job")
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="eventbus-loop", daemon=True)
        self._loop_thread.start()
        self.running: dict[concurrent.futures.Future[None], InFlight] = {}
        self._finished: queue.SimpleQueue[concurrent.futures.Future[None]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._stop_checking = threading.Event()
        self.gave_up = False
        threading.Thread(target=self._check_deadlines, name="eventbus-deadlines", daemon=True).start()

    # -- the worker's loop ----------------------------------------------------------------------
    @property
    def free(self) -> int:
        return 0 if self.gave_up else self.concurrency - len(self.running)

    @property
    def idle(self) -> bool:
        return not self.running

    def submit(self, job: QueueJob) -> None:
        entry = InFlight(job)
        future = self.pool.submit(self._run, entry)
        with self._lock:
            self.running[future] = entry
        future.add_done_callback(self._finished.put)

    def reap(self, timeout: float = 0.0) -> None:
        """Forget the jobs that finished (waiting up to ``timeout`` for the first one)."""
        if not self.running:
            return
        try:
            done = [self._finished.get(timeout=timeout) if timeout > 0 else self._finished.get_nowait()]
        except queue.Empty:
            return
        while True:
            try:
                done.append(self._finished.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            for future in done:
                self.running.pop(future, None)

    def drain(self) -> None:
        """Wait for every job in flight (each is bounded by its deadline, see the module doc)."""
        while self.running:
            if self.gave_up and all(entry.abandoned for entry in self.running.values()):
                return  # only jobs that will never stop are left: the process ends now
            self.reap(timeout=CHECK_INTERVAL_S)

    def close(self) -> None:
        """Stop the loop and the deadline checks; exit at once when a job would not stop."""
        self._stop_checking.set()
        self.loop.call_soon_threadsafe(self.loop.stop)
        if self.gave_up:
            sys.stderr.write("eventbus: a job ran past its timeout and could not be interrupted; "
                             "exiting so that a fresh worker takes over\n")
            sys.stderr.flush()
            logging.shutdown()
            os._exit(1)  # a thread that never stops would hold up a normal exit for ever
        self.pool.shutdown(wait=True)
        self._loop_thread.join(1.0)
        self.loop.close()

    # -- one job, in a thread of the pool --------------------------------------------------------
    def _run(self, entry: InFlight) -> None:
        self.worker.run_job(entry.job, watch=lambda timeout: self._watching(entry, timeout))

    @contextmanager
    def _watching(self, entry: InFlight, timeout: float) -> Iterator[None]:
        """The job's own code runs: its coroutines go to the loop with the job's deadline, and
        its deadline (timeout, and the grace for async code that ignores its cancellation) is
        watched from :meth:`_check_deadlines`."""
        with aio.on_shared_loop(self.loop, timeout, job_name(entry.job)) as shared:
            entry.shared = shared
            try:
                yield
            finally:
                entry.shared = None

    # -- the deadlines ---------------------------------------------------------------------------
    def _check_deadlines(self) -> None:
        grace = self.grace_s
        while not self._stop_checking.wait(CHECK_INTERVAL_S):
            now = time.monotonic()
            with self._lock:
                entries = list(self.running.values())
            for entry in entries:
                shared = entry.shared
                if shared is None or shared.deadline is None or entry.abandoned:
                    continue
                # code awaiting on the loop is cancelled at the deadline: it gets the grace to end
                if now > shared.deadline + (grace if shared.awaiting > 0 else 0.0):
                    self._give_up_on(entry)

    def _give_up_on(self, entry: InFlight) -> None:
        """Record the attempt of a job that cannot be stopped as timed out; the worker then
        takes no more jobs and ends its process once the others finished."""
        entry.abandoned = True
        job = entry.job
        exc = JobTimeoutError(f"{job_name(job)} ran past its timeout and could not be interrupted",
                              job_uuid=job.uuid, queue=job.queue_name)
        log.error("%s; recording it and recycling this worker", exc)
        self.worker.record_timed_out(job, exc)
        self.gave_up = True  # only now: the process may end as soon as the loop sees it
