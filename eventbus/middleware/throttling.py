"""``ThrottlesExceptions``: stop hammering a failing service (a circuit breaker).

After ``max_attempts`` exceptions within ``decay_s`` seconds (counted per job class, or per
``by`` key, across every worker), jobs of that class are released without running until the
window has passed; a success closes the circuit again. An exception it counts releases the job
after ``backoff_s`` seconds instead of going through the usual retry rules, as Laravel's does
(pair it with ``retry_until`` to bound how long a job keeps trying); ``when`` limits which
exceptions are counted, the others propagate as usual.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable
from typing import Any

from eventbus.middleware.pipeline import Next
from eventbus.middleware.state import job_name, state_of


@dataclasses.dataclass(frozen=True)
class ThrottlesExceptions:
    """Open the circuit after ``max_attempts`` exceptions in ``decay_s`` seconds."""

    max_attempts: int = 10
    decay_s: float = 600.0
    backoff_s: float = 0.0
    by: str | None = None
    when: Callable[[BaseException], bool] | None = None

    def key(self, job: Any) -> str:
        return f"throttle:{self.by or job_name(job)}"

    def handle(self, job: Any, next: Next) -> Any:
        store, key = state_of(job), self.key(job)
        opened = store.get(f"{key}:open")
        if opened is not None and float(opened) > time.time():
            job.release(float(opened) - time.time() + random.uniform(0, 1), counts_attempt=False)
            return None
        try:
            result = next(job)
        except Exception as exc:
            if self.when is not None and not self.when(exc):
                raise
            if store.incr(f"{key}:count", 1, ttl_s=self.decay_s) >= self.max_attempts:
                store.put(f"{key}:open", repr(time.time() + self.decay_s), ttl_s=self.decay_s)
            job.release(self.backoff_s)
            return None
        store.delete(f"{key}:count")
        store.delete(f"{key}:open")
        return result
