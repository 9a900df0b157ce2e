"""Named rate limits: ``eventbus.rate_limit("mails", per_second=10)``, used by ``RateLimited``.

A limit is a number of jobs per window (a second, a minute, an hour, a day), counted across
every worker in the queue connection's state store, optionally per key (``by=lambda job:
job.user_id``: ten imports a minute *per user*). Windows are fixed and aligned to the clock,
like Laravel's limiter: at most ``max`` jobs start in each window.

A limiter may also be a function of the job (Laravel's ``RateLimiter::for``), deciding for each
job which limits apply: one :class:`Limit`, several (every one must allow the job), or none::

    eventbus.rate_limit("backups", lambda job: None if job.user.vip else
                        [Limit.per_hour(1).by(job.user.id), Limit.per_day(100)])

A job naming a limiter nobody defined fails with :class:`~eventbus.ConfigurationError` (Laravel
runs it without a limit: here a misspelt name must not lift the limit silently).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from eventbus import runtime
from eventbus.errors import ConfigurationError

KeyOf = Callable[[Any], Any]
#: A function of the job returning its limits: a Limit, a sequence of them, or None (no limit).
Limiter = Callable[[Any], Any]

WINDOWS_S = {"per_second": 1.0, "per_minute": 60.0, "per_hour": 3600.0, "per_day": 86400.0}


@dataclasses.dataclass(frozen=True)
class Limit:
    """At most ``max`` jobs per ``window_s`` seconds, counted per ``key`` (one count by default)."""

    max: int
    window_s: float
    key: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.max, bool) or not isinstance(self.max, int) or self.max < 1:
            raise ConfigurationError(f"a rate limit must allow at least one job, not {self.max!r}")

    @classmethod
    def per_second(cls, max: int) -> Limit:
        return cls(max, WINDOWS_S["per_second"])

    @classmethod
    def per_minute(cls, max: int) -> Limit:
        return cls(max, WINDOWS_S["per_minute"])

    @classmethod
    def per_hour(cls, max: int) -> Limit:
        return cls(max, WINDOWS_S["per_hour"])

    @classmethod
    def per_day(cls, max: int) -> Limit:
        return cls(max, WINDOWS_S["per_day"])

    @staticmethod
    def none() -> tuple[Limit, ...]:
        """No limit for this job (Laravel's ``Limit::none()``): a limiter may return this."""
        return ()

    def by(self, key: object) -> Limit:
        """The same limit counted separately per ``key`` (a user id, an account...)."""
        return dataclasses.replace(self, key=str(key))


def rate_limit(name: str, limiter: Limiter | None = None, *, per_second: int | None = None,
               per_minute: int | None = None, per_hour: int | None = None,
               per_day: int | None = None, by: KeyOf | None = None) -> None:
    """Define (or replace) the limiter ``name``.

    Either windows, which all apply together, optionally per ``by(job)``:
    ``rate_limit("uploads", per_minute=10, per_day=1000, by=lambda job: job.user_id)``;
    or a function of the job returning its limits (a :class:`Limit`, a list of them, or None
    for none): ``rate_limit("uploads", lambda job: Limit.per_minute(10).by(job.user_id))``.
    """
    windows = {"per_second": per_second, "per_minute": per_minute, "per_hour": per_hour,
               "per_day": per_day}
    given = {window: n for window, n in windows.items() if n is not None}
    if limiter is not None:
        if given or by is not None or not callable(limiter):
            raise ConfigurationError(f"rate_limit({name!r}) takes either a function of the job "
                                     "or windows (per_minute=...), not both")
        found: Limiter = limiter
    elif not given:
        raise ConfigurationError(f"rate_limit({name!r}) needs per_second, per_minute, per_hour "
                                 "or per_day, or a function of the job returning its limits")
    else:
        fixed = [Limit(n, WINDOWS_S[window]) for window, n in given.items()]
        found = _fixed_limiter(fixed, by)
    tables = runtime.registries()
    with tables.lock:
        tables.limiters[name] = found


def _fixed_limiter(limits: list[Limit], by: KeyOf | None) -> Limiter:
    if by is None:
        return lambda job: limits
    return lambda job: [limit.by(by(job)) for limit in limits]


def limits_for(name: str, job: Any) -> list[Limit]:
    """The limits of limiter ``name`` for ``job`` (empty: no limit). ConfigurationError naming
    the defined limiters when ``name`` is unknown, or when its function returns something else."""
    limiters = runtime.registries().limiters
    limiter = limiters.get(name)
    if limiter is None:
        known = ", ".join(sorted(limiters)) or "none"
        raise ConfigurationError(f"unknown rate limit {name!r} (defined: {known}); define it with "
                                 "eventbus.rate_limit(name, per_minute=...) in your app module")
    found = limiter(job)
    if found is None:
        return []
    limits = [found] if isinstance(found, Limit) else list(found) if isinstance(found, (list, tuple)) else None
    if limits is None or not all(isinstance(limit, Limit) for limit in limits):
        raise ConfigurationError(f"rate limit {name!r} returned {found!r}; a limiter returns a Limit, "
                                 "a list of them, or None")
    return limits


def forget_rate_limits() -> None:
    """Remove every definition (tests)."""
    tables = runtime.registries()
    with tables.lock:
        tables.limiters.clear()
