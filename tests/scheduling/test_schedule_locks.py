"""Two schedulers racing for one instant of a locked entry (``on_one_server`` with
``without_overlapping``), on real Redis with a real worker: the one that loses the instant never
takes the winner's lock away while the winner's run goes on, and never leaves a lock behind
for a run that already ended."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

import eventbus
from eventbus import Worker, WorkerOptions
from eventbus.scheduling import Schedule, ScheduledEvent, Scheduler
from eventbus.scheduling.locks import held

pytestmark = pytest.mark.integration
INSTANT = dt.datetime(2026, 11, 23, 10, 1, tzinfo=dt.timezone.utc).timestamp()


class Nightly(eventbus.Job):
    def handle(self) -> None: ...


@pytest.fixture
def schedule(redis_client: object) -> Iterator[Schedule]:
    from helpers import REDIS_URL

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    yield Schedule()


def pair(schedule: Schedule) -> tuple[Scheduler, Scheduler]:
    clock = lambda: INSTANT + 5  # noqa: E731
    return Scheduler(schedule, host="a", clock=clock), Scheduler(schedule, host="b", clock=clock)


def lock_holder(scheduler: Scheduler, entry: ScheduledEvent) -> str | None:
    lock = scheduler.lock_of(entry)
    assert lock is not None
    found = held(lock)
    return None if found is None else found.holder


def test_the_loser_of_a_running_call_leaves_the_winners_lock(schedule: Schedule) -> None:
    a, b = pair(schedule)
    seen: dict[str, object] = {}

    def long_call() -> None:  # while a runs it, b fires the same instant
        seen["b"] = b.fire(entry, INSTANT).outcome
        seen["holder during"] = lock_holder(a, entry)

    entry = schedule.call(long_call).every_minute().on_one_server().without_overlapping(60).name("long")
    assert a.fire(entry, INSTANT).outcome == "ran"
    assert seen["b"] == "already-ran"
    assert seen["holder during"] is not None  # b did not release a's lock
    assert lock_holder(a, entry) is None  # a released it when its call returned


def test_the_loser_of_an_ended_job_leaves_no_lock_behind(schedule: Schedule) -> None:
    a, b = pair(schedule)
    entry = schedule.job(Nightly()).every_minute().on_one_server().without_overlapping(600).name("quick")
    assert a.fire(entry, INSTANT).outcome == "pushed"
    assert lock_holder(a, entry) is not None  # travels with the job
    Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run()
    assert lock_holder(a, entry) is None  # released by the job's end
    assert b.fire(entry, INSTANT).outcome == "already-pushed"  # b was slower than the whole run
    assert lock_holder(a, entry) is None  # and took nothing for it
    assert a.fire(entry, INSTANT + 60).outcome == "pushed"  # the next minute is not held up


def test_the_loser_of_a_pending_job_leaves_its_lock(schedule: Schedule) -> None:
    a, b = pair(schedule)
    entry = schedule.job(Nightly()).every_minute().on_one_server().without_overlapping(600).name("slow")
    assert a.fire(entry, INSTANT).outcome == "pushed"
    assert b.fire(entry, INSTANT).outcome == "already-pushed"
    assert lock_holder(a, entry) is not None  # still the pending job's
    assert b.fire(entry, INSTANT + 60).outcome == "overlapping"
    assert eventbus.connection().size() == 1
