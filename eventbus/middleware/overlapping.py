"""``WithoutOverlapping(key)``: never two runs of the same job and key at once, on any worker.

A lock in the connection's state store is taken before the job runs and released when it ends
(success or exception). When another run holds it, the job is released for ``release_after``
seconds (without using up a try), or dropped with ``dont_release()``. The lock expires after
``expire_after`` seconds so a killed worker cannot hold it forever (Laravel's default never
expires it on Redis); the default is the job's timeout plus a minute.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from eventbus.middleware.pipeline import Next
from eventbus.middleware.state import job_name, owner_of, state_of

DEFAULT_EXPIRY_MARGIN_S = 60.0


@dataclasses.dataclass(frozen=True)
class WithoutOverlapping:
    """One run at a time per ``key`` (and per job class unless ``shared=True``)."""

    key: str = ""
    release_after: float = 0.0
    expire_after: float | None = None
    release: bool = True
    shared: bool = False

    def dont_release(self) -> WithoutOverlapping:
        return dataclasses.replace(self, release=False)

    def lock_key(self, job: Any) -> str:
        scope = "shared" if self.shared else job_name(job)
        return f"overlap:{scope}:{self.key}"

    def expiry(self, job: Any) -> float:
        if self.expire_after is not None:
            return float(self.expire_after)
        timeout = getattr(job, "timeout", None)
        return (float(timeout) if isinstance(timeout, (int, float)) else 60.0) + DEFAULT_EXPIRY_MARGIN_S

    def handle(self, job: Any, next: Next) -> Any:
        store, key, owner = state_of(job), self.lock_key(job), owner_of(job)
        if not store.add(key, owner, ttl_s=self.expiry(job)):
            if self.release:
                job.release(self.release_after, counts_attempt=False)
            return None
        try:
            return next(job)
        finally:
            store.delete_if(key, owner)
