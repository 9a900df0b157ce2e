"""Job middleware: order, skip, release, fail, async; on jobs, queued listeners and notifications."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import redis

import eventbus
from eventbus import Event, Skip, Worker, WorkerOptions
from eventbus.middleware import Middleware
from listeners import listener

SEEN: list[str] = []


@dataclasses.dataclass
class Tag:
    """A middleware that records when it runs, around the rest of the pipeline."""

    name: str

    def handle(self, job: Any, next: Any) -> Any:
        SEEN.append(f"{self.name}>")
        result = next(job)
        SEEN.append(f"<{self.name}")
        return result


class AsyncTag(Tag):
    async def handle(self, job: Any, next: Any) -> Any:  # type: ignore[override]
        SEEN.append(f"{self.name}>")
        return next(job)


class Tagged(eventbus.Job):
    def middleware(self) -> list[Middleware]:
        return [Tag("own-1"), AsyncTag("own-2")]

    async def handle(self) -> None:
        SEEN.append("handle")


class Then(eventbus.Job):
    def handle(self) -> None:
        SEEN.append("then")


@dataclasses.dataclass
class Releasing:
    def handle(self, job: Any, next: Any) -> Any:
        if job.attempts == 1:
            job.release(0)
            return None
        return next(job)


@dataclasses.dataclass
class Failing:
    def handle(self, job: Any, next: Any) -> Any:
        job.fail("stopped by middleware")


class ReleasedOnce(eventbus.Job):
    tries = 3

    def middleware(self) -> list[Any]:
        return [Releasing()]

    def handle(self) -> None:
        SEEN.append(f"attempt {self.attempts}")


class FailedByMiddleware(eventbus.Job):
    def middleware(self) -> list[Any]:
        return [Failing()]

    def handle(self) -> None:
        SEEN.append("must not run")

    def failed(self, exc: BaseException) -> None:
        SEEN.append(f"failed: {exc}")


class Skipped(eventbus.Job):
    def __init__(self, skip: bool) -> None:
        self.skip = skip

    def middleware(self) -> list[Any]:
        return [Skip.when(lambda job: job.skip), Skip.unless(True)]

    def handle(self) -> None:
        SEEN.append(f"ran {self.skip}")


@pytest.fixture(autouse=True)
def clear_seen() -> None:
    SEEN.clear()


def drain() -> int:
    return Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run()


def test_global_middleware_runs_outermost_then_the_jobs_own(use_redis: redis.Redis) -> None:
    eventbus.configure(connections={"redis": {"driver": "redis", "url": _url(use_redis)}},
                       default="redis", middleware=[Tag("global")])
    Tagged().dispatch()
    assert drain() == 0
    assert SEEN == ["global>", "own-1>", "own-2>", "handle", "<own-1", "<global"]


def test_a_skipping_middleware_counts_as_success_and_the_chain_goes_on(use_redis: redis.Redis) -> None:
    eventbus.chain([Skipped(True), Then()]).dispatch()
    Skipped(False).dispatch()
    assert drain() == 0
    assert sorted(SEEN) == ["ran False", "then"]
    assert eventbus.connection().size() == 0 and eventbus.failed_store().all() == []


def test_middleware_may_release_or_fail_the_job(use_redis: redis.Redis) -> None:
    ReleasedOnce().dispatch()
    FailedByMiddleware().dispatch()
    assert drain() == 0
    assert sorted(SEEN) == ["attempt 2", "failed: stopped by middleware"]  # released once, then ran
    [record] = eventbus.failed_store().all()
    assert "stopped by middleware" in record.summary


def test_queued_listeners_and_notifications_take_middleware(use_redis: redis.Redis) -> None:
    from notifications import Notifiable, Notification

    @dataclasses.dataclass
    class Paid(Event):
        n: int

    @listener(Paid, queued=True)
    class Receipt:
        def middleware(self, event: Paid) -> list[Any]:
            return [Skip.when(event.n < 0), Tag(f"listener-{event.n}")]

        def handle(self, event: Paid) -> None:
            SEEN.append(f"receipt {event.n}")

    @eventbus.serializable
    @dataclasses.dataclass
    class Customer(Notifiable):
        id: int

    class Thanks(Notification):
        queued = True

        def via(self, notifiable: Any) -> list[str]:
            return ["log"]

        def middleware(self, notifiable: Any, channel: str) -> list[Any]:
            return [Tag(f"{channel}-{notifiable.id}")]

    eventbus.emit(Paid(1))
    eventbus.emit(Paid(-1))
    Customer(7).notify(Thanks())
    assert drain() == 0
    assert SEEN == ["listener-1>", "receipt 1", "<listener-1", "log-7>", "<log-7"]


def _url(client: redis.Redis) -> str:
    kw = client.connection_pool.connection_kwargs
    return f"redis://{kw['host']}:{kw['port']}/{kw['db']}"


def test_middleware_must_have_a_handle_method() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="handle"):
        eventbus.configure(middleware=[object()])
