"""Debounced jobs with real workers on Redis, SQLite and PostgreSQL: a job dispatched again
within its window replaces the one still waiting, so only the last of a burst runs."""

from __future__ import annotations

import time

import pytest

import eventbus
from eventbus.errors import ConfigurationError
from eventbus.testing import fake_queue
from helpers import wait_for
from toolbox_backend import Backend, backend  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration


def test_only_the_last_dispatch_of_a_burst_runs(backend: Backend) -> None:
    from apps.toolbox import SyncSearch

    backend.start_workers(2)
    for version in range(1, 6):
        SyncSearch(1, version).dispatch()
    SyncSearch(2, 1).dispatch()
    last_dispatch = time.time()
    wait_for(lambda: len(backend.lines("sync")) == 2 and eventbus.connection().size() == 0, timeout=60)
    runs = backend.lines("sync")
    assert sorted((int(f[0]), int(f[1])) for f in runs) == [(1, 5), (2, 1)]
    assert min(float(f[-1]) for f in runs) >= last_dispatch + 0.9  # each waited out its window
    SyncSearch(1, 6).dispatch()  # a new burst, after the window
    wait_for(lambda: len(backend.lines("sync")) == 3, timeout=60)
    assert eventbus.failed_store().all() == []


def test_a_debounced_job_cannot_be_unique_and_its_window_must_be_seconds() -> None:
    class Both(eventbus.Job):
        unique = True
        debounce_for = 5

    class Bad(eventbus.Job):
        debounce_for = -1

    with pytest.raises(ConfigurationError, match="cannot be both unique"):
        Both().dispatch()
    with pytest.raises(ConfigurationError, match="debounce_for must be seconds above 0"):
        Bad().dispatch()


def test_a_fake_queue_records_every_dispatch_of_a_debounced_job_delayed_by_its_window() -> None:
    class Touch(eventbus.Job):
        debounce_for = 30

    with fake_queue() as queue:
        Touch().dispatch()
        Touch().dispatch(delay=5)
    assert [job.destination.delay for job in queue.pushed] == [30.0, 5.0]
    assert eventbus.runtime.state().scan("debounce:") == {}  # the real store was not touched


class Touch(eventbus.Job):
    debounce_for = 0.2

    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        TOUCHED.append(self.n)


TOUCHED: list[int] = []


def test_a_superseded_job_is_deleted_unrun_and_announced(use_redis: object) -> None:
    TOUCHED.clear()
    debounced: list[eventbus.JobDebounced] = []
    eventbus.listen(eventbus.JobDebounced, debounced.append)
    first, second = Touch(1).dispatch(), Touch(2).dispatch()
    time.sleep(0.3)
    worker = eventbus.Worker.for_connection(
        options=eventbus.WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0))
    assert worker.run() == 0
    assert TOUCHED == [2]
    assert [event.job.uuid for event in debounced] == [first] and second != first
    assert eventbus.connection().size() == 0


def test_a_dispatch_whose_push_fails_lets_the_copy_it_superseded_run(use_redis: object) -> None:
    TOUCHED.clear()
    first = Touch(1).dispatch()
    late = Touch(2)
    late.timeout = 1000  # type: ignore[attr-defined]  # beyond retry_after: the push is refused
    with pytest.raises(ConfigurationError, match="retry_after"):
        late.dispatch()
    time.sleep(0.3)
    worker = eventbus.Worker.for_connection(
        options=eventbus.WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0))
    assert worker.run() == 0
    assert TOUCHED == [1] and first is not None
