"""A driver from outside the package: one class, one ``register_driver`` line (or an entry point).

The ``dict`` driver below is complete on purpose: it keeps reservations with tokens the way
the contract requires, so the same worker runs it with the same rules as Redis or SQL.
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib
import sys
import textwrap
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

import eventbus
from eventbus import ConfigurationError, Worker, WorkerOptions
from eventbus.ext import Queue, QueueJob
from eventbus.failed import MemoryFailedJobStore
from eventbus.payload import attempts_of
from eventbus.queue import drivers
from eventbus.queue.base import id_for


@dataclasses.dataclass
class _Stored:
    raw: str
    attempts: int
    token: str | None = None


class DictQueue(Queue):
    """Jobs in this process's memory; a popped job is reserved until deleted or released."""

    driver = "dict"
    defaults = {"queue": "default", "retry_after": 90.0, "greeting": "hello"}
    holds_reservations = True
    has_workers = True

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        self.ready: dict[str, collections.deque[str]] = collections.defaultdict(collections.deque)
        self.jobs: dict[str, _Stored] = {}
        self.exceptions: collections.Counter[str] = collections.Counter()

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        job_id = id_for(payload)
        if job_id not in self.jobs:
            self.jobs[job_id] = _Stored(payload, attempts_of(payload))
            self.ready[self.queue_name(queue)].append(job_id)
        return job_id

    def pop(self, queue: str | None = None) -> QueueJob | None:
        name = self.queue_name(queue)
        if not self.ready[name]:
            return None
        job_id = self.ready[name].popleft()
        stored = self.jobs[job_id]
        stored.attempts += 1
        stored.token = uuid.uuid4().hex
        return QueueJob(queue=self, queue_name=name, job_id=job_id, raw=stored.raw,
                        attempts=stored.attempts, token=stored.token)

    def delete_reserved(self, job: QueueJob) -> bool:
        stored = self.jobs.get(job.job_id)
        if stored is None or stored.token != job.token:
            return False
        del self.jobs[job.job_id]
        return True

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        stored = self.jobs.get(job.job_id)
        if stored is None or stored.token != job.token:
            return False
        stored.token = None
        self.ready[job.queue_name].append(job.job_id)
        return True

    def size(self, queue: str | None = None) -> int:
        return sum(1 for _ in self.ready[self.queue_name(queue)])

    def clear(self, queue: str | None = None) -> int:
        ids = self.ready.pop(self.queue_name(queue), collections.deque())
        for job_id in ids:
            self.jobs.pop(job_id, None)
        return len(ids)

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        return [self.jobs[i].raw for i in list(self.ready[self.queue_name(queue)])[:limit]]

    def record_exception(self, uuid: str) -> int:
        self.exceptions[uuid] += 1
        return self.exceptions[uuid]


class Greet(eventbus.Job):
    tries = 2
    ran: list[str] = []

    def __init__(self, name: str) -> None:
        self.name = name

    def handle(self) -> None:
        if self.name == "fail":
            raise RuntimeError("no greeting for you")
        Greet.ran.append(f"{self.name}:{self.attempts}")


@pytest.fixture
def dict_driver() -> Iterator[None]:
    drivers.register_driver("dict", DictQueue)
    yield
    drivers._drivers.pop("dict", None)


def drain(queue: Queue, failed: MemoryFailedJobStore) -> int:
    options = WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0, timeout_s=10)
    return Worker(queue, failed=failed, options=options).run()


def test_a_registered_driver_runs_jobs_with_the_same_worker_rules(dict_driver: None) -> None:
    eventbus.configure(default="mem", connections={"mem": {"driver": "dict"}})
    Greet.ran.clear()
    Greet("ada").dispatch()
    Greet("fail").dispatch()
    queue, failed = eventbus.connection(), MemoryFailedJobStore()
    assert isinstance(queue, DictQueue) and queue.config["greeting"] == "hello"  # its defaults
    assert drain(queue, failed) == 0
    assert Greet.ran == ["ada:1"]
    [record] = failed.all()  # tries=2: released once, then failed and recorded
    assert record.connection == "mem" and "no greeting for you" in record.exception
    assert queue.jobs == {}


def test_a_registered_driver_validates_its_own_options(dict_driver: None) -> None:
    with pytest.raises(ConfigurationError, match="connection 'mem' has unknown option 'greting' "
                                                  r"\(did you mean 'greeting'\?\)"):
        eventbus.configure(connections={"mem": {"driver": "dict", "greting": "hi"}})


def test_worker_timeout_rule_comes_from_the_class(dict_driver: None) -> None:
    eventbus.configure(default="mem", connections={"mem": {"driver": "dict", "retry_after": 5}})
    with pytest.raises(ConfigurationError, match="below the retry_after"):
        Worker.for_connection(options=WorkerOptions(timeout_s=10))


def test_a_driver_is_found_through_the_entry_point_group(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package that declares ``[eventbus.drivers]`` needs no code in the app at all."""
    (tmp_path / "ep_driver.py").write_text(textwrap.dedent("""
        from eventbus.queue.null import NullQueue

        class EntryPointQueue(NullQueue):
            driver = "ep"
    """))
    dist = tmp_path / "ep_driver-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: ep-driver\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[eventbus.drivers]\nep = ep_driver:EntryPointQueue\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(drivers, "_entry_points_loaded", False)
    monkeypatch.setattr(drivers, "_drivers", dict(drivers._drivers))
    eventbus.configure(connections={"x": {"driver": "ep"}})
    assert type(eventbus.connection("x")).__name__ == "EntryPointQueue"
    assert "ep" in drivers.driver_names()
    sys.modules.pop("ep_driver", None)


def test_a_driver_declares_a_capability_by_its_protocol_or_by_the_old_flag() -> None:
    """``DictQueue`` says ``has_workers = True`` as drivers did before the capability protocols:
    it is believed. Declaring the protocol instead sets the flag, for code that still reads it."""
    from eventbus.queue.capabilities import Cancellable, Peekable, WorkerSignals, declared, supports

    assert declared(DictQueue) == [WorkerSignals] and not DictQueue.cancellable

    class CancellingDictQueue(DictQueue, Cancellable):
        driver = "cancelling-dict"

    assert supports(CancellingDictQueue, Cancellable) and CancellingDictQueue.cancellable is True
    assert supports(CancellingDictQueue("c", {}), WorkerSignals)
    assert not supports(CancellingDictQueue, Peekable) and not DictQueue.cancellable

    class Undeclared(CancellingDictQueue):  # a subclass takes back what its driver declares
        cancellable = False

    assert not supports(Undeclared, Cancellable) and Cancellable in Undeclared.__mro__

    class Inheriting(CancellingDictQueue):
        pass

    assert supports(Inheriting, Cancellable) and "cancellable" not in vars(Inheriting)
