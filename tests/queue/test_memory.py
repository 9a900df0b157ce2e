"""The memory driver beyond the shared contract: one store per connection in one process, the
worker in this process (its loop, a thread of its own, ``eventbus work`` run in-process), and
the refusal of worker processes that could never see the jobs."""

from __future__ import annotations

import threading
import time

from click.testing import CliRunner

import eventbus
from eventbus import Worker, WorkerOptions, runtime
from eventbus.batching.repository import MemoryBatchRepository
from eventbus.batching.stores import repository
from eventbus.cli import main
from eventbus.failed import MemoryFailedJobStore
from eventbus.queue.memory import MemoryQueue
from eventbus.state import MemoryStateStore

ran: list[str] = []


class Note(eventbus.Job):
    def __init__(self, text: str, fail: bool = False) -> None:
        self.text = text
        self.fail = fail

    def handle(self) -> None:
        if self.fail:
            raise RuntimeError(f"cannot note {self.text}")
        ran.append(self.text)


def use_memory(**options: object) -> MemoryQueue:
    ran.clear()
    eventbus.configure(default="mem", connections={"mem": {"driver": "memory", **options}})
    queue = eventbus.connection()
    assert isinstance(queue, MemoryQueue)
    return queue


def test_queue_objects_of_one_connection_share_its_jobs_until_it_is_closed() -> None:
    queue = use_memory()
    Note("a").dispatch()
    other = MemoryQueue("mem", queue.config)
    assert other.size() == 1 and MemoryQueue("elsewhere", queue.config).size() == 0
    eventbus.configure(default="mem", connections={"mem": {"driver": "memory"}})  # closes it
    assert eventbus.connection().size() == 0 and eventbus.connection() is not queue
    assert other.size() == 1, "an object still holding the old store keeps it"


def test_state_failed_jobs_and_batches_stay_in_memory_too() -> None:
    use_memory()
    assert isinstance(runtime.state(), MemoryStateStore)
    assert isinstance(runtime.failed_store(), MemoryFailedJobStore)
    assert isinstance(repository(), MemoryBatchRepository)


def test_a_worker_in_this_process_drains_the_connection() -> None:
    queue = use_memory()
    for text in ("one", "two"):
        Note(text).dispatch()
    Note("three", fail=True).dispatch()
    options = WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0, timeout_s=10)
    assert Worker.for_connection(options=options).run() == 0
    assert ran == ["one", "two"] and queue.size() == 0
    [record] = runtime.failed_store().all()
    assert record.summary == "RuntimeError: cannot note three" and record.connection == "mem"


def test_an_idle_worker_thread_wakes_when_a_job_is_pushed() -> None:
    use_memory()
    options = WorkerOptions(sleep_s=30, max_jobs=1, memory_mb=0, timeout_s=10)
    worker = threading.Thread(target=Worker.for_connection(options=options).run)
    worker.start()
    time.sleep(0.2)  # the worker found nothing and waits (up to --sleep 30)
    pushed = time.monotonic()
    Note("woken").dispatch()
    worker.join(10)
    assert not worker.is_alive() and ran == ["woken"]
    assert time.monotonic() - pushed < 5, "the push woke the waiting worker"


def test_a_delayed_job_wakes_an_idle_worker_when_it_is_due() -> None:
    use_memory()
    Note("due").dispatch(delay=0.3)
    options = WorkerOptions(sleep_s=30, max_jobs=1, memory_mb=0, timeout_s=10)
    started = time.monotonic()
    assert Worker.for_connection(options=options).run() == 0
    assert ran == ["due"] and 0.3 <= time.monotonic() - started < 5


def test_eventbus_work_run_in_this_process_drains_it() -> None:
    use_memory()
    Note("by the cli").dispatch()
    result = CliRunner().invoke(main, ["work", "--stop-when-empty", "--sleep", "0", "--quiet",
                                       "--memory", "0"])
    assert result.exit_code == 0, result.output
    assert ran == ["by the cli"]


def test_worker_processes_are_refused_they_could_not_see_the_jobs() -> None:
    use_memory()
    result = CliRunner().invoke(main, ["work", "--processes", "2", "--stop-when-empty"])
    assert result.exit_code == 2
    assert "connection 'mem' keeps its jobs in this process's memory" in result.output
