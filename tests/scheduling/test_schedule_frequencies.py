"""The frequency helpers as Laravel's FrequencyTest states them (the expression each one makes,
and that they compose), the instants they fire at, and the clear errors of bad arguments."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest

import eventbus
from eventbus.scheduling import Schedule, ScheduledJob
from eventbus.scheduling.cron import instants

UTC = dt.timezone.utc


class Nightly(eventbus.Job):
    def handle(self) -> None: ...


def entry() -> ScheduledJob:
    return Schedule().job(Nightly())


EXPRESSIONS: list[tuple[Callable[[ScheduledJob], ScheduledJob], str]] = [
    (lambda e: e, "* * * * *"),
    (lambda e: e.every_minute(), "* * * * *"),
    (lambda e: e.every_two_minutes(), "*/2 * * * *"),
    (lambda e: e.every_three_minutes(), "*/3 * * * *"),
    (lambda e: e.every_four_minutes(), "*/4 * * * *"),
    (lambda e: e.every_five_minutes(), "*/5 * * * *"),
    (lambda e: e.every_ten_minutes(), "*/10 * * * *"),
    (lambda e: e.every_fifteen_minutes(), "*/15 * * * *"),
    (lambda e: e.every_thirty_minutes(), "*/30 * * * *"),
    (lambda e: e.hourly(), "0 * * * *"),
    (lambda e: e.hourly_at(17), "17 * * * *"),
    (lambda e: e.hourly_at([0, 30]), "0,30 * * * *"),
    (lambda e: e.every_odd_hour(), "0 1-23/2 * * *"),
    (lambda e: e.every_even_hour(5), "5 0-22/2 * * *"),
    (lambda e: e.every_two_hours(), "0 */2 * * *"),
    (lambda e: e.every_two_hours(15), "15 */2 * * *"),
    (lambda e: e.every_three_hours(), "0 */3 * * *"),
    (lambda e: e.every_four_hours(), "0 */4 * * *"),
    (lambda e: e.every_six_hours(), "0 */6 * * *"),
    (lambda e: e.daily(), "0 0 * * *"),
    (lambda e: e.daily_at("10:30"), "30 10 * * *"),
    (lambda e: e.at("3"), "0 3 * * *"),
    (lambda e: e.twice_daily(), "0 1,13 * * *"),
    (lambda e: e.twice_daily(3, 15), "0 3,15 * * *"),
    (lambda e: e.twice_daily_at(3, 15, 5), "5 3,15 * * *"),
    (lambda e: e.weekdays(), "* * * * 1-5"),
    (lambda e: e.weekends(), "* * * * 6,0"),
    (lambda e: e.mondays(), "* * * * 1"),
    (lambda e: e.tuesdays(), "* * * * 2"),
    (lambda e: e.wednesdays(), "* * * * 3"),
    (lambda e: e.thursdays(), "* * * * 4"),
    (lambda e: e.fridays(), "* * * * 5"),
    (lambda e: e.saturdays(), "* * * * 6"),
    (lambda e: e.sundays(), "* * * * 0"),
    (lambda e: e.days(Schedule.MONDAY, Schedule.WEDNESDAY), "* * * * 1,3"),
    (lambda e: e.days([1, 3, 5]), "* * * * 1,3,5"),
    (lambda e: e.weekly(), "0 0 * * 0"),
    (lambda e: e.weekly_on(Schedule.FRIDAY, "8:00"), "0 8 * * 5"),
    (lambda e: e.weekly_on([1, 4], "8:00"), "0 8 * * 1,4"),
    (lambda e: e.monthly(), "0 0 1 * *"),
    (lambda e: e.monthly_on(4, "15:00"), "0 15 4 * *"),
    (lambda e: e.twice_monthly(1, 16, "13:00"), "0 13 1,16 * *"),
    (lambda e: e.last_day_of_month("15:00"), "0 15 L * *"),
    (lambda e: e.quarterly(), "0 0 1 1-12/3 *"),
    (lambda e: e.quarterly_on(4, "14:00"), "0 14 4 1-12/3 *"),
    (lambda e: e.yearly(), "0 0 1 1 *"),
    (lambda e: e.yearly_on(6, 15, "17:00"), "0 17 15 6 *"),
    # they compose, field by field, as Laravel's spliceIntoPosition
    (lambda e: e.daily().weekdays(), "0 0 * * 1-5"),
    (lambda e: e.hourly().weekends(), "0 * * * 6,0"),
    (lambda e: e.daily_at("07:30").mondays(), "30 7 * * 1"),
    (lambda e: e.every_fifteen_minutes().between("09:00", "17:00").fridays(), "*/15 * * * 5"),
]


@pytest.mark.parametrize(("build", "expression"), EXPRESSIONS)
def test_each_helper_makes_laravels_expression(build: Callable[[ScheduledJob], ScheduledJob],
                                               expression: str) -> None:
    made = build(entry())
    assert made.expression == expression
    assert made.repeat_s is None


@pytest.mark.parametrize(("helper", "seconds"), [
    ("every_second", 1), ("every_two_seconds", 2), ("every_five_seconds", 5), ("every_ten_seconds", 10),
    ("every_fifteen_seconds", 15), ("every_twenty_seconds", 20), ("every_thirty_seconds", 30)])
def test_sub_minute_helpers_repeat_within_each_minute(helper: str, seconds: int) -> None:
    made = getattr(entry(), helper)()
    assert (made.expression, made.repeat_s) == ("* * * * *", seconds)
    start = dt.datetime(2026, 11, 23, 10, 0, tzinfo=UTC).timestamp()
    fired = list(instants(made.expression, UTC, start - 1, start + 119, made.repeat_s))
    assert fired == [start + n * seconds for n in range(120 // seconds)]


def at(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def dates(made: ScheduledJob, start: str, end: str) -> list[str]:
    return [dt.datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")
            for t in instants(made.expression, UTC, at(start), at(end), made.repeat_s)]


def test_the_last_day_of_each_month_leap_years_included() -> None:
    made = entry().last_day_of_month("15:00")
    assert dates(made, "2027-12-31T16:00", "2028-05-01T00:00") == [
        "2028-01-31 15:00", "2028-02-29 15:00", "2028-03-31 15:00", "2028-04-30 15:00"]


def test_quarterly_and_twice_monthly_over_a_year() -> None:
    assert [d[:10] for d in dates(entry().quarterly(), "2026-01-01T00:00", "2026-12-31T23:59")] == [
        "2026-04-01", "2026-07-01", "2026-10-01"]  # the instant at the range's start is not after it
    assert len(dates(entry().twice_monthly(1, 16, "13:00"), "2026-01-01T00:00", "2026-12-31T23:59")) == 24


def test_between_and_unless_between_windows_at_an_instant() -> None:
    day = entry().every_minute().between("09:00", "17:00")
    night = entry().every_minute().between("22:00", "06:00")
    away = entry().every_minute().unless_between("09:00", "17:00")
    for hh_mm, inside_day, inside_night in (("08:59", False, False), ("09:00", True, False),
                                            ("17:00", True, False), ("17:01", False, False),
                                            ("23:30", False, True), ("05:59", False, True)):
        instant = at(f"2026-11-23T{hh_mm}")
        assert day.inside_windows(instant) is inside_day, hh_mm
        assert night.inside_windows(instant) is inside_night, hh_mm
        assert away.inside_windows(instant) is not inside_day, hh_mm
    berlin = entry().every_minute().between("09:00", "10:00").timezone("Europe/Berlin")
    assert berlin.inside_windows(at("2026-11-23T08:30"))  # 09:30 in Berlin


@pytest.mark.parametrize(("build", "message"), [
    (lambda e: e.every_minutes(7), "the minutes must divide 60"),
    (lambda e: e.hourly_at(60), "minute must be from 0 to 59, not 60"),
    (lambda e: e.daily_at("25:00"), "hour must be from 0 to 23, not 25"),
    (lambda e: e.daily_at("2am"), "expected a time like '02:00'"),
    (lambda e: e.days(7), "day of the week must be from 0 to 6, not 7"),
    (lambda e: e.days(), "at least one day"),
    (lambda e: e.monthly_on(32), "day of month must be from 1 to 31, not 32"),
    (lambda e: e.yearly_on(13, 1), "month must be from 1 to 12, not 13"),
    (lambda e: e.yearly_on(2, 30), "never fires"),
    (lambda e: e._repeat_every(7), "the seconds must divide 60"),
    (lambda e: e.between("9am", "17:00"), "expected a time like '02:00'"),
    (lambda e: e.environments(), "one or more names"),
    (lambda e: e.without_overlapping(0), "seconds above 0"),
    (lambda e: e.before("not callable"), "must be callable"),
    (lambda e: e.name(""), "1 to 120 characters"),
    (lambda e: e.cron("0 0 30 2 *"), "never fires"),
])
def test_bad_arguments_are_one_clear_error(build: Callable[[ScheduledJob], ScheduledJob], message: str) -> None:
    with pytest.raises(eventbus.ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(entry())


def test_without_overlapping_lasts_minutes_by_default() -> None:
    assert entry().without_overlapping().overlap_expires_s == 600
    assert entry().without_overlapping(dt.timedelta(minutes=30)).overlap_expires_s == 1800
