"""The scheduler: cron times and daylight saving, the cursor across restarts (the first tick fires
the minute it starts in, nothing older), one push per instant
however many schedulers run, catch-up policies, without_overlapping; and `schedule work`
restarted across minute boundaries in real processes, its jobs run by a real worker."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from helpers import wait_for
from test_toolbox import Backend
from test_toolbox import backend as backend  # noqa: F401 - the parametrized fixture

import eventbus
from eventbus import Schedule
from eventbus.scheduling import Scheduler
from eventbus.scheduling.cron import instants, zone
from eventbus.testing import fake_queue

UTC = dt.timezone.utc


def at(text: str, tz: dt.tzinfo = UTC) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=tz).timestamp()


class Clock:
    def __init__(self, text: str) -> None:
        self.now = at(text)

    def __call__(self) -> float:
        return self.now

    def set(self, text: str) -> None:
        self.now = at(text)


class Nightly(eventbus.Job):
    def handle(self) -> None: ...


def test_cron_follows_cron_across_daylight_saving() -> None:
    ny = zone("America/New_York")

    def fired(expr: str, start: str, end: str) -> list[str]:
        return [dt.datetime.fromtimestamp(t, ny).strftime("%m-%d %H:%M%z")
                for t in instants(expr, ny, at(start, ny), at(end, ny))]

    assert fired("30 2 * * *", "2026-03-07T00:00", "2026-03-09T00:00") == \
        ["03-07 02:30-0500", "03-08 03:00-0400"]  # the skipped hour: right after the jump
    assert fired("30 1 * * *", "2026-10-31T00:00", "2026-11-02T00:00") == \
        ["10-31 01:30-0400", "11-01 01:30-0400"]  # the repeated hour: once
    assert len(fired("*/30 * * * *", "2026-11-01T00:50", "2026-11-01T02:10")) == 5  # both folds


def test_bad_definitions_are_clear_errors() -> None:
    s = Schedule()
    with pytest.raises(eventbus.ConfigurationError, match="bad cron expression"):
        s.job(Nightly()).cron("every day")
    with pytest.raises(eventbus.ConfigurationError, match="unknown timezone"):
        s.job(Nightly()).timezone("Mars/Olympus")
    with pytest.raises(eventbus.ConfigurationError, match="time like"):
        s.job(Nightly()).daily_at("2am")


@pytest.fixture
def redis_schedule(redis_client: object) -> Iterator[Schedule]:
    from helpers import REDIS_URL

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    yield Schedule()


def test_the_cursor_fires_missed_minutes_once_and_never_twice(redis_schedule: Schedule) -> None:
    redis_schedule.job(Nightly()).every_minute().name("minutely")
    clock = Clock("2026-11-23T10:00:30")
    with fake_queue() as queue:
        first = Scheduler(redis_schedule, host="a", clock=clock).tick()  # first sight: this minute only
        assert [(f.outcome, f.instant) for f in first] == [("pushed", at("2026-11-23T10:00:00"))]
        clock.set("2026-11-23T10:01:05")
        assert [f.outcome for f in Scheduler(redis_schedule, host="a", clock=clock).tick()] == ["pushed"]
        clock.set("2026-11-23T10:01:50")  # a restart within the minute
        assert Scheduler(redis_schedule, host="a", clock=clock).tick() == []
        clock.set("2026-11-23T10:04:10")  # down across two boundaries
        fired = Scheduler(redis_schedule, host="a", clock=clock).tick()
        assert [dt.datetime.fromtimestamp(f.instant, UTC).strftime("%H:%M") for f in fired] == \
            ["10:02", "10:03", "10:04"]
    assert len(queue.pushed) == 5 and len({p.payload.uuid for p in queue.pushed}) == 5


def test_catch_up_policies(redis_schedule: Schedule) -> None:
    latest = redis_schedule.job(Nightly()).every_minute().name("latest").catch_up("latest")
    none = redis_schedule.job(Nightly()).every_minute().name("none").catch_up("none")
    clock = Clock("2026-11-23T10:00:30")
    Scheduler(redis_schedule, host="a", clock=clock).tick()
    clock.set("2026-11-23T10:05:20")
    fired = Scheduler(redis_schedule, host="a", clock=clock).tick()
    assert [(f.entry, dt.datetime.fromtimestamp(f.instant, UTC).minute) for f in fired] == \
        [(latest.description, 5), (none.description, 5)]


def test_one_push_per_instant_however_many_schedulers(redis_schedule: Schedule) -> None:
    redis_schedule.job(Nightly()).every_minute().name("shared").on_one_server()
    redis_schedule.job(Nightly()).every_minute().name("per-host")
    clock = Clock("2026-11-23T10:00:30")
    for host in ("a", "b"):
        Scheduler(redis_schedule, host=host, clock=clock).tick()
    clock.set("2026-11-23T10:01:05")
    outcomes = [(f.entry, f.outcome) for host in ("a", "b")
                for f in Scheduler(redis_schedule, host=host, clock=clock).tick()]
    assert sorted(outcomes) == [("per-host", "pushed"), ("per-host", "pushed"), ("shared", "pushed")]
    assert eventbus.connection().size() == 6  # and as many at 10:00, the minute they started in


def test_two_schedulers_racing_for_one_instant_push_it_once(redis_schedule: Schedule) -> None:
    """Both read the cursor before either moved it: the marker decides."""
    entry = redis_schedule.job(Nightly()).every_minute().name("raced").on_one_server()
    clock = Clock("2026-11-23T10:01:05")
    a, b = Scheduler(redis_schedule, host="a", clock=clock), Scheduler(redis_schedule, host="b", clock=clock)
    instant = at("2026-11-23T10:01:00")
    assert sorted([a.fire(entry, instant).outcome, b.fire(entry, instant).outcome]) == \
        ["already-pushed", "pushed"]
    assert eventbus.connection().size() == 1


def test_without_overlapping_waits_for_the_previous_run(redis_schedule: Schedule) -> None:
    from eventbus import Worker, WorkerOptions
    redis_schedule.job(Nightly()).every_minute().name("slow").without_overlapping(expires_after=600)
    clock = Clock("2026-11-23T10:01:05")
    scheduler = Scheduler(redis_schedule, host="a", clock=clock)
    assert [f.outcome for f in scheduler.tick()] == ["pushed"]
    clock.set("2026-11-23T10:02:05")
    assert [f.outcome for f in scheduler.tick()] == ["overlapping"]  # 10:01's job has not run yet
    Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run()
    clock.set("2026-11-23T10:03:05")
    assert [f.outcome for f in scheduler.tick()] == ["pushed"]


def test_schedule_work_restarted_across_minute_boundaries(backend: Backend) -> None:
    """Real scheduler processes, stopped and started again; a real worker runs what they pushed."""
    import apps.scheduled  # noqa: F401  # its schedule

    def scheduler(now: str) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-m", "eventbus", "schedule", "work", "--app",
                                 "apps.scheduled", "--now", now], env=backend.env,
                                start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)

    def stop(proc: subprocess.Popen[str]) -> str:
        os.killpg(proc.pid, signal.SIGTERM)
        return proc.communicate(timeout=30)[1]

    first = scheduler("2026-11-23T10:00:58")  # fires 10:00 (due that minute), then crosses into 10:01
    wait_for(lambda: eventbus.connection().size() == 2, timeout=30)
    stop(first)
    again = scheduler("2026-11-23T10:01:30")  # restarted in the same minute: nothing new
    time.sleep(2)
    stop(again)
    assert eventbus.connection().size() == 2
    late = scheduler("2026-11-23T10:03:58")  # down over 10:02 and 10:03: both fire, then 10:04
    wait_for(lambda: eventbus.connection().size() == 5, timeout=30)
    err = stop(late)
    assert "Traceback" not in err
    backend.start_workers(1, "--stop-when-empty")
    backend.workers[-1].wait(timeout=60)
    ticks = backend.lines("tick")
    assert len(ticks) == 5 and len({t[0] for t in ticks}) == 5  # five instants, each once
