"""The worker's watchdog: it ends a process whose job does not stop after its timeout.

The ``SIGALRM`` interrupt (:mod:`eventbus.worker.timeouts`) stops most jobs at their timeout; code stuck
in C, or that swallows the interrupt, is the watchdog's. The job's own code runs inside
:meth:`Watchdog.watching`, which sets a deadline of its timeout plus the grace; a thread checks
every 0.1 s and, once a deadline has passed, calls ``give_up(job)``, which records the attempt and
ends the process. Only the job's own code is watched: acknowledging it is bounded by the
driver's socket timeouts instead.

From the moment the watchdog gives up, :meth:`Watchdog.take` hands out no more jobs and the main
loop waits for the end, so the process holds nothing but the job given up on when it exits.

A process stopped as a whole (SIGSTOP, a long GC pause) resumes with its deadlines overdue. The
watchdog notices the gap in its own turns and moves such a deadline to a grace from the resume:
the interrupt, due at the same moment, may still stop the job, and a job is not given up for
time it was not given to run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from eventbus.queue.base import QueueJob

INTERVAL_S = 0.1
#: A turn this much later than due means the whole process was stopped.
PAUSE_S = 1.0


class Watchdog:
    """Watches the job the worker holds; ``give_up(job)`` is called (in the watchdog's thread)
    when its deadline passes, and must end the process."""

    def __init__(self, grace_s: float, give_up: Callable[[QueueJob], None]) -> None:
        self.grace_s = grace_s
        self.give_up = give_up
        self._lock = threading.Lock()
        self._current: QueueJob | None = None
        self._deadline: float | None = None
        self._given_up = False

    def start(self) -> threading.Event:
        """Start the thread; setting the returned event stops it."""
        stopped = threading.Event()
        threading.Thread(target=self._watch, args=(stopped,), name="eventbus-watchdog", daemon=True).start()
        return stopped

    # -- what the worker's loop calls -----------------------------------------------------------
    def take(self, pop: Callable[..., QueueJob | None], *args: Any, **kwargs: Any) -> QueueJob | None:
        """``pop(*args, **kwargs)`` and hold what it returns, unless the watchdog has given up (then wait
        for the end of the process). The pop runs under the lock the watchdog gives up under, so
        no job is taken after that."""
        with self._lock:
            job = None if self._given_up else pop(*args, **kwargs)
            self._current, self._deadline = job, None
        self.halt_if_given_up()
        return job

    def hold(self, job: QueueJob | None) -> None:
        """The job the worker holds now (None: it holds nothing)."""
        if self._deadline is None:  # nothing is watched (only the worker's thread sets one)
            self._current = job  # a job without a deadline is never given up on: no lock needed
            return
        with self._lock:
            self._current, self._deadline = job, None

    def watching(self, timeout: float) -> _Watching:
        """The job's own code runs: give up on it ``timeout`` + grace from now (0: never)."""
        return _Watching(self, timeout)

    def halt_if_given_up(self) -> None:
        """Once the watchdog has given up on a job, wait for it to end the process."""
        if self._given_up:
            threading.Event().wait()

    # -- the thread -----------------------------------------------------------------------------
    def _watch(self, stopped: threading.Event) -> None:
        last = time.monotonic()
        while not stopped.wait(INTERVAL_S):
            now = time.monotonic()
            job = self._overdue_job(now, paused=now - last > PAUSE_S)
            last = now
            if job is not None:
                self.give_up(job)

    def _overdue_job(self, now: float, paused: bool) -> QueueJob | None:
        """The held job once its deadline has passed (after a pause: a grace after the resume)."""
        with self._lock:
            if self._current is None or self._deadline is None:
                return None
            if paused:
                self._deadline = max(self._deadline, now + self.grace_s)
            if now <= self._deadline:
                return None
            self._given_up = True
            return self._current


class _Watching:
    """:meth:`Watchdog.watching` as a plain context manager (it is entered twice per job)."""

    __slots__ = ("watchdog", "timeout", "outer")

    def __init__(self, watchdog: Watchdog, timeout: float) -> None:
        self.watchdog = watchdog
        self.timeout = timeout
        self.outer: float | None = None

    def __enter__(self) -> None:
        w, timeout = self.watchdog, self.timeout
        deadline = time.monotonic() + timeout + w.grace_s if timeout > 0 else None  # 0: never
        with w._lock:
            self.outer, w._deadline = w._deadline, deadline

    def __exit__(self, *exc: object) -> None:
        w = self.watchdog
        with w._lock:
            w._deadline = self.outer
