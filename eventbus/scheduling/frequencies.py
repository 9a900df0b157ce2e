"""When an entry fires: Laravel's ``ManagesFrequencies`` as fluent methods on a cron expression.

Each helper rewrites some fields of the entry's five-field expression and leaves the others, as
Laravel's ``spliceIntoPosition`` does, so helpers compose: ``daily_at("07:30").weekdays()`` is
``30 7 * * 1-5``. The sub-minute helpers (``every_ten_seconds()``) set the minute field to ``*``
and repeat within each minute. Days of the week are numbered as in cron and Laravel: 0 is Sunday.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from eventbus.errors import ConfigurationError
from eventbus.scheduling import cron

SUNDAY, MONDAY, TUESDAY, WEDNESDAY, THURSDAY, FRIDAY, SATURDAY = range(7)

F = TypeVar("F", bound="Frequencies")
Numbers = int | str | Iterable[int]

MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK = range(5)


class Frequencies:
    """The frequency helpers; the entry classes inherit them (``expression``, ``repeat_s``)."""

    expression: str = "* * * * *"
    repeat_s: int | None = None

    def cron(self: F, expression: str) -> F:
        """A five-field cron expression: ``"0 2 * * *"`` is every night at 02:00."""
        self.expression = cron.check(expression)
        return self

    def _splice(self: F, **fields: object) -> F:
        parts = self.expression.split()
        for name, value in fields.items():
            parts[_FIELDS[name]] = str(value)
        return self.cron(" ".join(parts))

    # -- within a minute ----------------------------------------------------------------------
    def _repeat_every(self: F, seconds: int) -> F:
        if seconds <= 0 or 60 % seconds:
            raise ConfigurationError(f"every {seconds} seconds: the seconds must divide 60")
        self.repeat_s = seconds
        return self._splice(minute="*")

    def every_second(self: F) -> F:
        return self._repeat_every(1)

    def every_two_seconds(self: F) -> F:
        return self._repeat_every(2)

    def every_five_seconds(self: F) -> F:
        return self._repeat_every(5)

    def every_ten_seconds(self: F) -> F:
        return self._repeat_every(10)

    def every_fifteen_seconds(self: F) -> F:
        return self._repeat_every(15)

    def every_twenty_seconds(self: F) -> F:
        return self._repeat_every(20)

    def every_thirty_seconds(self: F) -> F:
        return self._repeat_every(30)

    # -- minutes ------------------------------------------------------------------------------
    def every_minute(self: F) -> F:
        return self._splice(minute="*")

    def every_minutes(self: F, n: int) -> F:
        """Every ``n`` minutes (``n`` divides 60: 2, 3, 4, 5, 6, 10, 12, 15, 20, 30)."""
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0 or 60 % n:
            raise ConfigurationError(f"every_minutes({n!r}): the minutes must divide 60")
        return self._splice(minute="*" if n == 1 else f"*/{n}")

    def every_two_minutes(self: F) -> F:
        return self.every_minutes(2)

    def every_three_minutes(self: F) -> F:
        return self.every_minutes(3)

    def every_four_minutes(self: F) -> F:
        return self.every_minutes(4)

    def every_five_minutes(self: F) -> F:
        return self.every_minutes(5)

    def every_ten_minutes(self: F) -> F:
        return self.every_minutes(10)

    def every_fifteen_minutes(self: F) -> F:
        return self.every_minutes(15)

    def every_thirty_minutes(self: F) -> F:
        return self.every_minutes(30)

    # -- hours --------------------------------------------------------------------------------
    def hourly(self: F) -> F:
        return self._splice(minute=0)

    def hourly_at(self: F, minute: Numbers) -> F:
        """Every hour at ``minute`` past (or several minutes: ``[0, 30]``)."""
        return self._splice(minute=_numbers("minute", minute, 59))

    def every_odd_hour(self: F, minute: Numbers = 0) -> F:
        return self._splice(minute=_numbers("minute", minute, 59), hour="1-23/2")

    def every_even_hour(self: F, minute: Numbers = 0) -> F:
        return self._splice(minute=_numbers("minute", minute, 59), hour="0-22/2")

    def every_two_hours(self: F, minute: Numbers = 0) -> F:
        return self._splice(minute=_numbers("minute", minute, 59), hour="*/2")

    def every_three_hours(self: F, minute: Numbers = 0) -> F:
        return self._splice(minute=_numbers("minute", minute, 59), hour="*/3")

    def every_four_hours(self: F, minute: Numbers = 0) -> F:
        return self._splice(minute=_numbers("minute", minute, 59), hour="*/4")

    def every_six_hours(self: F, minute: Numbers = 0) -> F:
        return self._splice(minute=_numbers("minute", minute, 59), hour="*/6")

    # -- days ---------------------------------------------------------------------------------
    def daily(self: F) -> F:
        return self._splice(minute=0, hour=0)

    def daily_at(self: F, time: str) -> F:
        """Every day at ``"HH:MM"`` (or ``"HH"``) in the entry's timezone."""
        hour, minute = hh_mm(time)
        return self._splice(minute=minute, hour=hour)

    def at(self: F, time: str) -> F:
        """Same as :meth:`daily_at`."""
        return self.daily_at(time)

    def twice_daily(self: F, first: int = 1, second: int = 13) -> F:
        """Every day at ``first``:00 and ``second``:00."""
        return self.twice_daily_at(first, second, 0)

    def twice_daily_at(self: F, first: int = 1, second: int = 13, minute: int = 0) -> F:
        hours = _numbers("hour", [first, second], 23)
        return self._splice(minute=_numbers("minute", minute, 59), hour=hours)

    def days(self: F, *days: Numbers) -> F:
        """Only on these days of the week: ``days(MONDAY, WEDNESDAY)``, ``days([1, 3])``, ``days("1-5")``."""
        flat: list[object] = []
        for day in days:
            flat.extend(day if isinstance(day, (list, tuple, set, frozenset)) else [day])
        if not flat:
            raise ConfigurationError("days() needs at least one day (0 = Sunday .. 6 = Saturday)")
        return self._splice(day_of_week=",".join(_day(d) for d in flat))

    def weekdays(self: F) -> F:
        return self.days(f"{MONDAY}-{FRIDAY}")

    def weekends(self: F) -> F:
        return self.days(SATURDAY, SUNDAY)

    def mondays(self: F) -> F:
        return self.days(MONDAY)

    def tuesdays(self: F) -> F:
        return self.days(TUESDAY)

    def wednesdays(self: F) -> F:
        return self.days(WEDNESDAY)

    def thursdays(self: F) -> F:
        return self.days(THURSDAY)

    def fridays(self: F) -> F:
        return self.days(FRIDAY)

    def saturdays(self: F) -> F:
        return self.days(SATURDAY)

    def sundays(self: F) -> F:
        return self.days(SUNDAY)

    # -- weeks, months, years -----------------------------------------------------------------
    def weekly(self: F) -> F:
        """Every Sunday at 00:00."""
        return self._splice(minute=0, hour=0, day_of_week=SUNDAY)

    def weekly_on(self: F, day: Numbers, time: str = "00:00") -> F:
        """Every week on ``day`` (0 = Sunday .. 6 = Saturday, or several) at ``"HH:MM"``."""
        return self.daily_at(time).days(day)

    def monthly(self: F) -> F:
        return self._splice(minute=0, hour=0, day_of_month=1)

    def monthly_on(self: F, day: int = 1, time: str = "00:00") -> F:
        return self.daily_at(time)._splice(day_of_month=_numbers("day of month", day, 31, low=1))

    def twice_monthly(self: F, first: int = 1, second: int = 16, time: str = "00:00") -> F:
        days = _numbers("day of month", [first, second], 31, low=1)
        return self.daily_at(time)._splice(day_of_month=days)

    def last_day_of_month(self: F, time: str = "00:00") -> F:
        """The last day of every month (cron's ``L``: the 28th, 29th, 30th or 31st)."""
        return self.daily_at(time)._splice(day_of_month="L")

    def quarterly(self: F) -> F:
        """January, April, July and October 1st at 00:00."""
        return self._splice(minute=0, hour=0, day_of_month=1, month="1-12/3")

    def quarterly_on(self: F, day: int = 1, time: str = "00:00") -> F:
        days = _numbers("day of month", day, 31, low=1)
        return self.daily_at(time)._splice(day_of_month=days, month="1-12/3")

    def yearly(self: F) -> F:
        """January 1st at 00:00."""
        return self._splice(minute=0, hour=0, day_of_month=1, month=1)

    def yearly_on(self: F, month: int = 1, day: int = 1, time: str = "00:00") -> F:
        return self.daily_at(time)._splice(day_of_month=_numbers("day of month", day, 31, low=1),
                                           month=_numbers("month", month, 12, low=1))


