"""Named rate limits: ``eventbus.rate_limit("mails", per_second=10)``, used by ``RateLimited``.

A limit is a number of jobs per window (a second, a minute, an hour, a day), counted across
every worker in the queue connection's state store, optionally per key (``by=lambda job:
job.user_id``: ten imports a minute *per user*). Windows are fixed and aligned to the clock,
like Laravel's limiter: at most ``max`` jobs start in each window.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from eventbus.errors import ConfigurationError

KeyOf = Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class Limit:
    """At most ``max`` jobs per ``window_s`` seconds, per ``by(job)`` when given."""

    max: int
    window_s: float
    by: KeyOf | None = None

    def key_for(self, job: Any) -> str:
        return "" if self.by is None else str(self.by(job))


_lock = threading.Lock()
_limits: dict[str, list[Limit]] = {}


def rate_limit(name: str, *, per_second: int | None = None, per_minute: int | None = None,
               per_hour: int | None = None, per_day: int | None = None,
               by: KeyOf | None = None) -> None:
    """Define (or replace) the limiter ``name``; every given window applies together.

    ``rate_limit("uploads", per_minute=10, per_day=1000, by=lambda job: job.user_id)``.
    """
    windows = {1.0: per_second, 60.0: per_minute, 3600.0: per_hour, 86400.0: per_day}
    limits = [Limit(int(n), window, by) for window, n in windows.items() if n is not None]
    if not limits:
        raise ConfigurationError(f"rate_limit({name!r}) needs per_second, per_minute, per_hour "
                                 "or per_day")
    for limit in limits:
        if isinstance(limit.max, bool) or limit.max < 1:
            raise ConfigurationError(f"rate_limit({name!r}): a limit must allow at least one job")
    with _lock:
        _limits[name] = limits


def limits_of(name: str) -> list[Limit]:
    """The limits of ``name``; ConfigurationError naming the defined ones when it is unknown."""
    with _lock:
        found = _limits.get(name)
        known = ", ".join(sorted(_limits)) or "none"
    if found is None:
        raise ConfigurationError(f"unknown rate limit {name!r} (defined: {known}); define it with "
                                 "eventbus.rate_limit(name, per_minute=...) in your app module")
    return found


def forget_rate_limits() -> None:
    """Remove every definition (tests)."""
    with _lock:
        _limits.clear()
