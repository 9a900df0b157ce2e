"""Unique jobs (Laravel's ShouldBeUnique): a second dispatch while the first is waiting or
running is dropped.

A job class opts in with ``unique = True`` and says what makes it the same job with
``unique_id()`` (default: one per class). The lock is taken at dispatch in the state store of the
job's connection (or of ``unique_via``), held for at most ``unique_for`` seconds (default a day:
a crashed worker never leaves it forever), and released when the job succeeds, fails for good or
is deleted because its model is gone (a release for a retry keeps it). With
``unique_until_processing = True`` it is released when the job reaches ``handle``, after its
middleware (as Laravel does): a job its middleware puts back keeps its lock, and another may be
queued while this one runs. The payload says which lock it holds, so the worker releases it
without decoding anything. The unique id is user data: it is in the lock's key as a digest.

A release that cannot reach its store never fails the job that ran: it is kept and tried again
with the next releases of the same process, by the worker between jobs and while it waits for
work (at most every :data:`RETRY_PENDING_EVERY_S`) and once more when it stops; the lock expires
after ``unique_for`` whatever happens.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from eventbus import runtime
from eventbus.errors import ConnectionUnavailableError
from eventbus.payload import Payload
from eventbus.state import StateStore
from eventbus.state.keys import user_key

log = logging.getLogger(__name__)

DEFAULT_UNIQUE_FOR_S = 24 * 3600.0
#: Releases that could not reach their store are tried again at most this often.
RETRY_PENDING_EVERY_S = 5.0
#: At most this many such releases are remembered (the rest expire with their ``unique_for``).
MAX_PENDING = 10_000


def lock_for(command: Any, name: str, connection: str) -> dict[str, Any] | None:
    """The lock a dispatch of ``command`` needs (None when the class is not unique).

    The unique id is user data (any length, any character): it is in the key as a digest.
    """
    if not getattr(command, "unique", False):
        return None
    unique_id = getattr(command, "unique_id", None)
    key = user_key("unique", name, unique_id() if callable(unique_id) else "")
    via = getattr(command, "unique_via", None) or connection
    return {"key": key, "via": via, "untilProcessing": bool(getattr(command, "unique_until_processing", False))}


def acquire(command: Any, payload: Payload, *, store: StateStore | None = None) -> bool:
    """Take the payload's lock for it; False when another job holds it (the dispatch is dropped).

    ``store``: where to take it instead of the lock's own store (a fake queue's locks)."""
    lock = payload.unique
    if lock is None:
        return True
    seconds = getattr(command, "unique_for", None) or DEFAULT_UNIQUE_FOR_S
    return (store or runtime.state(lock["via"])).add(lock["key"], payload.uuid, ttl_s=float(seconds))


def release(lock: dict[str, Any] | None, owner: str, *, store: StateStore | None = None) -> None:
    """Release the lock if ``owner`` (the job's uuid) still holds it.

    Never raises for a store that does not answer: the job that held the lock has run, and its
    outcome must not change because of the lock. The release is kept and tried again (see
    :func:`retry_pending`).
    """
    if lock is None:
        return
    if store is not None:
        store.delete_if(lock["key"], owner)
        return
    _pending.retry()
    try:
        runtime.state(lock.get("via")).delete_if(lock["key"], owner)
    except ConnectionUnavailableError as exc:
        log.warning("could not release unique lock %s of job %s (%s); tried again later, and it "
                    "expires anyway", lock["key"], owner, exc)
        _pending.keep(lock, owner)


def holder(lock: dict[str, Any], *, store: StateStore | None = None) -> str | None:
    """The uuid of the job holding ``lock`` now, if any."""
    return (store or runtime.state(lock.get("via"))).get(lock["key"])


def retry_pending(*, force: bool = True) -> int:
    """Try again the releases that could not reach their store; how many are still pending.

    Without ``force`` only when the last try was :data:`RETRY_PENDING_EVERY_S` ago or more (a
    worker calls it every turn of its loop: it costs nothing while no release is pending)."""
    return _pending.retry(force=force)


class _Pending:
    """Releases that could not reach their store, tried again now and then, oldest first."""

    def __init__(self) -> None:
        self.items: dict[tuple[str | None, str, str], None] = {}
        self.lock = threading.Lock()
        self.tried_at = 0.0

    def keep(self, lock: dict[str, Any], owner: str) -> None:
        with self.lock:
            if len(self.items) < MAX_PENDING:
                self.items[lock.get("via"), lock["key"], owner] = None

    def retry(self, *, force: bool = False) -> int:
        with self.lock:
            if not self.items or (not force and time.monotonic() - self.tried_at < RETRY_PENDING_EVERY_S):
                return len(self.items)
            self.tried_at = time.monotonic()
            items = list(self.items)
        down: set[str | None] = set()
        for via, key, owner in items:
            if via in down:
                continue  # one try per store and round: a store that does not answer is not asked again
            try:
                runtime.state(via).delete_if(key, owner)
            except ConnectionUnavailableError:
                down.add(via)
                continue
            with self.lock:
                self.items.pop((via, key, owner), None)
        return len(self.items)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


_pending = _Pending()
runtime.on_reset(_pending.clear)
