"""The worker's rules in-process on Redis: queue events, self.fail/self.delete, sync and null."""

from __future__ import annotations

import dataclasses

import pytest
import redis
from apps import jobs
from helpers import REDIS_URL, traces

import eventbus
from eventbus import (
    JobExceptionOccurred,
    JobFailed,
    JobProcessed,
    JobProcessing,
    JobQueued,
    JobReleasedAfterException,
    Looping,
    WorkerStopping,
)
from eventbus.worker import Worker, WorkerOptions

QUEUE_EVENTS = (JobQueued, JobProcessing, JobProcessed, JobExceptionOccurred, JobReleasedAfterException,
                JobFailed, Looping, WorkerStopping)


def drain(**options: object) -> int:
    return Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0, **options)).run()  # type: ignore[arg-type]


@pytest.fixture
def seen() -> list[str]:
    names: list[str] = []
    for cls in QUEUE_EVENTS:
        eventbus.listen(cls, lambda e: names.append(type(e).__name__))
    return names


def test_queue_events_go_through_the_bus_in_order(use_redis: redis.Redis, seen: list[str]) -> None:
    jobs.Record(1).dispatch()
    assert seen == ["JobQueued"]
    seen.clear()
    assert drain() == 0
    assert seen == ["Looping", "JobProcessing", "JobProcessed", "Looping", "WorkerStopping"]


def test_failure_events_in_order(use_redis: redis.Redis, seen: list[str]) -> None:
    failed: list[JobFailed] = []
    eventbus.listen(JobFailed, failed.append)
    jobs.ExplodingFailedHook().dispatch()
    seen.clear()
    assert drain(tries=2) == 0
    assert [s for s in seen if s != "Looping"] == [
        "JobProcessing", "JobExceptionOccurred", "JobReleasedAfterException",
        "JobProcessing", "JobFailed", "JobExceptionOccurred", "WorkerStopping"]  # Laravel's order
    assert str(failed[0].exception) == "first" and failed[0].job.attempts == 2


def test_self_fail_ends_retries_at_once(use_redis: redis.Redis) -> None:
    jobs.SelfFailing().dispatch()
    assert drain() == 0
    assert traces(use_redis, "attempt") == ["1"]
    assert traces(use_redis, "failed") == ["ManuallyFailedError:the upstream said no"]
    assert len(eventbus.runtime.failed_store().all()) == 1


def test_self_delete_is_not_undone_by_a_later_exception(use_redis: redis.Redis) -> None:
    jobs.SelfDeleting().dispatch()
    assert drain() == 0
    assert traces(use_redis, "attempt") == ["1"]
    assert eventbus.connection().size() == 0 and eventbus.runtime.failed_store().all() == []


def test_worker_restores_signal_handlers(use_redis: redis.Redis) -> None:
    import signal

    before = signal.getsignal(signal.SIGTERM)
    drain()
    assert signal.getsignal(signal.SIGTERM) is before


def test_null_connection_drops_everything() -> None:
    ran: list[int] = []

    class Never(eventbus.Job):
        def handle(self) -> None:
            ran.append(1)

    Never().dispatch(connection="null")
    q = eventbus.connection("null")
    assert ran == [] and q.size() == 0 and q.pop() is None


def test_sync_connection_runs_now_and_calls_failed_once() -> None:
    calls: list[str] = []

    @dataclasses.dataclass
    class Inline(eventbus.Job):
        fail_it: bool
        tries = 5

        def handle(self) -> None:
            calls.append(f"handle:{self.attempts}")
            if self.fail_it:
                raise ValueError("inline failure")

        def failed(self, exc: BaseException) -> None:
            calls.append(f"failed:{exc}")

    Inline(False).dispatch(connection="sync")
    assert calls == ["handle:1"]
    with pytest.raises(ValueError, match="inline failure"):
        eventbus.dispatch_sync(Inline(True))
    assert calls == ["handle:1", "handle:1", "failed:inline failure"]


def test_dispatch_with_aware_datetime_and_refuses_naive() -> None:
    import datetime as dt

    from eventbus.queue.base import delay_seconds

    soon = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30)
    assert 29 < delay_seconds(soon) <= 30
    assert delay_seconds(dt.timedelta(milliseconds=1500)) == 1.5
    with pytest.raises(ValueError, match="timezone-aware"):
        delay_seconds(dt.datetime.now())


@dataclasses.dataclass
class Account:
    id: int


ACCOUNTS: dict[int, Account] = {}
eventbus.register_model(Account, key=lambda a: a.id, load=lambda cls, key: ACCOUNTS.get(key))


class CloseAccount(eventbus.Job):
    tries = 3

    def __init__(self, account: Account) -> None:
        self.account = account

    def handle(self) -> None:
        pass


class CloseAccountQuietly(CloseAccount):
    delete_when_missing_models = True


def test_a_missing_model_fails_the_job_at_once(use_redis: redis.Redis) -> None:
    ACCOUNTS[1] = Account(1)
    uuid = CloseAccount(ACCOUNTS[1]).dispatch()
    del ACCOUNTS[1]
    assert drain() == 0
    [record] = eventbus.runtime.failed_store().all()
    assert record.uuid == uuid and "ModelNotFoundError" in record.summary
    assert eventbus.connection().size() == 0


def test_delete_when_missing_models(use_redis: redis.Redis) -> None:
    ACCOUNTS[2] = Account(2)
    CloseAccountQuietly(ACCOUNTS[2]).dispatch()
    del ACCOUNTS[2]
    assert drain() == 0
    assert eventbus.runtime.failed_store().all() == [] and eventbus.connection().size() == 0


class Secret(eventbus.Job):
    encrypted = True

    def __init__(self, card: str) -> None:
        self.card = card

    def handle(self) -> None:
        SECRETS.append(self.card)


SECRETS: list[str] = []


def test_encrypted_jobs_never_show_their_state(use_redis: redis.Redis) -> None:
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL}},
                       default="redis", key="k" * 32)
    Secret("4111 1111 1111 1111").dispatch()
    [raw] = eventbus.connection().peek()
    # neither the card nor two of its groups together; its digits alone can occur in the
    # timestamp or the ciphertext's base64
    assert "4111 1111" not in raw and "1111 1111" not in raw and "__encrypted__" in raw
    assert drain() == 0 and SECRETS == ["4111 1111 1111 1111"]


def test_encrypted_job_with_the_wrong_key_fails_with_a_reason(use_redis: redis.Redis) -> None:
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL}},
                       default="redis", key="right")
    Secret("x").dispatch()
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL}},
                       default="redis", key="wrong")
    assert drain() == 0
    [record] = eventbus.runtime.failed_store().all()
    assert "signature does not match" in record.summary or "cannot decrypt" in record.summary


def test_encrypted_jobs_need_a_key() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="encrypted jobs need a key"):
        Secret("x").dispatch(connection="null")
