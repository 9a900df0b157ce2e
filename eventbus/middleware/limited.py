"""``RateLimited(name)``: start a job only when its named rate limit allows it.

Over the limit, the job is released until the current window ends (plus a little jitter, so the
released jobs do not all come back in the same instant) and, unlike a failure, the release does
not use up one of its tries unless ``counts_attempt=True``. Every limit the limiter gives the
job must allow it (a limiter may give none: the job runs at once); the windows are counted in the
connection's state store, so the limit holds across all workers and processes. When that store
does not answer, the job is put back without using a try (:mod:`eventbus.middleware.state`).
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any

from eventbus.limits import Limit, limits_for
from eventbus.middleware.pipeline import Next
from eventbus.middleware.state import STORE_ERRORS, release_unreachable, state_of
from eventbus.state.keys import digest, readable


@dataclasses.dataclass(frozen=True)
class RateLimited:
    """Run the job within the limits of ``eventbus.rate_limit(name, ...)``.

    ``release_after`` overrides the wait when over the limit; ``dont_release()`` drops (skips)
    an over-limit job instead; ``counts_attempt`` makes limit releases use up tries.
    """

    name: str
    release_after: float | None = None
    release: bool = True
    counts_attempt: bool = False

    def dont_release(self) -> RateLimited:
        return dataclasses.replace(self, release=False)

    def handle(self, job: Any, next: Next) -> Any:
        limits = limits_for(self.name, job)
        if not limits:
            return next(job)
        try:
            wait = self.wait_needed(job, limits)
        except STORE_ERRORS as exc:
            release_unreachable(job, f"RateLimited({self.name!r})", exc)
            return None
        if wait is None:
            return next(job)
        if self.release:
            job.release(self.release_after if self.release_after is not None else wait,
                        counts_attempt=self.counts_attempt)
        return None

    def wait_needed(self, job: Any, limits: list[Limit]) -> float | None:
        """Count this start in every window; None when all allow it, else seconds to wait."""
        store = state_of(job)
        now = time.time()
        waits = []
        for limit in limits:
            window = int(now // limit.window_s)
            count = store.incr(self._key(limit, window), 1, ttl_s=limit.window_s * 2)
            if count > limit.max:
                waits.append((window + 1) * limit.window_s - now)
        if not waits:
            return None
        return max(waits) + random.uniform(0, min(1.0, max(waits) * 0.1))

    def _key(self, limit: Limit, window: int) -> str:
        # the max is part of the key: two limits of one window count apart
        return f"limit:{readable(self.name)}:{limit.window_s:g}:{limit.max}:{digest(limit.key)}:{window}"
