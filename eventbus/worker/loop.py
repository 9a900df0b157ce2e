"""The worker: Laravel's daemon loop.

Each turn: pause check -> ``Looping`` -> pop from the first non-empty queue -> process it under its
timeout -> stop checks. SIGTERM/SIGINT finish the current job and exit 0; SIGUSR2 pauses, SIGCONT
resumes; ``eventbus restart`` makes every worker exit after its current job.

A timed-out attempt is interrupted (``SIGALRM``) and handled like any exception. A job that does
not stop within ``timeout_grace_s`` after that is recorded by the watchdog (released or failed, as
its tries say; see :mod:`eventbus.worker.watchdog`) and the process exits with status 1 so that its
supervisor starts a fresh one; the job's reservation is never left to chance, and the process
holds no other job when it exits.

The timeout plus the grace must stay below the connection's ``retry_after`` (checked at start
for ``--timeout``, and before each job for its own timeout): see :mod:`eventbus.worker.timeouts`.

When the server does not answer, the loop tries again about once a second (with jitter, so
workers do not come back in lock-step): a worker takes jobs again within about a second of the
server answering.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from eventbus import runtime
from eventbus.dispatching import after_failure, after_success, dispatch_next_in_chain, ran_already, unique
from eventbus.errors import (
    ConnectionUnavailableError,
    DeserializationError,
    JobTimeoutError,
    WorkerConfigurationError,
)
from eventbus.event_bus import EventBus
from eventbus.event_bus import bus as default_bus
from eventbus.events import Looping, WorkerStopping
from eventbus.failed.base import FailedJobStore
from eventbus.monitoring.monitor import default_observers, job_name
from eventbus.monitoring.observer import Observers, WorkerObserver
from eventbus.queue.base import Queue, QueueJob
from eventbus.queue.capabilities import BatchesReservations, supports
from eventbus.worker.concurrency import ConcurrentRunner
from eventbus.worker.options import DEFAULT_PREFETCH as DEFAULT_PREFETCH
from eventbus.worker.options import WorkerOptions as WorkerOptions
from eventbus.worker.options import memory_mb
from eventbus.worker.outages import QueueOutages
from eventbus.worker.outcomes import fail_unexpected, record_timed_out, report_line
from eventbus.worker.prefetch import Prefetcher
from eventbus.worker.processing import Collaborators, Outcome, Watch, attempt, prepare, screen, timeout_for
from eventbus.worker.timeouts import GRACE_ENV, alarm_handler, stop_timer, timeout_conflict
from eventbus.worker.watchdog import Watchdog

log = logging.getLogger(__name__)

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_MEMORY = 12
SIGNAL_CHECK_INTERVAL_S = 1.0
#: How often the signals are asked for while their server does not answer (or answers slowly):
#: after 15 s, doubling up to 60 s.
CONTROL_BACKOFF_S = 15.0
CONTROL_BACKOFF_MAX_S = 60.0
#: Reads that took this long count as not answering (a server that does not answer at all costs
#: a command timeout, 5 s on Redis; a busy machine may take a second).
CONTROL_SLOW_S = 2.5
MEMORY_CHECK_INTERVAL_S = 0.25
#: Retrying a pop on a server that does not answer: the first wait, and the longest (before jitter).
RECONNECT_FIRST_S = 0.1
#: How many times a starting worker asks its server before it gives up (exit 1), and the pause
#: before the second try (then twice that): a second or so for a dropped connection to come back.
START_PINGS = 3
START_PING_PAUSE_S = 0.3
RECONNECT_MAX_S = 1.0


class Worker:
    """Runs jobs from one connection until a stop condition; :meth:`run` returns the exit status.

    Its collaborators are handed in (dramatiq's ``Worker(broker, ...)``): the connection's queue,
    the failed job store, the event bus, and an ``observer`` that watches it
    (:mod:`eventbus.monitoring`). :meth:`for_connection` takes them from :mod:`eventbus.runtime`,
    as ``eventbus work`` does, with the monitoring observers attached.
    """

    def __init__(self, queue: Queue, *, failed: FailedJobStore | None,
                 options: WorkerOptions | None = None, bus: EventBus = default_bus,
                 output: Callable[[str], None] | None = None,
                 observer: WorkerObserver | None = None) -> None:
        self.queue = queue
        self.failed = failed
        self.bus = bus
        self.options = options or WorkerOptions()
        self.queues: tuple[str, ...] = self.options.queues or (self.queue.default_queue,)
        self.output = output
        self.observer = observer or WorkerObserver()
        self.should_quit = False
        self.paused = False
        #: Queues paused for every worker (``eventbus.monitoring.pausing``), read once a second.
        self.paused_queues: frozenset[str] = frozenset()
        self._active: list[str] = list(self.queues)
        self._active_for = self.paused_queues
        self.jobs_processed = 0
        self._watchdog = Watchdog(self.options.timeout_grace_s, self._give_up_on)
        self._waiting = False
        self._signals_checked_at = 0.0
        self._memory_checked_at = 0.0
        self._signals_cache: dict[str, float] | None = None
        #: While the signals' server does not answer: the pause between reads (see _pace_control_reads).
        self._control_backoff_s = 0.0
        #: The supervisor that started this worker is gone (looked at with the signals).
        self._orphaned = False
        #: It stopped for ``eventbus restart`` (a deploy): its supervisor must start the new code.
        self.restart_requested = False
        self._restart_at: float | None = None  # read as it starts (run)
        self.collaborators = Collaborators(failed, bus, dispatch_next_in_chain,
                                            self.options.process_options(), self._watchdog.watching,
                                            after_success, after_failure, ran_already)
        #: Queues whose server does not answer while the others do (a cluster's lost master).
        self._outages = QueueOutages()
        self._prefetch = (Prefetcher(queue, limit=self.options.prefetch, needs=self._time_needed,
                                     prepare=prepare, outages=self._outages)
                          if supports(queue, BatchesReservations) else None)
        self.check_options()

    @classmethod
    def for_connection(cls, name: str | None = None, *, options: WorkerOptions | None = None,
                       output: Callable[[str], None] | None = None,
                       observers: Sequence[WorkerObserver] = ()) -> Worker:
        """A worker for the named (or default) connection, with the configured failed store,
        watched by the monitoring observers and ``observers``."""
        queue = runtime.connection(name)
        watching = Observers([*default_observers(queue, runtime.state(name)), *observers])
        return cls(queue, failed=runtime.failed_store(), options=options, output=output,
                   observer=watching)

    # -- start-up checks ----------------------------------------------------------------------
    def check_options(self) -> None:
        """Refuse a timeout that, with the watchdog's grace, is not below retry_after: the job
        would run twice at once."""
        queue, o = self.queue, self.options
        problem = timeout_conflict(
            "worker timeout", o.timeout_s, o.timeout_grace_s, queue.retry_after, queue.connection_name,
            f"Lower --timeout (or {GRACE_ENV}) or raise retry_after.") if queue.holds_reservations else None
        if problem is not None:
            raise WorkerConfigurationError(problem, connection=queue.connection_name)
        if o.tries == 0:
            log.warning("tries=0: failing jobs are retried forever")

    # -- the loop -----------------------------------------------------------------------------
    def run(self) -> int:
        """Work until a stop condition; return the exit status (0, 12 memory, 1 error)."""
        self._first_ping()
        for warning in self.queue.startup_warnings():
            log.warning("%s", warning)
        # The last `eventbus restart` before this worker began: read before it shows it runs (its
        # signal handlers, its registry entry), so that a restart asked from then on reaches it.
        self._restart_at = self._signals().get("restart")
        previous = self._install_signals()
        stopped = self._watchdog.start()
        self.observer.worker_started(self)
        status = EXIT_ERROR
        try:
            with alarm_handler():
                status = self._loop()
            self._watchdog.halt_if_given_up()
            return status
        finally:
            self.observer.worker_stopped(self, status)
            stopped.set()
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _first_ping(self) -> None:
        """Reach the server before anything else. One that does not answer fails the start (exit
        1, one line), but only after :data:`START_PINGS` tries: a connection dropped under the
        worker as it starts (a server restarting, an administrator ending its sessions, a
        failover) is opened again, as it would be a moment later in the loop."""
        for attempt in range(START_PINGS):
            try:
                self.queue.ping()
                return
            except ConnectionUnavailableError:
                if attempt == START_PINGS - 1:
                    raise
                time.sleep(START_PING_PAUSE_S * (attempt + 1))

    def _loop(self) -> int:
        if self.options.concurrency > 1:
            return self._loop_concurrently()
        restart_at = self._restart_at
        log.info("worker %r started on connection %r, queues %s", self.options.name,
                 self.queue.connection_name, ",".join(self.queues))
        started = time.monotonic()
        status: int | None = None
        while status is None:
            if self.paused or self._down():
                self._settle()
                self._sleep(self.options.sleep_s or 1.0)  # --sleep 0 must not spin while paused
            else:
                if self.bus.wants(Looping):
                    self.bus.emit(Looping(self.queue.connection_name, self.queues))
                job = self._next_job()
                if job is not None:
                    self.run_job(job)
                    if self.options.rest_s > 0:
                        self._sleep(self.options.rest_s)
                elif self.options.stop_when_empty:
                    status = EXIT_OK
                else:
                    self._wait()
            self._retry_releases()
            status = status if status is not None else self.stop_status(started, restart_at)
        self._settle()
        self._retry_releases(stopping=True)
        self.bus.emit(WorkerStopping(status))
        return status

    def _loop_concurrently(self) -> int:
        """The loop of ``--concurrency N``: keep up to N jobs in flight (:mod:`eventbus.worker.concurrency`)."""
        runner = ConcurrentRunner(self, self.options.concurrency, self.options.timeout_grace_s)
        restart_at = self._restart_at
        log.info("worker %r started on connection %r, queues %s, %d jobs at once", self.options.name,
                 self.queue.connection_name, ",".join(self.queues), self.options.concurrency)
        started = time.monotonic()
        status: int | None = None
        try:
            while status is None:
                runner.reap()
                if runner.gave_up:
                    status = EXIT_ERROR
                elif self.paused or self._down():
                    self._settle()
                    self._sleep(self.options.sleep_s or 1.0)
                elif runner.free > 0 and self._may_take_more():
                    if self.bus.wants(Looping):
                        self.bus.emit(Looping(self.queue.connection_name, self.queues))
                    job = self._next_job(fill=runner.free)
                    if job is not None:
                        self.jobs_processed += 1
                        runner.submit(job)
                        continue  # fill the other free slots before anything else
                    if runner.idle and self.options.stop_when_empty:
                        status = EXIT_OK
                    elif runner.idle:
                        self._wait()
                    else:  # jobs in flight, none ready: wait for work or for one to finish
                        self._wait(limit=min(self.options.sleep_s, 0.25))
                else:
                    runner.reap(timeout=0.25)
                self._retry_releases()
                if status is None:
                    status = self.stop_status(started, restart_at, in_flight=not runner.idle)
            runner.drain()
            self._settle()
            self._retry_releases(stopping=True)
        finally:
            runner.close()
        self.bus.emit(WorkerStopping(status))
        return status

    def _may_take_more(self) -> bool:
        """Below ``--max-jobs`` (and ``--once``): a concurrent worker stops taking jobs there and
        lets those in flight finish."""
        o = self.options
        if o.once:
            return self.jobs_processed < 1
        return not o.max_jobs or self.jobs_processed < o.max_jobs

    def _settle(self) -> None:
        """Delete the finished jobs a prefetching worker still owes, give back those it holds."""
        if self._prefetch is not None:
            self._prefetch.settle()

    def _retry_releases(self, *, stopping: bool = False) -> None:
        """Try again the unique locks whose release could not reach their store (every few
        seconds, and once more when stopping): the jobs that held them are done, and nothing
        else in this process may release a lock again (:mod:`eventbus.dispatching.unique`)."""
        try:
            pending = unique.retry_pending(force=stopping)
        except Exception:  # noqa: BLE001 - a retry must never stop the worker
            log.exception("could not try the unique lock releases kept for later again")
            return
        if stopping and pending:
            log.warning("%d unique lock release(s) could not reach their store; those locks expire "
                        "after their unique_for", pending)

    def _time_needed(self, job: QueueJob) -> float:
        """How long ``job`` may take once started: its timeout and the watchdog's grace (a job
        without a timeout counts as one ``retry_after``: it must then renew its own reservation).
        Read after the signature check (:func:`screen`): a refused job's timeout is not read."""
        screen(job)
        timeout = timeout_for(job, self.collaborators.options)
        return (timeout if timeout > 0 else self.queue.retry_after) + self.options.timeout_grace_s

    def stop_status(self, started: float, restart_at: float | None, *,
                    in_flight: bool = False) -> int | None:
        """The exit status if the worker should stop now, else None (a concurrent worker with
        ``in_flight`` jobs stops only once they finished, when its job limits are reached)."""
        o = self.options
        if in_flight and not self.should_quit and ((o.once and self.jobs_processed > 0)
                                                    or (o.max_jobs and self.jobs_processed >= o.max_jobs)):
            return None
        if self.should_quit or o.once and self.jobs_processed > 0:
            return EXIT_OK
        if o.memory_mb > 0 and self._memory_exceeded():
            log.warning("memory limit of %sMB reached; stopping", o.memory_mb)
            return EXIT_MEMORY
        if o.max_jobs and self.jobs_processed >= o.max_jobs:
            return EXIT_OK
        if o.max_time_s and time.monotonic() - started >= o.max_time_s:
            return EXIT_OK
        if self._signals().get("restart") != restart_at:
            self.restart_requested = True
            return EXIT_OK
        if self._orphaned:
            log.warning("the supervisor (pid %s) is gone; stopping", o.supervisor_pid)
            return EXIT_OK
        return None

    def _memory_exceeded(self) -> bool:
        """Resident memory over --memory; read at most every 0.25s (it costs a file read)."""
        now = time.monotonic()
        if now - self._memory_checked_at < MEMORY_CHECK_INTERVAL_S:
            return False
        self._memory_checked_at = now
        return memory_mb() >= self.options.memory_mb

    def _signals(self) -> dict[str, float]:
        """``restart``/``down`` signals, asked of the server at most once a second (a round trip
        per job would cost a third of the throughput). Whether the supervisor (``--processes``)
        is still there is looked at then too, not per job.

        While the worker holds a reserved job that waits to start, the question waits for up to
        another second: an idle worker woken by a job runs it first and asks right after, instead
        of putting a round trip between the wake-up and the job.
        """
        now = time.monotonic()
        age = now - self._signals_checked_at
        if self._signals_cache is not None and age < SIGNAL_CHECK_INTERVAL_S:
            return self._signals_cache  # asked three times a job: the common case first
        if self._signals_cache is None or age >= SIGNAL_CHECK_INTERVAL_S * (2 if self._holds_jobs() else 1):
            answered = True
            try:
                self._signals_cache = self.queue.signals()
            except ConnectionUnavailableError:
                self._signals_cache, answered = self._signals_cache or {}, False
            self._signals_checked_at = now
            supervisor = self.options.supervisor_pid
            self._orphaned = bool(supervisor) and os.getppid() != supervisor
            if answered:  # a server that did not answer this will not answer that either, likely
                paused = self.observer.paused_queues(self)
                self.paused_queues = self.paused_queues if paused is None else paused
            self._pace_control_reads(answered, time.monotonic() - now)
        return self._signals_cache

    def _pace_control_reads(self, answered: bool, took_s: float) -> None:
        """Ask less often while the signals' server does not answer, or answers slowly: on a
        cluster they live on one master, and while that master is frozen or cut off every read
        costs a command timeout (the worker would spend most of its time waiting on it, for
        signals it cannot read anyway)."""
        if answered and took_s < CONTROL_SLOW_S:
            if self._control_backoff_s:
                log.warning("the worker's signals answer again")
                self._control_backoff_s = 0.0
            return
        if not self._control_backoff_s:
            log.warning("the worker's signals (restart, down, paused queues) %s; asking less often until "
                        "they answer", f"took {took_s:.1f}s" if answered else "could not be read")
        self._control_backoff_s = min(max(self._control_backoff_s * 2, CONTROL_BACKOFF_S), CONTROL_BACKOFF_MAX_S)
        self._signals_checked_at = time.monotonic() + self._control_backoff_s - SIGNAL_CHECK_INTERVAL_S

    def _holds_jobs(self) -> bool:
        return self._prefetch is not None and bool(self._prefetch.held)

    def _down(self) -> bool:
        """Maintenance mode (``eventbus down``): no new jobs, unless the worker runs with --force."""
        return not self.options.force and "down" in self._signals()

    def _next_job(self, fill: int = 0) -> QueueJob | None:
        """Pop from the first non-empty queue; while the server does not answer, try again about
        once a second, with jitter."""
        delay, lost_at = RECONNECT_FIRST_S, None
        while True:
            try:
                job = self._pop_first(fill)
            except ConnectionUnavailableError as exc:
                if lost_at is None:
                    lost_at = time.monotonic()
                    log.warning("%s; trying again until it answers", exc)
                if self._sleep(delay * random.uniform(0.5, 1.0)):
                    return None
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            if lost_at is not None:
                log.warning("connection %r answers again after %.1fs", self.queue.connection_name,
                            time.monotonic() - lost_at)
            return job

    def _pop_first(self, fill: int = 0) -> QueueJob | None:
        """Through the watchdog, which hands out nothing once it has given up on a job.

        ``fill``: a concurrent worker's free slots, filled from one request where the driver can.
        """
        if self._prefetch is not None:
            prefetch, active = self._prefetch, self._active_queues()
            cap = min(fill, self._jobs_left() or fill) if fill else self._jobs_left()
            return self._watchdog.take(prefetch.next_job, active, cap, fill=bool(fill))
        return self._outages.first(self._active_queues(), lambda name: self._watchdog.take(self.queue.pop, name))

    def _jobs_left(self) -> int:
        """How many more jobs the worker may run before it stops (0: no limit)."""
        o = self.options
        if o.once:
            return 1
        return max(o.max_jobs - self.jobs_processed, 1) if o.max_jobs else 0

    def _active_queues(self) -> list[str]:
        """The worker's queues in order, without those paused for every worker (one list, kept
        until the paused set changes: callers read it, never change it)."""
        self._signals()
        paused = self.paused_queues
        if paused is not self._active_for:  # the paused set changed (or was read again)
            self._active = [name for name in self.queues if name not in paused]
            self._active_for = paused
        return self._active

    def _wait(self, limit: float | None = None) -> None:
        """Wait for work, at most ``--sleep`` seconds (or ``limit``)."""
        sleep_s = self.options.sleep_s if limit is None else limit
        stop_timer()  # the last job's timeout timer: no signal while the worker waits
        active = self._outages.usable(self._active_queues())
        if not active:  # every queue paused (or its server down): nothing to wake up for
            self._sleep(min(self._outages.next_try_in() or sleep_s, sleep_s) or 1.0)
            return
        if self._outages.next_try_in():  # a skipped queue is asked again at its time
            sleep_s = min(sleep_s, self._outages.next_try_in())
        try:
            if self._prefetch is not None:
                prefetch, cap = self._prefetch, self._jobs_left()
                self._interruptible(lambda: prefetch.wait(active, sleep_s, cap))
                return
            self._interruptible(lambda: self.queue.wait(active, sleep_s))
        except ConnectionUnavailableError as exc:
            log.warning("%s", exc)
            self._sleep(min(self.options.sleep_s, 1.0) or 1.0)

    def _sleep(self, seconds: float) -> bool:
        """Sleep, waking early on a stop signal. Returns True when the worker should quit."""
        self._interruptible(lambda: time.sleep(seconds))
        return self.should_quit

    def _interruptible(self, fn: Callable[[], None]) -> None:
        """Run an idle wait that a quit signal may cut short (never a pop or a job)."""
        if self.should_quit:
            return
        self._waiting = True
        try:
            try:
                fn()
            finally:
                self._waiting = False
        except _WakeUp:
            self.queue.abandon_wait()  # a blocking read was cut short: drop that connection

    # -- one job ------------------------------------------------------------------------------
    def run_job(self, job: QueueJob, *, watch: Watch | None = None) -> Outcome:
        """Process one reserved job and report it. ``watch``: the concurrent runner's own watch
        (in a thread of its pool), else the worker's watchdog, and the job counts here."""
        started = time.monotonic()
        ctx = self.collaborators
        if watch is None:
            self.jobs_processed += 1
            self._watchdog.hold(job)
        else:
            ctx = dataclasses.replace(ctx, watch=watch)
        if self._prefetch is not None:
            job.defer_delete = self._prefetch.defer
        screen(job)  # a refused payload is known as such before an observer reads it
        self.observer.job_started(self, job)
        try:
            outcome, exc = attempt(job, ctx)
        except ConnectionUnavailableError as lost:
            outcome, exc = Outcome.RELEASED, lost
            log.warning("connection lost while finishing job %s; its reservation will expire and it "
                        "runs again: %s", job.uuid, lost)
        except Exception as unexpected:  # raised outside the job's own code: fail that job only
            outcome, exc = fail_unexpected(job, unexpected, ctx)
        finally:
            self._watchdog.hold(None)
        if exc is not None and not isinstance(exc, ConnectionUnavailableError):
            # once per attempt; the traceback only when the job failed for good (a refused payload
            # has none worth reading: the message says it all)
            show_traceback = outcome is Outcome.FAIL and not isinstance(exc, DeserializationError)
            log.error("job %s (%s) raised %s: %s", job_name(job), job.uuid, type(exc).__name__,
                      exc, exc_info=exc if show_traceback else None)
        runtime_s = time.monotonic() - started
        self.observer.job_finished(self, job, outcome, runtime_s, exc)
        if self.output is not None:  # ``eventbus work`` without --quiet: the job's line
            self.output(report_line(job, outcome, runtime_s, exc, options=self.options,
                                    collaborators=self.collaborators))
        if self._prefetch is not None:
            self._prefetch.ran(time.monotonic() - started)
        return outcome

    # -- the watchdog for jobs that ignore the interrupt --------------------------------------
    def _give_up_on(self, job: QueueJob) -> None:
        """Record the outcome of a job that would not stop, then end this process (the watchdog's
        thread; the loop takes no job meanwhile)."""
        exc = JobTimeoutError(f"{job_name(job)} timed out and could not be interrupted",
                              job_uuid=job.uuid, queue=job.queue_name)
        try:
            self._settle()  # the main thread is stuck in the job: it touches none of these now
        except Exception:
            log.exception("could not settle the jobs held beside %s", job.uuid)
        self.record_timed_out(job, exc)
        sys.stderr.write(f"eventbus: {exc}; exiting so that a fresh worker takes over\n")
        sys.stderr.flush()
        os._exit(EXIT_ERROR)

    def record_timed_out(self, job: QueueJob, exc: JobTimeoutError) -> None:
        """The outcome of an attempt that ran past its timeout and could not be stopped
        (:func:`eventbus.worker.outcomes.record_timed_out`); never raises."""
        record_timed_out(job, exc, self.collaborators)

    # -- signals ------------------------------------------------------------------------------
    def _install_signals(self) -> dict[int, Any]:
        """Take over the worker's signals; return the previous handlers to restore after run()."""
        if threading.current_thread() is not threading.main_thread():
            return {}
        handlers = {signal.SIGTERM: self._on_quit, signal.SIGINT: self._on_quit,
                    signal.SIGUSR2: self._on_pause, signal.SIGCONT: self._on_resume}
        return {signum: signal.signal(signum, handler) for signum, handler in handlers.items()}

    def _on_quit(self, signum: int, frame: FrameType | None) -> None:
        self.should_quit = True
        if self._waiting:
            self._waiting = False
            raise _WakeUp()

    def _on_pause(self, signum: int, frame: FrameType | None) -> None:
        self.paused = True

    def _on_resume(self, signum: int, frame: FrameType | None) -> None:
        self.paused = False


class _WakeUp(BaseException):
    """Raised by the quit signal handler to cut an idle wait short."""
