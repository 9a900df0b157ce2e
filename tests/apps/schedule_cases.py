"""Schedules for the scheduler tests, one per ``SCHEDULE_CASE``, on the connection under test
(TOOLBOX_DRIVER/TOOLBOX_URL, as apps.toolbox configures it). Every job, call and hook records
what it did in the TOOLBOX_LOG file, so the test reads what ran where."""

from __future__ import annotations

import os
from collections.abc import Callable

import eventbus
from apps.toolbox import Reindex, record


class Tick(eventbus.Job):
    def __init__(self, name: str) -> None:
        self.name = name

    def handle(self) -> None:
        record("tick", self.name, self.job_uuid)


class TooLong(eventbus.Job):
    """Its timeout is above the test connection's retry_after: every push of it is refused."""

    timeout = 60

    def handle(self) -> None:
        record("tick", "too-long", self.job_uuid)


def hooks(entry: eventbus.scheduling.ScheduledEvent, name: str) -> None:
    def hook(moment: str) -> Callable[[], None]:
        return lambda: record("hook", name, moment)

    entry.before(hook("before")).after(hook("after")).on_success(hook("success")).on_failure(hook("failure"))


def ping() -> None:
    record("call", "ping")


def broken() -> None:
    record("call", "broken")
    raise RuntimeError("the call failed")


CASE = os.environ.get("SCHEDULE_CASE", "")
s = eventbus.schedule
s.clear()

if CASE == "unique":
    s.job(Reindex(7)).every_minute().name("reindex")
elif CASE == "fresh":
    s.job(Tick("every-minute")).every_minute()
    s.job(Tick("at-ten")).daily_at("10:00")
    s.job(Tick("at-eleven")).daily_at("11:00")
elif CASE == "identical":
    for _ in range(4):
        s.job(Tick("same")).every_minute()
elif CASE == "calendar":
    for name, entry in {
        "weekdays": s.job(Tick("weekdays")).daily_at("10:00").weekdays(),
        "weekends": s.job(Tick("weekends")).daily_at("10:00").weekends(),
        "mondays": s.job(Tick("mondays")).daily_at("10:00").mondays(),
        "days": s.job(Tick("days")).daily_at("10:00").days(s.TUESDAY, s.SATURDAY),
        "twice-daily": s.job(Tick("twice-daily")).twice_daily(10, 22),
        "weekly": s.job(Tick("weekly")).weekly(),
        "weekly-on": s.job(Tick("weekly-on")).weekly_on(s.FRIDAY, "10:00"),
        "monthly-on": s.job(Tick("monthly-on")).monthly_on(27, "10:00"),
        "twice-monthly": s.job(Tick("twice-monthly")).twice_monthly(1, 28, "10:00"),
        "last-day": s.job(Tick("last-day")).last_day_of_month("10:00"),
        "quarterly": s.job(Tick("quarterly")).quarterly(),
        "yearly": s.job(Tick("yearly")).yearly(),
        "every-two-hours": s.job(Tick("every-two-hours")).every_two_hours(),
        "every-fifteen-minutes": s.job(Tick("every-fifteen-minutes")).every_fifteen_minutes(),
    }.items():
        entry.name(name).catch_up("none")
elif CASE == "window":
    s.job(Tick("inside")).every_minute().between("09:00", "17:00").catch_up("none").name("inside")
    s.job(Tick("outside")).every_minute().unless_between("09:00", "17:00").catch_up("none").name("outside")
    s.job(Tick("overnight")).every_minute().between("22:00", "06:00").catch_up("none").name("overnight")
elif CASE == "subminute":
    s.job(Tick("ten")).every_ten_seconds().name("ten")
elif CASE == "call":
    hooks(s.call(ping).every_minute().name("ping"), "ping")
    hooks(s.call(broken).every_minute().name("broken"), "broken")
elif CASE == "hooks":
    hooks(s.job(Tick("hooked")).every_minute().name("hooked"), "hooked")
    hooks(s.job(TooLong()).every_minute().name("refused"), "refused")
elif CASE == "env":
    s.job(Tick("staging-only")).every_minute().environments("staging", "qa").name("staging-only")
    s.job(Tick("anywhere")).every_minute().name("anywhere")
elif CASE == "maintenance":
    s.job(Tick("normal")).every_minute().name("normal")
    s.job(Tick("always")).every_minute().even_in_maintenance_mode().name("always")
    s.call(ping).every_minute()
elif CASE == "named":
    hooks(s.job(Tick("nightly")).daily_at("02:00").name("nightly"), "nightly")
    s.call(ping).weekly().name("ping")
    s.job(Tick("twin-1")).hourly().name("twin")
    s.job(Tick("twin-2")).hourly().name("twin")
    s.job(Reindex(8)).daily().name("reindex").without_overlapping()
elif CASE == "listing":
    s.job(Tick("yearly")).yearly().name("yearly")
    s.job(Tick("soon")).every_minute().name("soon").without_overlapping(300)
    s.job(Tick("hourly")).hourly().name("hourly").environments("production")