_FIELDS = {"minute": MINUTE, "hour": HOUR, "day_of_month": DAY_OF_MONTH, "month": MONTH,
           "day_of_week": DAY_OF_WEEK}


def hh_mm(text: str) -> tuple[int, int]:
    """``"07:30"`` as (7, 30); ``"7"`` as (7, 0); ConfigurationError for anything else."""
    try:
        parts = [int(part) for part in str(text).split(":")]
    except ValueError:
        parts = []
    if len(parts) not in (1, 2):
        raise ConfigurationError(f"expected a time like '02:00', not {text!r}")
    hour, minute = parts[0], parts[1] if len(parts) == 2 else 0
    return _in_range("hour", hour, 23), _in_range("minute", minute, 59)


def _numbers(what: str, value: Numbers, high: int, low: int = 0) -> str:
    """One cron field from a number or several (``[0, 30]`` -> ``"0,30"``), each in range."""
    if isinstance(value, str):
        return value  # a field as written ("0-22/2"); cron.check judges it
    items = [value] if isinstance(value, int) else list(value)
    if not items:
        raise ConfigurationError(f"expected at least one {what}")
    return ",".join(str(_in_range(what, item, high, low)) for item in items)


def _day(day: object) -> str:
    if isinstance(day, str):
        return day
    if isinstance(day, bool) or not isinstance(day, int):
        raise ConfigurationError(f"a day of the week is 0 (Sunday) .. 6 (Saturday), not {day!r}")
    return str(_in_range("day of the week", day, 6))


def _in_range(what: str, value: object, high: int, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigurationError(f"{what} must be from {low} to {high}, not {value!r}")
    return value
