"""Cron expressions: the instants an expression fires at, in a timezone, with cron's DST rule.

Built on croniter (``pip install 'eventbus[schedule]'``). Instants are computed in the event's
timezone and returned as UTC epoch seconds. Around daylight saving time the rule is Debian
cron's: a job whose fixed hour falls in the hour that is skipped runs right after the jump, and
a job whose fixed hour falls in the hour that repeats runs once, not twice (croniter alone
would fire it in both folds).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from eventbus.errors import ConfigurationError, MissingDependencyError


def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError as exc:
        raise MissingDependencyError("the scheduler needs croniter: pip install 'eventbus[schedule]'") from exc
    return croniter


def zone(name: str) -> dt.tzinfo:
    """The timezone named ``name`` (IANA, e.g. ``Europe/Berlin``); ConfigurationError if unknown."""
    if name.upper() == "UTC":
        return dt.timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigurationError(f"unknown timezone {name!r} (use an IANA name such as "
                                 "'Europe/Berlin' or 'UTC')") from None


def check(expression: str) -> str:
    """``expression`` if croniter accepts it as a five-field cron expression."""
    if len(expression.split()) != 5 or not _croniter().is_valid(expression):
        raise ConfigurationError(f"bad cron expression {expression!r} (five fields: minute hour "
                                 "day-of-month month day-of-week)")
    return expression


def instants(expression: str, tz: dt.tzinfo, after: float, until: float) -> Iterator[float]:
    """The fire instants in ``(after, until]`` as UTC epoch seconds, oldest first."""
    start = dt.datetime.fromtimestamp(after, tz)
    it = _croniter()(expression, start)
    previous_wall: tuple[int, ...] | None = None
    while True:
        local: dt.datetime = it.get_next(dt.datetime)
        instant = local.timestamp()
        if instant > until:
            return
        wall = local.timetuple()[:5]
        if wall == previous_wall:  # the repeated hour of a DST change: once is enough
            continue
        previous_wall = wall
        if instant > after:
            yield instant


def next_instant(expression: str, tz: dt.tzinfo, after: float) -> float:
    """The first instant strictly after ``after`` (epoch seconds)."""
    for instant in instants(expression, tz, after, after + 400 * 86400):
        return instant
    raise ConfigurationError(f"cron expression {expression!r} never fires")
