"""The locks a scheduled run takes: a unique job's own lock, or the entry's overlap lock.

A lock is the payload's ``unique`` shape (``{"key", "via", "untilProcessing"}``) and its value is
the uuid of the run holding it, so a job releases it on a worker as any unique job does.

Taking a lock has three answers. ``TAKEN``: it was free and is now this run's. ``OURS``: it is
already held by this very run, which happens when a scheduler took it, died before pushing,
and fires the same instant again after its restart (the instant's uuid is derived from the
instant, so it recognises its own lock and goes on instead of waiting for the lock to expire).
``HELD``: another run holds it.

An overlap lock also writes when it was taken and when it expires beside it (informative only:
``schedule list`` and the log line of a skipped instant say how long the wait can last).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from eventbus import runtime
from eventbus.dispatching import unique

TAKEN, OURS, HELD = "taken", "ours", "held"

Lock = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class HeldLock:
    """Who holds a lock and, for an overlap lock, from when until when (epoch seconds)."""

    holder: str
    taken_at: float | None = None
    expires_at: float | None = None

    def describe(self) -> str:
        when = ""
        if self.taken_at is not None and self.expires_at is not None:
            when = (f" since {time.strftime('%H:%M:%S', time.gmtime(self.taken_at))} UTC, "
                    f"expiring {time.strftime('%H:%M:%S', time.gmtime(self.expires_at))} UTC")
        return f"held by {self.holder}{when}"


def overlap_lock(scope: str, connection: str) -> Lock:
    """The ``without_overlapping`` lock of the entry whose state lives under ``scope``."""
    return {"key": f"schedule-overlap:{scope}", "via": connection, "untilProcessing": False}


def _taken_key(lock: Lock) -> str:
    return f"{lock['key']}:taken"


def take_overlap(lock: Lock, owner: str, ttl_s: float) -> str:
    """Take an overlap lock for ``owner`` for at most ``ttl_s`` seconds."""
    state = runtime.state(lock["via"])
    if state.add(lock["key"], owner, ttl_s=ttl_s):
        now = time.time()
        state.put(_taken_key(lock), f"{now!r} {now + ttl_s!r}", ttl_s=ttl_s)
        return TAKEN
    return OURS if state.get(lock["key"]) == owner else HELD


def take_unique(command: Any, payload: Any) -> str:
    """Take a unique job's own lock as a dispatch would (for ``unique_for`` seconds)."""
    if unique.acquire(command, payload):
        return TAKEN
    return OURS if unique.holder(payload.unique) == payload.uuid else HELD


def release(lock: Lock | None, owner: str) -> None:
    """Release ``lock`` if ``owner`` still holds it."""
    unique.release(lock, owner)


def held(lock: Lock) -> HeldLock | None:
    """The run holding ``lock`` now, if any."""
    state = runtime.state(lock.get("via"))
    holder = state.get(lock["key"])
    if holder is None:
        return None
    taken_at = expires_at = None
    stamp = state.get(_taken_key(lock))
    if stamp:
        try:
            taken_at, expires_at = (float(part) for part in stamp.split())
        except ValueError:
            pass  # informative only: an odd value shows the holder alone
    return HeldLock(holder, taken_at, expires_at)
