"""Unique jobs (Laravel's ShouldBeUnique): a second dispatch while the first is waiting or
running is dropped.

A job class opts in with ``unique = True`` and says what makes it the same job with
``unique_id()`` (default: one per class). The lock is taken at dispatch in the state store of the
job's connection (or of ``unique_via``), held for at most ``unique_for`` seconds (default a day:
a crashed worker never leaves it forever), and released when the job succeeds or fails for good
(a release for a retry keeps it). With ``unique_until_processing = True`` it is released as the
job starts, so another may be queued while this one runs. The payload says which lock it holds,
so the worker releases it without decoding anything.
"""

from __future__ import annotations

from typing import Any

from eventbus import runtime
from eventbus.payload import Payload

DEFAULT_UNIQUE_FOR_S = 24 * 3600.0


def lock_for(command: Any, name: str, connection: str) -> dict[str, Any] | None:
    """The lock a dispatch of ``command`` needs (None when the class is not unique)."""
    if not getattr(command, "unique", False):
        return None
    unique_id = getattr(command, "unique_id", None)
    key = f"unique:{name}:{unique_id() if callable(unique_id) else ''}"
    via = getattr(command, "unique_via", None) or connection
    return {"key": key, "via": via, "untilProcessing": bool(getattr(command, "unique_until_processing", False))}


def acquire(command: Any, payload: Payload) -> bool:
    """Take the payload's lock for it; False when another job holds it (the dispatch is dropped)."""
    lock = payload.unique
    if lock is None:
        return True
    seconds = getattr(command, "unique_for", None) or DEFAULT_UNIQUE_FOR_S
    return runtime.state(lock["via"]).add(lock["key"], payload.uuid, ttl_s=float(seconds))


def release(lock: dict[str, Any] | None, owner: str) -> None:
    """Release the lock if ``owner`` (the job's uuid) still holds it."""
    if lock is not None:
        runtime.state(lock.get("via")).delete_if(lock["key"], owner)


def holder(lock: dict[str, Any]) -> str | None:
    """The uuid of the job holding ``lock`` now, if any."""
    return runtime.state(lock.get("via")).get(lock["key"])
