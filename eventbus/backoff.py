"""Backoff policies: how long a failed job waits before its next attempt.

A job's ``backoff`` is seconds (``5``), a list (``[1, 5, 10]``, the last one repeating), or a
policy from here::

    class SyncInventory(Job):
        tries = 8
        backoff = exponential(first=1, base=2, cap=600, jitter=True)

A policy is turned into the list of delays when the job is dispatched (the payload carries plain
numbers, like every other option), one delay per retry the job's ``tries`` allow. With jitter
each job gets its own random spread, so a thousand jobs that failed together against a server
that went down do not all come back in the same second.
"""

from __future__ import annotations

import dataclasses
import random

#: Delays computed for a job with unlimited tries (the last one repeats after that).
UNLIMITED_STEPS = 32


@dataclasses.dataclass(frozen=True)
class Exponential:
    """``first * base ** n`` seconds before retry ``n + 1``, at most ``cap``; see :func:`exponential`."""

    first: float = 1.0
    base: float = 2.0
    cap: float = 600.0
    jitter: bool = True

    def delays(self, tries: int | None) -> list[float]:
        """The delay before each retry of a job with ``tries`` attempts (None or 0: unlimited)."""
        steps = UNLIMITED_STEPS if not tries else max(tries - 1, 1)
        out = []
        for n in range(steps):
            delay = min(self.first * self.base ** n, self.cap)
            if self.jitter:  # "equal jitter": at least half the delay, never more than all of it
                delay = delay / 2 + random.uniform(0, delay / 2)
            out.append(round(delay, 3))
        return out


def exponential(*, first: float = 1.0, base: float = 2.0, cap: float = 600.0,
                jitter: bool = True) -> Exponential:
    """Delays that grow ``first, first*base, first*base**2, ...`` up to ``cap`` seconds.

    With ``jitter`` (the default) each delay is drawn between half of it and all of it.
    """
    if first < 0 or base < 1 or cap < 0:
        raise ValueError("exponential() needs first >= 0, base >= 1 and cap >= 0 seconds")
    return Exponential(first=float(first), base=float(base), cap=float(cap), jitter=jitter)
