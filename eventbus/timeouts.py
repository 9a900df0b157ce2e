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
from collections.abc import Iterator
from types import FrameType
from typing import Any

from eventbus.errors import ConfigurationError, JobTimeoutError

GRACE_ENV = "EVENTBUS_TIMEOUT_GRACE"
DEFAULT_GRACE_S = 5.0


_HAS_SETITIMER = hasattr(signal, "setitimer")


def can_interrupt() -> bool:
    return _HAS_SETITIMER and threading.current_thread() is threading.main_thread()


#: What the armed alarm interrupts: (what, seconds), or None when nothing is armed.
_armed: tuple[str, float] | None = None
#: A worker installed the handler for its whole run (:func:`alarm_handler`).
_installed = False


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    armed = _armed
    if armed is not None:
        raise JobTimeoutError(f"{armed[0]} timed out after {armed[1]:g} seconds")


@contextlib.contextmanager
def alarm_handler() -> Iterator[None]:
    """Keep the timeout's SIGALRM handler installed for a worker's whole run (restored after).

    Each job then costs two ``setitimer`` calls instead of two handler swaps as well. A job that
    installs a SIGALRM handler of its own replaces the interrupt: the watchdog ends it after its
    grace instead.
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
        signal.signal(signal.SIGALRM, previous)


def interrupt_after(seconds: float | None, what: str = "job") -> contextlib.AbstractContextManager[None]:
    """Raise JobTimeoutError in this (main) thread if the block runs longer than ``seconds``."""
    if not seconds or seconds <= 0 or not can_interrupt():
        return _NOTHING
    return _Alarm(seconds, what)


_NOTHING = contextlib.nullcontext()


class _Alarm:
    """The armed alarm of :func:`interrupt_after` (a plain context manager: one per job)."""

    __slots__ = ("seconds", "what", "outer", "previous", "swapped")

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds, self.what = seconds, what
        self.outer: tuple[str, float] | None = None
        self.previous: Any = None
        self.swapped = False

    def __enter__(self) -> None:
        global _armed
        self.swapped = not _installed
        if self.swapped:
            self.previous = signal.signal(signal.SIGALRM, _on_alarm)
        self.outer, _armed = _armed, (self.what, self.seconds)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: object) -> None:
        global _armed
        signal.setitimer(signal.ITIMER_REAL, 0)
        _armed = self.outer
        if self.swapped:
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
