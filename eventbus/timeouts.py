"""Interrupting an attempt that runs past its timeout.

In the main thread a ``SIGALRM`` timer raises :class:`JobTimeoutError` inside the running code,
which stops pure-Python work, sleeps, and awaits. Code stuck in C that never returns to the
interpreter cannot be interrupted this way; the worker's watchdog handles that case.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from eventbus.errors import JobTimeoutError


def can_interrupt() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def interrupt_after(seconds: float | None, what: str = "job") -> Iterator[None]:
    """Raise JobTimeoutError in this (main) thread if the block runs longer than ``seconds``."""
    if not seconds or seconds <= 0 or not can_interrupt():
        yield
        return

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise JobTimeoutError(f"{what} timed out after {seconds:g} seconds")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
