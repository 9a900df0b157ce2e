"""``ThrottlesExceptions``: stop hammering a failing service (a circuit breaker).

After ``max_attempts`` exceptions within ``decay_s`` seconds (counted per job class, or per
``by(key)``, or per job with ``by_job()``, across every worker), jobs of that class are released
without running (and without using a try) until the window has passed; a success closes the
circuit again. An exception it counts releases the job after ``backoff_s`` seconds (or
``backoff(fn)``: seconds computed from the exception) instead of going through the usual retry
rules, as Laravel's does (pair it with ``retry_until`` to bound how long a job keeps trying).

Which exceptions it handles: ``when(fn)`` limits them (the others propagate as usual);
``delete_when(...)`` deletes the job for some (done, nothing recorded), ``fail_when(...)`` fails
it at once for others (both take an exception class or a function of the exception); ``report()``
logs the handled ones with their traceback (optionally only where ``report(fn)`` says so).
Laravel's ``backoff`` is in minutes; this one is in seconds, like every duration here.
"""

from __future__ import annotations

import copy
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from eventbus.middleware.pipeline import Next
from eventbus.middleware.state import STORE_ERRORS, job_name, release_unreachable, state_of
from eventbus.state.base import StateStore
from eventbus.state.keys import digest, readable

log = logging.getLogger(__name__)

ExceptionTest = Callable[[BaseException], Any]
Backoff = float | Callable[[BaseException], float]
DEFAULT_PREFIX = "throttle:"


def _test_for(match: type[BaseException] | ExceptionTest) -> ExceptionTest:
    """An exception class, or a function of the exception, as a function of the exception."""
    if isinstance(match, type) and issubclass(match, BaseException):
        return lambda exc: isinstance(exc, match)
    if not callable(match):
        raise TypeError(f"expected an exception class or a function of the exception, not {match!r}")
    return match


class ThrottlesExceptions:
    """Open the circuit after ``max_attempts`` exceptions in ``decay_s`` seconds.

    Configured by keyword (``ThrottlesExceptions(5, 60, backoff_s=10, by="stripe")``) or by
    the fluent methods, each of which returns a new middleware.
    """

    def __init__(self, max_attempts: int = 10, decay_s: float = 600.0, backoff_s: Backoff = 0.0,
                 by: str | None = None, when: ExceptionTest | None = None) -> None:
        self.max_attempts = max_attempts
        self.decay_s = decay_s
        self.backoff_s: Backoff = backoff_s
        self.key_by: str | None = by
        self.per_job = False
        self.prefix = DEFAULT_PREFIX
        self.when_test = when
        self.delete_tests: tuple[ExceptionTest, ...] = ()
        self.fail_tests: tuple[ExceptionTest, ...] = ()
        self.report_test: ExceptionTest | None = None

    def _with(self, **changes: Any) -> ThrottlesExceptions:
        made = copy.copy(self)
        made.__dict__.update(changes)
        return made

    # -- the fluent options (Laravel's) ---------------------------------------------------------
    def by(self, key: object) -> ThrottlesExceptions:
        """Count exceptions under ``key`` (shared by every job class that names it)."""
        return self._with(key_by=str(key))

    def by_job(self) -> ThrottlesExceptions:
        """Count exceptions per job (its uuid) instead of per class."""
        return self._with(per_job=True)

    def with_prefix(self, prefix: str) -> ThrottlesExceptions:
        return self._with(prefix=prefix)

    def backoff(self, seconds: Backoff) -> ThrottlesExceptions:
        """Seconds before a job that raised runs again, or a function of the exception."""
        return self._with(backoff_s=seconds)

    def when(self, test: ExceptionTest) -> ThrottlesExceptions:
        """Handle only the exceptions ``test(exc)`` accepts; the others propagate as usual."""
        return self._with(when_test=test)

    def delete_when(self, match: type[BaseException] | ExceptionTest) -> ThrottlesExceptions:
        """Delete the job (done, nothing recorded) when it raises this."""
        return self._with(delete_tests=(*self.delete_tests, _test_for(match)))

    def fail_when(self, match: type[BaseException] | ExceptionTest) -> ThrottlesExceptions:
        """Fail the job for good, at once, when it raises this."""
        return self._with(fail_tests=(*self.fail_tests, _test_for(match)))

    def report(self, test: ExceptionTest | None = None) -> ThrottlesExceptions:
        """Log each handled exception with its traceback (only where ``test(exc)`` is true)."""
        return self._with(report_test=test or (lambda exc: True))

    # -- running ------------------------------------------------------------------------------
    def key(self, job: Any) -> str:
        if self.key_by is not None:
            scope = digest(self.key_by)
        elif self.per_job:
            queue_job = getattr(job, "_queue_job", None)
            scope = digest(queue_job.uuid if queue_job is not None else id(job))
        else:
            scope = readable(job_name(job))
        return f"{readable(self.prefix)}{scope}"

    def handle(self, job: Any, next: Next) -> Any:
        store, key = state_of(job), self.key(job)
        try:
            opened = store.get(f"{key}:open")
        except STORE_ERRORS as exc:
            release_unreachable(job, "ThrottlesExceptions", exc)
            return None
        if opened is not None and float(opened) > time.time():
            job.release(float(opened) - time.time() + random.uniform(0, 1), counts_attempt=False)
            return None
        try:
            result = next(job)
        except Exception as exc:
            if self.when_test is not None and not self.when_test(exc):
                raise
            self.handle_exception(job, exc, store, key)
            return None
        self.close(store, key)
        return result

    def handle_exception(self, job: Any, exc: Exception, store: StateStore, key: str) -> None:
        """Laravel's order: report, delete, fail, else count it and release with the backoff."""
        if self.report_test is not None and self.report_test(exc):
            log.error("%s raised (reported by ThrottlesExceptions)", job_name(job), exc_info=exc)
        if any(test(exc) for test in self.delete_tests):
            job.delete()
            return
        if any(test(exc) for test in self.fail_tests):
            job.fail(exc)
            return
        try:
            if store.incr(f"{key}:count", 1, ttl_s=self.decay_s) >= self.max_attempts:
                store.put(f"{key}:open", repr(time.time() + self.decay_s), ttl_s=self.decay_s)
        except STORE_ERRORS as lost:  # the job's own exception still stands; only the count is lost
            log.warning("ThrottlesExceptions could not count an exception of %s (%s)", job_name(job), lost)
        backoff = self.backoff_s(exc) if callable(self.backoff_s) else self.backoff_s
        job.release(float(backoff))

    def close(self, store: StateStore, key: str) -> None:
        """A success closes the circuit (a store that does not answer lets it expire)."""
        try:
            store.delete(f"{key}:count")
            store.delete(f"{key}:open")
        except STORE_ERRORS as exc:
            log.warning("ThrottlesExceptions could not close circuit %s (%s); it expires by itself",
                        key, exc)
