"""Interrupting an attempt that runs past its timeout, and keeping every attempt within its
reservation.

In the main thread a ``SIGALRM`` timer raises :class:`JobTimeoutError` inside the running code,
which stops pure-Python work, sleeps, and awaits. Code stuck in C that never returns to the
interpreter cannot be interrupted this way; the worker's watchdog handles that case: it lets a job
run on for a grace period after its timeout (``EVENTBUS_TIMEOUT_GRACE``, 5 s by default), then
records the attempt and ends the process.

So an attempt may last its timeout plus the grace. On a connection whose reservations expire
after ``retry_after``, that must stay below ``retry_after``, or a second worker takes the job
while the first still runs it: :func:`timeout_conflict` says why a timeout is refused — by the
worker at start (its ``--timeout``), by ``dispatch`` (a job's own ``timeout``), and by the worker
again before it runs a job (payloads pushed by other means).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from eventbus import config
from eventbus.errors import ConfigurationError, JobTimeoutError

GRACE_ENV = "EVENTBUS_TIMEOUT_GRACE"
DEFAULT_GRACE_S = 5.0


_HAS_SETITIMER = hasattr(signal, "setitimer")
#: The handler counts a deadline this close as passed (the timer is set from a moment taken just
#: before the call, and rounds to the clock's resolution); also the shortest interval set.
_SLACK_S = 0.001


def can_interrupt() -> bool:
    return _HAS_SETITIMER and threading.get_ident() == _main_ident


def _note_main_thread() -> None:
    global _main_ident
    _main_ident = threading.main_thread().ident


#: The main thread's id, asked once a job: kept here, and taken again in a forked child (whose
#: main thread is the one that forked; ``threading`` updates itself before this runs).
_main_ident: int | None = None  # module-level: signals are the process's, not a configuration's
_note_main_thread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_note_main_thread)


#: The innermost armed alarm, or None when nothing is armed.
_armed: _Alarm | None = None
#: A worker installed the handler for its whole run (:func:`alarm_handler`).
_installed = False
#: While installed, a running timer is kept when it fires at most this much before a job's
#: deadline (a tenth of the timeout, at most this): it is set about once a second, not per job.
_DRIFT_S = 1.0


def _fire_in(seconds: float) -> None:
    """Set the interval timer to fire once, in ``seconds`` (at least the slack: 0 would stop it)."""
    signal.setitimer(signal.ITIMER_REAL, max(seconds, _SLACK_S))


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    """Interrupt the armed code once a deadline has passed; a timer that fired early (it was
    set for an earlier job) is set again for the deadline, and one that fires with nothing
    armed is left off."""
    armed = _armed
    if armed is None:
        return
    now = time.monotonic()
    if now < armed.earliest - _SLACK_S:
        _fire_in(armed.earliest - now)
        return
    due = armed
    while due.deadline - _SLACK_S > now and due.outer is not None:
        due = due.outer  # an outer alarm ran out first: name that one
    raise JobTimeoutError(f"{due.what} timed out after {due.seconds:g} seconds")


@contextlib.contextmanager
def alarm_handler() -> Iterator[None]:
    """Keep the timeout's SIGALRM handler installed for a worker's whole run (restored after).

    Jobs then cost one ``getitimer`` for their alarm instead of two ``setitimer`` calls: the
    running timer is kept while it fires by the job's deadline and at most a tenth of the
    timeout (1 s at most) before it, and set again otherwise; it is left running when a job
    ends. So it never fires in a job that ends in time, except in the last tenth of its timeout
    (the handler then sets it again for the deadline). The worker stops it before it waits for
    work (:func:`stop_timer`), and after a job that left another SIGALRM handler installed. A
    job that installs a SIGALRM handler of its own replaces the interrupt: the watchdog ends it
    after its grace instead.
    """
    global _installed
    if not can_interrupt():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _installed = True
    try:
        yield
    finally:
        _installed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def stop_timer() -> None:
    """Stop the interval timer a worker left running after its last job (before an idle wait:
    no signal then interrupts code waiting for work)."""
    if _installed and _armed is None and can_interrupt():
        signal.setitimer(signal.ITIMER_REAL, 0)


def interrupt_after(seconds: float | None, what: str = "job") -> contextlib.AbstractContextManager[None]:
    """Raise JobTimeoutError in this (main) thread if the block runs longer than ``seconds``."""
    if not seconds or seconds <= 0 or not can_interrupt():
        return _NOTHING
    return _Alarm(seconds, what)


_NOTHING = contextlib.nullcontext()


class _Alarm:
    """The alarm of :func:`interrupt_after` (a plain context manager: one per job). While its
    block runs it is the armed alarm: what it interrupts, after how long, when, and the alarm
    it is nested in."""

    __slots__ = ("seconds", "what", "deadline", "earliest", "outer", "previous", "swapped")

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds, self.what = seconds, what
        self.deadline = self.earliest = math.inf
        #: The alarm this one is nested in (armed when this one was entered).
        self.outer: _Alarm | None = None
        self.previous: Any = None
        self.swapped = False

    def __enter__(self) -> None:
        global _armed
        seconds = self.seconds
        now = time.monotonic()
        self.deadline = deadline = now + seconds
        outer = _armed
        if outer is not None and outer.earliest <= now:
            outer = None  # left by a block whose exit an interrupt cut short: it is over
        self.outer = outer
        #: The earliest deadline of this alarm and every alarm it is nested in.
        self.earliest = earliest = deadline if outer is None else min(deadline, outer.earliest)
        self.swapped = not _installed
        _armed = self
        if self.swapped:  # on its own: the handler for this block only, the timer set exactly
            self.previous = signal.signal(signal.SIGALRM, _on_alarm)
        elif 0 < earliest - now - signal.getitimer(signal.ITIMER_REAL)[0] <= min(_DRIFT_S, seconds / 10):
            # Keep the running timer: it fires by the deadline, and not much before it (then it
            # would interrupt the job for nothing). One system call to read it, none to set it.
            return
        _fire_in(earliest - now)

    def __exit__(self, *exc: object) -> None:
        global _armed
        _armed = outer = self.outer
        self.outer = None  # a finished alarm keeps no chain of earlier ones alive
        if not self.swapped:
            if signal.getsignal(signal.SIGALRM) is not _on_alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)  # the job left its own handler: no stray alarm for it
            return  # else the timer runs on, for the next job
        if outer is None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        else:  # an enclosing block still has its deadline
            _fire_in(outer.earliest - time.monotonic())
        signal.signal(signal.SIGALRM, self.previous if self.previous is not None else signal.SIG_DFL)


def grace_s() -> float:
    """The watchdog's grace in seconds, from ``EVENTBUS_TIMEOUT_GRACE`` (default 5), read when
    asked: a process that dispatches checks jobs with the grace its workers are given."""
    text = config.env(GRACE_ENV).strip()
    if not text:
        return DEFAULT_GRACE_S
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigurationError(f"{GRACE_ENV} must be a number of seconds >= 0, not {text!r}")
    return value


def fits_reservation(timeout: float, grace: float, retry_after: float) -> bool:
    """Whether an attempt of ``timeout`` (0: none) plus the watchdog's grace ends before a
    reservation of ``retry_after`` expires."""
    return timeout > 0 and timeout + grace < retry_after


def timeout_conflict(subject: str, timeout: float, grace: float, retry_after: float, connection: str,
                     remedy: str) -> str | None:
    """Why ``timeout`` (0: none) cannot be used on a connection whose reservations expire after
    ``retry_after``, as one sentence starting with ``subject``; None when it can."""
    if fits_reservation(timeout, grace, retry_after):
        return None
    reason = ("a job still running when its reservation expires is handed to a second worker, "
              f"which runs it at the same time. {remedy}")
    if timeout <= 0:
        return (f"{subject} must be set (0 means none) on connection {connection!r}, whose "
                f"reservations expire after retry_after ({retry_after:g}s): {reason}")
    return (f"{subject} ({timeout:g}s) plus the watchdog grace ({grace:g}s, {GRACE_ENV}) must be "
            f"below the retry_after ({retry_after:g}s) of connection {connection!r}: {reason}")
