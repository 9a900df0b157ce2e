"""``WithoutOverlapping(key)``: never two runs of the same job and key at once, on any worker.

A lock in the connection's state store is taken before the job runs and released when it ends
(success or exception). When another run holds it, the job is released for ``release_after``
seconds (without using up a try), or dropped with ``dont_release()``. The lock expires after
``expire_after`` seconds so a killed worker cannot hold it forever (Laravel's default never
expires it on Redis); the default is the job's timeout plus a minute.

The lock is per job class and key; ``shared()`` makes it per key only (jobs of different classes
exclude each other), ``with_prefix(prefix)`` puts it under another prefix (``overlap:`` by
default). The key is user data: it is in the lock's name as a digest. When the store does not
answer, the job is put back without using a try (:mod:`eventbus.middleware.state`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from eventbus.middleware.pipeline import Next
from eventbus.middleware.state import (
    STORE_ERRORS,
    job_name,
    let_go,
    owner_of,
    release_unreachable,
    state_of,
)
from eventbus.state.keys import digest, readable

DEFAULT_EXPIRY_MARGIN_S = 60.0
DEFAULT_PREFIX = "overlap:"


@dataclasses.dataclass(frozen=True)
class WithoutOverlapping:
    """One run at a time per ``key`` (and per job class unless :meth:`shared`)."""

    key: object = ""
    release_after: float = 0.0
    expire_after: float | None = None
    release: bool = True
    share_key: bool = False
    prefix: str = DEFAULT_PREFIX

    def dont_release(self) -> WithoutOverlapping:
        """Drop the job (as done) instead of releasing it when another run holds the lock."""
        return dataclasses.replace(self, release=False)

    def shared(self) -> WithoutOverlapping:
        """One lock per key across every job class (Laravel's ``shared()``)."""
        return dataclasses.replace(self, share_key=True)

    def with_prefix(self, prefix: str) -> WithoutOverlapping:
        """Keep the lock under ``prefix`` instead of ``overlap:``."""
        return dataclasses.replace(self, prefix=prefix)

    def lock_key(self, job: Any) -> str:
        if self.share_key:
            return f"{readable(self.prefix)}{digest(self.key)}"
        return f"{readable(self.prefix)}{readable(job_name(job))}:{digest(self.key)}"

    def expiry(self, job: Any) -> float:
        if self.expire_after is not None:
            return float(self.expire_after)
        timeout = getattr(job, "timeout", None)
        return (float(timeout) if isinstance(timeout, (int, float)) else 60.0) + DEFAULT_EXPIRY_MARGIN_S

    def handle(self, job: Any, next: Next) -> Any:
        store, key, owner = state_of(job), self.lock_key(job), owner_of(job)
        try:
            taken = store.add(key, owner, ttl_s=self.expiry(job))
        except STORE_ERRORS as exc:
            release_unreachable(job, "WithoutOverlapping", exc)
            return None
        if not taken:
            if self.release:
                job.release(self.release_after, counts_attempt=False)
            return None
        try:
            return next(job)
        finally:
            let_go(store, key, owner)
