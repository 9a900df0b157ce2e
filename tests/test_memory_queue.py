"""``eventbus.testing.memory_queue``: queued work really runs, in this process, through the worker's
own path (``CallQueuedHandler``, retries, chain and batch steps), not the fake's record."""

from __future__ import annotations

import dataclasses
import os
import pathlib

import pytest

import eventbus
from eventbus import Event, emit, runtime
from eventbus.queue.memory import MemoryQueue
from eventbus.testing import memory_queue
from listeners import listener

ran: list[str] = []


@pytest.fixture(autouse=True)
def nothing_ran_yet() -> None:
    ran.clear()


@dataclasses.dataclass
class Shipped(Event):
    order_id: int


class Step(eventbus.Job):
    tries = 2

    def __init__(self, name: str, fail: bool = False) -> None:
        self.name = name
        self.fail = fail

    def handle(self) -> None:
        ran.append(f"{self.name}:{self.attempts}")
        if self.fail:
            raise RuntimeError(f"{self.name} failed")


class Done(eventbus.Job):
    def __init__(self, name: str) -> None:
        self.name = name

    def handle(self) -> None:
        batch = self.batch()
        ran.append(f"{self.name}:{batch.pending if batch else '-'}")


def test_a_queued_listener_is_pushed_then_run_by_drain() -> None:
    @listener(queued=True, tries=2)
    class RecordShipment:
        def handle(self, event: Shipped) -> None:
            ran.append(f"shipped {event.order_id} by {os.getpid()}")

    with memory_queue() as jobs:
        emit(Shipped(7))
        assert ran == [] and jobs.size() == 1  # queued, not run
        assert isinstance(jobs.queue, MemoryQueue)
        assert jobs.drain() == 1
    assert ran == [f"shipped 7 by {os.getpid()}"]


def test_a_chain_runs_step_by_step_and_stops_at_the_failure() -> None:
    with memory_queue() as jobs:
        eventbus.chain([Step("a"), Step("b", fail=True), Step("never")]).dispatch()
        assert jobs.size() == 1  # the next step is pushed only when the one before succeeds
        assert jobs.drain() == 3  # a, b, b again (tries = 2)
        [record] = jobs.failed()
        assert record.summary == "RuntimeError: b failed" and record.connection == "memory"
        assert jobs.size() == 0
    assert ran == ["a:1", "b:1", "b:2"]


def test_a_batch_counts_its_jobs_and_calls_then_once() -> None:
    with memory_queue() as jobs:
        batch = eventbus.batch([Step("x"), Step("y")]).then(Done("then")).dispatch()
        jobs.drain()
        final = batch.fresh()
        assert (final.total, final.pending, final.failed, final.finished) == (2, 0, 0, True)
    assert sorted(ran) == ["then:0", "x:1", "y:1"]


def test_delayed_jobs_wait_for_a_later_drain() -> None:
    with memory_queue() as jobs:
        Step("later").dispatch(delay=60)
        assert jobs.drain() == 0 and jobs.size() == 1
        assert jobs.queue.stats().delayed == 1
    assert ran == []


def test_the_block_starts_empty_and_the_configuration_comes_back(tmp_path: pathlib.Path) -> None:
    eventbus.configure(default="db", connections={"db": {"driver": "database",
                                                         "url": f"sqlite:///{tmp_path}/q.sqlite3"}})
    before = runtime.settings()
    with memory_queue() as jobs:
        Step("left behind").dispatch()
    with memory_queue() as jobs:
        assert jobs.size() == 0  # each block has a fresh connection
        assert runtime.settings().connections["db"] == before.connections["db"]  # others stay
        assert runtime.settings().default == "memory"
    assert runtime.settings() is before and eventbus.connection().connection_name == "db"


def test_never_configured_reads_the_environment_again_after_the_block(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with memory_queue():
        pass
    monkeypatch.setenv("EVENTBUS_CONNECTION", "null")
    assert runtime.settings().default == "null"
