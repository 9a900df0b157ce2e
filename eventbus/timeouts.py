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

from eventbus.errors import ConfigurationError, JobTimeoutError

GRACE_ENV = "EVENTBUS_TIMEOUT_GRACE"
DEFAULT_GRACE_S = 5.0


_HAS_SETITIMER = hasattr(signal, "setitimer")
#: The interval timer may fire this much before a deadline taken from ``time.monotonic()``
#: (they are different clocks); the handler counts such a deadline as passed.
_SLACK_S = 0.001


def can_interrupt() -> bool:
    return _HAS_SETITIMER and threading.get_ident() == _main_ident


def _note_main_thread() -> None:
    global _main_ident
    _main_ident = threading.main_thread().ident


#: The main thread's id, asked once a job: kept here, and taken again in a forked child (whose
#: main thread is the one that forked; ``threading`` updates itself before this runs).
_main_ident: int | None = None
_note_main_thread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_note_main_thread)


#: The innermost armed alarm, or None when nothing is armed.
_armed: _Alarm | None = None
#: A worker installed the handler for its whole run (:func:`alarm_handler`).
_installed = False
#: While installed: when the interval timer fires next (``time.monotonic()``; inf: not set).
_timer_due = math.inf


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    """Interrupt the armed code once a deadline has passed; a timer that fired for an alarm
    that ended already is set again for the one armed now (or left off when none is)."""
    global _timer_due
    armed = _armed
    if armed is None:
        _timer_due = math.inf
        return
    now = time.monotonic()
    if now < armed.earliest - _SLACK_S:
        _timer_due = armed.earliest
        signal.setitimer(signal.ITIMER_REAL, armed.earliest - now)
        return
    due = armed
    while due.deadline - _SLACK_S > now and due.outer is not None:
        due = due.outer  # an outer alarm ran out first: name that one
    raise JobTimeoutError(f"{due.what} timed out after {due.seconds:g} seconds")


@contextlib.contextmanager
def alarm_handler() -> Iterator[None]:
    """Keep the timeout's SIGALRM handler installed for a worker's whole run (restored after).

    Jobs then cost no system call for their alarm in the common case: the interval timer is set
    only when a job's deadline comes before the time it fires next, and left running when a job
    ends. When it fires for a job that ended, the handler sets it for the job running now, or
    leaves it off (so a worker of one-second jobs with a 60 s timeout sets it about once a
    minute instead of twice a job). A job that installs a SIGALRM handler of its own, or cancels
    the process's alarm, replaces the interrupt: the watchdog ends it after its grace instead.
    """
    global _installed, _timer_due
    if not can_interrupt():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _installed = True
    try:
        yield
    finally:
        _installed = False
        _timer_due = math.inf
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def interrupt_after(seconds: float | None, what: str = "job") -> contextlib.AbstractContextManager[None]:
    """Raise JobTimeoutError in this (main) thread if the block runs longer than ``seconds``."""
    if not seconds or seconds <= 0 or not _HAS_SETITIMER or threading.get_ident() != _main_ident:
        return _NOTHING  # (the last two: not can_interrupt(), asked once a job)
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
        global _armed, _timer_due
        seconds = self.seconds
        self.deadline = deadline = time.monotonic() + seconds
        self.outer = outer = _armed
        #: The earliest deadline of this alarm and every alarm it is nested in.
        self.earliest = earliest = deadline if outer is None else min(deadline, outer.earliest)
        self.swapped = not _installed
        _armed = self
        if self.swapped:  # on its own: the handler for this block only, the timer set exactly
            self.previous = signal.signal(signal.SIGALRM, _on_alarm)
            signal.setitimer(signal.ITIMER_REAL, earliest - deadline + seconds)
            return
        # The timer must fire by this deadline. It is set when it would fire later (or is off),
        # and when it should have fired already: then something else took the process's timer.
        if earliest < _timer_due or _timer_due < deadline - seconds:
            _timer_due = earliest
            signal.setitimer(signal.ITIMER_REAL, earliest - deadline + seconds)

    def __exit__(self, *exc: object) -> None:
        global _armed
        _armed = outer = self.outer
        self.outer = None  # a finished alarm keeps no chain of earlier ones alive
        if not self.swapped:
            return  # the timer runs on; the handler sets it again or leaves it off
        if outer is None:
            signal.setitimer(signal.ITIMER_REAL, 0)
        else:  # an enclosing block still has its deadline
            signal.setitimer(signal.ITIMER_REAL, max(outer.earliest - time.monotonic(), _SLACK_S))
        signal.signal(signal.SIGALRM, self.previous if self.previous is not None else signal.SIG_DFL)


def grace_s() -> float:
    """The watchdog's grace in seconds, from ``EVENTBUS_TIMEOUT_GRACE`` (default 5), read when
    asked: a process that dispatches checks jobs with the grace its workers are given."""
    text = os.environ.get(GRACE_ENV, "").strip()
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
