"""Cron expressions: the instants an expression fires at, in a timezone, with cron's DST rule.

Built on croniter (``pip install 'eventbus[schedule]'``). Instants are computed in the event's
timezone and returned as UTC epoch seconds. Around daylight saving time the rule is Debian
cron's: a job whose fixed hour falls in the hour that is skipped runs right after the jump, and
a job whose fixed hour falls in the hour that repeats runs once, not twice (croniter alone
would fire it in both folds).

An entry may also repeat within each minute its expression matches (``every_ten_seconds()``,
Laravel's ``repeatSeconds``): the instants are then that minute's start and every ``repeat_s``
seconds after it, up to the next minute.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from eventbus.errors import ConfigurationError, MissingDependencyError

#: How far ahead :func:`check` looks for a first instant (Feb 29th comes every 4 to 8 years).
LOOKAHEAD_YEARS = 10


def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError as exc:
        raise MissingDependencyError("the scheduler needs croniter: pip install 'eventbus[schedule]'") from exc
    return croniter


def _never_matches() -> type[Exception]:
    from croniter import CroniterBadDateError

    return CroniterBadDateError  # type: ignore[no-any-return]


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
    """``expression`` if croniter accepts it as a five-field cron expression that fires.

    An expression that never matches a date (``0 0 30 2 *``, February 30th) is refused here,
    when the schedule is defined, rather than leaving ``schedule work`` nothing to wait for.
    """
    if not isinstance(expression, str) or len(expression.split()) != 5 \
            or not _croniter().is_valid(expression):
        raise ConfigurationError(f"bad cron expression {expression!r} (five fields: minute hour "
                                 "day-of-month month day-of-week)")
    start = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
    try:
        _croniter()(expression, start, max_years_between_matches=LOOKAHEAD_YEARS).get_next(dt.datetime)
    except _never_matches():
        raise ConfigurationError(f"cron expression {expression!r} never fires (no date matches "
                                 "it, as February 30th)") from None
    return expression


def instants(expression: str, tz: dt.tzinfo, after: float, until: float,
             repeat_s: int | None = None) -> Iterator[float]:
    """The fire instants in ``(after, until]`` as UTC epoch seconds, oldest first.

    An expression that has no next date yields nothing (never an exception: a scheduler loop
    must survive an expression that slipped past :func:`check`).
    """
    for minute in _minutes(expression, tz, after - 60 if repeat_s else after, until):
        if not repeat_s:
            if minute > after:
                yield minute
            continue
        for offset in range(0, 60, repeat_s):
            instant = minute + offset
            if instant > until:
                return
            if instant > after:
                yield instant


def _minutes(expression: str, tz: dt.tzinfo, after: float, until: float) -> Iterator[float]:
    start = dt.datetime.fromtimestamp(after, tz)
    it = _croniter()(expression, start)
    previous_wall: tuple[int, ...] | None = None
    while True:
        try:
            local: dt.datetime = it.get_next(dt.datetime)
        except _never_matches():
            return
        instant = local.timestamp()
        if instant > until:
            return
        wall = local.timetuple()[:5]
        if wall == previous_wall:  # the repeated hour of a DST change: once is enough
            continue
        previous_wall = wall
        if instant > after:
            yield instant


def next_instant(expression: str, tz: dt.tzinfo, after: float, repeat_s: int | None = None) -> float | None:
    """The first instant strictly after ``after`` (epoch seconds); None if there is none."""
    for instant in instants(expression, tz, after, after + LOOKAHEAD_YEARS * 366 * 86400, repeat_s):
        return instant
    return None
